#!/usr/bin/env bash
# Build the library with cargo and lay out OUTDIR/libuct.so.0 (plus the
# libuct.so development link), ready for LD_LIBRARY_PATH or installation.
# Usage: scripts/cargo-build.sh OUTDIR [cargo profile: release|debug]
set -eu
out=${1:?usage: cargo-build.sh OUTDIR [release|debug]}
profile=${2:-release}
top=$(cd "$(dirname "$0")/.." && pwd)
args=(build --manifest-path "$top/Cargo.toml" --lib)
[ "$profile" = release ] && args+=(--release)
cargo "${args[@]}" >&2
target=${CARGO_TARGET_DIR:-$top/target}
mkdir -p "$out"
# Copy then rename, so a running process never sees a half-written file.
cp "$target/$profile/libuct.so" "$out/.libuct.so.0.tmp"
mv -f "$out/.libuct.so.0.tmp" "$out/libuct.so.0"
ln -sf libuct.so.0 "$out/libuct.so"
