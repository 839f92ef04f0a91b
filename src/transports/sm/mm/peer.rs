//! What a peer writes that an mm interface reads, decoded without touching
//! shared memory: the header of a FIFO element (copied out once by the
//! receiver), the descriptor reference a sender finds in a peer's element,
//! and an mm iface address. Each decoder is a pure function of its input,
//! returning the decoded value or the reason it is refused; the receive and
//! send paths call them on values they read from the mapping exactly once.
//!
//! UCX 1.13.1 (`src/uct/sm/mm/base/mm_iface.c`, `mm_ep.c`) trusts all of
//! these: it indexes its handler table with the element's AM id, hands the
//! handler the element's length as is, follows the descriptor pointer stored
//! in the element, and writes at `segment + offset` of whatever segment the
//! element names. Here an element with an id of `UCT_AM_ID_MAX` or more,
//! with a flag bit no sender writes, or with a length beyond what the element
//! (inline) or a receive descriptor holds, is dropped whole: a message is
//! handed over as its sender wrote it or not at all, never cut to size. A
//! descriptor reference must lie inside the segment as mapped here.

use super::fifo::{DescInfo, AM_ID_MAX, ELEM_HDR, FLAG_INLINE, KNOWN_FLAGS};

/// The header of a FIFO element, as copied out of shared memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ElemHdr {
    pub flags: u8,
    pub am_id: u8,
    pub length: u16,
}

/// Where the payload of an accepted element is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Msg {
    /// `len` bytes of inline data at the start of the element's data area.
    Inline { am_id: u8, len: usize },
    /// `len` bytes at the start of the receive descriptor the receiver
    /// attached to the element (the receiver's own record, never the
    /// pointer stored in shared memory).
    Desc { am_id: u8, len: usize },
}

/// Why an element is dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BadElem {
    /// A flag bit outside owner and inline.
    Flags(u8),
    /// An active-message id of `UCT_AM_ID_MAX` or more.
    AmId(u8),
    /// An inline message longer than the element's data area (`max` bytes).
    InlineLength { len: u16, max: usize },
    /// A descriptor message longer than a receive descriptor (`max` bytes).
    DescLength { len: u16, max: usize },
}

impl std::fmt::Display for BadElem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BadElem::Flags(fl) => write!(f, "unknown flags {fl:#04x}"),
            BadElem::AmId(id) => write!(f, "active message id {id} (valid: 0..{})", AM_ID_MAX - 1),
            BadElem::InlineLength { len, max } =>
                write!(f, "inline length {len} exceeds the element's {max} bytes of data"),
            BadElem::DescLength { len, max } =>
                write!(f, "length {len} exceeds the receive descriptor's {max} bytes"),
        }
    }
}

/// The first 4 bytes of an element's header in `bytes` (flags, AM id and
/// length), or None when there are fewer.
pub fn parse_elem_hdr(bytes: &[u8]) -> Option<ElemHdr> {
    let b = bytes.get(..4)?;
    Some(ElemHdr { flags: b[0], am_id: b[1], length: u16::from_ne_bytes([b[2], b[3]]) })
}

/// The descriptor reference of an element's header in `bytes` (seg_id,
/// seg_size, offset at bytes 4..20), or None when there are fewer.
pub fn parse_desc_info(bytes: &[u8]) -> Option<DescInfo> {
    let b = bytes.get(4..20)?;
    Some(DescInfo {
        seg_id: u64::from_ne_bytes(b[..8].try_into().ok()?),
        seg_size: u32::from_ne_bytes(b[8..12].try_into().ok()?),
        offset: u32::from_ne_bytes(b[12..16].try_into().ok()?),
    })
}

/// Decode an element a peer published. `max_inline` is what the element's
/// data area holds (element size minus the header), `seg_size` what a
/// receive descriptor holds. A longer length is refused, like an unknown
/// flag or id: the message is dropped whole, never delivered cut to size.
#[inline(always)]
pub fn decode_elem(h: ElemHdr, max_inline: usize, seg_size: usize) -> Result<Msg, BadElem> {
    let inline = h.flags & FLAG_INLINE != 0;
    let max = if inline { max_inline } else { seg_size };
    let len = h.length as usize;
    // One branch on the hot path: every field is fine in the common case
    // (non-short-circuit `|`, so the three tests are one).
    if (h.flags & !KNOWN_FLAGS != 0) | (h.am_id >= AM_ID_MAX) | (len > max) {
        return Err(bad_elem(h, max_inline, seg_size));
    }
    if inline {
        Ok(Msg::Inline { am_id: h.am_id, len })
    } else {
        Ok(Msg::Desc { am_id: h.am_id, len })
    }
}

/// Why `decode_elem` refused `h` (the first reason, in the order flags, id,
/// length).
#[cold]
#[inline(never)]
fn bad_elem(h: ElemHdr, max_inline: usize, seg_size: usize) -> BadElem {
    if h.flags & !KNOWN_FLAGS != 0 {
        BadElem::Flags(h.flags)
    } else if h.am_id >= AM_ID_MAX {
        BadElem::AmId(h.am_id)
    } else if h.flags & FLAG_INLINE != 0 {
        BadElem::InlineLength { len: h.length, max: max_inline }
    } else {
        BadElem::DescLength { len: h.length, max: seg_size }
    }
}

/// Most inline bytes an element of `elem_size` bytes holds.
pub fn max_inline(elem_size: usize) -> usize {
    elem_size.saturating_sub(ELEM_HDR)
}

/// Why a sender refuses the descriptor a peer's element names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BadDesc {
    /// The element names a segment of 0 bytes.
    EmptySegment(u64),
    /// `offset + need` does not fit the size the element claims.
    OutsideClaim { seg_id: u64, offset: u32, need: usize, seg_size: u32 },
    /// The segment could not be attached.
    Unattached(u64),
    /// `offset + need` does not fit the segment as mapped here.
    OutsideMapping { seg_id: u64, offset: u32, need: usize, mapped: usize },
}

impl std::fmt::Display for BadDesc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            BadDesc::EmptySegment(id) => write!(f, "segment {id:#x} of 0 bytes"),
            BadDesc::OutsideClaim { seg_id, offset, need, seg_size } =>
                write!(f, "{need} bytes at {seg_id:#x}+{offset} overrun its declared size {seg_size}"),
            BadDesc::Unattached(id) => write!(f, "segment {id:#x} cannot be attached"),
            BadDesc::OutsideMapping { seg_id, offset, need, mapped } =>
                write!(f, "{need} bytes at {seg_id:#x}+{offset} overrun its mapping of {mapped} bytes"),
        }
    }
}

/// Where a sender may write `need` bytes for the descriptor `d` of a peer's
/// element. `attach(seg_id, seg_size)` finds or maps the peer segment and
/// returns something of the caller's (its base) with the length actually
/// mapped, or None when it cannot. Returns that with the offset to write at:
/// `[offset, offset + need)` lies inside the mapped length, without overflow.
#[inline]
pub fn resolve_desc<T>(d: DescInfo, need: usize, attach: impl FnOnce(u64, usize) -> Option<(T, usize)>)
                       -> Result<(T, usize), BadDesc> {
    if d.seg_size == 0 {
        return Err(BadDesc::EmptySegment(d.seg_id));
    }
    let offset = d.offset as usize;
    let end = offset.checked_add(need);
    if end.is_none_or(|e| e > d.seg_size as usize) {
        return Err(BadDesc::OutsideClaim { seg_id: d.seg_id, offset: d.offset, need, seg_size: d.seg_size });
    }
    let (base, mapped) = attach(d.seg_id, d.seg_size as usize).ok_or(BadDesc::Unattached(d.seg_id))?;
    if end.is_none_or(|e| e > mapped) {
        return Err(BadDesc::OutsideMapping { seg_id: d.seg_id, offset: d.offset, need, mapped });
    }
    Ok((base, offset))
}

/// An mm iface address: the FIFO's 8-byte segment id, then the mapper's
/// extra bytes (posix: a PID namespace id or a directory; sysv: none).
pub fn split_iface_addr(bytes: &[u8]) -> Option<(u64, &[u8])> {
    let id = bytes.get(..8)?;
    Some((u64::from_ne_bytes(id.try_into().ok()?), &bytes[8..]))
}

/// Check the wake-up socket address a peer's FIFO control block names
/// (`sa`: the first `signal_addrlen` bytes of its `sockaddr_un`). Senders
/// write one datagram there whenever the receiver asked to be woken, so a
/// peer must not be able to aim that at an arbitrary socket: only what
/// Linux's autobind gives a receiver is accepted (both the C original and
/// this library autobind), a unix address in the abstract namespace made of
/// a NUL and five lowercase hex digits.
pub fn check_signal_addr(sa: &[u8]) -> Result<(), &'static str> {
    const FAMILY: usize = std::mem::size_of::<libc::sa_family_t>();
    if sa.len() != FAMILY + 6 {
        return Err("not the length of an autobound address");
    }
    if libc::sa_family_t::from_ne_bytes(sa[..FAMILY].try_into().map_err(|_| "short")?) != libc::AF_UNIX as u16 {
        return Err("not a unix address");
    }
    let path = &sa[FAMILY..];
    if path[0] != 0 || !path[1..].iter().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(b)) {
        return Err("not an autobound abstract name");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transports::sm::mm::fifo::FLAG_OWNER;

    fn h(flags: u8, am_id: u8, length: u16) -> ElemHdr {
        ElemHdr { flags, am_id, length }
    }

    #[test]
    fn elements() {
        assert_eq!(decode_elem(h(3, 5, 10), 100, 8192), Ok(Msg::Inline { am_id: 5, len: 10 }));
        // Lengths up to what the element or the descriptor holds, whole;
        // one byte more, or the field's largest value, refused.
        assert_eq!(decode_elem(h(2, 31, 100), 100, 8192), Ok(Msg::Inline { am_id: 31, len: 100 }));
        assert_eq!(decode_elem(h(2, 31, 0), 100, 8192), Ok(Msg::Inline { am_id: 31, len: 0 }));
        assert_eq!(decode_elem(h(2, 31, 101), 100, 8192), Err(BadElem::InlineLength { len: 101, max: 100 }));
        assert_eq!(decode_elem(h(3, 31, u16::MAX), 100, 8192),
                   Err(BadElem::InlineLength { len: u16::MAX, max: 100 }));
        assert_eq!(decode_elem(h(FLAG_OWNER, 0, 8192), 100, 8192), Ok(Msg::Desc { am_id: 0, len: 8192 }));
        assert_eq!(decode_elem(h(FLAG_OWNER, 0, 8193), 100, 8192), Err(BadElem::DescLength { len: 8193, max: 8192 }));
        assert_eq!(decode_elem(h(0, 0, u16::MAX), 100, 8192), Err(BadElem::DescLength { len: u16::MAX, max: 8192 }));
        // A descriptor length is not held to the inline room, nor the reverse.
        assert_eq!(decode_elem(h(0, 4, 1000), 100, 8192), Ok(Msg::Desc { am_id: 4, len: 1000 }));
        assert_eq!(decode_elem(h(2, 4, 100), 100, 64), Ok(Msg::Inline { am_id: 4, len: 100 }));
        // Several faults: the first of flags, id, length is named.
        assert_eq!(decode_elem(h(0x82, 40, u16::MAX), 100, 8192), Err(BadElem::Flags(0x82)));
        assert_eq!(decode_elem(h(2, 40, u16::MAX), 100, 8192), Err(BadElem::AmId(40)));
        assert_eq!(decode_elem(h(3, 32, 10), 100, 8192), Err(BadElem::AmId(32)));
        assert_eq!(decode_elem(h(0, 255, 10), 100, 8192), Err(BadElem::AmId(255)));
        assert_eq!(decode_elem(h(7, 1, 10), 100, 8192), Err(BadElem::Flags(7)));
        assert_eq!(decode_elem(h(0x80, 40, 10), 100, 8192), Err(BadElem::Flags(0x80)));
        let bytes = [3u8, 7, 0x10, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0x20, 0, 0, 0, 0x40, 0, 0, 0];
        assert_eq!(parse_elem_hdr(&bytes), Some(h(3, 7, 16)));
        assert_eq!(parse_desc_info(&bytes), Some(DescInfo { seg_id: 1, seg_size: 0x20, offset: 0x40 }));
        assert_eq!(parse_elem_hdr(&bytes[..3]), None);
        assert_eq!(parse_desc_info(&bytes[..19]), None);
        assert_eq!(max_inline(128), 100);
        assert_eq!(max_inline(3), 0);
    }

    #[test]
    fn descriptors() {
        let d = |seg_id, seg_size, offset| DescInfo { seg_id, seg_size, offset };
        let map = |id: u64, _claim: usize| (id == 7).then_some(((), 4096usize));
        assert_eq!(resolve_desc(d(7, 4096, 96), 4000, map), Ok(((), 96)));
        assert_eq!(resolve_desc(d(7, 4096, 97), 4000, map).unwrap_err(),
                   BadDesc::OutsideClaim { seg_id: 7, offset: 97, need: 4000, seg_size: 4096 });
        // The claim is larger than what is mapped: the mapping decides.
        assert_eq!(resolve_desc(d(7, 1 << 20, 8192), 64, map).unwrap_err(),
                   BadDesc::OutsideMapping { seg_id: 7, offset: 8192, need: 64, mapped: 4096 });
        assert_eq!(resolve_desc(d(8, 4096, 0), 64, map).unwrap_err(), BadDesc::Unattached(8));
        assert_eq!(resolve_desc(d(7, 0, 0), 64, map).unwrap_err(), BadDesc::EmptySegment(7));
        assert_eq!(resolve_desc(d(7, u32::MAX, u32::MAX), usize::MAX, map).unwrap_err(),
                   BadDesc::OutsideClaim { seg_id: 7, offset: u32::MAX, need: usize::MAX, seg_size: u32::MAX });
        assert_eq!(split_iface_addr(&[1, 0, 0, 0, 0, 0, 0, 0, 9]), Some((1, &[9u8][..])));
        assert_eq!(split_iface_addr(&[1, 0, 0]), None);
    }

    #[test]
    fn signal_addresses() {
        let mut sa = (libc::AF_UNIX as u16).to_ne_bytes().to_vec();
        sa.extend_from_slice(b"\x0001f3a");
        assert_eq!(check_signal_addr(&sa), Ok(()));
        let mut path = sa.clone();
        path[2] = b'/';
        assert!(check_signal_addr(&path).is_err());
        assert!(check_signal_addr(&sa[..7]).is_err());
        let mut upper = sa.clone();
        upper[7] = b'A';
        assert!(check_signal_addr(&upper).is_err());
        let mut inet = sa.clone();
        inet[..2].copy_from_slice(&(libc::AF_INET as u16).to_ne_bytes());
        assert!(check_signal_addr(&inet).is_err());
        let mut long = (libc::AF_UNIX as u16).to_ne_bytes().to_vec();
        long.extend_from_slice(b"/run/systemd/notify");
        assert!(check_signal_addr(&long).is_err());
    }
}
