#!/usr/bin/env bash
# Install what building and testing uct-rs needs on a fresh Debian 12 machine:
# the system UCX 1.13.1 (headers, the C library we are compared against,
# ucx_perftest/ucx_info), a C toolchain, meson, and cbindgen for the header
# check, and Open MPI and MPICH (both built with UCX: MPI and OpenSHMEM over
# libucp, the clients tests/mpi-shmem.sh runs on our library; Open MPI stays
# the default mpicc/mpirun, the tests name both explicitly), and valgrind
# (tests/memcheck.sh), and g++ (libfuzzer-sys builds libFuzzer from its C++
# sources for the fuzz targets; nothing else is needed to fuzz: the stable
# toolchain and the crates pinned in fuzz/Cargo.lock), and python3-pip
# (scripts/setup-ucx-wheel.sh fetches the UCX references of other releases,
# PyPI wheels, with pip download) and python3-venv, and the verbs build (rdma-sys: libibverbs-dev,
# librdmacm-dev, libclang-dev for its bindings; the soft RDMA device of the
# tests is a libibverbs provider built with gcc, run under unshare from
# util-linux; ibverbs-utils for ibv_devinfo). Safe to run again; does nothing that is already done.
set -eu
pkgs=(libucx-dev ucx-utils libucx0 gcc g++ make pkg-config meson ninja-build iproute2 procps binutils python3 gdb
      openmpi-bin libopenmpi-dev mpich libmpich-dev valgrind
      libibverbs-dev librdmacm-dev libclang-dev ibverbs-utils util-linux
      debhelper devscripts lintian fakeroot dpkg-dev)
# pip: a python3 that has one already (e.g. a pyenv one) needs no package;
# the same for venv (tests/launcher.sh installs a wheel into one)
python3 -m pip --version >/dev/null 2>&1 || pkgs+=(python3-pip)
python3 -c 'import ensurepip, venv' >/dev/null 2>&1 || pkgs+=(python3-venv)
missing=()
for p in "${pkgs[@]}"; do
    dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    SUDO=; [ "$(id -u)" -ne 0 ] && SUDO=sudo
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
command -v cargo >/dev/null || { echo "setup-deps: cargo (Rust toolchain) is required" >&2; exit 1; }
# cbindgen, pinned: the checked-in header must be reproducible.
want=0.29.4
if [ "$(cbindgen --version 2>/dev/null | awk '{print $2}')" != "$want" ]; then
    cargo install --quiet --locked cbindgen --version "$want"
fi
echo "setup-deps: ok"
