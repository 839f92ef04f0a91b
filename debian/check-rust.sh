#!/bin/sh
# The package build needs rustc and cargo at least as new as the
# rust-version of Cargo.toml ($1), from rustup (https://rustup.rs): Debian
# 12's own rustc is older. Fails with a clear message instead of letting an
# older toolchain found on PATH fail later.
set -eu
min=$1
for tool in cargo rustc; do
    command -v "$tool" >/dev/null 2>&1 || {
        echo "uct-rs: $tool not found; install Rust $min or later with rustup (https://rustup.rs)" >&2
        exit 1
    }
done
have=$(rustc --version | awk '{ print $2 }')
older=$(printf '%s\n%s\n' "$min" "$have" | sort -V | head -n1)
if [ "$older" != "$min" ]; then
    echo "uct-rs: rustc $have ($(command -v rustc)) is older than $min (Cargo.toml rust-version);" \
         "install a newer toolchain with rustup and put it first on PATH" >&2
    exit 1
fi
echo "uct-rs: building with $(rustc --version) from $(command -v rustc)"
