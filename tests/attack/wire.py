"""UCX 1.13.1 tcp and sockcm wire format, as a hostile peer writes it.

Facts only (all little endian like the x86-64 C structs; the port inside a
sockaddr_in in network order):
- a connecting socket first sends the 8-byte magic number;
- frame header {am_id u8, length u32}, then `length` bytes;
- internal ids: 32 connection events, 33 PUT_REQ, 34 PUT_ACK, 35 keepalive;
- connection request body {event u32 = 1, flags u8, cm_id u64} + the
  sender's listening sockaddr_in (16 bytes); other events are the u32 alone
  (2 ACK, 3 ACK|REQ, 4 FIN);
- PUT_REQ body {addr u64, length u64, sn u32} (the frame length covers these
  20 bytes; `length` bytes of data follow the frame);
- sockcm: every message is a 16-byte header {length u64, status u8, pad}
  followed by `length` bytes of private data.
"""
import socket
import struct

MAGIC = struct.pack('<Q', 0xCAFEBABE12345678)
AM_CM, AM_PUT_REQ, AM_PUT_ACK, AM_KEEPALIVE = 32, 33, 34, 35
EV_REQ, EV_ACK, EV_ACK_REQ, EV_FIN = 1, 2, 3, 4

# The payload the attack server's handlers call good: this, then i & 0xff.
AM_MAGIC = struct.pack('<Q', 0x4b434154544155)


def am_payload(n=64):
    return AM_MAGIC + bytes(i & 0xff for i in range(n))


def frame(am_id, body, length=None):
    return struct.pack('<BI', am_id, len(body) if length is None else length) + body


def sockaddr_in(port, ip='127.0.0.1'):
    return struct.pack('<H', socket.AF_INET) + struct.pack('>H', port) + \
        socket.inet_aton(ip) + bytes(8)


_NEXT_CM_ID = [100]


def conn_req(listen_port, cm_id=None, flags=0):
    """A connection request; each gets its own cm_id unless one is given
    (a real peer numbers its connections to one address)."""
    if cm_id is None:
        _NEXT_CM_ID[0] += 1
        cm_id = _NEXT_CM_ID[0]
    return frame(AM_CM, struct.pack('<IBQ', EV_REQ, flags, cm_id) + sockaddr_in(listen_port))


def cm_event(ev):
    return frame(AM_CM, struct.pack('<I', ev))


def put_req(addr, length, sn=0):
    return frame(AM_PUT_REQ, struct.pack('<QQI', addr, length, sn))


def cm_hdr(length, status=0):
    return struct.pack('<QB', length, status) + bytes(7)
