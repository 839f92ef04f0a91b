#!/usr/bin/env bash
# Connection manager of the "tcp" component (sockcm): a server and a client
# process exchange private data both ways over 127.0.0.1 (c-tests/
# cm_client_server.c), then disconnect, once from each side; a "pack" run
# fills the data through pack callbacks; a rejected client must get
# UCS_ERR_REJECTED.  The same again over [::1] (CMCS_IPV6=1) when the
# machine has IPv6 loopback.  Each mode runs LIBDIR on both sides, then mixed (LIBDIR
# server + system client, system server + LIBDIR client).  Then two of
# LIBDIR with a polled async context (CMCS_ASYNC=poll: the CM runs from the
# worker's progress there; the original's fails).  With an empty LIBDIR
# every process uses the system library.
#
# EXPECT_FAIL_TLS containing "tcp" skips the cases that load LIBDIR (for a
# library without the tcp CM yet); the program exits 77 when the library
# has no tcp component with UCT_COMPONENT_FLAG_CM, which counts as a failure
# otherwise.
# Usage: tests/cm-tcp.sh LIBDIR   (or UCT_LIBDIR)
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib/common.sh"
. "$here/lib/cm.sh"

resolve_libdir "${1-${UCT_LIBDIR:-}}"
EXPECT_FAIL_TLS=${EXPECT_FAIL_TLS:-}
make_workdir
build_run_watch
CMCS=$T_WORK/cm_client_server
build_c "$CMCS" "$here/../c-tests/cm_client_server.c" || abort "build cm_client_server"
pass "build cm_client_server"

OURS=$UCT_LIBDIR
SYS=

skip_ours() {
    [ -n "$OURS" ] || return 1
    case " $EXPECT_FAIL_TLS " in *" tcp "*) return 0 ;; esac
    return 1
}

# cm_side LIB STATUSFILE CMD... (tests/lib/cm.sh): one side over loopback
cm_side() {
    local lib=$1 st=$2
    shift 2
    env $(lib_env "$lib") CMCS_IPV6=$AF6 CMCS_SYNC="$CMCS_SYNC" CMCS_ASYNC=${CMCS_ASYNC:-thread} \
        "$RUN_WATCH" 30 "$st" "$@"
}

if grep -q '^0\{31\}1 ' /proc/net/if_inet6 2>/dev/null; then
    families="4 6"
else
    families=4
    echo "SKIP  cm over [::1]: no IPv6 loopback address on this machine"
fi
for af in $families; do
AF6=0 sfx=
[ "$af" = 6 ] && AF6=1 sfx=" ipv6"
for mode in srv-disc cli-disc pack reject; do
    if [ -z "$OURS" ]; then
        cm_run_pair "cm $mode$sfx system/system" "$SYS" "$SYS" "$mode"
        continue
    fi
    for pair in "ours ours" "ours system" "system ours"; do
        set -- $pair
        if [ "$1" = ours ]; then s=$OURS; else s=$SYS; fi
        if [ "$2" = ours ]; then c=$OURS; else c=$SYS; fi
        name="cm $mode$sfx srv=$1 cli=$2"
        if skip_ours; then
            pass "$name skipped (EXPECT_FAIL_TLS has tcp)"
            continue
        fi
        cm_run_pair "$name" "$s" "$c" "$mode"
    done
done
done
# A polled async context (the program polls it beside the worker's
# progress): the CM then runs from the worker's progress. Two of ours only:
# the original's CM fails there (libucs's poll hands its handlers the error
# event with every call: "error event on server ep").
if [ -n "$OURS" ] && ! skip_ours; then
    for mode in srv-disc cli-disc; do
        CMCS_ASYNC=poll cm_run_pair "cm $mode async=poll srv=ours cli=ours" "$OURS" "$OURS" "$mode"
    done
fi
finish
