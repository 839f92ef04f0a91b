# shellcheck shell=bash
# Helpers for the suites that run libucp over the verbs transports on the
# soft RDMA device (tests/ucp-verbs-*.sh).  Sourcing this file brings
# ab-common.sh (common.sh, two-proc.sh, shm-leftovers.sh) and softrdma.sh.
#
#   ucpv_begin ARGS...      ab_begin, the device built into the work
#                           directory, a private registry directory, and the
#                           check that both libraries list ud_verbs (and
#                           rc_verbs) on softrdma0: the original lacking it
#                           skips the suite, LIBDIR lacking it is one FAIL
#                           and the end of the suite (nothing else can pass)
#   UCPV_SETS               the three TLS sets of the suites: rc_verbs and
#                           ud_verbs; ud_verbs alone; both with posix and
#                           self (shared memory beside RDMA, as MPI runs)
#   full_tier (common.sh)   true under UCT_RS_TIER=full; the quick tier
#                           (default, CI) runs a subset where a suite says
#   ucpv_side LIB TLS ST CMD...
#                           one process: LIB's libuct ("" = the original),
#                           UCX_TLS=TLS (plus $UCPV_ENV, a list of VAR=VALUE),
#                           under run_watch ($PAIR_TIMEOUT, status to ST),
#                           with the device visible (tests/softrdma/run.sh)
#   ucpv_lanes FILE...      the ep_cfg lines of an info log (UCX_LOG_LEVEL=
#                           info), without time and pid, sorted
#   ucpv_string_in SIZE FILE [END], ucpv_string_count SIZE FILE END
#                           the examples' string (test_string) in FILE
#   ucpv_hello_judge SIZE REGEX
#                           after run_pair of the ucp_hello_world example:
#                           R_SEC, R_BAD (a crash or hang), then R_OK, or
#                           R_WHY (an exit status other than 0, with the
#                           first output line matching the grep REGEX; or
#                           the client did not print the string of SIZE)
#   ucpv_prog_pid PID NAME, ucpv_stop PID NAME [SIG]
#                           the program below run_watch/run.sh; stop it
#   ucpv_end                the registry empty, nothing left in /dev/shm; finish
#   ucpv_record LINE        appends LINE to $UCPV_RECORD when that is set (a
#                           sanity run, no LIBDIR, records the original's
#                           result per case there: UCPV_RECORD=FILE;
#                           tests/softrdma/expected/ucp-verbs.c-original.txt
#                           holds such results)
#
# PAIR_TIMEOUT defaults to 45 s here: every case is short, a hang is found
# sooner.

PAIR_TIMEOUT=${PAIR_TIMEOUT:-45}
_ucpv_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$_ucpv_dir/ab-common.sh"
. "$_ucpv_dir/softrdma.sh"

UCPV_SETS="rc_verbs,ud_verbs ud_verbs rc_verbs,ud_verbs,posix,self"
UCPV_ENV=()
UCPV_RECORD=${UCPV_RECORD:-}
# not a UCX variable: keep it out of the programs' environment
export -n UCPV_RECORD 2>/dev/null

# _ucpv_has_tls LIB: true when LIB's libuct lists rc_verbs and ud_verbs on
# softrdma0:1; the transports it does list go to $T_WORK/tls.LABEL
_ucpv_has_tls() {
    local lib=$1 label
    label=$(lib_label "$lib")
    "$SR/run.sh" env $(lib_env "$lib") "$(ucx_tool ucx_info)" -d >"$T_WORK/ucx_info-d.$label" 2>&1
    sed -n 's/^#      Transport: //p' "$T_WORK/ucx_info-d.$label" | sort -u | tr '\n' ' ' >"$T_WORK/tls.$label"
    grep -q '^#      Transport: ud_verbs$' "$T_WORK/ucx_info-d.$label" &&
        grep -q '^#      Transport: rc_verbs$' "$T_WORK/ucx_info-d.$label"
}

ucpv_begin() {
    ab_begin "$@"
    ref_has_verbs || skip_suite "UCX $UCX_ABI: the reference has no verbs transports"
    softrdma_setup
    softrdma_shm_dir
    OURS=$UCT_LIBDIR
    if ! _ucpv_has_tls ""; then
        skip_suite "the original lists no rc_verbs/ud_verbs on the soft device: $(cat "$T_WORK/tls.system")"
    fi
    if [ -n "$OURS" ]; then
        if _ucpv_has_tls "$OURS"; then
            pass "LIBDIR lists rc_verbs and ud_verbs on softrdma0"
        else
            abort "LIBDIR lists rc_verbs and ud_verbs on softrdma0" \
                "it lists: $(cat "$T_WORK/tls.ours")(the original: $(cat "$T_WORK/tls.system"))"
        fi
    fi
    full_tier && echo "# full tier (UCT_RS_TIER=full)"
    return 0
}

ucpv_side() {
    local lib=$1 tls=$2 st=$3
    shift 3
    env $(lib_env "$lib") UCX_TLS="$tls" "${UCPV_ENV[@]}" \
        "$RUN_WATCH" "$PAIR_TIMEOUT" "$st" "$SR/run.sh" "$@"
}

ucpv_lanes() {
    grep -a -h 'ep_cfg\[' "$@" | sed -E 's/^.*(ep_cfg\[[0-9]+\]:)/\1/' | sort -u
}

ucpv_record() {
    [ -n "$UCPV_RECORD" ] && printf '%s\n' "$1" >>"$UCPV_RECORD"
    return 0
}

# ucpv_system_only NAME OK WHY DETAIL BAD: the verdict of a sanity run (no
# LIBDIR), recorded: the original passing, or failing with an exit status
# (a refusal: recorded, not required), is a pass; its crash or hang (BAD=1)
# a failure
ucpv_system_only() {
    local name=$1 ok=$2 why=$3 detail=$4 bad=${5:-0}
    if [ "$ok" = 1 ]; then
        pass "$name (system${detail:+, $detail})"
        ucpv_record "PASS $name${detail:+ | $detail}"
    elif [ "$bad" = 1 ]; then
        fail "$name (system)" "crashed or hung: $why"
        ucpv_record "HANG $name | $why"
    else
        pass "$name (system fails cleanly: $why)"
        ucpv_record "FAIL $name | $why"
    fi
}

# ucpv_prog_pid PID NAME: the process called NAME below PID (run_watch,
# run.sh, unshare, the program): signals meant for the program go to it, so
# that run.sh outlives it and tidies the registry (run_watch, stopped, would
# SIGKILL the whole group)
_ucpv_descendants() {
    local c
    for c in $(cat /proc/"$1"/task/*/children 2>/dev/null); do
        echo "$c"
        _ucpv_descendants "$c"
    done
}
ucpv_prog_pid() {
    local c comm=${2:0:15}
    for c in $(_ucpv_descendants "$1"); do
        [ "$(cat /proc/"$c"/comm 2>/dev/null)" = "$comm" ] && { echo "$c"; return; }
    done
}

# ucpv_stop PID NAME [SIG]: SIG (TERM) to the program NAME below PID (to PID
# when it is not found), then wait for PID, 10 s at most (then SIGKILL)
ucpv_stop() {
    local pid=$1 prog sig=${3:-TERM}
    prog=$(ucpv_prog_pid "$pid" "$2")
    kill -"$sig" "${prog:-$pid}" 2>/dev/null
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
}

# ucpv_cs_server_end: after a ucp_client_server client
# (tests/lib/client-server.sh, its server CS_SPID), the server must still be
# serving: it is stopped; else SRV_GONE says how it ended and with what
# line (R_BAD=1 when it crashed)
ucpv_cs_server_end() {
    cs_wait_next_client
    SRV_GONE=
    if kill -0 "$CS_SPID" 2>/dev/null; then
        ucpv_stop "$CS_SPID" ucp_client_server
    else
        wait "$CS_SPID" 2>/dev/null
        SRV_GONE="the server ended: $(status_of "$T_WORK/srv.st")"
        bad_end "$(status_of "$T_WORK/srv.st")" && R_BAD=1
        SRV_GONE="$SRV_GONE: $(grep -a -v ' DIAG ' "$T_WORK/srv.out" | grep -a -m 1 'Assertion\|ERROR\|signal\|failed\|reset')"
    fi
    T_CHILDREN=
}

# ucpv_cs_final: cs_final (tests/lib/client-server.sh) of the verbs
# suites. Final: a pass, a crash, a client that failed, a server that
# ended. Tried again: a lost last message, and the example's own race: its
# client force-closes right after its last send completes locally (a
# stream message is complete once sent), and a server still receiving then
# ends on "Connection reset by remote peer" (the original does too, in
# about a third of the runs on the soft device)
ucpv_cs_final() {
    [ "$R_OK" = 1 ] && return 0
    [ "$R_BAD" = 1 ] && return 0
    grep -a -q 'Assertion\|signal' "$T_WORK/srv.out" "$T_WORK/cli.out" && return 0
    case $R_WHY in
        "the server ended: exit 255: "*"Connection reset by remote peer"*) return 1 ;;
        "client exit "* | "the server ended"*) return 0 ;;
    esac
    return 1
}

# ucpv_end: the registry directory is empty (then removed) and no /dev/shm
# file or SysV segment is left over (removed unless SHM_KEEP_LEFTOVERS=1);
# the summary
ucpv_end() {
    softrdma_registry_check
    # (this suite's own registry directory is gone)
    shm_check "no /dev/shm file or SysV segment left over" "$T_WORK/shm.before" dirs
    finish
}

# ucpv_string_in SIZE FILE [END]: true when a line of FILE is exactly the
# examples' string for SIZE ('A' + i % 26, SIZE - 1 letters) followed by END
# (test_string, written once per size and linear: a megabyte is common here)
ucpv_string_in() {
    local size=$1 file=$2 end=${3:-} want
    want=$T_WORK/want.$size${end:+.e}
    [ -f "$want" ] || awk -v n="$size" -v end="$end" \
        'BEGIN { for (i = 0; i < n - 1; i++) printf "%c", 65 + i % 26; print end }' >"$want"
    awk -v n=$((size - 1 + ${#end})) 'length($0) == n' "$file" | grep -a -qxFf "$want"
}

# ucpv_string_count SIZE FILE END: how many lines of FILE are that string
ucpv_string_count() {
    local size=$1 file=$2 end=${3:-}
    ucpv_string_in "$size" /dev/null "$end"
    awk -v n=$((size - 1 + ${#end})) 'length($0) == n' "$file" | grep -a -cxFf "$T_WORK/want.$size${end:+.e}"
}

ucpv_hello_judge() {
    local size=$1 re=$2
    R_SEC=$PAIR_SEC
    { bad_end "$PAIR_SRV" || bad_end "$PAIR_CLI"; } && R_BAD=1
    if [ "$PAIR_SRV" != "exit 0" ] || [ "$PAIR_CLI" != "exit 0" ]; then
        R_WHY="server $PAIR_SRV, client $PAIR_CLI: $(grep -a -h -m 1 "$re" "$T_WORK/srv.out" "$T_WORK/cli.out" | head -n 1)"
    elif ! ucpv_string_in "$size" "$T_WORK/cli.out"; then
        R_WHY="the client did not print the $((size - 1)) letters the server sent"
    else
        R_OK=1
    fi
}
