#!/usr/bin/env bash
# The ordering rule of coalescing (UCX_TCP_TX_COALESCE, an extension of
# this library): messages a tcp endpoint holds back are on the wire before
# any other operation of the same worker that can send does its work.
#
# c-tests/tcp_order.c: a sender sends m1 and m2 back to back on one tcp
# endpoint (m2 is what coalescing holds), does one operation (CASE), then
# never calls into UCT again; the receiver must get m2 within 1.5 s. The
# cases: an am_short on another endpoint of the same interface (another
# connection), on another tcp interface, on a posix endpoint; progress or
# flush of the posix interface only; ep_check (keepalive) on another
# endpoint; ep flush, iface flush, event arm, ep destroy; a CM client
# endpoint created, notified, disconnected; an am_short on, or progress of,
# a second worker driven by the same thread. Before the rule was kept
# worker-wide, 9 of the first 13 failed (m2 stayed held); before it spanned
# the thread's workers, the last two did.
#
# Ours runs with its default (UCX_TCP_TX_COALESCE=64k: coalescing on).
# The control case ("none": nothing after m2) shows that the library under
# test really holds: ours holds m2 by default and sends it at once with
# UCX_TCP_TX_COALESCE=0, and never holds on a serialized worker (one that
# may change threads, where the rule could not span workers). The C original never
# holds: every case, the control included, must deliver on it (it runs
# first, as the reference).
#
# Usage: tests/tcp-order.sh [LIBDIR]   (or UCT_LIBDIR; empty = system library)
here=$(cd "$(dirname "$0")" && pwd)
top=$(dirname "$here")
. "$here/lib/common.sh"

resolve_libdir "$@"
make_workdir
build_run_watch
if build_c "$T_WORK/tcp_order" "$top/c-tests/tcp_order.c" 2>"$T_WORK/cc.log"; then
    pass "build tcp_order"
else
    cat "$T_WORK/cc.log"
    abort "build tcp_order"
fi

CASES="ep iface posix progress posix-flush check ep-flush iface-flush arm destroy cm-create cm-notify cm-disc worker2 worker2-progress"

# run SIDE-LABEL LIBDIR CASE WANT [ENV...]
run() {
    local label=$1 lib=$2 case=$3 want=$4 got
    shift 4
    rm -f "$T_WORK/st"
    "$RUN_WATCH" 90 "$T_WORK/st" env $(lib_env "$lib") "$@" "$T_WORK/tcp_order" "$case" \
        >"$T_WORK/out" 2>&1 </dev/null
    got=$(sed -n 's/^RESULT //p' "$T_WORK/out")
    if ended_badly "$T_WORK/st" || [ -z "$got" ] || ! grep -q '^exit [01]$' "$T_WORK/st"; then
        fail "$label $case${*:+ ($*)}" "$(cat "$T_WORK/st" 2>/dev/null), RESULT ${got:-none}"
        sed 's/^/      /' "$T_WORK/out" | tail -8
    elif [ "$got" != "$want" ]; then
        fail "$label $case${*:+ ($*)}" "m2 $got, expected $want"
        sed 's/^/      /' "$T_WORK/out" | tail -8
    else
        pass "$label $case${*:+ ($*)}: m2 $got"
    fi
}

# The original first: the reference behaviour (nothing held, ever).
if ! testing_original; then
    for c in none $CASES; do
        run original "" "$c" delivered
    done
fi

if testing_original; then
    for c in none $CASES; do
        run "library under test" "" "$c" delivered
    done
else
    run LIBDIR "$UCT_LIBDIR" none held
    run LIBDIR "$UCT_LIBDIR" none delivered UCX_TCP_TX_COALESCE=0
    # A serialized worker may change threads: it never holds.
    run LIBDIR "$UCT_LIBDIR" none delivered TCP_ORDER_SERIALIZED=1
    for c in $CASES; do
        run LIBDIR "$UCT_LIBDIR" "$c" delivered
    done
fi

finish
