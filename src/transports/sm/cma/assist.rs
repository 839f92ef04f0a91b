//! Split gets between two processes of this library (an extension: the C
//! original never does this, and nothing here is assumed of a peer).
//!
//! A large `get_zcopy` is one kernel copy by one core. When the peer that
//! owns the memory is ours too, the reader asks it to put the second half
//! of the range into the reader's buffer (`process_vm_writev`) while it
//! reads the first half itself, so both cores copy at once
//! (`bench/raw_ceiling.c cma-split`: 2.5x one read of 1 MiB here).
//!
//! The channel is a ring of request slots in an anonymous memory file
//! (`memfd`) each process of ours with a cma interface creates once. A
//! reader finds the owner's ring among the owner's descriptors
//! (`/proc/PID/fd`, which needs the ptrace access cma's reads need anyway);
//! a C peer has none, and every failure to find, check or use a ring costs
//! only the plain single read.
//!
//! Trust, both ways:
//! - The owner serves only requests carrying a secret that lives in its
//!   private memory (the ring holds the secret's address, not the secret):
//!   a reader must have read it with `process_vm_readv`, that is, it could
//!   read the owner's memory itself. So a process that may open the ring
//!   but not read the owner learns nothing new.
//! - The owner writes only into another process (never its own pid), from
//!   addresses the kernel checks (a bad one is EFAULT, reported in the
//!   slot), for requests younger than `MAX_AGE_NS` from a requester whose
//!   start time matches.
//! - The reader checks the ring's header against the owner's pid and start
//!   time, reads every field through atomics (the owner may change them at
//!   any time), takes its request back when the owner has not claimed it
//!   by the time its own half is read, and gives up waiting (reading the
//!   rest itself) when the owner dies or does not finish within
//!   `WAIT_LIMIT_NS`.
//! - While a reader waits it serves its own ring, so two processes reading
//!   from each other at once do not wait on each other.

use crate::sys::{self, shm, vm};
use crate::ucs;
use libc::{c_void, pid_t};
use std::ffi::CStr;
use std::os::fd::OwnedFd;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicI32, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

const MAGIC: u64 = u64::from_ne_bytes(*b"uctrsCMA");
const VERSION: u32 = 1;
/// Request slots per ring.
pub const SLOTS: usize = 32;
const MEMFD_NAME: &CStr = c"uct-rs-cma-assist";
const MEMFD_LINK: &[u8] = b"/memfd:uct-rs-cma-assist (deleted)";
/// Requests older than this are not served (their reader gave up or died).
const MAX_AGE_NS: u64 = 100_000_000;
/// Longest a reader waits for a claimed request before reading the rest
/// itself.
const WAIT_LIMIT_NS: u64 = 1_000_000_000;
/// Largest range one request may name.
const MAX_LEN: u64 = 1 << 32;

// Slot states.
const FREE: u32 = 0;
const FILLING: u32 = 1;
const POSTED: u32 = 2;
const CLAIMED: u32 = 3;
const DONE: u32 = 4;
const FAILED: u32 = 5;

/// The ring's header. Every field is atomic: the memory is shared with a
/// process that may write anything at any time.
#[repr(C)]
struct Header {
    magic: AtomicU64,
    version: AtomicU32,
    nslots: AtomicU32,
    owner_pid: AtomicI32,
    _pad: AtomicU32,
    owner_start: AtomicU64,
    secret_addr: AtomicU64,
    /// Requests posted so far (the owner's cheap check for new work).
    posted: AtomicU64,
    /// Requests served so far (statistics, read by the tests).
    served: AtomicU64,
}

/// One request: the reader fills it in (FREE -> FILLING -> POSTED), the
/// owner claims and serves it (POSTED -> CLAIMED -> DONE/FAILED), the
/// reader frees it (or takes it back: POSTED -> FREE).
#[repr(C, align(64))]
struct Slot {
    state: AtomicU32,
    req_pid: AtomicI32,
    req_start: AtomicU64,
    secret: [AtomicU64; 2],
    dst: AtomicU64,
    src: AtomicU64,
    len: AtomicU64,
    posted_ns: AtomicU64,
}

const SLOTS_AT: usize = 64;
const RING_LEN: usize = SLOTS_AT + SLOTS * std::mem::size_of::<Slot>();

const _: () = assert!(std::mem::size_of::<Header>() <= SLOTS_AT);

/// A mapping of a ring (ours or a peer's).
struct Ring {
    base: NonNull<c_void>,
}

// SAFETY: the mapping is only accessed through atomics (`header`, `slot`),
// from any thread.
unsafe impl Send for Ring {}
// SAFETY: as above.
unsafe impl Sync for Ring {}

impl Ring {
    fn map(fd: &OwnedFd) -> Option<Ring> {
        shm::map_shared(fd, RING_LEN, false).ok().map(|base| Ring { base })
    }

    fn header(&self) -> &Header {
        // SAFETY: the mapping is RING_LEN bytes, page aligned, and lives as
        // long as `self`; Header is made of atomics, valid for any bytes.
        unsafe { &*(self.base.as_ptr() as *const Header) }
    }

    fn slot(&self, k: usize) -> &Slot {
        debug_assert!(k < SLOTS);
        // SAFETY: slot k lies within the mapping (k < SLOTS, see RING_LEN),
        // 64-byte aligned; Slot is made of atomics, valid for any bytes.
        unsafe { &*((self.base.as_ptr() as *const u8).add(SLOTS_AT + k * std::mem::size_of::<Slot>()) as *const Slot) }
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        // SAFETY: our mapping of RING_LEN bytes; nothing refers to it after.
        let _ = unsafe { shm::unmap(self.base, RING_LEN) };
    }
}

/// Process `pid`'s start time as libucs gives it (0: no such process).
pub fn start_time(pid: pid_t) -> u64 {
    ucs::proc_create_time(pid)
}

// ---------------------------------------------------------------------------
// The owner's side.

/// This process's ring, served by the progress of every worker with a cma
/// interface.
pub struct Own {
    ring: Ring,
    pid: pid_t,
    secret: Box<[u64; 2]>,
    _fd: OwnedFd,
    seen: AtomicU64,
    /// The last requester whose start time was checked, as (pid, start).
    checked: Mutex<(pid_t, u64)>,
}

static OWN: Mutex<Option<Arc<Own>>> = Mutex::new(None);

/// This process's ring, created on first use (and again in a forked child:
/// the parent's belongs to the parent). None when it cannot be made.
pub fn own() -> Option<Arc<Own>> {
    let mut g = OWN.lock().unwrap_or_else(|e| e.into_inner());
    let pid = sys::getpid();
    if let Some(o) = g.as_ref() {
        if o.pid == pid {
            return Some(o.clone());
        }
    }
    let o = Arc::new(create(pid)?);
    *g = Some(o.clone());
    Some(o)
}

fn create(pid: pid_t) -> Option<Own> {
    let fd = shm::memfd(MEMFD_NAME).ok()?;
    shm::ftruncate(&fd, RING_LEN).ok()?;
    let ring = Ring::map(&fd)?;
    let mut raw = [0u8; 16];
    if !sys::random_bytes(&mut raw) {
        return None;
    }
    let secret = Box::new([u64::from_ne_bytes(raw[..8].try_into().ok()?),
                           u64::from_ne_bytes(raw[8..].try_into().ok()?)]);
    let start = start_time(pid);
    let h = ring.header();
    h.version.store(VERSION, Ordering::Relaxed);
    h.nslots.store(SLOTS as u32, Ordering::Relaxed);
    h.owner_pid.store(pid, Ordering::Relaxed);
    h.owner_start.store(start, Ordering::Relaxed);
    h.secret_addr.store(secret.as_ptr() as u64, Ordering::Relaxed);
    h.magic.store(MAGIC, Ordering::Release);
    crate::debug!("cma: split-copy ring of pid {} ready", pid);
    Some(Own { ring, pid, secret, _fd: fd, seen: AtomicU64::new(0), checked: Mutex::new((0, 0)) })
}

impl Own {
    /// Serve the posted requests; returns how many were served. One load
    /// when nothing was posted since the last call.
    pub fn serve(&self) -> u32 {
        let h = self.ring.header();
        let posted = h.posted.load(Ordering::Acquire);
        if posted == self.seen.load(Ordering::Relaxed) {
            return 0;
        }
        self.seen.store(posted, Ordering::Relaxed);
        if sys::getpid() != self.pid {
            // A forked child progressing its parent's worker: the ring (a
            // shared mapping) is the parent's, and so are the requests.
            return 0;
        }
        let mut n = 0;
        for k in 0..SLOTS {
            let s = self.ring.slot(k);
            if s.state.load(Ordering::Acquire) != POSTED
                || s.state.compare_exchange(POSTED, CLAIMED, Ordering::AcqRel, Ordering::Relaxed).is_err()
            {
                continue;
            }
            let ok = self.serve_one(s);
            s.state.store(if ok { DONE } else { FAILED }, Ordering::Release);
            if ok {
                h.served.fetch_add(1, Ordering::Relaxed);
            }
            n += 1;
        }
        n
    }

    fn serve_one(&self, s: &Slot) -> bool {
        let pid = s.req_pid.load(Ordering::Relaxed);
        let start = s.req_start.load(Ordering::Relaxed);
        let secret = [s.secret[0].load(Ordering::Relaxed), s.secret[1].load(Ordering::Relaxed)];
        let (dst, src, len) = (s.dst.load(Ordering::Relaxed), s.src.load(Ordering::Relaxed),
                               s.len.load(Ordering::Relaxed));
        let age = sys::monotonic_ns().wrapping_sub(s.posted_ns.load(Ordering::Relaxed));
        if secret != *self.secret {
            crate::diag!("cma: split-copy request from pid {} refused: wrong secret", pid);
            return false;
        }
        if pid <= 0 || pid == self.pid || len == 0 || len > MAX_LEN || age > MAX_AGE_NS {
            crate::diag!("cma: split-copy request refused (pid {}, {} bytes, {} ns old)", pid, len, age);
            return false;
        }
        if !self.requester_ok(pid, start) {
            crate::diag!("cma: split-copy request from pid {} refused: start time {} does not match", pid, start);
            return false;
        }
        // SAFETY: the kernel reads our memory at `src` the way a peer's
        // process_vm_readv of it would (what cma's get from a peer does to
        // us anyway); an address we do not have mapped is EFAULT, never an
        // access by this code. The target is another process (pid != ours,
        // checked above).
        unsafe { vm::copy_all(pid, false, src as usize, dst as usize, len as usize) }
    }

    fn requester_ok(&self, pid: pid_t, start: u64) -> bool {
        let mut c = self.checked.lock().unwrap_or_else(|e| e.into_inner());
        if *c == (pid, start) {
            return true;
        }
        if start == 0 || start_time(pid) != start {
            return false;
        }
        *c = (pid, start);
        true
    }

    /// Requests served so far.
    pub fn served(&self) -> u64 {
        self.ring.header().served.load(Ordering::Relaxed)
    }
}

/// The worker progress callback that serves this process's ring.
///
/// # Safety
/// `arg` is an `Own` kept alive (an `Arc` the interface holds) until the
/// callback is removed.
pub unsafe extern "C" fn progress_cb(arg: *mut c_void) -> libc::c_uint {
    std::panic::catch_unwind(|| {
        // SAFETY: see the function contract.
        let own = unsafe { &*(arg as *const Own) };
        own.serve()
    })
    .unwrap_or(0)
}

// ---------------------------------------------------------------------------
// The reader's side.

/// A peer's ring, checked.
pub struct Peer {
    ring: Ring,
    pid: pid_t,
    start: u64,
    secret: [u64; 2],
}

/// Find and check the ring of peer `pid` (started at `start`); None when it
/// has none (a C peer) or it does not check out.
pub fn attach(pid: pid_t, start: u64) -> Option<Peer> {
    if pid == sys::getpid() || start == 0 {
        return None;
    }
    // (A forked child also holds its parent's ring: the one that checks
    // out is taken.)
    let ring = shm::find_peer_fd_named(pid, MEMFD_LINK, |fd| check_ring(&fd, pid, start))?;
    let h = ring.header();
    let mut raw = [0u8; 16];
    let mut local = [libc::iovec { iov_base: raw.as_mut_ptr() as *mut c_void, iov_len: 16 }];
    let remote = [vm::RemoteIoVec { base: h.secret_addr.load(Ordering::Relaxed) as usize, len: 16 }];
    // SAFETY: the local entry names our own 16-byte buffer, used by nothing
    // else during the call.
    match unsafe { vm::read_from(pid, &mut local, &remote) } {
        Ok(16) => {}
        _ => return None,
    }
    let secret = [u64::from_ne_bytes(raw[..8].try_into().ok()?), u64::from_ne_bytes(raw[8..].try_into().ok()?)];
    crate::debug!("cma: pid {} has a split-copy ring", pid);
    Some(Peer { ring, pid, start, secret })
}

/// Map a ring file of peer `pid` and check its header.
fn check_ring(fd: &OwnedFd, pid: pid_t, start: u64) -> Option<Ring> {
    match shm::regular_file_size(fd) {
        Ok((true, n)) if n >= RING_LEN as u64 => {}
        _ => return None,
    }
    let ring = Ring::map(fd)?;
    let h = ring.header();
    if h.magic.load(Ordering::Acquire) != MAGIC || h.version.load(Ordering::Relaxed) != VERSION
        || h.nslots.load(Ordering::Relaxed) != SLOTS as u32 || h.owner_pid.load(Ordering::Relaxed) != pid
        || h.owner_start.load(Ordering::Relaxed) != start
    {
        crate::debug!("cma: a split-copy ring of pid {} does not check out", pid);
        return None;
    }
    Some(ring)
}

/// What became of a split request.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The owner put the tail.
    Served,
    /// The reader must read the tail itself.
    NotServed,
    /// The owner refused or failed it (the reader reads the tail itself,
    /// and had better not ask this owner again).
    Refused,
}

impl Peer {
    /// Post a request for the owner to put `len` bytes from its `src` into
    /// our `dst`; None when no slot is free.
    pub fn post(&self, dst: usize, src: u64, len: usize, me: pid_t, my_start: u64) -> Option<usize> {
        let k = (0..SLOTS).find(|&k| {
            self.ring.slot(k).state.compare_exchange(FREE, FILLING, Ordering::Acquire, Ordering::Relaxed).is_ok()
        })?;
        let s = self.ring.slot(k);
        s.req_pid.store(me, Ordering::Relaxed);
        s.req_start.store(my_start, Ordering::Relaxed);
        s.secret[0].store(self.secret[0], Ordering::Relaxed);
        s.secret[1].store(self.secret[1], Ordering::Relaxed);
        s.dst.store(dst as u64, Ordering::Relaxed);
        s.src.store(src, Ordering::Relaxed);
        s.len.store(len as u64, Ordering::Relaxed);
        s.posted_ns.store(sys::monotonic_ns(), Ordering::Relaxed);
        if s.state.compare_exchange(FILLING, POSTED, Ordering::Release, Ordering::Relaxed).is_err() {
            return None;
        }
        self.ring.header().posted.fetch_add(1, Ordering::Release);
        Some(k)
    }

    /// After reading our own part: take request `k` back if the owner has
    /// not claimed it, else wait for it (serving `own` meanwhile).
    pub fn finish(&self, k: usize, own: Option<&Own>) -> Outcome {
        let s = self.ring.slot(k);
        if s.state.compare_exchange(POSTED, FREE, Ordering::AcqRel, Ordering::Relaxed).is_ok() {
            return Outcome::NotServed;
        }
        let t0 = sys::monotonic_ns();
        let mut spins = 0u32;
        loop {
            match s.state.load(Ordering::Acquire) {
                DONE => {
                    s.state.store(FREE, Ordering::Release);
                    return Outcome::Served;
                }
                CLAIMED => {}
                FAILED => {
                    s.state.store(FREE, Ordering::Release);
                    return Outcome::Refused;
                }
                // Not a state this protocol leaves a claimed request in:
                // the owner is not playing by the rules.
                _ => return Outcome::NotServed,
            }
            if let Some(o) = own {
                o.serve();
            }
            std::hint::spin_loop();
            spins = spins.wrapping_add(1);
            if spins % 4096 == 0 {
                let late = sys::monotonic_ns().wrapping_sub(t0) > WAIT_LIMIT_NS;
                if late || start_time(self.pid) != self.start {
                    crate::diag!("cma: split-copy request to pid {} not finished ({}); reading it ourselves",
                                 self.pid, if late { "too slow" } else { "peer gone" });
                    // The slot stays claimed: the owner may still write it.
                    return Outcome::Refused;
                }
            }
        }
    }

    /// Requests the owner has served so far (statistics, for the tests).
    pub fn served(&self) -> u64 {
        self.ring.header().served.load(Ordering::Relaxed)
    }

    /// For the tests: the same ring as seen by a process that could open it
    /// but not read the owner's memory (it does not know the secret).
    #[doc(hidden)]
    pub fn without_secret(pid: pid_t, start: u64) -> Option<Peer> {
        let mut p = attach(pid, start)?;
        p.secret = [p.secret[0] ^ 1, p.secret[1]];
        Some(p)
    }
}
