#!/usr/bin/env bash
# The `ib` and `rdmacm` components, A/B against the reference library in the
# same run:
#  - without an RDMA device (the machine as it is): `ucx_info -d` lists the
#    same memory domains and connection managers, in the same order, as the
#    original: no ib md, and the one line "< failed to open connection
#    manager rdmacm >" where the original prints it;
#  - with the soft RDMA device (tests/softrdma/run.sh; one and two devices):
#    the same md names in the same order, and each md block (up to its
#    first transport) identical to the original's.
# The UCX 1.18 reference (the PyPI wheel) is built without verbs: there only
# our library is checked (its md block against the 1.13.1 lines it shares).
# Usage: tests/ib-md.sh [LIBDIR]   (or UCT_LIBDIR; empty = system library)
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib/common.sh"

resolve_libdir "$@"
need_ib_lib "$UCT_LIBDIR"
need_ucx_info
make_workdir
UCX_INFO=ucx_info
[ -n "$UCX_PREFIX" ] && UCX_INFO=$UCX_PREFIX/bin/ucx_info
if testing_original; then
    skip_suite "compares our library with the original: give LIBDIR"
fi
ref_has_ib=1
ref_has_verbs || ref_has_ib=0

# The outline of `ucx_info -d`: md and component lines, CM lines.
outline() {
    # (posix_get: our rendezvous lane for two libraries of ours, README)
    grep -E '^# (Memory domain:|    Component:|< failed to open connection manager|Connection manager:)' "$1" |
        grep -vE '^# (Memory domain|    Component): posix_get$'
}

# ---- without a device
if [ -e /sys/class/infiniband ] && [ -n "$(ls /sys/class/infiniband 2>/dev/null)" ]; then
    echo "# this machine has RDMA devices: the no-device case is not checked"
else
    "${RUN[@]}" "$UCX_INFO" -d > "$T_WORK/ours.txt" 2>&1 || fail "ucx_info -d (ours) runs"
    if [ "$ref_has_ib" = 1 ]; then
        env $(lib_env "") "$UCX_INFO" -d > "$T_WORK/orig.txt" 2>&1 || fail "ucx_info -d (original) runs"
        if diff <(outline "$T_WORK/orig.txt") <(outline "$T_WORK/ours.txt") > "$T_WORK/d.txt"; then
            pass "no device: same mds and connection managers as the original"
        else
            cat "$T_WORK/d.txt"
            fail "no device: same mds and connection managers as the original"
        fi
    fi
    if ! grep -q '^#     Component: ib$' "$T_WORK/ours.txt" &&
       grep -q '^# < failed to open connection manager rdmacm >$' "$T_WORK/ours.txt"; then
        pass "no device: no ib md, the rdmacm CM fails to open"
    else
        fail "no device: no ib md, the rdmacm CM fails to open"
    fi
    if grep -q 'UCX  *\(ERROR\|WARN\)' "$T_WORK/ours.txt"; then
        grep 'UCX  *\(ERROR\|WARN\)' "$T_WORK/ours.txt" | head -5
        fail "no device: no error or warning printed"
    else
        pass "no device: no error or warning printed"
    fi
fi

# ---- with the soft device
export SOFTRDMA_BUILD=$T_WORK/softrdma
if ! "$here/softrdma/run.sh" true > "$T_WORK/softrdma.log" 2>&1; then
    tail -5 "$T_WORK/softrdma.log"
    echo "# the soft RDMA device cannot run here: the device cases are not checked"
    finish
fi

# md_block FILE MD: the block of memory domain MD, up to its first transport.
md_block() {
    awk -v md="$2" '
        $0 == "# Memory domain: " md { on = 1 }
        on && /^#      Transport:/ { exit }
        on && /^#   < no supported devices found >/ { exit }
        on && /^# (Memory domain:|< failed)/ && $0 != "# Memory domain: " md { exit }
        on { print }' "$1"
}

for ndev in 1 2; do
    SOFTRDMA_NDEV=$ndev "$here/softrdma/run.sh" "${RUN[@]}" "$UCX_INFO" -d > "$T_WORK/ours$ndev.txt" 2>&1 ||
        fail "$ndev device(s): ucx_info -d (ours) runs"
    mds=$(grep -c '^#     Component: ib$' "$T_WORK/ours$ndev.txt")
    if [ "$mds" = "$ndev" ]; then
        pass "$ndev device(s): $ndev ib md(s) listed"
    else
        fail "$ndev device(s): $ndev ib md(s) listed" "got $mds"
    fi
    if [ "$ref_has_ib" = 1 ]; then
        SOFTRDMA_NDEV=$ndev "$here/softrdma/run.sh" env $(lib_env "") "$UCX_INFO" -d > "$T_WORK/orig$ndev.txt" 2>&1 ||
            fail "$ndev device(s): ucx_info -d (original) runs"
        if diff <(outline "$T_WORK/orig$ndev.txt") <(outline "$T_WORK/ours$ndev.txt") > "$T_WORK/d.txt"; then
            pass "$ndev device(s): same mds and connection managers as the original"
        else
            cat "$T_WORK/d.txt"
            fail "$ndev device(s): same mds and connection managers as the original"
        fi
        i=0
        while [ "$i" -lt "$ndev" ]; do
            md_block "$T_WORK/ours$ndev.txt" "softrdma$i" > "$T_WORK/block.txt"
            if diff <(md_block "$T_WORK/orig$ndev.txt" "softrdma$i") "$T_WORK/block.txt" > "$T_WORK/d.txt" &&
               [ -s "$T_WORK/block.txt" ]; then
                pass "$ndev device(s): md block of softrdma$i identical to the original's"
            else
                cat "$T_WORK/d.txt"
                fail "$ndev device(s): md block of softrdma$i identical to the original's"
            fi
            i=$((i + 1))
        done
    else
        block=$(md_block "$T_WORK/ours$ndev.txt" softrdma0)
        if grep -q '^#           remote key: 8 bytes$' <<<"$block" &&
           grep -q '^#           local memory handle is required for zcopy$' <<<"$block"; then
            pass "$ndev device(s): md block of softrdma0 (8-byte keys, memh needed)"
        else
            printf '%s\n' "$block"
            fail "$ndev device(s): md block of softrdma0 (8-byte keys, memh needed)"
        fi
    fi
done
finish
