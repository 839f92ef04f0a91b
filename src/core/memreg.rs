//! A table of registered address ranges, for memory domains whose
//! transport writes into the caller's memory on a peer's behalf (a put
//! names a raw address): the transport asks the table whether a range lies
//! inside memory the process registered, and honours the write only then.
//!
//! Each registration gets its own handle (a process-wide counter, never
//! NULL and never reused), so the same buffer registered twice is two
//! entries, and deregistration removes exactly the one it names; a handle
//! the table does not know is refused. The ranges are kept sorted by start
//! behind a read-write lock: registrations are few and long-lived, a lookup
//! (per put) is a binary search plus, when registrations overlap, a short
//! walk back bounded by a running maximum of the ends. A generation number,
//! bumped on every deregistration, lets a writer that checked a range once
//! notice cheaply that it must check again.

use crate::abi::*;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::RwLock;

/// Handles of every table in the process come from here: a handle of one
/// memory domain is unknown to every other one.
static NEXT_HANDLE: AtomicUsize = AtomicUsize::new(0x1000);

#[derive(Clone, Copy, Debug)]
struct Entry {
    start: usize,
    end: usize,
    handle: usize,
}

#[derive(Default)]
struct Inner {
    /// Sorted by `start`.
    entries: Vec<Entry>,
    /// `max_end[i]`: the greatest `end` of `entries[..=i]`.
    max_end: Vec<usize>,
}

impl Inner {
    fn rebuild_max(&mut self, from: usize) {
        self.max_end.truncate(from);
        let mut m = if from == 0 { 0 } else { self.max_end[from - 1] };
        for e in &self.entries[from..] {
            m = m.max(e.end);
            self.max_end.push(m);
        }
    }
}

/// The registered ranges of one memory domain.
pub struct RegTable {
    /// The memory domain's name, for log lines.
    md: &'static str,
    inner: RwLock<Inner>,
    generation: AtomicU64,
    /// Set by the first registration, never cleared.
    used: AtomicBool,
}

impl RegTable {
    pub fn new(md: &'static str) -> RegTable {
        RegTable { md, inner: RwLock::new(Inner::default()), generation: AtomicU64::new(0), used: AtomicBool::new(false) }
    }

    /// Register `[address, address + length)`; the new handle.
    pub fn register(&self, address: usize, length: usize) -> Result<uct_mem_h, ucs_status_t> {
        let Some(end) = address.checked_add(length) else {
            crate::error!("{} md: registration of {:#x} (+{}) wraps around the address space", self.md, address,
                          length);
            return Err(UCS_ERR_INVALID_PARAM);
        };
        let handle = NEXT_HANDLE.fetch_add(1, Ordering::Relaxed);
        self.used.store(true, Ordering::Release);
        let mut g = self.inner.write().unwrap_or_else(|p| p.into_inner());
        let at = g.entries.partition_point(|e| e.start <= address);
        g.entries.insert(at, Entry { start: address, end, handle });
        g.rebuild_max(at);
        Ok(handle as uct_mem_h)
    }

    /// Remove the registration `memh`; an error (and a log line) for a
    /// handle this table does not hold.
    pub fn deregister(&self, memh: uct_mem_h) -> Result<(), ucs_status_t> {
        let h = memh as usize;
        let mut g = self.inner.write().unwrap_or_else(|p| p.into_inner());
        let Some(at) = g.entries.iter().position(|e| e.handle == h) else {
            drop(g);
            crate::error!("{} md: {:p} is not a memory handle of this memory domain", self.md, memh);
            return Err(UCS_ERR_INVALID_PARAM);
        };
        g.entries.remove(at);
        g.rebuild_max(at);
        self.generation.fetch_add(1, Ordering::Release);
        Ok(())
    }

    /// Whether `[address, address + length)` lies inside one registered
    /// range. An empty range is always accepted (nothing is written); a
    /// range that wraps around the address space never is.
    #[inline]
    pub fn contains(&self, address: u64, length: u64) -> bool {
        if length == 0 {
            return true;
        }
        let (Ok(start), Ok(length)) = (usize::try_from(address), usize::try_from(length)) else { return false };
        let Some(end) = start.checked_add(length) else { return false };
        let g = self.inner.read().unwrap_or_else(|p| p.into_inner());
        let mut i = g.entries.partition_point(|e| e.start <= start);
        while i > 0 {
            i -= 1;
            if g.max_end[i] < end {
                return false;
            }
            if g.entries[i].end >= end {
                return true;
            }
        }
        false
    }

    /// Whether anything was ever registered with this table (a process
    /// that registered once and deregistered everything still counts).
    #[inline]
    pub fn ever_used(&self) -> bool {
        self.used.load(Ordering::Acquire)
    }

    /// Bumped by every deregistration.
    #[inline]
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// Registrations held.
    pub fn len(&self) -> usize {
        self.inner.read().unwrap_or_else(|p| p.into_inner()).entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_and_handles() {
        let t = RegTable::new("test");
        assert!(!t.ever_used());
        assert!(!t.contains(0x1000, 1));
        assert!(t.contains(0x1000, 0));
        let a = t.register(0x1000, 0x1000).unwrap();
        assert!(t.contains(0x1000, 0x1000));
        assert!(t.contains(0x1800, 0x800));
        assert!(!t.contains(0x1800, 0x801));
        assert!(!t.contains(0xfff, 2));
        assert!(!t.contains(u64::MAX, 2));
        // the same range twice, and a big one around a small one
        let b = t.register(0x1000, 0x1000).unwrap();
        assert_ne!(a, b);
        let big = t.register(0x100, 0x10_0000).unwrap();
        let small = t.register(0x5000, 0x10).unwrap();
        assert!(t.contains(0x5000, 0x100));
        let g = t.generation();
        t.deregister(big).unwrap();
        assert!(t.generation() > g);
        assert!(!t.contains(0x5000, 0x100));
        assert!(t.contains(0x5000, 0x10));
        t.deregister(a).unwrap();
        assert!(t.contains(0x1000, 0x1000));
        t.deregister(b).unwrap();
        assert!(!t.contains(0x1000, 1));
        assert_eq!(t.deregister(b), Err(UCS_ERR_INVALID_PARAM));
        assert_eq!(t.deregister(0xdead_beef as uct_mem_h), Err(UCS_ERR_INVALID_PARAM));
        t.deregister(small).unwrap();
        assert!(t.is_empty());
        assert!(t.ever_used());
        assert!(t.register(usize::MAX, 2).is_err());
    }

    #[test]
    fn handles_of_another_table_are_unknown() {
        let t = RegTable::new("a");
        let u = RegTable::new("b");
        let h = t.register(0x1000, 10).unwrap();
        assert!(u.deregister(h).is_err());
        assert!(t.deregister(h).is_ok());
    }

    #[test]
    fn matches_a_linear_scan() {
        // pseudo-random registrations, checked against the obvious answer
        let t = RegTable::new("t");
        let mut live: Vec<(usize, usize, uct_mem_h)> = Vec::new();
        let mut x: u64 = 12345;
        let mut rnd = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for round in 0..2000 {
            if live.len() < 20 && rnd() % 3 != 0 {
                let s = (rnd() % 4096) as usize;
                let l = (rnd() % 512) as usize;
                live.push((s, s + l, t.register(s, l).unwrap()));
            } else if !live.is_empty() {
                let k = (rnd() as usize) % live.len();
                let (_, _, h) = live.swap_remove(k);
                t.deregister(h).unwrap();
            }
            for _ in 0..8 {
                let a = rnd() % 4600;
                let l = rnd() % 600 + (round % 2);
                let want = l == 0 || live.iter().any(|&(s, e, _)| s as u64 <= a && a + l <= e as u64);
                assert_eq!(t.contains(a, l), want, "{a} +{l} in {live:?}");
            }
        }
    }
}
