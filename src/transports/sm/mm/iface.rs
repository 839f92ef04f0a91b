//! The mm interface (posix and sysv): a single-receiver FIFO in shared
//! memory that any number of senders claim elements of, byte-compatible
//! with UCX 1.13.1 (`src/uct/sm/mm/base/mm_iface.c` and `mm_ep.c`), so C and
//! Rust processes talk to each other. This file holds the interface state
//! and its `Transport` implementation; the send path is in `ep.rs`, the
//! receive path in `recv.rs`, the descriptors in `desc.rs` and the opening
//! of an interface in `open.rs`. Remote memory access (put/get/atomics) goes
//! through mapped rkeys.

use super::desc::{DescPool, ReleaseDesc};
use super::ep::MmEp;
use crate::core::iface::checks::{self, Op};
use super::fifo::{self, Fifo};
use super::mapper::{Mapper, Segment};
use super::md::MmMd;
use crate::abi::*;
use crate::core::iface::{Ep, EpParams, Iface, Internal, InternalOps, Transport};
use crate::core::handles::*;
use crate::sys::socket::{unix_addr_from_raw, Io, MsgFlags, Socket};
use crate::transports::sm;
use crate::transports::sm::release::{self, MmOverheads};
use crate::ucs;
use libc::c_int;
use std::cell::{Cell, RefCell};
use std::collections::{HashMap, VecDeque};
use std::marker::PhantomData;
use std::sync::atomic::{fence, Ordering};

/// Latency and overhead UCX reports for mm (seconds).
const LATENCY: f64 = 80e-9;
const OVERHEAD: f64 = release::MM_OVERHEAD;

/// An mm interface over mapper `M`: its own receive FIFO, the descriptors
/// attached to the FIFO's elements, and the endpoints waiting for room.
pub struct MmIface<M: Mapper> {
    pub(super) md: *const MmMd<M>,
    pub(super) fifo_seg: Segment,
    pub(super) fifo: Fifo,
    pub(super) fifo_size: u64,
    pub(super) fifo_shift: u32,
    pub(super) elem_size: usize,
    pub(super) max_short: usize,
    pub(super) seg_size: usize,
    pub(super) release_mask: u64,
    pub(super) fifo_max_poll: u32,
    pub(super) read_index: Cell<u64>,
    pub(super) poll_count: Cell<u32>,
    pub(super) prev_wnd_cons: Cell<bool>,
    /// Elements dropped as malformed (for rate-limited logging).
    pub(super) dropped: Cell<u64>,
    /// Receiver-private record of the descriptor attached to each element
    /// (never trust pointers read back from shared memory).
    pub(super) elem_slot: Vec<Cell<*mut u8>>,
    pub(super) spare: Cell<Option<*mut u8>>,
    pub(super) pool: Box<DescPool<M>>,
    pub(super) release: Box<ReleaseDesc<M>>,
    /// The wake-up socket (a unix datagram socket whose address is in our
    /// FIFO's control block): its descriptor is the interface's event fd.
    pub(super) signal: Socket,
    /// Endpoints with pending requests or a full FIFO, in arrival order.
    pub(super) pending_eps: RefCell<VecDeque<*const Ep<Self>>>,
    pub(super) bandwidth: f64,
    /// Per-operation overheads `uct_iface_estimate_perf` reports.
    pub(super) overheads: MmOverheads,
    pub(super) extra_flags: u64,
    pub(super) _m: PhantomData<M>,
}

impl<M: Mapper> MmIface<M> {
    pub(super) fn md(&self) -> &MmMd<M> {
        // SAFETY: the md outlives the interfaces opened on it.
        unsafe { &*self.md }
    }

    fn fifo_bytes(&self) -> usize {
        fifo::segment_bytes(self.fifo_size as usize, self.elem_size)
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
        let seg = std::mem::take(&mut self.fifo_seg);
        let _ = self.md().mapper.free(seg);
    }
}

/// An mm iface address: the FIFO's segment id, then the mapper's extra bytes.
fn split_iface_addr<'a>(addr: PeerAddr<'a>) -> Option<(u64, &'a [u8])> {
    super::peer::split_iface_addr(addr.bytes())
}

impl<M: Mapper> Transport for MmIface<M> {
    type Ep = MmEp;
    const NAME: &'static str = "mm";

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
        if !release::mm_zero_copy() {
            // No zero-copy operations: the limits UCX's mm reports then.
            attr.cap.put.max_iov = 1;
            attr.cap.get.max_iov = 1;
            attr.cap.am.max_zcopy = 0;
        }
        attr.bandwidth.shared = 0.0;
        attr.overhead = OVERHEAD;
        attr.priority = 0;
    }

    fn estimate_perf(iface: &Iface<Self>, perf: &mut uct_perf_attr_t) -> ucs_status_t {
        let m = perf.field_mask;
        let o = &iface.tl.overheads;
        // The operation, when the caller names one.
        let op = if m & UCT_PERF_ATTR_FIELD_OPERATION != 0 { Some(perf.operation) } else { None };
        if m & UCT_PERF_ATTR_FIELD_BANDWIDTH != 0 {
            perf.bandwidth.shared = 0.0;
            perf.bandwidth.dedicated = iface.tl.bandwidth;
        }
        if m & UCT_PERF_ATTR_FIELD_SEND_PRE_OVERHEAD != 0 {
            perf.send_pre_overhead = match op {
                Some(UCT_EP_OP_AM_SHORT) => o.send_am_short,
                Some(UCT_EP_OP_AM_BCOPY) => o.send_am_bcopy,
                _ => OVERHEAD,
            };
        }
        if m & UCT_PERF_ATTR_FIELD_RECV_OVERHEAD != 0 {
            perf.recv_overhead = match op {
                Some(UCT_EP_OP_AM_SHORT) => o.recv_am_short,
                Some(UCT_EP_OP_AM_BCOPY) => o.recv_am_bcopy,
                _ => OVERHEAD,
            };
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
        release::perf_flags(perf);
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

    fn is_reachable(iface: &Iface<Self>, dev: Option<PeerAddr<'_>>, addr: Option<PeerAddr<'_>>) -> bool {
        Self::reachable(iface, dev, addr).is_ok()
    }

    fn reachable(iface: &Iface<Self>, dev: Option<PeerAddr<'_>>, addr: Option<PeerAddr<'_>>) -> Result<(), String> {
        // An iface address is 8 bytes of FIFO id, then the mapper's extra
        // bytes, as reported in iface_addr_len.
        let split = addr.and_then(split_iface_addr);
        let Some((seg_id, extra)) = split else {
            return Err(release::reason(|| "iface address is empty".into()));
        };
        let Some(dev) = dev else { return Err(release::reason(|| "device address is empty".into())) };
        sm::device_addr::check_host(dev)?;
        // The mapper's refusals come without a reason, as in UCX.
        if iface.tl.md().mapper.is_reachable(seg_id, extra) { Ok(()) } else { Err(String::new()) }
    }

    fn ep_is_connected(iface: &Iface<Self>, ep: &Ep<Self>, dev: Option<PeerAddr<'_>>, addr: Option<PeerAddr<'_>>,
                       _ep_addr: Option<PeerAddr<'_>>) -> bool {
        // Reachable, and the FIFO this endpoint sends to is the peer's.
        Self::is_reachable(iface, dev, addr)
            && addr.and_then(split_iface_addr).is_some_and(|(seg_id, _)| seg_id == ep.tl.fifo_seg_id)
    }

    fn ep_create(iface: &Iface<Self>, params: &EpParams<'_>) -> Result<MmEp, ucs_status_t> {
        let s = &iface.tl;
        let (Some(iface_addr), Some(dev)) = (params.iface_addr, params.dev_addr) else {
            crate::error!("mm: creating an endpoint needs UCT_EP_PARAM_FIELD_DEV_ADDR and _IFACE_ADDR");
            return Err(UCS_ERR_INVALID_PARAM);
        };
        if !sm::device_addr::same_host(dev) {
            crate::error!("mm: the peer's device address names another host or IPC namespace");
            return Err(UCS_ERR_UNREACHABLE);
        }
        let (seg_id, extra) = split_iface_addr(iface_addr).ok_or(UCS_ERR_INVALID_PARAM)?;
        let extra = extra.to_vec();
        let seg = s.md().mapper.attach(seg_id, s.fifo_bytes(), &extra).inspect_err(|st| {
            crate::error!("mm ep failed to connect to remote FIFO id {:#x}: {}", seg_id, crate::core::log::status_str(*st))
        })?;
        // SAFETY: the peer's FIFO has the same geometry (same configuration
        // on both sides, as UCX requires) and stays mapped until detach.
        let rfifo = unsafe { Fifo::new(seg.address as *mut u8, s.fifo_size as usize, s.elem_size) };
        let pid = rfifo.pid();
        // Nothing was written to the mapping yet: a file that is not the
        // FIFO of the process its id names (say, another process's file a
        // forged proc link reaches) is left as it was.
        if !s.md().mapper.owns_fifo(seg_id, pid) {
            crate::error!("mm: segment {:#x} is not a FIFO of the process it names (its control block says pid {})",
                          seg_id, pid);
            s.md().mapper.detach(&seg);
            return Err(UCS_ERR_SHMEM_SEGMENT);
        }
        crate::debug!("mm ep: remote FIFO {:#x} mapped at {:p} len {}: head {} tail {} pid {}", seg_id, seg.address,
                      seg.length, rfifo.head().load(Ordering::Relaxed), rfifo.tail().load(Ordering::Relaxed), pid);
        let start = ucs::proc_create_time(pid);
        if start == 0 {
            crate::diag!("mm: failed to get start time for pid {}", pid);
            s.md().mapper.detach(&seg);
            return Err(UCS_ERR_ENDPOINT_TIMEOUT);
        }
        let (signal_addr, signal_len) = rfifo.signal_addr();
        // SAFETY: a sockaddr_un is plain bytes, all of them read.
        let sa_all = unsafe {
            std::slice::from_raw_parts(&signal_addr as *const libc::sockaddr_un as *const u8,
                                       std::mem::size_of::<libc::sockaddr_un>())
        };
        // A claimed length beyond the address is refused, not cut to it.
        let signal_ok = sa_all.get(..signal_len as usize)
            .ok_or("a length beyond a unix socket address")
            .and_then(super::peer::check_signal_addr)
            .inspect_err(|why| crate::error!(
                "mm: the wake-up address in the FIFO of pid {pid} is refused ({why}, length {signal_len}): \
                 no wake-ups to it"))
            .is_ok();
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
            signal_addr: if signal_ok { unix_addr_from_raw(&signal_addr, signal_len) } else { None },
            peer_pid: pid,
            peer_start: start,
            fifo_seg_id: seg_id,
            warned: Cell::new(false),
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

    fn iface_flush(_iface: &Iface<Self>, _flags: u32, comp: Completion) -> ucs_status_t {
        if !comp.is_none() {
            return UCS_ERR_UNSUPPORTED;
        }
        fence(Ordering::Release);
        UCS_OK
    }

    crate::mapped_rma_ops! {
        offered_if(release::mm_zero_copy()): [put_zcopy, get_zcopy, am_zcopy];

        fn event_fd_get(iface: &Iface<Self>) -> Result<c_int, ucs_status_t> {
            Ok(iface.tl.signal.fd())
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
            // One datagram waiting means a wake-up came: the caller must poll.
            let mut buf = [0u8; 32];
            match s.signal.recv(&mut buf, MsgFlags::empty()) {
                Io::Done(_) => UCS_ERR_BUSY,
                Io::Closed => UCS_ERR_CONNECTION_RESET,
                Io::Again => UCS_OK,
                Io::Err(err) => {
                    crate::error!("mm: failed to read the signal socket: {}", crate::sys::errno_str(err as i32));
                    UCS_ERR_IO_ERROR
                }
            }
        }

        #[inline(always)]
        fn am_short(iface: &Iface<Self>, ep: &Ep<Self>, id: u8, header: u64, payload: &[u8]) -> ucs_status_t {
            let s = &iface.tl;
            if let Err(e) = checks::am_id(id) {
                return e;
            }
            let total = payload.len() + 8;
            if let Err(e) = checks::length::<Self>(Op::AmShort, total, s.max_short) {
                return e;
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
            if let Err(e) = checks::am_id(id) {
                return e;
            }
            let total = iov_total(iov);
            if let Err(e) = checks::length::<Self>(Op::AmShortIov, total, s.max_short) {
                return e;
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
            if let Err(e) = checks::am_id(id) {
                return e as isize;
            }
            if flags & UCT_SEND_FLAG_PEER_CHECK != 0 {
                Self::ep_check(iface, ep, 0, Completion::none());
            }
            // SAFETY: the closure's pack callback writes into the peer's
            // descriptor, which holds seg_size bytes, the bcopy limit the
            // callback is bound to.
            iface.tl.send_desc(iface, ep, id, |dst| unsafe { pack.pack_raw(dst) })
        }

        fn am_zcopy(iface: &Iface<Self>, ep: &Ep<Self>, id: u8, header: &[u8], iov: &[uct_iov_t], flags: u32,
                    _comp: Completion) -> ucs_status_t {
            let s = &iface.tl;
            if let Err(e) = checks::am_id(id) {
                return e;
            }
            if let Err(e) = checks::length::<Self>(Op::AmZcopyHeader, header.len(), s.am_max_hdr()) {
                return e;
            }
            let payload = iov_total(iov);
            if let Err(e) = checks::length::<Self>(Op::AmZcopy, header.len() + payload, s.seg_size) {
                return e;
            }
            if flags & UCT_SEND_FLAG_PEER_CHECK != 0 {
                Self::ep_check(iface, ep, 0, Completion::none());
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
                     _comp: Completion) -> ucs_status_t {
            if let Err(e) = checks::iov_count::<Self>(Op::PutZcopy, iov.len(), sm::MAX_IOV) {
                return e;
            }
            sm::put_zcopy(iov, remote)
        }

        fn get_zcopy(_iface: &Iface<Self>, _ep: &Ep<Self>, iov: &[uct_iov_t], remote: Remote,
                     _comp: Completion) -> ucs_status_t {
            if let Err(e) = checks::iov_count::<Self>(Op::GetZcopy, iov.len(), sm::MAX_IOV) {
                return e;
            }
            sm::get_zcopy(iov, remote)
        }

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

        fn ep_flush(iface: &Iface<Self>, ep: &Ep<Self>, _flags: u32, _comp: Completion) -> ucs_status_t {
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

        fn ep_check(iface: &Iface<Self>, ep: &Ep<Self>, flags: u32, _comp: Completion) -> ucs_status_t {
            if flags != 0 {
                return UCS_ERR_INVALID_PARAM;
            }
            let now = ucs::proc_create_time(ep.tl.peer_pid);
            if now != ep.tl.peer_start {
                crate::diag!("mm: peer pid {} is gone (start time {} != {})", ep.tl.peer_pid, now, ep.tl.peer_start);
                iface.hdr.schedule_ep_err(ep as *const Ep<Self> as uct_ep_h);
            }
            UCS_OK
        }
    }
}

/// The internal hooks of the mm transport with mapper `M`.
pub struct MmInternal<M>(PhantomData<M>);
impl<M: Mapper> MmInternal<M> {
    pub const OPS: InternalOps = Internal::<MmIface<M>>::OPS;
}
