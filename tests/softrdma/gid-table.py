#!/usr/bin/env python3
"""The GID table of a RoCE port on network interface IFACE, as the kernel
builds one: the interface's IPv6 link-local address (or the one its MAC
address gives), then each IPv4 address (IPv4-mapped) and each global IPv6
address, every one as RoCE v1 and as RoCE v2. Also the port's active MTU:
the largest InfiniBand MTU that fits the interface's MTU less 80 bytes of
headers (as the kernel's soft RoCE driver computes it).

Prints lines for tests/softrdma/run.sh:
    mtu BYTES
    gid INDEX xxxx:xxxx:xxxx:xxxx:xxxx:xxxx:xxxx:xxxx
    type INDEX IB/RoCE v1|RoCE v2
Usage: gid-table.py IFACE
"""
import ipaddress
import json
import subprocess
import sys


def sysfs_gid(addr):
    h = ipaddress.IPv6Address(addr).packed.hex()
    return ":".join(h[i:i + 4] for i in range(0, 32, 4))


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    nd = sys.argv[1]
    try:
        with open(f"/sys/class/net/{nd}/mtu") as f:
            mtu = int(f.read())
        with open(f"/sys/class/net/{nd}/address") as f:
            mac = f.read().strip()
        out = subprocess.run(["ip", "-j", "addr", "show", "dev", nd], check=True, capture_output=True, text=True)
    except (OSError, ValueError, subprocess.CalledProcessError) as e:
        sys.exit(f"gid-table.py: {nd}: {e}")
    infos = json.loads(out.stdout or "[]")
    addrs = [a for i in infos for a in i.get("addr_info", [])]
    link_local = [a["local"] for a in addrs if a.get("family") == "inet6" and a.get("scope") == "link"]
    if link_local:
        ll = link_local[0]
    else:
        b = bytes(int(x, 16) for x in mac.split(":")) if mac.count(":") == 5 else bytes(6)
        eui = bytes([b[0] ^ 2]) + b[1:3] + b"\xff\xfe" + b[3:6]
        ll = str(ipaddress.IPv6Address(b"\xfe\x80" + bytes(6) + eui))
    gids = [ll]
    gids += ["::ffff:" + a["local"] for a in addrs if a.get("family") == "inet"]
    gids += [a["local"] for a in addrs if a.get("family") == "inet6" and a.get("scope") == "global"]
    ib_mtu = 256
    for m in (4096, 2048, 1024, 512, 256):
        if mtu - 80 >= m:
            ib_mtu = m
            break
    print("mtu", ib_mtu)
    i = 0
    for g in gids:
        for t in ("IB/RoCE v1", "RoCE v2"):
            print("gid", i, sysfs_gid(g))
            print("type", i, t)
            i += 1


main()
