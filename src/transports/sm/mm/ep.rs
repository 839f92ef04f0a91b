//! The mm endpoint and the send path: an endpoint maps the peer's receive
//! FIFO and claims its elements with a compare-and-swap on the head; short
//! messages travel inline in the element, bcopy and zcopy messages go into
//! the receive descriptor the element names, in a peer segment mapped on
//! first use. Endpoints that found the FIFO full keep their pending requests
//! until the interface's progress sees room again. (UCX 1.13.1:
//! `src/uct/sm/mm/base/mm_ep.c`.)

use super::fifo::{self, Fifo};
use super::iface::MmIface;
use super::mapper::{Mapper, RemoteSeg};
use super::peer;
use crate::abi::*;
use crate::core::iface::{Ep, Iface};
use crate::core::handles::*;
use crate::sys::socket::{Io, MsgFlags, UnixAddr};
use crate::sys::Errno;
use std::cell::{Cell, RefCell};
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::Ordering;

/// Most consecutive lost compare-and-swaps on a peer's FIFO head in one send.
const MAX_HEAD_RACES: u32 = 1 << 20;
/// Most receive-descriptor segments of one peer an endpoint maps.
const MAX_PEER_SEGS: usize = 4096;

/// Largest header of an AM zcopy.
const AM_ZCOPY_MAX_HDR: usize = 128;

/// An mm endpoint: the peer's FIFO mapped here, the peer's descriptor
/// segments mapped so far, and the state of sends waiting for room.
pub struct MmEp {
    /// Remote FIFO mapping (detached on destroy).
    pub(super) fifo_seg: RemoteSeg,
    /// The peer FIFO's segment id (its descriptor segments must come from
    /// the same process, see [`Mapper::attach_peer`]).
    pub(super) fifo_seg_id: u64,
    pub(super) fifo: Fifo,
    pub(super) cached_tail: Cell<u64>,
    /// Set when a send found the FIFO full: later sends fail fast until the
    /// interface's progress sees room again (keeps pending requests first).
    pub(super) blocked: Cell<bool>,
    pub(super) scheduled: Cell<bool>,
    pub(super) pending: RefCell<VecDeque<PendingReq>>,
    /// Receive-descriptor segments of the peer, mapped on first use.
    pub(super) segs: RefCell<HashMap<u64, RemoteSeg>>,
    /// The last segment used, checked before the map.
    pub(super) last_seg: Cell<(u64, *mut u8, usize)>,
    pub(super) peer_extra: Vec<u8>,
    /// The peer's wake-up socket, as its FIFO names it (None when the
    /// address there is not a unix one: waking the peer then fails).
    pub(super) signal_addr: Option<UnixAddr>,
    pub(super) peer_pid: i32,
    pub(super) peer_start: u64,
    /// Set once a peer's misbehaviour was logged for this endpoint.
    pub(super) warned: Cell<bool>,
}

impl<M: Mapper> MmIface<M> {
    /// Attach (or find) a peer's receive-descriptor segment.
    #[inline]
    pub(super) fn remote_seg(&self, ep: &MmEp, seg_id: u64, seg_size: usize) -> Result<(*mut u8, usize), ucs_status_t> {
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
                if segs.len() >= MAX_PEER_SEGS {
                    crate::error!("mm: pid {} names more than {} receive segments; refusing {:#x}", ep.peer_pid,
                                  MAX_PEER_SEGS, seg_id);
                    return Err(UCS_ERR_EXCEEDS_LIMIT);
                }
                let rs = self.md().mapper.attach_peer(seg_id, seg_size, &ep.peer_extra, ep.fifo_seg_id)
                    .inspect_err(|s| {
                        crate::error!("mm: failed to attach peer segment {:#x}: {}", seg_id,
                                      crate::core::log::status_str(*s))
                    })?;
                segs.insert(seg_id, rs);
                rs
            }
        };
        // The length really mapped (checked against the segment by attach).
        ep.last_seg.set((seg_id, rs.address as *mut u8, rs.length));
        Ok((rs.address as *mut u8, rs.length))
    }

    /// Put an endpoint on the interface's dispatch list.
    pub(super) fn schedule(&self, ep: &Ep<Self>) {
        if !ep.tl.scheduled.replace(true) {
            self.pending_eps.borrow_mut().push_back(ep as *const Ep<Self>);
        }
    }

    #[inline(always)]
    pub(super) fn refresh_tail(ep: &MmEp) -> u64 {
        let t = ep.fifo.tail().load(Ordering::Acquire);
        ep.cached_tail.set(t);
        t
    }

    #[inline(always)]
    pub(super) fn has_room(&self, ep: &MmEp) -> bool {
        fifo::can_send(ep.fifo.head().load(Ordering::Relaxed), ep.cached_tail.get(), self.fifo_size)
    }

    /// Claim the element at the head of the peer's FIFO. Returns the head
    /// value claimed, or NO_RESOURCE when the FIFO is full.
    #[inline(always)]
    pub(super) fn claim(&self, iface: &Iface<Self>, ep: &Ep<Self>) -> Result<u64, ucs_status_t> {
        let e = &ep.tl;
        let mut tries = 0u32;
        loop {
            let head = e.fifo.head().load(Ordering::Relaxed);
            if !fifo::can_send(head, e.cached_tail.get(), self.fifo_size) {
                self.no_room(iface, ep, head)?;
            }
            let next = head.wrapping_add(1) & !fifo::HEAD_EVENT_ARMED;
            if e.fifo.head().compare_exchange(head, next, Ordering::AcqRel, Ordering::Relaxed).is_ok() {
                return Ok(head);
            }
            Self::contended(e, &mut tries)?;
        }
    }

    /// Count a lost race for the head. Honest senders make each other lose
    /// only while the FIFO has room, which they fill quickly; a head that
    /// keeps changing past that is a peer rewriting it: give up this send
    /// (the caller may retry) instead of spinning for ever.
    #[inline(always)]
    fn contended(e: &MmEp, tries: &mut u32) -> Result<(), ucs_status_t> {
        *tries += 1;
        if *tries < MAX_HEAD_RACES {
            return Ok(());
        }
        Self::head_unstable(e)
    }

    #[cold]
    #[inline(never)]
    fn head_unstable(e: &MmEp) -> Result<(), ucs_status_t> {
        if !e.warned.replace(true) {
            crate::error!("mm: the head of the FIFO of pid {} keeps changing under us ({} lost races in one send)",
                          e.peer_pid, MAX_HEAD_RACES);
        }
        Err(UCS_ERR_NO_RESOURCE)
    }

    /// Log a refused peer descriptor (once per endpoint).
    #[cold]
    #[inline(never)]
    fn bad_desc(e: &MmEp, why: peer::BadDesc) -> ucs_status_t {
        if !e.warned.replace(true) {
            crate::error!("mm: refusing the receive descriptor of pid {}: {}", e.peer_pid, why);
        }
        UCS_ERR_IO_ERROR
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
    pub(super) fn publish(&self, ep: &MmEp, elem: fifo::Elem, head: u64, flags: u8, id: u8) {
        elem.set_am_id(id);
        elem.publish(flags | fifo::owner_bit(head, self.fifo_size));
        if head & fifo::HEAD_EVENT_ARMED != 0 {
            self.signal(ep);
        }
    }

    /// Send the peer's wake-up socket one byte. A full socket (a wake-up
    /// is pending already) or a peer socket gone is not worth a word.
    #[cold]
    fn signal(&self, ep: &MmEp) {
        let io = match &ep.signal_addr {
            Some(to) => self.signal.send_to_unix(&[0u8], to, MsgFlags::empty()),
            // Refused (and said so) when the endpoint was created.
            None => return,
        };
        if let Io::Err(err) = io {
            if err != Errno::ECONNREFUSED {
                crate::warn!("mm: failed to send wakeup signal: {}", crate::sys::errno_str(err as i32));
            }
        }
    }

    /// Largest AM zcopy header: what is left of a descriptor for the
    /// payload is reported as `am.max_zcopy`.
    #[inline(always)]
    pub(super) fn am_max_hdr(&self) -> usize {
        AM_ZCOPY_MAX_HDR.min(self.seg_size / 2)
    }

    /// Send a message through one of the receiver's descriptors: `fill`
    /// writes it at the given address (at most seg_size bytes) and returns
    /// its length. Returns the length, or a negative status.
    #[inline]
    pub(super) fn send_desc(&self, iface: &Iface<Self>, ep: &Ep<Self>, id: u8, fill: impl FnOnce(*mut u8) -> usize) -> isize {
        let e = &ep.tl;
        let mut tries = 0u32;
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
            // Copied out once: the peer may rewrite it meanwhile.
            let d = elem.desc();
            let (base, offset) = match peer::resolve_desc(d, self.seg_size, |id, size| self.remote_seg(e, id, size).ok()) {
                Ok(x) => x,
                Err(why) => return Self::bad_desc(e, why) as isize,
            };
            let next = head.wrapping_add(1) & !fifo::HEAD_EVENT_ARMED;
            if e.fifo.head().compare_exchange(head, next, Ordering::AcqRel, Ordering::Relaxed).is_err() {
                if let Err(st) = Self::contended(e, &mut tries) {
                    return st as isize;
                }
                continue;
            }
            // SAFETY: offset + seg_size lies inside the mapping (resolve_desc).
            let length = fill(unsafe { base.add(offset) }).min(self.seg_size);
            elem.set_length(length as u16);
            self.publish(e, elem, head, 0, id);
            return length as isize;
        }
    }

    /// Run pending requests of endpoints whose peer FIFO has room again.
    pub(super) fn dispatch_pending(&self, count: &mut u32) {
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
