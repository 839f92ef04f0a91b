//! mm FIFO elements: the header a receiver copies out of an element a peer
//! published, and the descriptor reference a sender finds in a peer's
//! element, checked against a segment map.
//!
//! Input: a 28-byte element header (shorter inputs are zero-padded), one
//! byte choosing the element size, two bytes of descriptor size, then up to
//! 8 segment map entries of 12 bytes `{seg_id u64, size u32}`.

use uct::transports::sm::mm::fifo::{AM_ID_MAX, ELEM_HDR, FLAG_INLINE, KNOWN_FLAGS};
use uct::transports::sm::mm::peer::{self, BadDesc, BadElem, Msg};

const PAGE: usize = 4096;

pub fn run(data: &[u8]) {
    let mut hdr = [0u8; ELEM_HDR];
    let n = data.len().min(ELEM_HDR);
    hdr[..n].copy_from_slice(&data[..n]);
    let rest = &data[n..];
    let h = peer::parse_elem_hdr(&hdr).expect("28 bytes hold a header");
    let d = peer::parse_desc_info(&hdr).expect("28 bytes hold a descriptor reference");
    assert!(peer::parse_elem_hdr(&data[..data.len().min(3)]).is_none());

    let elem_size = 28 + 4 * rest.first().copied().unwrap_or(25) as usize;
    let max_inline = peer::max_inline(elem_size);
    let seg_size = rest.get(1..3).map_or(8256, |b| u16::from_ne_bytes([b[0], b[1]]) as usize);

    // The element header.
    let r = peer::decode_elem(h, max_inline, seg_size);
    assert_eq!(r, peer::decode_elem(h, max_inline, seg_size), "a decoder of a copied value is deterministic");
    match r {
        // A message is handed over with the length its sender wrote, never
        // a cut one.
        Ok(Msg::Inline { am_id, len }) => {
            assert!(h.flags & FLAG_INLINE != 0 && h.flags & !KNOWN_FLAGS == 0);
            assert!(am_id < AM_ID_MAX && am_id == h.am_id);
            assert!(len == h.length as usize && len <= max_inline);
            assert!(ELEM_HDR + len <= elem_size, "inline data stays inside the element");
        }
        Ok(Msg::Desc { am_id, len }) => {
            assert!(h.flags & FLAG_INLINE == 0 && h.flags & !KNOWN_FLAGS == 0);
            assert!(am_id < AM_ID_MAX && am_id == h.am_id);
            assert!(len == h.length as usize && len <= seg_size);
        }
        Err(BadElem::Flags(f)) => assert!(f == h.flags && f & !KNOWN_FLAGS != 0),
        Err(BadElem::AmId(id)) => assert!(id == h.am_id && id >= AM_ID_MAX && h.flags & !KNOWN_FLAGS == 0),
        Err(BadElem::InlineLength { len, max }) => {
            assert!(h.flags & !KNOWN_FLAGS == 0 && h.am_id < AM_ID_MAX && h.flags & FLAG_INLINE != 0);
            assert!(len == h.length && max == max_inline && len as usize > max);
        }
        Err(BadElem::DescLength { len, max }) => {
            assert!(h.flags & !KNOWN_FLAGS == 0 && h.am_id < AM_ID_MAX && h.flags & FLAG_INLINE == 0);
            assert!(len == h.length && max == seg_size && len as usize > max);
        }
    }

    // The descriptor reference against a map of segments (id -> real size),
    // attached as the mappers do: refused when the claim exceeds the real
    // size, else mapped rounded up to pages.
    let map: Vec<(u64, usize)> = rest.get(3..).unwrap_or(&[]).chunks_exact(12).take(8)
        .map(|c| (u64::from_ne_bytes(c[..8].try_into().unwrap()),
                  u32::from_ne_bytes(c[8..].try_into().unwrap()) as usize))
        .collect();
    let real = |id: u64| map.iter().find(|(i, _)| *i == id).map(|&(_, size)| size);
    let mut attached = None;
    let r = peer::resolve_desc(d, seg_size, |id, claim| {
        attached = Some((id, claim));
        let size = real(id)?;
        (claim <= size).then(|| (id, claim.div_ceil(PAGE) * PAGE))
    });
    match r {
        Ok((id, offset)) => {
            assert_eq!(id, d.seg_id);
            assert_eq!(offset, d.offset as usize);
            assert!(offset + seg_size <= d.seg_size as usize, "inside the declared size");
            assert!(offset + seg_size <= real(id).unwrap().div_ceil(PAGE) * PAGE, "inside the mapping");
        }
        Err(BadDesc::EmptySegment(_)) => assert!(d.seg_size == 0 && attached.is_none()),
        Err(BadDesc::OutsideClaim { .. }) => {
            assert!(d.offset as usize + seg_size > d.seg_size as usize && attached.is_none())
        }
        Err(BadDesc::Unattached(id)) => {
            assert_eq!(attached, Some((id, d.seg_size as usize)));
            assert!(real(id).is_none_or(|s| s < d.seg_size as usize));
        }
        Err(BadDesc::OutsideMapping { .. }) => panic!("the mappers never map less than the claim"),
    }
    // A lookup that maps less than claimed (a mapping that lies about its
    // size) is caught by the second check.
    let short = rest.get(3).copied().unwrap_or(0) as usize;
    if let Ok((_, offset)) = peer::resolve_desc(d, seg_size, |_, _| Some(((), short))) {
        assert!(offset + seg_size <= short);
    }
}

