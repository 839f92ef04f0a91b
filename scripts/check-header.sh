#!/usr/bin/env bash
# Verify that include/uct-rs/uct_abi.h matches what cbindgen generates from
# the current src/abi. Exit status 1 (and a diff) when it is stale.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
header="$root/include/uct-rs/uct_abi.h"
tmpdir="$(mktemp -d)"
trap 'rm -rf "$tmpdir"' EXIT

"$root/scripts/gen-header.sh" "$tmpdir/uct_abi.h" >/dev/null

if [ ! -f "$header" ]; then
    echo "check-header: $header is missing (run scripts/gen-header.sh)" >&2
    exit 1
fi
if ! diff -u "$header" "$tmpdir/uct_abi.h"; then
    echo "check-header: include/uct-rs/uct_abi.h is stale (run scripts/gen-header.sh)" >&2
    exit 1
fi
echo "check-header: include/uct-rs/uct_abi.h is up to date"
