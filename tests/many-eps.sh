#!/usr/bin/env bash
# Many endpoints on one iface, on the soft RDMA device (c-tests/many_eps.c):
# two processes, each with one iface; 256 endpoints (MANY_EPS_N) over
#   ud_verbs, connect to ep     (256 endpoints on each side, pairwise),
#   ud_verbs, connect to iface  (256 endpoints of b to a's iface address),
#   rc_verbs, connect to ep     (256 QPs on each side),
# MANY_EPS_K active messages on every endpoint (short and bcopy, sequence
# and every byte checked by the receiver), flush, destroy, close.
#
# A/B: every row runs on the C original first (both sides), then (LIBDIR
# given, even when it is the original itself) on LIBDIR
# both sides, then mixed (a = original / b = LIBDIR and the reverse). A row
# the original passes must pass on LIBDIR and mixed; a row it fails is
# reported only. A side that cannot open the transport fails its row (no
# hang: every side is bounded by its own deadline and by timeout(1)).
#
# Memory per endpoint (informational, no threshold): the RSS growth of each
# process from its iface alone to 256 endpoints created and connected
# ("create") and after the traffic ("traffic"), divided by the number of
# endpoints, plus VmLck+VmPin growth; printed as "# mem/ep" lines, the
# original's next to LIBDIR's. "traffic" includes the first touch of the
# iface's receive buffers and send pools (shared, not per endpoint): compare
# it between libraries, not as a per-endpoint cost.
# Knobs: MANY_EPS_N (256), MANY_EPS_K (8 messages per endpoint).
# Usage: tests/many-eps.sh [LIBDIR]   (or UCT_LIBDIR; empty = system library)
here=$(cd "$(dirname "$0")" && pwd)
top=$(dirname "$here")
. "$here/lib/common.sh"
. "$here/lib/softrdma.sh"

softrdma_begin "$@"
need_c "$T_WORK/many_eps" "$top/c-tests/many_eps.c"
softrdma_shm_dir
N=${MANY_EPS_N:-256}
K=${MANY_EPS_K:-8}
OURS=$UCT_LIBDIR

# row A_LIB B_LIB TL MODE OUTPREFIX: runs both sides; prints "ok" or the
# reasons; the outputs stay in OUTPREFIX.a / OUTPREFIX.b
row() {
    local alib=$1 blib=$2 tl=$3 mode=$4 out=$5 d pa ra rb n=$N extra=()
    # MODE "ep-idle": 4 endpoints, side b idle (no progress) for 3 s while a
    # sends and flushes, with a 1 s ud peer timeout: only b's async context
    # can acknowledge
    if [ "$mode" = ep-idle ]; then
        mode=ep n=4 extra=(-I 3000)
        set -- "$@" UCX_UD_VERBS_TIMEOUT=1s
    fi
    # MODE "iface-lossy": 64 endpoints connect to an iface with 10 % of the
    # UD datagrams dropped: lost connection requests and replies must be
    # sent again
    if [ "$mode" = iface-lossy ]; then
        mode=iface n=64
        set -- "$@" SOFTRDMA_UD_DROP=10 SOFTRDMA_UD_SEED=3
    fi
    d=$(mktemp -d "$T_WORK/x.XXXXXX")
    timeout -k 5 90 "$SR/run.sh" env $(lib_env "$alib") "${@:6}" "$T_WORK/many_eps" --role a --dir "$d" \
        -t "$tl" -m "$mode" -n "$n" -k "$K" -T 60 "${extra[@]}" > "$out.a" 2>&1 &
    pa=$!
    timeout -k 5 90 "$SR/run.sh" env $(lib_env "$blib") "${@:6}" "$T_WORK/many_eps" --role b --dir "$d" \
        -t "$tl" -m "$mode" -n "$n" -k "$K" -T 60 "${extra[@]}" > "$out.b" 2>&1
    rb=$?
    wait "$pa"
    ra=$?
    rm -rf "$d"
    local why=
    for s in a b; do
        local r rc
        [ $s = a ] && rc=$ra || rc=$rb
        r=$(sed -n 's/^RESULT //p' "$out.$s" | tail -n 1)
        if [ "$rc" -ne 0 ] || [ "$r" != ok ]; then
            why="$why side $s: exit $rc, ${r:-no result}$(grep -m1 -iE 'error|assert|fatal' "$out.$s" |
                sed 's/^\[[^]]*\] *\[[^]]*\] *//; s/  */ /g' | cut -c1-160 | sed 's/^/, /');"
        fi
    done
    echo "${why:-ok}"
}

warnings() { # OUTPREFIX: the UCX warning/error lines of both sides
    cat "$1.a" "$1.b" | grep -E 'UCX +(ERROR|WARN)' | sed 's/^.*UCX  *//' | sort -u
}

memline() { # OUTFILE LABEL
    sed -n "s/^# mem\/ep \(.*\)$/# mem\/ep $2: \1/p" "$1"
}

rows="ud_verbs:ep ud_verbs:iface rc_verbs:ep ud_verbs:ep-idle ud_verbs:iface-lossy"
for r in $rows; do
    tl=${r%%:*}
    mode=${r#*:}
    name="$tl connect to $mode, $N endpoints x $K messages"
    [ "$mode" = ep-idle ] && name="$tl connect to ep, 4 endpoints, the receiver idle 3 s (1 s peer timeout)"
    [ "$mode" = iface-lossy ] && name="$tl connect to iface, 64 endpoints x $K messages, 10 % of the datagrams dropped"
    o=$(row "" "" "$tl" "$mode" "$T_WORK/orig-$tl-$mode")
    memline "$T_WORK/orig-$tl-$mode.a" "original"
    memline "$T_WORK/orig-$tl-$mode.b" "original"
    grep -h '^# flush done' "$T_WORK/orig-$tl-$mode.a" | sed 's/^# /# original: /'
    if [ -z "$OURS" ]; then
        if [ "$o" = ok ]; then pass "original: $name"; else fail "original: $name" "$o"; fi
        continue
    fi
    if [ "$o" = ok ]; then
        pass "original: $name"
    else
        echo "# original fails: $name:$o"
    fi
    for combo in "ours:$OURS:$OURS" "a original, b ours::$OURS" "a ours, b original:$OURS:"; do
        label=${combo%%:*}
        rest=${combo#*:}
        alib=${rest%%:*}
        blib=${rest#*:}
        tag=$(echo "$label" | tr -c 'a-z\n' '_')
        u=$(row "$alib" "$blib" "$tl" "$mode" "$T_WORK/$tag-$tl-$mode")
        [ "$label" = ours ] && { memline "$T_WORK/$tag-$tl-$mode.a" "ours"; memline "$T_WORK/$tag-$tl-$mode.b" "ours"; }
        extra=$(comm -13 <(warnings "$T_WORK/orig-$tl-$mode") <(warnings "$T_WORK/$tag-$tl-$mode") | head -3)
        if [ "$u" = ok ] && [ -n "$extra" ]; then
            fail "$label: $name" "UCX warnings the original does not print: $extra"
        elif [ "$u" = ok ]; then
            pass "$label: $name"
        elif [ "$o" = ok ]; then
            fail "$label: $name" "$u (the original passes)"
        else
            echo "# $label: $name:$u (the original fails too)"
        fi
    done
done
softrdma_registry_empty "registry directory empty afterwards"
finish
