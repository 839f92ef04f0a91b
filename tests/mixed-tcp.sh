#!/usr/bin/env bash
# Interoperability over tcp: the C original (system UCX 1.13.1) on one side
# and LIBDIR's libuct.so.0 on the other, in both directions (server = ours /
# client = system, and server = system / client = ours), on lo and, when it
# has an IPv4 address, eth0.
#   uct_hello_world        -i, -b, -z   (CONNECT_TO_EP, magic number,
#                                        connection request, framing)
#   ucx_perftest (2 procs) am_lat short 8, am_lat bcopy 4096, am_lat zcopy
#                          4096, put_lat zcopy 8 / 4096 (put protocol and
#                          its acknowledgements), am_bw short 4096,
#                          am_bw bcopy 4096 and zcopy 4096 (the sender of
#                          ours coalesces back-to-back messages: the C
#                          receiver must parse them)
# Every case must succeed as on system vs system. With an empty LIBDIR both
# sides are the system library (a sanity run of the test itself). From UCX
# 1.19 the tcp memory domain registers no memory, so uct_hello_world -z
# declines zero-copy ("Unsupported memory type ... on tcp MD") and exits 0,
# as the original pair does: that outcome is the expected one there.
# EXPECT_FAIL_TLS containing "tcp" accepts clean failures (see mixed-shm.sh).
# Usage: tests/mixed-tcp.sh LIBDIR [ITERS]   (or UCT_LIBDIR; ITERS env too)
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib/common.sh"
. "$here/lib/two-proc.sh"

mixed_begin "$@"
expected_to_fail() { case " $EXPECT_FAIL_TLS " in *" tcp "*) return 0 ;; esac; return 1; }
clean_enough() { bad_end "$1" && return 1; pair_failed_cleanly "$1" "$2"; }

# UCX 1.19 and later: the tcp memory domain registers no memory.
tcp_md_registers_none() {
    local minor=${UCX_ABI#1.}
    [ "$minor" -ge 19 ] 2>/dev/null
}

devs=(lo)
ip -o -4 addr show eth0 >/dev/null 2>&1 && devs+=(eth0)

for d in "ours system" "system ours"; do
    set -- $d
    srv_side=$1 cli_side=$2
    if [ "$srv_side" = ours ]; then slib=$OURS clib=$SYS; else slib=$SYS clib=$OURS; fi
    tag="srv=$srv_side cli=$cli_side"
    for dev in "${devs[@]}"; do
        for mode in -i -b -z; do
            name="hello tcp/$dev $mode $tag"
            run_hello_pair "$slib" "$clib" tcp "$dev" "$mode"
            how="server $HP_SRV, client $HP_CLI"
            if [ "$srv_side" = ours ]; then o=$HP_SRV p=$HP_CLI; else o=$HP_CLI p=$HP_SRV; fi
            if expected_to_fail; then
                if ! clean_enough "$o" "$p"; then fail "$name (EXPECT_FAIL_TLS)" "must fail cleanly: $how"
                else pass "$name (EXPECT_FAIL_TLS: $([ "$HP_OK" = 1 ] && echo XPASS || echo clean failure))"; fi
            elif [ "$HP_OK" = 1 ]; then
                pass "$name"
            elif [ "$dev" = lo ] && tcp_lo_unreachable && [ "$how" = "server exit 0, client exit 0" ] &&
                 [[ $HP_MSG == *"Failed to reach the peer"* ]]; then
                pass "$name: unreachable, as with UCX $UCX_ABI's own libuct"
            elif [ "$mode" = -z ] && [ "$how" = "server exit 0, client exit 0" ] && tcp_md_registers_none &&
                 [[ $HP_MSG == *"Unsupported memory type host by tcp/$dev on tcp MD"* ]]; then
                pass "$name (zero-copy declined: the tcp md of UCX $UCX_ABI registers no memory)"
            else
                fail "$name" "$how${HP_MSG:+; $HP_MSG}"
            fi
        done
    done
    while read -r test layout size; do
        name=$(printf 'perftest tcp/lo %-7s %-5s %-4s %s' "$test" "$layout" "$size" "$tag")
        run_perf_pair "$slib" "$clib" tcp lo "$test" "$layout" "$size" "$ITERS"
        if [ "$srv_side" = ours ]; then o=$PP_SRV p=$PP_CLI; else o=$PP_CLI p=$PP_SRV; fi
        if expected_to_fail; then
            if ! clean_enough "$o" "$p"; then fail "$name (EXPECT_FAIL_TLS)" "must fail cleanly: $PP_RESULT"
            else pass "$name (EXPECT_FAIL_TLS: $([ "$PP_RESULT" = OK ] && echo XPASS || echo clean failure))"; fi
        elif [ "$PP_RESULT" = OK ]; then
            pass "$name"
        elif tcp_lo_unreachable && [[ $PP_RESULT == *"Destination is unreachable"* ]] && ! bad_end "$o"; then
            pass "$name: unreachable, as with UCX $UCX_ABI's own libuct"
        else
            fail "$name" "$PP_RESULT"
        fi
    done <<'ROWS'
am_lat  short 8
am_lat  bcopy 4096
am_lat  zcopy 4096
put_lat zcopy 8
put_lat zcopy 4096
am_bw   short 4096
am_bw   bcopy 4096
am_bw   zcopy 4096
ROWS
done
finish
