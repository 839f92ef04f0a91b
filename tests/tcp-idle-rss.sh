#!/usr/bin/env bash
# Memory per idle peer of a tcp interface: a process opens tcp on lo
# (c-tests/tcp_idle_server.c), N raw connections are made to its
# listening port (default 200), and its VmRSS is compared before and after,
# for peers that only connect and for peers that also send part of the
# magic number (the first byte used to allocate the whole receive segment).
# The bound (RSS_MAX_PER_CONN, bytes, default 2048) applies to ours;
# with no LIBDIR (the system library, or LIBDIR holding the reference
# libuct itself) the numbers are only reported.
# Also checks that the process survives and closes what it accepted when
# the peers go, and that running out of descriptors on accept (the server
# run with RLIMIT_NOFILE 64 and 100 peers) does not stop it from serving:
# once the peers go, a new peer's connection request is answered.
#
# Usage: tests/tcp-idle-rss.sh [LIBDIR]   (or UCT_LIBDIR; empty = system library)
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib/common.sh"

resolve_libdir "$@"
N=${RSS_CONNS:-200}
MAX=${RSS_MAX_PER_CONN:-2048}
make_workdir
if build_c "$T_WORK/srv" "$here/../c-tests/tcp_idle_server.c" 2>"$T_WORK/cc.log"; then
    pass "build tcp_idle_server"
else
    cat "$T_WORK/cc.log"
    abort "build tcp_idle_server" "compiler failed"
fi

measure() { # $1: bytes each peer sends after connecting ("" for none)
    local send=$1 out
    out=$(python3 - "$T_WORK/srv" "$N" "$send" "${RUN[@]}" <<'PY'
import os, socket, subprocess, sys, time
srv, n, send, run = sys.argv[1], int(sys.argv[2]), bytes.fromhex(sys.argv[3]), sys.argv[4:]
p = subprocess.Popen(run + [srv], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
port = int(p.stdout.readline().split()[1])
def rss():
    for l in open(f"/proc/{p.pid}/status"):
        if l.startswith("VmRSS:"):
            return int(l.split()[1]) * 1024
def fds():
    return len(os.listdir(f"/proc/{p.pid}/fd"))
# warm up: one connection made and closed, so that one-time allocations
# (the epoll event array, libc's arenas) are not counted
w = socket.create_connection(("127.0.0.1", port)); time.sleep(0.2); w.close(); time.sleep(0.3)
before, fd0 = rss(), fds()
socks = [socket.create_connection(("127.0.0.1", port)) for _ in range(n)]
for s in socks:
    if send:
        s.sendall(send)
deadline = time.time() + 10
while fds() < fd0 + n and time.time() < deadline:
    time.sleep(0.05)
time.sleep(0.5)
after, fd1 = rss(), fds()
for s in socks:
    s.close()
deadline = time.time() + 10
while fds() > fd0 and time.time() < deadline:
    time.sleep(0.05)
fd2 = fds()
p.stdin.write("q\n"); p.stdin.flush()
rc = p.wait(timeout=20)
print(f"{(after - before) // n} {after - before} {fd1 - fd0} {fd2 - fd0} {rc}")
PY
)
    echo "$out"
}

for mode in idle magic-byte; do
    send=""
    [ "$mode" = magic-byte ] && send=78
    read -r per total accepted left rc <<<"$(measure "$send")"
    name="$N $mode connections"
    if [ -z "$rc" ] || [ "$rc" != 0 ]; then
        fail "$name" "server exit status '${rc:-none}'"
        continue
    fi
    echo "# $name: RSS +$total bytes ($per per connection), $accepted accepted, $left left after the peers closed"
    if [ "$accepted" -ne "$N" ]; then
        fail "$name" "accepted $accepted of $N"
    elif [ "$left" -gt 0 ]; then
        fail "$name" "$left descriptors still open after the peers closed"
    elif ! testing_original && [ "$per" -gt "$MAX" ]; then
        fail "$name" "$per bytes of RSS per connection, more than $MAX"
    else
        pass "$name: $per bytes of RSS per connection"
    fi
done
# Out of descriptors: the listening socket must survive it.
res=$(python3 - "$T_WORK/srv" "${RUN[@]}" <<'PY'
import resource, socket, struct, subprocess, sys, time
srv, run = sys.argv[1], sys.argv[2:]
lim = lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))
p = subprocess.Popen(run + [srv], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, preexec_fn=lim)
port = int(p.stdout.readline().split()[1])
socks = []
for _ in range(100):
    try:
        socks.append(socket.create_connection(("127.0.0.1", port), timeout=2))
    except OSError:
        break
time.sleep(1.5)
for s in socks:
    s.close()
time.sleep(1.5)
req = struct.pack("<IBQ", 1, 0, 77) + struct.pack("<H", 2) + struct.pack(">H", 1) + bytes([127, 0, 0, 1]) + bytes(8)
got = b""
try:
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.sendall(struct.pack("<Q", 0xCAFEBABE12345678) + struct.pack("<BI", 32, len(req)) + req)
    while len(got) < 9:
        b = s.recv(64)
        if not b:
            break
        got += b
    s.close()
except OSError:
    pass
try:
    p.stdin.write("q\n"); p.stdin.flush()
    rc = p.wait(timeout=20)
except Exception:
    p.kill()
    rc = "killed/%s" % p.wait()
print("answered" if got[:9] == struct.pack("<BI", 32, 4) + struct.pack("<I", 2) else "silent", rc)
PY
)
read -r answer rc <<<"$res"
name="accept out of descriptors (RLIMIT_NOFILE 64, 100 peers), then a new peer"
if testing_original; then
    pass "$name: $answer, server exit status ${rc:-none} (system library: reported only)"
elif [ "${rc:-x}" != 0 ]; then
    fail "$name" "server exit status '${rc:-none}'"
elif [ "$answer" = answered ]; then
    pass "$name: answered"
else
    fail "$name" "the new peer's connection request was not answered"
fi
finish
