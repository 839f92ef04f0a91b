#!/usr/bin/env bash
# Build the library with cargo and lay out OUTDIR/libuct.so.0 (plus the
# libuct.so development link), ready for LD_LIBRARY_PATH or installation.
# Usage: scripts/cargo-build.sh OUTDIR [cargo profile: release|debug] [ABI]
#   ABI: 1.13 (default, Debian 12's UCX) or 1.18 (cargo feature ucx-1-18);
#   also taken from $UCX_ABI.  For an ABI other than the system's, libucs
#   of that release is linked from $UCT_RS_UCS_LIBDIR, by default
#   $UCX_PREFIX/lib (the reference installation, scripts/setup-ucx-wheel.sh).
#   UCT_RS_VERBS=0 builds without the RDMA transports (cargo feature verbs,
#   on by default; it needs libibverbs-dev, librdmacm-dev, libclang-dev).
set -eu
out=${1:?usage: cargo-build.sh OUTDIR [release|debug] [1.13|1.18]}
profile=${2:-release}
abi=${3:-${UCX_ABI:-1.13}}
top=$(cd "$(dirname "$0")/.." && pwd)
args=(build --manifest-path "$top/Cargo.toml" --lib)
[ "$profile" = release ] && args+=(--release)
[ "${UCT_RS_VERBS:-1}" = 0 ] && args+=(--no-default-features)
case $abi in
    1.13) ;;
    1.18)
        args+=(--features ucx-1-18)
        if [ -z "${UCT_RS_UCS_LIBDIR:-}" ]; then
            if [ -n "${UCX_PREFIX:-}" ]; then
                export UCT_RS_UCS_LIBDIR=$UCX_PREFIX/lib
            else
                echo "cargo-build: ABI $abi: set UCX_PREFIX (scripts/setup-ucx-wheel.sh 1.18.1) or UCT_RS_UCS_LIBDIR" >&2
                exit 2
            fi
        fi ;;
    *) echo "cargo-build: unknown UCX ABI '$abi' (1.13 or 1.18)" >&2; exit 2 ;;
esac
cargo "${args[@]}" >&2
target=${CARGO_TARGET_DIR:-$top/target}
mkdir -p "$out"
# Copy then rename, so a running process never sees a half-written file.
cp "$target/$profile/libuct.so" "$out/.libuct.so.0.tmp"
mv -f "$out/.libuct.so.0.tmp" "$out/libuct.so.0"
ln -sf libuct.so.0 "$out/libuct.so"
