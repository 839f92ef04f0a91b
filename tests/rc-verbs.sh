#!/usr/bin/env bash
# Our rc_verbs transport on the soft RDMA device (tests/softrdma/), A/B
# against the C original in the same run where the reference has verbs
# (Debian's UCX 1.13.1; the 1.18.1 wheel has none: there ours is judged
# against the original's checked-in results,
# tests/softrdma/expected/rc-matrix.c-original.txt):
#  - `ucx_info -d`: the rc_verbs block identical to the original's (1.13:
#    live; 1.18: its limit lines - sizes, atomics, connection, address
#    lengths, error handling - against the checked-in 1.13.1 block, which
#    those lines share);
#  - `UCX_RC_VERBS_ECE` = 0, auto, inf, 5 (where the reference has verbs):
#    the interface opens or is refused as the original's (the device has no
#    ECE; which values keep its default depends on the release);
#  - one process (`ucx_perftest -l`, the rc rows of perftest-loopback.sh):
#    every row the original passes passes;
#  - client/server rc matrix (rc-matrix.sh) ours <-> ours: every PASS row of
#    the original passes, every row it refuses (UNSUP) is refused too;
#  - mixed, ours server / C client and C server / ours client (1.13 only): a
#    subset of the matrix (every operation and protocol; more sizes with
#    UCT_RS_TIER=full), same rule;
#  - uct_hello_world -i/-b/-z ours <-> ours, and mixed both ways (1.13);
#  - one row across two network namespaces (root with `ip netns` only);
#  - the server SIGKILLed under a running ucx_perftest client (put_bw, am_bw):
#    ucx_perftest sets no error handler; the original then aborts, ours logs
#    the failure and fails every later send with UCS_ERR_ENDPOINT_TIMEOUT. The
#    check: the client reports the failure within KILL_BOUND seconds (10),
#    does not crash, stops within 5 s of a SIGTERM (no hang), and the
#    device's registry directory is empty afterwards (am_bw may instead wait
#    for credits with no work request outstanding, as on the original);
#  - c-tests/flush_pending.c (1.13: the original too): with the send CQ
#    exhausted, no flush reports complete while a send waits on the
#    pending queue;
#  - the figures of am_lat short 8, put_bw zcopy 64 KiB and get zcopy 1 MiB,
#    the original's (1.13: measured now; 1.18: recorded) next to ours (no
#    timing assertions).
# Skipped without the device, on the original itself, and when LIBDIR's
# library has no rc_verbs (built without the verbs feature).
# Knobs: SR_ITERS (2000 iterations per client/server row), KILL_BOUND.
# Usage: tests/rc-verbs.sh LIBDIR
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib/common.sh"

resolve_libdir "$@"
if testing_original; then
    skip_suite "compares our library with the original: give LIBDIR"
fi
make_workdir
. "$here/lib/softrdma.sh"
. "$here/lib/kill.sh"
softrdma_setup
OURS=$UCT_LIBDIR
UCX_INFO=$(ucx_tool ucx_info)
PERFTEST=$(ucx_tool ucx_perftest)
[ -x "$PERFTEST" ] || abort "ucx_perftest" "not installed (apt-get install ucx-utils)"
if ! lib_has_rc_verbs "$OURS"; then
    skip_suite "$OURS/libuct.so.0 lists no rc_verbs on the device (built without verbs?)"
fi
SR_ITERS=${SR_ITERS:-2000}
KILL_BOUND=${KILL_BOUND:-10}
export SOFTRDMA_ITERS=$SR_ITERS
DEV=softrdma0:1

# ---- ucx_info -d
# rc_block FILE: the rc_verbs transport block of softrdma0:1, without the
# empty "#" lines at its end (what follows differs: ours has no ud_verbs)
rc_block() {
    awk '/^#      Transport: rc_verbs$/ { on = 1; print; next }
         on && /^#      Transport:|^# (Memory domain:|< failed|Connection manager:)/ { exit }
         on && $0 == "#" { held = held $0 "\n"; next }
         on { printf "%s", held; held = ""; print }' "$1"
}
limit_lines() {
    grep -E '^# +(put|get|am)_(short|bcopy|zcopy):|^# +am header:|^# +atomic_|^# +connection:|^# +(device|ep|iface) address:|^# +error handling:'
}
cp "$T_WORK/has-rc.txt" "$T_WORK/info-ours.txt"
rc_block "$T_WORK/info-ours.txt" > "$T_WORK/block-ours.txt"
if ref_has_verbs; then
    "$SR/run.sh" env $(lib_env "") "$UCX_INFO" -d > "$T_WORK/info-orig.txt" 2>&1
    rc_block "$T_WORK/info-orig.txt" > "$T_WORK/block-orig.txt"
    if [ -s "$T_WORK/block-orig.txt" ] &&
       diff "$T_WORK/block-orig.txt" "$T_WORK/block-ours.txt" > "$T_WORK/d.txt"; then
        pass "ucx_info -d: rc_verbs block identical to the original's ($(wc -l < "$T_WORK/block-ours.txt") lines)"
    else
        cat "$T_WORK/d.txt"
        fail "ucx_info -d: rc_verbs block identical to the original's"
    fi
else
    rc_block "$SR/expected/ucx_info-d.softrdma0.c-original.txt" | limit_lines > "$T_WORK/lim-orig.txt"
    limit_lines < "$T_WORK/block-ours.txt" > "$T_WORK/lim-ours.txt"
    if [ -s "$T_WORK/lim-orig.txt" ] && diff "$T_WORK/lim-orig.txt" "$T_WORK/lim-ours.txt" > "$T_WORK/d.txt"; then
        pass "ucx_info -d: rc_verbs limit lines as the 1.13.1 original's ($(wc -l < "$T_WORK/lim-ours.txt") lines)"
    else
        cat "$T_WORK/d.txt"
        fail "ucx_info -d: rc_verbs limit lines as the 1.13.1 original's"
    fi
fi

# ECE: the device has none, so the interface opens only with a value that
# keeps the device's default (which values those are depends on the
# release; unknown before 1.14). Opened or refused as the original.
# rc_opens [LIB] VALUE: "opens" or "refused" for UCX_RC_VERBS_ECE=VALUE
rc_opens() {
    "$SR/run.sh" env $(lib_env "$1") UCX_RC_VERBS_ECE="$2" "$UCX_INFO" -d -t rc_verbs > "$T_WORK/ece.txt" 2>&1
    if grep -q '^#   < failed to open interface >' "$T_WORK/ece.txt"; then echo refused; else echo opens; fi
}
if ref_has_verbs; then
    for v in 0 auto inf 5; do
        o=$(rc_opens "" "$v")
        u=$(rc_opens "$OURS" "$v")
        if [ "$o" = "$u" ]; then
            pass "UCX_RC_VERBS_ECE=$v: the interface $u, as the original's"
        else
            fail "UCX_RC_VERBS_ECE=$v: the interface $u, the original's $o"
        fi
    done
fi

# ---- one process
loop_row() { # LIBDIR ARGS...: prints PASS/FAIL and the Final figures
    local lib=$1 out rc
    shift
    out=$(timeout -k 5 120 "$SR/run.sh" env $(lib_env "$lib") "$PERFTEST" -l -n $((SR_ITERS * 2)) "$@" 2>&1)
    rc=$?
    if [ $rc -eq 0 ] && grep -q '^Final:' <<<"$out"; then
        echo "PASS $(grep '^Final:' <<<"$out" | awk '{ printf "median %s us, %s MB/s", $3, $7 }')"
    else
        echo "FAIL rc=$rc $(grep -iE 'error|fail|assert' <<<"$out" | head -2 | tr -s ' ' | tr '\n' ' ' | cut -c1-200)"
    fi
}
while read -r args; do
    [ -n "$args" ] || continue
    # shellcheck disable=SC2086
    set -- -x rc_verbs -d $DEV $args
    name="one process: $args"
    if ref_has_verbs; then
        orig=$(loop_row "" "$@")
    else
        orig="PASS (recorded: all rc rows of perftest-loopback.sh pass on the 1.13.1 original)"
    fi
    ours=$(loop_row "$OURS" "$@")
    if [ "${orig%% *}" != PASS ]; then
        echo "# $name: the original fails ($orig); ours: $ours"
        [ "${ours%% *}" = PASS ] || [ "${ours%% *}" = FAIL ] || fail "$name" "$ours"
    elif [ "${ours%% *}" = PASS ]; then
        pass "$name: ours ${ours#PASS }; original ${orig#PASS }"
    else
        fail "$name" "ours ${ours}; the original passes"
    fi
done <<'ROWS'
-t am_lat
-t am_lat -D bcopy
-t am_lat -D zcopy
-t am_bw
-t am_bw -D bcopy -s 4096
-t am_bw -D zcopy -s 4096
-t put_lat
-t put_bw
-t put_bw -D bcopy -s 4096
-t put_bw -D zcopy -s 65536
-t get -D bcopy -s 4096
-t get -D zcopy -s 65536
-t add_lat
-t add_mr
-t fadd
-t cswap
ROWS

# ---- client/server
SOFTRDMA_MATRIX=rc timeout -k 5 900 "$SR/rc-matrix.sh" "$OURS" "$OURS" > "$T_WORK/m-ours.txt" 2>&1
judge_matrix "$T_WORK/m-ours.txt" rc "ours<->ours"
# the mixed subset: every operation and protocol in the quick tier, more
# sizes in the full one
if full_tier; then
    MIXED_ROWS=${MIXED_ROWS:-'am_lat (short 8|bcopy (8|4096|65536)|zcopy 4096)|am_bw (short 8|bcopy 4096|zcopy (4096|65536))|put_lat (short 8|zcopy 4096)|put_bw (bcopy (4096|65536)|zcopy (8|65536|1048576))|get (bcopy 4096|zcopy (8|65536))|add_lat|fadd|swap|cswap'}
else
    MIXED_ROWS=${MIXED_ROWS:-'am_lat (short 8|bcopy 4096|zcopy 4096)|am_bw (bcopy 4096|zcopy 65536)|put_lat short 8|put_bw (bcopy 65536|zcopy 1048576)|get (bcopy 4096|zcopy 65536)|add_lat|fadd|swap|cswap'}
fi
if ref_has_verbs; then
    SOFTRDMA_ONLY=$MIXED_ROWS timeout -k 5 600 "$SR/rc-matrix.sh" "$OURS" "" > "$T_WORK/m-os.txt" 2>&1
    judge_matrix "$T_WORK/m-os.txt" rc "server ours, client C"
    SOFTRDMA_ONLY=$MIXED_ROWS timeout -k 5 600 "$SR/rc-matrix.sh" "" "$OURS" > "$T_WORK/m-so.txt" 2>&1
    judge_matrix "$T_WORK/m-so.txt" rc "server C, client ours"
fi

# ---- uct_hello_world (rc-matrix.sh builds it from Debian's examples with
# the system headers: for another installation, build it here first)
if [ -n "$UCX_PREFIX" ]; then
    "$CC" -O2 "${UCX_CFLAGS[@]}" -o "$SOFTRDMA_BUILD/uct_hello_world" "$UCX_EXAMPLES/uct_hello_world.c" \
        "${UCX_LDFLAGS[@]}" -luct -lucs 2> "$T_WORK/cc.log" || { cat "$T_WORK/cc.log"; fail "build uct_hello_world"; }
fi
SOFTRDMA_MATRIX=hello timeout -k 5 300 "$SR/rc-matrix.sh" "$OURS" "$OURS" > "$T_WORK/h-ours.txt" 2>&1
judge_matrix "$T_WORK/h-ours.txt" hello "hello ours<->ours"
if ref_has_verbs; then
    SOFTRDMA_MATRIX=hello timeout -k 5 300 "$SR/rc-matrix.sh" "$OURS" "" > "$T_WORK/h-os.txt" 2>&1
    judge_matrix "$T_WORK/h-os.txt" hello "hello server ours, client C"
    SOFTRDMA_MATRIX=hello timeout -k 5 300 "$SR/rc-matrix.sh" "" "$OURS" > "$T_WORK/h-so.txt" 2>&1
    judge_matrix "$T_WORK/h-so.txt" hello "hello server C, client ours"
fi

# ---- two network namespaces
if netns_usable "no netns row"; then
    SOFTRDMA_ONLY='put_bw zcopy 65536' timeout -k 5 300 "$SR/netns-test.sh" "$OURS" "$OURS" > "$T_WORK/netns.txt" 2>&1
    nrc=$?
    grep -E '^(PASS|FAIL|UNSUP) ' "$T_WORK/netns.txt" > "$T_WORK/netns-rows.txt"
    judge_matrix "$T_WORK/netns-rows.txt" rc "ours across two namespaces"
    if [ "$nrc" != 0 ]; then
        grep -E '^not ok|FAIL' "$T_WORK/netns.txt" | head -5
        fail "netns-test.sh exit status" "$nrc"
    fi
fi

# ---- the server killed under a running client
softrdma_shm_dir
kill_row() { # NAME PERFTEST-ARGS...
    local name=$1 port t_det= rc how errl
    shift
    port=$("$SOFTRDMA_BUILD/freeport")
    kill_perftest_server "$OURS" "$OURS" "$PERFTEST" -p "$port" -x rc_verbs -d $DEV -n 1000000000 "$@"
    # the failure reported, or the client ended, within the bound
    kill_client_wait 'completion with error|Endpoint timeout|[Ee]rror handler|peer failure'
    if kill_client_stop; then
        [ "$how" = stopped ] && how="stopped by SIGTERM (exit $rc)"
    else
        wait "$KS_CPID"; rc=$?
        how="exited by itself (exit $rc)"
        [ "$rc" -ge 128 ] && how="crash (exit $rc)"
    fi
    errl=$(grep -m1 -E 'completion with error|Endpoint timeout' "$T_WORK/kill-cli.out" | sed 's/^\[[^]]*\] *\[[^]]*\] *//' | tr -s ' ' | cut -c1-130)
    if [ "$how" = hang ]; then
        fail "server killed, $name" "the client did not stop within 5 s of SIGTERM"
    elif [[ $how = crash* ]] || grep -qE 'Segmentation|Caught signal|Assertion|FATAL' "$T_WORK/kill-cli.out"; then
        grep -E 'Segmentation|Caught signal|Assertion|FATAL' "$T_WORK/kill-cli.out" | head -3
        fail "server killed, $name" "client: $how"
    elif [ -n "$t_det" ]; then
        pass "server killed, $name: the client reported it ${t_det} ms after the kill, $how | $errl"
    elif [ "$name" = am_bw ]; then
        pass "server killed, $name: the client waits for credits (no work request outstanding, as the original may), $how"
    else
        sed 's/^/      /' "$T_WORK/kill-cli.out" | tail -5
        fail "server killed, $name" "no failure reported within ${KILL_BOUND}s; client $how"
    fi
}
kill_row put_bw -t put_bw -s 4096 -D zcopy
kill_row am_bw -t am_bw -s 4096 -D bcopy
sleep 0.5
softrdma_registry_empty "server killed: registry directory empty afterwards"
unset SOFTRDMA_SHM_DIR

# ---- a flush does not overtake a send waiting on the pending queue
# (c-tests/flush_pending.c, 80 endpoints, a send CQ of 64 entries: the
# 64th endpoint finds no CQ credit with nothing of its own in flight)
sides=LIBDIR
ref_has_verbs && sides="original LIBDIR"
flush_pending_case "$sides" UCX_RC_VERBS_TX_CQ_LEN=64 -- rc_verbs 80

# ---- figures side by side
FIG_ROWS='am_lat short 8|put_bw zcopy 65536|get zcopy 1048576'
if ref_has_verbs; then
    SOFTRDMA_ONLY="rc_verbs ($FIG_ROWS)\$" timeout -k 5 300 "$SR/rc-matrix.sh" "" "" > "$T_WORK/m-fig.txt" 2>&1
    corig="C original (now)"
else
    awk '/^## SOFTRDMA_MATRIX=rc /{on=1;next} /^## /{on=0} on' "$SR_EXPECTED" > "$T_WORK/m-fig.txt"
    corig="C original 1.13.1 (recorded, 10000 iterations)"
fi
echo "# figures, $SR_ITERS iterations, client/server (averages include scheduling stalls; compare medians):"
for row in "am_lat short 8" "put_bw zcopy 65536" "get zcopy 1048576"; do
    c=$(grep -m1 "^PASS rc_verbs $row |" "$T_WORK/m-fig.txt" | sed 's/.*| //')
    o=$(grep -m1 "^PASS rc_verbs $row |" "$T_WORK/m-ours.txt" | sed 's/.*| //')
    printf '#   %-18s %s: %s\n#   %-18s ours: %s\n' "$row" "$corig" "${c:--}" "" "${o:--}"
done
finish
