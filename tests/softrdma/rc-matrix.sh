#!/bin/bash
# Client/server ucx_perftest matrix on the soft RDMA device, two processes:
#   tests/softrdma/rc-matrix.sh [SERVER_LIBDIR [CLIENT_LIBDIR]]
# An empty or missing LIBDIR means the system's C UCX; otherwise that
# directory goes first in LD_LIBRARY_PATH of that side (so
# `rc-matrix.sh OURDIR ""` is a mixed run).
# SOFTRDMA_MATRIX selects the rows:
#   rc    (default) UCT rc_verbs: am_lat/am_bw/put_lat/put_bw short (8 B),
#         bcopy and zcopy (8 B, 4 KiB, 64 KiB, 1 MiB); get bcopy/zcopy;
#         add_lat, add_mr, fadd, swap, cswap (8 B)
#   ud    UCT ud_verbs: am_lat/am_bw short, bcopy, zcopy (8 B, 4 KiB; with
#         SOFTRDMA_UD_SIZES="8 1024 4000 4096" those sizes, short included)
#   ucp   UCP tag_lat/tag_bw 8 B and 1 MiB, UCX_TLS=rc_verbs,tcp and
#         UCX_TLS=rc_verbs,ud_verbs
#   hello uct_hello_world -t rc_verbs (SOFTRDMA_HELLO_TL: another
#         transport), -i/-b/-z (built from the Debian examples with gcc
#         -luct -lucs)
# One line per row: PASS (with the figures), FAIL, or UNSUP (the library
# refused the row: size over its limit, operation not supported). Exit
# status: number of FAIL rows, plus 1 if the registry segment was left
# behind in its private directory (SOFTRDMA_SHM_DIR, made under /dev/shm
# unless given). Each row is bounded by SOFTRDMA_ROW_TIMEOUT seconds (60).
# Ports come from build/freeport; nothing fixed. SOFTRDMA_WARMUP: warm-up
# iterations of each perftest row (1000).
# SOFTRDMA_ONLY=REGEX keeps only the rows whose name ("rc_verbs am_lat short
# 8") matches. SOFTRDMA_NETNS="NS_SERVER NS_CLIENT" runs the sides in those network
# namespaces (they must exist and reach each other at SOFTRDMA_SERVER_ADDR).
here=$(cd "$(dirname "$0")" && pwd)
out=${SOFTRDMA_BUILD:-$here/build}
srv_lib=${1:-}
cli_lib=${2:-}
matrix=${SOFTRDMA_MATRIX:-rc}
dev=${SOFTRDMA_DEV:-softrdma0:1}
iters=${SOFTRDMA_ITERS:-10000}
warmup=${SOFTRDMA_WARMUP:-1000}
tmo=${SOFTRDMA_ROW_TIMEOUT:-60}
addr=${SOFTRDMA_SERVER_ADDR:-127.0.0.1}
read -r ns_srv ns_cli <<< "${SOFTRDMA_NETNS:-}"
[ -x "$out/freeport" ] || "$here/build.sh" >/dev/null || exit 100
# shellcheck source=registry-dir.sh
. "$here/registry-dir.sh"
tmp=$(mktemp -d -t softrdma-matrix.XXXXXX)
trap 'rm -rf "$tmp"; [ -z "$own_shm" ] || rm -rf "$SOFTRDMA_SHM_DIR"' EXIT
fails=0

in_ns() { # NS CMD...: run CMD in netns NS (if set)
    local ns=$1; shift
    if [ -n "$ns" ]; then ip netns exec "$ns" "$@"; else "$@"; fi
}

side() { # LIBDIR NS CMD...: one side with the device, its library first
    local lib=$1 ns=$2; shift 2
    if [ -n "$lib" ]; then
        in_ns "$ns" env LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
            timeout -k 5 $((tmo + 20)) "$here/run.sh" timeout -k 5 "$tmo" "$@"
    else
        in_ns "$ns" timeout -k 5 $((tmo + 20)) "$here/run.sh" timeout -k 5 "$tmo" "$@"
    fi
}

listening() { # PORT NS
    in_ns "$2" cat /proc/net/tcp /proc/net/tcp6 2>/dev/null |
        awk -v p="$(printf '%04X' "$1")" '$4 == "0A" && $2 ~ ":"p"$" { f = 1 } END { exit !f }'
}

unsup_re='[Uu]nsupported|not supported|too (big|large|long)|exceeds|out of range|Invalid (buffer|message) size|No such device|Unsupported operation'

# run_pair NAME SERVER_CMD... -- CLIENT_ARGS...: server CMD, then the same
# CMD with CLIENT_ARGS appended on the client. Sets $rc, $sout, $cout.
run_pair() {
    local name=$1; shift
    local cmd=() cargs=() seen=0 a
    for a in "$@"; do
        if [ "$a" = "--" ] && [ $seen = 0 ]; then seen=1; continue; fi
        if [ $seen = 0 ]; then cmd+=("$a"); else cargs+=("$a"); fi
    done
    sout=$tmp/server.out cout=$tmp/client.out
    t_start=$(date +%s%N)
    side "$srv_lib" "$ns_srv" "${cmd[@]}" > "$sout" 2>&1 &
    local spid=$! i=0
    while [ $i -lt 100 ] && ! listening "$port" "$ns_srv"; do
        kill -0 $spid 2>/dev/null || break
        sleep 0.1; i=$((i + 1))
    done
    side "$cli_lib" "$ns_cli" "${cmd[@]}" "${cargs[@]}" > "$cout" 2>&1
    rc=$?
    wait $spid
    src=$?
    [ $rc -eq 0 ] && rc=$src
    t_row=$(( ($(date +%s%N) - t_start) / 100000000 ))
    t_row="[$((t_row / 10)).$((t_row % 10)) s]"
}

report() { # NAME OKFIGURE
    local name=$1 fig=$2
    if [ $rc -eq 0 ] && [ -n "$fig" ]; then
        echo "PASS $name | $fig $t_row"
    elif grep -Eqi "$unsup_re" "$cout" "$sout"; then
        echo "UNSUP $name | $(grep -Ehi "$unsup_re" "$cout" "$sout" | head -1 | tr -s ' ' | cut -c1-120)"
    else
        echo "FAIL $name (rc=$rc) $t_row"
        grep -Ehi 'error|fail|assert|timeout|killed' "$cout" "$sout" | head -4 | sed 's/^/    /'
        fails=$((fails + 1))
    fi
}

perf() { # TEST LAYOUT SIZE [ENV...]: one ucx_perftest row
    local t=$1 lay=$2 size=$3 extra
    shift 3
    port=$("$out/freeport")
    local name="$t ${lay:--} $size"
    if [ -n "${SOFTRDMA_ONLY:-}" ] && ! [[ "$tl $name" =~ $SOFTRDMA_ONLY ]]; then return; fi
    local args=(ucx_perftest -p "$port" -t "$t" -n "$iters" -w "$warmup" -s "$size")
    case $t in
        tag_*) ;;
        *) args+=(-x "$tl" -d "$dev") ;;
    esac
    [ -n "$lay" ] && args+=(-D "$lay")
    if [ $# -gt 0 ]; then args=(env "$@" "${args[@]}"); fi
    run_pair "$name" "${args[@]}" -- "$addr"
    local final
    final=$(grep '^Final:' "$cout" | tr -s ' ')
    if [ -n "$final" ]; then
        # Final: iters 50%ile avg-lat overall-lat avg-bw overall-bw avg-rate overall-rate
        final=$(echo "$final" | awk '{ printf "lat %s us (median %s), bw %s MB/s, rate %s msg/s", $5, $3, $7, $9 }')
    fi
    report "$tl $name" "$final"
}

hello() { # MODE (-i/-b/-z)
    local bin=$out/uct_hello_world
    if [ ! -x "$bin" ]; then
        gcc -O2 -o "$bin" /usr/share/doc/libucx-dev/examples/uct_hello_world.c -luct -lucs \
            2>"$tmp/cc.err" || { echo "FAIL hello: build"; cat "$tmp/cc.err"; fails=$((fails + 1)); return; }
    fi
    port=$("$out/freeport")
    local htl=${SOFTRDMA_HELLO_TL:-rc_verbs}
    if [ -n "${SOFTRDMA_ONLY:-}" ] && ! [[ "uct_hello_world $1 $htl" =~ $SOFTRDMA_ONLY ]]; then return; fi
    run_pair "hello $1" "$bin" "$1" -t "$htl" -d "$dev" -p "$port" -- -n "$addr"
    local fig=""
    if grep -q 'UCT TEST SUCCESS' "$sout" "$cout"; then
        fig="$(grep -h 'sent' "$cout" "$sout" | head -1 | tr -s ' ' | cut -c1-80); UCT TEST SUCCESS"
    fi
    report "uct_hello_world $1 $htl" "$fig"
}

case $matrix in
rc)
    tl=rc_verbs
    for t in am_lat am_bw put_lat put_bw; do
        perf $t short 8
        for lay in bcopy zcopy; do
            for s in 8 4096 65536 1048576; do perf $t $lay $s; done
        done
    done
    for lay in bcopy zcopy; do
        for s in 8 4096 65536 1048576; do perf get $lay $s; done
    done
    for t in add_lat add_mr fadd swap cswap; do perf $t "" 8; done
    ;;
ud)
    tl=ud_verbs
    for t in am_lat am_bw; do
        if [ -n "${SOFTRDMA_UD_SIZES:-}" ]; then
            for lay in short bcopy zcopy; do
                for s in $SOFTRDMA_UD_SIZES; do perf $t $lay $s; done
            done
            continue
        fi
        perf $t short 8
        for lay in bcopy zcopy; do
            for s in 8 4096; do perf $t $lay $s; done
        done
    done
    ;;
ucp)
    tl=ucp
    # rc_verbs needs an auxiliary transport for its wireup; tcp does not
    # qualify in 1.13 (its AM callbacks are not async), ud_verbs does.
    for tls in rc_verbs,tcp rc_verbs,ud_verbs; do
        for t in tag_lat tag_bw; do
            for s in 8 1048576; do
                tl="ucp[$tls]" perf $t "" $s UCX_TLS=$tls
            done
        done
    done
    ;;
hello)
    for m in -i -b -z; do hello $m; done
    ;;
*)
    echo "unknown SOFTRDMA_MATRIX=$matrix" >&2
    exit 100
    ;;
esac
if [ -n "$own_shm" ] && [ -n "$(ls -A "$SOFTRDMA_SHM_DIR")" ]; then
    echo "FAIL left in $SOFTRDMA_SHM_DIR: $(ls -A "$SOFTRDMA_SHM_DIR" | tr '\n' ' ')"
    fails=$((fails + 1))
fi
exit $fails
