#!/usr/bin/env bash
# libucp over our libuct: ucx_perftest's UCP tests, server + client on
# loopback, LD_LIBRARY_PATH pointing both at LIBDIR (the distro's libucp and
# ucx_perftest on our libuct).
#
#   UCX_TLS   tcp, and shared memory: "posix,sysv,cma,self"
#   tests     tag_lat tag_bw stream_lat stream_bw ucp_put_lat ucp_put_bw
#             ucp_get ucp_am_lat ucp_am_bw at 8 B and 1 MiB (rendezvous /
#             zero-copy protocols); ucp_add ucp_fadd ucp_swap ucp_cswap at 8 B
#
# Each case runs first on the system library (the C original), then on
# LIBDIR.  A case the original passes must pass on LIBDIR: both processes
# exit 0 and the client reports all iterations.  A case the original fails
# must not crash or hang on LIBDIR.  Every UCX warning or error line of
# LIBDIR's run (message text, without time, pid and source position) must
# appear in the original's run of the same case too.
# With an empty LIBDIR only the system runs are made (sanity run).
# Usage: tests/ucp-perftest.sh [LIBDIR]   (or UCT_LIBDIR; ITERS env: 2000)
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib/ab-common.sh"

ab_begin "$@"
ITERS=${ITERS:-2000}
need_perftest
OURS=$UCT_LIBDIR

# run_case LIB TLS TEST SIZE ITERS -> R_OK, R_SRV, R_CLI, R_WHY, R_LAT
run_case() {
    local lib=$1 tls=$2 test=$3 size=$4 iters=$5 port spid cpid final
    port=$(free_port)
    local args=(-t "$test" -s "$size" -n "$iters" -w $((iters / 10)) -p "$port")
    rm -f "$T_WORK/srv.st" "$T_WORK/cli.st"
    env $(lib_env "$lib") UCX_TLS="$tls" "$RUN_WATCH" "$PAIR_TIMEOUT" "$T_WORK/srv.st" \
        ucx_perftest "${args[@]}" >"$T_WORK/srv.out" 2>&1 </dev/null &
    spid=$!
    T_CHILDREN=$spid
    if ! wait_listening "$spid" "$port"; then
        wait "$spid"
        T_CHILDREN=
        R_OK=0 R_SRV=$(status_of "$T_WORK/srv.st") R_CLI="not started" R_WHY="server did not listen" R_LAT=
        return
    fi
    env $(lib_env "$lib") UCX_TLS="$tls" "$RUN_WATCH" "$PAIR_TIMEOUT" "$T_WORK/cli.st" \
        ucx_perftest 127.0.0.1 "${args[@]}" >"$T_WORK/cli.out" 2>&1 </dev/null &
    cpid=$!
    T_CHILDREN="$spid $cpid"
    wait_pair "$spid" "$T_WORK/srv.st" "$cpid" "$T_WORK/cli.st"
    T_CHILDREN=
    R_SRV=$(status_of "$T_WORK/srv.st")
    R_CLI=$(status_of "$T_WORK/cli.st")
    # (a Final line prints "inf" as the average of an interval with no new
    # iteration: the overall figure then stands for it)
    final=$(grep -E '^ *(Final:)? *[0-9]+ +[0-9.]+ +([0-9.]+|inf|-?nan)' "$T_WORK/cli.out" | tail -n 1 | sed 's/Final://')
    R_OK=0 R_WHY= R_LAT=$(awk '{ print ($3 ~ /^[0-9.]+$/ ? $3 : $4) }' <<<"$final")
    if [ "$R_SRV" != "exit 0" ] || [ "$R_CLI" != "exit 0" ]; then
        R_WHY="server $R_SRV, client $R_CLI: $(grep -h -m 1 'ERROR\|rror\|nsupported' "$T_WORK/cli.out" "$T_WORK/srv.out" | head -n 1)"
    elif [ "$(awk '{ print $1 }' <<<"$final")" != "$iters" ]; then
        R_WHY="the client's last report is not $iters iterations: ${final:-none}"
    else
        R_OK=1
    fi
}

cases() {
    local t
    for t in tag_lat tag_bw stream_lat stream_bw ucp_put_lat ucp_put_bw ucp_get ucp_am_lat ucp_am_bw; do
        echo "$t 8 $ITERS"
        echo "$t 1048576 $((ITERS / 10 > 20 ? ITERS / 10 : 20))"
    done
    for t in ucp_add ucp_fadd ucp_swap ucp_cswap; do
        echo "$t 8 $ITERS"
    done
}

for tls in tcp posix,sysv,cma,self; do
    while read -r test size iters; do
        name="ucx_perftest UCX_TLS=$tls $test $size"
        run_case "" "$tls" "$test" "$size" "$iters"
        sys_ok=$R_OK sys_why=$R_WHY sys_lat=$R_LAT
        ucx_lines "$T_WORK/srv.out" "$T_WORK/cli.out" >"$T_WORK/lines.sys"
        if [ -z "$OURS" ]; then
            if [ "$sys_ok" = 1 ]; then pass "$name (system, $sys_lat us)"; else fail "$name (system)" "$sys_why"; fi
            continue
        fi
        run_case "$OURS" "$tls" "$test" "$size" "$iters"
        ucx_lines "$T_WORK/srv.out" "$T_WORK/cli.out" >"$T_WORK/lines.ours"
        R_BAD=0
        { bad_end "$R_SRV" || bad_end "$R_CLI"; } && R_BAD=1
        ab_verdict "$name" "$sys_ok" "$sys_why" "$R_LAT us; original $sys_lat us" "$T_WORK/srv.out" "$T_WORK/cli.out"
    done < <(cases)
done

shm_check "no /dev/shm file or SysV segment left over" "$T_WORK/shm.before"
finish
