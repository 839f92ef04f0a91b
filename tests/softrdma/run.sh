#!/bin/sh
# Runs CMD... with the soft RDMA device visible to libibverbs:
#   tests/softrdma/run.sh ibv_devinfo -v
# - a sysfs tree for softrdma0..softrdma<N-1> (SOFTRDMA_NDEV, default 1), in a
#   temporary directory, given to libibverbs through SYSFS_PATH; the port of
#   each device has an InfiniBand link layer, or an Ethernet one (RoCE) for
#   the devices marked "eth" in SOFTRDMA_LINK_LAYERS (one word per device
#   from softrdma0, "ib" or "eth"; SOFTRDMA_NDEV defaults to its length):
#   SOFTRDMA_LINK_LAYERS="ib eth" is an IB device and a RoCE one;
#   a RoCE port's GID table is made from a network interface of the
#   caller's network namespace when SOFTRDMA_NETDEVS names one (one word per
#   RoCE device, in order; see gid-table.py): its link-local address and
#   each of its IPv4 and global IPv6 addresses, as RoCE v1 and v2, with
#   gid_attrs/ndevs naming the interface and an active MTU that follows its
#   MTU; without, a fixed table (10.83.0.<N+1>, no interface);
# - the tree is also what /sys/class/infiniband and
#   /sys/class/infiniband_verbs show inside the namespace (where UCX reads
#   a GID's RoCE version, interface and traffic class): /sys/class becomes a
#   copy of the host's (bind mounts) plus those two;
# - a private mount namespace (unshare -m as root, unshare -mr otherwise)
#   whose /dev is a copy of the host's (bind mounts) plus
#   /dev/infiniband/uverbsN, each a bind of /dev/null (device 1:3, as the
#   sysfs "dev" files say); the host's /dev is not touched;
# - LD_PRELOAD of the shim (no NETLINK_RDMA socket, uverbs command writes
#   answered) and RDMAV_DRIVERS naming the provider by absolute path;
# - with SOFTRDMA_CM=1 (off by default), RDMA CM on the device: our
#   librdmacm.so.1 (rdmacm/, built by build.sh) bind-mounted over the
#   system's library file (readlink -f of librdmacm.so.1), so every program
#   of the namespace linked with librdmacm uses it, and
#   /dev/infiniband/rdma_cm (a bind of /dev/null) as the library checks.
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
cm_lib=
if [ "${SOFTRDMA_CM:-0}" = 1 ]; then
    if [ ! -e "$out/librdmacm.so.1" ] ||
       [ -n "$(find "$here/rdmacm" -newer "$out/librdmacm.so.1" 2>/dev/null)" ]; then
        "$here/build.sh" >/dev/null
    fi
    for l in /usr/lib/x86_64-linux-gnu/librdmacm.so.1 /usr/lib64/librdmacm.so.1 /usr/lib/librdmacm.so.1; do
        [ -e "$l" ] && { cm_lib=$(readlink -f "$l"); break; }
    done
    if [ -z "$cm_lib" ]; then
        echo "$0: SOFTRDMA_CM=1: no system librdmacm.so.1 to stand in for (librdmacm1)" >&2
        exit 2
    fi
fi

tmp=$(mktemp -d -t softrdma.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# ---- sysfs tree
sys=$tmp/sys
put() { mkdir -p "$(dirname "$1")"; printf '%s\n' "$2" > "$1"; }
put "$sys/class/infiniband_verbs/abi_version" 6
i=0
eth_seen=0
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
        # RoCE: no LID, no subnet manager; the GID table from the
        # interface SOFTRDMA_NETDEVS names, or that of a RoCE port with one
        # IPv4 address: the link-local GID made from the MAC address
        # 02:00:53:52:4d:<N+1> and the address 10.83.0.<N+1> as an
        # IPv4-mapped GID, each as RoCE v1 and as RoCE v2 (no
        # gid_attrs/ndevs: no such interface exists)
        put "$p/lid" "0x0"
        put "$p/sm_lid" "0x0"
        put "$p/lid_mask_count" "0"
        put "$p/sm_sl" "0"
        put "$p/rate" "100 Gb/sec (4X EDR)"
        put "$p/link_layer" "Ethernet"
        put "$p/cap_mask" "0x04010000"
        nd=
        k=0
        for w in ${SOFTRDMA_NETDEVS:-}; do
            [ "$k" = "$eth_seen" ] && nd=$w
            k=$((k + 1))
        done
        eth_seen=$((eth_seen + 1))
        if [ -n "$nd" ]; then
            python3 "$here/gid-table.py" "$nd" > "$tmp/gids" || {
                echo "$0: SOFTRDMA_NETDEVS: no GID table from interface '$nd'" >&2
                exit 2
            }
            while read -r what idx val; do
                case $what in
                    mtu) put "$p/active_mtu" "$idx" ;;
                    gid) put "$p/gids/$idx" "$val"; put "$p/gid_attrs/ndevs/$idx" "$nd" ;;
                    type) put "$p/gid_attrs/types/$idx" "$val" ;;
                esac
            done < "$tmp/gids"
        else
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
        fi
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
tmp=$1; out=$2; ndev=$3; cm_lib=$4; shift 4
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
if [ -n "$cm_lib" ]; then
    : > /dev/infiniband/rdma_cm
    mount --bind /dev/null /dev/infiniband/rdma_cm
    mount --bind "$out/librdmacm.so.1" "$cm_lib"
fi
umount -l "$tmp/hostdev"
# /sys/class: the classes of the host (bind mounts) and the device tree
mkdir "$tmp/sysclass"
if mount -t tmpfs -o mode=755 softrdma-sysclass "$tmp/sysclass" 2>/dev/null; then
    for e in /sys/class/*; do
        [ -e "$e" ] || continue
        n=$tmp/sysclass/${e##*/}
        mkdir "$n"; mount --rbind "$e" "$n"
    done
    for c in infiniband infiniband_verbs; do
        mkdir -p "$tmp/sysclass/$c"
        mount --bind "$tmp/sys/class/$c" "$tmp/sysclass/$c"
    done
    mount --rbind "$tmp/sysclass" /sys/class
    umount -l "$tmp/sysclass"
else
    echo "softrdma: /sys/class/infiniband not shown (no tmpfs mount here)" >&2
fi
export SYSFS_PATH="$tmp/sys"
export RDMAV_DRIVERS="$out/libsoftrdma"
export LD_PRELOAD="$out/libsoftrdma-shim.so${LD_PRELOAD:+:$LD_PRELOAD}"
exec "$@"
'
if [ "$(id -u)" = 0 ]; then ns="-m"; else ns="-mr"; fi
set +e
# unshare execs the shell, which execs CMD: $child is CMD itself. A TERM or
# INT to run.sh (e.g. from timeout) is passed on to it.
unshare $ns --propagation private sh -c "$inner" softrdma-ns "$tmp" "$out" "$ndev" "$cm_lib" "$@" <&0 &
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
