#!/usr/bin/env bash
# Side-by-side ucx_perftest over tcp on lo: the same ucx_perftest binary run
# as server + client against LIBDIR's libuct.so.0 ("ours") and against the
# system UCX 1.13.1 ("ucx"; UCX_PREFIX: that installation's C libuct, e.g.
# the 1.18.1 wheel's), only LD_LIBRARY_PATH differs; ours and ucx
# alternate within each round; the two processes of a pair are pinned to
# different CPUs (PERF_PIN, as tests/lib/two-proc.sh does; PERF_PIN=0 to
# disable).  The table gives the median over ROUNDS and the ratio ours/ucx
# (latency: lower is better; bandwidth: higher is better).
#
#   am_lat short 8 B
#   am_bw  bcopy 4 KiB, 64 KiB;  am_bw zcopy 4 KiB, 64 KiB
# tcp's AM bcopy stops at its segment size (8 KiB by default): the 64 KiB
# bcopy row is "n/a" with the defaults, so it is also run with
# UCX_TCP_TX_SEG_SIZE=UCX_TCP_RX_SEG_SIZE=72k (both sides, both libraries).
# Iterations: BENCH_BYTES / size within [BENCH_MIN_ITERS, BENCH_MAX_ITERS]
# (defaults 1 GiB, 5000, 200000), warm-up a tenth.
#
# Then the ceiling: the same patterns over plain loopback sockets
# (bench/raw_ceiling.c: busy-polling ping-pong, one sendmsg per message),
# with the ratios of both libraries to it.
#
# Usage: bench/tcp-compare.sh LIBDIR [ROUNDS]     (ROUNDS default 5)
# Env: BENCH_CSV=FILE (the table as CSV), PAIR_TIMEOUT (default 120 s).
set -u
here=$(cd "$(dirname "$0")" && pwd)
PAIR_TIMEOUT=${PAIR_TIMEOUT:-120}
export PERF_PIN=${PERF_PIN:-1}
. "$here/lib.sh"

libdir=${1:?usage: bench/tcp-compare.sh LIBDIR [ROUNDS]}
libdir=$(cd "$libdir" && pwd -P) || exit 2
[ -e "$libdir/libuct.so.0" ] || { echo "no libuct.so.0 in $libdir"; exit 2; }
rounds=${2:-5}
bytes=${BENCH_BYTES:-1073741824}
min_iters=${BENCH_MIN_ITERS:-5000}
max_iters=${BENCH_MAX_ITERS:-200000}
command -v ucx_perftest >/dev/null || { echo "needs ucx_perftest (apt-get install ucx-utils)"; exit 2; }
make_workdir
build_run_watch

iters_for() { # size
    awk -v b="$bytes" -v s="$1" -v lo="$min_iters" -v hi="$max_iters" \
        'BEGIN { n = int(b / s); if (n < lo) n = lo; if (n > hi) n = hi; print n }'
}

# test layout size env(comma-separated VAR=VALUE, or -)
rows() {
    cat <<'ROWS'
am_lat short 8     -
am_bw  bcopy 4096  -
am_bw  bcopy 65536 -
am_bw  bcopy 65536 UCX_TCP_TX_SEG_SIZE=72k,UCX_TCP_RX_SEG_SIZE=72k
am_bw  zcopy 4096  -
am_bw  zcopy 65536 -
ROWS
}

# run_one LIBDIR TEST LAYOUT SIZE ENV -> "lat bw" | "n/a" | "fail <why>"
run_one() {
    local lib=$1 test=$2 layout=$3 size=$4 envs=$5 iters warm
    iters=$(iters_for "$size")
    warm=$((iters / 10))
    [ $warm -lt 100 ] && warm=100
    (
        if [ "$envs" != - ]; then
            IFS=, read -r -a kv <<<"$envs"
            export "${kv[@]}"
        fi
        run_perf_pair "$lib" "$lib" tcp lo "$test" "$layout" "$size" "$iters" "$warm"
        case $PP_RESULT in
            OK) echo "$PP_LAT $PP_BW" ;;
            UNSUP) echo "n/a" ;;
            *) echo "fail ${PP_RESULT#* }" ;;
        esac
    )
}

fmt='%-6s %-6s %6s %-9s | %9s %9s %6s | %10s %10s %6s\n'
printf '# tcp/lo; ours: %s   ucx: %s   rounds: %s   pinned: %s\n' \
    "$libdir/libuct.so.0" "$UCT_SYSTEM_LIB" "$rounds" "$PERF_PIN"
printf "$fmt" test layout size env lat_ours lat_ucx ratio bw_ours bw_ucx ratio
printf "$fmt" "" "" "(B)" "" "(us)" "(us)" "" "(MB/s)" "(MB/s)" ""
[ -n "${BENCH_CSV:-}" ] &&
    echo "test,layout,size,env,lat_ours_us,lat_ucx_us,lat_ratio,bw_ours_MBps,bw_ucx_MBps,bw_ratio" >"$BENCH_CSV"

raw_rows=()
while read -r test layout size envs; do
    bench_cell "$rounds" "$libdir" "$test" "$layout" "$size" "$envs"
    case "$test $layout $size $envs" in
        "am_lat short 8 -") raw_rows+=("tcp ping-pong 8 B (half RTT, us)|lat|tcp-pingpong|8|100000|$mlu|$mlo") ;;
        "am_bw "*" 4096 -" | "am_bw zcopy 65536 -")
            raw_rows+=("tcp stream $size B $layout (MB/s)|bw|tcp-stream|$size|$((size * $(iters_for "$size")))|$mbu|$mbo") ;;
    esac
    label=$envs
    [ "$envs" != - ] && label=seg72k
    printf "$fmt" "$test" "$layout" "$size" "$label" "$mlo" "$mlu" "$rl" "$mbo" "$mbu" "$rb"
    case $o_state in fail*) echo "#   ours: $o_state" ;; esac
    case $u_state in fail*) echo "#   ucx: $u_state" ;; esac
    [ -n "${BENCH_CSV:-}" ] &&
        echo "$test,$layout,$size,$envs,$mlo,$mlu,$rl,$mbo,$mbu,$rb" >>"$BENCH_CSV"
done < <(rows)
echo "# seg72k: UCX_TCP_TX_SEG_SIZE=72k UCX_TCP_RX_SEG_SIZE=72k on both sides"
raw_build
raw_section "$rounds" "${raw_rows[@]}"
