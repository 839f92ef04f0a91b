//! The segments this process's posix memory domains allocated and that a
//! peer can open by their id alone (a proc link or a `shm_open` name, the
//! default ways): where they are mapped here and what names them. The
//! `posix_get` transport asks it whether memory handed to it for
//! registration lies in such a segment, and so can be read by a peer of
//! ours through the segment instead of through the FIFO.

use std::sync::{Mutex, MutexGuard};

/// One segment: its id and where this process has it mapped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OwnedSeg {
    pub seg_id: u64,
    pub address: usize,
    pub length: usize,
    /// The file's device and inode numbers (what a peer that maps it by
    /// its id finds there).
    pub identity: (u64, u64),
}

impl OwnedSeg {
    /// Whether `[address, address + length)` lies inside the segment.
    pub fn contains(&self, address: usize, length: usize) -> bool {
        address >= self.address
            && address.checked_add(length).is_some_and(|end| end <= self.address + self.length)
    }
}

static SEGMENTS: Mutex<Vec<OwnedSeg>> = Mutex::new(Vec::new());

fn segments() -> MutexGuard<'static, Vec<OwnedSeg>> {
    // The list stays consistent at every step, so a panic elsewhere while
    // it was locked leaves nothing half done.
    SEGMENTS.lock().unwrap_or_else(|e| e.into_inner())
}

pub(super) fn remember(seg: OwnedSeg) {
    segments().push(seg);
}

/// The segment mapped at `address` is gone (freed).
pub(super) fn forget(address: usize) {
    segments().retain(|s| s.address != address);
}

/// The segment that holds all of `[address, address + length)`, if any.
pub fn containing(address: usize, length: usize) -> Option<OwnedSeg> {
    segments().iter().copied().find(|s| s.contains(address, length))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges() {
        let s = OwnedSeg { seg_id: 1, address: 0x10000, length: 0x2000, identity: (0, 0) };
        assert!(s.contains(0x10000, 0x2000));
        assert!(s.contains(0x11000, 0));
        assert!(!s.contains(0x0ffff, 2));
        assert!(!s.contains(0x11fff, 2));
        assert!(!s.contains(usize::MAX, 2));
    }
}
