#!/usr/bin/env bash
# UCX's own uct_hello_world example, built at test time from the installed
# libucx-dev package (copied into a temporary directory, never kept in the
# repository), run as server + client on loopback with LIBDIR's libuct.so.0.
# The "self" transport cannot cross processes, so the shared-memory and tcp
# transports are used: posix/memory, sysv/memory and tcp/lo, each with
# -i (am_short) and -b (am_bcopy).
#
# A case passes when both processes exit with 0 and the server reports
# "UCT TEST SUCCESS" with the exact string the client sent.
# EXPECT_FAIL_TLS="posix sysv tcp" marks transports that are expected to be
# unsupported: such a case counts as passed when it fails cleanly (no
# signal, no hang), and as failed when a process crashes or times out.
# Usage: tests/hello-uct.sh [LIBDIR]   (or UCT_LIBDIR; empty = system library)
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib/common.sh"
. "$here/lib/two-proc.sh"

resolve_libdir "$@"
EXPECT_FAIL_TLS=${EXPECT_FAIL_TLS:-}
HELLO_TIMEOUT=${HELLO_TIMEOUT:-30}
PAIR_TIMEOUT=$HELLO_TIMEOUT   # bounds wait_listening
make_workdir
need_hello
build_run_watch

expected_to_fail() {
    case " $EXPECT_FAIL_TLS " in *" $1 "*) return 0 ;; esac
    return 1
}

for c in "posix memory" "sysv memory" "tcp lo"; do
    set -- $c
    tl=$1 dev=$2
    for mode in -i -b; do
        name="$tl/$dev $mode"
        port=$(free_port)
        rm -f "$T_WORK/srv.st" "$T_WORK/cli.st"
        "$RUN_WATCH" "$HELLO_TIMEOUT" "$T_WORK/srv.st" "${RUN[@]}" "$HELLO" \
            -t "$tl" -d "$dev" $mode -p "$port" -s 20 >"$T_WORK/srv" 2>&1 </dev/null &
        srv_pid=$!
        T_CHILDREN=$srv_pid
        # start the client once the server listens (or has given up)
        wait_listening "$srv_pid" "$port"
        "$RUN_WATCH" "$HELLO_TIMEOUT" "$T_WORK/cli.st" "${RUN[@]}" "$HELLO" \
            -t "$tl" -d "$dev" $mode -p "$port" -s 20 -n 127.0.0.1 \
            >"$T_WORK/cli" 2>&1 </dev/null
        crc=$?
        wait "$srv_pid"
        src=$?
        T_CHILDREN=

        ok=0
        if [ $crc -eq 0 ] && [ $src -eq 0 ] &&
           grep -q 'UCT TEST SUCCESS' "$T_WORK/srv" &&
           grep -q "sent $HELLO_WANT (20 bytes)" "$T_WORK/srv"; then
            ok=1
        fi
        how="server $(status_of "$T_WORK/srv.st"), client $(status_of "$T_WORK/cli.st")"
        if expected_to_fail "$tl"; then
            if ended_badly "$T_WORK/srv.st" || ended_badly "$T_WORK/cli.st"; then
                fail "$name (expected to fail cleanly)" "$how"
            elif [ $ok -eq 1 ]; then
                pass "$name XPASS: works now, drop $tl from EXPECT_FAIL_TLS"
            else
                pass "$name fails cleanly as expected ($how)"
            fi
        elif [ $ok -eq 1 ]; then
            pass "$name"
        elif [ "$tl/$dev" = tcp/lo ] && tcp_lo_unreachable && [ $crc -eq 0 ] && [ $src -eq 0 ] &&
             grep -q 'Failed to reach the peer' "$T_WORK/srv" "$T_WORK/cli"; then
            pass "$name: unreachable, as with UCX $UCX_ABI's own libuct"
        else
            msg=$(grep -hiE 'fail|error|unsupported|unreach' "$T_WORK/cli" "$T_WORK/srv" |
                  head -n 1 | cut -c1-100)
            fail "$name" "$how${msg:+; $msg}"
        fi
    done
done

finish
