#!/usr/bin/env bash
# A hostile UD peer against the ud_verbs transport on the soft RDMA device
# (c-tests/bad_input_ud.c; every case in a forked child): a raw verbs UD QP
# learns the victim iface's address (QP number from its 3-byte iface
# address, LID from the port) and sends it forged datagrams: runts shorter
# than the 8-byte neth; a neth for unknown ep ids; connection requests that
# are cut short (8 bytes: the neth only; 12..50 bytes) or whose device
# address has unknown / RoCE / GID flags; a control packet of an unknown
# type (to the null id, to a live ep); a connection reply with a wrong
# source id to a connected ep, and one to an ep that never sent a request;
# psns far out of the window; ack_psn beyond what the ep sent; AM ids
# without a handler; put emulation packets (the original: only address 0
# with length 0 -- it writes the payload where the datagram says; ours in
# addition: a canary word of the process, an unmapped page, address 0x10);
# duplicated and replayed packets; a flood of 300 connection requests with
# different conn_sn (one replayed). After each case the victim must still
# work: an AM round trip with its legitimate peer on the existing endpoint
# pair, on a new pair, and over a new connect-to-iface endpoint, every byte
# checked.
#
# A/B: the C original runs the table first ("original" mode: a crash is
# recorded and accepted, a hang fails); then LIBDIR ("strict": no crash, no
# hang, all round trips ok, the case rules of the program's header), and
# for the cases the original survived the number of forged AMs delivered to
# the handler must equal the original's. LIBDIR without ud_verbs: every
# case fails its setup (no skip).
#
# What the original (UCX 1.13.1) does, measured on the soft device: it
# survives runts, unknown ep ids, connection requests cut to 12..50 bytes
# (it answers them: it reads the rest of the header and the device address
# from whatever the receive buffer held before), device-address flags 0x80
# and 0x40 (ignored), a reply to an ep that sent no request (ids equal),
# far-out psns (dropped), AM ids without a handler (a warning with a
# backtrace per packet), a PUT to address 0 of length 0, duplicates and
# replays (dropped; each new psn delivered once), the request flood (an ep
# and a reply per conn_sn). It aborts (SIGABRT, assertion) on: a request of
# 8 bytes ("ctl->type == CREQ" on the stale buffer), device-address flag
# 0x10 (GID interface id 0), 0x08 and 0xff (the RoCE flag on an IB port),
# a control packet of unknown type (to the null id and to a live ep), a
# reply with a wrong source id to a connected ep, an ack_psn beyond the
# ep's psn. Ours must survive all of them.
# Usage: tests/bad-input-ud.sh [LIBDIR]   (or UCT_LIBDIR; empty = system library)
here=$(cd "$(dirname "$0")" && pwd)
top=$(dirname "$here")
. "$here/lib/bad-input.sh"

softrdma_begin "$@"
need_c -h "(needs libibverbs-dev)" "$T_WORK/bad_input_ud" "$top/c-tests/bad_input_ud.c" -libverbs
softrdma_shm_dir
BI_PROG=$T_WORK/bad_input_ud
BI_SHOW='^# mode'

# what the failed case printed before its verdict
bi_fail_context() {
    awk -v want="FAIL  $1" '$0 == want { printf "%s", blk; exit }
        /^(PASS|FAIL)  / { blk = ""; next }
        /^(CASE|SETUP|# step|# crash)/ { blk = blk "      " $0 "\n" }' "$2"
}
# delivered FILE: "case name|delivered" of the cases that printed a verdict
delivered() {
    sed -n 's/^CASE \(.*\) rt=[a-zA-Z]* fresh=.* delivered=\([0-9]*\) .*/\1|\2/p' "$1" | sort
}
bi_same() { echo "forged AMs delivered: $2"; }
bi_differ() { echo "ours delivered $2 forged AMs, the original $1"; }

if ! ref_has_verbs; then
    # the reference of this release has no verbs transports: ours alone, every
    # case judged strictly (the victim survives and keeps working)
    echo "# the UCX $UCX_ABI reference has no verbs transports: our library alone"
    bad_input_table "ours" "$UCT_LIBDIR" "$T_WORK/ours.txt" UCT_SYSTEM_LIB="$UCT_SYSTEM_LIB"
else
    bad_input_table "original" "" "$T_WORK/orig.txt" UCT_SYSTEM_LIB="$UCT_SYSTEM_LIB"
    sed -n 's/^\(# crash: .*\)$/\1/p; s/^PASS  \(.*\): the original crashed.*$/# the original crashes: \1/p' "$T_WORK/orig.txt"
fi
if ref_has_verbs && [ -n "$UCT_LIBDIR" ] && ! testing_original; then
    bad_input_table "ours" "$UCT_LIBDIR" "$T_WORK/ours.txt" UCT_SYSTEM_LIB="$UCT_SYSTEM_LIB"
    bad_input_compare "as the original" delivered 1 "$T_WORK/orig.txt" "$T_WORK/ours.txt"
fi
softrdma_registry_empty "registry directory empty afterwards"
finish
