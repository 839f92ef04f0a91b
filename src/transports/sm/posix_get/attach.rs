//! Peers' posix segments mapped here for `posix_get`, kept between keys.
//!
//! libucp unpacks the remote key of every rendezvous message and releases
//! it when the get is done; mapping the sender's segment each time would
//! cost a `mmap`, a `munmap` and a page fault per page of every message.
//! So a mapping stays here after its last key is released, and the next key
//! that names the same segment and the same file uses it again. A key
//! carries the file's identity (device and inode numbers, which the owner
//! reads once when it allocates the segment): a segment id (a proc link's
//! pid and descriptor number, or a `shm_open` name) may name another file
//! once the owner freed the first, while the inode of a file we still map
//! cannot be given to another. A key whose identity no kept mapping has is
//! mapped anew, and refused when its name gives another file. So reusing a
//! mapping costs no lookup of the name (a `stat` of `/proc/<pid>/fd/<n>`
//! took a quarter of a 64 KiB rendezvous), only an `fstat` of the
//! descriptor kept with it, which refuses a file its owner has since cut
//! shorter than the key says. At most [`KEEP_IDLE`] mappings no key uses
//! are kept (the least recently used go first); one whose name now gives
//! another file is dropped when nothing uses it.

use crate::abi::*;
use crate::transports::sm::mm::mapper::RemoteSeg;
use crate::transports::sm::mm::posix::by_id;
use crate::ucs;
use std::os::fd::OwnedFd;
use std::sync::{Arc, Mutex, MutexGuard};

/// Mappings kept while no key uses them.
pub const KEEP_IDLE: usize = 16;

/// A peer's segment mapped here; unmapped when the last user drops it.
#[derive(Debug)]
pub struct Mapping {
    pub seg_id: u64,
    /// The file's device and inode numbers.
    identity: (u64, u64),
    /// Where it is mapped here, and how many bytes.
    pub address: usize,
    pub length: usize,
    /// The descriptor it was opened through (its size is checked again
    /// for each key).
    fd: OwnedFd,
    /// For a proc-link id, the start time of the process it names, read
    /// when the segment was mapped: a get on an endpoint to another process
    /// that has the same pid (reused since) is refused.
    pub creator_start: Option<u64>,
}

impl Drop for Mapping {
    fn drop(&mut self) {
        crate::trace!("posix_get: unmapping segment 0x{:x} at {:#x}", self.seg_id, self.address);
        by_id::detach(&RemoteSeg { address: self.address as *mut libc::c_void, length: self.length });
    }
}

struct Cache {
    /// Each mapping with the tick of its last use.
    entries: Vec<(Arc<Mapping>, u64)>,
    tick: u64,
}

static CACHE: Mutex<Cache> = Mutex::new(Cache { entries: Vec::new(), tick: 0 });

fn cache() -> MutexGuard<'static, Cache> {
    // Every step leaves the list consistent; a panic elsewhere while it
    // was locked leaves nothing half done.
    CACHE.lock().unwrap_or_else(|e| e.into_inner())
}

fn in_use(m: &Arc<Mapping>) -> bool {
    // The cache's own reference is one.
    Arc::strong_count(m) > 1
}

/// A mapping of at least `length` bytes of the peer's segment `seg_id`,
/// the file `identity`: one kept from before, or a new one when the name
/// gives that file.
pub fn acquire(seg_id: u64, identity: (u64, u64), length: usize) -> Result<Arc<Mapping>, ucs_status_t> {
    let mut c = cache();
    c.tick += 1;
    let tick = c.tick;
    // The owner says the name gives `identity` now: what was mapped under
    // it from another file is stale (dropped here unless a key still uses
    // it).
    c.entries.retain(|(m, _)| m.seg_id != seg_id || m.identity == identity || in_use(m));
    if let Some((m, last)) =
        c.entries.iter_mut().find(|(m, _)| m.seg_id == seg_id && m.identity == identity && m.length >= length)
    {
        // A file shorter than the key says (its owner truncated it) would
        // fault on access: refused before the mapping is used for it. (The
        // owner can still truncate it during a copy; posix's FIFO mappings
        // share that exposure.)
        let size = by_id::size_of(&m.fd).unwrap_or(0);
        if size < length as u64 {
            crate::error!("posix_get: segment 0x{seg_id:x} has {size} bytes, the key says {length}");
            return Err(UCS_ERR_SHMEM_SEGMENT);
        }
        *last = tick;
        return Ok(m.clone());
    }
    // (attach_id refuses a file shorter than `length`)
    // (the mapping is unmapped when dropped, as on the refusal below)
    let (seg, found, fd) = by_id::attach_id(seg_id, length)?;
    let creator_start = by_id::creator(seg_id).map(|pid| ucs::proc_create_time(pid as libc::pid_t));
    let m = Arc::new(Mapping { seg_id, identity: found, address: seg.address as usize, length: seg.length, fd,
                               creator_start });
    if found != identity {
        crate::error!("posix_get: segment 0x{seg_id:x} is another file than the key says");
        return Err(UCS_ERR_SHMEM_SEGMENT);
    }
    c.entries.push((m.clone(), tick));
    trim(&mut c);
    Ok(m)
}

/// Drop the least recently used idle mappings beyond [`KEEP_IDLE`].
fn trim(c: &mut Cache) {
    let idle = c.entries.iter().filter(|(m, _)| !in_use(m)).count();
    if idle <= KEEP_IDLE {
        return;
    }
    let mut ticks: Vec<u64> = c.entries.iter().filter(|(m, _)| !in_use(m)).map(|(_, t)| *t).collect();
    ticks.sort_unstable();
    let cut = ticks[idle - KEEP_IDLE - 1];
    c.entries.retain(|(m, t)| in_use(m) || *t > cut);
}

/// Mappings kept now (for tests).
pub fn kept() -> usize {
    cache().entries.len()
}
