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
. "$here/lib/bad-input.sh"

softrdma_begin "$@"
softrdma_need_rc_verbs
need_c "$T_WORK/bad_input_rc" "$top/c-tests/bad_input_rc.c"
softrdma_shm_dir
BI_PROG=$T_WORK/bad_input_rc

# the failed case's CASE line
bi_fail_context() {
    { grep -F "CASE $1 " "$2" || grep -F "CASE ${1%: *} " "$2"; } |
        head -1 | sed 's/^/      /'
}

testing_original && lbl=original || lbl=ours
bad_input_table "$lbl" "$UCT_LIBDIR" "$T_WORK/ours.txt"
if ! testing_original; then
    bad_input_table "$lbl, direct registration" "$UCT_LIBDIR" "$T_WORK/ours-direct.txt" \
        UCX_IB_REG_METHODS=direct -- uct_md_
fi

# the original, and the statuses side by side
statuses() { # FILE: NAME|comp|errh of the operation cases
    sed -n 's/^CASE \(.*\) post=\(-*[0-9]*\) comp=\(-*[0-9]*\) errh=\(-*[0-9]*\/-*[0-9]*\),.*/\1|\3|\4/p' "$1" |
        grep -E 'garbage rkey|address below|range past|made-up QP' | sort
}
bi_same() { echo "completion $3, error handler $4"; }
bi_differ() { echo "ours completion $3, error handler $4; the original $1, $2"; }
if ! testing_original && ref_has_verbs; then
    bad_input_table "original" "" "$T_WORK/orig.txt"
    bad_input_compare "status as the original" statuses 2 "$T_WORK/orig.txt" "$T_WORK/ours.txt"
fi
softrdma_registry_empty "registry directory empty afterwards"
finish
