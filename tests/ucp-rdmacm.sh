#!/usr/bin/env bash
# libucp's client/server API through the rdmacm connection manager: Debian's
# ucp_client_server example (built unchanged from libucx-dev), server and
# client on 127.0.0.1, each under the soft RDMA device with its RDMA CM
# (SOFTRDMA_CM=1 tests/softrdma/run.sh), UCX_SOCKADDR_TLS_PRIORITY=rdmacm
# (only rdmacm may connect: no fallback to the tcp CM) and
# UCX_TLS=rc_verbs,ud_verbs: the connection is made by RDMA CM and the data
# moves over the verbs transports.
#
#   pairs   original/original first (the device must carry the original,
#           or nothing is proved), then LIBDIR on both sides and mixed
#           with the original both ways
#   API     tag, stream, am; -s 16 and -s 300000 (rendezvous); -i 3
#   tiers   CI: tag 16 for every pair and 300000 for ours/ours, on
#           127.0.0.1 and across two namespaces on RoCE ports, the hostile
#           client against ours only; UCT_RS_TIER=full: every API and size per
#           pair, the hostile client against the original too (for the
#           record: it aborts)
#
# A hostile client (c-tests/rdmacm_hostile.c, librdmacm directly) then
# sends connection requests whose private data no UCX client sends (none,
# shorter than the header, a header claiming more than arrived, a status
# outside UCX's range, an error status, garbage): LIBDIR's server must
# refuse each (rejected, with a log line), keep serving, and a good client
# must then connect; what the original does with them is reported.
#
# A case passes as on the original: the client exits 0, and the server
# printed "UCX data message was received" with the client's exact string as
# many times; a lost last message (the example's client closes its
# endpoint right after its last send) is retried up to twice, a crash or a
# hang never is. LIBDIR may print no UCX warning or error line the
# original does not.
# Usage: tests/ucp-rdmacm.sh [LIBDIR]   (or UCT_LIBDIR)
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib/ucp-verbs.sh"
. "$here/lib/client-server.sh"

ucpv_begin "$@"
cs_build
if ! SOFTRDMA_CM=1 "$SR/run.sh" true >"$T_WORK/cm.log" 2>&1; then
    tail -n 5 "$T_WORK/cm.log"
    skip_suite "the soft RDMA CM cannot run here (SOFTRDMA_CM=1 tests/softrdma/run.sh true failed)"
fi
UCPV_ENV=(UCX_LOG_LEVEL=info SOFTRDMA_CM=1 UCX_SOCKADDR_TLS_PRIORITY=rdmacm UCX_NET_DEVICES=softrdma0:1)
TLS=rc_verbs,ud_verbs

# Where the two sides run: the root namespace on 127.0.0.1 (default), or
# SRV_NS/CLI_NS with the server at SRV_ADDR (the cross-namespace cases, on
# the link layer NS_LL of ports made from the namespaces' veth end NS_DEV).
SRV_NS= CLI_NS= SRV_ADDR=127.0.0.1 NS_LL= NS_DEV=

# rside NS LIB TLS STATUSFILE CMD...: one side (ucpv_side, in NS when set)
rside() {
    local ns=$1
    shift
    if [ -z "$ns" ]; then
        ucpv_side "$@"
        return
    fi
    local lib=$1 tls=$2 st=$3
    shift 3
    ip netns exec "$ns" env SOFTRDMA_LINK_LAYERS="$NS_LL" ${NS_DEV:+SOFTRDMA_NETDEVS=$NS_DEV} \
        $(lib_env "$lib") UCX_TLS="$tls" "${UCPV_ENV[@]}" "$RUN_WATCH" "$PAIR_TIMEOUT" "$st" "$SR/run.sh" "$@"
}

# run_case SRVLIB CLILIB API SIZE -> R_OK, R_WHY, R_BAD, R_GOT
run_case() {
    local slib=$1 clib=$2 api=$3 size=$4 port cst i
    port=$("$SOFTRDMA_BUILD/freeport")
    rm -f "$T_WORK/cli.st" "$T_WORK/srv.st"
    R_OK=0 R_BAD=0 R_WHY= R_GOT=0
    rside "$SRV_NS" "$slib" "$TLS" "$T_WORK/srv.st" stdbuf -oL \
        "$CS" -p "$port" -c "$api" -s "$size" -i "$ITERS" >"$T_WORK/srv.out" 2>&1 </dev/null &
    CS_SPID=$!
    T_CHILDREN=$CS_SPID
    # an RDMA CM listener has no TCP socket to wait for: its banner
    for i in $(seq 150); do
        grep -a -q 'Waiting for connection' "$T_WORK/srv.out" && break
        kill -0 "$CS_SPID" 2>/dev/null || break
        sleep 0.1
    done
    if ! grep -a -q 'Waiting for connection' "$T_WORK/srv.out"; then
        ucpv_stop "$CS_SPID" ucp_client_server
        T_CHILDREN=
        R_WHY="server did not listen: $(grep -a -m 1 'ERROR\|failed' "$T_WORK/srv.out")"
        grep -a -q 'Assertion\|signal' "$T_WORK/srv.out" && R_BAD=1
        return
    fi
    rside "$CLI_NS" "$clib" "$TLS" "$T_WORK/cli.st" \
        "$CS" -a "$SRV_ADDR" -p "$port" -c "$api" -s "$size" -i "$ITERS" >"$T_WORK/cli.out" 2>&1 </dev/null
    cst=$(status_of "$T_WORK/cli.st")
    ucpv_cs_server_end
    cs_judge "$cst" "$(ucpv_string_count "$size" "$T_WORK/srv.out" .)" "$SRV_GONE"
}

cs_final() { ucpv_cs_final; }
CS_TRIES=5

# the original's result per API and size (its pair is run first)
declare -A SYS_OK SYS_WHY

case_name() { echo "ucp_client_server via rdmacm srv=$1 cli=$2 -c $3 -s $4"; }

for api in tag stream am; do
    for size in 16 300000; do
        full_tier || [ "$api" = tag ] || continue
        cs_tries "" "" "$api" "$size"
        SYS_OK[$api.$size]=$R_OK SYS_WHY[$api.$size]=$R_WHY
        ucx_lines "$T_WORK/srv.out" "$T_WORK/cli.out" >"$T_WORK/lines.sys.$api.$size"
        if [ -z "$OURS" ]; then
            ucpv_system_only "$(case_name original original "$api" "$size")" "$R_OK" "$R_WHY" "$R_GOT messages" "$R_BAD"
            continue
        fi
        [ "$R_OK" = 1 ] && pass "$(case_name original original "$api" "$size") ($R_GOT messages)"
        for pair in "ours ours" "ours original" "original ours"; do
            [ "$size" = 16 ] || [ "$pair" = "ours ours" ] || full_tier || continue
            set -- $pair
            if [ "$1" = ours ]; then s=$OURS; else s=; fi
            if [ "$2" = ours ]; then c=$OURS; else c=; fi
            cs_tries "$s" "$c" "$api" "$size"
            ucx_lines "$T_WORK/srv.out" "$T_WORK/cli.out" >"$T_WORK/lines.ours"
            cp "$T_WORK/lines.sys.$api.$size" "$T_WORK/lines.sys"
            ab_verdict "$(case_name "$1" "$2" "$api" "$size")" "${SYS_OK[$api.$size]}" "${SYS_WHY[$api.$size]}" \
                "$R_GOT messages" "$T_WORK/srv.out" "$T_WORK/cli.out"
        done
    done
done

# Across two network namespaces joined by a veth pair: RoCE ports made from
# the veth ends (their GIDs are the namespaces' addresses), then
# InfiniBand ports (full tier); tag 16 and 300000 (the original's first).
NS_A=ucprdma-a-$$ NS_B=ucprdma-b-$$ VETH_A=urdv$$a VETH_B=urdv$$b NS_MADE=0
ns_cleanup() {
    [ "$NS_MADE" = 1 ] || return 0
    ip netns delete "$NS_A" 2>/dev/null
    ip netns delete "$NS_B" 2>/dev/null
    ip link delete "$VETH_A" 2>/dev/null
    NS_MADE=0
}
trap 'ns_cleanup; cleanup_workdir; for d in $T_SHM_DIRS; do rm -rf "$d"; done' EXIT
if [ "$(id -u)" = 0 ] && ip netns add "$NS_A" 2>/dev/null; then
    NS_MADE=1
    net=$((RANDOM % 200 + 20))
    if ip netns add "$NS_B" && ip link add "$VETH_A" type veth peer name "$VETH_B" &&
       ip link set "$VETH_A" netns "$NS_A" && ip link set "$VETH_B" netns "$NS_B" &&
       ip -n "$NS_A" link set "$VETH_A" name rdmaveth0 && ip -n "$NS_B" link set "$VETH_B" name rdmaveth0 &&
       ip -n "$NS_A" addr add "10.79.$net.1/24" dev rdmaveth0 && ip -n "$NS_B" addr add "10.79.$net.2/24" dev rdmaveth0 &&
       ip -n "$NS_A" link set lo up && ip -n "$NS_B" link set lo up &&
       ip -n "$NS_A" link set rdmaveth0 up && ip -n "$NS_B" link set rdmaveth0 up; then
        for i in $(seq 100); do
            ip -n "$NS_B" -o link show rdmaveth0 | grep -q LOWER_UP && break
            sleep 0.1
        done
        SRV_NS=$NS_A CLI_NS=$NS_B SRV_ADDR=10.79.$net.1
        for ll in eth ib; do
            NS_LL=$ll NS_DEV=
            [ "$ll" = eth ] && NS_DEV=rdmaveth0
            label=RoCE
            [ "$ll" = ib ] && label=InfiniBand
            for size in 16 300000; do
                [ "$ll" = ib ] && ! full_tier && continue
                cs_tries "" "" tag "$size"
                sys_ok=$R_OK sys_why=$R_WHY
                ucx_lines "$T_WORK/srv.out" "$T_WORK/cli.out" >"$T_WORK/lines.sys"
                if [ -z "$OURS" ]; then
                    ucpv_system_only "two namespaces, $label: srv=original cli=original -c tag -s $size" \
                        "$R_OK" "$R_WHY" "$R_GOT messages" "$R_BAD"
                    continue
                fi
                [ "$R_OK" = 1 ] && pass "two namespaces, $label: srv=original cli=original -c tag -s $size"
                for pair in "ours ours" "ours original" "original ours"; do
                    [ "$size" = 16 ] || [ "$pair" = "ours ours" ] || full_tier || continue
                    set -- $pair
                    if [ "$1" = ours ]; then sl=$OURS; else sl=; fi
                    if [ "$2" = ours ]; then cl=$OURS; else cl=; fi
                    cs_tries "$sl" "$cl" tag "$size"
                    ucx_lines "$T_WORK/srv.out" "$T_WORK/cli.out" >"$T_WORK/lines.ours"
                    ab_verdict "two namespaces, $label: srv=$1 cli=$2 -c tag -s $size" "$sys_ok" "$sys_why" \
                        "$R_GOT messages" "$T_WORK/srv.out" "$T_WORK/cli.out"
                done
            done
        done
        SRV_NS= CLI_NS= SRV_ADDR=127.0.0.1 NS_LL= NS_DEV=
    else
        fail "namespace setup" "ip netns/veth failed"
    fi
    ns_cleanup
    if ip netns list | grep -q "ucprdma-[ab]-$$"; then
        fail "namespaces removed" "$(ip netns list | grep "ucprdma-[ab]-$$" | tr '\n' ' ')"
    else
        pass "namespaces removed"
    fi
else
    echo "SKIP  two namespaces: cannot create a network namespace (needs root)"
fi

# With UCX's default UCX_SOCKADDR_TLS_PRIORITY (rdmacm before tcp), as
# programs run: the connection must still be made by rdmacm (the debug log
# of libucp names the CM of each side).
UCPV_ENV=(UCX_LOG_LEVEL=debug SOFTRDMA_CM=1 UCX_NET_DEVICES=softrdma0:1)
pairs="original original"
[ -n "$OURS" ] && pairs="$pairs ours ours original ours"
[ -n "$OURS" ] && full_tier && pairs="$pairs ours original"
set -- $pairs
while [ $# -ge 2 ]; do
    sn=$1 cn=$2
    shift 2
    if [ "$sn" = ours ]; then sl=$OURS; else sl=; fi
    if [ "$cn" = ours ]; then cl=$OURS; else cl=; fi
    name="ucp_client_server, default CM priority, srv=$sn cli=$cn -c tag -s 16"
    cs_tries "$sl" "$cl" tag 16
    if [ "$R_OK" != 1 ]; then
        fail "$name" "$R_WHY"
    elif ! grep -a -q 'client created ep .* on cm rdmacm' "$T_WORK/cli.out"; then
        fail "$name" "the client did not connect through rdmacm: $(grep -a -o 'on cm [a-z]*' "$T_WORK/cli.out" | head -n 1)"
    elif ! grep -a -q 'connection request on the rdmacm sockaddr' "$T_WORK/srv.out"; then
        fail "$name" "the server's request did not come through rdmacm"
    else
        pass "$name (rdmacm on both sides)"
    fi
done

# The hostile client against a server of each library. Requests whose
# header does not hold (refused by LIBDIR's CM) come first, then a good
# client; then the two whose zero-padded header is a valid empty one (RDMA
# CM pads private data to 56 bytes, so "empty" and "short" arrive as a
# header of length 0): those reach libucp, whose answer is its own.
HOSTILE=$T_WORK/rdmacm_hostile
if "$CC" -O2 -Wall -o "$HOSTILE" "$here/../c-tests/rdmacm_hostile.c" -lrdmacm -libverbs 2>"$T_WORK/cc.log"; then
    pass "build rdmacm_hostile"
else
    abort "build rdmacm_hostile" "$(head -n 3 "$T_WORK/cc.log")"
fi
UCPV_ENV=(UCX_LOG_LEVEL=diag SOFTRDMA_CM=1 UCX_SOCKADDR_TLS_PRIORITY=rdmacm UCX_NET_DEVICES=softrdma0:1)
# hostile_run PORT CASES...: the first answer to each, as words
hostile_run() {
    local port=$1 c ev out=
    shift
    for c in "$@"; do
        env SOFTRDMA_CM=1 timeout -k 5 30 "$SR/run.sh" "$HOSTILE" 127.0.0.1 "$port" "$c" >"$T_WORK/hostile.out" 2>&1
        ev=$(sed -n 's/^hostile: [a-z]*: RDMA_CM_EVENT_\([A-Z_]*\).*/\1/p' "$T_WORK/hostile.out" | head -n 1)
        out="$out $c:${ev:-none}"
    done
    echo "$out"
}
sides=original
[ -n "$OURS" ] && sides=ours
[ -n "$OURS" ] && full_tier && sides="original ours"
for who in $sides; do
    if [ "$who" = ours ]; then lib=$OURS; else lib=; fi
    port=$("$SOFTRDMA_BUILD/freeport")
    ucpv_side "$lib" "$TLS" "$T_WORK/srv.st" stdbuf -oL \
        "$CS" -p "$port" -c tag -s 16 -i "$ITERS" >"$T_WORK/srv.out" 2>&1 </dev/null &
    CS_SPID=$!
    T_CHILDREN=$CS_SPID
    for i in $(seq 150); do
        grep -a -q 'Waiting for connection' "$T_WORK/srv.out" && break
        sleep 0.1
    done
    seen=$(hostile_run "$port" overlong badstatus errstatus garbage)
    alive=0 good=0
    if kill -0 "$CS_SPID" 2>/dev/null; then
        alive=1
        ucpv_side "" "$TLS" "$T_WORK/cli.st" \
            "$CS" -a 127.0.0.1 -p "$port" -c tag -s 16 -i "$ITERS" >"$T_WORK/cli.out" 2>&1 </dev/null
        [ "$(status_of "$T_WORK/cli.st")" = "exit 0" ] && good=1
        cs_wait_next_client
    fi
    refused=$(grep -a -c 'connection request from .* refused' "$T_WORK/srv.out")
    later=
    kill -0 "$CS_SPID" 2>/dev/null && later=$(hostile_run "$port" empty short)
    if kill -0 "$CS_SPID" 2>/dev/null; then
        ucpv_stop "$CS_SPID" ucp_client_server
        later="$later; server still serving"
    else
        wait "$CS_SPID" 2>/dev/null
        later="$later; server then ended: $(status_of "$T_WORK/srv.st"): $(grep -a -m 1 'ERROR' "$T_WORK/srv.out" | sed 's/.*UCX  ERROR //' | cut -c1-80)"
    fi
    T_CHILDREN=
    detail="answers:$seen; server $( [ "$alive" = 1 ] && echo alive || echo "gone ($(status_of "$T_WORK/srv.st"))"), a good client afterwards $( [ "$good" = 1 ] && echo connected || echo failed); then$later"
    if [ "$who" = original ]; then
        pass "hostile rdmacm client against the original's server (for the record: $detail)"
    elif [ "$alive" = 1 ] && [ "$good" = 1 ] && [ "$refused" -ge 4 ] && ! echo "$seen" | grep -q ':CONNECT_RESPONSE\|:none'; then
        pass "hostile rdmacm client against LIBDIR's server: each bad header refused with a log line ($detail)"
    else
        fail "hostile rdmacm client against LIBDIR's server" "$refused refusals logged; $detail"
    fi
done

ucpv_end
