#!/usr/bin/env bash
# Side-by-side ucx_perftest: the same binary, run against the system UCX
# 1.13.1 libuct and against ours (only LD_LIBRARY_PATH differs), alternating,
# several rounds; prints the median of each and the ratio ours/theirs.
# UCX_PREFIX=DIR compares against that installation instead (its C libuct,
# libucs/libucp and ucx_perftest; tests/lib/common.sh), e.g. the 1.18.1
# wheel: UCX_PREFIX=$(scripts/setup-ucx-wheel.sh 1.18.1).
#
# Usage: bench/compare.sh LIBDIR [ROUNDS] [ITERS] CASE...
#   CASE = TL:DEV:TEST:LAYOUT:SIZE   e.g. self:memory0:am_lat:short:8,
#          rc_verbs:softrdma0:1:am_lat:short:8
#          (self's device is "memory" from UCX 1.14 on)
#          (LAYOUT '-' for atomics; TL self runs in one process with -l)
# Env: BENCH_CSV=file also writes the table as CSV; BENCH_ROUNDS_CSV=file
# appends every round ("uct:CASE,ours|ucx,ROUND,LAT,BW", for bench/report.sh; BENCH_ROUND_BASE=N
# numbers the rounds from N). BASE_LIBDIR=dir compares
# with that build of ours (before/after a change) instead of the C original;
# the "ucx" columns are then that build. BENCH_WRAP="CMD..." runs every
# ucx_perftest under CMD (e.g. tests/softrdma/run.sh: the soft RDMA device
# visible, for rc_verbs:softrdma0:1 cases). BENCH_LATENCY=median takes each
# run's median latency instead of its average (a device whose averages
# include scheduling stalls). BENCH_PIN=1 pins the server to CPU 0 and the
# client to CPU 1 (two-process cases; a shared-memory round trip then
# measures one fixed pair of CPUs instead of wherever the scheduler puts them).
set -u
. "$(dirname "$0")/../tests/lib/common.sh"
libdir=${1:?usage: compare.sh LIBDIR [ROUNDS] [ITERS] CASE...}; shift
rounds=5; iters=200000
[[ ${1:-} =~ ^[0-9]+$ ]] && { rounds=$1; shift; }
[[ ${1:-} =~ ^[0-9]+$ ]] && { iters=$1; shift; }
[ $# -gt 0 ] || set -- "self:$UCT_SELF_DEV:am_lat:short:8" "self:$UCT_SELF_DEV:put_lat:short:8" \
    "self:$UCT_SELF_DEV:add_lat:-:8"
command -v ucx_perftest >/dev/null || { echo "needs ucx_perftest (apt-get install ucx-utils)"; exit 2; }

# one run: prints "latency_avg_us bandwidth_MBps"
one() { # libdir tl dev test layout size
  local e=() d=() out port p0=() p1=()
  [ -n "$(lib_env "$1")" ] && e=(env "$(lib_env "$1")")
  if [ "${BENCH_PIN:-0}" = 1 ] && [ "$(nproc)" -ge 2 ]; then p0=(taskset -c 0); p1=(taskset -c 1); fi
  [ "$5" != "-" ] && d=(-D "$5")
  # shellcheck disable=SC2206 # a command line
  e+=(${BENCH_WRAP:-})
  if [ "$2" = self ]; then
    out=$("${e[@]}" timeout 120 ucx_perftest -l -t "$4" -x "$2" -d "$3" "${d[@]}" -s "$6" -n "$iters" -w 10000 -f 2>/dev/null)
  else
    port=$(( 20000 + RANDOM % 30000 ))
    "${e[@]}" "${p0[@]}" timeout 120 ucx_perftest -p $port -t "$4" -x "$2" -d "$3" "${d[@]}" -s "$6" -n "$iters" -w 10000 -f >/dev/null 2>&1 &
    local sp=$!; sleep 0.5
    out=$("${e[@]}" "${p1[@]}" timeout 120 ucx_perftest 127.0.0.1 -p $port -t "$4" -x "$2" -d "$3" "${d[@]}" -s "$6" -n "$iters" -w 10000 -f 2>/dev/null)
    wait $sp 2>/dev/null
  fi
  local col=3
  [ "${BENCH_LATENCY:-}" = median ] && col=2
  echo "$out" | awk -v c=$col '/^ *[0-9]+ +[0-9.]+ +[0-9.]+/ {l=$c; b=$5} END {if (l!="") print l, b; else print "NA NA"}'
}
median() { sort -g | awk '{a[NR]=$1} END {if (NR==0) print "NA"; else print a[int((NR+1)/2)]}'; }

printf '%-30s %12s %12s %8s %12s %12s %8s\n' case "lat_ours_us" "lat_ucx_us" ratio "bw_ours" "bw_ucx" ratio
[ -n "${BENCH_CSV:-}" ] && echo "case,lat_ours_us,lat_ucx_us,lat_ratio,bw_ours_MBps,bw_ucx_MBps,bw_ratio" > "$BENCH_CSV"
for c in "$@"; do
  # TL first, TEST:LAYOUT:SIZE last, the device between (it may hold a
  # colon: softrdma0:1)
  tl=${c%%:*}; rest=${c#*:}; size=${rest##*:}; rest=${rest%:*}
  layout=${rest##*:}; rest=${rest%:*}; test=${rest##*:}; dev=${rest%:*}
  ol=(); ob=(); tl_=(); tb=()
  for ((r = 0; r < rounds; r++)); do
    read -r l b < <(one "$libdir" "$tl" "$dev" "$test" "$layout" "$size"); ol+=("$l"); ob+=("$b")
    [ -n "${BENCH_ROUNDS_CSV:-}" ] && echo "uct:$c,ours,$((r + ${BENCH_ROUND_BASE:-0})),$l,$b" >> "$BENCH_ROUNDS_CSV"
    read -r l b < <(one "${BASE_LIBDIR:-}" "$tl" "$dev" "$test" "$layout" "$size"); tl_+=("$l"); tb+=("$b")
    [ -n "${BENCH_ROUNDS_CSV:-}" ] && echo "uct:$c,ucx,$((r + ${BENCH_ROUND_BASE:-0})),$l,$b" >> "$BENCH_ROUNDS_CSV"
  done
  mo=$(printf '%s\n' "${ol[@]}" | grep -v NA | median); mt=$(printf '%s\n' "${tl_[@]}" | grep -v NA | median)
  bo=$(printf '%s\n' "${ob[@]}" | grep -v NA | median); bt=$(printf '%s\n' "${tb[@]}" | grep -v NA | median)
  rl=$(awk -v a="$mo" -v b="$mt" 'BEGIN { if (a+0 > 0 && b+0 > 0) printf "%.2f", a / b; else print "NA" }')
  rb=$(awk -v a="$bo" -v b="$bt" 'BEGIN { if (a+0 > 0 && b+0 > 0) printf "%.2f", a / b; else print "NA" }')
  printf '%-30s %12s %12s %8s %12s %12s %8s\n' "$c" "$mo" "$mt" "$rl" "$bo" "$bt" "$rb"
  [ -n "${BENCH_CSV:-}" ] && echo "$c,$mo,$mt,$rl,$bo,$bt,$rb" >> "$BENCH_CSV"
done
