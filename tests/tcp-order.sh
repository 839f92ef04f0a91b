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
# Ours runs with coalescing on (its default, UCX_TCP_TX_COALESCE=64k) and,
# for these cases, without the safety net (UCX_TCP_TX_COALESCE_TIMEOUT=inf:
# its timer would send m2 after 5-10 ms in every case, rule or not).
# The control case ("none": nothing after m2) shows that the library under
# test really holds: ours holds m2 then, sends it at once with
# UCX_TCP_TX_COALESCE=0, and never holds on a serialized worker (one that
# may change threads, where the rule could not span workers). The C original never
# holds: every case, the control included, must deliver on it (it runs
# first, as the reference).
#
# The safety net, with the defaults: the control delivers (the timer sent
# m2), and so do some of the cases. Then c-tests/tcp_hold_stress.c: bursts
# of back-to-back messages on two connections of one worker, with pauses
# around the timer's tick, so that the timer sends held messages from the
# async thread while the sender comes back to send more; every message is
# checked (order, length, bytes), and the last burst is followed by no call
# into UCT at all. The original runs it as the reference.
#
# Usage: tests/tcp-order.sh [LIBDIR]   (or UCT_LIBDIR; empty = system library)
here=$(cd "$(dirname "$0")" && pwd)
top=$(dirname "$here")
. "$here/lib/common.sh"

resolve_libdir "$@"
make_workdir
build_run_watch
for prog in tcp_order tcp_hold_stress; do
    if build_c "$T_WORK/$prog" "$top/c-tests/$prog.c" 2>"$T_WORK/cc.log"; then
        pass "build $prog"
    else
        cat "$T_WORK/cc.log"
        abort "build $prog"
    fi
done

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
    # The cases of the rule run without the safety net (its timer would
    # send m2 in every case after 5-10 ms, rule or not).
    nonet=UCX_TCP_TX_COALESCE_TIMEOUT=inf
    run LIBDIR "$UCT_LIBDIR" none held $nonet
    run LIBDIR "$UCT_LIBDIR" none delivered UCX_TCP_TX_COALESCE=0 $nonet
    # A serialized worker may change threads: it never holds.
    run LIBDIR "$UCT_LIBDIR" none delivered TCP_ORDER_SERIALIZED=1 $nonet
    for c in $CASES; do
        run LIBDIR "$UCT_LIBDIR" "$c" delivered $nonet
    done
    # The safety net (the default): m2 goes out although the sender makes
    # no call after it; and it does not ruin the rule's cases.
    run LIBDIR "$UCT_LIBDIR" none delivered
    for c in ep posix worker2; do
        run LIBDIR "$UCT_LIBDIR" "$c" delivered
    done
fi

# stress LABEL LIBDIR SECONDS [ENV...]: c-tests/tcp_hold_stress.c, bursts
# of back-to-back messages on two connections with pauses around the
# timer's tick, every message checked, every other one echoed from the
# receiver's handler; the sender's last burst is followed by no call into
# UCT, and so is the receiver's last echo. With ours, the debug lines at
# the workers' end must show that the timer sent held messages during the
# run (sends from the async thread while the process comes back to send
# more).
stress() {
    local label=$1 lib=$2 secs=$3 res sent
    shift 3
    rm -f "$T_WORK/st"
    "$RUN_WATCH" $((secs + 60)) "$T_WORK/st" env $(lib_env "$lib") UCX_LOG_LEVEL=debug "$@" \
        "$T_WORK/tcp_hold_stress" "$secs" >"$T_WORK/out" 2>&1 </dev/null
    res=$(sed -n 's/^RESULT //p' "$T_WORK/out" | head -n 1)
    sent=$(sed -n 's/.* holds, \([0-9]*\) sent by the timer.*/\1/p' "$T_WORK/out" | awk '{ n += $1 } END { if (NR) print n }')
    if ended_badly "$T_WORK/st" || ! grep -q '^exit 0$' "$T_WORK/st" || [ "${res%% *}" != ok ]; then
        fail "hold stress, $label" "$(cat "$T_WORK/st" 2>/dev/null), RESULT ${res:-none}"
        grep -v DEBUG "$T_WORK/out" | sed 's/^/      /' | tail -6
    elif [ -n "$lib" ] && ! testing_original && [ "${sent:-0}" -eq 0 ]; then
        fail "hold stress, $label" "the timer sent nothing (${res})"
    else
        pass "hold stress, $label: ${res}${sent:+, $sent sends by the timer}"
    fi
}

if ! testing_original; then
    stress original "" 2
fi
if testing_original; then
    stress "library under test" "$UCT_LIBDIR" 4
else
    # A tick of 1 ms (the shortest): the sender's pauses (up to 3 ms) are
    # mostly longer, so the timer sends often while the sender resumes.
    stress "LIBDIR, UCX_TCP_TX_COALESCE_TIMEOUT=1ms" "$UCT_LIBDIR" 4 UCX_TCP_TX_COALESCE_TIMEOUT=1ms
    # The default tick (5 ms): longer than the pauses.
    stress LIBDIR "$UCT_LIBDIR" 3
fi

finish
