#!/usr/bin/env bash
# Side-by-side self-transport send-path cost (ns/op): bench/self_ops.c built
# once against the system headers, run alternately on the C original and on
# LIBDIR's libuct.so.0; prints the median over RUNS and the ratio ours/theirs.
# Usage: bench/self-ops.sh LIBDIR [RUNS] [OPS_PER_ROUND]
# Env: BASE_LIBDIR=dir compares with that build of ours (before/after a
# change) instead of the C original; the "ucx" column is then that build.
# UCX_PREFIX=DIR: the C original (and the headers) of that installation
# (tests/lib/common.sh), e.g. the 1.18.1 wheel's.
set -eu
. "$(dirname "$0")/../tests/lib/common.sh"
libdir=$(cd "${1:?usage: self-ops.sh LIBDIR [RUNS] [OPS]}" && pwd); runs=${2:-7}; ops=${3:-10000000}
base=()
[ -n "$SYS_LDPATH" ] && base=(env "LD_LIBRARY_PATH=$SYS_LDPATH")
[ -n "${BASE_LIBDIR:-}" ] && base=(env "LD_LIBRARY_PATH=$(ld_path_for "$(cd "$BASE_LIBDIR" && pwd)")")
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
gcc -O2 -Wall "${UCX_CFLAGS[@]}" -o "$work/self_ops" "$(dirname "$0")/self_ops.c" "${UCX_LDFLAGS[@]}" -luct -lucs
for ((i = 0; i < runs; i++)); do
    LD_LIBRARY_PATH=$(ld_path_for "$libdir") "$work/self_ops" "$ops" 3 | sed 's/^/ours /'
    "${base[@]}" "$work/self_ops" "$ops" 3 | sed 's/^/ucx /'
done > "$work/all"
printf '%-14s %10s %10s %7s\n' op ours_ns ucx_ns ratio
for op in am_short put_short atomic64_add; do
    o=$(awk -v op=$op '$1=="ours" && $2==op {print $3}' "$work/all" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
    u=$(awk -v op=$op '$1=="ucx" && $2==op {print $3}' "$work/all" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
    printf '%-14s %10s %10s %7s\n' $op "$o" "$u" "$(awk -v a="$o" -v b="$u" 'BEGIN {printf "%.2f", a / b}')"
done
