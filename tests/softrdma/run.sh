#!/bin/sh
# Runs CMD... with the soft RDMA device visible to libibverbs:
#   tests/softrdma/run.sh ibv_devinfo -v
# - a sysfs tree for softrdma0..softrdma<N-1> (SOFTRDMA_NDEV, default 1), in a
#   temporary directory, given to libibverbs through SYSFS_PATH; the port of
#   each device has an InfiniBand link layer, or an Ethernet one (RoCE) for
#   the devices marked "eth" in SOFTRDMA_LINK_LAYERS (one word per device
#   from softrdma0, "ib" or "eth"; SOFTRDMA_NDEV defaults to its length):
#   SOFTRDMA_LINK_LAYERS="ib eth" is an IB device and a RoCE one;
# - a private mount namespace (unshare -m as root, unshare -mr otherwise)
#   whose /dev is a copy of the host's (bind mounts) plus
#   /dev/infiniband/uverbsN, each a bind of /dev/null (device 1:3, as the
#   sysfs "dev" files say); the host's /dev is not touched;
# - LD_PRELOAD of the shim (no NETLINK_RDMA socket, uverbs command writes
#   answered) and RDMAV_DRIVERS naming the provider by absolute path.
# The provider is built first if needed (build.sh). Exit status is CMD's.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=${SOFTRDMA_BUILD:-$here/build}
link_layers=$(printf '%s' "${SOFTRDMA_LINK_LAYERS:-}" | tr ',' ' ')
nll=$(set -- $link_layers; echo $#)
for ll in $link_layers; do
    case $ll in ib|eth) ;; *)
        echo "$0: SOFTRDMA_LINK_LAYERS: '$ll' is neither ib nor eth" >&2
        exit 2 ;;
    esac
done
[ "$nll" -gt 0 ] || nll=1
ndev=${SOFTRDMA_NDEV:-$nll}
if [ $# -eq 0 ]; then
    echo "usage: $0 CMD [ARGS...]" >&2
    exit 2
fi
if [ ! -e "$out/libsoftrdma-rdmav34.so" ] || [ ! -e "$out/libsoftrdma-shim.so" ] ||
   [ -n "$(find "$here/provider" "$here/provider-abi.tsv" -newer "$out/libsoftrdma-rdmav34.so" 2>/dev/null)" ]; then
    "$here/build.sh" >/dev/null
fi

tmp=$(mktemp -d -t softrdma.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# ---- sysfs tree
sys=$tmp/sys
put() { mkdir -p "$(dirname "$1")"; printf '%s\n' "$2" > "$1"; }
put "$sys/class/infiniband_verbs/abi_version" 6
i=0
while [ "$i" -lt "$ndev" ]; do
    dev=softrdma$i
    uv=$sys/class/infiniband_verbs/uverbs$i
    put "$uv/abi_version" 6
    put "$uv/dev" 1:3
    put "$uv/ibdev" "$dev"
    ib=$sys/class/infiniband/$dev
    guid=$(printf '0200:5352:4d41:%04x' $((i + 1)))
    put "$ib/node_type" "1: CA"
    put "$ib/node_guid" "$guid"
    put "$ib/sys_image_guid" "$guid"
    put "$ib/fw_ver" "1.0.0"
    put "$ib/hca_type" "softrdma"
    put "$ib/hw_rev" "0"
    put "$ib/board_id" "SOFTRDMA"
    put "$ib/node_desc" "softrdma $dev"
    put "$ib/device/modalias" "softrdma:$dev"
    p=$ib/ports/1
    ll=ib j=0
    for w in $link_layers; do
        [ "$j" = "$i" ] && ll=$w
        j=$((j + 1))
    done
    put "$p/state" "4: ACTIVE"
    put "$p/phys_state" "5: LinkUp"
    if [ "$ll" = eth ]; then
        # RoCE: no LID, no subnet manager; the GID table of a RoCE port
        # with one IPv4 address: the link-local GID made from the MAC
        # address 02:00:53:52:4d:<N+1> and the address 10.83.0.<N+1> as an
        # IPv4-mapped GID, each as RoCE v1 and as RoCE v2 (no gid_attrs/ndevs:
        # the netdev is not in this network namespace)
        put "$p/lid" "0x0"
        put "$p/sm_lid" "0x0"
        put "$p/lid_mask_count" "0"
        put "$p/sm_sl" "0"
        put "$p/rate" "100 Gb/sec (4X EDR)"
        put "$p/link_layer" "Ethernet"
        put "$p/cap_mask" "0x04010000"
        ll_gid=$(printf 'fe80:0000:0000:0000:0000:53ff:fe52:4d%02x' $((i + 1)))
        ip_gid=$(printf '0000:0000:0000:0000:0000:ffff:0a53:00%02x' $((i + 1)))
        put "$p/gids/0" "$ll_gid"
        put "$p/gid_attrs/types/0" "IB/RoCE v1"
        put "$p/gids/1" "$ll_gid"
        put "$p/gid_attrs/types/1" "RoCE v2"
        put "$p/gids/2" "$ip_gid"
        put "$p/gid_attrs/types/2" "IB/RoCE v1"
        put "$p/gids/3" "$ip_gid"
        put "$p/gid_attrs/types/3" "RoCE v2"
    else
        put "$p/lid" "$(printf '0x%x' $((i + 1)))"
        put "$p/sm_lid" "0x1"
        put "$p/lid_mask_count" "0"
        put "$p/sm_sl" "0"
        put "$p/rate" "100 Gb/sec (4X EDR)"
        put "$p/link_layer" "InfiniBand"
        put "$p/cap_mask" "0x00010000"
        put "$p/gids/0" "fe80:0000:0000:0000:$guid"
        put "$p/gid_attrs/types/0" "IB/RoCE v1"
    fi
    put "$p/pkeys/0" "0xffff"
    i=$((i + 1))
done

# ---- the namespace
inner='
set -e
tmp=$1; out=$2; ndev=$3; shift 3
mkdir "$tmp/hostdev"
mount --rbind /dev "$tmp/hostdev"
mount -t tmpfs -o mode=755 softrdma-dev /dev
for e in "$tmp"/hostdev/* "$tmp"/hostdev/.[!.]*; do
    [ -e "$e" ] || [ -L "$e" ] || continue
    n=/dev/${e##*/}
    if [ -L "$e" ]; then
        ln -s "$(readlink "$e")" "$n"
    elif [ -d "$e" ]; then
        mkdir "$n"; mount --rbind "$e" "$n"
    else
        : > "$n"; mount --bind "$e" "$n"
    fi
done
mkdir -p /dev/infiniband
i=0
while [ "$i" -lt "$ndev" ]; do
    : > /dev/infiniband/uverbs$i
    mount --bind /dev/null /dev/infiniband/uverbs$i
    i=$((i + 1))
done
umount -l "$tmp/hostdev"
export SYSFS_PATH="$tmp/sys"
export RDMAV_DRIVERS="$out/libsoftrdma"
export LD_PRELOAD="$out/libsoftrdma-shim.so${LD_PRELOAD:+:$LD_PRELOAD}"
exec "$@"
'
if [ "$(id -u)" = 0 ]; then ns="-m"; else ns="-mr"; fi
set +e
# unshare execs the shell, which execs CMD: $child is CMD itself. A TERM or
# INT to run.sh (e.g. from timeout) is passed on to it.
unshare $ns --propagation private sh -c "$inner" softrdma-ns "$tmp" "$out" "$ndev" "$@" <&0 &
child=$!
trap 'kill -TERM $child 2>/dev/null' TERM INT HUP
while :; do
    wait $child
    rc=$?
    kill -0 $child 2>/dev/null || break
done
trap 'rm -rf "$tmp"' EXIT
# Users of the registry killed without leaving: reap them; the segment goes
# when no live user is left (another run.sh's command may still use it).
"$out/softrdma-gc" "$out/libsoftrdma-rdmav34.so" || :
exit $rc
