#!/usr/bin/env bash
# A C UCX of another release with the verbs transports, built from its
# source, as the A/B reference of the soft RDMA suites for that release
# (the PyPI wheels of scripts/setup-ucx-wheel.sh have no verbs module).
#
#   scripts/build-ucx-reference.sh SRCDIR [PREFIX]
#
# SRCDIR is an unpacked UCX source tree: a release tarball from
# https://github.com/openucx/ucx/releases, or `git archive vX.Y.Z` of a
# clone. PREFIX defaults to ~/.cache/uct-rs/ucx-src-VERSION (VERSION from
# the tree). Prints the prefix; every suite takes UCX_PREFIX=<it>, and the
# soft RDMA suites then compare ours with its libuct_ib (tests/lib/common.sh:
# ref_has_verbs). Needs autoconf, automake, libtool, libibverbs-dev and
# librdmacm-dev. Takes about 6 minutes with two cores. Nothing is rebuilt
# when PREFIX already has bin/ucx_info.
#
# Configured as a release build (no debug build, assertions or parameter
# checks; multi-threading and cma on), with verbs and rdmacm, without GPU
# support or language bindings.
set -eu
src=$(cd "${1:?usage: build-ucx-reference.sh SRCDIR [PREFIX]}" && pwd)
version=$(sed -n 's/^define(\[ucx_ver_major\], \([0-9]*\)).*/\1/p; s/^define(\[ucx_ver_minor\], \([0-9]*\)).*/\1/p; s/^define(\[ucx_ver_patch\], \([0-9]*\)).*/\1/p' \
          "$src/configure.ac" | paste -sd.)
[ -n "$version" ] || { echo "build-ucx-reference: $src/configure.ac names no UCX version" >&2; exit 2; }
prefix=${2:-${UCT_RS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/uct-rs}/ucx-src-$version}
if [ -x "$prefix/bin/ucx_info" ]; then
    echo "$prefix"
    exit 0
fi
build=$(mktemp -d "${TMPDIR:-/tmp}/ucx-build.XXXXXX")
trap 'rm -rf "$build"' EXIT
{
    [ -x "$src/configure" ] || (cd "$src" && ./autogen.sh)
    cd "$build"
    "$src/configure" --prefix="$prefix" --enable-mt --enable-cma --with-verbs --with-rdmacm \
        --without-cuda --without-rocm --without-java --without-go --disable-doxygen-doc \
        --disable-debug --disable-assertions --disable-params-check
    make -j"$(nproc)"
    make install
} >"$build/build.log" 2>&1 || {
    tail -n 30 "$build/build.log" >&2
    echo "build-ucx-reference: the build failed (log above)" >&2
    exit 1
}
[ -e "$prefix/lib/ucx/libuct_ib.so.0" ] || {
    echo "build-ucx-reference: $prefix has no ucx/libuct_ib.so.0 (libibverbs-dev missing?)" >&2
    exit 1
}
echo "$prefix"
