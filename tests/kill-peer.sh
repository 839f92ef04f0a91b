#!/usr/bin/env bash
# SIGKILL one of two UCT processes mid-transfer (c-tests/kill_peer.c) and
# check that the survivor notices, through its iface error handler or an
# error from uct_ep_check / a send, within a bound (-T, default 10 s), and
# exits cleanly; that nothing hangs (the program kills a survivor that has
# not exited 10 s after the bound, and run_watch bounds everything); and that
# no /dev/shm file and no SysV segment of these processes is left over.
#
# What the C original (UCX 1.13.1) does, measured with this program:
#  - posix and sysv report EP_CHECK but not ERRHANDLE_PEER_FAILURE (cap flags
#    0x11804000023b); UCX_POSIX_ERROR_HANDLING=y / UCX_SYSV_ERROR_HANDLING=y
#    only add that flag (0x11c04000023b): detection works the same either way.
#  - Nothing is noticed by itself: with no check the survivor goes on (the
#    sender gets UCS_ERR_NO_RESOURCE once the dead receiver's FIFO is full,
#    a receiver just sees no more messages).
#  - uct_ep_check(ep, 0, NULL) returns UCS_OK; it compares the start time of
#    the peer's pid (from the FIFO control block) with the one recorded at
#    connect time, and on a mismatch queues the error handler on the worker:
#    the next uct_worker_progress calls it once with the endpoint and
#    UCS_ERR_CONNECTION_RESET (-25).  A killed peer that is not reaped yet
#    (a zombie) still has its /proc/PID/stat, so it is noticed only after its
#    parent has reaped it (-z shows it).  With a check every 10 ms the
#    handler ran 1-12 ms after the kill.
#  - am_bcopy with UCT_SEND_FLAG_PEER_CHECK makes the same check when the
#    FIFO is full (UCS_ERR_NO_RESOURCE): a sender notices within ~1 ms.
#  - cma (put_zcopy): process_vm_writev to the dead receiver fails; the
#    error handler runs at once with UCS_ERR_CONNECTION_RESET and the put
#    completes with UCS_ERR_IO_ERROR, without any check.  A cma receiver
#    notices a dead sender only through uct_ep_check, as mm does.
#  - No leftovers: posix unlinks its file right after creating it (it is
#    shared through /proc/PID/fd), sysv marks segments IPC_RMID after shmat.
#    But with UCX_POSIX_USE_PROC_LINK=n (peers open the file by name) the
#    killed process leaves its /dev/shm/ucx_shm_posix_* files (FIFO and
#    descriptor segments) behind: that case only reports what it finds (and
#    removes it), its leftovers are not counted as a failure.
#
# EXPECT_FAIL_TLS="cma" (or "posix sysv cma") marks transports not built yet
# in the library under test: their cases pass when they end cleanly (setup
# failure, or anything but a crash or a hang).
# Usage: tests/kill-peer.sh [LIBDIR]   (or UCT_LIBDIR; empty = system library)
here=$(cd "$(dirname "$0")" && pwd)
top=$(dirname "$here")
. "$here/lib/shm-leftovers.sh"
. "$here/lib/kill.sh"

resolve_libdir "$@"
EXPECT_FAIL_TLS=${EXPECT_FAIL_TLS:-}
KILL_TIMEOUT=${KILL_TIMEOUT:-10}
make_workdir
kill_peer_build "$top/c-tests/kill_peer.c"

expected_to_fail() {
    case " $EXPECT_FAIL_TLS " in *" $1 "*) return 0 ;; esac
    return 1
}

# ENV-or-"-"  tl  op  victim  check  expect  caps  leftovers
#   expect: detected | any (detected or not: only a clean end counts)
#   caps: ERRHANDLE_PEER_FAILURE:EP_CHECK as the original reports them
#   leftovers: none | report (only reported, see above)
cases() {
    cat <<'CASES'
-                            posix short    sender    check     detected 0:1 none
-                            posix short    receiver  check     detected 0:1 none
-                            posix bcopy    sender    check     detected 0:1 none
-                            posix bcopy    receiver  check     detected 0:1 none
-                            posix bcopy    receiver  peercheck detected 0:1 none
-                            posix bcopy    receiver  none      any      0:1 none
-                            posix short    sender    none      any      0:1 none
UCX_POSIX_ERROR_HANDLING=y   posix bcopy    receiver  check     detected 1:1 none
-                            sysv  short    sender    check     detected 0:1 none
-                            sysv  short    receiver  check     detected 0:1 none
-                            sysv  bcopy    sender    check     detected 0:1 none
-                            sysv  bcopy    receiver  check     detected 0:1 none
-                            sysv  bcopy    receiver  peercheck detected 0:1 none
-                            sysv  bcopy    receiver  none      any      0:1 none
UCX_SYSV_ERROR_HANDLING=y    sysv  bcopy    sender    check     detected 1:1 none
-                            posix put      receiver  check     detected 0:1 none
-                            sysv  put      sender    check     detected 0:1 none
-                            cma   put      receiver  none      detected 1:1 none
UCX_POSIX_USE_PROC_LINK=n    posix bcopy    receiver  check     detected 0:1 report
-                            cma   put      sender    check     detected 1:1 none
CASES
}

out=$KP_OUT
while read -r envv tl op victim check expect caps leftovers; do
    envs=()
    [ "$envv" != "-" ] && envs=("$envv")
    name="$tl $op, kill the $victim, $check"
    [ "$envv" != "-" ] && name="$name, $envv"
    timeout_opt=$KILL_TIMEOUT
    [ "$expect" = any ] && timeout_opt=2   # how long to keep going unnoticed

    shm_snapshot "$T_WORK/shm.before"
    kill_peer_run $((KILL_TIMEOUT + 60)) env "${envs[@]}" "${RUN[@]}" \
        "$T_WORK/kill_peer" -t "$tl" -m "$op" -v "$victim" -c "$check" -T "$timeout_opt"
    detail=$(grep -E '^(detected|detect_ms|setup)' "$out" | tr '\n' ' ' | cut -c1-200)

    if expected_to_fail "$tl"; then
        name="$name (EXPECT_FAIL_TLS)"
        case $ended:$result in
            "exit 0:detected" | "exit 1:not-detected" | "exit 4:setup-failed")
                pass "$name ends cleanly as allowed: $result" ;;
            *)
                fail "$name" "must end cleanly: $ended, RESULT ${result:-none}"
                sed 's/^/      /' "$out" ;;
        esac
    elif kill_peer_ended_badly; then
        fail "$name" "$why"
        sed 's/^/      /' "$out"
    elif [ "$result" != detected ] && { [ "$expect" = detected ] ||
                                         [ "$result" != not-detected ]; }; then
        fail "$name" "RESULT $result; $detail"
        sed 's/^/      /' "$out"
    elif [ "$got_caps" != "$caps" ]; then
        fail "$name" "capability flags errhandle_peer_failure:ep_check = $got_caps, the original has $caps"
    else
        ms=$(sed -n 's/^detect_ms_after_kill=\([0-9.]*\).*/\1/p' "$out")
        how=$(sed -n 's/^detected=1 via=\([a-z_]*\) status=\(-*[0-9]*\).*/via \1, status \2/p' "$out")
        pass "$name: $result${how:+ $how}${ms:+ after $ms ms}"
    fi

    # the victim's and the survivor's segments must be gone
    pids=$(sed -n 's/^pids receiver=\([0-9]*\) sender=\([0-9]*\)$/\1 \2/p' "$out")
    if [ "$leftovers" = report ]; then
        left=$(SHM_CPIDS=$pids shm_leftovers "$T_WORK/shm.before")
        if [ -n "$left" ]; then
            shm_remove "$left"
            pass "$name: leftovers allowed, found (and removed) $(printf '%s\n' "$left" | wc -l): $(printf '%s' "$left" | awk '{print $2}' | tr '\n' ' ')"
        else
            pass "$name: leftovers allowed, none found"
        fi
    else
        SHM_CPIDS=$pids shm_check "$name: no leftovers" "$T_WORK/shm.before"
    fi
done < <(cases)

finish
