#!/usr/bin/env bash
# Bad input for the rc_verbs transport on the soft RDMA device
# (c-tests/bad_input_rc.c; every case in a forked child): garbage rkeys and
# addresses outside the registered region in put/get/atomics (the failure
# shows, nothing lands in the guard pages around the target), malformed
# device/ep addresses (placed right before an inaccessible page), a valid
# but longer device address (a peer with another path MTU), a QP number
# that does not exist, operations on an endpoint whose QP went to error,
# uct_md_mem_dereg/uct_md_mkey_pack of garbage or released handles.
#
# Our library runs in strict mode (the rules in the program's header); on
# the 1.13 build the C original runs the same table in the same run
# ("original" mode: recorded; a crash is accepted there, a write outside
# registered memory or a hang is not), and for the cases where both answer,
# the completion and error-handler statuses of ours must equal the
# original's. The handle cases run a second time with
# UCX_IB_REG_METHODS=direct (no registration cache).
#
# What the original (UCX 1.13.1) does, measured: a garbage rkey or an
# address outside the region: the operation is accepted, then completes with
# UCS_ERR_CONNECTION_RESET (-25) and the error handler gets -25 (remote
# access error; both QPs go to error); a made-up QP number: connect OK, the
# first operation fails with UCS_ERR_ENDPOINT_TIMEOUT (-80); unknown flag
# 0x80 in a device address: ignored (reachable, connect OK); the RoCE flag
# or flags promising fields past the address: it reads past the address
# (SIGSEGV at the page boundary); any operation on an endpoint after its
# error handler ran: assertion (SIGABRT: "QP state is 6"), pending_add
# UCS_ERR_BUSY, flush OK; uct_md_mem_dereg of garbage: SIGABRT; dereg twice
# and mkey_pack of garbage or released handles: UCS_OK.
# Usage: tests/bad-input-rc.sh [LIBDIR]   (or UCT_LIBDIR; empty = system library)
here=$(cd "$(dirname "$0")" && pwd)
top=$(dirname "$here")
. "$here/lib/common.sh"

resolve_libdir "$@"
if testing_original && [ "$UCX_ABI" != 1.13 ]; then
    skip_suite "the UCX $UCX_ABI reference has no verbs transports"
fi
make_workdir
. "$here/lib/softrdma.sh"
softrdma_setup
if ! lib_has_rc_verbs "$UCT_LIBDIR"; then
    skip_suite "the library under test lists no rc_verbs on the device (built without verbs?)"
fi
if build_c "$T_WORK/bad_input_rc" "$top/c-tests/bad_input_rc.c" 2>"$T_WORK/cc.log"; then
    pass "build bad_input_rc"
else
    cat "$T_WORK/cc.log"
    abort "build bad_input_rc"
fi
softrdma_shm_dir

# run LABEL LIBDIR-or-"" OUT [ENV...] [-- FILTER...]
run_table() {
    local label=$1 lib=$2 out=$3 st rest
    shift 3
    local envs=()
    while [ $# -gt 0 ] && [ "$1" != -- ]; do envs+=("$1"); shift; done
    [ "${1:-}" = -- ] && shift
    timeout -k 5 600 "$SR/run.sh" env $(lib_env "$lib") "${envs[@]}" "$T_WORK/bad_input_rc" "$@" > "$out" 2>&1
    local rc=$?
    grep -q '^[0-9]* passed, [0-9]* failed$' "$out" || fail "$label: bad_input_rc" "no summary (exit $rc)"
    while read -r st rest; do
        case $st in
            PASS) pass "$label: $rest" ;;
            FAIL) fail "$label: $rest"
                  { grep -F "CASE $rest " "$out" || grep -F "CASE ${rest%: *} " "$out"; } |
                      head -1 | sed 's/^/      /' ;;
        esac
    done < "$out"
}

testing_original && lbl=original || lbl=ours
run_table "$lbl" "$UCT_LIBDIR" "$T_WORK/ours.txt"
if ! testing_original; then
    run_table "$lbl, direct registration" "$UCT_LIBDIR" "$T_WORK/ours-direct.txt" \
        UCX_IB_REG_METHODS=direct -- uct_md_
fi

# the original, and the statuses side by side
statuses() { # FILE: NAME|comp|errh of the operation cases
    sed -n 's/^CASE \(.*\) post=\(-*[0-9]*\) comp=\(-*[0-9]*\) errh=\(-*[0-9]*\/-*[0-9]*\),.*/\1|\3|\4/p' "$1" |
        grep -E 'garbage rkey|address below|range past|made-up QP' | sort
}
if ! testing_original && ref_has_verbs; then
    run_table "original" "" "$T_WORK/orig.txt"
    join -t '|' <(statuses "$T_WORK/orig.txt") <(statuses "$T_WORK/ours.txt") > "$T_WORK/both.txt"
    n=0
    while IFS='|' read -r name oc oe uc ue; do
        n=$((n + 1))
        if [ "$oc" = "$uc" ] && [ "$oe" = "$ue" ]; then
            pass "status as the original: $name (completion $uc, error handler $ue)"
        else
            fail "status as the original: $name" "ours completion $uc, error handler $ue; the original $oc, $oe"
        fi
    done < "$T_WORK/both.txt"
    [ "$n" -gt 0 ] || fail "status as the original" "no case to compare"
fi
if shm_dir_empty; then
    pass "registry directory empty afterwards"
else
    fail "registry directory empty afterwards" "$(ls -A "$SOFTRDMA_SHM_DIR" | tr '\n' ' ')"
fi
finish
