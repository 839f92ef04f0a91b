#!/usr/bin/env bash
# libucp over our libuct: Debian's ucp_hello_world (built unchanged from the
# libucx-dev examples against the system headers, linked to the system
# libucp.so.0) as server + client on loopback, with LD_LIBRARY_PATH pointing
# both at LIBDIR, so the distro's libucp runs on our libuct.
#
#   UCX_TLS   tcp, "posix,self", "sysv,cma", all
#   modes     busy polling (default), -w (ucp_worker_wait), -f (event fd)
#   sizes     -s 16 (eager) and -s 200000 (rendezvous)
#   failures  -e send, -e keepalive over tcp (see below)
#
# Each case runs first on the system library (the C original), then on
# LIBDIR.  A case the original passes must pass on LIBDIR: both processes
# exit 0 and the client prints exactly the string the server generated
# ('A' + i % 26, SIZE - 1 letters).  A case the original fails must not
# crash or hang on LIBDIR.  Every UCX warning or error line LIBDIR's run
# prints (message text, without time, pid and source position) must also
# appear in the original's run of the same case.
# With an empty LIBDIR only the system runs are made (sanity run).
# Usage: tests/ucp-hello.sh [LIBDIR]   (or UCT_LIBDIR)
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib/ab-common.sh"

ab_begin "$@"

build_ucp_example ucp_hello_world
UCP_HELLO=$T_WORK/ucp_hello_world
OURS=$UCT_LIBDIR

# run_case LIB TLS SIZE MODE... -> R_OK (1/0), R_SRV, R_CLI, R_WHY;
# outputs in $T_WORK/srv.out and $T_WORK/cli.out
run_case() {
    local lib=$1 tls=$2 size=$3 port spid cpid
    shift 3
    local mode=("$@")
    port=$(free_port)
    rm -f "$T_WORK/srv.st" "$T_WORK/cli.st"
    env $(lib_env "$lib") UCX_TLS="$tls" "$RUN_WATCH" "$PAIR_TIMEOUT" "$T_WORK/srv.st" \
        "$UCP_HELLO" "${mode[@]}" -s "$size" -p "$port" >"$T_WORK/srv.out" 2>&1 </dev/null &
    spid=$!
    T_CHILDREN=$spid
    if ! wait_listening "$spid" "$port"; then
        wait "$spid"
        T_CHILDREN=
        R_OK=0 R_SRV=$(status_of "$T_WORK/srv.st") R_CLI="not started" R_WHY="server did not listen"
        return
    fi
    env $(lib_env "$lib") UCX_TLS="$tls" "$RUN_WATCH" "$PAIR_TIMEOUT" "$T_WORK/cli.st" \
        "$UCP_HELLO" "${mode[@]}" -s "$size" -p "$port" -n 127.0.0.1 >"$T_WORK/cli.out" 2>&1 </dev/null &
    cpid=$!
    T_CHILDREN="$spid $cpid"
    wait_pair "$spid" "$T_WORK/srv.st" "$cpid" "$T_WORK/cli.st"
    T_CHILDREN=
    R_SRV=$(status_of "$T_WORK/srv.st")
    R_CLI=$(status_of "$T_WORK/cli.st")
    R_OK=0 R_WHY=
    if [ "$R_SRV" != "exit 0" ] || [ "$R_CLI" != "exit 0" ]; then
        R_WHY="server $R_SRV, client $R_CLI"
    elif test_string "$size" >"$T_WORK/want" && ! grep -qxFf "$T_WORK/want" "$T_WORK/cli.out"; then
        R_WHY="the client did not print the $((size - 1)) letters the server sent"
    else
        R_OK=1
    fi
}

for tls in tcp posix,self sysv,cma all; do
    for size in 16 200000; do
        for mode in busy -w -f; do
            args=()
            [ "$mode" != busy ] && args=("$mode")
            name="ucp_hello_world UCX_TLS=$tls $mode -s $size"
            run_case "" "$tls" "$size" "${args[@]}"
            sys_ok=$R_OK sys_why=$R_WHY
            ucx_lines "$T_WORK/srv.out" "$T_WORK/cli.out" >"$T_WORK/lines.sys"
            if [ -z "$OURS" ]; then
                if [ "$sys_ok" = 1 ]; then pass "$name (system)"; else fail "$name (system)" "$sys_why"; fi
                continue
            fi
            run_case "$OURS" "$tls" "$size" "${args[@]}"
            ucx_lines "$T_WORK/srv.out" "$T_WORK/cli.out" >"$T_WORK/lines.ours"
            R_BAD=0
            { bad_end "$R_SRV" || bad_end "$R_CLI"; } && R_BAD=1
            ab_verdict "$name" "$sys_ok" "$sys_why" "" "$T_WORK/srv.out" "$T_WORK/cli.out"
        done
    done
done

# Peer failure (-e send, -e keepalive; tcp, the transport with peer failure
# detection): one side kills itself on purpose, and libucp must report the
# other side's endpoint as failed through our error handler.  Passes when
# both exit statuses are the original's and the survivor printed the same
# failure-handler line ("failure handler called with status ...").  Not -e
# recv: whether the server's ucp_ep_create still reaches the dying client
# is a race inside the example (the server then exits 255 or 0).
failure_lines() {
    sed -n 's/^\[0x[0-9a-f]*\] \(failure handler called with status .*\)$/\1/p' \
        "$T_WORK/srv.out" "$T_WORK/cli.out" | sort -u
}
for mode in send keepalive; do
    name="ucp_hello_world UCX_TLS=tcp -e $mode"
    run_case "" tcp 16 -e "$mode"
    sys_st="server $R_SRV, client $R_CLI"
    sys_fh=$(failure_lines)
    ucx_lines "$T_WORK/srv.out" "$T_WORK/cli.out" >"$T_WORK/lines.sys"
    if [ -z "$OURS" ]; then
        if [ -n "$sys_fh" ]; then pass "$name (system: $sys_st)"; else fail "$name (system)" "$sys_st, no failure handler line"; fi
        continue
    fi
    run_case "$OURS" tcp 16 -e "$mode"
    st="server $R_SRV, client $R_CLI"
    fh=$(failure_lines)
    ucx_lines "$T_WORK/srv.out" "$T_WORK/cli.out" >"$T_WORK/lines.ours"
    extra=$(comm -23 "$T_WORK/lines.ours" "$T_WORK/lines.sys")
    if [ -z "$sys_fh" ]; then
        fail "$name" "the original printed no failure handler line ($sys_st)"
    elif [ "$st" != "$sys_st" ]; then
        fail "$name" "$st (the original: $sys_st)"
    elif [ "$fh" != "$sys_fh" ]; then
        fail "$name" "failure handler: '${fh:-none}' (the original: '$sys_fh')"
    elif [ -n "$extra" ]; then
        fail "$name" "UCX lines the original does not print: $extra"
    else
        pass "$name ($st; $fh)"
    fi
done

shm_check "no /dev/shm file or SysV segment left over" "$T_WORK/shm.before"
finish
