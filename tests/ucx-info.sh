#!/usr/bin/env bash
# ucx_info against LIBDIR's libuct.so.0, next to the C original of the UCX
# installation under test (any release, see tests/lib/common.sh):
#  - "ucx_info -v" runs and reports the release under test (1.13.1;
#    $UCX_RELEASE with UCX_PREFIX);
#  - "ucx_info -d" runs, lists "Memory domain: self" with "Component: self",
#    "Transport: self" and "Device: memory0" (1.14+: "memory"; type
#    loopback), and its whole output reads as the original's, but for the
#    documented differences (mask_devices below);
#  - "ucx_info -c" lists UCX_SELF_SEG_SIZE=8K, and with LIBDIR the settings
#    of our components are the original's but for our own keys;
#  - with LIBDIR: "ucx_info -e" (libucp's endpoint configuration: lanes and
#    protocol thresholds) identical to the original's, see below.
# Usage: tests/ucx-info.sh [LIBDIR]   (or UCT_LIBDIR; empty = system library)
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib/common.sh"

resolve_libdir "$@"
need_ucx_info
make_workdir

# "ucx_info -d" of ours and of the original of the installation under test
# (the live C libuct of that release), both put through mask_devices, must
# be identical. mask_devices removes what differs on purpose or by chance
# only, nothing else:
#  - the "Memory domain: posix_get" block: a device only ours has (README);
#  - "< failed to open connection manager rdmacm >": ours always has the
#    rdmacm component, the PyPI wheels ship no rdmacm module; without an
#    RDMA device the component prints only this line;
#  - UCX 1.13-1.15 only: the zero-copy operations ours adds to posix and
#    sysv (docs/releases.md): their put/get/am zcopy lines, and "reg" among
#    the memory types (they register host memory for them);
#  - the number after posix's "allocate: <=": the free space of the
#    shared-memory directory at the moment each ran (computed the same way);
#  - lines that are just "#" (the blocks' spacing, which the removals
#    above change).
mask_devices() {
    awk -v zcopy_extra="$1" '
        /^# (Memory domain|Connection manager): |^# < / {
            md = ""
            if ($0 ~ /^# Memory domain: /) { md = $0; sub(/^# Memory domain: /, "", md) }
        }
        md == "posix_get" { next }
        $0 == "# < failed to open connection manager rdmacm >" { next }
        /^#[[:space:]]*$/ { next }
        zcopy_extra && (md == "posix" || md == "sysv") {
            if ($0 ~ /^# +(put|get|am)_(zcopy|opt_zcopy_align|align_mtu): / || $0 ~ /^# +am header: /) next
            if ($0 ~ /^# +memory types: /) sub(/,reg,/, ",")
        }
        md == "posix" && /^# +allocate: <= [0-9]+K?$/ { sub(/<= [0-9]+K?$/, "<= (free space)") }
        { print }' "$2"
}
case $UCX_ABI in 1.13 | 1.14 | 1.15) zcopy_extra=1 ;; *) zcopy_extra=0 ;; esac

# ucx_info -v (a wheel's version, "1.14.1.post2", reports its UCX release)
ucx_version=${UCX_RELEASE%%.post*}
"${RUN[@]}" timeout 60 ucx_info -v >"$T_WORK/v.out" 2>&1
rc=$?
if [ $rc -eq 0 ] && grep -qE "^# (Version|Library version:) ${ucx_version//./\\.}\$" "$T_WORK/v.out"; then
    pass "ucx_info -v reports version $ucx_version"
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
"${SYS_RUN[@]}" timeout 60 ucx_info -d >"$T_WORK/d.sys" 2>&1
rc_sys=$?
mask_devices "$zcopy_extra" "$T_WORK/d.sys" >"$T_WORK/d.sys.m"
mask_devices "$zcopy_extra" "$T_WORK/d.out" >"$T_WORK/d.ours.m"
if [ $rc_sys -ne 0 ] || ! grep -q '^# Memory domain: self$' "$T_WORK/d.sys.m"; then
    fail "ucx_info -d of the original" "exit status $rc_sys, or no self memory domain"
else
    diff_verdict "$T_WORK/d.sys.m" "$T_WORK/d.ours.m" \
        "ucx_info -d identical to the original's ($(wc -l <"$T_WORK/d.sys.m") lines compared)" \
        "ucx_info -d" "differs from the original:" 40
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

# "ucx_info -c": the settings of our components (their names and default
# values) must be the original's, compared as sets (the order of the
# tables differs with the order the libraries register them). Left out:
#  - the keys only ours has (docs/releases.md): UCX_POSIX_GET_*,
#    UCX_CMA_SPLIT_MIN and six UCX_TCP_* keys;
#  - a component's table the original does not list at all (the PyPI
#    wheels ship no ib module: no UCX_IB_*, UCX_RC_VERBS_*, UCX_UD_VERBS_*).
if [ -n "$UCT_LIBDIR" ]; then
    own_keys() {
        local prefixes=$1
        grep -E "^UCX_(${prefixes})_[A-Z0-9_]+=" "$2" |
            grep -vE '^UCX_(POSIX_GET_[A-Z0-9_]+|CMA_SPLIT_MIN|TCP_(TX_COALESCE|TX_COALESCE_TIMEOUT|HANDSHAKE_TIMEOUT|CM_HANDSHAKE_TIMEOUT|LOCAL_CC|RX_DESC_MIN))=' |
            LC_ALL=C sort
    }
    "${SYS_RUN[@]}" timeout 60 ucx_info -c >"$T_WORK/c.sys" 2>&1
    prefixes=
    for p in SELF TCP POSIX SYSV CMA IB RC_VERBS UD_VERBS; do
        grep -q "^UCX_${p}_" "$T_WORK/c.sys" && prefixes=${prefixes:+$prefixes|}$p
    done
    own_keys "$prefixes" "$T_WORK/c.sys" >"$T_WORK/c.sys.m"
    own_keys "$prefixes" "$T_WORK/c.out" >"$T_WORK/c.ours.m"
    if [ ! -s "$T_WORK/c.sys.m" ]; then
        fail "ucx_info -c of the original" "none of our components' settings listed"
    else
        diff_verdict "$T_WORK/c.sys.m" "$T_WORK/c.ours.m" \
            "ucx_info -c: the settings of ${prefixes//|/, } identical to the original's ($(wc -l <"$T_WORK/c.sys.m") keys)" \
            "ucx_info -c" "differs from the original:" 30
    fi
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
    # The reason after "no active messages transport to ...: self/memory -"
    # is the last one a transport gave: with the PyPI wheels of 1.20+ that
    # is their cuda_copy module's ("iface mismatch"), which ours does not
    # have; it is masked too.
    mask_ep_config() {
        sed -E 's/^\[[0-9.]+\] *\[[^]]*\] */[-] /; /^# +(put|get)\[[0-9]+\]:/s/<zcopy>/<bcopy>/
                s/(no active messages transport to .*: self\/memory - ).*/\1(reason)/' "$1"
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
