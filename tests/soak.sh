#!/usr/bin/env bash
# Soak: c-tests/soak.c between two processes, 1,000 endpoints (SOAK_EPS)
# over tcp (lo) and over posix shared memory, messages round-robin over the
# endpoints, each endpoint alternating AM short and AM bcopy, every message
# checked by the receiver (per-endpoint sequence numbers, a payload pattern
# per endpoint and sequence number, the right length for its id), every
# endpoint's count checked at the end.  Per side: RSS after warm-up (a tenth
# of the messages, at least 20000) vs at the end (growth at most SOAK_RSS_SLACK_KB, default
# 4096), open fds after creating the worker vs after destroying every
# endpoint, iface and md (equal); after the run no /dev/shm file or SysV
# segment left behind.  Prints the time and the rate per transport.  The RSS
# bound is this library's: on the C original (no LIBDIR, or LIBDIR holding
# it) it is reported only.  With UCX 1.16+'s 256-element FIFO the posix
# sender may grow by 32 KB more per endpoint: each endpoint maps the peer's
# FIFO, as UCX's mm does (UCX 1.18.1's sender grows ~24 MB over 1000).
#
# Quick tier (CI): SOAK_MSGS=100000 per transport.  UCT_RS_TIER=full: 10^7.
# SOAK_TLS overrides the transports ("tcp:lo posix:memory").
# Usage: tests/soak.sh [LIBDIR]   (or UCT_LIBDIR; empty = system library)
here=$(cd "$(dirname "$0")" && pwd)
top=$(dirname "$here")
. "$here/lib/common.sh"
. "$here/lib/shm-leftovers.sh"

resolve_libdir "$@"
make_workdir
build_run_watch
if build_c "$T_WORK/soak" "$top/c-tests/soak.c" 2>"$T_WORK/cc.log"; then
    pass "build soak"
else
    cat "$T_WORK/cc.log"
    abort "build soak"
fi

EPS=${SOAK_EPS:-1000}
if full_tier; then
    MSGS=${SOAK_MSGS:-10000000}
    LIMIT=${SOAK_TIMEOUT:-3600}
else
    MSGS=${SOAK_MSGS:-100000}
    LIMIT=${SOAK_TIMEOUT:-300}
fi
SLACK=${SOAK_RSS_SLACK_KB:-4096}
# Two processes, EPS sockets each over tcp, plus what libucs opens.
want_fds=$((2 * EPS + 256))
if [ "$(ulimit -n)" != unlimited ] && [ "$(ulimit -n)" -lt "$want_fds" ]; then
    ulimit -n "$want_fds" 2>/dev/null || ulimit -n "$(ulimit -Hn)"
fi
echo "# $EPS endpoints, $MSGS messages per transport, ulimit -n $(ulimit -n)"

for tl_dev in ${SOAK_TLS:-tcp:lo posix:memory}; do
    tl=${tl_dev%%:*} dev=${tl_dev#*:}
    name="soak $tl/$dev $EPS eps $MSGS msgs"
    snap=$T_WORK/shm.$tl
    shm_snapshot "$snap"
    out=$T_WORK/soak.$tl.out st=$T_WORK/soak.$tl.st
    start=$(date +%s.%N)
    "$RUN_WATCH" "$LIMIT" "$st" "${RUN[@]}" "$T_WORK/soak" "$tl" "$dev" "$EPS" "$MSGS" \
        >"$out" 2>&1 </dev/null
    wall=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
    ended=$(cat "$st" 2>/dev/null || echo unknown)
    why= note=
    for side in sender receiver; do
        line=$(grep "^RESULT side=$side " "$out" | tail -n 1)
        if [ -z "$line" ]; then
            why="$why; no $side result"
            continue
        fi
        val() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$line"; }
        ok=$(val ok) msgs=$(val msgs) nbad=$(val bad) rw=$(val rss_warm_kb) re=$(val rss_end_kb)
        fb=$(val fds_before) fa=$(val fds_after) secs=$(val secs)
        echo "    $side: msgs $msgs, bad $nbad, RSS ${rw} KB after warm-up, ${re} KB at the end ($((re - rw)) KB), fds $fb -> $fa, ${secs} s"
        [ "$ok" = 1 ] || why="$why; $side not ok"
        [ "$msgs" = "$MSGS" ] || why="$why; $side counted $msgs"
        [ "$nbad" = 0 ] || why="$why; $side $nbad bad"
        [ "$fb" = "$fa" ] || why="$why; $side fds $fb -> $fa"
        slack=$SLACK
        if [ "$tl" = posix ] && [ "$side" = sender ] && [ "${UCX_ABI:-1.13}" != 1.13 ]; then
            # From UCX 1.16 the FIFO has 256 elements of 128 bytes: each
            # endpoint maps the receiver's FIFO (as UCX's mm does), and the
            # 32 KB of every mapping get touched as the FIFO goes round.
            slack=$((SLACK + EPS * 32))
        fi
        if [ $((re - rw)) -gt "$slack" ]; then
            if testing_original; then
                note="$note; the original's $side RSS grew $((re - rw)) KB (reported only)"
            else
                why="$why; $side RSS grew $((re - rw)) KB"
            fi
        fi
    done
    sed -n 's/^RSS side=\([a-z]*\) every_tenth_kb=/    \1 RSS (KB) at every tenth: /p' "$out"
    rate=$(sed -n 's/^rate=\([0-9]*\).*/\1/p' "$out")
    [ "$ended" = "exit 0" ] || why="$why; soak $ended"
    if [ -n "$why" ]; then
        fail "$name" "${why#; }"
        grep -v '^RESULT' "$out" | head -n 20 | sed 's/^/      /'
    else
        pass "$name: $wall s wall, ${rate:-?} msgs/s$note"
    fi
    shm_check "$name: no /dev/shm or SysV leftovers" "$snap"
done
finish
