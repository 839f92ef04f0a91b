#!/usr/bin/env bash
# Attack suite: hostile peers against a real UCT server process over
# 127.0.0.1.  c-tests/attack_server.c opens a tcp iface on lo, registers a
# region with the tcp md (unregistered canaries before it, after it, far
# away and on the heap), listens with the tcp connection manager (sockcm),
# and reports on stdin commands: canaries, the region, handler counters,
# RSS, open fds.  tests/attack/attack.py (python3, raw sockets) runs the
# cases: PUT_REQ before the handshake / into canaries / straddling / with an
# overflowing length / shorter than its header, unknown AM ids, AM before
# the handshake, a second connection request, CM events out of place,
# oversized frame lengths, wrong magic, truncated frames, connect-and-drop
# floods, half-open connections, 200 idle connections (RSS per connection),
# fd exhaustion under `ulimit -n 64`, and for the sockcm listener: header
# length over the maximum, truncated header/data, data after the request, a
# second request/notify, floods, half-open.  The server also opens a posix
# iface; the mm-* cases write elements into its FIFO (mapped through
# /proc/PID/fd, tests/attack/fifo.py) whose length field claims more than
# the element or a receive descriptor holds: dropped with an error line, and
# the posix iface then serves a python writer and a real UCT posix sender.
# After each case: the process is
# alive, legitimate peers (a python tcp peer, a python sockcm client, a real
# UCT client process) are served, nothing outside the region was written,
# fds and RSS return to their values before the case.  A crash or hang is
# recorded and the server restarted.  One PASS/FAIL line per case.
#
# UCX_TCP_HANDSHAKE_TIMEOUT / UCX_TCP_CM_HANDSHAKE_TIMEOUT are set to 1s
# (ATTACK_HS_TIMEOUT) so stalled peers are closed quickly by a library that
# has them (one without them warns about unused variables).
#
# UCT_RS_TIER=full: the full tier (every AM id 36..255, 2000-connection floods,
# 200 half-open connections).  ATTACK_MARKDOWN=FILE writes the table as
# markdown, ATTACK_TSV=FILE the rows for tests/attack/ab_table.py (the
# README table).  ATTACK_LOGDIR=DIR keeps the server's log lines.
# ATTACK_ONLY=case,case runs some cases only.
# Usage: tests/attack.sh [LIBDIR]   (or UCT_LIBDIR; empty = system library)
here=$(cd "$(dirname "$0")" && pwd)
top=$(dirname "$here")
. "$here/lib/common.sh"

resolve_libdir "$@"
make_workdir
command -v python3 >/dev/null || abort "python3" "not installed"
if build_c "$T_WORK/attack_server" "$top/c-tests/attack_server.c" -lpthread 2>"$T_WORK/cc.log"; then
    pass "build attack_server"
else
    cat "$T_WORK/cc.log"
    abort "build attack_server"
fi

args=("$T_WORK/attack_server" --tsv "${ATTACK_TSV:-$T_WORK/rows.tsv}" --logdir "${ATTACK_LOGDIR:-$T_WORK/logs}")
full_tier && args+=(--full)
[ -n "${ATTACK_MARKDOWN:-}" ] && args+=(--markdown "$ATTACK_MARKDOWN")
[ -n "${ATTACK_ONLY:-}" ] && args+=(--only "$ATTACK_ONLY")
# The whole run is bounded too (each case is bounded inside).
timeout -k 10 "${ATTACK_TIMEOUT:-1800}" "${RUN[@]}" python3 -B "$here/attack/attack.py" "${args[@]}"
rc=$?
[ -s "${ATTACK_TSV:-$T_WORK/rows.tsv}" ] || abort "attack.py" "no result rows (exit $rc)"
while IFS=$'\t' read -r name alive served write proto fds rss verdict; do
    if [ "$verdict" = PASS ]; then
        pass "attack $name"
    else
        fail "attack $name" "alive=$alive served=$served write=$write proto=$proto fds=$fds rss=$rss"
    fi
done <"${ATTACK_TSV:-$T_WORK/rows.tsv}"
[ "$rc" -eq 0 ] || [ "$T_FAILED" -gt 0 ] || fail "attack.py" "exit $rc"
finish
