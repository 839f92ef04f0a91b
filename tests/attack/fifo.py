"""The receive FIFO of a posix (mm) interface, as a same-user peer that maps
it writes into it.

Facts only (UCX 1.13.1's layout, which both libraries share; little endian):
- a posix iface address starts with the FIFO's 64-bit segment id; with proc
  links (the default) bit 63 is set and, below the four flag bits at the
  top, bits 0..29 are the owner's pid and bits 30.. the descriptor number,
  so the segment is /proc/PID/fd/FD;
- the control block starts the mapping: head u64 @0 (bit 63: the receiver
  asked to be woken), tail u64 @128; elements follow at @192, each
  `elem_size` bytes (the iface's AM short limit + 28);
- element: flags u8 @0 (bit 0 owner polarity, bit 1 inline), am_id u8 @1,
  length u16 @2, the receive descriptor {seg_id u64, seg_size u32,
  offset u32} @4, inline data @28;
- a sender claims the element at `head` by advancing head, fills it, and
  publishes it by writing flags last with the owner bit
  `(head & fifo_size) != 0`;
- a descriptor element's payload is in the receiver's segment the element
  names (a proc link too), at `offset`.
"""
import mmap
import os
import struct

CTL_SIZE = 192
ELEM_HDR = 28
FLAG_OWNER, FLAG_INLINE = 1, 2
ARMED = 1 << 63


def _proc_path(seg_id):
    if not seg_id & (1 << 63):
        raise ValueError('segment id %#x is not a proc link' % seg_id)
    mmid = seg_id & ~(0xf << 60)
    return '/proc/%d/fd/%d' % (mmid & ((1 << 30) - 1), mmid >> 30)


class Mapped:
    """A posix segment of another process, mapped here."""

    def __init__(self, seg_id):
        fd = os.open(_proc_path(seg_id), os.O_RDWR)
        try:
            self.size = os.fstat(fd).st_size
            self.map = mmap.mmap(fd, self.size)
        finally:
            os.close(fd)

    def close(self):
        self.map.close()


class Fifo:
    """The FIFO of the posix iface whose address is `iface_addr` (bytes),
    elements of `elem_size` bytes. The number of elements is read from the
    segment's size (the largest power of two that fits)."""

    def __init__(self, iface_addr, elem_size):
        self.seg_id = struct.unpack_from('<Q', iface_addr)[0]
        self.seg = Mapped(self.seg_id)
        self.m = self.seg.map
        self.elem_size = elem_size
        n = (self.seg.size - CTL_SIZE) // elem_size
        self.size = 1 << (n.bit_length() - 1)
        self.descs = {}

    def close(self):
        for d in self.descs.values():
            d.close()
        self.seg.close()

    def head(self):
        return struct.unpack_from('<Q', self.m, 0)[0]

    def tail(self):
        return struct.unpack_from('<Q', self.m, 128)[0]

    def elem(self, index):
        return CTL_SIZE + (index % self.size) * self.elem_size

    def claim(self):
        """Advance the head (no other sender runs meanwhile); the claimed
        index, or None when the FIFO is full."""
        h = self.head()
        if (h & ~ARMED) - self.tail() >= self.size:
            return None
        struct.pack_into('<Q', self.m, 0, ((h & ~ARMED) + 1))
        return h & ~ARMED

    def publish(self, index, flags, am_id, length):
        e = self.elem(index)
        self.m[e + 1] = am_id
        struct.pack_into('<H', self.m, e + 2, length)
        self.m[e] = flags | (FLAG_OWNER if index & self.size else 0)

    def inline(self, index, am_id, length, data):
        """Publish an inline element: `data` (at most the element's room)
        and the length field `length`."""
        e = self.elem(index)
        self.m[e + ELEM_HDR:e + ELEM_HDR + len(data)] = data
        self.publish(index, FLAG_INLINE, am_id, length)

    def desc(self, index, am_id, length, data):
        """Publish a descriptor element: `data` written into the receive
        descriptor the element names, and the length field `length`."""
        e = self.elem(index)
        seg_id, seg_size, offset = struct.unpack_from('<QII', self.m, e + 4)
        if seg_id not in self.descs:
            self.descs[seg_id] = Mapped(seg_id)
        d = self.descs[seg_id]
        if offset + len(data) > d.size:
            raise ValueError('descriptor %#x+%d: %d bytes do not fit its %d' % (seg_id, offset, len(data), d.size))
        d.map[offset:offset + len(data)] = data
        self.publish(index, 0, am_id, length)
