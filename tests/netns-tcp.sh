#!/usr/bin/env bash
# tcp between two "hosts" on one machine: two network namespaces joined by a
# veth pair (10.77.0.1/24 <-> 10.77.0.2/24, private to these namespaces),
# each with lo and its veth end up.  In them, as real processes started with
# `ip netns exec NS env LD_LIBRARY_PATH=...`:
#   ucx_info -d -t tcp     in one namespace: the tcp block (lo + the veth)
#                          must be identical to the C original's
#   uct_hello_world        server in A on its veth, client in B on its veth
#                          (both ends are named uctveth0 inside their namespace),
#                          over tcp (-i, -b, -z), the example's own socket
#                          going to 10.77.0.1 across the veth (from UCX 1.19
#                          the tcp md registers no memory, so -z is refused:
#                          when the original's own pair refuses it, ours must
#                          refuse it with the same message and a clean exit)
#   ucx_perftest           am_lat short 8 B over tcp on the veth
# each for ours/ours, ours server + system client, system server + ours
# client.  Then the same hello cases over IPv6: the veth ends also get
# fd77::1/64 and fd77::2/64 (no DAD), both sides run with
# UCX_TCP_AF_PRIO=inet6 (the tcp interface takes the IPv6 address of the
# veth) and the example's own socket is IPv6 too (-6); ucx_info -d in that
# setting must match the original as well.  Nothing is sent to any address outside the two namespaces.
# With an empty LIBDIR every side is the system library (sanity run).
# Without the privileges to create namespaces, the whole test is reported as
# skipped (with the reason) and passes with 0 cases.  The namespaces (and
# with them the veth pair) are deleted at the end, also on error or ^C, and
# the last case checks `ip netns list` for them.
# Usage: tests/netns-tcp.sh [LIBDIR]   (or UCT_LIBDIR; ITERS env, default 10000)
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib/common.sh"
. "$here/lib/two-proc.sh"

resolve_libdir "$@"
ITERS=${ITERS:-10000}
PAIR_TIMEOUT=${PAIR_TIMEOUT:-60}
command -v ip >/dev/null || abort "ip" "not installed (apt-get install iproute2)"
need_perftest
make_workdir
build_run_watch
need_hello

NS_A=uctrs-a-$$
NS_B=uctrs-b-$$
# the pair is created under unique names in the root namespace, moved and
# then renamed to one name, DEV, in both namespaces: ucx_perftest's server
# takes the test parameters, the device name included, from the client
VETH_A=uctv$$a      # at most 15 characters (pid <= 7 digits)
VETH_B=uctv$$b
DEV=uctveth0
ADDR_A=10.77.0.1
ADDR_B=10.77.0.2
ADDR6_A=fd77::1
ADDR6_B=fd77::2
NS_MADE=0

ns_cleanup() {
    if [ -n "${T_CHILDREN:-}" ]; then
        # shellcheck disable=SC2086
        kill $T_CHILDREN 2>/dev/null
        wait 2>/dev/null
        T_CHILDREN=
    fi
    if [ "$NS_MADE" = 1 ]; then
        ip netns delete "$NS_A" 2>/dev/null
        ip netns delete "$NS_B" 2>/dev/null
        # a veth left in the root namespace (setup stopped half-way)
        ip link delete "$VETH_A" 2>/dev/null
        ip link delete "$VETH_B" 2>/dev/null
        NS_MADE=0
    fi
}
trap 'ns_cleanup; cleanup_workdir' EXIT

# ------------------------------------------------------------------ setup --
if ! ip netns add "$NS_A" 2>"$T_WORK/ns.err"; then
    echo "SKIP  two namespaces: cannot create a network namespace ($(head -n 1 "$T_WORK/ns.err")); needs root or CAP_SYS_ADMIN"
    finish
fi
NS_MADE=1
setup() {
    ip netns add "$NS_B" &&
    ip link add "$VETH_A" type veth peer name "$VETH_B" &&
    ip link set "$VETH_A" netns "$NS_A" &&
    ip link set "$VETH_B" netns "$NS_B" &&
    ip -n "$NS_A" link set "$VETH_A" name "$DEV" &&
    ip -n "$NS_B" link set "$VETH_B" name "$DEV" &&
    ip -n "$NS_A" addr add "$ADDR_A/24" dev "$DEV" &&
    ip -n "$NS_B" addr add "$ADDR_B/24" dev "$DEV" &&
    ip -n "$NS_A" addr add "$ADDR6_A/64" dev "$DEV" nodad &&
    ip -n "$NS_B" addr add "$ADDR6_B/64" dev "$DEV" nodad &&
    ip -n "$NS_A" link set lo up &&
    ip -n "$NS_B" link set lo up &&
    ip -n "$NS_A" link set "$DEV" up &&
    ip -n "$NS_B" link set "$DEV" up
}
if setup 2>"$T_WORK/ns.err"; then
    pass "namespaces $NS_A ($DEV $ADDR_A) and $NS_B ($DEV $ADDR_B), veth pair"
else
    abort "namespace setup" "$(head -n 1 "$T_WORK/ns.err")"
fi
# the veth link comes up asynchronously; wait for both ends (no timing
# assertion: only a bound)
for i in $(seq 100); do
    ip -n "$NS_A" -o link show "$DEV" | grep -q 'LOWER_UP' &&
        ip -n "$NS_B" -o link show "$DEV" | grep -q 'LOWER_UP' && break
    sleep 0.1
done
# reachability without ping (not always installed): a TCP connect from B to
# a port nobody listens on in A must be refused (RST came back across)
ip netns exec "$NS_B" timeout 10 bash -c "exec 3<>/dev/tcp/$ADDR_A/9" 2>"$T_WORK/reach.err"
if grep -q 'Connection refused' "$T_WORK/reach.err"; then
    pass "$NS_B reaches $ADDR_A across the veth (connect refused by $NS_A)"
else
    abort "$NS_B reaches $ADDR_A" "the veth pair does not carry packets: $(head -n 1 "$T_WORK/reach.err")"
fi

OURS=$UCT_LIBDIR
SYS=
[ -n "$OURS" ] || echo "# no LIBDIR: system against system (sanity run; \"ours\" below is the system library too)"

# ns_run NS LIB CMD...: the command line for a process in NS on LIB
ns_cmd() {
    local ns=$1 lib
    lib=$(ld_path_for "$2")
    shift 2
    NS_CMD=(ip netns exec "$ns" env)
    [ -n "$lib" ] && NS_CMD+=("LD_LIBRARY_PATH=$lib")
    NS_CMD+=("$@")
}

# ns_listening NS PORT: some socket of NS listens on TCP PORT
ns_listening() {
    local hex
    hex=$(printf ':%04X' "$2")
    ip netns exec "$1" awk -v p="$hex" \
        '$4 == "0A" && substr($2, length($2) - 4) == p { found = 1 } END { exit !found }' \
        /proc/net/tcp /proc/net/tcp6 2>/dev/null
}

ns_wait_listening() { # NS PID PORT
    local i=0
    while ! ns_listening "$1" "$3"; do
        kill -0 "$2" 2>/dev/null || return 1
        sleep 0.02
        i=$((i + 1))
        [ $i -gt $((PAIR_TIMEOUT * 50)) ] && return 1
    done
}

# the namespaces are new: no other socket is in them; each case takes its
# own port all the same (no TIME_WAIT of an earlier case in the way)
NEXT_PORT=13370
next_port() { NEXT_PORT=$((NEXT_PORT + 1)); }

# --------------------------------------------------------------- ucx_info --
# Both namespaces see lo and one veth; the tcp blocks (md + transport, and
# the tcp connection manager) must be the original's.  Only the tcp entries
# are compared: the system UCX also tries its rdmacm plugin and prints
# "# < failed to open connection manager rdmacm >" (no RDMA here), a
# component this project does not provide.
info_of() { # LIB OUT [ENV=VALUE...]
    ns_cmd "$NS_A" "$1" "${@:3}" timeout 60 ucx_info -d -t tcp
    "${NS_CMD[@]}" >"$2.raw" 2>&1 || { cp "$2.raw" "$2"; return 1; }
    awk '/^# (Memory domain|Connection manager): |^# </ {
             inblk = ($0 == "# Memory domain: tcp" || $0 == "# Connection manager: tcp") }
         inblk' "$2.raw" >"$2"
}
if info_of "$SYS" "$T_WORK/info.sys" && info_of "$OURS" "$T_WORK/info.ours"; then
    devs=$(awk '/Device:/ { print $3 }' "$T_WORK/info.ours" | tr '\n' ' ')
    if ! grep -q "Device: $DEV\$" "$T_WORK/info.ours"; then
        fail "ucx_info -d -t tcp in $NS_A lists $DEV" "devices: ${devs:-none}"
    else
        diff_verdict "$T_WORK/info.sys" "$T_WORK/info.ours" \
            "ucx_info -d -t tcp in $NS_A identical to the original (devices: $devs)" \
            "ucx_info -d -t tcp in $NS_A identical to the original"
    fi
else
    fail "ucx_info -d -t tcp in $NS_A" "$(tail -n 1 "$T_WORK/info.ours")"
fi

# ---------------------------------------------------------- two processes --
# run_pair NAME SRV_LIB CLI_LIB SRV_CMD... -- CLI_CMD...: server in A, client
# in B, both under run_watch; sets SRV_END, CLI_END, OUT_SRV, OUT_CLI.
run_pair() {
    local slib=$1 clib=$2 port=$3 spid cpid
    shift 3
    local scmd=() ccmd=()
    while [ $# -gt 0 ] && [ "$1" != -- ]; do scmd+=("$1"); shift; done
    shift
    ccmd=("$@")
    OUT_SRV=$T_WORK/pair.srv
    OUT_CLI=$T_WORK/pair.cli
    rm -f "$T_WORK/srv.st" "$T_WORK/cli.st"
    ns_cmd "$NS_A" "$slib" "${scmd[@]}"
    "$RUN_WATCH" "$PAIR_TIMEOUT" "$T_WORK/srv.st" "${NS_CMD[@]}" >"$OUT_SRV" 2>&1 </dev/null &
    spid=$!
    T_CHILDREN=$spid
    ns_wait_listening "$NS_A" "$spid" "$port"
    ns_cmd "$NS_B" "$clib" "${ccmd[@]}"
    "$RUN_WATCH" "$PAIR_TIMEOUT" "$T_WORK/cli.st" "${NS_CMD[@]}" >"$OUT_CLI" 2>&1 </dev/null &
    cpid=$!
    T_CHILDREN="$spid $cpid"
    # no port: wait_pair's release of a waiting server works in the root
    # namespace only; a server left waiting is killed after PEER_GRACE and
    # reported as "stuck"
    wait_pair "$spid" "$T_WORK/srv.st" "$cpid" "$T_WORK/cli.st"
    T_CHILDREN=
    SRV_END=$(status_of "$T_WORK/srv.st")
    CLI_END=$(status_of "$T_WORK/cli.st")
}

show_outputs() {
    echo "      --- server ($NS_A):"
    sed 's/^/      /' "$OUT_SRV" | tail -n 15
    echo "      --- client ($NS_B):"
    sed 's/^/      /' "$OUT_CLI" | tail -n 15
}

# zcopy_refused: the original's server printed that tcp takes no zero-copy
# (its md registers no host memory); set once, by the first -z pair
# (system/system).
ZCOPY_REFUSED=
zcopy_refused_out() {
    grep -q 'Unsupported memory type host by tcp/' "$1" && grep -q 'No supported (dev/tl) found' "$1"
}

# hello_cases [ipv6] SERVER_ADDR: uct_hello_world -i, -b, -z from B to A
# with $slib / $clib; "ipv6": the tcp interface and the example's own
# socket use IPv6 (UCX_TCP_AF_PRIO=inet6, -6)
hello_cases() {
    local v6=$1 addr=$2 mode name pre=() opt=()
    [ "$v6" = ipv6 ] && pre=(UCX_TCP_AF_PRIO=inet6) opt=(-6)
    for mode in -i -b -z; do
        if [ "$mode" = -z ] && [ -z "$ZCOPY_REFUSED" ]; then
            next_port
            run_pair "$SYS" "$SYS" "$NEXT_PORT" \
                "$HELLO" -t tcp -d "$DEV" -z -p "$NEXT_PORT" -s 20 -- \
                "$HELLO" -t tcp -d "$DEV" -z -p "$NEXT_PORT" -s 20 -n "$ADDR_A"
            ZCOPY_REFUSED=no
            if zcopy_refused_out "$OUT_SRV"; then
                ZCOPY_REFUSED=yes
                echo "# the original refuses uct_hello_world -z over tcp (its tcp md registers no memory)"
            fi
        fi
        next_port
        name="hello tcp/$DEV${v6:+ $v6} $mode $tag"
        run_pair "$slib" "$clib" "$NEXT_PORT" \
            "${pre[@]}" "$HELLO" -t tcp -d "$DEV" "$mode" "${opt[@]}" -p "$NEXT_PORT" -s 20 -- \
            "${pre[@]}" "$HELLO" -t tcp -d "$DEV" "$mode" "${opt[@]}" -p "$NEXT_PORT" -s 20 -n "$addr"
        if [ "$mode" = -z ] && [ "$ZCOPY_REFUSED" = yes ]; then
            if [ "$SRV_END" = "exit 0" ] && [ "$CLI_END" = "exit 0" ] &&
               zcopy_refused_out "$OUT_SRV" && zcopy_refused_out "$OUT_CLI"; then
                pass "$name: refused as by the original"
            else
                fail "$name" "the original refuses -z over tcp; here server $SRV_END, client $CLI_END"
                show_outputs
            fi
            continue
        fi
        if [ "$SRV_END" = "exit 0" ] && [ "$CLI_END" = "exit 0" ] &&
           grep -q 'UCT TEST SUCCESS' "$OUT_SRV" &&
           grep -q "sent $HELLO_WANT (20 bytes)" "$OUT_SRV"; then
            pass "$name"
        else
            fail "$name" "server $SRV_END, client $CLI_END"
            show_outputs
        fi
    done
}

for d in "ours ours" "ours system" "system ours"; do
    set -- $d
    if [ "$1" = ours ]; then slib=$OURS; else slib=$SYS; fi
    if [ "$2" = ours ]; then clib=$OURS; else clib=$SYS; fi
    tag="srv=$1 cli=$2"
    hello_cases "" "$ADDR_A"

    next_port
    name="perftest am_lat short 8 tcp/$DEV $tag"
    args=(-t am_lat -x tcp -D short -s 8 -n "$ITERS" -w 100 -f)
    run_pair "$slib" "$clib" "$NEXT_PORT" \
        ucx_perftest -p "$NEXT_PORT" -d "$DEV" "${args[@]}" -- \
        ucx_perftest "$ADDR_A" -p "$NEXT_PORT" -d "$DEV" "${args[@]}"
    final=$(grep -E '^ *[0-9]+ +[0-9.]+ +[0-9.]+' "$OUT_CLI" | tail -n 1)
    iters_done=$(awk '{ print $1 }' <<<"$final")
    if [ "$SRV_END" = "exit 0" ] && [ "$CLI_END" = "exit 0" ] && [ "$iters_done" = "$ITERS" ]; then
        pass "$name ($(awk '{ print $3 }' <<<"$final") us)"
    else
        fail "$name" "server $SRV_END, client $CLI_END, final line: ${final:-none}"
        show_outputs
    fi
done

# ------------------------------------------------------------------- IPv6 --
if info_of "$SYS" "$T_WORK/info6.sys" UCX_TCP_AF_PRIO=inet6 &&
   info_of "$OURS" "$T_WORK/info6.ours" UCX_TCP_AF_PRIO=inet6; then
    if ! grep -q 'device address: 18 bytes' "$T_WORK/info6.sys"; then
        fail "ucx_info -d -t tcp with UCX_TCP_AF_PRIO=inet6" "the original shows no IPv6 device address"
    else
        diff_verdict "$T_WORK/info6.sys" "$T_WORK/info6.ours" \
            "ucx_info -d -t tcp in $NS_A with UCX_TCP_AF_PRIO=inet6 identical to the original (18-byte address)" \
            "ucx_info -d -t tcp with UCX_TCP_AF_PRIO=inet6 identical to the original"
    fi
else
    fail "ucx_info -d -t tcp with UCX_TCP_AF_PRIO=inet6" "$(tail -n 1 "$T_WORK/info6.ours")"
fi
for d in "ours ours" "ours system" "system ours"; do
    set -- $d
    if [ "$1" = ours ]; then slib=$OURS; else slib=$SYS; fi
    if [ "$2" = ours ]; then clib=$OURS; else clib=$SYS; fi
    tag="srv=$1 cli=$2"
    hello_cases ipv6 "$ADDR6_A"
done

# ---------------------------------------------------------------- cleanup --
ns_cleanup
left=$(ip netns list | awk -v a="$NS_A" -v b="$NS_B" '$1 == a || $1 == b { print $1 }')
links=$(ip -o link show 2>/dev/null | grep -E "$VETH_A|$VETH_B" | awk -F': ' '{ print $2 }')
if [ -z "$left" ] && [ -z "$links" ]; then
    pass "namespaces and veth pair deleted (ip netns list)"
else
    fail "namespaces and veth pair deleted" "left: $left $links"
fi
finish
