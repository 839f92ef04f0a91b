# shellcheck shell=bash
# Helpers for the suites that run Debian's ucp_client_server example
# (tests/ucp-client-server.sh, tests/ucp-verbs-client-server.sh): its server
# serves clients forever, so a case starts the server, runs one client to
# its end, then stops the server once it waits for the next client; the
# server prints every message it received with the client's string.
# Sourced after ab-common.sh (common.sh, two-proc.sh).  Outputs are
# $T_WORK/srv.out and $T_WORK/cli.out; results go to R_OK, R_WHY, R_BAD
# (1: a crash or a hang) and R_GOT.
#
#   cs_build                the example built ($CS; ITERS=3 messages a
#                           case) and stdbuf checked for
#   cs_start_server PORT CMD...
#                           CMD (the server, line-buffered) in the
#                           background until PORT listens: CS_SPID set;
#                           false when it did not listen (it is stopped,
#                           R_WHY says so, R_BAD=1 when it crashed)
#   cs_wait_next_client     until the server waits for its next client (or
#                           has ended), 10 s at most
#   cs_judge CLIENT_END GOT SERVER_GONE
#                           R_OK / R_WHY / R_BAD / R_GOT from how the client
#                           ended, how many messages carried its exact string
#                           (GOT), and SERVER_GONE (non-empty: why the server
#                           is no longer serving, a failure); fewer messages
#                           received than the client printed: not passed
#   cs_tries ARGS...        run_case ARGS... (the caller's), again (CS_TRIES
#                           tries in all, 3 unless the suite sets it) when the server lost the last message (the
#                           example's client force-closes its endpoint right
#                           after its last send) unless cs_final (the
#                           caller's) says the result stands

cs_build() {
    ITERS=3
    command -v stdbuf >/dev/null || abort "stdbuf" "not installed (coreutils)"
    build_ucp_example ucp_client_server
    CS=$T_WORK/ucp_client_server
}

cs_start_server() {
    local port=$1
    shift
    "$@" >"$T_WORK/srv.out" 2>&1 </dev/null &
    CS_SPID=$!
    T_CHILDREN=$CS_SPID
    wait_listening "$CS_SPID" "$port" && return 0
    kill "$CS_SPID" 2>/dev/null
    wait "$CS_SPID"
    T_CHILDREN=
    R_WHY="server did not listen"
    grep -a -q 'Assertion\|signal' "$T_WORK/srv.out" && R_BAD=1
    return 1
}

cs_wait_next_client() {
    for _ in $(seq 100); do
        [ "$(grep -a -c 'Waiting for connection' "$T_WORK/srv.out")" -ge 2 ] && break
        kill -0 "$CS_SPID" 2>/dev/null || break
        sleep 0.1
    done
}

cs_judge() {
    local cst=$1 got=$2 gone=$3 recv sent
    R_GOT=$got
    recv=$(grep -a -c 'UCX data message was received' "$T_WORK/srv.out")
    # the iterations the client printed (the first, the last, ...); the
    # server prints the same ones
    sent=$(grep -a -c '^Client: iteration #' "$T_WORK/cli.out")
    if [ "$cst" != "exit 0" ]; then
        R_WHY="client $cst: $(grep -a -h -m 1 'Assertion\|ERROR\|failed' "$T_WORK/cli.out" | head -n 1)"
        case $cst in "exit "*) ;; *) R_BAD=1 ;; esac
    elif [ -n "$gone" ]; then
        R_WHY=$gone
    elif [ "$recv" -lt "$sent" ]; then
        R_WHY="the server received $recv of the $sent messages the client printed (the last one lost)"
    elif [ "$recv" -lt 1 ] || [ "$got" -ne "$recv" ]; then
        R_WHY="the server received $recv messages, $got of them with the client's exact string"
    else
        R_OK=1
    fi
}

cs_tries() {
    local try n=${CS_TRIES:-3}
    for try in $(seq "$n"); do
        run_case "$@"
        cs_final && return
        [ "$try" -lt "$n" ] && echo "# $2 -c $3 -s $4: attempt $try lost the last message ($R_WHY), again"
    done
}
