#!/usr/bin/env bash
# ucx_info against LIBDIR's libuct.so.0:
#  - "ucx_info -v" runs and reports the release under test (1.13.1;
#    $UCX_RELEASE with UCX_PREFIX);
#  - "ucx_info -d" runs, lists "Memory domain: self" with "Component: self",
#    "Transport: self" and "Device: memory0" (1.18: "memory"; type
#    loopback), and the whole self block reads exactly as it does on the C
#    original of that release;
#  - "ucx_info -c" lists UCX_SELF_SEG_SIZE=8K;
#  - with LIBDIR: "ucx_info -e" (libucp's endpoint configuration: lanes and
#    protocol thresholds) identical to the original's, see below.
# Usage: tests/ucx-info.sh [LIBDIR]   (or UCT_LIBDIR; empty = system library)
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib/common.sh"

resolve_libdir "$@"
need_ucx_info
make_workdir

# The self memory-domain block of "ucx_info -d": on Debian 12's UCX 1.13.1,
# and on 1.18.1 (the rkey_ptr and memory-types lines, the device name and
# the bandwidth differ).
expected_self_block() {
    case $UCX_RELEASE in
        1.13.1) expected_self_block_1_13 ;;
        1.18.1) expected_self_block_1_18 ;;
        *) echo "(no reference self block for UCX $UCX_RELEASE)" ;;
    esac
}
expected_self_block_1_18() {
    expected_self_block_1_13 | awk '
        /^#           remote key:/ { print; print "#           rkey_ptr is supported"
                                     print "#         memory types: host (access,reg_nonblock,reg,cache)"; next }
        /^#         Device: memory0$/ { print "#         Device: memory"; next }
        /^#            bandwidth:/ { print "#            bandwidth: 0.00/ppn + 19360.00 MB/sec"; next }
        { print }'
}
expected_self_block_1_13() {
    cat <<'BLOCK'
# Memory domain: self
#     Component: self
#             register: unlimited, cost: 0 nsec
#           remote key: 0 bytes
#
#      Transport: self
#         Device: memory0
#           Type: loopback
#  System device: <unknown>
#
#      capabilities:
#            bandwidth: 0.00/ppn + 6911.00 MB/sec
#              latency: 0 nsec
#             overhead: 10 nsec
#            put_short: <= 4294967295
#            put_bcopy: unlimited
#            get_bcopy: unlimited
#             am_short: <= 8K
#             am_bcopy: <= 8K
#               domain: cpu
#           atomic_add: 32, 64 bit
#           atomic_and: 32, 64 bit
#            atomic_or: 32, 64 bit
#           atomic_xor: 32, 64 bit
#          atomic_fadd: 32, 64 bit
#          atomic_fand: 32, 64 bit
#           atomic_for: 32, 64 bit
#          atomic_fxor: 32, 64 bit
#          atomic_swap: 32, 64 bit
#         atomic_cswap: 32, 64 bit
#           connection: to iface
#      device priority: 0
#     device num paths: 1
#              max eps: inf
#       device address: 0 bytes
#        iface address: 8 bytes
#       error handling: ep_check
BLOCK
}

# ucx_info -v
"${RUN[@]}" timeout 60 ucx_info -v >"$T_WORK/v.out" 2>&1
rc=$?
if [ $rc -eq 0 ] && grep -qE "^# (Version|Library version:) ${UCX_RELEASE//./\\.}\$" "$T_WORK/v.out"; then
    pass "ucx_info -v reports version $UCX_RELEASE"
else
    head -n 3 "$T_WORK/v.out"
    fail "ucx_info -v" "exit status $rc"
fi

# ucx_info -d
"${RUN[@]}" timeout 60 ucx_info -d >"$T_WORK/d.out" 2>&1
rc=$?
if [ $rc -eq 0 ]; then
    pass "ucx_info -d exits with 0"
else
    fail "ucx_info -d" "exit status $rc"
fi

# The lines from "# Memory domain: self" up to the next top-level entry,
# without the trailing empty "#" lines.
awk '/^# (Memory domain|Connection manager): |^# </ { inblk = ($0 == "# Memory domain: self") }
     inblk' "$T_WORK/d.out" >"$T_WORK/self.txt"
while [ -s "$T_WORK/self.txt" ] && tail -n 1 "$T_WORK/self.txt" | grep -qx '#[[:space:]]*'; do
    sed -i '$d' "$T_WORK/self.txt"
done

if [ -s "$T_WORK/self.txt" ]; then
    pass "ucx_info -d lists Memory domain: self"
else
    fail "ucx_info -d lists Memory domain: self"
fi
for want in '#     Component: self' '#      Transport: self' \
            "#         Device: $UCT_SELF_DEV" '#           Type: loopback'; do
    if grep -qxF -- "$want" "$T_WORK/self.txt"; then
        pass "self block has '${want#\#}'"
    else
        fail "self block has '${want#\#}'"
    fi
done
expected_self_block >"$T_WORK/self.want"
if diff -u "$T_WORK/self.want" "$T_WORK/self.txt" >"$T_WORK/self.diff"; then
    pass "self block identical to the original's ($(wc -l <"$T_WORK/self.want") lines)"
else
    cat "$T_WORK/self.diff"
    fail "self block identical to the original's"
fi

# ucx_info -c
"${RUN[@]}" timeout 60 ucx_info -c >"$T_WORK/c.out" 2>&1
rc=$?
if [ $rc -eq 0 ] && grep -qx 'UCX_SELF_SEG_SIZE=8K' "$T_WORK/c.out"; then
    pass "ucx_info -c lists UCX_SELF_SEG_SIZE=8K"
else
    grep 'UCX_SELF' "$T_WORK/c.out"
    fail "ucx_info -c lists UCX_SELF_SEG_SIZE=8K" "exit status $rc"
fi

# ucx_info -e: the endpoint configuration libucp builds from what the
# transports report (lanes, and the short/bcopy/zcopy/rendezvous
# thresholds of every protocol) must be the original's, for every feature
# set, device filter and peer placement below.  The one expected
# difference is this project's zero-copy put/get on posix and sysv
# (README): libucp then lists "<zcopy>" where the original lists "<bcopy>"
# on the put[N]/get[N] lines of the RMA lanes, which are masked.  Our
# posix_get device (a rendezvous lane only two libraries of ours share,
# README) is left out of these comparisons (UCX_SHM_DEVICES=memory: the
# original's devices); the check after them looks for it.
if [ -n "$UCT_LIBDIR" ]; then
    mask_ep_config() {
        sed -E 's/^\[[0-9.]+\] *\[[^]]*\] */[-] /; /^# +(put|get)\[[0-9]+\]:/s/<zcopy>/<bcopy>/' "$1"
    }
    for opts in "-u t" "-u t -D shm" "-u t -D net" "-u tarm -P intra" "-u tarm -P inter" \
                "-u tswe -P intra" "-u am -P intra -D shm" "-u twe -P intra" "-u tarmswe -P intra -D shm" \
                "-u r -P intra -D self"; do
        # shellcheck disable=SC2086 # a list of options
        "${SYS_RUN[@]}" timeout 60 ucx_info -e $opts >"$T_WORK/e.sys" 2>&1
        rc_sys=$?
        # shellcheck disable=SC2086
        "${RUN[@]}" env UCX_SHM_DEVICES=memory timeout 60 ucx_info -e $opts >"$T_WORK/e.ours" 2>&1
        rc=$?
        mask_ep_config "$T_WORK/e.sys" >"$T_WORK/e.sys.m"
        mask_ep_config "$T_WORK/e.ours" >"$T_WORK/e.ours.m"
        if [ "$rc" != "$rc_sys" ]; then
            fail "ucx_info -e $opts" "exit status $rc, the original's $rc_sys"
        elif ! grep -q 'UCP endpoint\|no active messages' "$T_WORK/e.sys.m"; then
            fail "ucx_info -e $opts" "the original printed no endpoint configuration"
        else
            diff_verdict "$T_WORK/e.sys.m" "$T_WORK/e.ours.m" \
                "ucx_info -e $opts: endpoint configuration identical to the original's" \
                "ucx_info -e $opts" "differs from the original:" 30
        fi
    done
    # With the posix_get device, over posix alone, libucp makes it the
    # rendezvous lane (rma_bw) between two of ours; the original has no
    # such lane.
    UCX_TLS=posix,self "${RUN[@]}" timeout 60 ucx_info -e -u t -P intra >"$T_WORK/pg.ours" 2>&1
    UCX_TLS=posix,self "${SYS_RUN[@]}" timeout 60 ucx_info -e -u t -P intra >"$T_WORK/pg.sys" 2>&1
    if grep -q 'posix/memory_get.*posix_get.* rma_bw' "$T_WORK/pg.ours" &&
       ! grep -q 'rma_bw#' "$T_WORK/pg.sys"; then
        pass "ucx_info -e -u t -P intra over posix,self: posix_get is the rendezvous lane (the original has none)"
    else
        sed 's/^/      /' "$T_WORK/pg.ours"
        fail "ucx_info -e -u t -P intra over posix,self" "no posix_get rendezvous lane"
    fi
fi

finish
