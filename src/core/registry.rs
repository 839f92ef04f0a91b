//! The live control-path objects of this library, by address and kind.
//!
//! A handle C passes back (a config, md, worker, interface, connection
//! manager, listener, remote-key handle or resource list) is looked up here
//! before anything is read through it, so a handle that was already closed,
//! never initialised, points into random memory or names an object of
//! another kind is refused with an error instead of being dereferenced.
//! The data path (endpoint operations through the interface's vtable) does
//! not come here.
//!
//! Rules:
//! - an object is registered once it is fully built, just before its handle
//!   is handed out, and deregistered before its memory is freed;
//! - closing takes the entry out atomically ([`take`]), so of two threads
//!   closing the same handle only one gets to free it;
//! - an address freed and reused by the allocator for a new object of the
//!   same kind is live again: a stale handle then names the new object (the
//!   registry can tell live from dead, not old from new);
//! - the registry only says the object was live at the moment of the
//!   lookup: closing an object while another thread still uses it remains
//!   the caller's error, as with any C library;
//! - the lock is a leaf: nothing is called while it is held (no callback,
//!   no logging, no transport code), so lookups are safe from inside user
//!   callbacks, from the async thread and while closing other objects.
//!
//! The map is split into shards by address so that the per-operation
//! lookups libucp makes (remote keys are unpacked and released around RMA)
//! rarely meet another thread's lock.

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard};

/// What a registered address is.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kind {
    /// An options block of `uct_md_config_read`, `uct_md_iface_config_read`
    /// or `uct_cm_config_read`.
    Config,
    Md,
    Worker,
    /// An interface opened with `uct_iface_open`.
    Iface,
    /// A stub interface (1.22 `UCT_IFACE_OPEN_MODE_STUB`): no transport.
    StubIface,
    /// The interface behind a connection manager's endpoints (internal:
    /// endpoint queries reach it, `uct_iface_*` functions do not).
    CmIface,
    Cm,
    Listener,
    /// The handle of an unpacked remote key, with the address of the
    /// component that unpacked it.
    Rkey(usize),
    /// The array of `uct_query_components`.
    ComponentList,
    /// The array of `uct_md_query_tl_resources`.
    TlResourceList,
}

impl Kind {
    /// The kind in words, for log lines.
    pub fn describe(self) -> &'static str {
        match self {
            Kind::Config => "a configuration",
            Kind::Md => "a memory domain",
            Kind::Worker => "a worker",
            Kind::Iface => "an interface",
            Kind::StubIface => "a stub interface",
            Kind::CmIface => "a connection manager's internal interface",
            Kind::Cm => "a connection manager",
            Kind::Listener => "a listener",
            Kind::Rkey(_) => "a remote key",
            Kind::ComponentList => "a component list",
            Kind::TlResourceList => "a transport resource list",
        }
    }
}

const SHARDS: usize = 16;

#[allow(clippy::declare_interior_mutable_const)]
const EMPTY: Mutex<BTreeMap<usize, Kind>> = Mutex::new(BTreeMap::new());
static MAP: [Mutex<BTreeMap<usize, Kind>>; SHARDS] = [EMPTY; SHARDS];

fn shard(addr: usize) -> MutexGuard<'static, BTreeMap<usize, Kind>> {
    // Heap objects are at least 16-byte aligned: mix the bits above that.
    let h = (addr >> 4) ^ (addr >> 12) ^ (addr >> 20);
    // A poisoned shard still holds a consistent map (nothing under the lock
    // can panic half-way through an update), so keep using it.
    MAP[h % SHARDS].lock().unwrap_or_else(|e| e.into_inner())
}

/// Record `addr` as a live object of `kind` (replacing whatever was
/// recorded there: the allocator handed the address out again, so the old
/// object is gone).
pub fn register<T>(addr: *const T, kind: Kind) {
    let a = addr as usize;
    if a != 0 {
        shard(a).insert(a, kind);
    }
}

/// Whether `addr` is a live object of `kind`.
#[inline]
pub fn is<T>(addr: *const T, kind: Kind) -> bool {
    let a = addr as usize;
    a != 0 && shard(a).get(&a) == Some(&kind)
}

/// What `addr` is, if it is a live object of ours.
pub fn kind_of<T>(addr: *const T) -> Option<Kind> {
    let a = addr as usize;
    if a == 0 {
        return None;
    }
    shard(a).get(&a).copied()
}

/// Take `addr` out of the registry if it is a live object of `kind`: true
/// when it was (the caller now owns its destruction), false otherwise
/// (nothing changes).
pub fn take<T>(addr: *const T, kind: Kind) -> bool {
    let a = addr as usize;
    if a == 0 {
        return false;
    }
    let mut m = shard(a);
    if m.get(&a) == Some(&kind) {
        m.remove(&a);
        true
    } else {
        false
    }
}

/// Remove `addr` whatever it was recorded as (an object on its way to
/// being freed; nothing else can hold its address until it is).
pub fn forget<T>(addr: *const T) {
    let a = addr as usize;
    if a != 0 {
        shard(a).remove(&a);
    }
}

/// Why a pointer that should have been a live `want` is refused, for log
/// lines: "is NULL", "is a memory domain, not an interface", "is not a
/// live interface of this library (already closed, or never one)".
pub fn why_not<T>(addr: *const T, want: Kind) -> String {
    if addr.is_null() {
        return "is NULL".to_string();
    }
    match kind_of(addr) {
        Some(k) if k == want => "was replaced while it was being checked".to_string(),
        Some(Kind::Rkey(_)) if matches!(want, Kind::Rkey(_)) => {
            "is a remote key of another component".to_string()
        }
        Some(k) => format!("is {}, not {}", k.describe(), want.describe()),
        None => format!("is not {} of this library that is still alive (already released, or never one)",
                        want.describe()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lifecycle() {
        let b = Box::new([0u64; 4]);
        let p = &*b as *const [u64; 4];
        assert!(!is(p, Kind::Md));
        register(p, Kind::Md);
        assert!(is(p, Kind::Md));
        assert!(!is(p, Kind::Iface));
        assert_eq!(kind_of(p), Some(Kind::Md));
        assert!(why_not(p, Kind::Iface).contains("memory domain"));
        assert!(!take(p, Kind::Iface));
        assert!(take(p, Kind::Md));
        assert!(!take(p, Kind::Md));
        assert!(!is(p, Kind::Md));
        assert!(why_not(p, Kind::Md).contains("not a memory domain"));
        assert!(!is(std::ptr::null::<u8>(), Kind::Md));
        assert!(!take(std::ptr::null::<u8>(), Kind::Md));
    }

    #[test]
    fn rkeys_remember_their_component() {
        let b = Box::new(0u64);
        let p = &*b as *const u64;
        register(p, Kind::Rkey(1));
        assert!(!is(p, Kind::Rkey(2)));
        assert!(why_not(p, Kind::Rkey(2)).contains("another component"));
        assert!(take(p, Kind::Rkey(1)));
    }

    #[test]
    fn concurrent_take_has_one_winner() {
        let b = Box::new(0u64);
        let a = &*b as *const u64 as usize;
        for _ in 0..100 {
            register(a as *const u8, Kind::Worker);
            let wins: usize = (0..4)
                .map(|_| std::thread::spawn(move || take(a as *const u8, Kind::Worker) as usize))
                .collect::<Vec<_>>()
                .into_iter()
                .map(|t| t.join().unwrap())
                .sum();
            assert_eq!(wins, 1);
        }
    }
}
