//! The remote key of `posix_get`: its packed form (what the md writes and a
//! peer sends back to us in a rendezvous request) and its unpacked form.
//!
//! Packed: six 8-byte words. `[KIND_SEGMENT, seg_id, owner address,
//! length, device, inode]` names the owner's posix segment (id as in a
//! posix rkey, the address where the owner has it mapped, its length, and
//! which file it is: see `attach`); `[KIND_NONE, 0, 0, 0, 0, 0]` says the
//! memory is in no such segment, and unpacks to
//! `UCS_ERR_UNREACHABLE`, which libucp takes as "this lane cannot reach
//! that memory".
//!
//! Unpacked: a boxed [`Key`] (the rkey and the handle are its address)
//! holding the mapping of the owner's segment and the owner's range, so that
//! a get is checked against the segment's bounds before it copies.

use super::attach::{self, Mapping};
use crate::abi::*;
use crate::transports::sm::mm::posix::{by_id, owned::OwnedSeg};
use libc::c_void;
use std::sync::Arc;

pub const PACKED_SIZE: usize = 48;
const KIND_SEGMENT: u64 = 0x7567_6574_7365_676d;
const KIND_NONE: u64 = 0x7567_6574_6e6f_6e65;
const KEY_MAGIC: u64 = 0x7567_6574_6b65_7921;

/// The packed key of memory in `seg` (None: in no segment of ours).
pub fn pack(seg: Option<&OwnedSeg>) -> [u8; PACKED_SIZE] {
    let words = match seg {
        Some(s) => [KIND_SEGMENT, s.seg_id, s.address as u64, s.length as u64, s.identity.0, s.identity.1],
        None => [KIND_NONE, 0, 0, 0, 0, 0],
    };
    let mut out = [0u8; PACKED_SIZE];
    for (i, w) in words.iter().enumerate() {
        out[i * 8..i * 8 + 8].copy_from_slice(&w.to_ne_bytes());
    }
    out
}

/// A decoded packed key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Packed {
    Segment { seg_id: u64, owner: u64, length: usize, identity: (u64, u64) },
    None,
}

/// Decode a packed key (exactly what [`pack`] writes; anything else is
/// refused with the reason).
pub fn parse(packed: &[u8]) -> Result<Packed, String> {
    let word = |i: usize| {
        packed.get(i * 8..i * 8 + 8).map(|b| u64::from_ne_bytes(b.try_into().expect("8 bytes")))
    };
    let (Some(kind), Some(seg_id), Some(owner), Some(length), Some(dev), Some(ino)) =
        (word(0), word(1), word(2), word(3), word(4), word(5))
    else {
        return Err(format!("{} bytes, {} expected", packed.len(), PACKED_SIZE));
    };
    match kind {
        KIND_NONE => Ok(Packed::None),
        KIND_SEGMENT => {
            if !by_id::usable(seg_id) {
                return Err(format!("segment id 0x{seg_id:x} is not one of a proc link or a shm_open name"));
            }
            let length = usize::try_from(length).ok().filter(|&l| l > 0 && l <= isize::MAX as usize)
                .ok_or_else(|| format!("segment length {length}"))?;
            if owner.checked_add(length as u64).is_none() {
                return Err(format!("segment at {owner:#x} of {length} bytes wraps around"));
            }
            Ok(Packed::Segment { seg_id, owner, length, identity: (dev, ino) })
        }
        other => Err(format!("unknown kind {other:#x}")),
    }
}

/// An unpacked key: the owner's segment mapped here.
pub struct Key {
    magic: u64,
    /// The process whose descriptor the segment id names (None for a
    /// `shm_open` name): a get through this key is refused on an endpoint
    /// to another process, so a peer cannot have us read a third process's
    /// segment.
    pub creator: Option<u64>,
    pub mapping: Arc<Mapping>,
    /// The owner's address of the segment's first byte, and its length.
    owner: u64,
    length: usize,
}

impl Key {
    /// The key behind an rkey of this component (None for anything else
    /// that carries no key magic).
    ///
    /// # Safety
    /// `rkey` is an rkey this component unpacked and has not released (the
    /// UCT contract for every rkey handed to an operation).
    pub unsafe fn of<'a>(rkey: uct_rkey_t) -> Option<&'a Key> {
        if rkey == 0 || rkey % std::mem::align_of::<Key>() != 0 {
            return None;
        }
        // SAFETY: see the function's contract.
        let k = unsafe { &*(rkey as *const Key) };
        (k.magic == KEY_MAGIC).then_some(k)
    }

    /// Where the owner's `[addr, addr + len)` is mapped here, when the range
    /// lies inside the owner's segment.
    pub fn source(&self, addr: u64, len: usize) -> Option<*const u8> {
        let off = usize::try_from(addr.checked_sub(self.owner)?).ok()?;
        let end = off.checked_add(len)?;
        (end <= self.length && end <= self.mapping.length).then(|| (self.mapping.address + off) as *const u8)
    }
}

/// `uct_rkey_unpack` of this component.
pub fn unpack(packed: &[u8]) -> Result<(uct_rkey_t, *mut c_void), ucs_status_t> {
    match parse(packed) {
        Ok(Packed::None) => {
            crate::trace!("posix_get: the remote memory is in no posix segment: unreachable");
            Err(UCS_ERR_UNREACHABLE)
        }
        Ok(Packed::Segment { seg_id, owner, length, identity }) => match attach::acquire(seg_id, identity, length) {
            Ok(mapping) => {
                let key = Box::new(Key { magic: KEY_MAGIC, creator: by_id::creator(seg_id), mapping, owner,
                                         length });
                let p = Box::into_raw(key);
                Ok((p as usize as uct_rkey_t, p as *mut c_void))
            }
            // The lane cannot reach this memory (the segment is gone, or we
            // may not open it): libucp moves the data another way.
            Err(_) => {
                crate::diag!("posix_get: cannot map the peer's segment 0x{seg_id:x}: unreachable");
                Err(UCS_ERR_UNREACHABLE)
            }
        },
        Err(why) => {
            crate::error!("posix_get: bad remote key: {why}");
            Err(UCS_ERR_UNREACHABLE)
        }
    }
}

/// `uct_rkey_release` of this component.
pub fn release(rkey: uct_rkey_t, handle: *mut c_void) -> ucs_status_t {
    if handle.is_null() || handle as usize as uct_rkey_t != rkey {
        crate::error!("posix_get: rkey_release of {rkey:#x} with handle {handle:p}: not a key of ours");
        return UCS_ERR_INVALID_PARAM;
    }
    // SAFETY: a key of ours is the box `unpack` made, released once (the
    // UCT contract); the magic is checked before it is freed.
    if unsafe { Key::of(rkey) }.is_none() {
        crate::error!("posix_get: rkey_release of {rkey:#x}: not a key of ours");
        return UCS_ERR_INVALID_PARAM;
    }
    // SAFETY: as above.
    let mut key = unsafe { Box::from_raw(handle as *mut Key) };
    key.magic = 0;
    UCS_OK
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packed_forms() {
        assert_eq!(parse(&pack(None)), Ok(Packed::None));
        let seg_id = (1u64 << 63) | (1 << 62) | 42 | (7 << 30);
        let s = OwnedSeg { seg_id, address: 0x7000_0000, length: 1 << 20, identity: (5, 77) };
        assert_eq!(parse(&pack(Some(&s))),
                   Ok(Packed::Segment { seg_id, owner: 0x7000_0000, length: 1 << 20, identity: (5, 77) }));
        assert!(parse(&pack(Some(&s))[..PACKED_SIZE - 1]).is_err());
        // A file reached by path (needs a directory) is not taken.
        let by_path = OwnedSeg { seg_id: 0x1234, ..s };
        assert!(parse(&pack(Some(&by_path))).is_err());
        // A proc link naming pid 0.
        assert!(parse(&pack(Some(&OwnedSeg { seg_id: (1u64 << 63) | (7 << 30), ..s }))).is_err());
        assert!(parse(&pack(Some(&OwnedSeg { length: 0, ..s }))).is_err());
        assert!(parse(&pack(Some(&OwnedSeg { address: usize::MAX - 10, ..s }))).is_err());
        let mut junk = pack(None);
        junk[0] ^= 1;
        assert!(parse(&junk).is_err());
    }

    #[test]
    fn unreachable_keys() {
        assert_eq!(unpack(&pack(None)).err(), Some(UCS_ERR_UNREACHABLE));
        // A proc link to a descriptor this process does not have.
        let gone = OwnedSeg { seg_id: (1u64 << 63) | (1 << 62) | std::process::id() as u64 | (1_000_000 << 30),
                              address: 0x1000, length: 4096, identity: (1, 1) };
        assert_eq!(unpack(&pack(Some(&gone))).err(), Some(UCS_ERR_UNREACHABLE));
    }
}
