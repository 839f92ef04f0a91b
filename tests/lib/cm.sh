# The connection-manager suites (cm-tcp.sh, cm-rdmacm.sh) run
# c-tests/cm_client_server.c ($CMCS, built by the suite) as a server and a
# client process. Each side starts through the suite's own
#   cm_side LIB STATUSFILE PROGRAM ARGS...
# (its library, its CM's environment, a watchdog writing STATUSFILE).
#
#   cm_start_server NAME SRVLIB MODE
#                   the server in the background (CM_SPID), its port once it
#                   listens (CM_PORT); else a FAIL of NAME and false
#   cm_run_pair NAME SRVLIB CLILIB MODE
#                   a server and a client; PASS when both exit 0
#
# Both sides get CMCS_SYNC (the server's "checked" file, see the program).
# Outputs: $T_WORK/srv.out, cli.out; end statuses srv.st, cli.st.

. "$(dirname "${BASH_SOURCE[0]}")/common.sh"

cm_start_server() {
    local name=$1 slib=$2 mode=$3 pf=$T_WORK/port.$$ i
    rm -f "$pf" "$T_WORK/srv.st" "$T_WORK/cli.st" "$T_WORK/sync.$$"
    CMCS_SYNC=$T_WORK/sync.$$ cm_side "$slib" "$T_WORK/srv.st" "$CMCS" server "$pf" "$mode" >"$T_WORK/srv.out" 2>&1 &
    CM_SPID=$!
    T_CHILDREN="$CM_SPID"
    for i in $(seq 150); do
        [ -s "$pf" ] && break
        sleep 0.1
    done
    if [ ! -s "$pf" ]; then
        kill "$CM_SPID" 2>/dev/null
        wait "$CM_SPID"
        T_CHILDREN=
        fail "$name" "server did not listen ($(cat "$T_WORK/srv.st" 2>/dev/null)): $(tail -n 3 "$T_WORK/srv.out" | tr '\n' ' ')"
        return 1
    fi
    CM_PORT=$(cat "$pf")
}

cm_run_pair() {
    local name=$1 slib=$2 clib=$3 mode=$4 srv_end cli_end so=$T_WORK/srv.out co=$T_WORK/cli.out
    cm_start_server "$name" "$slib" "$mode" || return
    CMCS_SYNC=$T_WORK/sync.$$ cm_side "$clib" "$T_WORK/cli.st" "$CMCS" client "$CM_PORT" "$mode" >"$co" 2>&1
    wait "$CM_SPID"
    T_CHILDREN=
    srv_end=$(cat "$T_WORK/srv.st" 2>/dev/null) cli_end=$(cat "$T_WORK/cli.st" 2>/dev/null)
    if [ "$srv_end" = "exit 0" ] && [ "$cli_end" = "exit 0" ]; then
        pass "$name"
    else
        fail "$name" "server $srv_end, client $cli_end: $(grep -h 'FAIL\|SKIP\|ERROR' "$so" "$co" | head -n 3 | tr '\n' ' ')"
    fi
}
