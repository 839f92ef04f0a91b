#!/usr/bin/env bash
# Lint the crate; exits 77 (meson: skipped) when clippy is not installed.
set -eu
cd "$(dirname "$0")/.."
cargo clippy --version >/dev/null 2>&1 || { echo "clippy not installed: skipped"; exit 77; }
cargo clippy --release --all-targets -- -D warnings
# The fuzz targets (their own package, fuzz/; its own target directory).
CARGO_TARGET_DIR=${FUZZ_TARGET_DIR:-$PWD/fuzz/target} \
    cargo clippy --manifest-path fuzz/Cargo.toml --all-targets -- -D warnings
