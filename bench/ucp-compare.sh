#!/usr/bin/env bash
# libucp side by side: ucx_perftest's UCP tests, server + client on
# loopback, run against LIBDIR's libuct.so.0 ("ours") and against the
# system UCX 1.13.1 ("ucx"; UCX_PREFIX: that installation's libuct, libucp
# and ucx_perftest); the same libucp and ucx_perftest, only
# LD_LIBRARY_PATH differs.  Ours and ucx alternate within each round, the
# two processes are pinned to different CPUs (PERF_PIN=0 to disable); the
# table gives the median over ROUNDS and the ratio ours/ucx (latency: lower
# is better; bandwidth: higher is better).
#
#   rows   tag_lat 8 B, tag_bw 64 KiB and 1 MiB, ucp_am_lat 8 B, stream_bw
#          64 KiB, each with UCX_TLS=posix,self and UCX_TLS=tcp
#
# Usage: bench/ucp-compare.sh LIBDIR [ROUNDS]     (ROUNDS default 5)
# Env: BENCH_CSV=FILE, BENCH_ROWS="TLS:TEST:SIZE ..." (replaces the rows),
#      BASE_LIBDIR=DIR (that build of ours instead of the original),
#      BENCH_ITERS=N (iterations of every row instead of the size-based
#      count), PAIR_TIMEOUT (per process, default 120 s), BENCH_WRAP="CMD..." (each
#      ucx_perftest runs under CMD, e.g. tests/softrdma/run.sh for the
#      soft RDMA device: rows "rc_verbs,ud_verbs:tag_lat:8"),
#      BENCH_LATENCY=median (the typical latency of each run instead of its
#      average).
set -u
here=$(cd "$(dirname "$0")" && pwd)
PAIR_TIMEOUT=${PAIR_TIMEOUT:-120}
export PERF_PIN=${PERF_PIN:-1}
. "$here/lib.sh"

libdir=${1:?usage: bench/ucp-compare.sh LIBDIR [ROUNDS]}
libdir=$(cd "$libdir" && pwd -P) || exit 2
[ -e "$libdir/libuct.so.0" ] || { echo "no libuct.so.0 in $libdir"; exit 2; }
rounds=${2:-5}
command -v ucx_perftest >/dev/null || { echo "needs ucx_perftest (apt-get install ucx-utils)"; exit 2; }
make_workdir
build_run_watch
# shellcheck disable=SC2206 # a command line
WRAP=(${BENCH_WRAP:-})

rows=${BENCH_ROWS:-"posix,self:tag_lat:8 tcp:tag_lat:8 posix,self:tag_bw:65536 tcp:tag_bw:65536 \
posix,self:tag_bw:1048576 tcp:tag_bw:1048576 posix,self:ucp_am_lat:8 tcp:ucp_am_lat:8 \
posix,self:stream_bw:65536 tcp:stream_bw:65536"}

iters_for() { # tls size
    if [ -n "${BENCH_ITERS:-}" ]; then echo "$BENCH_ITERS"; return; fi
    local base=200000
    case $1 in tcp | *verbs*) base=50000 ;; esac
    awk -v b="$base" -v s="$2" 'BEGIN { n = int(b * 8 / (s < 8 ? 8 : s) * 64); if (n > b) n = b; if (n < 2000) n = 2000; print n }'
}

# pinned CMD...: under taskset when PERF_PIN=1 and there are two CPUs
pin_cmd() { # CPU
    PIN=()
    if [ "$PERF_PIN" = 1 ] && [ "$(nproc)" -ge 2 ] && command -v taskset >/dev/null; then
        PIN=(taskset -c "$1")
    fi
}

# run_one LIBDIR TLS TEST SIZE -> "lat bw" | "fail <why>"
run_one() {
    local lib=$1 tls=$2 test=$3 size=$4 iters port spid cpid final
    iters=$(iters_for "$tls" "$size")
    port=$(free_port)
    local args=(-t "$test" -s "$size" -n "$iters" -w $((iters / 10)) -p "$port")
    rm -f "$T_WORK/srv.st" "$T_WORK/cli.st"
    pin_cmd 1
    env $(lib_env "$lib") UCX_TLS="$tls" "$RUN_WATCH" "$PAIR_TIMEOUT" "$T_WORK/srv.st" \
        "${PIN[@]}" "${WRAP[@]}" ucx_perftest "${args[@]}" >"$T_WORK/srv.out" 2>&1 </dev/null &
    spid=$!
    T_CHILDREN=$spid
    if ! wait_listening "$spid" "$port"; then
        wait "$spid"
        T_CHILDREN=
        echo "fail server did not listen"
        return
    fi
    pin_cmd 0
    env $(lib_env "$lib") UCX_TLS="$tls" "$RUN_WATCH" "$PAIR_TIMEOUT" "$T_WORK/cli.st" \
        "${PIN[@]}" "${WRAP[@]}" ucx_perftest 127.0.0.1 "${args[@]}" >"$T_WORK/cli.out" 2>&1 </dev/null &
    cpid=$!
    T_CHILDREN="$spid $cpid"
    wait_pair "$spid" "$T_WORK/srv.st" "$cpid" "$T_WORK/cli.st"
    T_CHILDREN=
    final=$(grep -E '^ *Final: +[0-9]+' "$T_WORK/cli.out" | tail -n 1)
    if [ "$(status_of "$T_WORK/srv.st")" = "exit 0" ] && [ "$(status_of "$T_WORK/cli.st")" = "exit 0" ] &&
       [ -n "$final" ]; then
        # Final: iters typical avg overhead bw_typ bw_avg rate_typ rate_avg
        if [ "${BENCH_LATENCY:-}" = median ]; then
            awk '{ print $3, $7 }' <<<"$final"
        else
            awk '{ print $4, $7 }' <<<"$final"
        fi
    else
        echo "fail server $(status_of "$T_WORK/srv.st"), client $(status_of "$T_WORK/cli.st")"
    fi
}

fmt='%-11s %-11s %8s | %9s %9s %6s | %10s %10s %6s\n'
base_lib=$UCT_SYSTEM_LIB
[ -n "${BASE_LIBDIR:-}" ] && base_lib="$BASE_LIBDIR/libuct.so.0 (BASE_LIBDIR)"
printf '# UCP over libuct; ours: %s   ucx: %s   rounds: %s   pinned: %s\n' \
    "$libdir/libuct.so.0" "$base_lib" "$rounds" "$PERF_PIN"
printf "$fmt" UCX_TLS test size lat_ours lat_ucx ratio bw_ours bw_ucx ratio
printf "$fmt" "" "" "(bytes)" "(us)" "(us)" "" "(MB/s)" "(MB/s)" ""
[ -n "${BENCH_CSV:-}" ] &&
    echo "tls,test,size,lat_ours_us,lat_ucx_us,lat_ratio,bw_ours_MBps,bw_ucx_MBps,bw_ratio" >"$BENCH_CSV"
for row in $rows; do
    IFS=: read -r tls test size <<<"$row"
    BENCH_ROW="ucp:$row"
    bench_cell "$rounds" "$libdir" "$tls" "$test" "$size"
    printf "$fmt" "$tls" "$test" "$size" "$mlo" "$mlu" "$rl" "$mbo" "$mbu" "$rb"
    case $o_state in fail*) echo "#   ours: $o_state" ;; esac
    case $u_state in fail*) echo "#   ucx: $u_state" ;; esac
    [ -n "${BENCH_CSV:-}" ] && echo "$tls,$test,$size,$mlo,$mlu,$rl,$mbo,$mbu,$rb" >>"$BENCH_CSV"
done
