#!/usr/bin/env bash
# RoCE between two hosts: two network namespaces joined by a veth pair whose
# ends are both called roce0 (IPv4 10.83.N.1/24 and .2/24, IPv6
# fd83:0:N::1/64 and ::2, MTU 1500), each with the soft RDMA device's one
# RoCE port on it (tests/softrdma/run.sh, SOFTRDMA_LINK_LAYERS=eth,
# SOFTRDMA_NETDEVS=roce0): GID table 0 link-local RoCE v1, 1 the same as v2,
# 2 IPv4 v1, 3 IPv4 v2, 4 IPv6 v1, 5 IPv6 v2, each naming roce0; active MTU
# 1024 (the interface's 1500 less the headers), so device addresses carry
# the path MTU.
#  - the device: ibv_devinfo -v in the first host shows that table;
#  - `ucx_info -d` in the first host: rc_verbs and ud_verbs on softrdma0:1,
#    LIBDIR's md block the original's (where the reference has verbs), and
#    both choose GID index 3 (RoCE v2 over IPv4) by default;
#  - ucx_perftest across the two hosts (tests/softrdma/rc-matrix.sh with
#    SOFTRDMA_NETNS): rc_verbs am_lat, put_bw and get zcopy 64 KiB, ud_verbs
#    am_lat and am_bw (bcopy 8 B, zcopy 4 KiB: beyond the 1 KiB MTU, so not
#    supported by either), for each GID choice (auto; UCX_IB_GID_INDEX 0, 1, 2
#    and 5: RoCE v1 and v2, link-local, IPv4 and IPv6), original/original
#    first, then LIBDIR/LIBDIR and mixed both ways: every row LIBDIR runs
#    passes exactly where the original's passes (where the reference has no
#    verbs, LIBDIR/LIBDIR rows must all pass); the full tier runs, with
#    GID auto, the whole rc and ud matrices, uct_hello_world (1.13) and the
#    UCP rows (tag_lat/tag_bw over rc_verbs,ud_verbs and rc_verbs,tcp);
#  - peers of another kind: a RoCE v2 server and a v1 client, and v2 over
#    IPv4 against v2 over IPv6 (rc_verbs am_lat): the run succeeds or fails
#    as the original's (where the reference has no verbs: succeeds up to
#    1.18, fails from 1.19, whose default reachability mode refuses both);
#  - a GID index with no entry (99): the interface does not open, with an
#    error line, in LIBDIR as in the original.
# Needs root (ip netns) and the soft device. The quick tier runs GID auto;
# the full tier every choice. The conformance tier (UCT_RS_CONFORMANCE_RUN)
# runs the quick one only for
# 1.19 (the first with reachability modes) and 1.22 (the latest route test
# and GID preferences); scripts/test-all.sh with UCT_RS_FULL naming a
# release runs it there in full.
# Usage: tests/roce.sh [LIBDIR]   (or UCT_LIBDIR; empty = the original)
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib/ucp-verbs.sh"

ab_begin "$@"
OURS=$UCT_LIBDIR
need_ib_lib "$OURS"
netns_usable "the RoCE hosts" || skip_suite "network namespaces are not available"
REF=0
ref_has_verbs && REF=1
if [ -z "$OURS" ] && [ "$REF" = 0 ]; then
    skip_suite "UCX $UCX_ABI: the reference has no verbs transports"
fi
[ "$REF" = 0 ] && echo "# UCX $UCX_ABI: the reference has no verbs transports; LIBDIR alone"
CONFORMANCE=${UCT_RS_CONFORMANCE_RUN:-}
if [ -n "$CONFORMANCE" ]; then
    case " 1.19 1.22 " in
        *" $UCX_ABI "*) ;;
        *) skip_suite "UCX $UCX_ABI: left to the full tier (the conformance tier runs 1.19 and 1.22)" ;;
    esac
fi
softrdma_setup
softrdma_shm_dir
UCX_INFO=$(ucx_tool ucx_info)

# ---- the two hosts
NA=sroa$$ NB=srob$$
NET=$((RANDOM % 200 + 20))
del_ns() {
    ip netns del "$NA" 2>/dev/null
    ip netns del "$NB" 2>/dev/null
}
trap 'del_ns; cleanup_workdir; for d in $T_SHM_DIRS; do rm -rf "$d"; done' EXIT
if ip netns add "$NA" && ip netns add "$NB" &&
   ip link add "ra$$" type veth peer name "rb$$" &&
   ip link set "ra$$" netns "$NA" && ip link set "rb$$" netns "$NB" &&
   ip -n "$NA" link set "ra$$" name roce0 && ip -n "$NB" link set "rb$$" name roce0 &&
   ip -n "$NA" addr add "10.83.$NET.1/24" dev roce0 && ip -n "$NB" addr add "10.83.$NET.2/24" dev roce0 &&
   ip -n "$NA" addr add "fd83:0:$NET::1/64" dev roce0 nodad &&
   ip -n "$NB" addr add "fd83:0:$NET::2/64" dev roce0 nodad &&
   ip -n "$NA" link set lo up && ip -n "$NB" link set lo up &&
   ip -n "$NA" link set roce0 up && ip -n "$NB" link set roce0 up; then
    pass "two hosts: $NA (10.83.$NET.1) and $NB (10.83.$NET.2), roce0 each"
else
    abort "two hosts" "cannot set up the network namespaces"
fi
# the link-local addresses come with the link (no duplicate detection on veth
# takes a moment): wait for both
for ns in "$NA" "$NB"; do
    for _ in $(seq 50); do
        ip -n "$ns" -6 addr show dev roce0 scope link | grep -q 'inet6 fe80' && break
        sleep 0.1
    done
done
export SOFTRDMA_LINK_LAYERS=eth SOFTRDMA_NETDEVS=roce0

# in_host NS CMD...: CMD with the device, in host NS
in_host() {
    local ns=$1
    shift
    ip netns exec "$ns" "$SR/run.sh" "$@"
}

# ---- the device
in_host "$NA" ibv_devinfo -v >"$T_WORK/devinfo.txt" 2>&1
gid_line() { grep -E "GID\[ *$1\]:" "$T_WORK/devinfo.txt" | sed 's/^[[:space:]]*//'; }
if grep -q 'link_layer:[[:space:]]*Ethernet$' "$T_WORK/devinfo.txt" &&
   grep -q 'active_mtu:[[:space:]]*1024' "$T_WORK/devinfo.txt" &&
   gid_line 3 | grep -q "::ffff:10.83.$NET.1, RoCE v2$" &&
   gid_line 5 | grep -q "fd83:0:$NET::1, RoCE v2$" &&
   gid_line 0 | grep -q "fe80:0000:.*, RoCE v1$"; then
    pass "device: the RoCE port's GID table from roce0, active MTU 1024 (ibv_devinfo -v)"
else
    grep -E 'GID|mtu|link_layer' "$T_WORK/devinfo.txt" | sed 's/^/      /'
    fail "device: the RoCE port's GID table from roce0, active MTU 1024 (ibv_devinfo -v)"
fi

# ---- ucx_info -d
LIBS=()
[ "$REF" = 1 ] && LIBS+=("")
[ -n "$OURS" ] && LIBS+=("$OURS")
md_block() {
    awk '/^\[/ { next } $0 == "# Memory domain: softrdma0" { on = 1; print; next }
         /^# (Memory domain:|< failed to open connection manager|Connection manager:)/ { on = 0 } on' "$1"
}
for lib in "${LIBS[@]}"; do
    if [ -z "$lib" ]; then who=original; else who=LIBDIR; fi
    out=$T_WORK/info.$who
    env $(lib_env "$lib") UCX_LOG_LEVEL=debug timeout -k 5 60 \
        ip netns exec "$NA" "$SR/run.sh" "$UCX_INFO" -d >"$out" 2>&1 </dev/null
    tls=$(md_block "$out" | awk '/Transport:/ { printf "%s ", $3 }')
    if [ "${tls% }" = "rc_verbs ud_verbs" ] && ! grep -aq '< failed to open interface >' "$out"; then
        pass "$who: ucx_info -d: rc_verbs and ud_verbs on the RoCE port softrdma0:1"
    else
        fail "$who: ucx_info -d: rc_verbs and ud_verbs on the RoCE port softrdma0:1" "lists: ${tls:-nothing}"
    fi
    idx=$(grep -a -m 1 -oE 'softrdma0:1 using gid_index[ =][0-9]+' "$out" | grep -oE '[0-9]+$')
    if [ "$idx" = 3 ]; then
        pass "$who: GID index 3 (RoCE v2, IPv4) chosen"
    else
        fail "$who: GID index 3 (RoCE v2, IPv4) chosen" "chose: ${idx:-none logged}"
    fi
    if grep -aq 'device address: 18 bytes' <(md_block "$out"); then
        pass "$who: 18-byte device addresses (GID and path MTU)"
    else
        fail "$who: 18-byte device addresses (GID and path MTU)" "$(md_block "$out" | grep -a 'device address' | head -n 1)"
    fi
    if [ -n "$lib" ] && [ "$REF" = 1 ]; then
        if diff <(md_block "$T_WORK/info.original") <(md_block "$out") >"$T_WORK/block.diff"; then
            pass "LIBDIR: the md block of softrdma0 is the original's"
        else
            sed 's/^/      /' "$T_WORK/block.diff" | head -n 20
            fail "LIBDIR: the md block of softrdma0 is the original's"
        fi
    fi
done

# ---- ucx_perftest across the hosts
ROWS_RC='am_lat short 8|put_bw zcopy 65536|get zcopy 65536'
ROWS_UD='am_lat short 8|am_bw bcopy 8$|am_bw zcopy 4096'
# matrix LABEL SRV CLI GID: the rows, one "STATUS row" line each, in
# $T_WORK/m.LABEL.GID; in the full tier, with GID auto, whole matrices (rc,
# ud, uct_hello_world and UCP over rc_verbs,ud_verbs / rc_verbs,tcp)
matrix() {
    local label=$1 srv=$2 cli=$3 gid=$4 m rows ms="rc ud"
    : >"$T_WORK/m.$label.$gid"
    if full_tier && [ -z "$gid" ]; then
        ms="rc ud ucp"
        [ "$UCX_ABI" = 1.13 ] && ms="$ms hello"
    fi
    for m in $ms; do
        case $m in
            rc) rows=$ROWS_RC ;;
            ud) rows=$ROWS_UD ;;
            *) rows= ;;
        esac
        full_tier && [ -z "$gid" ] && rows=
        env ${gid:+UCX_IB_GID_INDEX=$gid} SOFTRDMA_MATRIX=$m SOFTRDMA_ONLY="$rows" SOFTRDMA_ITERS=2000 \
            SOFTRDMA_WARMUP=100 SOFTRDMA_NETNS="$NA $NB" SOFTRDMA_SERVER_ADDR=10.83.$NET.1 \
            "$SR/rc-matrix.sh" "$srv" "$cli" 2>&1 | tee -a "$T_WORK/m.$label.$gid.log" |
            awk '/^(PASS|FAIL|UNSUP) / { s = $1; sub(/ \|.*/, ""); sub(/ \(rc=.*/, ""); $1 = ""; print s $0 }' \
            >>"$T_WORK/m.$label.$gid"
    done
}
if full_tier; then GIDS="auto 0 1 2 5"; else GIDS=auto; fi
for g in $GIDS; do
    gid=${g#auto}
    what="GID ${g}"
    [ "$g" = auto ] && what="GID auto"
    if [ "$REF" = 1 ]; then
        matrix original "" "" "$gid"
        n=$(grep -c '^PASS' "$T_WORK/m.original.$gid")
        if [ "$n" -gt 0 ] && ! grep -q '^FAIL' "$T_WORK/m.original.$gid"; then
            pass "$what: original/original: $n rows pass"
        else
            grep -v '^PASS' "$T_WORK/m.original.$gid" | sed 's/^/      /'
            fail "$what: original/original" "$(grep -c '^FAIL' "$T_WORK/m.original.$gid") rows fail"
        fi
    fi
    [ -n "$OURS" ] || continue
    pairs=("ours $OURS $OURS")
    [ "$REF" = 1 ] && pairs+=("ours-server $OURS -" "ours-client - $OURS")
    for p in "${pairs[@]}"; do
        read -r label s c <<<"$p"
        [ "$s" = - ] && s=
        [ "$c" = - ] && c=
        matrix "$label" "$s" "$c" "$gid"
        if [ "$REF" = 1 ]; then
            if diff "$T_WORK/m.original.$gid" "$T_WORK/m.$label.$gid" >"$T_WORK/m.diff"; then
                pass "$what: $label: every row as the original's ($(grep -c '^PASS' "$T_WORK/m.$label.$gid") pass)"
            else
                sed 's/^/      /' "$T_WORK/m.diff"
                grep -A3 '^FAIL' "$T_WORK/m.$label.$gid.log" | head -n 8 | sed 's/^/      /'
                fail "$what: $label: every row as the original's"
            fi
        else
            # (at least the 5 quick rows; the 4 KiB ud zcopy row is UNSUP)
            n=$(grep -c '^PASS' "$T_WORK/m.$label.$gid")
            if [ "$n" -ge 5 ] && ! grep -q '^FAIL' "$T_WORK/m.$label.$gid"; then
                pass "$what: $label: $n rows pass, none fails"
            else
                grep '^FAIL' "$T_WORK/m.$label.$gid" | sed 's/^/      /'
                grep -A3 '^FAIL' "$T_WORK/m.$label.$gid.log" | head -n 8 | sed 's/^/      /'
                fail "$what: $label: every row passes" "$n pass"
            fi
        fi
    done
done

# ---- peers of another RoCE version or address family
# xpair SLIB CLIB SGID CGID: one rc_verbs am_lat run across the hosts, the
# server on GID index SGID, the client on CGID -> "ok" or "no"
PERFTEST=$(ucx_tool ucx_perftest)
xpair() {
    local slib=$1 clib=$2 sg=$3 cg=$4 port spid rc src
    port=$("$SOFTRDMA_BUILD/freeport")
    env $(lib_env "$slib") UCX_IB_GID_INDEX="$sg" timeout -k 5 30 ip netns exec "$NA" "$SR/run.sh" \
        "$PERFTEST" -t am_lat -x rc_verbs -d softrdma0:1 -p "$port" -n 1000 >"$T_WORK/xs.out" 2>&1 </dev/null &
    spid=$!
    for _ in $(seq 100); do
        ip netns exec "$NA" cat /proc/net/tcp /proc/net/tcp6 2>/dev/null |
            awk -v p="$(printf '%04X' "$port")" '$4 == "0A" && $2 ~ ":"p"$" { f = 1 } END { exit !f }' && break
        kill -0 "$spid" 2>/dev/null || break
        sleep 0.1
    done
    env $(lib_env "$clib") UCX_IB_GID_INDEX="$cg" timeout -k 5 30 ip netns exec "$NB" "$SR/run.sh" \
        "$PERFTEST" -t am_lat -x rc_verbs -d softrdma0:1 -p "$port" -n 1000 "10.83.$NET.1" >"$T_WORK/xc.out" 2>&1 </dev/null
    rc=$?
    wait "$spid"
    src=$?
    if [ $rc = 0 ] && [ $src = 0 ] && grep -q '^Final:' "$T_WORK/xc.out"; then echo ok; else echo no; fi
}
# (server GID, client GID, what): RoCE v2 against v1 over IPv4, v2 over
# IPv4 against v2 over IPv6; up to 1.18 the original counts both reachable
# (no subnet check by default), from 1.19 neither
for c in "3 2 RoCE v2 server, v1 client" "3 5 RoCE v2 over IPv4 server, IPv6 client"; do
    read -r sg cg what <<<"$c"
    sys=
    if [ "$REF" = 1 ]; then
        sys=$(xpair "" "" "$sg" "$cg")
        echo "#   original/original, $what: $sys"
    fi
    [ -n "$OURS" ] || continue
    want=$sys
    if [ -z "$want" ]; then
        if [ "${UCX_ABI#1.}" -ge 19 ]; then want=no; else want=ok; fi
    fi
    got=$(xpair "$OURS" "$OURS" "$sg" "$cg")
    if [ "$got" = "$want" ]; then
        pass "$what: ours/ours $got, as the original of $UCX_ABI"
    else
        tail -n 3 "$T_WORK/xs.out" "$T_WORK/xc.out" | sed 's/^/      /'
        fail "$what: ours/ours $got, the original $want"
    fi
    if [ "$REF" = 1 ]; then
        for p in "$OURS -" "- $OURS"; do
            read -r s c <<<"$p"
            [ "$s" = - ] && s=
            [ "$c" = - ] && c=
            got=$(xpair "$s" "$c" "$sg" "$cg")
            side=ours-server
            [ -z "$s" ] && side=ours-client
            if [ "$got" = "$want" ]; then
                pass "$what: $side $got, as the original's"
            else
                tail -n 3 "$T_WORK/xs.out" "$T_WORK/xc.out" | sed 's/^/      /'
                fail "$what: $side $got, the original's $want"
            fi
        done
    fi
done

# ---- a GID index with no entry
for lib in "${LIBS[@]}"; do
    if [ -z "$lib" ]; then who=original; else who=LIBDIR; fi
    out=$T_WORK/gid99.$who
    env $(lib_env "$lib") UCX_IB_GID_INDEX=99 timeout -k 5 60 \
        ip netns exec "$NA" "$SR/run.sh" "$UCX_INFO" -d >"$out" 2>&1 </dev/null
    tls=$(md_block "$out" | awk '/Transport:/ { printf "%s ", $3 }')
    if [ -z "$tls" ] || grep -aq '< failed to open interface >' "$out"; then
        if grep -aqE 'UCX  (ERROR|DIAG|DEBUG)|gid' "$out" || [ -z "$tls" ]; then
            pass "$who: UCX_IB_GID_INDEX=99: no interface on the RoCE port"
        else
            fail "$who: UCX_IB_GID_INDEX=99: no interface on the RoCE port" "no log line"
        fi
    else
        fail "$who: UCX_IB_GID_INDEX=99: no interface on the RoCE port" "lists: $tls"
    fi
done

ucpv_end
