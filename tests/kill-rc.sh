#!/usr/bin/env bash
# SIGKILL one of two UCT processes connected over rc_verbs on the soft RDMA
# device (tests/softrdma/), mid-stream, with c-tests/kill_peer.c (its
# endpoint-to-endpoint path: rc_verbs connects ep to ep, so both sides
# create an unconnected endpoint, swap endpoint addresses over the
# socketpair and call uct_ep_connect_to_ep). The survivor's iface error
# handler must fire with the status the C original gives, within the bound
# (-T, KILL_TIMEOUT, default 10 s); the survivor must exit cleanly; nothing
# may hang (kill_peer kills a survivor that has not exited 10 s after the
# bound; run_watch bounds the whole program); the device's registry
# directory (private, under /dev/shm) must be empty at the end.
#
# What the C original (UCX 1.13.1) does, measured with this program
# (cap flags 0x12c08000067f: ERRHANDLE_PEER_FAILURE and EP_CHECK):
#  - a surviving sender (AM short / bcopy, put zcopy): its next send to the
#    dead receiver's QP completes with "transport retry counter exceeded";
#    the error handler runs once with our endpoint and
#    UCS_ERR_ENDPOINT_TIMEOUT (-80), ~10 ms after the kill; an outstanding
#    put zcopy completes with -80 too;
#  - without uct_ep_check (-c none) nothing fails while no work request is
#    outstanding, as on any RC device: a surviving receiver never notices a
#    dead sender, and a surviving sender that had used up its flow-control
#    window (AM short is far faster than its receiver: the usual case;
#    bcopy sometimes) waits for credits that never come: not detected
#    within the bound (a clean exit); when a send was still posted it fails
#    as above;
#  - uct_ep_check (a zero-length RDMA WRITE, every 10 ms here) fails the
#    same way on either side: error handler, -80, 5-20 ms after the kill.
# The UCX 1.18.1 reference (the wheel) has no verbs: there only ours runs,
# judged against those statuses.
# Usage: tests/kill-rc.sh [LIBDIR]   (or UCT_LIBDIR; empty = system library)
here=$(cd "$(dirname "$0")" && pwd)
top=$(dirname "$here")
. "$here/lib/kill.sh"
. "$here/lib/softrdma.sh"

softrdma_begin "$@"
KILL_TIMEOUT=${KILL_TIMEOUT:-10}
softrdma_need_rc_verbs
kill_peer_build "$top/c-tests/kill_peer.c"
softrdma_shm_dir

# op  victim  check  expect
#   expect: the error handler's status (-80), or "any": without checks
#   whether anything is noticed depends on timing (below); either outcome
#   passes if the survivor exits cleanly (and a detection must be the
#   error handler with the same status)
cases() {
    cat <<'CASES'
short  receiver  check  -80
bcopy  receiver  check  -80
put    receiver  check  -80
short  sender    check  -80
bcopy  sender    check  -80
put    sender    check  -80
bcopy  receiver  none   any
put    receiver  none   any
bcopy  sender    none   any
CASES
}

while read -r op victim check want; do
    name="rc_verbs $op, kill the $victim, $check"
    T=$KILL_TIMEOUT
    [ "$want" = any ] && T=3
    kill_peer_run $((T + 60)) "$SR/run.sh" env $(lib_env "$UCT_LIBDIR") \
        "$T_WORK/kill_peer" -t rc_verbs -d softrdma0:1 -m "$op" -v "$victim" -c "$check" -T "$T"

    if kill_peer_ended_badly; then
        :
    elif [ "$want" = any ] && [ "$result" = not-detected ]; then
        if [ "$survivor" = "exit 1" ]; then why=; else why="survivor $survivor"; fi
    elif [ "$want" = any ] && [ "$result" = detected ] && [ "$via" = err_handler ] &&
         [ "$status" = -80 ] && [ "$survivor" = "exit 0" ]; then
        why=
    else
        kill_peer_judge "$want" 1:1
    fi
    if [ -n "$why" ]; then
        fail "$name" "$why"
        sed 's/^/      /' "$KP_OUT" | grep -v 'Invalid\|Failed to' | tail -20
    elif [ "$want" = any ]; then
        if [ "$result" = detected ]; then
            pass "$name: noticed anyway (via $via, status $status, ${ms} ms), clean exit"
        else
            pass "$name: not noticed within ${T}s (no work request outstanding), clean exit"
        fi
    else
        pass "$name: $(kill_peer_handled)${putc:+; failed put completion $putc}"
    fi
done < <(cases)
softrdma_registry_empty "registry directory empty afterwards"
finish
