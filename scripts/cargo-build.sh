#!/usr/bin/env bash
# Build the library with cargo and lay out OUTDIR/libuct.so.0 (plus the
# libuct.so development link), ready for LD_LIBRARY_PATH or installation.
# Usage: scripts/cargo-build.sh OUTDIR [cargo profile: release|debug]
#   One library serves every UCX release of ucx-releases.txt; it links the
#   libucs.so found by the linker (UCT_RS_UCS_LIBDIR adds a directory to
#   search), using only what every served release exports.
#   UCT_RS_VERBS=0 builds without the RDMA transports (cargo feature verbs,
#   on by default; it needs libibverbs-dev, librdmacm-dev, libclang-dev).
set -eu
out=${1:?usage: cargo-build.sh OUTDIR [release|debug]}
profile=${2:-release}
top=$(cd "$(dirname "$0")/.." && pwd)
args=(build --manifest-path "$top/Cargo.toml" --lib)
[ "$profile" = release ] && args+=(--release)
[ "${UCT_RS_VERBS:-1}" = 0 ] && args+=(--no-default-features)
cargo "${args[@]}" >&2
target=${CARGO_TARGET_DIR:-$top/target}
mkdir -p "$out"
# Copy then rename, so a running process never sees a half-written file.
cp "$target/$profile/libuct.so" "$out/.libuct.so.0.tmp"
mv -f "$out/.libuct.so.0.tmp" "$out/libuct.so.0"
ln -sf libuct.so.0 "$out/libuct.so"
