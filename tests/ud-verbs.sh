#!/usr/bin/env bash
# ud_verbs on the soft RDMA device (tests/softrdma/), A/B: every case runs
# on the C original (Debian's UCX 1.13.1) first, then on LIBDIR's library;
# whatever the original passes must pass on LIBDIR, and a row the original
# refuses (a size over its limits) must be refused too.
#  - `ucx_info -d`: LIBDIR's ud_verbs block identical to the original's
#    (live, and on 1.13 the recorded one in
#    expected/ucx_info-d.softrdma0.c-original.txt);
#  - uct_hello_world -t ud_verbs -i/-b/-z across two processes: LIBDIR
#    both sides, C server + LIBDIR client, LIBDIR server + C client;
#  - c-tests/flush_pending.c on both libraries: with the send queue
#    exhausted, neither uct_ep_flush nor uct_iface_flush reports complete
#    while a send waits on the pending queue (the flush goes behind it);
#  - the ud_verbs ucx_perftest rows (rc-matrix.sh SOFTRDMA_MATRIX=ud):
#    am_lat/am_bw short/bcopy/zcopy at 8, 1024, 4000 and 4096 bytes
#    (am_short is limited to 56 bytes, bcopy/zcopy to 4088: the original
#    refuses 1024/4000/4096 short and 4096 bcopy/zcopy), client/server,
#    LIBDIR both sides and mixed both ways, row by row as the original;
#  - datagram loss (SOFTRDMA_UD_DROP=1 and =10, SOFTRDMA_UD_SEED fixed),
#    one mixed direction at 10 %, reordering (SOFTRDMA_UD_REORDER) and
#    delay (SOFTRDMA_UD_DELAY_US): UCX's reliability layer at work;
#  - one row across two network namespaces (root with `ip netns` only).
# The original's results of the full tier are recorded in
# tests/softrdma/expected/ud-matrix.c-original.txt (informative: the
# reference is the original of this run; a difference is printed as a
# note). LIBDIR without ud_verbs on the device: every LIBDIR case FAILs
# (ud_verbs is required); nothing waits for it.
# Tiers: quick (default: a few rows of each kind, 500 iterations, a few
# minutes); UCT_RS_TIER=full: every row, direction and loss level (2000
# iterations; 1000 at 1 % loss, 300 at 10 %: the original's am_lat short
# does not finish 10000 iterations at 10 % within 90 s).
# Knobs: UD_ITERS, UD_LOSS_ITERS (10 %, delay), UD_LOSS1_ITERS (1 %,
# reorder), SOFTRDMA_ROW_TIMEOUT (60 s per row), UD_LOSSY_ROW_TIMEOUT (90),
# UD_VERBS_RECORD=FILE (write the original's results there).
# Usage: tests/ud-verbs.sh LIBDIR
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib/common.sh"

resolve_libdir "$@"
if ! ref_has_verbs; then
    skip_suite "the UCX $UCX_RELEASE reference has no verbs transports (A/B needs an original with them)"
fi
make_workdir
. "$here/lib/softrdma.sh"
softrdma_setup
OURS=$UCT_LIBDIR
UCX_INFO=$(ucx_tool ucx_info)
RECORD=${UD_VERBS_RECORD:-}
if full_tier; then
    UD_ITERS=${UD_ITERS:-2000}
else
    UD_ITERS=${UD_ITERS:-500}
fi
UD_LOSS_ITERS=${UD_LOSS_ITERS:-300}
UD_LOSS1_ITERS=${UD_LOSS1_ITERS:-1000}
UD_EXPECTED=$SR/expected/ud-matrix.c-original.txt
export SOFTRDMA_UD_SIZES="8 1024 4000 4096"
# per row: 60 s, 90 s for the lossy rows (the original's slowest at 10 %
# loss, am_bw zcopy 1024 with 300 iterations, took up to 43 s under load)
ROW_TMO=${SOFTRDMA_ROW_TIMEOUT:-60}
LOSSY_TMO=${UD_LOSSY_ROW_TIMEOUT:-90}
[ -n "$RECORD" ] && : > "$RECORD"
t_suite=$(date +%s)

# ---- ucx_info -d
ud_block() { # FILE: the ud_verbs block of softrdma0:1, without its trailing "#" lines
    awk '/^#      Transport: ud_verbs$/ { on = 1; print; next }
         on && /^#      Transport:|^# (Memory domain:|< failed|Connection manager:)/ { exit }
         on && $0 == "#" { held = held $0 "\n"; next }
         on { printf "%s", held; held = ""; print }' "$1"
}
"$SR/run.sh" env $(lib_env "") "$UCX_INFO" -d > "$T_WORK/info-orig.txt" 2>&1
ud_block "$T_WORK/info-orig.txt" > "$T_WORK/block-orig.txt"
# the recording is of 1.13.1: another release's original is judged live only
if [ "$UCX_ABI" = 1.13 ]; then
    ud_block "$SR/expected/ucx_info-d.softrdma0.c-original.txt" > "$T_WORK/block-rec.txt"
else
    cp "$T_WORK/block-orig.txt" "$T_WORK/block-rec.txt"
fi
[ -s "$T_WORK/block-orig.txt" ] || abort "the original lists ud_verbs on softrdma0:1" "$(tail -3 "$T_WORK/info-orig.txt")"
diff "$T_WORK/block-rec.txt" "$T_WORK/block-orig.txt" > /dev/null ||
    echo "# note: the original's ud_verbs block differs from the recorded one"
"$SR/run.sh" env $(lib_env "$OURS") "$UCX_INFO" -d > "$T_WORK/info-ours.txt" 2>&1
ud_block "$T_WORK/info-ours.txt" > "$T_WORK/block-ours.txt"
ours_ud=1
if [ ! -s "$T_WORK/block-ours.txt" ]; then
    ours_ud=
    fail "ucx_info -d: LIBDIR lists ud_verbs on softrdma0:1" "none: every LIBDIR case fails"
elif diff "$T_WORK/block-orig.txt" "$T_WORK/block-ours.txt" > "$T_WORK/d.txt" &&
     diff "$T_WORK/block-rec.txt" "$T_WORK/block-ours.txt" >> "$T_WORK/d.txt"; then
    pass "ucx_info -d: ud_verbs block identical to the original's ($(wc -l < "$T_WORK/block-ours.txt") lines)"
else
    sed 's/^/      /' "$T_WORK/d.txt"
    fail "ucx_info -d: ud_verbs block identical to the original's"
fi

# ---- matrices
# matrix OUT SRV_LIB CLI_LIB [VAR=VALUE...]: rc-matrix.sh with those
# variables (SOFTRDMA_MATRIX, SOFTRDMA_ONLY, SOFTRDMA_ITERS, lossy knobs)
matrix() {
    local out=$1 srv=$2 cli=$3
    shift 3
    env SOFTRDMA_ROW_TIMEOUT="$ROW_TMO" "$@" timeout -k 5 1800 "$SR/rc-matrix.sh" "$srv" "$cli" > "$out" 2>&1
    echo "## exit status $?" >> "$out"
}
# record LABEL FILE: the original's rows into $RECORD
record() {
    [ -n "$RECORD" ] || return 0
    { echo "## $1 ($(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg))"
      grep -E '^(PASS|FAIL|UNSUP|##) ' "$2" |
          sed -E 's/^(UNSUP [^|]*\| )\[[^]]*\] *\[[^]]*\] */\1/'; } >> "$RECORD"
}
# rows FILE: "STATUS ROWNAME" of an rc-matrix.sh output
rows() {
    awk '/^(PASS|FAIL|UNSUP) / { s = $1; $1 = ""; sub(/^ /, ""); sub(/ \|.*$/, ""); sub(/ \(rc=.*$/, ""); print s "\t" $0 }' "$1"
}
# recorded_status LABEL ROW: the original's recorded status of ROW under LABEL
recorded_status() {
    [ -f "$UD_EXPECTED" ] || return 0
    awk -v m="## $1 (" -v row="$2" '
        index($0, m) == 1 { on = 1; next }
        /^## / { on = 0 }
        on && /^(PASS|FAIL|UNSUP) / {
            s = $1; $1 = ""; sub(/^ /, ""); sub(/ \|.*$/, ""); sub(/ \(rc=.*$/, "")
            if ($0 == row) { print s; exit }
        }' "$UD_EXPECTED"
}
# judge ORIG_OUT LIB_OUT LABEL RECLABEL: LIBDIR's rows against the original's
judge() {
    local orig=$1 ours=$2 label=$3 rec=$4 st row want fig n=0 r
    rows "$orig" > "$T_WORK/ro.txt"
    rows "$ours" > "$T_WORK/rl.txt"
    while IFS=$'\t' read -r want row; do
        n=$((n + 1))
        r=$(recorded_status "$rec" "$row")
        [ -n "$r" ] && [ "$r" != "$want" ] && echo "# note: $label: $row: the original $want now, $r recorded"
        st=$(awk -F'\t' -v row="$row" '$2 == row { print $1; exit }' "$T_WORK/rl.txt")
        fig=$(grep -m1 -F "$st $row |" "$ours" | sed 's/^[^|]*| //')
        ofig=$(grep -m1 -F "$want $row |" "$orig" | sed 's/^[^|]*| //')
        if [ -z "$st" ]; then
            fail "$label: $row" "no result on LIBDIR (the original: $want)"
        elif [ "$want" = PASS ] && [ "$st" = PASS ]; then
            pass "$label: $row: PASS | $fig | original: $ofig"
        elif [ "$want" = FAIL ]; then
            echo "# $label: $row: the original fails; LIBDIR: $st"
        elif [ "$st" = "$want" ]; then
            pass "$label: $row: $st, as the original"
        else
            fail "$label: $row" "$st, the original: $want"
            awk -v r="$st $row" 'index($0, r) == 1 { on = 1; next }
                /^(PASS|FAIL|UNSUP|##) / { on = 0 } on' "$ours"
        fi
    done < "$T_WORK/ro.txt"
    [ "$n" -gt 0 ] || fail "$label" "no rows ran on the original"
    if grep -q '^FAIL left in' "$ours"; then
        fail "$label: registry directory" "$(grep -m1 '^FAIL left in' "$ours")"
    fi
}
# ab LABEL ONLY MIXED [VAR=VALUE...]: the rows matching ONLY on the
# original, then on LIBDIR both sides, then (MIXED=mixed) C server +
# LIBDIR client and LIBDIR server + C client; MIXED=srvC: that direction
# only; MIXED=mixonly: both mixed directions, not LIBDIR<->LIBDIR (rows an
# earlier call ran)
ab() {
    local label=$1 only=$2 mixed=$3 tag
    shift 3
    tag=$(echo "$label" | tr -c 'A-Za-z0-9\n' '_')
    matrix "$T_WORK/$tag-o.txt" "" "" SOFTRDMA_ONLY="$only" "$@"
    record "$label" "$T_WORK/$tag-o.txt"
    grep -E '^(PASS|FAIL|UNSUP) ' "$T_WORK/$tag-o.txt" | sed "s/^/#   original: /"
    if [ -z "$ours_ud" ]; then
        fail "$label: LIBDIR" "no ud_verbs"
        return
    fi
    if [ "$mixed" != mixonly ]; then
        matrix "$T_WORK/$tag-l.txt" "$OURS" "$OURS" SOFTRDMA_ONLY="$only" "$@"
        judge "$T_WORK/$tag-o.txt" "$T_WORK/$tag-l.txt" "$label, LIBDIR<->LIBDIR" "$label"
    fi
    case $mixed in
    mixed|mixonly|srvC)
        matrix "$T_WORK/$tag-sc.txt" "" "$OURS" SOFTRDMA_ONLY="$only" "$@"
        judge "$T_WORK/$tag-o.txt" "$T_WORK/$tag-sc.txt" "$label, server C, client LIBDIR" "$label" ;;
    esac
    case $mixed in
    mixed|mixonly)
        matrix "$T_WORK/$tag-sl.txt" "$OURS" "" SOFTRDMA_ONLY="$only" "$@"
        judge "$T_WORK/$tag-o.txt" "$T_WORK/$tag-sl.txt" "$label, server LIBDIR, client C" "$label" ;;
    esac
}

# uct_hello_world
ab "hello ud_verbs" '.' mixed SOFTRDMA_MATRIX=hello SOFTRDMA_HELLO_TL=ud_verbs

# ---- a flush does not overtake a send waiting on the pending queue
# (c-tests/flush_pending.c: one process, two ifaces, the send queue
# exhausted; libucp's emulated one-sided operations depend on it)
if [ -n "$ours_ud" ]; then
    flush_pending_case "original LIBDIR" -- ud_verbs 1024
else
    flush_pending_case original -- ud_verbs 1024
    fail "flush behind a pending send, LIBDIR" "no ud_verbs"
fi

# perftest rows
if full_tier; then
    ONLY='.'
    MIX_ONLY='.'
else
    ONLY='am_lat (short 8|bcopy (1024|4096)|zcopy 4000)|am_bw (short (8|1024)|bcopy 4000|zcopy 1024)'
    MIX_ONLY='am_lat (short 8|zcopy 4000)|am_bw (bcopy 4000|short 1024)'
fi
if full_tier; then
    ab "perftest ud_verbs" "$ONLY" mixed SOFTRDMA_MATRIX=ud SOFTRDMA_ITERS="$UD_ITERS"
else
    ab "perftest ud_verbs" "$ONLY" no SOFTRDMA_MATRIX=ud SOFTRDMA_ITERS="$UD_ITERS"
    ab "perftest ud_verbs mixed" "$MIX_ONLY" mixonly SOFTRDMA_MATRIX=ud SOFTRDMA_ITERS="$UD_ITERS"
fi

# lossy rows: only the sizes the original takes
LOSSY_ALL='am_(lat|bw) (short 8|bcopy (8|1024|4000)|zcopy (8|1024|4000))$'
LOSS_ENV=(SOFTRDMA_MATRIX=ud SOFTRDMA_UD_SEED=1 SOFTRDMA_WARMUP=30 SOFTRDMA_ROW_TIMEOUT="$LOSSY_TMO")
if full_tier; then
    ab "drop 1 %" "$LOSSY_ALL" mixed "${LOSS_ENV[@]}" SOFTRDMA_UD_DROP=1 SOFTRDMA_ITERS="$UD_LOSS1_ITERS"
    ab "drop 10 %" "$LOSSY_ALL" mixed "${LOSS_ENV[@]}" SOFTRDMA_UD_DROP=10 SOFTRDMA_ITERS="$UD_LOSS_ITERS"
    ab "reorder 30 %" "$LOSSY_ALL" mixed "${LOSS_ENV[@]}" SOFTRDMA_UD_REORDER=30 SOFTRDMA_ITERS="$UD_LOSS1_ITERS"
    ab "delay 2000 us" 'am_lat short 8|am_bw (bcopy 4000|zcopy 1024)' mixed "${LOSS_ENV[@]}" \
        SOFTRDMA_UD_DELAY_US=2000 SOFTRDMA_ITERS="$UD_LOSS_ITERS"
else
    ab "drop 1 %" 'am_bw zcopy 4000' no "${LOSS_ENV[@]}" SOFTRDMA_UD_DROP=1 SOFTRDMA_ITERS="$UD_LOSS1_ITERS"
    ab "drop 10 %" 'am_lat short 8|am_bw bcopy 1024' srvC "${LOSS_ENV[@]}" SOFTRDMA_UD_DROP=10 SOFTRDMA_ITERS="$UD_LOSS_ITERS"
    ab "reorder 30 %" 'am_bw bcopy 1024' no "${LOSS_ENV[@]}" SOFTRDMA_UD_REORDER=30 SOFTRDMA_ITERS="$UD_LOSS1_ITERS"
    ab "delay 2000 us" 'am_lat short 8' no "${LOSS_ENV[@]}" SOFTRDMA_UD_DELAY_US=2000 SOFTRDMA_ITERS="$UD_LOSS_ITERS"
fi

# ---- two network namespaces
if netns_usable "no netns row"; then
    NS_ONLY='am_lat short 8|am_bw bcopy 4000'
    ns_run() { # OUT SRV CLI
        SOFTRDMA_MATRIX=ud SOFTRDMA_ITERS=$UD_ITERS SOFTRDMA_ONLY=$NS_ONLY SOFTRDMA_ROW_TIMEOUT=$ROW_TMO \
            timeout -k 5 300 "$SR/netns-test.sh" "$2" "$3" > "$1" 2>&1
        echo "## exit status $?" >> "$1"
    }
    ns_run "$T_WORK/ns-o.txt" "" ""
    record "two network namespaces" "$T_WORK/ns-o.txt"
    grep -E '^(PASS|FAIL|UNSUP) ' "$T_WORK/ns-o.txt" | sed "s/^/#   original: /"
    if [ -n "$ours_ud" ]; then
        ns_run "$T_WORK/ns-l.txt" "$OURS" "$OURS"
        judge "$T_WORK/ns-o.txt" "$T_WORK/ns-l.txt" "LIBDIR across two namespaces" "two network namespaces"
    else
        fail "LIBDIR across two namespaces" "no ud_verbs"
    fi
    left=$(ip netns list 2>/dev/null | grep -E '^srx[ab]' | tr '\n' ' ')
    [ -z "$left" ] || fail "network namespaces removed" "$left"
fi
if [ -n "$RECORD" ]; then
    echo "## suite time $(( $(date +%s) - t_suite )) s" >> "$RECORD"
fi
echo "# suite time $(( $(date +%s) - t_suite )) s"
finish
