# shellcheck shell=bash
# Helpers for the suites that SIGKILL one of two UCT processes mid-stream
# with c-tests/kill_peer.c (tests/kill-*.sh) and judge how the survivor
# took it.  Sourcing this file brings common.sh; the functions want the work
# directory (make_workdir).
#
#   kill_peer_build SRC     run_watch, and kill_peer compiled from SRC into
#                           $T_WORK/kill_peer (a pass "build kill_peer", or an
#                           abort); sets KP_OUT and KP_ST (output, status file)
#   kill_peer_run BOUND CMD...
#                           CMD (which ends in "$T_WORK/kill_peer" and its
#                           options) under run_watch for BOUND seconds,
#                           output to $KP_OUT; then kill_peer_report reads it
#                           (common.sh: ended, result, via, status, ...)
#   kill_peer_ended_badly   true (and why set) when kill_peer was killed, hung
#                           or printed no RESULT line
#   kill_peer_judge WANT CAPS [once]
#                           sets why ("" = as the original) for a survivor
#                           that must notice through its error handler: a
#                           detection, a clean exit, the handler with status
#                           WANT on our endpoint (with "once": called once),
#                           ERRHANDLE_PEER_FAILURE:EP_CHECK equal to CAPS
#   kill_peer_handled       the pass text of such a detection: handler,
#                           status, calls and the time after the kill
#
# The server of a running ucx_perftest killed under its client (on the soft
# RDMA device: after softrdma_setup):
#   kill_perftest_server SRV_LIB CLI_LIB CMD...
#                           CMD (ucx_perftest and its options) as a server
#                           with SRV_LIB's libuct and as its client (of
#                           127.0.0.1) with CLI_LIB's, both through run.sh
#                           with $KILL_ENV (VAR=VALUE words) in their
#                           environment; the server is SIGKILLed 3 s into the
#                           run.  Sets KS_T0 (the kill, in ns) and KS_CPID (the
#                           client, still to be waited for); the client's
#                           output is $T_WORK/kill-cli.out
#   kill_client_wait [REGEX]
#                           until the client ends, or REGEX shows in its
#                           output (then t_det: ms after the kill), at most
#                           KILL_BOUND seconds after the kill
#   kill_client_stop        true when the client was still running: it got
#                           SIGTERM and 5 s, then how=stopped (rc: its exit
#                           status), else SIGKILL and how=hang
#
# Typical use:
#   kill_peer_build "$top/c-tests/kill_peer.c"
#   kill_peer_run $((T + 60)) "${RUN[@]}" "$T_WORK/kill_peer" -t tcp ...
#   kill_peer_ended_badly || kill_peer_judge -80 1:1
#   if [ -n "$why" ]; then fail "$name" "$why"; else pass "$name: $(kill_peer_handled)"; fi

. "$(dirname "${BASH_SOURCE[0]}")/common.sh"

kill_peer_build() {
    build_run_watch
    KP_OUT=$T_WORK/kill.out
    KP_ST=$T_WORK/kill.st
    need_c "$T_WORK/kill_peer" "$1"
}

kill_peer_run() {
    local bound=$1
    shift
    rm -f "$KP_ST"
    "$RUN_WATCH" "$bound" "$KP_ST" "$@" >"$KP_OUT" 2>&1 </dev/null
    kill_peer_report "$KP_OUT" "$KP_ST"
}

kill_peer_ended_badly() {
    if ended_badly "$KP_ST" || [ -z "$result" ]; then
        why="kill_peer $ended, RESULT ${result:-none}"
        return 0
    fi
    return 1
}

kill_peer_judge() {
    local want=$1 caps=$2 once=${3:-}
    why=
    if [ "$result" != detected ]; then
        why="RESULT $result (survivor: ${survivor:-?})"
    elif [ "$survivor" != "exit 0" ]; then
        why="survivor $survivor"
    elif [ "$via" != err_handler ]; then
        why="noticed via $via (status $status), the original's error handler fires"
    elif [ "$status" != "$want" ]; then
        why="error handler status $status, the original gives $want"
    elif [ "$ep_ok" != 1 ]; then
        why="error handler got another endpoint than ours"
    elif [ -n "$once" ] && [ "$calls" != 1 ]; then
        why="error handler ran $calls times, the original once"
    elif [ "$got_caps" != "$caps" ]; then
        why="capability flags errhandle_peer_failure:ep_check = $got_caps, the original has $caps"
    fi
}

kill_peer_handled() {
    echo "error handler, status $status, $calls call(s), ${ms} ms after the kill"
}

KILL_ENV=()

kill_perftest_server() {
    local srv=$1 cli=$2 spid
    shift 2
    rm -f "$T_WORK/kill-srv.pid"
    "$SR/run.sh" env $(lib_env "$srv") "${KILL_ENV[@]}" sh -c 'echo $$ > "$0"; exec "$@"' \
        "$T_WORK/kill-srv.pid" "$@" > "$T_WORK/kill-srv.out" 2>&1 &
    spid=$!
    for _ in $(seq 100); do [ -s "$T_WORK/kill-srv.pid" ] && break; sleep 0.1; done
    sleep 1
    "$SR/run.sh" env $(lib_env "$cli") "${KILL_ENV[@]}" "$@" 127.0.0.1 > "$T_WORK/kill-cli.out" 2>&1 &
    KS_CPID=$!
    sleep 3
    kill -9 "$(cat "$T_WORK/kill-srv.pid")" 2>/dev/null
    KS_T0=$(date +%s%N)
    wait $spid 2>/dev/null
}

kill_client_wait() {
    local re=${1:-}
    while [ $(( ($(date +%s%N) - KS_T0) / 1000000000 )) -lt "$KILL_BOUND" ]; do
        if [ -n "$re" ] && grep -qE "$re" "$T_WORK/kill-cli.out"; then
            t_det=$(( ($(date +%s%N) - KS_T0) / 1000000 ))
            break
        fi
        kill -0 "$KS_CPID" 2>/dev/null || break
        sleep 0.1
    done
}

kill_client_stop() {
    kill -0 "$KS_CPID" 2>/dev/null || return 1
    kill -TERM "$KS_CPID"
    for _ in $(seq 50); do kill -0 "$KS_CPID" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$KS_CPID" 2>/dev/null; then
        kill -KILL "$KS_CPID"
        wait "$KS_CPID" 2>/dev/null
        how=hang
    else
        wait "$KS_CPID"
        rc=$?
        how=stopped
    fi
    return 0
}
