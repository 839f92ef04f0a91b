#!/bin/bash
# Peer death under ucx_perftest (rc_verbs client/server on the soft device):
# the server is SIGKILLed 3 s into the run.
#   put_bw zcopy 4 KiB: the client keeps posting RDMA WRITEs, so its next
#     one completes with "transport retry counter exceeded" and the C
#     original aborts: PASS when the client exits by itself, with an error,
#     within SOFTRDMA_KILL_TIMEOUT seconds (60).
#   am_bw bcopy 4 KiB: ucx_perftest's own flow control makes the client
#     wait for the server's credits with no work request outstanding; on an
#     RC device nothing can fail then (UCT has no keepalive), so the client
#     either saw an error (a SEND was waiting for a receive: EXIT) or still
#     waits when the bound expires (WAITS, stopped by the timeout). Both are
#     the device behaving as IB does; a FAIL is a hang past the bound.
# Then the registry directory (private, under /dev/shm) must be empty: the
# client reaped the killed server and, as last user, removed the segment. Exit status = number of FAILs.
#   tests/softrdma/kill-test.sh [SERVER_LIBDIR [CLIENT_LIBDIR]]
here=$(cd "$(dirname "$0")" && pwd)
out=${SOFTRDMA_BUILD:-$here/build}
dev=${SOFTRDMA_DEV:-softrdma0:1}
tmo=${SOFTRDMA_KILL_TIMEOUT:-60}
[ -x "$out/freeport" ] || "$here/build.sh" >/dev/null || exit 100
# shellcheck source=registry-dir.sh
. "$here/registry-dir.sh"
tmp=$(mktemp -d -t softrdma-kill.XXXXXX)
trap '[ -n "${SOFTRDMA_KEEP:-}" ] || rm -rf "$tmp"; [ -z "$own_shm" ] || rm -rf "$SOFTRDMA_SHM_DIR"' EXIT
fails=0
libenv() {
    if [ -n "$1" ]; then echo "LD_LIBRARY_PATH=$1${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    else echo "SOFTRDMA_UNUSED="; fi
}

one() { # NAME PERFTEST-ARGS...
    local name=$1; shift
    local port; port=$("$out/freeport")
    local args=(ucx_perftest -p "$port" -x rc_verbs -d "$dev" -n 1000000000 "$@")
    rm -f "$tmp/server.pid"
    env "$(libenv "${srv_lib}")" timeout -k 5 $((tmo + 30)) "$here/run.sh" \
        sh -c 'echo $$ > "$0"; exec "$@"' "$tmp/server.pid" \
        "${args[@]}" > "$tmp/server.out" 2>&1 &
    local spid=$! i
    for i in $(seq 100); do [ -s "$tmp/server.pid" ] && break; sleep 0.1; done
    sleep 1
    local start; start=$(date +%s)
    env "$(libenv "${cli_lib}")" timeout -k 5 $((tmo + 20)) "$here/run.sh" \
        timeout -k 5 "$tmo" "${args[@]}" 127.0.0.1 > "$tmp/client.out" 2>&1 &
    local cpid=$!
    sleep 3
    kill -9 "$(cat "$tmp/server.pid")" # ucx_perftest itself (sh exec'd it)
    wait $cpid
    local crc=$?
    wait $spid
    local t=$(($(date +%s) - start))
    local err
    err=$( (grep -m1 'completion with error' "$tmp/client.out" ||
            grep -m1 -iE 'error|fatal' "$tmp/client.out") | tr -s ' ' | cut -c1-140)
    if [ $crc -eq 124 ] || [ $crc -eq 137 ]; then
        if [ "$name" = am_bw ] && [ $t -le $((tmo + 15)) ]; then
            echo "WAITS $name: client waited for the dead server's credits (no WR outstanding), stopped by the ${tmo}s bound"
        else
            echo "FAIL $name: client did not exit by itself within ${tmo}s (rc=$crc)"; fails=$((fails + 1))
        fi
    elif [ $crc -eq 0 ]; then
        echo "FAIL $name: client reported success after its server was killed"; fails=$((fails + 1))
    else
        echo "PASS $name: client exited by itself, rc=$crc, ${t}s after start (server killed at 3s) | $err"
    fi
}

srv_lib=${1:-}
cli_lib=${2:-}
one put_bw -t put_bw -s 4096 -D zcopy
one am_bw -t am_bw -s 4096 -D bcopy
left=$(ls -A "$SOFTRDMA_SHM_DIR" | tr '\n' ' ')
if [ -n "$left" ]; then
    echo "FAIL left in $SOFTRDMA_SHM_DIR: $left"; fails=$((fails + 1))
else
    echo "PASS registry removed: nothing left in $SOFTRDMA_SHM_DIR (removed now)"
fi
exit $fails
