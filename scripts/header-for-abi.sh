#!/usr/bin/env bash
# Write a copy of the ABI header whose default release is another one.
#
#   scripts/header-for-abi.sh 1.18 OUT.h   [IN.h]
#
# include/uct-rs/uct_abi.h describes every served release and selects one
# with UCT_RS_UCX_ABI_MINOR, which defaults to 13 (UCX 1.13). A copy whose
# default is another release suits C code written for that release only;
# it can still override it with -DUCT_RS_UCX_ABI_MINOR=N.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
abi="${1:?usage: header-for-abi.sh 1.N OUT.h [IN.h]}"
out="${2:?usage: header-for-abi.sh 1.N OUT.h [IN.h]}"
in="${3:-$root/include/uct-rs/uct_abi.h}"

minor=${abi#1.}
if ! awk -v m="$minor" '!/^#/ && NF == 6 && $1 == m { found = 1 } END { exit !found }' "$root/ucx-releases.txt"; then
    echo "header-for-abi: '$abi' is not a release series of ucx-releases.txt" >&2
    exit 2
fi

line='#define UCT_RS_UCX_ABI_MINOR 13'
if [ "$(grep -cxF "$line" "$in")" != 1 ]; then
    echo "header-for-abi: $in has no single '$line' line" >&2
    exit 1
fi
tmp="$(mktemp)"
trap 'rm -f "$tmp"' EXIT
sed "s/^$line\$/#define UCT_RS_UCX_ABI_MINOR $minor/" "$in" > "$tmp"
mkdir -p "$(dirname "$out")"
cp "$tmp" "$out"
