#!/bin/bash
# The soft RDMA CM (rdmacm/) with the librdmacm API, two processes under
# SOFTRDMA_CM=1 run.sh (rdmacm-test.c says what each case checks):
#   1. InfiniBand port, 127.0.0.1: one-process checks (non-blocking channel,
#      private data limit, no listener -> REJECTED 8, silent port ->
#      UNREACHABLE, busy and ephemeral ports, migrate); then server and
#      client: accept / server disconnect / reject / QPs on the ids with an
#      RC SEND; a client SIGKILLed after its request and once established,
#      the server SIGKILLed once established and on the request (the
#      survivor gets its event within a few seconds)
#   2. no route (a fresh network namespace with only lo): rdma_resolve_addr
#      fails with ENETUNREACH; an address no port owns: ADDR_ERROR -ENODEV
#   3. RoCE ports (SOFTRDMA_LINK_LAYERS=eth, GID tables from a veth pair)
#      with server and client in two network namespaces
#   4. InfiniBand ports across the same two namespaces
# Needs root (ip netns). Prints ok/not ok lines and PASS/FAIL per part;
# exit status: failed parts. Namespaces and /dev/shm are cleaned up.
#   tests/softrdma/rdmacm-test.sh
here=$(cd "$(dirname "$0")" && pwd)
out=${SOFTRDMA_BUILD:-$here/build}
"$here/build.sh" >/dev/null || exit 100
export SOFTRDMA_CM=1
# shellcheck source=registry-dir.sh
. "$here/registry-dir.sh"
tmp=$(mktemp -d -t softrdma-cm.XXXXXX)
a=srcma$$ b=srcmb$$
net=$((RANDOM % 200 + 20))
spid=
cleanup() {
    [ -z "$spid" ] || { kill "$spid" 2>/dev/null; wait "$spid" 2>/dev/null; }
    ip netns del "$a" 2>/dev/null
    ip netns del "$b" 2>/dev/null
    rm -rf "$tmp"
    [ -z "$own_shm" ] || rm -rf "$SOFTRDMA_SHM_DIR"
}
trap cleanup EXIT
fails=0
T=$out/rdmacm-test

# start_server NAME [PREFIX...]: the server in the background, its port in $port
start_server() {
    local name=$1
    shift
    rm -f "$tmp/port"
    "$@" timeout -k 5 120 "$here/run.sh" "$T" server "$tmp/port" > "$tmp/$name.srv" 2>&1 &
    spid=$!
    for _ in $(seq 100); do
        [ -s "$tmp/port" ] && break
        kill -0 "$spid" 2>/dev/null || break
        sleep 0.1
    done
    port=$(cat "$tmp/port" 2>/dev/null)
    [ -n "$port" ] || { echo "not ok - server $name did not listen"; cat "$tmp/$name.srv"; return 1; }
}

stop_server() {
    [ -z "$spid" ] && return
    kill "$spid" 2>/dev/null
    wait "$spid" 2>/dev/null
    spid=
}

# rc_ok LOG RC WHAT [KILLED_OK]: a line "not ok" in LOG unless RC is 0
# (or 137, SIGKILL, when KILLED_OK: the cases that kill themselves)
rc_ok() {
    [ "$2" -eq 0 ] && return
    [ "$2" -eq 137 ] && [ -n "${4:-}" ] && return
    echo "not ok - $3 exited $2" >> "$1"
}

# client LOG ADDR CASE... [under PREFIX from $cpre]: appends its output to LOG
client() {
    local log=$1 addr=$2 k=
    shift 2
    case "$*" in kill*) k=1 ;; esac
    # shellcheck disable=SC2086
    $cpre timeout -k 5 60 "$here/run.sh" "$T" client "$addr" "$port" "$@" >> "$log" 2>&1
    rc_ok "$log" $? "client $*" $k
}

verdict() {
    local part=$1 log=$2 extra=${3:-0}
    local bad
    bad=$(grep -c '^not ok' "$log")
    cat "$log"
    if [ "$bad" -eq 0 ] && [ "$extra" -eq 0 ] && grep -q '^ok' "$log"; then
        echo "PASS $part"
    else
        echo "FAIL $part ($bad checks failed)"
        [ -f "$tmp/$part.srv" ] && sed 's/^/#   /' "$tmp/$part.srv"
        fails=$((fails + 1))
    fi
}

# ---- 1. InfiniBand, loopback
echo "# 1. InfiniBand port, 127.0.0.1"
log=$tmp/ib.log
: > "$log"
cpre=
timeout -k 5 60 "$here/run.sh" "$T" local >> "$log" 2>&1
rc_ok "$log" $? "rdmacm-test local"
x=0
if start_server ib; then
    client "$log" 127.0.0.1 accept srvdisc reject ucxerr qp
    client "$log" 127.0.0.1 killcli   # dies once established
    client "$log" 127.0.0.1 killreq   # dies right after its request
    client "$log" 127.0.0.1 result:accept result:srvdisc result:reject result:ucxerr \
        result:qp result:killcli result:killreq
    client "$log" 127.0.0.1 killsrv   # the server dies once established
    wait "$spid" 2>/dev/null; spid=
    mv "$tmp/ib.srv" "$tmp/ib1.srv"
    if start_server ib; then
        client "$log" 127.0.0.1 die   # the server dies on the request
        wait "$spid" 2>/dev/null; spid=
    else x=1; fi
    cat "$tmp/ib1.srv" >> "$tmp/ib.srv"
else x=1; fi
verdict ib "$log" $x

# ---- 2. no route, no device
echo "# 2. no route; no port owning the address"
log=$tmp/noroute.log
: > "$log"
unshare -n sh -c 'ip link set lo up && exec "$@"' sh \
    timeout -k 5 30 "$here/run.sh" "$T" unreach 192.0.2.1 >> "$log" 2>&1
rc_ok "$log" $? "rdmacm-test unreach"
SOFTRDMA_LINK_LAYERS=eth timeout -k 5 30 "$here/run.sh" "$T" nodev 127.0.0.1 >> "$log" 2>&1
rc_ok "$log" $? "rdmacm-test nodev"
verdict noroute "$log"

# ---- two network namespaces joined by a veth pair
if ip netns add "$a" && ip netns add "$b" &&
   ip link add "ca$$" type veth peer name "cb$$" &&
   ip link set "ca$$" netns "$a" && ip link set "cb$$" netns "$b" &&
   ip -n "$a" addr add "10.214.$net.1/24" dev "ca$$" &&
   ip -n "$b" addr add "10.214.$net.2/24" dev "cb$$" &&
   ip -n "$a" link set lo up && ip -n "$b" link set lo up &&
   ip -n "$a" link set "ca$$" up && ip -n "$b" link set "cb$$" up; then
    sa=10.214.$net.1
    echo "# 3. RoCE ports, server in netns $a ($sa), client in netns $b"
    log=$tmp/roce.log
    : > "$log"
    x=0
    if start_server roce ip netns exec "$a" env SOFTRDMA_LINK_LAYERS=eth SOFTRDMA_NETDEVS="ca$$"; then
        cpre="ip netns exec $b env SOFTRDMA_LINK_LAYERS=eth SOFTRDMA_NETDEVS=cb$$"
        client "$log" "$sa" accept srvdisc reject qp
        client "$log" "$sa" killcli
        client "$log" "$sa" result:accept result:srvdisc result:reject result:qp result:killcli
        client "$log" "$sa" killsrv
        wait "$spid" 2>/dev/null; spid=
    else x=1; fi
    verdict roce "$log" $x

    echo "# 4. InfiniBand ports, server in netns $a, client in netns $b"
    log=$tmp/ibns.log
    : > "$log"
    x=0
    if start_server ibns ip netns exec "$a"; then
        cpre="ip netns exec $b"
        client "$log" "$sa" accept qp result:accept result:qp
        stop_server
    else x=1; fi
    verdict ibns "$log" $x
else
    echo "FAIL cannot set up network namespaces"
    fails=$((fails + 1))
fi

left=$(ls -A "$SOFTRDMA_SHM_DIR" 2>/dev/null | tr '\n' ' ')
if [ -n "$left" ]; then echo "FAIL left in $SOFTRDMA_SHM_DIR: $left"; fails=$((fails + 1)); fi
echo "# $fails part(s) failed"
exit $fails
