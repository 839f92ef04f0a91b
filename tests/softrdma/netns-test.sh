#!/bin/bash
# Two processes in two network namespaces on one soft RDMA fabric (the
# registry in /dev/shm and process_vm_* span network namespaces). Creates
# two namespaces joined by a veth pair, runs xproc-test as server in one and
# client in the other, then rc_verbs ucx_perftest rows the same way
# (rc-matrix.sh, SOFTRDMA_ONLY selects them), and deletes the namespaces.
# Needs root (ip netns). Exit status: number of failures.
#   tests/softrdma/netns-test.sh [SERVER_LIBDIR [CLIENT_LIBDIR]]
here=$(cd "$(dirname "$0")" && pwd)
out=${SOFTRDMA_BUILD:-$here/build}
[ -x "$out/xproc-test" ] || "$here/build.sh" >/dev/null || exit 100
a=srxa$$ b=srxb$$
net=$((RANDOM % 200 + 20))
# shellcheck source=registry-dir.sh
. "$here/registry-dir.sh"
tmp=$(mktemp -d -t softrdma-netns.XXXXXX)
cleanup() {
    ip netns del "$a" 2>/dev/null
    ip netns del "$b" 2>/dev/null
    rm -rf "$tmp"
    [ -z "$own_shm" ] || rm -rf "$SOFTRDMA_SHM_DIR"
}
trap cleanup EXIT
ip netns add "$a" && ip netns add "$b" &&
ip link add "va$$" type veth peer name "vb$$" &&
ip link set "va$$" netns "$a" && ip link set "vb$$" netns "$b" &&
ip -n "$a" addr add "10.213.$net.1/24" dev "va$$" &&
ip -n "$b" addr add "10.213.$net.2/24" dev "vb$$" &&
ip -n "$a" link set lo up && ip -n "$b" link set lo up &&
ip -n "$a" link set "va$$" up && ip -n "$b" link set "vb$$" up || {
    echo "FAIL cannot set up network namespaces"; exit 1; }
fails=0

echo "# xproc-test: server in netns $a, client in netns $b"
ip netns exec "$a" timeout -k 5 60 "$here/run.sh" "$out/xproc-test" --server "$tmp" \
    > "$tmp/server.out" 2>&1 &
spid=$!
ip netns exec "$b" timeout -k 5 60 "$here/run.sh" "$out/xproc-test" --client "$tmp"
rc=$?
wait $spid
[ $rc -eq 0 ] || fails=$((fails + 1))

echo "# ucx_perftest rc_verbs: server in netns $a (10.213.$net.1), client in netns $b"
SOFTRDMA_NETNS="$a $b" SOFTRDMA_SERVER_ADDR=10.213.$net.1 \
SOFTRDMA_ONLY=${SOFTRDMA_ONLY:-'am_lat short 8|am_bw bcopy 4096|put_bw zcopy 65536|get zcopy 65536|fadd'} \
    "$here/rc-matrix.sh" "${1:-}" "${2:-}"
fails=$((fails + $?))
left=$(ls -A "$SOFTRDMA_SHM_DIR" | tr '\n' ' ')
if [ -n "$left" ]; then echo "FAIL left in $SOFTRDMA_SHM_DIR: $left"; fails=$((fails + 1)); fi
exit $fails
