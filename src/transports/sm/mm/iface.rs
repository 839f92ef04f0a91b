//! The mm interface (posix and sysv): a single-receiver FIFO in shared
//! memory that any number of senders claim elements of with a CAS on its
//! head, as UCX 1.13.1 does (contract §5.1). Short messages travel inline in
//! the element; bcopy messages are packed straight into a receive
//! descriptor of the receiver, which the sender maps by its segment id.
//! Remote memory access (put/get/atomics) goes through mapped rkeys.

use super::fifo::{self, DescInfo, Fifo};
use super::mapper::{Mapper, RemoteSeg, Segment};
use super::md::MmMd;
use super::MmIfaceConfig;
use crate::abi::*;
use crate::core::iface::{op, slot, Ep, EpParams, Iface, IfaceHeader, IfaceParams, Internal, InternalOps, Transport};
use crate::core::md::MdObj;
use crate::core::ops::*;
use crate::core::worker::WorkerObj;
use crate::transports::sm;
use crate::ucs;
use libc::{c_int, c_void};
use std::cell::{Cell, RefCell};
use std::collections::{HashMap, VecDeque};
use std::marker::PhantomData;
use std::sync::atomic::{fence, Ordering};

/// Latency and overhead UCX 1.13.1 reports for mm (seconds).
const LATENCY: f64 = 80e-9;
const OVERHEAD: f64 = 10e-9;
const FIFO_MIN_POLL: u32 = 1;
const FIFO_DEFAULT_MAX_POLL: u32 = 16;
/// Header of a receive descriptor: its `DescInfo` (16 bytes), then the
/// release pointer slot that `uct_iface_release_desc` reads (8 bytes).
const DESC_HDR: usize = 24;
const DESC_INFO_SIZE: usize = 16;
/// Largest header of an AM zcopy.
const AM_ZCOPY_MAX_HDR: usize = 128;

// ---------------------------------------------------------------------------
// Receive descriptors.

/// Receive descriptors, carved from shareable segments: the sender writes
/// the payload into them, the receiver hands them to AM handlers with
/// `UCT_CB_PARAM_FLAG_DESC`. Layout of one descriptor:
/// `[DescInfo 16][uct_recv_desc_t* 8][rx_headroom][payload seg_size]`.
pub struct DescPool<M: Mapper> {
    md: *const MmMd<M>,
    headroom: usize,
    stride: usize,
    lead: usize,
    grow: usize,
    max_bufs: Option<usize>,
    total: Cell<usize>,
    free: RefCell<Vec<*mut u8>>,
    chunks: RefCell<Vec<Segment>>,
}

impl<M: Mapper> DescPool<M> {
    fn new(md: &MmMd<M>, headroom: usize, seg_size: usize, align: usize, align_offset: usize, grow: usize,
           max_bufs: Option<usize>) -> DescPool<M> {
        let align = align.max(8);
        let stride = (DESC_HDR + headroom + seg_size).div_ceil(align) * align;
        // Payload at `lead + DESC_HDR + headroom` from a page-aligned chunk,
        // such that (payload + align_offset) % align == 0.
        let lead = (align - (DESC_HDR + headroom + align_offset) % align) % align;
        DescPool {
            md,
            headroom,
            stride,
            lead,
            grow: grow.max(1),
            max_bufs,
            total: Cell::new(0),
            free: RefCell::new(Vec::new()),
            chunks: RefCell::new(Vec::new()),
        }
    }

    fn md(&self) -> &MmMd<M> {
        // SAFETY: the md outlives the interfaces opened on it.
        unsafe { &*self.md }
    }

    fn grow(&self) -> bool {
        let mut count = self.grow;
        if let Some(max) = self.max_bufs {
            count = count.min(max.saturating_sub(self.total.get()));
        }
        if count == 0 {
            return false;
        }
        let bytes = self.lead + count * self.stride;
        let seg = match self.md().alloc_segment(bytes, "mm_recv_desc") {
            Ok(s) => s,
            Err(s) => {
                crate::error!("mm: failed to allocate receive descriptors: {}", crate::core::log::status_str(s));
                return false;
            }
        };
        if seg.length > u32::MAX as usize {
            crate::error!("mm: descriptor segment of {} bytes is too large", seg.length);
            let _ = self.md().mapper.free(&seg);
            return false;
        }
        let base = seg.address as *mut u8;
        let mut free = self.free.borrow_mut();
        for i in (0..count).rev() {
            // SAFETY: inside the new segment of `bytes` bytes.
            let slot = unsafe { base.add(self.lead + i * self.stride) };
            let payload_off = self.lead + i * self.stride + DESC_HDR + self.headroom;
            let info = DescInfo { seg_id: seg.seg_id, seg_size: seg.length as u32, offset: payload_off as u32 };
            // SAFETY: the slot header lies inside the segment we own.
            unsafe { write_info(slot, info) };
            free.push(slot);
        }
        self.total.set(self.total.get() + count);
        self.chunks.borrow_mut().push(seg);
        true
    }

    #[inline]
    fn get(&self) -> Option<*mut u8> {
        let got = self.free.borrow_mut().pop();
        match got {
            Some(s) => Some(s),
            None => {
                if self.grow() {
                    self.free.borrow_mut().pop()
                } else {
                    None
                }
            }
        }
    }

    #[inline]
    fn put(&self, slot: *mut u8) {
        self.free.borrow_mut().push(slot);
    }

    #[inline(always)]
    fn data(&self, slot: *mut u8) -> *mut u8 {
        // SAFETY: within the descriptor.
        unsafe { slot.add(DESC_HDR + self.headroom) }
    }

    fn info(&self, slot: *mut u8) -> DescInfo {
        // SAFETY: the header was written by grow().
        unsafe { read_info(slot) }
    }

    /// The descriptor whose user part (headroom) starts at `desc`.
    fn slot_of_desc(desc: *mut u8) -> *mut u8 {
        desc.wrapping_sub(DESC_HDR)
    }
}

impl<M: Mapper> Drop for DescPool<M> {
    fn drop(&mut self) {
        for seg in self.chunks.borrow_mut().drain(..) {
            let _ = self.md().mapper.free(&seg);
        }
    }
}

/// # Safety
/// `slot` points to a descriptor header of this process.
unsafe fn write_info(slot: *mut u8, info: DescInfo) {
    std::ptr::write_unaligned(slot as *mut u64, info.seg_id);
    std::ptr::write_unaligned(slot.add(8) as *mut u32, info.seg_size);
    std::ptr::write_unaligned(slot.add(12) as *mut u32, info.offset);
}

/// # Safety
/// As for [`write_info`].
unsafe fn read_info(slot: *mut u8) -> DescInfo {
    DescInfo {
        seg_id: std::ptr::read_unaligned(slot as *const u64),
        seg_size: std::ptr::read_unaligned(slot.add(8) as *const u32),
        offset: std::ptr::read_unaligned(slot.add(12) as *const u32),
    }
}

/// The `uct_recv_desc_t` stored in front of descriptors kept by a handler;
/// `uct_iface_release_desc` calls its `cb`, which returns the descriptor.
#[repr(C)]
struct ReleaseDesc<M: Mapper> {
    base: uct_recv_desc_t,
    pool: *const DescPool<M>,
}

unsafe extern "C" fn release_desc<M: Mapper>(self_: *mut uct_recv_desc_t, desc: *mut c_void) {
    // SAFETY: `self_` is the ReleaseDesc we stored in front of the
    // descriptor, and the pool lives as long as the interface.
    let rd = &*(self_ as *const ReleaseDesc<M>);
    (*rd.pool).put(DescPool::<M>::slot_of_desc(desc as *mut u8));
}

// ---------------------------------------------------------------------------
// Endpoint.

pub struct MmEp {
    /// Remote FIFO mapping (detached on destroy).
    fifo_seg: RemoteSeg,
    fifo: Fifo,
    cached_tail: Cell<u64>,
    /// Set when a send found the FIFO full: later sends fail fast until the
    /// interface's progress sees room again (keeps pending requests first).
    blocked: Cell<bool>,
    scheduled: Cell<bool>,
    pending: RefCell<VecDeque<PendingReq>>,
    /// Receive-descriptor segments of the peer, mapped on first use.
    segs: RefCell<HashMap<u64, RemoteSeg>>,
    /// The last segment used, checked before the map.
    last_seg: Cell<(u64, *mut u8, usize)>,
    peer_extra: Vec<u8>,
    signal_addr: libc::sockaddr_un,
    signal_len: libc::socklen_t,
    peer_pid: i32,
    peer_start: u64,
}

// ---------------------------------------------------------------------------
// Interface.

pub struct MmIface<M: Mapper> {
    md: *const MmMd<M>,
    fifo_seg: Segment,
    fifo: Fifo,
    fifo_size: u64,
    fifo_shift: u32,
    elem_size: usize,
    max_short: usize,
    seg_size: usize,
    release_mask: u64,
    fifo_max_poll: u32,
    read_index: Cell<u64>,
    poll_count: Cell<u32>,
    prev_wnd_cons: Cell<bool>,
    /// Receiver-private record of the descriptor attached to each element
    /// (never trust pointers read back from shared memory).
    elem_slot: Vec<Cell<*mut u8>>,
    spare: Cell<Option<*mut u8>>,
    pool: Box<DescPool<M>>,
    release: Box<ReleaseDesc<M>>,
    signal_fd: c_int,
    /// Endpoints with pending requests or a full FIFO, in arrival order.
    pending_eps: RefCell<VecDeque<*const Ep<Self>>>,
    bandwidth: f64,
    extra_flags: u64,
    _m: PhantomData<M>,
}

impl<M: Mapper> MmIface<M> {
    fn md(&self) -> &MmMd<M> {
        // SAFETY: the md outlives the interfaces opened on it.
        unsafe { &*self.md }
    }

    fn fifo_bytes(&self) -> usize {
        fifo::segment_bytes(self.fifo_size as usize, self.elem_size)
    }

    /// Attach (or find) a peer's receive-descriptor segment.
    #[inline]
    fn remote_seg(&self, ep: &MmEp, seg_id: u64, seg_size: usize) -> Result<(*mut u8, usize), ucs_status_t> {
        let (id, addr, len) = ep.last_seg.get();
        if id == seg_id && !addr.is_null() {
            return Ok((addr, len));
        }
        self.remote_seg_slow(ep, seg_id, seg_size)
    }

    #[cold]
    fn remote_seg_slow(&self, ep: &MmEp, seg_id: u64, seg_size: usize) -> Result<(*mut u8, usize), ucs_status_t> {
        let mut segs = ep.segs.borrow_mut();
        let rs = match segs.get(&seg_id) {
            Some(rs) => *rs,
            None => {
                let rs = self.md().mapper.attach(seg_id, seg_size, &ep.peer_extra).inspect_err(|s| {
                    crate::error!("mm: failed to attach peer segment {:#x}: {}", seg_id,
                                  crate::core::log::status_str(*s))
                })?;
                segs.insert(seg_id, rs);
                rs
            }
        };
        let len = if rs.length == 0 { seg_size } else { rs.length };
        ep.last_seg.set((seg_id, rs.address as *mut u8, len));
        Ok((rs.address as *mut u8, len))
    }

    /// Put an endpoint on the interface's dispatch list.
    fn schedule(&self, ep: &Ep<Self>) {
        if !ep.tl.scheduled.replace(true) {
            self.pending_eps.borrow_mut().push_back(ep as *const Ep<Self>);
        }
    }

    #[inline(always)]
    fn refresh_tail(ep: &MmEp) -> u64 {
        let t = ep.fifo.tail().load(Ordering::Acquire);
        ep.cached_tail.set(t);
        t
    }

    #[inline(always)]
    fn has_room(&self, ep: &MmEp) -> bool {
        fifo::can_send(ep.fifo.head().load(Ordering::Relaxed), ep.cached_tail.get(), self.fifo_size)
    }

    /// Claim the element at the head of the peer's FIFO. Returns the head
    /// value claimed, or NO_RESOURCE when the FIFO is full.
    #[inline(always)]
    fn claim(&self, iface: &Iface<Self>, ep: &Ep<Self>) -> Result<u64, ucs_status_t> {
        let e = &ep.tl;
        loop {
            let head = e.fifo.head().load(Ordering::Relaxed);
            if !fifo::can_send(head, e.cached_tail.get(), self.fifo_size) {
                self.no_room(iface, ep, head)?;
            }
            let next = head.wrapping_add(1) & !fifo::HEAD_EVENT_ARMED;
            if e.fifo.head().compare_exchange(head, next, Ordering::AcqRel, Ordering::Relaxed).is_ok() {
                return Ok(head);
            }
        }
    }

    #[cold]
    fn no_room(&self, _iface: &Iface<Self>, ep: &Ep<Self>, head: u64) -> Result<(), ucs_status_t> {
        let e = &ep.tl;
        if e.blocked.get() || !e.pending.borrow().is_empty() {
            return Err(UCS_ERR_NO_RESOURCE);
        }
        let tail = Self::refresh_tail(e);
        if fifo::can_send(head, tail, self.fifo_size) {
            return Ok(());
        }
        e.blocked.set(true);
        self.schedule(ep);
        Err(UCS_ERR_NO_RESOURCE)
    }

    /// Make the element visible to the receiver, and wake it if it asked.
    #[inline(always)]
    fn publish(&self, ep: &MmEp, elem: fifo::Elem, head: u64, flags: u8, id: u8) {
        elem.set_am_id(id);
        elem.publish(flags | fifo::owner_bit(head, self.fifo_size));
        if head & fifo::HEAD_EVENT_ARMED != 0 {
            self.signal(ep);
        }
    }

    #[cold]
    fn signal(&self, ep: &MmEp) {
        let b = 0u8;
        loop {
            // SAFETY: sending one byte to the address the peer published.
            let r = unsafe {
                libc::sendto(self.signal_fd, &b as *const u8 as *const c_void, 1, 0,
                             &ep.signal_addr as *const libc::sockaddr_un as *const libc::sockaddr, ep.signal_len)
            };
            if r >= 0 {
                return;
            }
            match std::io::Error::last_os_error().raw_os_error() {
                Some(libc::EINTR) => continue,
                Some(libc::EAGAIN) | Some(libc::ECONNREFUSED) => return,
                _ => {
                    crate::warn!("mm: failed to send wakeup signal: {}", std::io::Error::last_os_error());
                    return;
                }
            }
        }
    }

    /// Largest AM zcopy header: what is left of a descriptor for the
    /// payload is reported as `am.max_zcopy`.
    #[inline(always)]
    fn am_max_hdr(&self) -> usize {
        AM_ZCOPY_MAX_HDR.min(self.seg_size / 2)
    }

    /// Send a message through one of the receiver's descriptors: `fill`
    /// writes it at the given address (at most seg_size bytes) and returns
    /// its length. Returns the length, or a negative status.
    #[inline]
    fn send_desc(&self, iface: &Iface<Self>, ep: &Ep<Self>, id: u8, fill: impl FnOnce(*mut u8) -> usize) -> isize {
        let e = &ep.tl;
        loop {
            let head = e.fifo.head().load(Ordering::Relaxed);
            if !fifo::can_send(head, e.cached_tail.get(), self.fifo_size) {
                if let Err(st) = self.no_room(iface, ep, head) {
                    return st as isize;
                }
            }
            // The element's descriptor was set by the receiver before it
            // released the element; map it before claiming, so a failure
            // leaves the FIFO untouched.
            let elem = e.fifo.elem(head);
            let d = elem.desc();
            let (base, len) = match self.remote_seg(e, d.seg_id, d.seg_size as usize) {
                Ok(x) => x,
                Err(st) => return st as isize,
            };
            if (d.offset as usize).saturating_add(self.seg_size) > len {
                crate::error!("mm: peer descriptor {:#x}+{} does not fit its segment of {} bytes", d.seg_id, d.offset, len);
                return UCS_ERR_IO_ERROR as isize;
            }
            let next = head.wrapping_add(1) & !fifo::HEAD_EVENT_ARMED;
            if e.fifo.head().compare_exchange(head, next, Ordering::AcqRel, Ordering::Relaxed).is_err() {
                continue;
            }
            // SAFETY: offset + seg_size lies inside the mapping (checked).
            let length = fill(unsafe { base.add(d.offset as usize) }).min(self.seg_size);
            elem.set_length(length as u16);
            self.publish(e, elem, head, 0, id);
            return length as isize;
        }
    }

    // ---- receive side ----

    /// Handle the element at the read index, if it holds a message.
    /// Returns false when there was nothing (or it must wait).
    #[inline(always)]
    fn poll_one(&self, iface: &Iface<Self>) -> bool {
        let ri = self.read_index.get();
        let elem = self.fifo.elem(ri);
        let flags = elem.flags();
        if !fifo::has_new(ri, self.fifo_shift, flags) {
            return false;
        }
        if flags & fifo::FLAG_INLINE != 0 {
            let len = elem.length().min(self.max_short);
            // SAFETY: inline data lies inside the element (length clamped).
            unsafe { iface.hdr.invoke_am_raw(elem.am_id(), elem.data() as *mut c_void, len, 0) };
        } else if !self.recv_desc(iface, elem, ri) {
            return false;
        }
        let next = ri.wrapping_add(1);
        self.read_index.set(next);
        if next & self.release_mask == 0 {
            self.fifo.tail().store(next, Ordering::Release);
        }
        true
    }

    fn recv_desc(&self, iface: &Iface<Self>, elem: fifo::Elem, ri: u64) -> bool {
        // A replacement must be at hand in case the handler keeps this one.
        if self.spare.get().is_none() {
            match self.pool.get() {
                Some(s) => self.spare.set(Some(s)),
                None => return false, // retry on a later progress call
            }
        }
        let idx = (ri & self.fifo.mask()) as usize;
        let slot = self.elem_slot[idx].get();
        let data = self.pool.data(slot);
        let len = elem.length().min(self.seg_size);
        // SAFETY: the descriptor is ours and holds seg_size payload bytes.
        let status = unsafe { iface.hdr.invoke_am_raw(elem.am_id(), data as *mut c_void, len, UCT_CB_PARAM_FLAG_DESC) };
        if status == UCS_INPROGRESS {
            // The user keeps the descriptor: note how to release it, and give
            // the element a fresh one.
            // SAFETY: the 8 bytes before the headroom are our release slot.
            unsafe {
                std::ptr::write_unaligned(slot.add(DESC_INFO_SIZE) as *mut *const uct_recv_desc_t,
                                          &self.release.base as *const uct_recv_desc_t)
            };
            if let Some(fresh) = self.spare.take() {
                elem.set_desc(self.pool.info(fresh), self.pool.data(fresh));
                self.elem_slot[idx].set(fresh);
            }
            self.spare.set(self.pool.get());
        }
        true
    }

    fn window_adjust(&self, count: u32) {
        let cur = self.poll_count.get();
        if count < cur {
            self.poll_count.set((cur / 2).max(FIFO_MIN_POLL));
            self.prev_wnd_cons.set(false);
        } else if self.prev_wnd_cons.get() {
            self.poll_count.set((cur + 1).min(self.fifo_max_poll));
        } else {
            self.prev_wnd_cons.set(true);
        }
    }

    /// Run pending requests of endpoints whose peer FIFO has room again.
    fn dispatch_pending(&self, count: &mut u32) {
        let rounds = self.pending_eps.borrow().len();
        for _ in 0..rounds {
            let Some(epp) = self.pending_eps.borrow_mut().pop_front() else { break };
            // SAFETY: endpoints remove themselves from this list when destroyed.
            let ep = unsafe { &*epp };
            let e = &ep.tl;
            Self::refresh_tail(e);
            if !self.has_room(e) {
                self.pending_eps.borrow_mut().push_back(epp);
                continue;
            }
            e.blocked.set(false);
            let req = e.pending.borrow_mut().pop_front();
            let Some(req) = req else {
                e.scheduled.set(false);
                continue;
            };
            let status = req.dispatch();
            match status {
                UCS_OK => *count += 1,
                UCS_INPROGRESS => {
                    *count += 1;
                    e.pending.borrow_mut().push_front(req);
                }
                _ => e.pending.borrow_mut().push_front(req),
            }
            if e.pending.borrow().is_empty() {
                e.scheduled.set(false);
            } else {
                self.pending_eps.borrow_mut().push_back(epp);
            }
        }
    }
}

impl<M: Mapper> Drop for MmIface<M> {
    fn drop(&mut self) {
        for c in &self.elem_slot {
            self.pool.put(c.get());
        }
        if let Some(s) = self.spare.take() {
            self.pool.put(s);
        }
        // SAFETY: closing our own socket.
        unsafe { libc::close(self.signal_fd) };
        let _ = self.md().mapper.free(&self.fifo_seg);
    }
}

#[cold]
#[inline(never)]
extern "C" fn am_id_error(id: u8) -> ucs_status_t {
    crate::error!("invalid active message id {} (valid: 0..{})", id, UCT_AM_ID_MAX - 1);
    std::hint::black_box(UCS_ERR_INVALID_PARAM)
}

/// What `length_error` reports, by index.
const LENGTH_WHAT: [&str; 6] = ["am_short", "am_short_iov", "am_zcopy header", "am_zcopy", "put_zcopy iov count", "get_zcopy iov count"];

#[cold]
#[inline(never)]
extern "C" fn length_error(what: usize, len: usize, max: usize) -> ucs_status_t {
    let what = LENGTH_WHAT.get(what).copied().unwrap_or("send");
    crate::error!("mm {}: length {} exceeds the maximum {}", what, len, max);
    std::hint::black_box(UCS_ERR_INVALID_PARAM)
}

impl<M: Mapper> Transport for MmIface<M> {
    type Ep = MmEp;
    const OPS: u64 = op(slot::EP_PUT_SHORT) | op(slot::EP_PUT_BCOPY) | op(slot::EP_GET_BCOPY)
        | op(slot::EP_AM_SHORT) | op(slot::EP_AM_SHORT_IOV) | op(slot::EP_AM_BCOPY)
        | op(slot::EP_ATOMIC_CSWAP64) | op(slot::EP_ATOMIC_CSWAP32) | op(slot::EP_ATOMIC32_POST)
        | op(slot::EP_ATOMIC64_POST) | op(slot::EP_ATOMIC32_FETCH) | op(slot::EP_ATOMIC64_FETCH)
        | op(slot::EP_PENDING_ADD) | op(slot::EP_PENDING_PURGE) | op(slot::EP_CHECK)
        | op(slot::IFACE_EVENT_FD_GET) | op(slot::IFACE_EVENT_ARM)
        | op(slot::EP_PUT_ZCOPY) | op(slot::EP_GET_ZCOPY) | op(slot::EP_AM_ZCOPY);

    fn query(iface: &Iface<Self>, attr: &mut uct_iface_attr_t) {
        let s = &iface.tl;
        attr.cap.put.max_short = u32::MAX as usize;
        attr.cap.put.max_bcopy = usize::MAX;
        attr.cap.put.max_zcopy = usize::MAX;
        attr.cap.put.opt_zcopy_align = fifo::CACHE_LINE;
        attr.cap.put.align_mtu = fifo::CACHE_LINE;
        attr.cap.put.max_iov = sm::MAX_IOV;
        attr.cap.get.max_bcopy = usize::MAX;
        attr.cap.get.max_zcopy = usize::MAX;
        attr.cap.get.opt_zcopy_align = fifo::CACHE_LINE;
        attr.cap.get.align_mtu = fifo::CACHE_LINE;
        attr.cap.get.max_iov = sm::MAX_IOV;
        attr.cap.am.max_short = s.max_short;
        attr.cap.am.max_bcopy = s.seg_size;
        attr.cap.am.max_hdr = s.am_max_hdr();
        attr.cap.am.max_zcopy = s.seg_size - s.am_max_hdr();
        attr.cap.am.opt_zcopy_align = fifo::CACHE_LINE;
        attr.cap.am.align_mtu = fifo::CACHE_LINE;
        attr.cap.am.max_iov = usize::MAX;
        attr.iface_addr_len = 8 + s.md().mapper.iface_addr_extra_len();
        attr.device_addr_len = sm::device_addr::len();
        attr.ep_addr_len = 0;
        attr.max_conn_priv = 0;
        attr.cap.flags = UCT_IFACE_FLAG_PUT_SHORT | UCT_IFACE_FLAG_PUT_BCOPY | UCT_IFACE_FLAG_ATOMIC_CPU
            | UCT_IFACE_FLAG_GET_BCOPY | UCT_IFACE_FLAG_AM_SHORT | UCT_IFACE_FLAG_AM_BCOPY
            | UCT_IFACE_FLAG_PENDING | UCT_IFACE_FLAG_CB_SYNC | UCT_IFACE_FLAG_CONNECT_TO_IFACE
            | UCT_IFACE_FLAG_EP_CHECK | UCT_IFACE_FLAG_PUT_ZCOPY | UCT_IFACE_FLAG_GET_ZCOPY
            | UCT_IFACE_FLAG_AM_ZCOPY | s.extra_flags;
        attr.cap.event_flags = UCT_IFACE_FLAG_EVENT_SEND_COMP | UCT_IFACE_FLAG_EVENT_RECV | UCT_IFACE_FLAG_EVENT_FD;
        attr.cap.atomic32.op_flags = sm::ATOMIC_POST_FLAGS;
        attr.cap.atomic64.op_flags = sm::ATOMIC_POST_FLAGS;
        attr.cap.atomic32.fop_flags = sm::ATOMIC_FETCH_FLAGS;
        attr.cap.atomic64.fop_flags = sm::ATOMIC_FETCH_FLAGS;
        attr.latency.c = LATENCY;
        attr.latency.m = 0.0;
        attr.bandwidth.dedicated = s.bandwidth;
        attr.bandwidth.shared = 0.0;
        attr.overhead = OVERHEAD;
        attr.priority = 0;
    }

    fn estimate_perf(iface: &Iface<Self>, perf: &mut uct_perf_attr_t) -> ucs_status_t {
        let m = perf.field_mask;
        if m & UCT_PERF_ATTR_FIELD_BANDWIDTH != 0 {
            perf.bandwidth.shared = 0.0;
            perf.bandwidth.dedicated = iface.tl.bandwidth;
        }
        if m & UCT_PERF_ATTR_FIELD_SEND_PRE_OVERHEAD != 0 {
            perf.send_pre_overhead = OVERHEAD;
        }
        if m & UCT_PERF_ATTR_FIELD_RECV_OVERHEAD != 0 {
            perf.recv_overhead = OVERHEAD;
        }
        if m & UCT_PERF_ATTR_FIELD_SEND_POST_OVERHEAD != 0 {
            perf.send_post_overhead = 0.0;
        }
        if m & UCT_PERF_ATTR_FIELD_LATENCY != 0 {
            perf.latency.c = LATENCY;
            perf.latency.m = 0.0;
        }
        if m & UCT_PERF_ATTR_FIELD_MAX_INFLIGHT_EPS != 0 {
            perf.max_inflight_eps = usize::MAX;
        }
        UCS_OK
    }

    fn get_device_address(_iface: &Iface<Self>, out: AddrOut) -> ucs_status_t {
        out.write(&sm::device_addr::pack())
    }

    fn get_address(iface: &Iface<Self>, out: AddrOut) -> ucs_status_t {
        let mut v = iface.tl.fifo_seg.seg_id.to_ne_bytes().to_vec();
        v.extend_from_slice(&iface.tl.md().mapper.iface_addr_extra());
        out.write(&v)
    }

    fn is_reachable(iface: &Iface<Self>, dev: *const uct_device_addr_t, addr: *const uct_iface_addr_t) -> bool {
        if dev.is_null() || addr.is_null() {
            return false;
        }
        let dev_len = sm::device_addr::len();
        let same_host = sm::device_addr::reachable(|i| {
            // SAFETY: a device address of this transport has `dev_len`
            // bytes (the peer reports the same length when its namespace
            // matches ours; a shorter one fails the first word's flag test).
            if (i + 1) * 8 > dev_len { None } else { unsafe { read_addr::<8>((dev as *const u8).add(i * 8) as *const c_void) }.map(u64::from_ne_bytes) }
        });
        if !same_host {
            return false;
        }
        let extra_len = iface.tl.md().mapper.iface_addr_extra_len();
        // SAFETY: an iface address is 8 bytes of FIFO id plus the mapper's
        // extra bytes, as reported in iface_addr_len.
        unsafe {
            let seg_id = u64::from_ne_bytes(read_addr::<8>(addr as *const c_void).unwrap_or_default());
            let extra = std::slice::from_raw_parts((addr as *const u8).add(8), extra_len);
            iface.tl.md().mapper.is_reachable(seg_id, extra)
        }
    }

    fn ep_create(iface: &Iface<Self>, params: &EpParams<'_>) -> Result<MmEp, ucs_status_t> {
        let s = &iface.tl;
        if params.iface_addr.is_null() || params.dev_addr.is_null() {
            crate::error!("mm: creating an endpoint needs UCT_EP_PARAM_FIELD_DEV_ADDR and _IFACE_ADDR");
            return Err(UCS_ERR_INVALID_PARAM);
        }
        let extra_len = s.md().mapper.iface_addr_extra_len();
        // SAFETY: as in is_reachable.
        let (seg_id, extra) = unsafe {
            let seg_id = u64::from_ne_bytes(read_addr::<8>(params.iface_addr as *const c_void).unwrap_or_default());
            (seg_id, std::slice::from_raw_parts((params.iface_addr as *const u8).add(8), extra_len).to_vec())
        };
        let seg = s.md().mapper.attach(seg_id, s.fifo_bytes(), &extra).inspect_err(|st| {
            crate::error!("mm ep failed to connect to remote FIFO id {:#x}: {}", seg_id, crate::core::log::status_str(*st))
        })?;
        // SAFETY: the peer's FIFO has the same geometry (same configuration
        // on both sides, as UCX requires) and stays mapped until detach.
        let rfifo = unsafe { Fifo::new(seg.address as *mut u8, s.fifo_size as usize, s.elem_size) };
        let pid = rfifo.pid();
        crate::debug!("mm ep: remote FIFO {:#x} mapped at {:p} len {}: head {} tail {} pid {}", seg_id, seg.address,
                      seg.length, rfifo.head().load(Ordering::Relaxed), rfifo.tail().load(Ordering::Relaxed), pid);
        // SAFETY: libucs reads /proc/<pid>/stat.
        let start = unsafe { ucs::ucs_sys_get_proc_create_time(pid) } as u64;
        if start == 0 {
            crate::diag!("mm: failed to get start time for pid {}", pid);
            s.md().mapper.detach(&seg);
            return Err(UCS_ERR_ENDPOINT_TIMEOUT);
        }
        let (signal_addr, signal_len) = rfifo.signal_addr();
        let tail = rfifo.tail().load(Ordering::Acquire);
        crate::debug!("created mm ep, connected to remote FIFO id {:#x} (pid {})", seg_id, pid);
        Ok(MmEp {
            fifo_seg: seg,
            fifo: rfifo,
            cached_tail: Cell::new(tail),
            blocked: Cell::new(false),
            scheduled: Cell::new(false),
            pending: RefCell::new(VecDeque::new()),
            segs: RefCell::new(HashMap::new()),
            last_seg: Cell::new((0, std::ptr::null_mut(), 0)),
            peer_extra: extra,
            signal_addr,
            signal_len,
            peer_pid: pid,
            peer_start: start,
        })
    }

    fn ep_destroy(iface: &Iface<Self>, ep: &mut Ep<Self>) {
        let me = ep as *const Ep<Self>;
        iface.tl.pending_eps.borrow_mut().retain(|&p| p != me);
        let n = ep.tl.pending.borrow().len();
        if n > 0 {
            crate::warn!("mm ep {:p}: canceling {} pending request(s)", me, n);
        }
        let md = iface.tl.md();
        for (_, rs) in ep.tl.segs.borrow_mut().drain() {
            md.mapper.detach(&rs);
        }
        md.mapper.detach(&ep.tl.fifo_seg);
    }

    fn close(iface: &mut Iface<Self>) {
        iface.tl.pending_eps.borrow_mut().clear();
    }

    #[inline(always)]
    fn progress(iface: &Iface<Self>) -> u32 {
        let s = &iface.tl;
        let mut count = 0u32;
        let window = s.poll_count.get();
        while count < window && s.poll_one(iface) {
            count += 1;
        }
        s.window_adjust(count);
        if !s.pending_eps.borrow().is_empty() {
            s.dispatch_pending(&mut count);
        }
        count
    }

    fn iface_flush(_iface: &Iface<Self>, _flags: u32, comp: *mut uct_completion_t) -> ucs_status_t {
        if !comp.is_null() {
            return UCS_ERR_UNSUPPORTED;
        }
        fence(Ordering::Release);
        UCS_OK
    }

    fn event_fd_get(iface: &Iface<Self>) -> Result<c_int, ucs_status_t> {
        Ok(iface.tl.signal_fd)
    }

    fn event_arm(iface: &Iface<Self>, events: u32) -> ucs_status_t {
        let s = &iface.tl;
        if events & UCT_EVENT_SEND_COMP != 0 && !s.pending_eps.borrow().is_empty() {
            return UCS_ERR_BUSY;
        }
        if events & UCT_EVENT_RECV == 0 {
            return UCS_OK;
        }
        let head = s.fifo.head().load(Ordering::Acquire);
        if head & !fifo::HEAD_EVENT_ARMED > s.read_index.get() {
            return UCS_ERR_BUSY;
        }
        if head & fifo::HEAD_EVENT_ARMED == 0
            && s.fifo.head().compare_exchange(head, head | fifo::HEAD_EVENT_ARMED, Ordering::AcqRel,
                                             Ordering::Relaxed).is_err()
        {
            return UCS_ERR_BUSY;
        }
        let mut buf = [0u8; 32];
        // SAFETY: draining our own non-blocking socket into a local buffer.
        let r = unsafe { libc::recv(s.signal_fd, buf.as_mut_ptr() as *mut c_void, buf.len(), 0) };
        if r > 0 {
            return UCS_ERR_BUSY;
        }
        if r == 0 {
            return UCS_ERR_CONNECTION_RESET;
        }
        match std::io::Error::last_os_error().raw_os_error() {
            Some(libc::EAGAIN) => UCS_OK,
            Some(libc::EINTR) => UCS_ERR_BUSY,
            _ => {
                crate::error!("mm: failed to read the signal socket: {}", std::io::Error::last_os_error());
                UCS_ERR_IO_ERROR
            }
        }
    }

    #[inline(always)]
    fn am_short(iface: &Iface<Self>, ep: &Ep<Self>, id: u8, header: u64, payload: &[u8]) -> ucs_status_t {
        let s = &iface.tl;
        if id as usize >= UCT_AM_ID_MAX {
            return am_id_error(id);
        }
        let total = payload.len() + 8;
        if total > s.max_short {
            return length_error(0, total, s.max_short);
        }
        let head = match s.claim(iface, ep) {
            Ok(h) => h,
            Err(st) => return st,
        };
        let elem = ep.tl.fifo.elem(head);
        let dst = elem.data();
        // SAFETY: the claimed element is ours to fill; total <= max_short,
        // the element's data capacity.
        unsafe {
            std::ptr::write_unaligned(dst as *mut u64, header);
            std::ptr::copy_nonoverlapping(payload.as_ptr(), dst.add(8), payload.len());
        }
        elem.set_length(total as u16);
        s.publish(&ep.tl, elem, head, fifo::FLAG_INLINE, id);
        UCS_OK
    }

    fn am_short_iov(iface: &Iface<Self>, ep: &Ep<Self>, id: u8, iov: &[uct_iov_t]) -> ucs_status_t {
        let s = &iface.tl;
        if id as usize >= UCT_AM_ID_MAX {
            return am_id_error(id);
        }
        let total = iov_total(iov);
        if total > s.max_short {
            return length_error(1, total, s.max_short);
        }
        let head = match s.claim(iface, ep) {
            Ok(h) => h,
            Err(st) => return st,
        };
        let elem = ep.tl.fifo.elem(head);
        // SAFETY: the claimed element's data area holds max_short bytes, and
        // no one else touches it until it is published.
        let dst = unsafe { std::slice::from_raw_parts_mut(elem.data(), s.max_short) };
        let n = iov_gather(iov, &mut dst[..total]);
        elem.set_length(n as u16);
        s.publish(&ep.tl, elem, head, fifo::FLAG_INLINE, id);
        UCS_OK
    }

    fn am_bcopy(iface: &Iface<Self>, ep: &Ep<Self>, id: u8, pack: Pack, flags: u32) -> isize {
        if id as usize >= UCT_AM_ID_MAX {
            return am_id_error(id) as isize;
        }
        if flags & UCT_SEND_FLAG_PEER_CHECK != 0 {
            Self::ep_check(iface, ep, 0, std::ptr::null_mut());
        }
        // SAFETY (of the closure's write): the descriptor holds seg_size
        // bytes, the bcopy limit the pack callback is bound to.
        iface.tl.send_desc(iface, ep, id, |dst| unsafe { pack.pack_raw(dst) })
    }

    fn am_zcopy(iface: &Iface<Self>, ep: &Ep<Self>, id: u8, header: &[u8], iov: &[uct_iov_t], flags: u32,
                _comp: *mut uct_completion_t) -> ucs_status_t {
        let s = &iface.tl;
        if id as usize >= UCT_AM_ID_MAX {
            return am_id_error(id);
        }
        if header.len() > s.am_max_hdr() {
            return length_error(2, header.len(), s.am_max_hdr());
        }
        let payload = iov_total(iov);
        if header.len() + payload > s.seg_size {
            return length_error(3, header.len() + payload, s.seg_size);
        }
        if flags & UCT_SEND_FLAG_PEER_CHECK != 0 {
            Self::ep_check(iface, ep, 0, std::ptr::null_mut());
        }
        // The message is copied into the receiver's descriptor now, so the
        // operation is complete when the call returns.
        let r = s.send_desc(iface, ep, id, |dst| {
            // SAFETY: the descriptor holds seg_size bytes, checked above to
            // fit header and payload.
            let out = unsafe { std::slice::from_raw_parts_mut(dst, header.len() + payload) };
            out[..header.len()].copy_from_slice(header);
            header.len() + iov_gather(iov, &mut out[header.len()..])
        });
        if r < 0 { r as ucs_status_t } else { UCS_OK }
    }

    fn put_zcopy(_iface: &Iface<Self>, _ep: &Ep<Self>, iov: &[uct_iov_t], remote: Remote,
                 _comp: *mut uct_completion_t) -> ucs_status_t {
        if iov.len() > sm::MAX_IOV {
            return length_error(4, iov.len(), sm::MAX_IOV);
        }
        sm::put_zcopy(iov, remote)
    }

    fn get_zcopy(_iface: &Iface<Self>, _ep: &Ep<Self>, iov: &[uct_iov_t], remote: Remote,
                 _comp: *mut uct_completion_t) -> ucs_status_t {
        if iov.len() > sm::MAX_IOV {
            return length_error(5, iov.len(), sm::MAX_IOV);
        }
        sm::get_zcopy(iov, remote)
    }

    crate::mapped_rma_ops!();

    fn pending_add(iface: &Iface<Self>, ep: &Ep<Self>, req: PendingReq, _flags: u32) -> ucs_status_t {
        let s = &iface.tl;
        if !ep.tl.blocked.get() && ep.tl.pending.borrow().is_empty() && s.has_room(&ep.tl) {
            return UCS_ERR_BUSY;
        }
        ep.tl.pending.borrow_mut().push_back(req);
        s.schedule(ep);
        UCS_OK
    }

    fn pending_purge(_iface: &Iface<Self>, ep: &Ep<Self>, cb: PurgeCb) {
        let reqs: Vec<_> = ep.tl.pending.borrow_mut().drain(..).collect();
        for req in reqs {
            if !cb.call(req) {
                crate::warn!("mm ep: canceling user pending request {:p}", req.0);
            }
        }
    }

    fn ep_flush(iface: &Iface<Self>, ep: &Ep<Self>, _flags: u32, _comp: *mut uct_completion_t) -> ucs_status_t {
        let s = &iface.tl;
        let e = &ep.tl;
        if !s.has_room(e) {
            if !e.pending.borrow().is_empty() {
                return UCS_ERR_NO_RESOURCE;
            }
            Self::refresh_tail(e);
            if !s.has_room(e) {
                return UCS_ERR_NO_RESOURCE;
            }
        }
        fence(Ordering::Release);
        UCS_OK
    }

    fn ep_check(iface: &Iface<Self>, ep: &Ep<Self>, flags: u32, _comp: *mut uct_completion_t) -> ucs_status_t {
        if flags != 0 {
            return UCS_ERR_INVALID_PARAM;
        }
        // SAFETY: libucs reads /proc/<pid>/stat.
        let now = unsafe { ucs::ucs_sys_get_proc_create_time(ep.tl.peer_pid) } as u64;
        if now != ep.tl.peer_start {
            crate::diag!("mm: peer pid {} is gone (start time {} != {})", ep.tl.peer_pid, now, ep.tl.peer_start);
            iface.hdr.schedule_ep_err(ep as *const Ep<Self> as uct_ep_h);
        }
        UCS_OK
    }
}

// ---------------------------------------------------------------------------
// Opening an interface.

fn create_signal_socket() -> Result<(c_int, libc::sockaddr_un, libc::socklen_t), ucs_status_t> {
    // SAFETY: plain socket calls on a descriptor we own; all-zero is a valid
    // sockaddr_un; binding with only the family asks for an abstract name.
    unsafe {
        let fd = libc::socket(libc::AF_UNIX, libc::SOCK_DGRAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC, 0);
        if fd < 0 {
            crate::error!("failed to create unix domain socket for signal: {}", std::io::Error::last_os_error());
            return Err(UCS_ERR_IO_ERROR);
        }
        let mut sa: libc::sockaddr_un = std::mem::zeroed();
        sa.sun_family = libc::AF_UNIX as libc::sa_family_t;
        if libc::bind(fd, &sa as *const libc::sockaddr_un as *const libc::sockaddr,
                      std::mem::size_of::<libc::sa_family_t>() as libc::socklen_t) < 0 {
            crate::error!("failed to auto-bind unix domain socket: {}", std::io::Error::last_os_error());
            libc::close(fd);
            return Err(UCS_ERR_IO_ERROR);
        }
        let mut len = std::mem::size_of::<libc::sockaddr_un>() as libc::socklen_t;
        sa = std::mem::zeroed();
        if libc::getsockname(fd, &mut sa as *mut libc::sockaddr_un as *mut libc::sockaddr, &mut len) < 0 {
            crate::error!("failed to get the unix domain socket address: {}", std::io::Error::last_os_error());
            libc::close(fd);
            return Err(UCS_ERR_IO_ERROR);
        }
        Ok((fd, sa, len))
    }
}

/// Open a posix or sysv interface.
pub fn open<M: Mapper>(md: &MdObj, worker: &mut WorkerObj, params: &IfaceParams, config: *const c_void,
                       internal: &'static InternalOps) -> Result<uct_iface_h, ucs_status_t> {
    // SAFETY: the generic open hands us this transport's parsed config.
    let cfg = unsafe { &*(config as *const MmIfaceConfig) };
    let Some(mm) = MmMd::<M>::of(md) else {
        crate::error!("mm: memory domain {} is not a shared-memory domain", md.name);
        return Err(UCS_ERR_INVALID_PARAM);
    };
    if params.open_mode & UCT_IFACE_OPEN_MODE_DEVICE == 0 {
        crate::error!("only UCT_IFACE_OPEN_MODE_DEVICE is supported");
        return Err(UCS_ERR_UNSUPPORTED);
    }
    if params.dev_name != super::DEVICE_NAME {
        crate::error!("{}: no device named '{}'", md.component.name, params.dev_name);
        return Err(UCS_ERR_NO_DEVICE);
    }
    if worker.thread_mode == UCS_THREAD_MODE_MULTI {
        crate::error!("Shared memory transport does not support multi-threaded worker");
        return Err(UCS_ERR_INVALID_PARAM);
    }
    crate::core::config::check_pool_limits("mm receive descriptors", cfg.rx_bufs_grow, cfg.rx_max_bufs)?;
    let fifo_size = cfg.fifo_size as usize;
    if fifo_size <= 1 || !fifo_size.is_power_of_two() {
        crate::error!("The MM FIFO size must be a power of two and bigger than 1.");
        return Err(UCS_ERR_INVALID_PARAM);
    }
    if !(0.0..1.0).contains(&cfg.release_factor) {
        crate::error!("The MM release FIFO factor must be: (0 =< factor < 1).");
        return Err(UCS_ERR_INVALID_PARAM);
    }
    let elem_size = cfg.fifo_elem_size as usize;
    if elem_size <= fifo::ELEM_HDR || elem_size - fifo::ELEM_HDR > u16::MAX as usize {
        crate::error!("FIFO_ELEM_SIZE ({}) must be larger than the {}-byte element header and at most {}",
                      elem_size, fifo::ELEM_HDR, u16::MAX as usize + fifo::ELEM_HDR);
        return Err(UCS_ERR_INVALID_PARAM);
    }
    if cfg.seg_size == 0 || cfg.seg_size > u16::MAX as usize {
        crate::error!("SEG_SIZE ({}) must be between 1 and {} (the FIFO length field is 16 bits)",
                      cfg.seg_size, u16::MAX);
        return Err(UCS_ERR_INVALID_PARAM);
    }
    let (align, align_offset) = match params.am_alignment {
        Some(a) if a > 1 => (a, if params.am_align_offset < cfg.seg_size { params.am_align_offset } else { 0 }),
        _ => (fifo::CACHE_LINE, 0),
    };
    let fifo_max_poll = if cfg.fifo_max_poll == u64::MAX as libc::c_ulong - 1 || cfg.fifo_max_poll == 0 {
        FIFO_DEFAULT_MAX_POLL
    } else {
        cfg.fifo_max_poll.min(u32::MAX as libc::c_ulong) as u32
    };
    let release_mask = {
        let n = ((fifo_size as f64 * cfg.release_factor) as usize).max(1);
        let log = usize::BITS - 1 - n.leading_zeros();
        (1u64 << log) - 1
    };

    let fifo_seg = mm.alloc_segment(fifo::segment_bytes(fifo_size, elem_size), "mm_recv_fifo")?;
    // SAFETY: the segment was just created with the FIFO's size.
    let fifo = unsafe { Fifo::new(fifo_seg.address as *mut u8, fifo_size, elem_size) };
    let (signal_fd, sa, sa_len) = match create_signal_socket() {
        Ok(x) => x,
        Err(s) => {
            let _ = mm.mapper.free(&fifo_seg);
            return Err(s);
        }
    };
    fifo.head().store(0, Ordering::Relaxed);
    fifo.tail().store(0, Ordering::Relaxed);
    // SAFETY: getpid has no preconditions.
    fifo.set_pid(unsafe { libc::getpid() });
    fifo.set_signal_addr(&sa, sa_len);
    crate::debug!("mm: own FIFO at {:p} (segment {:p}) pid {}", fifo.elem(0).data(), fifo_seg.address, fifo.pid());

    let max_bufs = if cfg.rx_max_bufs < 0 { None } else { Some(cfg.rx_max_bufs as usize) };
    let pool = Box::new(DescPool::new(mm, params.rx_headroom, cfg.seg_size, align, align_offset,
                                      cfg.rx_bufs_grow as usize, max_bufs));
    let release = Box::new(ReleaseDesc { base: uct_recv_desc_t { cb: Some(release_desc::<M>) },
                                         pool: &*pool as *const DescPool<M> });
    let mut elem_slot = Vec::with_capacity(fifo_size);
    for i in 0..fifo_size as u64 {
        let Some(slot) = pool.get() else {
            crate::error!("failed to allocate a descriptor for MM");
            for c in &elem_slot {
                let c: &Cell<*mut u8> = c;
                pool.put(c.get());
            }
            drop(pool);
            // SAFETY: closing our own socket.
            unsafe { libc::close(signal_fd) };
            let _ = mm.mapper.free(&fifo_seg);
            return Err(UCS_ERR_NO_RESOURCE);
        };
        let e = fifo.elem(i);
        e.set_desc(pool.info(slot), pool.data(slot));
        e.init();
        elem_slot.push(Cell::new(slot));
    }
    let spare = pool.get();
    let extra_flags = if cfg.error_handling != 0 { UCT_IFACE_FLAG_ERRHANDLE_PEER_FAILURE } else { 0 };
    // SAFETY: the base config is the first member of the mm config.
    let hdr = IfaceHeader::new(md, worker as *mut WorkerObj, params, &cfg.sm.base, internal);
    crate::debug!("created mm iface FIFO id {:#x} size {} ({} x {} elems)", fifo_seg.seg_id, fifo_seg.length,
                  elem_size, fifo_size);
    let tl = MmIface {
        md: mm,
        fifo_seg,
        fifo,
        fifo_size: fifo_size as u64,
        fifo_shift: fifo_size.trailing_zeros(),
        elem_size,
        max_short: elem_size - fifo::ELEM_HDR,
        seg_size: cfg.seg_size,
        release_mask,
        fifo_max_poll,
        read_index: Cell::new(0),
        poll_count: Cell::new(fifo_max_poll),
        prev_wnd_cons: Cell::new(false),
        elem_slot,
        spare: Cell::new(spare),
        pool,
        release,
        signal_fd,
        pending_eps: RefCell::new(VecDeque::new()),
        bandwidth: cfg.sm.bandwidth,
        extra_flags,
        _m: PhantomData,
    };
    Ok(Iface::into_handle(hdr, tl))
}

/// The internal hooks of the mm transport with mapper `M`.
pub struct MmInternal<M>(PhantomData<M>);
impl<M: Mapper> MmInternal<M> {
    pub const OPS: InternalOps = Internal::<MmIface<M>>::OPS;
}
