#!/usr/bin/env bash
# Connection manager of the "rdmacm" component on the soft RDMA device with
# its user-space RDMA CM (SOFTRDMA_CM=1 tests/softrdma/run.sh): a server and
# a client process exchange private data both ways over 127.0.0.1
# (c-tests/cm_client_server.c with CMCS_COMPONENT=rdmacm: 54 bytes from
# the client, 40 from the server, each side reports softrdma0:1 as its
# device and an IB device address of the peer), then disconnect, once from
# each side; a "pack" run fills the data through pack callbacks; a rejected
# client must get UCS_ERR_REJECTED. A peer SIGKILLed before it answers the
# request (kill-pre), or once connected (kill-post: the server, ckill-post:
# the client), must be reported to the survivor (a failed connect callback,
# a disconnect callback) within 20 s, with no hang. Each mode runs the C original on both
# sides first (the device must carry it, or it proves nothing), then
# LIBDIR on both sides, then mixed both ways. Then two of LIBDIR with a
# polled async context (the CM then runs from the worker's progress).
# With an empty LIBDIR only the original runs. The quick tier (CI) runs
# the mixed pairs of srv-disc, reject and kill-post, and one polled mode;
# UCT_RS_TIER=full runs every pair of every mode.
# Usage: tests/cm-rdmacm.sh LIBDIR   (or UCT_LIBDIR)
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib/common.sh"
. "$here/lib/cm.sh"
. "$here/lib/softrdma.sh"

softrdma_begin "${1-${UCT_LIBDIR:-}}"
need_ib_lib "$UCT_LIBDIR"
softrdma_shm_dir
build_run_watch
CMCS=$T_WORK/cm_client_server
build_c "$CMCS" "$here/../c-tests/cm_client_server.c" || abort "build cm_client_server"
pass "build cm_client_server"
if ! SOFTRDMA_CM=1 "$SR/run.sh" true >"$T_WORK/cm.log" 2>&1; then
    tail -n 5 "$T_WORK/cm.log"
    skip_suite "the soft RDMA CM cannot run here (SOFTRDMA_CM=1 tests/softrdma/run.sh true failed)"
fi

OURS=$UCT_LIBDIR
SYS=

# cm_side LIB STATUSFILE CMD... (tests/lib/cm.sh): one side under the
# device with its CM
cm_side() {
    local lib=$1 st=$2
    shift 2
    env $(lib_env "$lib") SOFTRDMA_CM=1 CMCS_COMPONENT=rdmacm CMCS_DEV=softrdma0:1 CMCS_SYNC="$CMCS_SYNC" \
        CMCS_ASYNC=${CMCS_ASYNC:-thread} "$RUN_WATCH" 40 "$st" "$SR/run.sh" "$@"
}

# run_kill NAME SRVLIB CLILIB MODE VICTIM(server|client): the victim prints
# "HOLD <pid>" and is SIGKILLed; the survivor must end well.
run_kill() {
    local name=$1 slib=$2 clib=$3 mode=$4 victim=$5 port spid i pid vo so=$T_WORK/srv.out co=$T_WORK/cli.out
    local survivor_st
    cm_start_server "$name" "$slib" "$mode" || return
    spid=$CM_SPID port=$CM_PORT
    CMCS_SYNC=$T_WORK/sync.$$ cm_side "$clib" "$T_WORK/cli.st" "$CMCS" client "$port" "$mode" >"$co" 2>&1 &
    local cpid=$!
    T_CHILDREN="$spid $cpid"
    if [ "$victim" = server ]; then vo=$so; else vo=$co; fi
    pid=
    for i in $(seq 200); do
        pid=$(sed -n 's/^[a-z]*: HOLD \([0-9]*\)$/\1/p' "$vo" | head -n 1)
        [ -n "$pid" ] && break
        sleep 0.1
    done
    [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null
    wait "$spid" "$cpid"
    T_CHILDREN=
    if [ "$victim" = server ]; then survivor_st=$(cat "$T_WORK/cli.st" 2>/dev/null); else survivor_st=$(cat "$T_WORK/srv.st" 2>/dev/null); fi
    if [ -z "$pid" ]; then
        fail "$name" "the $victim never held: $(grep -h 'FAIL' "$so" "$co" | head -n 2 | tr '\n' ' ')"
    elif [ "$survivor_st" = "exit 0" ]; then
        pass "$name ($(grep -h -o 'death.*' "$so" "$co" | head -n 1))"
    else
        fail "$name" "survivor: $survivor_st: $(grep -h 'FAIL\|ERROR' "$so" "$co" | head -n 3 | tr '\n' ' ')"
    fi
}

for mode in srv-disc cli-disc pack reject; do
    cm_run_pair "rdmacm $mode srv=system cli=system" "$SYS" "$SYS" "$mode"
    [ -n "$OURS" ] || continue
    for pair in "ours ours" "ours system" "system ours"; do
        [ "$pair" = "ours ours" ] || full_tier || [ "$mode" = srv-disc ] || [ "$mode" = reject ] || continue
        set -- $pair
        if [ "$1" = ours ]; then s=$OURS; else s=$SYS; fi
        if [ "$2" = ours ]; then c=$OURS; else c=$SYS; fi
        cm_run_pair "rdmacm $mode srv=$1 cli=$2" "$s" "$c" "$mode"
    done
done
for k in "kill-pre server" "kill-post server" "ckill-post client"; do
    set -- $k
    run_kill "rdmacm $1 ($2 killed) srv=system cli=system" "$SYS" "$SYS" "$1" "$2"
    [ -n "$OURS" ] || continue
    for pair in "ours ours" "ours system" "system ours"; do
        [ "$pair" = "ours ours" ] || full_tier || [ "$k" = "kill-post server" ] || continue
        set -- $pair $k
        if [ "$1" = ours ]; then s=$OURS; else s=$SYS; fi
        if [ "$2" = ours ]; then c=$OURS; else c=$SYS; fi
        run_kill "rdmacm $3 ($4 killed) srv=$1 cli=$2" "$s" "$c" "$3" "$4"
    done
done
if [ -n "$OURS" ]; then
    modes=srv-disc
    full_tier && modes="srv-disc cli-disc"
    for mode in $modes; do
        CMCS_ASYNC=poll cm_run_pair "rdmacm $mode async=poll srv=ours cli=ours" "$OURS" "$OURS" "$mode"
    done
fi
softrdma_registry_check
finish
