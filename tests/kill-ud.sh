#!/usr/bin/env bash
# SIGKILL of a peer mid-stream over ud_verbs on the soft RDMA device
# (tests/softrdma/), A/B: every case runs on the C original first, then on
# LIBDIR's library; a case the original passes must pass on LIBDIR.
#
# 1. c-tests/kill_peer.c (ud_verbs connects endpoint to iface): a receiver
#    and a sender stream AM short or bcopy messages; the victim is
#    SIGKILLed; a third process, the witness (-W), is a second live peer of
#    the survivor. UD has no transport-level retry error: the survivor
#    notices the death through UD's own reliability timeout
#    (UCX_UD_VERBS_TIMEOUT, set to UD_TIMEOUT, 2s, for both libraries):
#    its error handler runs once, with its endpoint to the victim and
#    UCS_ERR_ENDPOINT_TIMEOUT (-80). Then it sends WITNESS_MSGS AM messages
#    to the witness on its other endpoint: all must arrive, with no error
#    on either side of that endpoint. The survivor must exit cleanly,
#    nothing may hang (kill_peer kills a survivor that has not exited 10 s
#    after its bound; run_watch bounds the whole program), and the
#    device's registry directory (private, under /dev/shm) must be empty.
#    What the C original (UCX 1.13.1) does, measured with this program
#    (UD_TIMEOUT=2s):
#     - a surviving sender, without any check: its unacknowledged packets
#       time out: error handler, -80, once, ~2.6 s after the kill;
#     - a surviving receiver with uct_ep_check every 10 ms: the check's
#       packet stays unacknowledged and times out the same way;
#     - a surviving receiver without checks has nothing outstanding and
#       never notices (a clean exit after the bound); the witness still
#       gets its messages.
#    Mixed runs are not possible with this program (its three processes
#    are forks of one, so they share one libuct): the mixed cases are the
#    ucx_perftest ones below.
# 2. ucx_perftest am_bw (no error handler) with its server SIGKILLed 3 s
#    into the run: the original's client aborts ("unhandled timeout
#    error", a fatal error); ours must not crash: it logs the failure and
#    fails every later operation of the endpoint with
#    UCS_ERR_ENDPOINT_TIMEOUT (the deliberate difference, as in kill-rc.sh).
#    ucx_perftest's am_bw sender then either sends again and exits with
#    that error, or (its usual place) waits for the receiver's credit
#    messages, calling only progress, and never learns of it: there ours
#    must have logged the timeout within KILL_BOUND seconds and still stop
#    on SIGTERM (it is the program's own wait, not a hang of the library).
#    The registry directory must be empty afterwards. Run LIBDIR both
#    sides, then mixed both ways (C server killed under a LIBDIR client,
#    LIBDIR server killed under a C client). When LIBDIR is the original
#    itself the LIBDIR cases are judged as the original's.
# LIBDIR without ud_verbs on the device: every LIBDIR case FAILs (ud_verbs
# is required), the original's still run.
# Tiers: quick (default) runs four kill_peer cases and two perftest rows;
# UCT_RS_TIER=full all of them. Knobs: UD_TIMEOUT (2s), KILL_TIMEOUT (10,
# kill_peer's bound in seconds), KILL_BOUND (20), WITNESS_MSGS (200).
# Usage: tests/kill-ud.sh LIBDIR
here=$(cd "$(dirname "$0")" && pwd)
top=$(dirname "$here")
. "$here/lib/kill.sh"
. "$here/lib/softrdma.sh"

resolve_libdir "$@"
if ! ref_has_verbs; then
    skip_suite "the UCX $UCX_RELEASE reference has no verbs transports (A/B needs an original with them)"
fi
UD_TIMEOUT=${UD_TIMEOUT:-2s}
KILL_TIMEOUT=${KILL_TIMEOUT:-10}
KILL_BOUND=${KILL_BOUND:-20}
WITNESS_MSGS=${WITNESS_MSGS:-200}
make_workdir
softrdma_setup
OURS=$UCT_LIBDIR
PERFTEST=$(ucx_tool ucx_perftest)
[ -x "$PERFTEST" ] || abort "ucx_perftest" "not installed (apt-get install ucx-utils)"
same_as_orig=
testing_original && same_as_orig=1

lib_has_ud_verbs() {
    "$SR/run.sh" env $(lib_env "$1") "$(ucx_tool ucx_info)" -d > "$T_WORK/has-ud.txt" 2>&1
    grep -q '^#      Transport: ud_verbs$' "$T_WORK/has-ud.txt"
}
lib_has_ud_verbs "" || abort "the original lists ud_verbs on softrdma0:1" "$(tail -3 "$T_WORK/has-ud.txt")"
ours_ud=1
if ! lib_has_ud_verbs "$OURS"; then
    ours_ud=
    fail "LIBDIR lists ud_verbs on softrdma0:1" "no ud_verbs in its ucx_info -d: every LIBDIR case fails"
fi
kill_peer_build "$top/c-tests/kill_peer.c"
softrdma_shm_dir
UDENV=UCX_UD_VERBS_TIMEOUT=$UD_TIMEOUT
KILL_ENV=("$UDENV")

# ---- 1. kill_peer
# op  victim  check  expect  tier
#   expect: -80 (the error handler with that status) or "none" (nothing
#   outstanding: not noticed within the bound, a clean exit)
cases() {
    cat <<'CASES'
short  receiver  none   -80   quick
bcopy  receiver  none   -80   full
short  receiver  check  -80   full
bcopy  receiver  check  -80   quick
short  sender    check  -80   full
bcopy  sender    check  -80   quick
bcopy  sender    none   none  quick
CASES
}

# kp_run LIBDIR NAME OP VICTIM CHECK: runs kill_peer, sets $why ("" = as
# expected: $want) and $summary
kp_run() {
    local lib=$1 name=$2 op=$3 victim=$4 check=$5 T=$KILL_TIMEOUT out=$KP_OUT
    [ "$want" = none ] && T=4
    kill_peer_run $((T + 60)) "$SR/run.sh" env $(lib_env "$lib") "$UDENV" \
        "$T_WORK/kill_peer" -t ud_verbs -d softrdma0:1 -m "$op" -v "$victim" -c "$check" \
        -T "$T" -W "$WITNESS_MSGS"
    local wline werr
    wline=$(grep -m1 '^witness rx=' "$out")
    w_ok=$(sed -n 's/.* ok=\([01]\) .*/\1/p' <<<"$wline")
    werr=$(sed -n 's/.* err_calls=\([0-9]*\) handler_wep_calls=\([0-9]*\).*/\1:\2/p' <<<"$wline")
    why=
    if kill_peer_ended_badly; then
        :
    elif [ "$w_ok" != 1 ]; then
        why="the witness did not get its messages (${wline:-no witness report})"
    elif [ "$werr" != 0:0 ]; then
        why="an error on the endpoint to the witness (err_calls:handler_wep_calls $werr)"
    elif grep -qE 'Segmentation|Caught signal|Assertion|FATAL|ucs_fatal' "$out"; then
        why="$(grep -m1 -E 'Segmentation|Caught signal|Assertion|FATAL|ucs_fatal' "$out")"
    elif [ "$want" = none ]; then
        if [ "$result" = not-detected ] && [ "$survivor" = "exit 1" ]; then
            why=
        elif [ "$result" = detected ]; then
            why="noticed (via $via, status $status): the original has nothing outstanding here"
        else
            why="RESULT $result, survivor ${survivor:-?}"
        fi
    else
        kill_peer_judge "$want" 1:1 once
    fi
    if [ "$want" = none ]; then
        summary="not noticed within ${T}s (nothing outstanding), clean exit; witness got $WITNESS_MSGS"
    else
        summary="$(kill_peer_handled); witness got $WITNESS_MSGS"
    fi
    [ -n "$why" ] && sed 's/^/      /' "$out" | grep -v 'Invalid\|Failed to' | tail -15
}

while read -r op victim check want tier; do
    [ "$tier" = quick ] || full_tier || continue
    name="ud_verbs $op, kill the $victim, $check"
    kp_run "" "$name" "$op" "$victim" "$check"
    if [ -n "$why" ]; then
        fail "original: $name" "$why"
        orig_ok=
    else
        pass "original: $name: $summary"
        orig_ok=1
    fi
    if [ -z "$ours_ud" ]; then
        fail "LIBDIR: $name" "no ud_verbs"
        continue
    fi
    kp_run "$OURS" "$name" "$op" "$victim" "$check"
    if [ -n "$why" ] && [ -n "$orig_ok" ]; then
        fail "LIBDIR: $name" "$why (the original passes)"
    elif [ -n "$why" ]; then
        echo "# LIBDIR: $name: $why (the original fails too)"
    else
        pass "LIBDIR: $name: $summary"
    fi
done < <(cases)
softrdma_registry_empty "kill_peer: registry directory empty afterwards" ||
    rm -rf "${SOFTRDMA_SHM_DIR:?}"/*

# ---- 2. the server killed under a running ucx_perftest client
# kill_row SRV_LIB CLI_LIB PERFTEST-ARGS...: sets $how (exited/aborted/
# hang/...), $rc, $t_det (ms from the kill to the client's end), $errl
kill_row() {
    local srv=$1 cli=$2 port
    shift 2
    port=$("$SOFTRDMA_BUILD/freeport")
    kill_perftest_server "$srv" "$cli" "$PERFTEST" -p "$port" -x ud_verbs -d softrdma0:1 -n 1000000000 "$@"
    t_det=
    # a LIBDIR client logs the timeout, then exits with the error or waits
    # for credits: once the line shows, 2 s to exit by itself
    kill_client_wait 'ud_verbs: ep .*did not acknowledge'
    if [ -n "$t_det" ]; then
        for _ in $(seq 20); do kill -0 "$KS_CPID" 2>/dev/null || break; sleep 0.1; done
    fi
    if kill_client_stop; then
        [ "$how" = stopped ] && how=waits
    else
        t_det=$(( ($(date +%s%N) - KS_T0) / 1000000 ))
        wait "$KS_CPID"; rc=$?
        if [ "$rc" -ge 128 ] || grep -qE 'Caught signal|Segmentation|Assertion' "$T_WORK/kill-cli.out"; then
            how=aborted
        elif [ "$rc" = 0 ]; then
            how=success
        else
            how=error
        fi
    fi
    errl=$(grep -m1 -iE 'timeout|fatal|error' "$T_WORK/kill-cli.out" | sed 's/^\[[^]]*\] *\[[^]]*\] *//' | tr -s ' ' | cut -c1-120)
}
pt_rows() {
    echo "am_bw short 8|quick|-t am_bw -s 8"
    echo "am_bw bcopy 1024|quick|-t am_bw -s 1024 -D bcopy"
    echo "am_bw zcopy 4000|full|-t am_bw -s 4000 -D zcopy"
}
# judge_ours NAME: a LIBDIR client: exits by itself, with an error, no crash
judge_ours() {
    local name=$1
    if [ -n "$same_as_orig" ] && [ "$how" = aborted ]; then
        pass "$name: the client aborted ${t_det} ms after the kill, as the original (LIBDIR is the original) | $errl"
    elif [ "$how" = error ]; then
        pass "$name: the client exited with an error (rc=$rc) ${t_det} ms after the kill, no crash | $errl"
    elif [ "$how" = waits ] && grep -q 'ud_verbs: ep .*did not acknowledge' "$T_WORK/kill-cli.out"; then
        pass "$name: the timeout was reported (no error handler, no abort); ucx_perftest waits for credits, stopped by SIGTERM | $errl"
    else
        sed 's/^/      /' "$T_WORK/kill-cli.out" | tail -5
        fail "$name" "client: $how${rc:+ (rc=$rc)}, ours must exit by itself with an error, no crash"
    fi
}
while IFS='|' read -r row tier args; do
    [ "$tier" = quick ] || full_tier || continue
    # shellcheck disable=SC2086
    kill_row "" "" $args
    if [ "$how" = aborted ] || [ "$how" = error ]; then
        pass "perftest $row, original both sides: the client ${how} (rc=$rc) ${t_det} ms after the kill | $errl"
    else
        fail "perftest $row, original both sides" "client: $how"
    fi
    if [ -z "$ours_ud" ]; then
        fail "perftest $row, LIBDIR" "no ud_verbs"
        continue
    fi
    # shellcheck disable=SC2086
    kill_row "$OURS" "$OURS" $args
    judge_ours "perftest $row, LIBDIR both sides"
    # shellcheck disable=SC2086
    kill_row "" "$OURS" $args
    judge_ours "perftest $row, C server killed, LIBDIR client"
    # shellcheck disable=SC2086
    kill_row "$OURS" "" $args
    if [ "$how" = aborted ] || [ "$how" = error ]; then
        pass "perftest $row, LIBDIR server killed, C client: the client ${how} (rc=$rc) ${t_det} ms after the kill | $errl"
    else
        fail "perftest $row, LIBDIR server killed, C client" "client: $how"
    fi
done < <(pt_rows)
sleep 0.5
softrdma_registry_empty "perftest: registry directory empty afterwards"
finish
