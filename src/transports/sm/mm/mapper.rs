//! The memory mappers behind the `posix` and `sysv` memory domains: how a
//! shareable segment is created, named (`seg_id`), attached by a peer and
//! released. The segment ids, rkey layouts and iface-address extras are wire
//! formats shared with UCX 1.13.1 peers: its mapper operations are in
//! `src/uct/sm/mm/base/mm_md.h`, their posix and sysv versions in
//! `src/uct/sm/mm/posix/mm_posix.c` and `src/uct/sm/mm/sysv/mm_sysv.c`.

use crate::abi::*;
use libc::c_void;
use std::os::fd::OwnedFd;

/// A segment this process created (the memory handle of mm memory domains).
/// It is released by [`Mapper::free`], which takes it.
#[derive(Debug)]
pub struct Segment {
    /// Identifier a peer uses to attach the segment.
    pub seg_id: u64,
    pub address: *mut c_void,
    pub length: usize,
    /// A descriptor that must stay open while the segment exists: a posix
    /// segment reached through `/proc/<pid>/fd/<fd>` is named by it (its
    /// number is inside `seg_id`). Closed when the segment is dropped.
    pub fd: Option<OwnedFd>,
}

impl Default for Segment {
    /// No segment (nothing mapped, nothing to free): what is left where a
    /// segment was taken out to be freed.
    fn default() -> Segment {
        Segment { seg_id: 0, address: std::ptr::null_mut(), length: 0, fd: None }
    }
}

/// A peer's segment mapped into this process.
#[derive(Debug, Clone, Copy)]
pub struct RemoteSeg {
    pub address: *mut c_void,
    /// Mapped length: what may be accessed (and what is unmapped).
    pub length: usize,
}

/// What a mapper does. All functions are called with the md's parsed
/// configuration already applied to `self`.
pub trait Mapper: Send + Sync + Sized + 'static {
    /// The md configuration of the mapper's component (`UCX_POSIX_*`, ...).
    type MdConfig: 'static;
    /// The mapper the md configuration describes.
    fn from_md_config(cfg: &Self::MdConfig) -> Result<Self, ucs_status_t>;

    /// Memory-domain attributes specific to the mapper: `max_alloc` (0 =
    /// cannot allocate) and `rkey_packed_size`.
    fn max_alloc(&self) -> u64;
    fn rkey_packed_size(&self) -> usize;

    /// Create a shareable segment of at least `length` bytes (rounded up to
    /// pages). With `fixed`, map it at `address`. The segment must not
    /// outlive its creator, even if the creator is killed (unlink /
    /// IPC_RMID as soon as the peer can still attach by id).
    fn alloc(&self, length: usize, address: *mut c_void, fixed: bool, name: &str) -> Result<Segment, ucs_status_t>;
    /// Unmap (detach) a segment of `alloc` and release its name.
    fn free(&self, seg: Segment) -> ucs_status_t;

    /// Mapper-specific bytes that follow the FIFO `seg_id` in the iface
    /// address (posix: PID namespace id or directory; sysv: none).
    fn iface_addr_extra(&self) -> Vec<u8>;
    fn iface_addr_extra_len(&self) -> usize;
    /// Whether a peer segment `seg_id`, described by the peer's iface-address
    /// extra bytes, can be attached from here.
    fn is_reachable(&self, seg_id: u64, extra: &[u8]) -> bool;
    /// Attach a peer segment of `length` bytes. Fails (never faults later)
    /// when the segment is smaller than that; the `RemoteSeg` has the
    /// length really mapped.
    fn attach(&self, seg_id: u64, length: usize, extra: &[u8]) -> Result<RemoteSeg, ucs_status_t>;
    /// The process that created segment `seg_id`, where the mapper can tell
    /// (posix proc links name it; the kernel records it for sysv), None
    /// otherwise.
    fn creator(&self, seg_id: u64) -> Option<i64>;
    /// Whether the FIFO segment `seg_id`, whose control block says it
    /// belongs to `fifo_pid`, is consistent with its id. Both come from the
    /// peer, in its own PID namespace, so they can be compared where the id
    /// names a process (posix proc links); elsewhere nothing is known.
    fn owns_fifo(&self, seg_id: u64, fifo_pid: i32) -> bool {
        let _ = (seg_id, fifo_pid);
        true
    }
    /// Attach a receive-descriptor segment that the element of a peer's
    /// FIFO (segment `fifo_id`) names: refused unless the same process (as
    /// far as [`Mapper::creator`] tells) made both, so a peer cannot point
    /// a sender at memory of a third process.
    fn attach_peer(&self, seg_id: u64, length: usize, extra: &[u8], fifo_id: u64)
                   -> Result<RemoteSeg, ucs_status_t> {
        let (seg, fifo) = (self.creator(seg_id), self.creator(fifo_id));
        if seg != fifo {
            crate::error!("mm: peer segment {seg_id:#x} (creator {seg:?}) is not of the process of its FIFO \
                           {fifo_id:#x} (creator {fifo:?})");
            return Err(UCS_ERR_SHMEM_SEGMENT);
        }
        self.attach(seg_id, length, extra)
    }
    fn detach(&self, seg: &RemoteSeg);

    /// Pack the rkey of `seg` into `buf` (`rkey_packed_size` bytes).
    fn mkey_pack(&self, seg: &Segment, buf: *mut u8);
}

/// Component-level rkey operations (no md is available when unpacking):
/// the rkey becomes `local_mapping - owner_address`, the handle remembers
/// what to detach.
pub trait RkeyOps {
    /// # Safety
    /// `buf` holds a packed rkey of this component.
    unsafe fn unpack(buf: *const u8) -> Result<(uct_rkey_t, *mut c_void), ucs_status_t>;
    fn release(rkey: uct_rkey_t, handle: *mut c_void) -> ucs_status_t;
}
