#!/bin/bash
# libucp's client/server example (libucx-dev's ucp_client_server.c, built
# unchanged) connecting through the rdmacm CM on the soft device, under
# SOFTRDMA_CM=1 run.sh, with UCX_TLS=rc_verbs,ud_verbs (no tcp: only rdmacm
# can connect) and UCX_NET_DEVICES=softrdma0:1, UCX_LOG_LEVEL=debug:
#   tag and stream, 16 and 300000 bytes, 3 iterations each, on an
#   InfiniBand port over 127.0.0.1; then tag on RoCE ports and on InfiniBand
#   ports with server and client in two network namespaces (veth pair).
# A case passes when the client ends well, both sides printed the exact
# test string, the debug log shows the connection made by the rdmacm CM,
# and no UCX error or warning, nor any failure of the rdmacm CM, is logged.
# The example's client force-closes its endpoint as soon as its sends
# complete locally: a server that then loses the data to the disconnect
# ("Connection reset by remote peer" while receiving; stream -s 300000
# always does on this device, the C original over the tcp CM too) is tried
# 3 times, then reported XFAIL (not counted as a failure).
#   tests/softrdma/rdmacm-ucp.sh           the system's C UCX (the original)
#   tests/softrdma/rdmacm-ucp.sh LIBDIR    LD_LIBRARY_PATH=LIBDIR (ours)
# One PASS/FAIL line per case; exit status: failed cases. Needs root for
# the namespaces (those cases are skipped otherwise).
here=$(cd "$(dirname "$0")" && pwd)
out=${SOFTRDMA_BUILD:-$here/build}
libdir=${1:-}
if [ -n "$libdir" ]; then
    [ -e "$libdir/libuct.so.0" ] || { echo "FAIL no libuct.so.0 in '$libdir'"; exit 100; }
    libdir=$(cd "$libdir" && pwd -P)
fi
"$here/build.sh" >/dev/null || exit 100
ex=/usr/share/doc/libucx-dev/examples
tmp=$(mktemp -d -t softrdma-cmucp.XXXXXX)
a=srcua$$ b=srcub$$
net=$((RANDOM % 200 + 20))
# shellcheck source=registry-dir.sh
. "$here/registry-dir.sh"
spid=
cleanup() {
    [ -z "$spid" ] || { kill "$spid" 2>/dev/null; wait "$spid" 2>/dev/null; }
    ip netns del "$a" 2>/dev/null
    ip netns del "$b" 2>/dev/null
    rm -rf "$tmp"
    [ -z "$own_shm" ] || rm -rf "$SOFTRDMA_SHM_DIR"
}
trap cleanup EXIT

cp "$ex/ucp_client_server.c" "$ex/hello_world_util.h" "$ex/ucp_util.h" "$tmp/" 2>/dev/null &&
gcc -O2 -o "$tmp/ucp_client_server" "$tmp/ucp_client_server.c" -lucp -lucs -luct 2>"$tmp/cc.log" || {
    echo "FAIL build ucp_client_server: $(head -n 3 "$tmp/cc.log")"; exit 100; }
CS=$tmp/ucp_client_server
unset LD_LIBRARY_PATH
[ -z "$libdir" ] || export LD_LIBRARY_PATH=$libdir
export SOFTRDMA_CM=1 UCX_TLS=rc_verbs,ud_verbs UCX_NET_DEVICES=softrdma0:1 UCX_LOG_LEVEL=debug
fails=0
iters=3

# strings_in SIZE FILE: how many lines of FILE hold the example's test
# string for SIZE (SIZE - 1 letters 'A' + i % 26)
strings_in() {
    python3 -c '
import sys
n = int(sys.argv[1])
s = "".join(chr(65 + i % 26) for i in range(n - 1)).encode()
with open(sys.argv[2], "rb") as f:
    print(sum(1 for line in f if s in line))
' "$1" "$2"
}

# run_case NAME ADDR MODE SIZE [SERVER_PREFIX [CLIENT_PREFIX]]: once, 3
# times while the server loses the data as the example's race does
run_case() {
    local rc
    tries=0
    while :; do
        tries=$((tries + 1))
        run_once "$@"
        rc=$?
        [ $rc -eq 2 ] || return 0
        echo "# $1: the server lost the data (try $tries), again"
    done
}

run_once() {
    local name=$1 addr=$2 mode=$3 size=$4 spre=${5:-} cpre=${6:-}
    local port why= crc bad
    port=$("$out/freeport")
    # shellcheck disable=SC2086
    $spre timeout -k 5 60 "$here/run.sh" stdbuf -oL "$CS" -p "$port" -c "$mode" -s "$size" \
        -i $iters > "$tmp/srv" 2>&1 < /dev/null &
    spid=$!
    for _ in $(seq 100); do
        grep -q 'Waiting for connection' "$tmp/srv" && break
        kill -0 "$spid" 2>/dev/null || break
        sleep 0.1
    done
    # shellcheck disable=SC2086
    $cpre timeout -k 5 60 "$here/run.sh" stdbuf -oL "$CS" -a "$addr" -p "$port" -c "$mode" \
        -s "$size" -i $iters > "$tmp/cli" 2>&1 < /dev/null
    crc=$?
    # the server has printed what it received by the time the client ends
    for _ in $(seq 20); do
        [ "$(strings_in "$size" "$tmp/srv")" -ge 2 ] && break
        sleep 0.1
    done
    kill "$spid" 2>/dev/null
    wait "$spid" 2>/dev/null
    spid=
    [ $crc -eq 0 ] || why="$why client exit $crc;"
    [ "$(strings_in "$size" "$tmp/cli")" -ge 1 ] || why="$why client printed no test string;"
    [ "$(strings_in "$size" "$tmp/srv")" -ge 1 ] || why="$why server received no test string;"
    grep -q -i 'cm rdmacm\|on the rdmacm\|rdmacm_cm' "$tmp/cli" || why="$why no rdmacm in the client's log;"
    grep -q -i 'rdmacm' "$tmp/srv" || why="$why no rdmacm in the server's log;"
    bad=$(cat "$tmp/cli" "$tmp/srv" | grep -a -E 'UCX  (ERROR|WARN)|rdmacm[a-z_]*\.c.*(fail|error|unexpected)' |
          grep -v 'mlx5dv is not supported' | head -n 3)
    [ -z "$bad" ] || why="$why logged: $(echo "$bad" | cut -c1-200 | tr '\n' '|');"
    if [ -z "$why" ]; then
        echo "PASS $name"
    elif [ "$why" = " server received no test string;" ] &&
         grep -q 'unable to receive UCX message (Connection reset by remote peer)' "$tmp/srv"; then
        # connected through rdmacm, the client sent everything and ended
        # well, the server's receive failed on the disconnect: the
        # example's race (its client force-closes its endpoint as soon as
        # its sends complete locally; eager stream sends complete at once
        # on this device), the C original over the tcp CM alike
        if [ "$tries" -lt 3 ]; then
            return 2
        fi
        echo "XFAIL $name: the server lost the data to the client's force-close (the example's race) in $tries tries"
    else
        echo "FAIL $name:$why"
        grep -v 'UCX  DEBUG\|UCX  TRACE' "$tmp/cli" | cut -c1-200 | tail -n 5 | sed 's/^/#   client: /'
        grep -v 'UCX  DEBUG\|UCX  TRACE' "$tmp/srv" | cut -c1-200 | tail -n 5 | sed 's/^/#   server: /'
        fails=$((fails + 1))
    fi
}

echo "# ucp_client_server through rdmacm, ${libdir:-the C original (system UCX)}"
for mode in ${RDMACM_UCP_MODES:-tag stream}; do
    for size in ${RDMACM_UCP_SIZES:-16 300000}; do
        run_case "ib 127.0.0.1 -c $mode -s $size" 127.0.0.1 $mode $size
    done
done

if [ "$(id -u)" = 0 ] && ip netns add "$a" && ip netns add "$b" &&
   ip link add "ua$$" type veth peer name "ub$$" &&
   ip link set "ua$$" netns "$a" && ip link set "ub$$" netns "$b" &&
   ip -n "$a" addr add "10.215.$net.1/24" dev "ua$$" &&
   ip -n "$b" addr add "10.215.$net.2/24" dev "ub$$" &&
   ip -n "$a" link set lo up && ip -n "$b" link set lo up &&
   ip -n "$a" link set "ua$$" up && ip -n "$b" link set "ub$$" up; then
    sa=10.215.$net.1
    for size in ${RDMACM_UCP_SIZES:-16 300000}; do
        run_case "roce netns -c tag -s $size" "$sa" tag $size \
            "ip netns exec $a env SOFTRDMA_LINK_LAYERS=eth SOFTRDMA_NETDEVS=ua$$" \
            "ip netns exec $b env SOFTRDMA_LINK_LAYERS=eth SOFTRDMA_NETDEVS=ub$$"
    done
    run_case "ib netns -c tag -s 16" "$sa" tag 16 "ip netns exec $a" "ip netns exec $b"
else
    echo "SKIP namespace cases (root and ip netns needed)"
fi
left=$(ls -A "$SOFTRDMA_SHM_DIR" 2>/dev/null | tr '\n' ' ')
if [ -n "$left" ]; then echo "FAIL left in $SOFTRDMA_SHM_DIR: $left"; fails=$((fails + 1)); fi
echo "# $fails case(s) failed"
exit $fails
