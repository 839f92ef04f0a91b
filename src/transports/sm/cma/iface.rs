//! The cma interface and endpoints.
//!
//! An endpoint is the peer's pid (and its start time, for `uct_ep_check`).
//! Puts and gets are queued per endpoint and return `UCS_INPROGRESS`; the
//! interface keeps the endpoints with queued work in a round-robin list,
//! as UCX's arbiter does:
//! - one progress call moves at most `TX_QUOTA` segments of `SEG_SIZE`
//!   bytes; a failed segment does not count;
//! - an endpoint whose operation needs more segments waits for the next
//!   progress call; one whose operation finished goes to the back of the
//!   list if it has more work;
//! - a flush completion queued by `uct_ep_flush` completes in its turn,
//!   after the operations queued before it.
//!
//! The progress callback is on the worker only while work is queued (added
//! by the first queued operation, removed by the progress that finds the
//! list empty), so `uct_iface_progress_enable/disable` have nothing to do,
//! as in UCX. The queue state sits behind a mutex, released while user
//! completion callbacks run: interfaces open on any worker thread mode (as
//! in UCX), and callbacks may post more work or destroy endpoints.

use super::assist;
use super::xfer::{Failure, Op, Tx};
use super::{md::CmaMd, CmaIfaceConfig, DEVICE_NAME};
use crate::abi::*;
use crate::core::iface::checks;
use crate::core::iface::{Ep, EpParams, Iface, IfaceHeader, IfaceParams, Internal, InternalOps, Transport};
use crate::core::log;
use crate::core::md::MdObj;
use crate::core::handles::*;
use crate::core::worker::WorkerObj;
use crate::transports::sm;
use crate::transports::sm::release::{self, PoolGrowth};
use crate::ucs;
use libc::{c_int, c_uint, c_ulong, c_void, pid_t};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};

/// Latency UCX 1.13.1 reports for the scopy transports (seconds).
const LATENCY: f64 = 80e-9;
/// Send overhead UCX 1.13.1 reports (seconds); 6 us on Fujitsu's ARM CPUs.
const OVERHEAD: f64 = 2e-6;
const OVERHEAD_FUJITSU_ARM: f64 = 6e-6;
/// Bit 31 of the pid in an iface address: the pid namespace follows.
pub const ADDR_FLAG_PID_NS: u32 = 1 << 31;
/// Length of an iface address in the default PID namespace: the pid alone.
const ADDR_LEN: usize = 4;

/// Where the namespace id of the long form starts, and how long that form
/// is, for a namespace id of `ns_len` bytes: UCX's `{pid_t; ucs_sys_ns_t}`
/// struct, aligned as its namespace id. Up to 1.21 that is the pid, 4
/// bytes of padding and 8 of namespace (16 bytes); from 1.22 the pid and 4
/// bytes of namespace (8).
const fn ns_offset(ns_len: usize) -> usize {
    if ns_len > ADDR_LEN { ns_len } else { ADDR_LEN }
}

pub const fn addr_len_ns(ns_len: usize) -> usize {
    ns_offset(ns_len) + ns_len
}

/// A decoded cma iface address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CmaAddr {
    pub pid: pid_t,
    /// The peer's PID namespace, when it is not the default one.
    pub ns: Option<u64>,
}

/// Decode a cma iface address a peer sent: a 4-byte pid (bit 31: the long
/// form with the PID namespace, `ns_len` bytes wide, follows; see
/// [`addr_len_ns`]). A pid of 0 names no process and is refused. Nothing
/// past `bytes` is read.
pub fn decode_iface_addr(bytes: &[u8], ns_len: usize) -> Result<CmaAddr, &'static str> {
    let raw = u32::from_ne_bytes(bytes.get(..4).ok_or("shorter than 4 bytes")?.try_into().map_err(|_| "short")?);
    let pid = (raw & !ADDR_FLAG_PID_NS) as pid_t;
    if pid == 0 {
        return Err("pid 0");
    }
    let ns = if raw & ADDR_FLAG_PID_NS != 0 {
        let ns = bytes.get(ns_offset(ns_len)..).and_then(|b| ucs::ns_decode(b, ns_len));
        Some(ns.ok_or("namespace flag without a namespace")?)
    } else {
        None
    };
    Ok(CmaAddr { pid, ns })
}

/// Encode an iface address: `pid` alone in the default PID namespace
/// (`ns` None), else the long form with the namespace id `ns_len` bytes wide
/// (the padding zero).
pub fn encode_iface_addr(pid: u32, ns: Option<u64>, ns_len: usize) -> Vec<u8> {
    match ns {
        None => pid.to_ne_bytes().to_vec(),
        Some(ns) => {
            let mut a = (pid | ADDR_FLAG_PID_NS).to_ne_bytes().to_vec();
            a.resize(ns_offset(ns_len), 0);
            ucs::ns_encode(&mut a, ns, ns_len);
            a
        }
    }
}

/// Whether a decoded address is in our PID namespace (`ours`: None for the
/// default namespace).
pub fn same_pid_ns(addr: &CmaAddr, ours: Option<u64>) -> bool {
    addr.ns == ours
}

fn local_pid_ns() -> Option<u64> {
    if pid_ns_is_default() { None } else { Some(pid_ns()) }
}

/// The queue of one endpoint.
#[derive(Default)]
struct EpQueue {
    ops: VecDeque<Tx>,
    pid: pid_t,
    /// In the interface's round-robin list (exactly once) when true.
    scheduled: bool,
    /// A failure has been reported to the error handler already.
    failed: bool,
    /// The peer's split-copy ring (`assist`), looked for once.
    peer: Option<Arc<assist::Peer>>,
    peer_looked: bool,
}

struct Sched {
    /// Free descriptors.
    pool: Vec<Tx>,
    /// Descriptors created so far (at most `max_bufs`).
    allocated: usize,
    /// Descriptors the pool grows by next time.
    next_grow: usize,
    /// Endpoint queues, indexed by `CmaEp::slot`.
    eps: Vec<EpQueue>,
    free_slots: Vec<usize>,
    /// Endpoints to serve, in order.
    active: VecDeque<usize>,
    /// Endpoints whose operation got a segment in this progress call; they
    /// go back to `active` when it ends.
    resched: VecDeque<usize>,
    /// Our progress callback on the worker, or `UCS_CALLBACKQ_ID_NULL`.
    prog_id: c_int,
}

impl Sched {
    fn idle(&self) -> bool {
        self.active.is_empty() && self.resched.is_empty()
    }
}

pub struct CmaIface {
    max_iov: usize,
    seg_size: usize,
    tx_quota: u32,
    /// Descriptor limit (`usize::MAX`: none) and how the pool grows (its
    /// first step is `Sched::next_grow`).
    max_bufs: usize,
    growth: PoolGrowth,
    bandwidth: f64,
    overhead: f64,
    /// Log level of failures the error handler takes (`UCX_CMA_FAILURE`).
    failure_level: u32,
    /// Gets of at least this many bytes are split with a peer of ours
    /// (`UCX_CMA_SPLIT_MIN`; 0: never).
    split_min: usize,
    /// This process's split-copy ring and our worker callback serving it.
    own: Option<Arc<assist::Own>>,
    own_cb: c_int,
    my_start: u64,
    sched: Mutex<Sched>,
}

/// An endpoint: the peer and the place of its queue.
pub struct CmaEp {
    pid: pid_t,
    start_time: c_ulong,
    slot: usize,
}

fn pid_ns_is_default() -> bool {
    ucs::ns_is_default(ucs::UCS_SYS_NS_TYPE_PID)
}

fn pid_ns() -> u64 {
    ucs::ns_id(ucs::UCS_SYS_NS_TYPE_PID)
}

fn ep_handle(ep: &Ep<CmaIface>) -> uct_ep_h {
    ep as *const Ep<CmaIface> as uct_ep_h
}

#[cold]
#[inline(never)]
fn iov_size_error(what: &str) -> ucs_status_t {
    crate::error!("cma {}: the total length of the iov list overflows", what);
    UCS_ERR_INVALID_PARAM
}

impl CmaIface {
    fn lock(&self) -> MutexGuard<'_, Sched> {
        // A panic never happens with the lock held; take the state anyway.
        self.sched.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A free descriptor, growing the pool by `TX_BUFS_GROW` within
    /// `TX_MAX_BUFS`.
    fn get_tx(&self, st: &mut Sched) -> Option<Tx> {
        if let Some(t) = st.pool.pop() {
            return Some(t);
        }
        if st.allocated >= self.max_bufs {
            return None;
        }
        let per_chunk = (self.growth.max_chunk_size / std::mem::size_of::<Tx>().max(1)).max(1);
        let n = st.next_grow.min(self.max_bufs - st.allocated).min(per_chunk).max(1);
        st.pool.extend((1..n).map(|_| Tx::new()));
        st.allocated += n;
        if self.growth.grow_factor != 1.0 {
            st.next_grow = ((n.min(st.next_grow) as f64 * self.growth.grow_factor + 0.5) as usize).max(1);
        }
        Some(Tx::new())
    }

    fn put_tx(st: &mut Sched, mut tx: Tx) {
        tx.clear();
        st.pool.push(tx);
    }

    /// Queue a put or get on `ep`.
    fn submit(iface: &Iface<Self>, ep: &Ep<Self>, op: Op, iov: &[uct_iov_t], remote: Remote,
              comp: Completion) -> ucs_status_t {
        let s = &iface.tl;
        let what = if op == Op::Put { "put_zcopy" } else { "get_zcopy" };
        let check_op = if op == Op::Put { checks::Op::PutZcopy } else { checks::Op::GetZcopy };
        if let Err(e) = checks::iov_count::<CmaIface>(check_op, iov.len(), s.max_iov) {
            return e;
        }
        let mut guard = s.lock();
        let st = &mut *guard;
        let Some(mut tx) = s.get_tx(st) else {
            return UCS_ERR_NO_MEMORY;
        };
        let loaded = tx.load(op, iov, remote.addr, comp, ep_handle(ep));
        if let Ok(n) = loaded {
            // A large get from a peer of ours: shared with it (see `assist`).
            if op == Op::Get && s.split_min != 0 && n >= s.split_min && st.eps[ep.tl.slot].ops.is_empty()
                && !st.eps[ep.tl.slot].failed
            {
                if let (Some(local), Some(peer)) = (tx.single_local(), Self::peer_of(st, ep)) {
                    drop(guard);
                    let (done, refused) = s.split_get(&peer, ep.tl.pid, local, remote.addr);
                    let mut guard = s.lock();
                    let st = &mut *guard;
                    if refused {
                        // (Yama may let us read the peer but not the peer
                        // write to us, for one.)
                        crate::debug!("cma: pid {} refused a split get; not asking it again", ep.tl.pid);
                        st.eps[ep.tl.slot].peer = None;
                    }
                    if done {
                        Self::put_tx(st, tx);
                        return UCS_OK;
                    }
                    // Not split (or a copy failed): the plain path does it
                    // all again and reports what fails.
                    return Self::queue(iface, ep, st, tx);
                }
            }
        }
        match loaded {
            Ok(0) => {
                Self::put_tx(st, tx);
                return UCS_OK;
            }
            Ok(n) if n <= s.seg_size && st.eps[ep.tl.slot].ops.is_empty() && !st.eps[ep.tl.slot].failed => {
                // Fast path: nothing is queued ahead on this endpoint and the
                // transfer fits one segment, so do it now and complete it
                // synchronously (UCS_OK), saving the queue round trip. A
                // partial or failed transfer continues on the queue, where
                // progress finishes it or reports the error.
                if tx.transfer(ep.tl.pid, s.seg_size).is_ok() && tx.done() {
                    Self::put_tx(st, tx);
                    return UCS_OK;
                }
            }
            Ok(_) => {}
            Err(_) => {
                Self::put_tx(st, tx);
                drop(guard);
                return iov_size_error(what);
            }
        }
        Self::queue(iface, ep, st, tx)
    }

    /// Queue `tx` on `ep` for progress.
    fn queue(iface: &Iface<Self>, ep: &Ep<Self>, st: &mut Sched, tx: Tx) -> ucs_status_t {
        if st.prog_id == UCS_CALLBACKQ_ID_NULL {
            st.prog_id = register_progress(&iface.hdr, iface.handle());
        }
        let slot = ep.tl.slot;
        let q = &mut st.eps[slot];
        q.ops.push_back(tx);
        if !q.scheduled {
            q.scheduled = true;
            st.active.push_back(slot);
        }
        UCS_INPROGRESS
    }

    /// The split-copy ring of `ep`'s peer, looked for on first use.
    fn peer_of(st: &mut Sched, ep: &Ep<Self>) -> Option<Arc<assist::Peer>> {
        let q = &mut st.eps[ep.tl.slot];
        if !q.peer_looked {
            q.peer_looked = true;
            #[allow(clippy::useless_conversion)] // c_ulong is narrower on 32-bit targets
            let start = u64::from(ep.tl.start_time);
            q.peer = assist::attach(ep.tl.pid, start).map(Arc::new);
        }
        q.peer.clone()
    }

    /// Read `len` bytes of peer `pid` at `remote` into `local` (one piece);
    /// false on a failure.
    fn read_range(pid: pid_t, local: usize, remote: u64, len: usize) -> bool {
        // SAFETY: the user's get destination, which UCT's contract gives us
        // until the operation completes (it is still in progress).
        unsafe { crate::sys::vm::copy_all(pid, true, local, remote as usize, len) }
    }

    /// A get split with the peer (see `assist`): the peer puts the second
    /// half while we read the first. Returns (all of it arrived, the peer
    /// refused).
    fn split_get(&self, peer: &assist::Peer, pid: pid_t, local: (usize, usize), remote: u64) -> (bool, bool) {
        let (dst, n) = local;
        let head = (n / 2) & !4095;
        let Some(k) = peer.post(dst + head, remote + head as u64, n - head, crate::sys::getpid(), self.my_start)
        else {
            return (false, false);
        };
        let mine = Self::read_range(pid, dst, remote, head);
        let outcome = peer.finish(k, self.own.as_deref());
        let theirs = outcome == assist::Outcome::Served
            || Self::read_range(pid, dst + head, remote + head as u64, n - head);
        (mine && theirs, outcome == assist::Outcome::Refused)
    }

    #[cold]
    #[inline(never)]
    fn segment_failed(&self, hdr: &IfaceHeader, f: &Failure, report: bool) {
        let level = if hdr.err_handler.is_some() { self.failure_level } else { log::LEVEL_ERROR };
        let reason = if f.errno != 0 {
            std::io::Error::from_raw_os_error(f.errno).to_string()
        } else {
            "nothing was transferred".to_string()
        };
        crate::log_at!(level, "{} returned {}: {}{}", f.detail, f.ret, reason,
                       if report { "" } else { " (failure already reported)" });
    }
}

/// Put our progress on the worker (thread-safe, callable from callbacks).
fn register_progress(hdr: &IfaceHeader, iface: uct_iface_h) -> c_int {
    let Some(progress) = hdr.base.ops.iface_progress else {
        return UCS_CALLBACKQ_ID_NULL;
    };
    // SAFETY: a `uct_iface_progress_func_t` takes the iface pointer and
    // returns unsigned: the shape of `ucs_callback_t` with the iface as its
    // argument (UCX registers its progress functions the same way).
    let cb: ucs_callback_t = Some(unsafe {
        std::mem::transmute::<unsafe extern "C" fn(uct_iface_h) -> c_uint, unsafe extern "C" fn(*mut c_void) -> c_uint>(
            progress)
    });
    // SAFETY: the worker outlives its interfaces, and the interface removes
    // its callback before it is freed (see `close`); add_safe is
    // thread-safe and allowed inside progress.
    unsafe {
        ucs::callbackq::add_safe(hdr.progress_q(), cb, iface as *mut c_void,
                                    UCS_CALLBACKQ_FLAG_FAST)
    }
}

fn unregister_progress(hdr: &IfaceHeader, id: c_int) {
    // SAFETY: `id` came from this worker's queue; remove_safe is
    // thread-safe and allowed inside progress (even inside this callback).
    unsafe { ucs::callbackq::remove_safe(hdr.progress_q(), id) };
}

impl Transport for CmaIface {
    type Ep = CmaEp;
    const NAME: &'static str = "cma";
    /// Progress is registered by the operations themselves, not by
    /// `uct_iface_progress_enable`.
    const HAS_PROGRESS: bool = false;

    fn query(iface: &Iface<Self>, attr: &mut uct_iface_attr_t) {
        let s = &iface.tl;
        attr.cap.put.min_zcopy = 0;
        attr.cap.put.max_zcopy = usize::MAX;
        attr.cap.put.opt_zcopy_align = 1;
        attr.cap.put.align_mtu = 1;
        attr.cap.put.max_iov = s.max_iov;
        attr.cap.get.min_zcopy = 0;
        attr.cap.get.max_zcopy = usize::MAX;
        attr.cap.get.opt_zcopy_align = 1;
        attr.cap.get.align_mtu = 1;
        attr.cap.get.max_iov = s.max_iov;
        attr.device_addr_len = sm::device_addr::len();
        attr.iface_addr_len = if pid_ns_is_default() { ADDR_LEN } else { addr_len_ns(ucs::ns_len()) };
        attr.ep_addr_len = 0;
        attr.max_conn_priv = 0;
        attr.cap.flags = UCT_IFACE_FLAG_GET_ZCOPY | UCT_IFACE_FLAG_PUT_ZCOPY | UCT_IFACE_FLAG_PENDING
            | UCT_IFACE_FLAG_CONNECT_TO_IFACE | UCT_IFACE_FLAG_ERRHANDLE_PEER_FAILURE | UCT_IFACE_FLAG_EP_CHECK;
        // Nothing is ever received, and uct_iface_event_arm refuses to arm
        // while operations are queued, so there is never an event to
        // signal asynchronously.
        attr.cap.event_flags = UCT_IFACE_FLAG_EVENT_SEND_COMP | UCT_IFACE_FLAG_EVENT_RECV
            | UCT_IFACE_FLAG_EVENT_ASYNC_CB;
        attr.latency.c = LATENCY;
        attr.latency.m = 0.0;
        attr.overhead = s.overhead;
        attr.bandwidth.dedicated = s.bandwidth;
        attr.bandwidth.shared = 0.0;
        attr.priority = 0;
    }

    fn ep_create(iface: &Iface<Self>, params: &EpParams<'_>) -> Result<CmaEp, ucs_status_t> {
        let (Some(dev), Some(iface_addr)) = (params.dev_addr, params.iface_addr) else {
            crate::error!("cma: creating an endpoint needs both UCT_EP_PARAM_FIELD_DEV_ADDR and \
                           UCT_EP_PARAM_FIELD_IFACE_ADDR");
            return Err(UCS_ERR_INVALID_PARAM);
        };
        if !sm::device_addr::same_host(dev) {
            crate::error!("cma: the peer's device address names another host or IPC namespace");
            return Err(UCS_ERR_UNREACHABLE);
        }
        let addr = decode_iface_addr(iface_addr.bytes(), ucs::ns_len()).map_err(|why| {
            crate::error!("cma: bad peer iface address: {why}");
            UCS_ERR_INVALID_PARAM
        })?;
        if !same_pid_ns(&addr, local_pid_ns()) {
            crate::error!("cma: peer pid {} is in another PID namespace", addr.pid);
            return Err(UCS_ERR_UNREACHABLE);
        }
        let pid = addr.pid;
        let start_time = ucs::proc_create_time(pid);
        if start_time == 0 {
            crate::diag!("cma: cannot get the start time of peer pid {} (gone?)", pid);
            return Err(UCS_ERR_ENDPOINT_TIMEOUT);
        }
        let mut st = iface.tl.lock();
        let q = EpQueue { pid, ..EpQueue::default() };
        let slot = match st.free_slots.pop() {
            Some(i) => {
                st.eps[i] = q;
                i
            }
            None => {
                st.eps.push(q);
                st.eps.len() - 1
            }
        };
        crate::debug!("cma: endpoint to pid {} (slot {})", pid, slot);
        Ok(CmaEp { pid, start_time, slot })
    }

    fn ep_destroy(iface: &Iface<Self>, ep: &mut Ep<Self>) {
        let slot = ep.tl.slot;
        let mut guard = iface.tl.lock();
        let st = &mut *guard;
        st.active.retain(|&i| i != slot);
        st.resched.retain(|&i| i != slot);
        let q = std::mem::take(&mut st.eps[slot]);
        if !q.ops.is_empty() {
            crate::debug!("cma: endpoint to pid {} destroyed with {} operations outstanding (dropped)", ep.tl.pid,
                          q.ops.len());
        }
        for tx in q.ops {
            Self::put_tx(st, tx);
        }
        st.free_slots.push(slot);
    }

    fn close(iface: &mut Iface<Self>) {
        crate::transports::sm::get_lanes::cma_closed(iface.hdr.worker() as *const WorkerObj as usize,
                                                     iface.tl.bandwidth);
        if iface.tl.own_cb != UCS_CALLBACKQ_ID_NULL {
            unregister_progress(&iface.hdr, iface.tl.own_cb);
            iface.tl.own_cb = UCS_CALLBACKQ_ID_NULL;
        }
        let mut st = iface.tl.lock();
        if st.prog_id != UCS_CALLBACKQ_ID_NULL {
            unregister_progress(&iface.hdr, st.prog_id);
            st.prog_id = UCS_CALLBACKQ_ID_NULL;
        }
        if !st.idle() {
            crate::debug!("cma: interface closed with operations outstanding (dropped)");
        }
    }

    fn get_device_address(_iface: &Iface<Self>, out: AddrOut) -> ucs_status_t {
        out.write(&sm::device_addr::pack())
    }

    fn get_address(_iface: &Iface<Self>, out: AddrOut) -> ucs_status_t {
        let pid = crate::sys::getpid() as u32;
        out.write(&encode_iface_addr(pid, local_pid_ns(), ucs::ns_len()))
    }

    fn is_reachable(iface: &Iface<Self>, dev: Option<PeerAddr<'_>>, addr: Option<PeerAddr<'_>>) -> bool {
        Self::reachable(iface, dev, addr).is_ok()
    }

    fn reachable(_iface: &Iface<Self>, dev: Option<PeerAddr<'_>>, addr: Option<PeerAddr<'_>>) -> Result<(), String> {
        let (dev, addr) = sm::both_addrs(dev, addr)?;
        sm::device_addr::check_host(dev)?;
        let a = decode_iface_addr(addr.bytes(), ucs::ns_len()).map_err(|why| release::reason(|| format!("bad iface address: {why}")))?;
        let ours = local_pid_ns();
        if !same_pid_ns(&a, ours) {
            return Err(release::reason(|| match a.ns {
                Some(theirs) => format!("pid namespaces differ ({} vs {})", pid_ns(), theirs),
                None => format!("namespace {} is not the host's default namespace", pid_ns()),
            }));
        }
        if release::cma_reach_probes_peer() && !probe_peer(a.pid) {
            return Err(release::reason(|| "no permissions to read from remote peer".into()));
        }
        Ok(())
    }

    fn estimate_perf(iface: &Iface<Self>, perf: &mut uct_perf_attr_t) -> ucs_status_t {
        let status = crate::core::iface::default_estimate_perf(iface, perf);
        let o = release::cma_perf_overhead(iface.tl.overhead);
        if perf.field_mask & UCT_PERF_ATTR_FIELD_SEND_PRE_OVERHEAD != 0 {
            perf.send_pre_overhead = o;
        }
        if perf.field_mask & UCT_PERF_ATTR_FIELD_RECV_OVERHEAD != 0 {
            perf.recv_overhead = o;
        }
        release::perf_flags(perf);
        status
    }

    fn ep_is_connected(iface: &Iface<Self>, ep: &Ep<Self>, dev: Option<PeerAddr<'_>>, addr: Option<PeerAddr<'_>>,
                       _ep_addr: Option<PeerAddr<'_>>) -> bool {
        // Reachable, and the process this endpoint reads and writes is the
        // one the address names.
        Self::is_reachable(iface, dev, addr)
            && addr.is_some_and(|a| decode_iface_addr(a.bytes(), ucs::ns_len()).is_ok_and(|a| a.pid == ep.tl.pid))
    }

    fn progress(iface: &Iface<Self>) -> u32 {
        let s = &iface.tl;
        let mut count = 0u32;
        loop {
            let mut guard = s.lock();
            let st = &mut *guard;
            if count >= s.tx_quota {
                break;
            }
            let Some(slot) = st.active.pop_front() else {
                break;
            };
            let q = &mut st.eps[slot];
            let Some(tx) = q.ops.front_mut() else {
                q.scheduled = false;
                continue;
            };
            let mut status = UCS_OK;
            let mut report = std::ptr::null_mut();
            if tx.op != Op::Flush {
                match tx.transfer(q.pid, s.seg_size) {
                    Ok(_) => {
                        count += 1;
                        if !tx.done() {
                            st.resched.push_back(slot);
                            continue;
                        }
                    }
                    Err(f) => {
                        status = UCS_ERR_IO_ERROR;
                        let first = !q.failed;
                        if first {
                            q.failed = true;
                            report = tx.ep;
                        }
                        s.segment_failed(&iface.hdr, &f, first);
                    }
                }
            }
            let Some(mut tx) = q.ops.pop_front() else {
                continue;
            };
            if q.ops.is_empty() {
                q.scheduled = false;
            } else {
                st.active.push_back(slot);
            }
            let comp = std::mem::take(&mut tx.comp);
            tx.clear();
            st.pool.push(tx);
            drop(guard);
            // The error handler and the completion run without the lock:
            // they may queue more work or destroy endpoints.
            if !report.is_null() {
                iface.hdr.schedule_ep_err(report);
            }
            comp.complete(status);
        }
        let mut st = s.lock();
        while let Some(slot) = st.resched.pop_front() {
            st.active.push_back(slot);
        }
        if st.active.is_empty() && st.prog_id != UCS_CALLBACKQ_ID_NULL {
            unregister_progress(&iface.hdr, st.prog_id);
            st.prog_id = UCS_CALLBACKQ_ID_NULL;
        }
        count
    }

    fn iface_flush(iface: &Iface<Self>, _flags: u32, comp: Completion) -> ucs_status_t {
        if !comp.is_none() {
            return UCS_ERR_UNSUPPORTED;
        }
        if iface.tl.lock().idle() { UCS_OK } else { UCS_INPROGRESS }
    }

    crate::transport_ops! {
        fn event_arm(iface: &Iface<Self>, events: u32) -> ucs_status_t {
            if events & UCT_EVENT_SEND_COMP != 0 && !iface.tl.lock().idle() {
                return UCS_ERR_BUSY;
            }
            UCS_OK
        }

        fn put_zcopy(iface: &Iface<Self>, ep: &Ep<Self>, iov: &[uct_iov_t], remote: Remote,
                     comp: Completion) -> ucs_status_t {
            Self::submit(iface, ep, Op::Put, iov, remote, comp)
        }

        fn get_zcopy(iface: &Iface<Self>, ep: &Ep<Self>, iov: &[uct_iov_t], remote: Remote,
                     comp: Completion) -> ucs_status_t {
            Self::submit(iface, ep, Op::Get, iov, remote, comp)
        }

        fn pending_add(_iface: &Iface<Self>, _ep: &Ep<Self>, _req: PendingReq, _flags: u32) -> ucs_status_t {
            // put and get never run out of resources: there is never a reason to wait.
            UCS_ERR_BUSY
        }

        fn pending_purge(_iface: &Iface<Self>, _ep: &Ep<Self>, _cb: PurgeCb) {
            // Nothing is ever queued (see `pending_add`): nothing to purge.
        }

        fn ep_flush(iface: &Iface<Self>, ep: &Ep<Self>, _flags: u32, comp: Completion) -> ucs_status_t {
            let s = &iface.tl;
            let mut guard = s.lock();
            let st = &mut *guard;
            if st.eps[ep.tl.slot].ops.is_empty() {
                return UCS_OK;
            }
            if !comp.is_none() {
                let Some(mut tx) = s.get_tx(st) else {
                    return UCS_ERR_NO_MEMORY;
                };
                tx.load_flush(comp, ep_handle(ep));
                // The endpoint has work, so it is scheduled already.
                st.eps[ep.tl.slot].ops.push_back(tx);
            }
            UCS_INPROGRESS
        }

        fn ep_check(iface: &Iface<Self>, ep: &Ep<Self>, flags: u32, comp: Completion) -> ucs_status_t {
            if flags != 0 || !comp.is_none() {
                crate::error!("cma ep_check: unsupported flags {:#x} or completion {:p}", flags, comp);
                return UCS_ERR_INVALID_PARAM;
            }
            let now = ucs::proc_create_time(ep.tl.pid);
            if now != ep.tl.start_time {
                crate::diag!("cma: peer pid {} is gone (start time {} != {})", ep.tl.pid, ep.tl.start_time, now);
                iface.hdr.schedule_ep_err(ep_handle(ep));
            }
            UCS_OK
        }
    }
}

static INTERNAL: InternalOps = Internal::<CmaIface>::OPS;

/// Whether this process may read the memory of process `pid` (a 16-byte
/// read at an arbitrary address: a refusal for lack of permission fails
/// with EPERM before the address is looked at; any other outcome means the
/// access is allowed).
fn probe_peer(pid: pid_t) -> bool {
    let mut buf = [0u8; 16];
    let mut local = [libc::iovec { iov_base: buf.as_mut_ptr() as *mut c_void, iov_len: buf.len() }];
    let remote = [crate::sys::vm::RemoteIoVec { base: buf.as_ptr() as usize, len: buf.len() }];
    // SAFETY: the local iovec names our own 16-byte buffer, used by nothing
    // else during the call.
    let r = unsafe { crate::sys::vm::read_from(pid, &mut local, &remote) };
    !matches!(r, Err(crate::sys::Errno::EPERM))
}

/// Whether this CPU is one of Fujitsu's ARM designs (UCX reports a higher
/// overhead there).
fn cpu_is_fujitsu_arm() -> bool {
    if !cfg!(target_arch = "aarch64") {
        return false;
    }
    std::fs::read_to_string("/proc/cpuinfo").is_ok_and(|s| {
        s.lines().any(|l| l.starts_with("CPU implementer") && l.trim_end().ends_with("0x46"))
    })
}

/// Open a cma interface.
pub fn open(md: &MdObj, worker: &WorkerObj, params: &IfaceParams, cfg: &CmaIfaceConfig)
            -> Result<uct_iface_h, ucs_status_t> {
    let c = &cfg.scopy;
    let any: &dyn std::any::Any = md.imp.as_ref();
    if any.downcast_ref::<CmaMd>().is_none() {
        crate::error!("cma: memory domain {} is not a cma memory domain", md.name);
        return Err(UCS_ERR_INVALID_PARAM);
    }
    if params.open_mode & UCT_IFACE_OPEN_MODE_DEVICE == 0 {
        crate::error!("only UCT_IFACE_OPEN_MODE_DEVICE is supported");
        return Err(UCS_ERR_UNSUPPORTED);
    }
    if params.dev_name != DEVICE_NAME {
        crate::error!("cma: no device named '{}'", params.dev_name);
        return Err(UCS_ERR_NO_DEVICE);
    }
    if c.seg_size == 0 {
        crate::error!("cma: UCX_CMA_SEG_SIZE must be at least 1 byte");
        return Err(UCS_ERR_INVALID_PARAM);
    }
    if c.tx_quota == 0 {
        crate::error!("cma: UCX_CMA_TX_QUOTA must be at least 1 (0 would never move data)");
        return Err(UCS_ERR_INVALID_PARAM);
    }
    crate::core::config::check_pool_limits("cma tx descriptors", c.tx_bufs_grow, c.tx_max_bufs)?;
    let growth = release::pool_growth(c.tx_max_chunk_size, c.tx_grow_factor);
    if growth.grow_factor.is_nan() || growth.grow_factor < 1.0 {
        crate::error!("Invalid memory pool parameter(s): cma tx descriptors grow by a factor of {}",
                      growth.grow_factor);
        return Err(UCS_ERR_INVALID_PARAM);
    }
    if growth.max_chunk_size < std::mem::size_of::<Tx>() {
        crate::error!("Invalid memory pool parameter: chunk size is too small ({})", growth.max_chunk_size);
        return Err(UCS_ERR_INVALID_PARAM);
    }
    let max_bufs = c.tx_max_bufs as c_uint;
    let max_iov = (c.max_iov as usize).min(crate::sys::iov_max());
    let hdr = IfaceHeader::new(md, worker, params, &c.sm.base, &INTERNAL);
    let split_min = cfg.split_min;
    let own = if split_min != 0 { assist::own() } else { None };
    let own_cb = match &own {
        // SAFETY: the callback's argument is the ring this interface keeps
        // (an Arc in `own`) until `close` removes the callback; add_safe is
        // thread-safe.
        Some(o) => unsafe {
            ucs::callbackq::add_safe(hdr.progress_q(), Some(assist::progress_cb), Arc::as_ptr(o) as *mut c_void,
                               UCS_CALLBACKQ_FLAG_FAST)
        },
        None => UCS_CALLBACKQ_ID_NULL,
    };
    let tl = CmaIface {
        split_min,
        own,
        own_cb,
        my_start: assist::start_time(crate::sys::getpid()),
        max_iov,
        seg_size: c.seg_size,
        tx_quota: c.tx_quota,
        max_bufs: if max_bufs == c_uint::MAX { usize::MAX } else { max_bufs as usize },
        growth,
        bandwidth: c.sm.bandwidth,
        overhead: if cpu_is_fujitsu_arm() { OVERHEAD_FUJITSU_ARM } else { OVERHEAD },
        failure_level: c.sm.base.failure.max(0) as u32,
        sched: Mutex::new(Sched {
            pool: Vec::new(),
            allocated: 0,
            next_grow: (c.tx_bufs_grow as usize).max(1),
            eps: Vec::new(),
            free_slots: Vec::new(),
            active: VecDeque::new(),
            resched: VecDeque::new(),
            prog_id: UCS_CALLBACKQ_ID_NULL,
        }),
    };
    crate::debug!("created cma iface: max_iov {} seg_size {} tx_quota {}", max_iov, c.seg_size, c.tx_quota);
    crate::transports::sm::get_lanes::cma_opened(worker as *const WorkerObj as usize, tl.bandwidth);
    Ok(Iface::into_handle(hdr, tl))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iface_address_in_both_namespace_widths() {
        assert_eq!(encode_iface_addr(1234, None, 8), 1234u32.to_ne_bytes());
        assert_eq!(decode_iface_addr(&1234u32.to_ne_bytes(), 4), Ok(CmaAddr { pid: 1234, ns: None }));
        // Up to 1.21: pid, padding, 8-byte namespace; from 1.22: pid and a
        // 4-byte namespace.
        for (ns_len, len) in [(8, 16), (4, 8)] {
            assert_eq!(addr_len_ns(ns_len), len);
            let a = encode_iface_addr(1234, Some(4026532176), ns_len);
            assert_eq!(a.len(), len);
            assert_eq!(&a[len - ns_len..], &4026532176u64.to_ne_bytes()[..ns_len]);
            assert_eq!(decode_iface_addr(&a, ns_len), Ok(CmaAddr { pid: 1234, ns: Some(4026532176) }));
            assert!(decode_iface_addr(&a[..len - 1], ns_len).is_err());
        }
        assert!(decode_iface_addr(&0u32.to_ne_bytes(), 8).is_err());
        assert!(decode_iface_addr(&[1, 0, 0], 8).is_err());
    }
}
