#!/usr/bin/env bash
# The soft RDMA device's own proof (tests/softrdma/), before anything of ours
# runs on it:
#  - build.sh: the provider, the shim and the ABI probe (the 76 context op
#    slots match the installed libibverbs);
#  - verbs-test (one process, 25 checks) and xproc-test (34 checks across
#    two processes, fork mode): every check ok;
#  - as root with `ip netns`, the device's user-space RDMA CM
#    (rdmacm-test.sh: its four parts, on InfiniBand and RoCE ports, within
#    one namespace and across two, killed peers included);
#  - where the reference UCX has verbs (Debian's 1.13.1; the 1.18.1 wheel
#    has none): the C original's one-process ucx_perftest rows
#    (perftest-loopback.sh), its client/server rc_verbs matrix (rc-matrix.sh,
#    SOFTRDMA_ITERS=2000) with every row's status equal to the checked-in
#    expected/rc-matrix.c-original.txt, and, as root with `ip netns`,
#    netns-test.sh (xproc-test and perftest rows across two namespaces).
# The library directory is not used (the device is tested with the C
# original); it is accepted so that the suite runs like the others.
# Usage: tests/softrdma-device.sh [LIBDIR]
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib/common.sh"

resolve_libdir "$@" >/dev/null
make_workdir
. "$here/lib/softrdma.sh"
SR_ITERS=${SR_ITERS:-2000}

export SOFTRDMA_BUILD=$T_WORK/softrdma
if "$SR/build.sh" > "$T_WORK/build.log" 2>&1; then
    pass "build.sh: $(grep '^abi-probe:' "$T_WORK/build.log")"
else
    tail -20 "$T_WORK/build.log"
    # no compiler or no libibverbs-dev: nothing here can run
    if ! command -v gcc >/dev/null || [ ! -e /usr/include/infiniband/verbs.h ]; then
        skip_suite "cannot build the soft RDMA device (gcc, libibverbs-dev)"
    fi
    abort "build.sh"
fi
softrdma_setup
softrdma_shm_dir   # for verbs-test; the other scripts make their own

# tap NAME WANT FILE: a TAP output with WANT checks, all ok
tap() {
    local name=$1 want=$2 file=$3 ok bad plan
    ok=$(grep -c '^ok ' "$file")
    bad=$(grep -c '^not ok ' "$file")
    plan=$(sed -n 's/^1\.\.\([0-9]*\)$/\1/p' "$file" | tail -n 1)
    if [ "$4" = 0 ] && [ "$bad" = 0 ] && [ "$ok" = "$want" ] && [ "$plan" = "$want" ]; then
        pass "$name: $ok/$want ok"
    else
        grep -E '^not ok|rror' "$file" | head -5
        fail "$name" "exit $4, $ok ok, $bad not ok, plan ${plan:-none} (want $want)"
    fi
}

timeout -k 5 120 "$SR/run.sh" "$SOFTRDMA_BUILD/verbs-test" > "$T_WORK/verbs.txt" 2>&1
tap "verbs-test (one process)" 25 "$T_WORK/verbs.txt" $?
if shm_dir_empty; then
    pass "verbs-test: registry directory empty afterwards"
else
    fail "verbs-test: registry directory empty afterwards" "$(ls -A "$SOFTRDMA_SHM_DIR" | tr '\n' ' ')"
fi
# the forking xproc-test makes a private registry directory of its own and
# checks (its 34th check) that the last user removed the segment
unset SOFTRDMA_SHM_DIR
timeout -k 5 120 "$SR/run.sh" "$SOFTRDMA_BUILD/xproc-test" > "$T_WORK/xproc.txt" 2>&1
tap "xproc-test (two processes, fork)" 34 "$T_WORK/xproc.txt" $?

if netns_usable "rdmacm-test.sh not run"; then
    timeout -k 5 300 "$SR/rdmacm-test.sh" > "$T_WORK/rdmacm.txt" 2>&1
    crc=$?
    while read -r st rest; do
        case $st in
            PASS) pass "RDMA CM: $rest" ;;
            FAIL) fail "RDMA CM: $rest" ;;
        esac
    done < <(grep -E '^(PASS|FAIL) ' "$T_WORK/rdmacm.txt")
    [ "$crc" = 0 ] || fail "rdmacm-test.sh exit status" "$crc: $(grep -m 3 '^not ok' "$T_WORK/rdmacm.txt" | tr '\n' ' ')"
fi

if ! ref_has_verbs; then
    echo "# UCX $UCX_ABI reference: no verbs transports, the C original's rows are not run"
    finish
fi

# ---- the C original on the device
SOFTRDMA_ITERS=$((SR_ITERS * 2)) timeout -k 5 900 "$SR/perftest-loopback.sh" > "$T_WORK/loop.txt" 2>&1
lrc=$?
n=0
while read -r st rest; do
    case $st in
        PASS) pass "original, one process: ${rest%% |*}"; n=$((n + 1)) ;;
        FAIL) fail "original, one process: $rest"; n=$((n + 1)) ;;
    esac
done < "$T_WORK/loop.txt"
[ "$n" -eq 22 ] || fail "original, one process" "$n rows, 22 expected (exit $lrc)"

SOFTRDMA_ITERS=$SR_ITERS SOFTRDMA_MATRIX=rc timeout -k 5 900 "$SR/rc-matrix.sh" > "$T_WORK/matrix.txt" 2>&1
judge_matrix "$T_WORK/matrix.txt" rc "original client/server"

if netns_usable "netns-test.sh not run"; then
    SOFTRDMA_ITERS=$SR_ITERS timeout -k 5 600 "$SR/netns-test.sh" > "$T_WORK/netns.txt" 2>&1
    nrc=$?
    ok=$(grep -c '^ok ' "$T_WORK/netns.txt")
    bad=$(grep -c '^not ok ' "$T_WORK/netns.txt")
    if [ "$bad" = 0 ] && [ "$ok" -ge 33 ]; then
        pass "netns: xproc-test across two namespaces, $ok ok"
    else
        fail "netns: xproc-test across two namespaces" "$ok ok, $bad not ok"
    fi
    grep -E '^(PASS|FAIL|UNSUP) ' "$T_WORK/netns.txt" > "$T_WORK/netns-rows.txt"
    judge_matrix "$T_WORK/netns-rows.txt" rc "original across namespaces"
    [ "$nrc" = 0 ] || fail "netns-test.sh exit status" "$nrc"
fi
finish
