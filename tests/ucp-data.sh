#!/usr/bin/env bash
# Data integrity through libucp, every byte checked, between the C original
# and LIBDIR's libuct in every pairing: c-tests/ucp_data_check.c (tag
# messages of 1 KiB to 4 MiB between libucp-allocated and malloc'ed
# buffers in both directions, then put, get and fetch-add on the peer's
# allocated and registered memory, each side in turn).
#
#   UCX_TLS   posix,self  sysv,self  posix,sysv,cma,self  tcp
#   pairs     original/original first (the case must pass there), then
#             ours/ours, ours server/original client, original
#             server/ours client
#
# Then, over tcp with the stream feature (stream messages of 1 KiB to 4
# MiB, each received after it arrived), in the same pairings: between two
# of ours, large messages must have reached libucp 1.13 as descriptors that
# it kept (the debug line at close counts them; later releases send streams
# in smaller pieces); with UCX_TCP_RX_DESC_MIN=inf, none.
#
# Then, over posix,self between two of ours, the rendezvous lane of this
# library (posix_get, see README), with the tag feature only (the lanes
# libucp 1.18 picks with RMA and AMO asked for too leave it out): each side
# must have read from the other's segments through it (its debug line at
# close names the gets it did); with it left out (UCX_SHM_DEVICES=memory),
# none; and over posix,cma,self none either (cma is the rendezvous lane
# there).
#
# A pair passes when both processes exit 0 and print "ucp_data_check: OK"
# within PAIR_TIMEOUT seconds (60). With an empty LIBDIR only the
# original's runs are made (a sanity run of the test itself).
# Usage: tests/ucp-data.sh [LIBDIR]   (or UCT_LIBDIR)
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib/common.sh"
. "$here/lib/two-proc.sh"

resolve_libdir "$@"
make_workdir
build_run_watch
PAIR_TIMEOUT=${PAIR_TIMEOUT:-60}
OURS=$UCT_LIBDIR
PROG=$T_WORK/ucp_data_check
if "$CC" -O2 -g -Wall "${UCX_CFLAGS[@]}" -o "$PROG" "$here/../c-tests/ucp_data_check.c" \
        "${UCX_LDFLAGS[@]}" -lucp -luct -lucs 2>"$T_WORK/cc.log"; then
    pass "build ucp_data_check"
else
    cat "$T_WORK/cc.log"
    abort "build ucp_data_check"
fi

# run_pair SERVER_LIB CLIENT_LIB TLS -> $why ("" = both OK)
run_pair() {
    local slib=$1 clib=$2 tls=$3 port sst cst
    port=$(free_port)
    rm -f "$T_WORK/srv.st" "$T_WORK/cli.st"
    env $(lib_env "$slib") UCX_TLS="$tls" ${EXTRA_ENV:-} "$RUN_WATCH" "$PAIR_TIMEOUT" "$T_WORK/srv.st" \
        "$PROG" -s "$port" >"$T_WORK/srv.out" 2>&1 </dev/null &
    local spid=$!
    T_CHILDREN=$spid
    env $(lib_env "$clib") UCX_TLS="$tls" ${EXTRA_ENV:-} "$RUN_WATCH" "$PAIR_TIMEOUT" "$T_WORK/cli.st" \
        "$PROG" -c 127.0.0.1 "$port" >"$T_WORK/cli.out" 2>&1 </dev/null
    wait "$spid"
    T_CHILDREN=
    sst=$(cat "$T_WORK/srv.st" 2>/dev/null)
    cst=$(cat "$T_WORK/cli.st" 2>/dev/null)
    why=
    if [ "$sst" != "exit 0" ] || [ "$cst" != "exit 0" ] ||
       ! grep -q '^ucp_data_check: OK$' "$T_WORK/srv.out" ||
       ! grep -q '^ucp_data_check: OK$' "$T_WORK/cli.out"; then
        why="server ${sst:-?}, client ${cst:-?}: $(grep -hv '^ucp_data_check: OK$' "$T_WORK/srv.out" "$T_WORK/cli.out" |
                                                    head -n 3 | tr '\n' ' ')"
    fi
}

for tls in posix,self sysv,self posix,sysv,cma,self tcp; do
    run_pair "" "" "$tls"
    if [ -n "$why" ]; then
        fail "$tls, original/original" "$why"
        continue
    fi
    pass "$tls, original/original"
    [ -n "$OURS" ] || continue
    for pair in "$OURS $OURS ours/ours" "$OURS - ours server/original client" \
                "- $OURS original server/ours client"; do
        read -r s c label <<<"$pair"
        [ "$s" = - ] && s=
        [ "$c" = - ] && c=
        run_pair "$s" "$c" "$tls"
        if [ -n "$why" ]; then
            fail "$tls, $label" "$why"
        else
            pass "$tls, $label"
        fi
    done
done

# counted_pair NAME WANT COUNTER TLS ENV...: a pair of ours over TLS with
# ENV, whose two outputs COUNTER reads a count from: WANT "some" (both
# sides above 0), "none" (both 0) or "any" (only reported).
counted_pair() {
    local name=$1 want=$2 counter=$3 tls=$4 sn cn ok=
    shift 4
    EXTRA_ENV="$*" run_pair "$OURS" "$OURS" "$tls"
    sn=$($counter "$T_WORK/srv.out") cn=$($counter "$T_WORK/cli.out")
    case $want in
        some) [ "$sn" -gt 0 ] && [ "$cn" -gt 0 ] && ok=1 ;;
        none) [ "$sn" = 0 ] && [ "$cn" = 0 ] && ok=1 ;;
        any) ok=1 ;;
    esac
    if [ -n "$why" ]; then
        fail "$name" "$why"
    elif [ -n "$ok" ]; then
        pass "$name (server $sn, client $cn)"
    else
        fail "$name" "server $sn, client $cn"
    fi
}

# tcp_descs FILE: the messages the process's tcp interfaces handed over as
# descriptors that the handler kept (the sum of their debug lines at close).
tcp_descs() {
    sed -n 's/.*messages received as descriptors, \([0-9]*\) kept.*/\1/p' "$1" | awk '{ n += $1 } END { print n + 0 }'
}

# tcp_pairings NAME ENV PAIR...: run_pair over tcp with ENV, once per
# "SERVER CLIENT LABEL" (a libdir, "-" for the original), one result each.
tcp_pairings() {
    local name=$1 env=$2 pair s c label
    shift 2
    for pair in "$@"; do
        read -r s c label <<<"$pair"
        [ "$s" = - ] && s=
        [ "$c" = - ] && c=
        EXTRA_ENV="$env" run_pair "$s" "$c" tcp
        if [ -n "$why" ]; then fail "$name, $label" "$why"; else pass "$name, $label"; fi
    done
}

tcp_pairings "tcp streams" UCP_DATA_STREAM=1 "- - original/original"
if [ -z "$why" ]; then
    if [ -n "$OURS" ]; then
        tcp_pairings "tcp streams" UCP_DATA_STREAM=1 "$OURS - ours server/original client" \
            "- $OURS original server/ours client"
        # Later libucp releases send streams in pieces of a segment (8 KiB),
        # below UCX_TCP_RX_DESC_MIN: the data is checked, the count reported.
        want=some name="tcp streams, ours/ours, large messages as descriptors libucp kept"
        [ "${UCX_ABI:-1.13}" = 1.13 ] || want=any name="tcp streams, ours/ours (libucp $UCX_ABI: descriptors counted only)"
        counted_pair "$name" $want tcp_descs tcp UCP_DATA_STREAM=1 UCX_LOG_LEVEL=debug
        counted_pair "tcp streams, ours/ours, UCX_TCP_RX_DESC_MIN=inf: no descriptors" none tcp_descs tcp \
            UCP_DATA_STREAM=1 UCX_LOG_LEVEL=debug UCX_TCP_RX_DESC_MIN=inf
    fi
fi

# No flush before the final wait: the last message a side sent may be one
# that coalescing holds, and that side then waits on its control socket
# without calling UCX; the safety net's timer must send it (with
# UCX_TCP_TX_COALESCE_TIMEOUT=inf this hangs). The original is the
# reference (it never holds).
tcp_pairings "tcp streams without a final flush" "UCP_DATA_STREAM=1 UCP_DATA_NO_FLUSH=1" "- - original/original"
if [ -z "$why" ] && [ -n "$OURS" ]; then
    tcp_pairings "tcp streams without a final flush" "UCP_DATA_STREAM=1 UCP_DATA_NO_FLUSH=1" \
        "$OURS $OURS ours/ours" "$OURS - ours server/original client" "- $OURS original server/ours client"
fi

# posix_get_gets FILE: the gets the process's posix_get interfaces did (the
# sum of their "interface closed after N gets" debug lines; 0 without).
posix_get_gets() {
    sed -n 's/.*posix_get: interface closed after \([0-9]*\) gets.*/\1/p' "$1" | awk '{ n += $1 } END { print n + 0 }'
}
if [ -n "$OURS" ]; then
    counted_pair "posix,self, ours/ours, rendezvous through posix_get (gets)" some posix_get_gets posix,self \
        UCX_LOG_LEVEL=debug UCP_DATA_TAG_ONLY=1
    counted_pair "posix,self, ours/ours, posix_get left out (UCX_SHM_DEVICES=memory): no gets" none posix_get_gets \
        posix,self UCX_LOG_LEVEL=debug UCP_DATA_TAG_ONLY=1 UCX_SHM_DEVICES=memory
    # With cma beside it, cma is the one rendezvous lane (libucp's newer
    # protocols would otherwise split each read between the two).
    counted_pair "posix,cma,self, ours/ours, cma the rendezvous lane: no posix_get gets" none posix_get_gets \
        posix,cma,self UCX_LOG_LEVEL=debug UCP_DATA_TAG_ONLY=1
fi
finish
