#!/usr/bin/env python3
"""Hostile peers against a real UCT server process (c-tests/attack_server.c).

Usage: attack.py SERVER_BIN [--full] [--only NAME,...] [--markdown FILE] [--tsv FILE]
                  [--logdir DIR]

--full (or UCT_RS_TIER=full): every unknown AM id 36..255, 2000-connection
floods, 200 half-open connections; the default quick tier samples the ids
and uses 300 / 40.

The server runs on whatever libuct the environment gives it (the shell
wrapper sets LD_LIBRARY_PATH). Each case throws one class of bad input at
the tcp iface or the sockcm listener over 127.0.0.1, or writes forged
elements into the FIFO of the server's posix iface (mapped through
/proc/PID/fd, as any process of the same user can), then checks:

  alive   the process still runs and answers (else crash/hang: the server
          is restarted for the next case)
  served  a well-formed python tcp peer (magic, connection request, an AM
          the server's handler records), a well-formed python sockcm client
          (request, reply, notify) and two real UCT client processes (a tcp
          endpoint sending an AM, a sockcm client) are served
  write   no canary changed and the registered region is untouched
  proto   what the case itself expects (nothing delivered too early, no
          second callback, stalled connections closed, a forged FIFO element
          dropped with an error line and the posix iface still served by a
          python writer and a real UCT sender, ...)
  fds     the server's open fd count returns to its value before the case
  rss     the server's RSS returns near its value before the case

Prints one row per case and a summary; exits 0 only when every case passes.
"""
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from wire import (MAGIC, AM_CM, AM_PUT_REQ, AM_PUT_ACK, AM_KEEPALIVE, EV_ACK, EV_ACK_REQ, EV_FIN,  # noqa: E402
                  am_payload, frame, conn_req, cm_event, put_req, cm_hdr)
from fifo import Fifo, ELEM_HDR  # noqa: E402

HS_TIMEOUT = float(os.environ.get('ATTACK_HS_TIMEOUT', '1'))   # seconds
RSS_SLACK_KB = int(os.environ.get('ATTACK_RSS_SLACK_KB', '1024'))
# the tier: UCT_RS_TIER=full (as for every suite) or --full
FULL_TIER = os.environ.get('UCT_RS_TIER') == 'full' or '--full' in sys.argv
CASE_LIMIT = 900 if FULL_TIER else 180
IO_TIMEOUT = 3.0


class Dead(Exception):
    pass


class Hang(Exception):
    pass


def _alarm(signum, frm):
    raise Hang()


class Server:
    """One attack_server process; commands over its stdin/stdout."""

    def __init__(self, binary, env=None, nofile=None, log=None):
        self.binary, self.extra_env, self.nofile = binary, env or {}, nofile
        self.log = log
        self.proc = None
        self.buf = b''
        self.start()

    def start(self):
        env = dict(os.environ)
        env.setdefault('UCX_TCP_HANDSHAKE_TIMEOUT', '%gs' % HS_TIMEOUT)
        env.setdefault('UCX_TCP_CM_HANDSHAKE_TIMEOUT', '%gs' % HS_TIMEOUT)
        env.update(self.extra_env)
        cmd = [self.binary, 'server']
        if self.nofile:
            cmd = ['bash', '-c', 'ulimit -n %d && exec "$0" server' % self.nofile, self.binary]
        err = open(self.log, 'ab') if self.log else subprocess.DEVNULL
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=err, env=env)
        if self.log:
            err.close()
        self.buf = b''
        self.liblines = []
        line = self.readline(15)
        if not line.startswith('READY'):
            raise RuntimeError('server did not start: %r' % line)
        self.info = dict(kv.split('=', 1) for kv in line.split()[1:])
        for k in ('region', 'before', 'after', 'far', 'heap'):
            self.info[k] = int(self.info[k], 16)
        for k in ('port', 'cm_port', 'region_len', 'canary_len', 'far_len', 'pid', 'mm_short', 'mm_seg'):
            self.info[k] = int(self.info[k])

    def ended(self):
        """None while running, else how it ended."""
        r = self.proc.poll()
        if r is None:
            return None
        if r < 0:
            try:
                return 'crash(%s)' % signal.Signals(-r).name
            except ValueError:
                return 'crash(signal %d)' % -r
        return 'exit %d' % r

    def readline(self, timeout):
        """The next answer line ("@@ " prefix); the library's own log lines
        on stdout are kept aside."""
        end = time.time() + timeout
        fd = self.proc.stdout.fileno()
        while True:
            while b'\n' not in self.buf:
                left = end - time.time()
                if left <= 0:
                    raise Hang()
                r, _, _ = select.select([fd], [], [], left)
                if r:
                    chunk = os.read(fd, 65536)
                    if not chunk:
                        raise Dead()
                    self.buf += chunk
            line, self.buf = self.buf.split(b'\n', 1)
            if line.startswith(b'@@ '):
                return line[3:].decode(errors='replace')
            if len(self.liblines) < 10000:
                self.liblines.append(line.decode(errors='replace'))

    def cmd(self, c, timeout=10, expect=None):
        """Send a command, return its answer. With `expect`, earlier answers
        not starting with it are skipped (those of a command whose wait
        was cut short by a case's time limit)."""
        if self.ended():
            raise Dead()
        try:
            self.proc.stdin.write((c + '\n').encode())
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            raise Dead()
        end = time.time() + timeout
        try:
            while True:
                line = self.readline(max(0.1, end - time.time()))
                if expect is None or line.startswith(expect):
                    return line
        except Dead:
            self.proc.wait(5)
            raise

    def status(self):
        line = self.cmd('status', expect='STATUS')
        if not line.startswith('STATUS'):
            raise RuntimeError('bad status line %r' % line)
        st = dict(kv.split('=', 1) for kv in line.split()[1:])
        for k, v in list(st.items()):
            if v.lstrip('-').isdigit():
                st[k] = int(v)
        ids = {}
        if st['amids'] != '-':
            for p in st['amids'].split(','):
                i, n = p.split(':')
                ids[int(i)] = int(n)
        st['amids'] = ids
        return st

    def progress(self, ms):
        r = self.cmd('progress %d' % ms, timeout=ms / 1000 + 10, expect='OK')
        if r != 'OK':
            raise RuntimeError(r)

    def stop(self):
        if self.proc is None:
            return
        if self.log and self.liblines:
            with open(self.log, 'a') as f:
                f.write('\n'.join(self.liblines) + '\n')
            self.liblines = []
        if self.proc.poll() is None:
            try:
                self.proc.stdin.write(b'quit\n')
                self.proc.stdin.flush()
                self.proc.wait(5)
            except Exception:
                self.proc.kill()
                self.proc.wait()
        self.proc = None


# --------------------------------------------------------------------------
# Peers.

_LISTEN = None


def listen_port():
    """A real listening address to name in connection requests."""
    global _LISTEN
    if _LISTEN is None:
        _LISTEN = socket.socket()
        _LISTEN.bind(('127.0.0.1', 0))
        _LISTEN.listen(16)
    return _LISTEN.getsockname()[1]


def connect(port, timeout=IO_TIMEOUT):
    s = socket.create_connection(('127.0.0.1', port), timeout=timeout)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def send(s, data):
    try:
        s.sendall(data)
        return True
    except OSError:
        return False


def handshake(srv, cm_id=None):
    s = connect(srv.info['port'])
    s.sendall(MAGIC + conn_req(listen_port(), cm_id))
    return s


def closed_by_peer(s, timeout):
    """True when the other side closes the connection within `timeout`."""
    end = time.time() + timeout
    s.settimeout(0.2)
    while time.time() < end:
        try:
            d = s.recv(65536)
            if not d:
                return True
        except socket.timeout:
            continue
        except OSError:
            return True
    return False


def hard_close(s):
    try:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack('ii', 1, 0))
    except OSError:
        pass
    s.close()


def legit_tcp(srv, am_id=5):
    before = srv.status()['amids'].get(am_id, 0)
    try:
        s = handshake(srv)
        s.sendall(frame(am_id, am_payload(100)))
    except OSError as e:
        return 'tcp:%s' % e.__class__.__name__
    ok = False
    for _ in range(20):
        srv.progress(50)
        if srv.status()['amids'].get(am_id, 0) == before + 1:
            ok = True
            break
    s.close()
    return None if ok else 'tcp'


def legit_cm(srv):
    st0 = srv.status()
    try:
        s = connect(srv.info['cm_port'])
        s.sendall(cm_hdr(64) + bytes(i & 0xff for i in range(64)))
        got = b''
        end = time.time() + 5
        while len(got) < 16 + 32 and time.time() < end:
            srv.progress(20)
            s.settimeout(0.05)
            try:
                d = s.recv(4096)
            except socket.timeout:
                continue
            if not d:
                break
            got += d
        if len(got) < 16 or struct.unpack('<Q', got[:8])[0] != 32 or got[8] != 0:
            s.close()
            return 'cm'
        s.sendall(cm_hdr(0))
        for _ in range(40):
            srv.progress(25)
            if srv.status()['notify'] > st0['notify']:
                break
        s.close()
        srv.progress(50)
    except OSError as e:
        return 'cm:%s' % e.__class__.__name__
    return None if srv.status()['notify'] == st0['notify'] + 1 else 'cm-notify'


def run_client(srv, args, what):
    """A client process of attack_server, progressing the server meanwhile:
    None when it exited 0, else what went wrong."""
    p = subprocess.Popen([srv.binary] + args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    end = time.time() + 15
    while p.poll() is None and time.time() < end:
        srv.progress(50)
    if p.poll() is None:
        p.kill()
        p.wait()
        return '%s(hang)' % what
    p.stdout.read()
    return None if p.returncode == 0 else '%s(rc %d)' % (what, p.returncode)


def legit_uct_cm(srv):
    st0 = srv.status()
    why = run_client(srv, ['cm-client', str(srv.info['cm_port'])], 'uct-cm')
    if why:
        return why
    for _ in range(20):
        if srv.status()['notify'] > st0['notify']:
            return None
        srv.progress(50)
    return 'uct-cm(no notify)'


def legit_uct(srv):
    before = srv.status()['amids'].get(7, 0)
    p = subprocess.Popen([srv.binary, 'client', srv.info['dev'], srv.info['iface']],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    end = time.time() + 15
    while p.poll() is None and time.time() < end:
        srv.progress(50)
    if p.poll() is None:
        p.kill()
        p.wait()
        return 'uct(hang)'
    p.stdout.read()
    for _ in range(20):
        if srv.status()['amids'].get(7, 0) >= before + 1:
            return None if p.returncode == 0 else 'uct(rc %d)' % p.returncode
        srv.progress(50)
    return 'uct'


# --------------------------------------------------------------------------
# Cases. Each gets the server and a dict for notes; returns None (as
# expected) or a short text for the proto column.

def c_put_before_hs_region(srv, n):
    s = connect(srv.info['port'])
    send(s, MAGIC + put_req(srv.info['region'], 64) + b'A' * 64)
    srv.progress(300)
    s.close()


def c_put_before_hs_canary(srv, n):
    s = connect(srv.info['port'])
    send(s, MAGIC + put_req(srv.info['far'], 64) + b'A' * 64)
    srv.progress(300)
    s.close()


def _put_after_hs(srv, addr, length, data):
    s = handshake(srv)
    send(s, put_req(addr, length) + data)
    srv.progress(300)
    s.close()


def c_put_canary_after(srv, n):
    _put_after_hs(srv, srv.info['after'], 64, b'B' * 64)


def c_put_canary_before(srv, n):
    _put_after_hs(srv, srv.info['before'] + 100, 64, b'B' * 64)


def c_put_canary_heap(srv, n):
    _put_after_hs(srv, srv.info['heap'] + 128, 64, b'B' * 64)


def c_put_straddle(srv, n):
    _put_after_hs(srv, srv.info['region'] + srv.info['region_len'] - 16, 64, b'C' * 64)


def c_put_overflow(srv, n):
    _put_after_hs(srv, srv.info['region'] + 16, (1 << 64) - 8, b'D' * 256)


def c_put_short_header(srv, n):
    s = handshake(srv)
    send(s, frame(AM_PUT_REQ, struct.pack('<QH', srv.info['region'], 64)) + b'E' * 64)
    r = closed_by_peer_progress(srv, s)
    s.close()
    return None if r else 'not closed'


def closed_by_peer_progress(srv, s, secs=3):
    end = time.time() + secs
    while time.time() < end:
        srv.progress(100)
        if closed_by_peer(s, 0.05):
            return True
    return False


def c_unknown_am_ids(srv, n):
    ids = range(36, 256) if n['full'] else [36, 37, 63, 64, 100, 128, 200, 254, 255]
    notclosed = []
    for i in ids:
        s = handshake(srv)
        send(s, frame(i, am_payload(16)))
        if not closed_by_peer_progress(srv, s, 2):
            notclosed.append(i)
        s.close()
    return None if not notclosed else 'open after id %s' % ','.join(map(str, notclosed[:4]))


def c_am_before_hs(srv, n):
    before = srv.status()['amids'].get(3, 0)
    s = connect(srv.info['port'])
    send(s, MAGIC + frame(3, am_payload(32)))
    srv.progress(300)
    s.close()
    srv.progress(100)
    return 'delivered' if srv.status()['amids'].get(3, 0) != before else None


def c_second_conn_req(srv, n):
    s = handshake(srv)
    send(s, conn_req(listen_port()))
    r = closed_by_peer_progress(srv, s)
    s.close()
    return None if r else 'not closed'


def _cm_event_case(srv, pre, ev):
    s = connect(srv.info['port'])
    send(s, pre + ev)
    r = closed_by_peer_progress(srv, s)
    s.close()
    return None if r else 'not closed'


def c_cm_ack_unasked(srv, n):
    return _cm_event_case(srv, MAGIC + conn_req(listen_port()), cm_event(EV_ACK))


def c_cm_ackreq_after_req(srv, n):
    return _cm_event_case(srv, MAGIC + conn_req(listen_port()), cm_event(EV_ACK_REQ))


def c_cm_fin_before_req(srv, n):
    return _cm_event_case(srv, MAGIC, cm_event(EV_FIN))


def c_cm_unknown_event(srv, n):
    return _cm_event_case(srv, MAGIC + conn_req(listen_port()), cm_event(0x80))


def c_cm_event_short(srv, n):
    return _cm_event_case(srv, MAGIC, frame(AM_CM, b'\x01\x00'))


def c_put_ack_unasked(srv, n):
    return _cm_event_case(srv, MAGIC + conn_req(listen_port()), frame(AM_PUT_ACK, struct.pack('<I', 77)))


def c_keepalive_before_req(srv, n):
    s = connect(srv.info['port'])
    send(s, MAGIC + frame(AM_KEEPALIVE, b''))
    srv.progress(300)
    s.close()


def c_len_huge(srv, n):
    s = handshake(srv)
    send(s, frame(5, b'x' * 1000, length=0xffffffff))
    r = closed_by_peer_progress(srv, s)
    s.close()
    return None if r else 'not closed'


def c_len_huge_before_hs(srv, n):
    return _cm_event_case(srv, MAGIC, frame(AM_CM, b'x' * 100, length=0xffffffff))


def c_len_over_seg(srv, n):
    s = handshake(srv)
    send(s, frame(5, b'x' * 1000, length=1 << 20))
    r = closed_by_peer_progress(srv, s)
    s.close()
    return None if r else 'not closed'


def c_wrong_magic(srv, n):
    return _cm_event_case(srv, struct.pack('<Q', 0x1122334455667788), conn_req(listen_port()))


def c_truncated(srv, n):
    pieces = [MAGIC[:5], MAGIC + conn_req(listen_port())[:9], MAGIC + conn_req(listen_port()) + b'\x05\x64\x00',
              MAGIC + conn_req(listen_port()) + frame(5, am_payload(100))[:40],
              # (a put into the registered region after the handshake is
              # legitimate: the case allows the region to be written)
              MAGIC + conn_req(listen_port()) + put_req(srv.info['region'], 4096) + b'F' * 100]
    for p in pieces:
        s = connect(srv.info['port'])
        send(s, p)
        srv.progress(100)
        s.close()
        srv.progress(50)


def _flood(srv, port, count, payload=b''):
    for i in range(count):
        try:
            s = socket.create_connection(('127.0.0.1', port), timeout=IO_TIMEOUT)
        except OSError:
            srv.progress(50)
            continue
        if payload:
            send(s, payload)
        if i % 2:
            hard_close(s)
        else:
            s.close()
        if i % 50 == 49:
            srv.progress(20)


def c_flood(srv, n):
    _flood(srv, srv.info['port'], n['flood'])
    _flood(srv, srv.info['port'], n['flood'] // 4, MAGIC)


def _half_open(srv, port, sockets_payloads):
    """Open and hold; the server must close them all after its timeout."""
    base = srv.status()['fds']
    held = []
    for p in sockets_payloads:
        s = connect(port)
        if p:
            send(s, p)
        held.append(s)
    srv.progress(200)
    peak = srv.status()['fds']
    end = time.time() + HS_TIMEOUT + 4
    fds = peak
    while time.time() < end:
        srv.progress(250)
        fds = srv.status()['fds']
        if fds <= base:
            break
    closed = sum(1 for s in held if closed_by_peer(s, 0.01))
    for s in held:
        s.close()
    if fds > base:
        return 'held open: %d of %d fds still open %.0fs after (closed %d)' % (
            fds - base, len(held), HS_TIMEOUT + 4, closed)
    return None


def c_half_open(srv, n):
    k = n['half']
    pl = [b'', MAGIC[:3], MAGIC, MAGIC + conn_req(listen_port())[:10]]
    return _half_open(srv, srv.info['port'], [pl[i % 4] for i in range(k)])


def c_cm_half_open(srv, n):
    k = n['half']
    pl = [b'', cm_hdr(64)[:5], cm_hdr(64), cm_hdr(64) + b'x' * 10]
    return _half_open(srv, srv.info['cm_port'], [pl[i % 4] for i in range(k)])


def _cm_bad(srv, data, want_closed=True, want_req=0):
    st0 = srv.status()
    s = connect(srv.info['cm_port'])
    send(s, data)
    closed = closed_by_peer_progress(srv, s, 3) if want_closed else None
    s.close()
    srv.progress(200)
    st = srv.status()
    why = []
    if st['cmreq'] - st0['cmreq'] > want_req:
        why.append('conn_request called %d times' % (st['cmreq'] - st0['cmreq']))
    if st['cmbad'] != st0['cmbad']:
        why.append('conn_request with bad lengths')
    if want_closed and not closed:
        why.append('not closed')
    return '; '.join(why) or None


def c_cm_len_over_max(srv, n):
    r1 = _cm_bad(srv, cm_hdr(2065) + b'x' * 2065)
    r2 = _cm_bad(srv, cm_hdr(0xffffffffffffffff) + b'x' * 100)
    return r1 or r2


def c_cm_truncated_hdr(srv, n):
    return _cm_bad(srv, cm_hdr(64)[:8], want_closed=False)


def c_cm_truncated_priv(srv, n):
    return _cm_bad(srv, cm_hdr(100) + b'x' * 50, want_closed=False)


def c_cm_data_after_req(srv, n):
    st0 = srv.status()
    s = connect(srv.info['cm_port'])
    send(s, cm_hdr(64) + bytes(64) + b'junk' * 100)
    srv.progress(500)
    s.close()
    srv.progress(300)
    d = srv.status()['cmreq'] - st0['cmreq']
    return None if d <= 1 else 'conn_request called %d times' % d


def c_cm_second_request(srv, n):
    st0 = srv.status()
    s = connect(srv.info['cm_port'])
    send(s, cm_hdr(64) + bytes(64) + cm_hdr(64) + bytes(64))
    srv.progress(500)
    s.close()
    srv.progress(300)
    d = srv.status()['cmreq'] - st0['cmreq']
    return None if d <= 1 else 'conn_request called %d times' % d


def cm_request_answered(srv):
    """A sockcm connection that sent a request of 64 bytes of private data
    and (within 3 s) received the server's answer."""
    s = connect(srv.info['cm_port'])
    send(s, cm_hdr(64) + bytes(64))
    got = b''
    end = time.time() + 3
    while len(got) < 48 and time.time() < end:
        srv.progress(20)
        s.settimeout(0.05)
        try:
            d = s.recv(4096)
            if not d:
                break
            got += d
        except socket.timeout:
            pass
    return s


def c_cm_second_notify(srv, n):
    st0 = srv.status()
    s = cm_request_answered(srv)
    send(s, cm_hdr(0) + cm_hdr(0) + cm_hdr(0))
    srv.progress(500)
    s.close()
    srv.progress(300)
    st = srv.status()
    if st['notifybad'] != st0['notifybad']:
        return 'notify called %d times' % (st['notify'] - st0['notify'])
    return None


def c_cm_notify_bad_len(srv, n):
    s = connect(srv.info['cm_port'])
    send(s, cm_hdr(64) + bytes(64))
    srv.progress(300)
    send(s, cm_hdr(0xffffffff) + b'z' * 64)
    srv.progress(300)
    s.close()
    srv.progress(200)


def c_cm_flood(srv, n):
    _flood(srv, srv.info['cm_port'], n['flood'] // 2)
    _flood(srv, srv.info['cm_port'], n['flood'] // 4, cm_hdr(64) + bytes(64))


def c_put_region_legit(srv, n):
    """A put into the registered region after the handshake: must land."""
    data = bytes((i * 3 + 1) & 0xff for i in range(64))
    s = handshake(srv)
    send(s, put_req(srv.info['region'] + 256, 64, 1) + data)
    srv.progress(300)
    s.close()
    got = bytes.fromhex(srv.cmd('peek 256 64'))
    around = bytes.fromhex(srv.cmd('peek 240 16')) + bytes.fromhex(srv.cmd('peek 320 16'))
    if got != data:
        return 'put not written'
    if around != b'\x5a' * 32:
        return 'written outside [addr, addr+len)'
    return None


# A large active message is received straight into a descriptor, and the
# receive that ends it also takes in what follows (the library may guess
# that the next message is as long). These write the start of one, let the
# server read it, then write its rest together with what follows, so that
# one read sees the end of the message and the next frames.
BIG = 30000


def _am(am_id, n):
    """A frame of `n` body bytes the server's handlers call good."""
    return frame(am_id, am_payload(n - 8))


def _after_large(srv, s, pieces):
    """Write the start of a large message, then `pieces` (each after a
    pause, so that the server reads them one by one)."""
    first = _am(5, BIG)
    send(s, first[:2000])
    for p in [first[2000:] + pieces[0]] + pieces[1:]:
        srv.progress(30)
        send(s, p)


def c_am_after_large(srv, n):
    """Valid traffic: after a large message comes, in the same read, one of
    the same length, a longer or a shorter one, a small one, a keepalive, a
    put into the region, a header split over two reads. Everything is
    delivered, intact and nothing else; the put lands."""
    addr = srv.info['region'] + 512
    data = bytes((i * 7 + 3) & 0xff for i in range(200))
    tail = _am(9, 64)
    cases = [
        ([_am(5, BIG) + _am(6, BIG) + tail], 4),
        ([_am(6, BIG + 3000) + tail], 3),
        ([_am(6, BIG + 200) + tail], 3),
        ([_am(7, BIG - 5000) + _am(8, 100) + tail], 4),
        ([_am(7, 20000) + _am(8, BIG) + tail], 4),
        ([_am(8, 100) + _am(7, BIG) + tail], 4),
        ([frame(AM_KEEPALIVE, b'') + _am(7, BIG) + tail], 3),
        ([put_req(addr, len(data), 1) + data + _am(7, BIG) + tail], 3),
        ([_am(6, BIG)[:3], _am(6, BIG)[3:] + tail], 3),
        ([_am(6, BIG)[:10], _am(6, BIG)[10:] + tail], 3),
    ]
    problems = []
    for k, (pieces, want) in enumerate(cases):
        st = srv.status()
        s = handshake(srv)
        _after_large(srv, s, pieces)
        for _ in range(40):
            srv.progress(25)
            if srv.status()['am'] - st['am'] >= want:
                break
        st2 = srv.status()
        s.close()
        got, bad = st2['am'] - st['am'], st2['ambad'] - st['ambad']
        if got != want or bad:
            problems.append('case %d: %d good of %d, %d bad' % (k, got, want, bad))
    if bytes.fromhex(srv.cmd('peek 512 200')) != data:
        problems.append('put not written')
    return '; '.join(problems) or None


def c_bad_after_large(srv, n):
    """After a large message comes, in the same read, a frame the server
    must refuse (an unknown id, a length over the segment, a put outside
    the region): the message before it is delivered, the connection
    closes, nothing is written."""
    bads = [_am(200, BIG), frame(5, b'x' * 1000, length=1 << 20),
            put_req(srv.info['after'], 64, 1) + b'\xee' * 64]
    problems = []
    for k, bad in enumerate(bads):
        st = srv.status()
        s = handshake(srv)
        _after_large(srv, s, [bad + _am(9, 64)])
        closed = closed_by_peer_progress(srv, s)
        s.close()
        st2 = srv.status()
        got, bad_n = st2['am'] - st['am'], st2['ambad'] - st['ambad']
        if not closed:
            problems.append('case %d: not closed' % k)
        if got != 1 or bad_n:
            problems.append('case %d: %d good of 1, %d bad' % (k, got, bad_n))
    return '; '.join(problems) or None


def c_idle_after_hs_kept(srv, n):
    """A connection that completed the handshake is not closed by the
    handshake timeout: an AM sent after it is delivered."""
    before = srv.status()['amids'].get(6, 0)
    s = handshake(srv)
    end = time.time() + HS_TIMEOUT + 1.5
    while time.time() < end:
        srv.progress(250)
    ok = send(s, frame(6, am_payload(40)))
    srv.progress(300)
    s.close()
    if not ok or srv.status()['amids'].get(6, 0) != before + 1:
        return 'closed or not delivered after %.1fs idle' % (HS_TIMEOUT + 1.5)
    return None


def c_cm_idle_after_notify_kept(srv, n):
    """A sockcm connection that finished its exchange is not closed by the
    handshake timeout."""
    st0 = srv.status()
    s = cm_request_answered(srv)
    send(s, cm_hdr(0))
    end = time.time() + HS_TIMEOUT + 1.5
    while time.time() < end:
        srv.progress(250)
    st = srv.status()
    s.close()
    srv.progress(200)
    if st['notify'] != st0['notify'] + 1:
        return 'no notify'
    if st['disc'] != st0['disc']:
        return 'disconnected after %.1fs idle' % (HS_TIMEOUT + 1.5)
    return None


# --------------------------------------------------------------------------
# The posix iface: elements written straight into its FIFO.

def _mm_fifo(srv):
    """The server's posix FIFO, mapped here (None when it has none)."""
    if srv.info.get('mm', '-') == '-':
        return None
    return Fifo(bytes.fromhex(srv.info['mm']), srv.info['mm_short'] + ELEM_HDR)


def _mm_claim(srv, f):
    for _ in range(100):
        i = f.claim()
        if i is not None:
            return i
        srv.progress(20)
    raise RuntimeError('the posix FIFO stays full')


def _mm_wait(srv, st0, count):
    """Progress until the posix iface's handlers saw `count` more messages
    (good or bad) than in `st0`, at most about a second; the last status."""
    for _ in range(20):
        st = srv.status()
        if st['mm'] + st['mmbad'] >= st0['mm'] + st0['mmbad'] + count:
            return st
        srv.progress(50)
    return srv.status()


def legit_mm(srv, f):
    """Well-formed messages to the posix iface: an inline element written
    here, then a real UCT posix sender's AM short and AM bcopy. None when
    the three arrive good and nothing else, else what went wrong."""
    st0 = srv.status()
    f.inline(_mm_claim(srv, f), 3, 72, am_payload(64))
    why = run_client(srv, ['mm-client', srv.info['mmdev'], srv.info['mm']], 'uct-mm')
    st = _mm_wait(srv, st0, 3)
    if why:
        return why
    good, bad = st['mm'] - st0['mm'], st['mmbad'] - st0['mmbad']
    return None if (good, bad) == (3, 0) else 'mm %d good %d bad of 3' % (good, bad)


def _error_lines(srv, since):
    return [ln for ln in srv.liblines[since:] if ' ERROR ' in ln]


def _mm_forged(srv, inline, length):
    """One element with the length field `length` (inline: the element's
    data holds the good payload of its full room; descriptor: the
    descriptor holds that of a full descriptor): nothing delivered, an
    error line, the posix iface served after."""
    f = _mm_fifo(srv)
    if f is None:
        return 'no posix iface'
    try:
        st0 = srv.status()
        lines0 = len(srv.liblines)
        i = _mm_claim(srv, f)
        if inline:
            f.inline(i, 3, length, am_payload(srv.info['mm_short'] - 8))
        else:
            f.desc(i, 3, length, am_payload(srv.info['mm_seg'] - 8))
        st = _mm_wait(srv, st0, 1)
        errors = _error_lines(srv, lines0)
        served = legit_mm(srv, f)
    finally:
        f.close()
    got = st['mm'] + st['mmbad'] - st0['mm'] - st0['mmbad']
    if got:
        return 'delivered as %d bytes' % st['mmmax']
    if not errors:
        return 'dropped without an error line'
    if served:
        return 'then not served: %s' % served
    return None


def c_mm_max_len_legit(srv, n):
    """Elements of exactly the element's inline room and a descriptor's
    size, written here: both delivered whole and good; then the posix iface
    serves a real sender."""
    f = _mm_fifo(srv)
    if f is None:
        return 'no posix iface'
    try:
        st0 = srv.status()
        short, seg = srv.info['mm_short'], srv.info['mm_seg']
        f.inline(_mm_claim(srv, f), 3, short, am_payload(short - 8))
        f.desc(_mm_claim(srv, f), 3, seg, am_payload(seg - 8))
        st = _mm_wait(srv, st0, 2)
        served = legit_mm(srv, f)
    finally:
        f.close()
    good, bad = st['mm'] - st0['mm'], st['mmbad'] - st0['mmbad']
    if (good, bad) != (2, 0) or st['mmmax'] != seg:
        return '%d good %d bad, longest %d (of %d)' % (good, bad, st['mmmax'], seg)
    return 'not served: %s' % served if served else None


def c_mm_inline_len_65535(srv, n):
    return _mm_forged(srv, True, 0xffff)


def c_mm_inline_len_over(srv, n):
    return _mm_forged(srv, True, srv.info['mm_short'] + 1)


def c_mm_desc_len_65535(srv, n):
    return _mm_forged(srv, False, 0xffff)


def c_mm_desc_len_over_seg(srv, n):
    return _mm_forged(srv, False, srv.info['mm_seg'] + 1)


CASES = [
    ('put-region-legit', 'tcp', c_put_region_legit),
    ('am-after-large', 'tcp', c_am_after_large),
    ('bad-after-large', 'tcp', c_bad_after_large),
    ('idle-after-hs-kept', 'tcp', c_idle_after_hs_kept),
    ('put-before-hs-region', 'tcp', c_put_before_hs_region),
    ('put-before-hs-canary', 'tcp', c_put_before_hs_canary),
    ('put-canary-after', 'tcp', c_put_canary_after),
    ('put-canary-before', 'tcp', c_put_canary_before),
    ('put-canary-heap', 'tcp', c_put_canary_heap),
    ('put-straddle-end', 'tcp', c_put_straddle),
    ('put-len-overflow', 'tcp', c_put_overflow),
    ('put-short-header', 'tcp', c_put_short_header),
    ('unknown-am-ids', 'tcp', c_unknown_am_ids),
    ('am-before-hs', 'tcp', c_am_before_hs),
    ('second-conn-req', 'tcp', c_second_conn_req),
    ('cm-ack-unasked', 'tcp', c_cm_ack_unasked),
    ('cm-ackreq-after-req', 'tcp', c_cm_ackreq_after_req),
    ('cm-fin-before-req', 'tcp', c_cm_fin_before_req),
    ('cm-unknown-event', 'tcp', c_cm_unknown_event),
    ('cm-event-short', 'tcp', c_cm_event_short),
    ('put-ack-unasked', 'tcp', c_put_ack_unasked),
    ('keepalive-before-req', 'tcp', c_keepalive_before_req),
    ('len-0xffffffff', 'tcp', c_len_huge),
    ('len-0xffffffff-pre-hs', 'tcp', c_len_huge_before_hs),
    ('len-over-segment', 'tcp', c_len_over_seg),
    ('wrong-magic', 'tcp', c_wrong_magic),
    ('truncated-then-close', 'tcp', c_truncated),
    ('connect-drop-flood', 'tcp', c_flood),
    ('half-open', 'tcp', c_half_open),
    ('idle-200-rss', 'tcp', None),
    ('fd-exhaustion', 'tcp', None),
    ('sockcm-len-over-max', 'sockcm', c_cm_len_over_max),
    ('sockcm-truncated-hdr', 'sockcm', c_cm_truncated_hdr),
    ('sockcm-truncated-priv', 'sockcm', c_cm_truncated_priv),
    ('sockcm-data-after-req', 'sockcm', c_cm_data_after_req),
    ('sockcm-second-request', 'sockcm', c_cm_second_request),
    ('sockcm-second-notify', 'sockcm', c_cm_second_notify),
    ('sockcm-notify-bad-len', 'sockcm', c_cm_notify_bad_len),
    ('sockcm-connect-drop', 'sockcm', c_cm_flood),
    ('sockcm-half-open', 'sockcm', c_cm_half_open),
    ('sockcm-idle-done-kept', 'sockcm', c_cm_idle_after_notify_kept),
    ('mm-max-len-legit', 'mm', c_mm_max_len_legit),
    ('mm-inline-len-65535', 'mm', c_mm_inline_len_65535),
    ('mm-inline-len-over', 'mm', c_mm_inline_len_over),
    ('mm-desc-len-65535', 'mm', c_mm_desc_len_65535),
    ('mm-desc-len-over-seg', 'mm', c_mm_desc_len_over_seg),
]


# --------------------------------------------------------------------------
# Checks and the runner.

REGION_MAY_BE_WRITTEN = {'truncated-then-close', 'put-region-legit', 'am-after-large'}


def write_check(st, region_ok=False):
    bad = []
    if st['canary'] != 'ok':
        bad.append('canary ' + st['canary'].split(':', 1)[-1])
    if st['region'] != 'ok' and not region_ok:
        bad.append('region@' + st['region'].split('@', 1)[-1])
    return ', '.join(bad) or 'ok'


def served_check(srv):
    why = [w for w in (legit_tcp(srv), legit_cm(srv), legit_uct(srv), legit_uct_cm(srv)) if w]
    return 'no:' + '+'.join(why) if why else 'ok'


def settle_fds(srv, base):
    end = time.time() + HS_TIMEOUT + 4
    fds = srv.status()['fds']
    while fds > base and time.time() < end:
        srv.progress(250)
        fds = srv.status()['fds']
    return 'ok' if fds <= base else '+%d' % (fds - base)


def rss_check(st0, st):
    d = st['rss'] - st0['rss']
    return 'ok' if d <= RSS_SLACK_KB else '+%dKB' % d


FMT = '%-22s %-16s %-14s %-22s %-16s %-5s %-8s %s'


class Runner:
    def __init__(self, binary, full, logdir):
        self.binary, self.full = binary, full
        self.logdir = logdir
        self.rows = []
        self.notes = []
        self.srv = None
        self.n = {'full': full, 'flood': 2000 if full else 300, 'half': 200 if full else 40}

    def log(self, name):
        return os.path.join(self.logdir, 'server-%s.log' % name) if self.logdir else None

    def drop(self):
        if self.srv is not None:
            if self.srv.proc is not None and self.srv.proc.poll() is None:
                self.srv.proc.kill()
            self.srv.stop()
        self.srv = None

    def server(self):
        if self.srv is None or self.srv.ended():
            if self.srv is not None:
                self.srv.stop()
            self.srv = Server(self.binary, log=self.log('main'))
            self.srv.progress(200)
        return self.srv

    def row(self, name, alive, served='-', write='-', proto='-', fds='-', rss='-'):
        ok = (alive == 'ok' and served == 'ok' and write == 'ok' and proto == 'ok'
              and fds == 'ok' and rss == 'ok')
        self.rows.append((name, alive, served, write, proto, fds, rss, 'PASS' if ok else 'FAIL'))
        r = self.rows[-1]
        print(FMT % (r[0], r[1], r[2][:14], r[3][:22], r[4][:16], r[5], r[6], r[7]))
        for col, i in (('served', 2), ('no-bad-write', 3), ('proto', 4)):
            if len(r[i]) > (14, 22, 16)[i - 2]:
                print('    %s: %s' % (col, r[i]))
        sys.stdout.flush()

    def run_case(self, name, fn):
        try:
            srv = self.server()
            srv.cmd('reset', expect='OK')
            srv.progress(100)
            st0 = srv.status()
        except Exception as e:  # the server does not even start
            self.row(name, 'nostart(%s)' % e.__class__.__name__)
            self.drop()
            return
        signal.alarm(CASE_LIMIT)
        proto = None
        try:
            proto = fn(srv, self.n)
            srv.progress(200)
            srv.status()
        except (Dead, BrokenPipeError, ConnectionError, OSError, Hang) as e:
            signal.alarm(0)
            how = srv.ended()
            if how is None:
                if isinstance(e, Hang):
                    # the case ran out of time: a hang of the server only
                    # when it no longer answers
                    try:
                        srv.status()
                        proto = 'case timed out (server answers)'
                        how = None
                    except Exception:
                        how = 'hang'
                        srv.proc.kill()
                        srv.proc.wait()
                else:
                    # an error of our socket: the server may be fine
                    try:
                        srv.status()
                        proto = 'peer error %s' % e.__class__.__name__
                        how = None
                    except Exception:
                        how = srv.ended() or 'hang'
            if how is not None:
                self.row(name, how)
                self.drop()
                return
        except Exception as e:  # anything unexpected: record it, go on
            signal.alarm(0)
            self.row(name, srv.ended() or 'error(%s)' % e.__class__.__name__)
            self.drop()
            return
        signal.alarm(0)
        try:
            signal.alarm(CASE_LIMIT)
            rok = name in REGION_MAY_BE_WRITTEN
            write = write_check(srv.status(), rok)
            served = served_check(srv)
            fds = settle_fds(srv, st0['fds'])
            st = srv.status()
            write2 = write_check(st, rok)
            if write == 'ok':
                write = write2
            signal.alarm(0)
        except Exception as e:
            signal.alarm(0)
            self.row(name, srv.ended() or ('hang' if isinstance(e, Hang) else 'error(%s)' % e.__class__.__name__))
            self.drop()
            return
        self.row(name, 'ok', served, write, proto or 'ok', fds, rss_check(st0, st))

    def case_idle(self, name):
        """200 idle connections on a server with a long handshake timeout:
        RSS per connection, connect-only and after the magic."""
        k = 200
        res = {}
        try:
            srv = Server(self.binary, env={'UCX_TCP_HANDSHAKE_TIMEOUT': '120s'}, log=self.log('idle'))
        except Exception as e:
            self.row(name, 'nostart(%s)' % e.__class__.__name__)
            return
        try:
            signal.alarm(CASE_LIMIT)
            srv.progress(300)
            st0 = srv.status()
            for label, payload in (('connect', b''), ('magic', MAGIC)):
                base = srv.status()
                held = []
                for i in range(k):
                    s = connect(srv.info['port'])
                    if payload:
                        send(s, payload)
                    held.append(s)
                    if i % 50 == 49:
                        srv.progress(20)
                srv.progress(500)
                st = srv.status()
                res[label] = ((st['rss'] - base['rss']) / k, st['fds'] - base['fds'])
                for s in held:
                    s.close()
                srv.progress(300)
                settle_fds(srv, base['fds'])
            served = served_check(srv)
            fds = settle_fds(srv, st0['fds'])
            st = srv.status()
            signal.alarm(0)
        except Exception as e:
            self.own_server_failed(name, srv, e)
            return
        worst = max(v[0] for v in res.values())
        note = ', '.join('%s %.2f KB/conn (%d fds)' % (lbl, v[0], v[1]) for lbl, v in res.items())
        self.notes.append('%s: %s' % (name, note))
        self.row(name, 'ok', served, write_check(st), 'ok' if worst <= 2.0 else '%.1fKB/conn' % worst,
                 fds, rss_check(st0, st))
        print('    %s' % note)
        srv.stop()

    def own_server_failed(self, name, srv, e):
        """A case with a server of its own ended early: record how (crash,
        hang or error) and stop that server."""
        signal.alarm(0)
        self.row(name, srv.ended() or ('hang' if isinstance(e, Hang) else 'error(%s)' % e.__class__.__name__))
        if srv.proc is not None and srv.proc.poll() is None:
            srv.proc.kill()
        srv.stop()

    def case_fd_exhaustion(self, name):
        """A server limited to 64 fds; connections until accept fails, drop
        them, the server must accept again."""
        try:
            srv = Server(self.binary, nofile=64, log=self.log('nofile'))
        except Exception as e:
            self.row(name, 'nostart(%s)' % e.__class__.__name__)
            return
        try:
            signal.alarm(CASE_LIMIT)
            srv.progress(300)
            st0 = srv.status()
            held = []
            for i in range(120):
                try:
                    s = connect(srv.info['port'], timeout=1)
                    send(s, MAGIC)
                    held.append(s)
                except OSError:
                    break
                if i % 10 == 9:
                    srv.progress(30)
            srv.progress(800)
            peak = srv.status()['fds']
            for s in held:
                s.close()
            srv.progress(1500)
            served = served_check(srv)
            fds = settle_fds(srv, st0['fds'])
            st = srv.status()
            signal.alarm(0)
        except Exception as e:
            self.own_server_failed(name, srv, e)
            return
        self.notes.append('%s: %d connections held, server fds peaked at %d of 64' % (name, len(held), peak))
        self.row(name, 'ok', served, write_check(st), 'ok', fds, rss_check(st0, st))
        srv.stop()

    def run(self, only):
        print(FMT %
              ('case', 'alive', 'served', 'no-bad-write', 'proto', 'fds', 'rss', 'verdict'))
        signal.signal(signal.SIGALRM, _alarm)
        for name, _, fn in CASES:
            if only and name not in only:
                continue
            if name == 'idle-200-rss':
                self.case_idle(name)
            elif name == 'fd-exhaustion':
                self.case_fd_exhaustion(name)
            else:
                self.run_case(name, fn)
        if self.srv is not None:
            self.srv.stop()
        failed = [r for r in self.rows if r[7] != 'PASS']
        crashes = sum(1 for r in self.rows if r[1].startswith('crash'))
        hangs = sum(1 for r in self.rows if r[1] == 'hang')
        writes = sum(1 for r in self.rows if r[3] not in ('ok', '-'))
        print('%d cases: %d passed, %d failed (%d crash, %d hang, %d bad write)' %
              (len(self.rows), len(self.rows) - len(failed), len(failed), crashes, hangs, writes))
        for note in self.notes:
            print('note: ' + note)
        return not failed


def main():
    args = sys.argv[1:]
    if not args:
        print(__doc__)
        return 2
    binary = args.pop(0)
    full = FULL_TIER
    md, only, logdir, tsv = None, None, None, None
    while args:
        a = args.pop(0)
        if a == '--full':
            full = True
        elif a == '--markdown':
            md = args.pop(0)
        elif a == '--only':
            only = set(args.pop(0).split(','))
        elif a == '--tsv':
            tsv = args.pop(0)
        elif a == '--logdir':
            logdir = args.pop(0)
    if logdir:
        os.makedirs(logdir, exist_ok=True)
    r = Runner(binary, full, logdir)
    ok = r.run(only)
    if md:
        with open(md, 'w') as f:
            f.write('| case | alive | served | no bad write | proto | fds | rss | verdict |\n')
            f.write('|---|---|---|---|---|---|---|---|\n')
            for row in r.rows:
                f.write('| ' + ' | '.join(row) + ' |\n')
    if tsv:
        with open(tsv, 'w') as f:
            for row in r.rows:
                f.write('\t'.join(row) + '\n')
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
