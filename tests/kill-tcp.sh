#!/usr/bin/env bash
# SIGKILL one of two UCT processes connected over tcp on lo, mid-stream, and
# check that the survivor's iface error handler fires with the status the C
# original gives, within a bound (-T, default 10 s), and that the survivor
# exits cleanly.  The program is c-tests/kill_peer.c (the shared-memory kill
# test's program; nothing in it is transport specific): a controller forks a
# receiver and a sender, each opens tcp/lo with an error handler, they swap
# device + iface addresses over a socketpair and connect to each other's
# iface (both sides connect: the simultaneous-connect path), the sender
# streams AM short / AM bcopy / put zcopy, the controller SIGKILLs the victim
# after 2000 messages and waits for the survivor (killed as a hang 10 s after
# the bound; run_watch bounds the whole program too).
#
# What the C original (UCX 1.13.1) does, measured with this program on lo
# (2-core VM): tcp reports ERRHANDLE_PEER_FAILURE and EP_CHECK (cap flags
# 0x53c00000004f).  The kernel closes the victim's socket at once (FIN, or
# RST when data was unread or arrives later), whether or not the victim is
# reaped yet; the survivor's next progress sees recv() return 0 / ECONNRESET
# (or send() fail with EPIPE) and calls the error handler once with our
# endpoint and UCS_ERR_ENDPOINT_TIMEOUT (-80) - with or without uct_ep_check,
# which returns UCS_OK.  Measured: a surviving sender notices in 0.3-0.9 ms,
# a surviving receiver in ~1-4 ms (it sleeps 1 ms per loop after the kill),
# once 105 ms.  An outstanding put zcopy of a surviving sender completes with
# UCS_ERR_CONNECTION_RESET (-25), once UCS_ERR_NOT_CONNECTED (-24) (timing):
# only reported here.  UCX's keepalive (UCX_TCP_KEEPIDLE etc.) plays no part
# when the process dies: the kernel resets the connection.
#
# UCX 1.18.1 (UCX_PREFIX, measured the same way): the same cap flags, and
# the error handler gets UCS_ERR_CONNECTION_RESET (-25) in every case (its
# tcp endpoint fails a peer that closed with that status): the "-80" of
# the table reads -25 there.
#
# Usage: tests/kill-tcp.sh [LIBDIR]   (or UCT_LIBDIR; empty = system library)
here=$(cd "$(dirname "$0")" && pwd)
top=$(dirname "$here")
. "$here/lib/kill.sh"

resolve_libdir "$@"
KILL_TIMEOUT=${KILL_TIMEOUT:-10}
make_workdir
kill_peer_build "$top/c-tests/kill_peer.c"

# ENV-or-"-"  op  victim  check  reap_delay_ms  status  caps
#   status: what the original's error handler gets (UCS_ERR_ENDPOINT_TIMEOUT)
#   caps: ERRHANDLE_PEER_FAILURE:EP_CHECK as the original reports them
#   reap_delay_ms > 0: the victim stays a zombie that long (its sockets are
#   closed anyway: detection must not wait for the reap)
cases() {
    cat <<'CASES'
-                       short  sender    none   0    -80 1:1
-                       short  receiver  none   0    -80 1:1
-                       bcopy  sender    none   0    -80 1:1
-                       bcopy  receiver  none   0    -80 1:1
-                       bcopy  sender    check  0    -80 1:1
-                       bcopy  receiver  check  0    -80 1:1
-                       put    sender    none   0    -80 1:1
-                       put    receiver  none   0    -80 1:1
-                       bcopy  receiver  none   500  -80 1:1
-                       bcopy  sender    none   500  -80 1:1
UCX_TCP_SENDV_THRESH=0  bcopy  receiver  none   0    -80 1:1
CASES
}

while read -r envv op victim check zdelay want_status caps; do
    [ "$UCX_ABI" != 1.13 ] && [ "$want_status" = -80 ] && want_status=-25
    envs=()
    [ "$envv" != "-" ] && envs=("$envv")
    name="tcp/lo $op, kill the $victim, $check"
    [ "$zdelay" != 0 ] && name="$name, reaped after $zdelay ms"
    [ "$envv" != "-" ] && name="$name, $envv"

    kill_peer_run $((KILL_TIMEOUT + 60)) env "${envs[@]}" "${RUN[@]}" \
        "$T_WORK/kill_peer" -t tcp -d lo -m "$op" -v "$victim" -c "$check" \
        -z "$zdelay" -T "$KILL_TIMEOUT"
    kill_peer_ended_badly || kill_peer_judge "$want_status" "$caps"
    if [ -n "$why" ]; then
        fail "$name" "$why"
        sed 's/^/      /' "$KP_OUT"
    else
        extra=
        if [ "$zdelay" != 0 ]; then
            case $reap_ms in
                -*) extra=", ${reap_ms#-} ms before the victim was reaped" ;;
                *) extra=", ${reap_ms} ms after the victim was reaped" ;;
            esac
        fi
        [ -n "$putc" ] && extra="$extra; failed put completion $putc"
        pass "$name: $(kill_peer_handled)$extra"
    fi
done < <(cases)

finish
