#!/usr/bin/env bash
# libucp over the verbs transports: Debian's ucp_hello_world (built
# unchanged from the libucx-dev examples), server and client as two
# processes, each with the soft RDMA device (tests/softrdma/run.sh) and
# LD_LIBRARY_PATH at LIBDIR.  The example exchanges worker addresses over
# its own socket and connects through them (no connection manager).
#
#   UCX_TLS   rc_verbs,ud_verbs; ud_verbs; rc_verbs,ud_verbs,posix,self
#   modes     busy polling (default), -w (ucp_worker_wait), -f (event fd)
#   sizes     -s 16 (eager) and -s 1048576 (rendezvous)
#   mixed     rc_verbs,ud_verbs and ud_verbs, busy, both sizes: the original
#             as server and LIBDIR as client, and the other way round
#
# Each case runs on the original first (both sides), then on LIBDIR.  A
# case passes as on the original: both processes exit 0 and the client
# printed exactly the string the server generated ('A' + i % 26, SIZE - 1
# letters); the lanes libucp chose (its info log, ep_cfg lines) are the
# original's; LIBDIR may print no UCX warning or error line the original
# does not.  A case the original fails must not crash or hang on LIBDIR.
# UCT_RS_TIER=full runs the mixed cases in every mode and set.
# Usage: tests/ucp-verbs-hello.sh [LIBDIR]   (or UCT_LIBDIR)
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib/ucp-verbs.sh"

ucpv_begin "$@"
build_ucp_example ucp_hello_world
UCP_HELLO=$T_WORK/ucp_hello_world
UCPV_ENV=(UCX_LOG_LEVEL=info)
SIZES="16 1048576"

# run_case SRV_LIB CLI_LIB TLS SIZE MODE... -> R_OK, R_WHY, R_BAD, R_SEC;
# outputs in $T_WORK/srv.out and $T_WORK/cli.out
run_case() {
    local slib=$1 clib=$2 tls=$3 size=$4 port
    shift 4
    local mode=("$@")
    port=$(free_port)
    R_OK=0 R_WHY= R_BAD=0
    run_pair "$port" ucpv_side "$slib" "$tls" "$T_WORK/srv.st" "$UCP_HELLO" "${mode[@]}" -s "$size" -p "$port" \
        -- ucpv_side "$clib" "$tls" "$T_WORK/cli.st" "$UCP_HELLO" "${mode[@]}" -s "$size" -p "$port" -n 127.0.0.1 ||
        return
    ucpv_hello_judge "$size" 'ERROR\|Assert'
}

# ab NAME TLS SIZE SRV_LIB CLI_LIB MODE...: the original both sides, then
# the given pair; lanes compared
ab() {
    local name=$1 tls=$2 size=$3 slib=$4 clib=$5 sys_ok sys_why sys_bad sys_sec
    shift 5
    run_case "" "" "$tls" "$size" "$@"
    sys_ok=$R_OK sys_why=$R_WHY sys_bad=$R_BAD sys_sec=$R_SEC
    ucx_lines "$T_WORK/srv.out" "$T_WORK/cli.out" >"$T_WORK/lines.sys"
    ucpv_lanes "$T_WORK/srv.out" "$T_WORK/cli.out" >"$T_WORK/lanes.sys"
    if [ -z "$OURS" ]; then
        ucpv_system_only "$name" "$sys_ok" "$sys_why" "${sys_sec} s, $(grep -c . "$T_WORK/lanes.sys") ep configs" "$sys_bad"
        return
    fi
    run_case "$slib" "$clib" "$tls" "$size" "$@"
    ucx_lines "$T_WORK/srv.out" "$T_WORK/cli.out" >"$T_WORK/lines.ours"
    ucpv_lanes "$T_WORK/srv.out" "$T_WORK/cli.out" >"$T_WORK/lanes.ours"
    if [ "$R_OK" = 1 ] && ! diff "$T_WORK/lanes.sys" "$T_WORK/lanes.ours" >"$T_WORK/lanes.diff"; then
        R_OK=0 R_WHY="the lanes differ from the original's: $(head -n 4 "$T_WORK/lanes.diff" | tr '\n' ' ')"
    fi
    SYS_BAD=$sys_bad ab_verdict "$name" "$sys_ok" "$sys_why" \
        "$R_SEC s, original $sys_sec s; $(grep -c . "$T_WORK/lanes.sys") ep configs as the original's" \
        "$T_WORK/srv.out" "$T_WORK/cli.out"
}

for tls in $UCPV_SETS; do
    for size in $SIZES; do
        for mode in busy -w -f; do
            args=()
            [ "$mode" != busy ] && args=("$mode")
            ab "ucp_hello_world UCX_TLS=$tls $mode -s $size" "$tls" "$size" "$OURS" "$OURS" "${args[@]}"
        done
    done
done

# mixed: the original on one side, LIBDIR on the other
if [ -n "$OURS" ]; then
    for tls in $UCPV_SETS; do
        case $tls in *posix*) full_tier || continue ;; esac
        for size in $SIZES; do
            for mode in busy -w -f; do
                [ "$mode" = busy ] || full_tier || continue
                args=()
                [ "$mode" != busy ] && args=("$mode")
                ab "ucp_hello_world UCX_TLS=$tls $mode -s $size, server original, client LIBDIR" \
                    "$tls" "$size" "" "$OURS" "${args[@]}"
                ab "ucp_hello_world UCX_TLS=$tls $mode -s $size, server LIBDIR, client original" \
                    "$tls" "$size" "$OURS" "" "${args[@]}"
            done
        done
    done
fi

ucpv_end
