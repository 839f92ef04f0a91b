//! The `rc_verbs` interface: a send CQ and a receive CQ on one completion
//! channel, a shared receive queue fed from a registered buffer pool, the
//! endpoints by QP number, and progress (receive first, then send
//! completions, as UCX 1.13.1 polls them).

use super::addr::{self, IbDevAddr};
use crate::transports::ib::bufs::{self, BufPool};
use super::ep::*;
use super::fc::{self, FcConfig};
use super::params::{Derived, RcParams};
use crate::abi::*;
use crate::core::iface::{Iface, IfaceHeader};
use crate::sys::verbs::{self, raw, CompChannel, Cq, Errno, PortInfo, Qp, QpCaps, Srq};
use crate::transports::ib::md::IbMd;
use crate::transports::ib::release::SendCosts;
use libc::c_void;
use std::cell::{Cell, RefCell};
use std::collections::{HashMap, VecDeque};
use std::mem::MaybeUninit;

/// QP attribute mask bits (`IBV_QP_*`).
pub mod mask {
    pub const STATE: u32 = 1;
    pub const ACCESS_FLAGS: u32 = 8;
    pub const PKEY_INDEX: u32 = 16;
    pub const PORT: u32 = 32;
    pub const AV: u32 = 128;
    pub const PATH_MTU: u32 = 256;
    pub const TIMEOUT: u32 = 512;
    pub const RETRY_CNT: u32 = 1024;
    pub const RNR_RETRY: u32 = 2048;
    pub const RQ_PSN: u32 = 4096;
    pub const MAX_QP_RD_ATOMIC: u32 = 8192;
    pub const MIN_RNR_TIMER: u32 = 32768;
    pub const SQ_PSN: u32 = 65536;
    pub const MAX_DEST_RD_ATOMIC: u32 = 131072;
    pub const DEST_QPN: u32 = 1048576;
}
const QPS_INIT: u32 = 1;
const QPS_RTR: u32 = 2;
const QPS_RTS: u32 = 3;
const QPS_ERR: u32 = 6;
pub const QPT_RC: u32 = 2;
/// Most scatter/gather entries UCX uses per work request.
const MAX_SGE: usize = 8;
/// Software overhead (seconds).
pub const OVERHEAD: f64 = 75e-9;

/// The `uct_recv_desc_t` put in front of receive buffers a handler keeps.
#[repr(C)]
pub struct RxRelease {
    pub base: uct_recv_desc_t,
    pub pool: *const BufPool,
    pub headroom: usize,
}

pub struct RcIface {
    pub(super) srq: Srq,
    pub(super) tx_cq: Cq,
    pub(super) rx_cq: Cq,
    pub(super) channel: CompChannel,
    pub(super) rx_pool: Box<BufPool>,
    pub(super) tx_pool: BufPool,
    pub(super) release: Box<RxRelease>,
    pub(super) md: *const IbMd,
    pub(super) port: u8,
    pub(super) port_info: PortInfo,
    pub(super) p: RcParams,
    pub(super) d: Derived,
    pub(super) fc: FcConfig,
    pub(super) max_inline: usize,
    pub(super) max_send_sge: usize,
    /// `ibv_mtu` of the path.
    pub(super) path_mtu: u32,
    pub(super) dev_addr: IbDevAddr,
    /// The RoCE addressing (a RoCE port), None on InfiniBand.
    pub(super) roce: Option<crate::transports::ib::roce::Port>,
    pub(super) max_rd_atomic: u8,
    pub(super) max_get_zcopy: usize,
    pub(super) atomics: bool,
    pub(super) cq_available: Cell<i32>,
    pub(super) rx_posted: Cell<u32>,
    pub(super) eps: RefCell<HashMap<u32, EpRef>>,
    pub(super) arb: RefCell<VecDeque<u32>>,
    pub(super) fence_beat: Cell<u32>,
    pub(super) idle_polls: Cell<u32>,
    pub(super) rx_headroom: usize,
    /// Costs of one send, for the performance estimate.
    pub(super) send_costs: SendCosts,
}

impl RcIface {
    pub fn md(&self) -> &IbMd {
        // SAFETY: the md outlives its interfaces.
        unsafe { &*self.md }
    }
    pub fn am_max_short(&self) -> usize {
        self.max_inline.saturating_sub(1)
    }
    pub fn get_min_zcopy(&self) -> usize {
        self.p.tx_inline_resp + 1
    }
}

pub fn qp_to_err(qp: &Qp) -> Result<(), Errno> {
    // SAFETY: all-zero is a valid attribute struct.
    let mut a: raw::ibv_qp_attr = unsafe { std::mem::zeroed() };
    a.qp_state = QPS_ERR;
    qp.modify(&mut a, mask::STATE)
}

/// The QP every endpoint (and the probe) gets.
fn qp_caps(p: &RcParams, d: &Derived) -> QpCaps {
    QpCaps { max_send_wr: d.tx_qp_len, max_recv_wr: 0, max_send_sge: p.tx_min_sge, max_recv_sge: 1,
             max_inline_data: p.tx_min_inline }
}

/// Create the RC QP of an endpoint, in INIT.
pub fn create_qp(s: &RcIface) -> Result<Qp, ucs_status_t> {
    let md = s.md();
    let qp = Qp::create(&md.pd, QPT_RC, &s.tx_cq, &s.rx_cq, Some(&s.srq), qp_caps(&s.p, &s.d), false).map_err(|e| {
        crate::error!("rc_verbs: ibv_create_qp(RC) on {}:{} failed: {}", md.name, s.port, e);
        UCS_ERR_IO_ERROR
    })?;
    // SAFETY: all-zero is a valid attribute struct.
    let mut a: raw::ibv_qp_attr = unsafe { std::mem::zeroed() };
    a.qp_state = QPS_INIT;
    a.pkey_index = 0;
    a.port_num = s.port;
    a.qp_access_flags = verbs::access::LOCAL_WRITE | verbs::access::REMOTE_WRITE | verbs::access::REMOTE_READ
        | verbs::access::REMOTE_ATOMIC;
    qp.modify(&mut a, mask::STATE | mask::PKEY_INDEX | mask::PORT | mask::ACCESS_FLAGS).map_err(|e| {
        crate::error!("rc_verbs: error modifying QP 0x{:x} to INIT: {}", qp.qp_num(), e);
        UCS_ERR_IO_ERROR
    })?;
    Ok(qp)
}

/// INIT → RTR → RTS towards the peer at `peer` / `dest_qpn`.
pub fn connect_qp(s: &RcIface, qp: &Qp, peer: &IbDevAddr, dest_qpn: u32) -> Result<(), ucs_status_t> {
    if s.roce.is_some() != peer.roce.is_some() {
        crate::error!("rc_verbs: the peer's address is of the other link layer (InfiniBand and RoCE never connect)");
        return Err(UCS_ERR_UNREACHABLE);
    }
    let global = s.roce.is_none() && (s.p.is_global || peer.subnet_prefix != s.dev_addr.subnet_prefix);
    // SAFETY: all-zero is a valid attribute struct.
    let mut a: raw::ibv_qp_attr = unsafe { std::mem::zeroed() };
    a.qp_state = QPS_RTR;
    a.dest_qp_num = dest_qpn;
    a.rq_psn = 0;
    a.path_mtu = if peer.path_mtu != addr::MTU_4096 { peer.path_mtu as u32 } else { s.path_mtu };
    a.max_dest_rd_atomic = s.max_rd_atomic;
    a.min_rnr_timer = s.d.rnr_code;
    a.ah_attr.dlid = peer.lid | s.p.lid_path_bits as u16;
    a.ah_attr.sl = s.p.sl.unwrap_or(0);
    a.ah_attr.src_path_bits = s.p.lid_path_bits;
    a.ah_attr.port_num = s.port;
    if global {
        let Some(if_id) = peer.if_id else {
            crate::error!("rc_verbs: the peer is on another subnet but its address has no interface id");
            return Err(UCS_ERR_UNREACHABLE);
        };
        a.ah_attr.is_global = 1;
        let mut gid = [0u8; 16];
        gid[..8].copy_from_slice(&peer.subnet_prefix);
        gid[8..].copy_from_slice(&if_id);
        a.ah_attr.grh.dgid = raw::ibv_gid { raw: gid };
        a.ah_attr.grh.sgid_index = s.p.gid_index.unwrap_or(0);
        a.ah_attr.grh.hop_limit = s.p.hop_limit;
        a.ah_attr.grh.traffic_class = s.p.traffic_class;
    }
    if let (Some(r), Some(g)) = (&s.roce, &peer.roce) {
        r.fill_ah(&mut a.ah_attr, &g.gid, 0);
    }
    qp.modify(&mut a, mask::STATE | mask::AV | mask::PATH_MTU | mask::DEST_QPN | mask::RQ_PSN
              | mask::MAX_DEST_RD_ATOMIC | mask::MIN_RNR_TIMER).map_err(|e| {
        crate::error!("rc_verbs: error modifying QP 0x{:x} to RTR: {}", qp.qp_num(), e);
        UCS_ERR_IO_ERROR
    })?;
    a.qp_state = QPS_RTS;
    a.sq_psn = 0;
    a.timeout = s.d.timeout_code;
    a.retry_cnt = s.d.retry;
    a.rnr_retry = s.d.rnr_retry;
    a.max_rd_atomic = s.max_rd_atomic;
    qp.modify(&mut a, mask::STATE | mask::TIMEOUT | mask::RETRY_CNT | mask::RNR_RETRY | mask::SQ_PSN
              | mask::MAX_QP_RD_ATOMIC).map_err(|e| {
        crate::error!("rc_verbs: error modifying QP 0x{:x} to RTS: {}", qp.qp_num(), e);
        UCS_ERR_IO_ERROR
    })?;
    Ok(())
}

// ---------------------------------------------------------------------------
// Receive side

/// Where the release pointer of a kept receive buffer lives.
fn release_slot(data: *mut u8, headroom: usize) -> *mut *const uct_recv_desc_t {
    data.wrapping_sub(headroom + 8) as *mut *const uct_recv_desc_t
}

/// `uct_iface_release_desc` of a receive buffer a handler kept.
///
/// # Safety
/// `self_` is the interface's [`RxRelease`] and `desc` the headroom start
/// of one of its receive buffers, kept and not released yet.
pub unsafe extern "C" fn release_rx_desc(self_: *mut uct_recv_desc_t, desc: *mut c_void) {
    // SAFETY: see the function contract.
    let r = unsafe { &*(self_ as *const RxRelease) };
    // The device part starts one byte (the RC header) before the data.
    let area = (desc as *mut u8).wrapping_add(r.headroom).wrapping_sub(1);
    // SAFETY: the pool lives as long as the interface.
    let pool = unsafe { &*r.pool };
    match pool.find(area) {
        Some(b) => pool.put(b),
        None => crate::error!("rc_verbs: {:p} is not a receive descriptor of this interface", desc),
    }
}

/// Post receive buffers to the SRQ in batches while at least one batch
/// is missing (or `all`: until full).
pub fn refill(s: &RcIface, all: bool) {
    let batch = s.d.rx_batch as usize;
    loop {
        let missing = (s.p.rx_queue_len - s.rx_posted.get()) as usize;
        if missing == 0 || (!all && missing < batch) {
            return;
        }
        let n = missing.min(batch).min(16);
        let got = bufs::post_recv_batch(&s.rx_pool, n, s.p.seg_size, None, "rc_verbs: ibv_post_srq_recv", |wr| {
            // SAFETY: the chain holds our registered buffers, not used
            // until their completions are polled.
            unsafe { s.srq.post_recv(wr) }
        });
        s.rx_posted.set(s.rx_posted.get() + got as u32);
        if got < n {
            return;
        }
    }
}


/// Flow-control bits of a received message; false when it is not to be
/// delivered (a pure grant).
fn rx_fc(iface: &Iface<RcIface>, qpn: u32, hdr: u8) -> bool {
    let s = &iface.tl;
    let r = fc::rx(hdr);
    let Some(ep) = s.eps.borrow().get(&qpn).cloned() else { return !r.pure };
    let resched = {
        let mut st = ep.borrow_mut();
        if st.failed.is_some() || st.flush_cancel {
            return !r.pure;
        }
        let resched = r.grant && st.fc.restore(&s.fc);
        if r.owe_grant {
            st.fc.grant_owed = true;
        }
        if r.send_grant && st.post_grant(s) == UCS_ERR_NO_RESOURCE {
            st.add_pending(s, Pend::Grant, true);
        }
        if resched && !st.pending.is_empty() && !st.scheduled {
            st.scheduled = true;
            s.arb.borrow_mut().push_back(qpn);
        }
        resched
    };
    if resched {
        dispatch_pending(iface);
    }
    !r.pure
}

fn rx_progress(iface: &Iface<RcIface>) -> u32 {
    let s = &iface.tl;
    let mut room: [MaybeUninit<raw::ibv_wc>; 16] = [const { MaybeUninit::uninit() }; 16];
    let max = (s.p.rx_max_poll as usize).clamp(1, 16);
    let wcs = match s.rx_cq.poll_into(&mut room[..max]) {
        Ok(w) => w,
        Err(e) => {
            crate::error!("rc_verbs: ibv_poll_cq(rx) failed: {}", e);
            return 0;
        }
    };
    let n = wcs.len();
    for wc in wcs {
        s.rx_posted.set(s.rx_posted.get().saturating_sub(1));
        let area = wc.wr_id as *mut u8;
        let Some(b) = s.rx_pool.find(area) else {
            crate::error!("rc_verbs: receive completion with an unknown buffer 0x{:x}", wc.wr_id);
            continue;
        };
        if wc.status != raw::ibv_wc_status::IBV_WC_SUCCESS {
            if wc.status != raw::ibv_wc_status::IBV_WC_WR_FLUSH_ERR
                && wc.status != raw::ibv_wc_status::IBV_WC_REM_ABORT_ERR
            {
                crate::error!("rc_verbs: receive completion with error: {} [qpn 0x{:x} vendor_err 0x{:x}]",
                              verbs::wc_status_str(wc.status), wc.qp_num, wc.vendor_err);
            }
            s.rx_pool.put(b);
            continue;
        }
        let len = wc.byte_len as usize;
        if len == 0 || len > s.p.seg_size {
            crate::error!("rc_verbs: dropped a message of {} bytes on qp 0x{:x}", len, wc.qp_num);
            s.rx_pool.put(b);
            continue;
        }
        // SAFETY: the device wrote `len` (>= 1) bytes into our buffer.
        let hdr = unsafe { *b.addr };
        if hdr & fc::FC_MASK != 0 && !rx_fc(iface, wc.qp_num, hdr) {
            s.rx_pool.put(b);
            continue;
        }
        let data = b.addr.wrapping_add(1);
        // SAFETY: `len - 1` payload bytes after the header, with the
        // headroom before them, live until released.
        let status = unsafe {
            iface.hdr.invoke_am_raw(hdr & fc::AM_ID_MASK, data as *mut c_void, len - 1, UCT_CB_PARAM_FLAG_DESC)
        };
        if status == UCS_INPROGRESS {
            // SAFETY: the 8 bytes before the headroom are ours (pool lead).
            unsafe { release_slot(data, s.rx_headroom).write_unaligned(&s.release.base) };
        } else {
            s.rx_pool.put(b);
        }
    }
    if n > 0 {
        refill(s, false);
    }
    n as u32
}

// ---------------------------------------------------------------------------
// Send completions

fn handle_failure(iface: &Iface<RcIface>, ep: &EpRef, wc: &raw::ibv_wc) {
    let s = &iface.tl;
    let status = wc_status_to_ucs(wc.status);
    let w = wc.wr_id as u16;
    let (first, handle) = {
        let mut st = ep.borrow_mut();
        st.retire(s, w);
        let first = st.failed.is_none() && !st.flush_cancel;
        if st.failed.is_none() {
            st.failed = Some(status);
        }
        if first {
            st.fc.restore(&s.fc);
            st.pending.retain(|p| matches!(p, Pend::User(_)));
        }
        (first, st.ep)
    };
    while let Some(op) = ep.borrow_mut().pop_done(w) {
        complete_op(s, op, status);
    }
    if first {
        let level = if iface.hdr.err_handler.is_some() { crate::core::log::LEVEL_DIAG } else { crate::core::log::LEVEL_ERROR };
        crate::log_at!(level, "send completion with error: {} [qpn 0x{:x} wrid 0x{:x} vendor_err 0x{:x}]",
                       verbs::wc_status_str(wc.status), wc.qp_num, wc.wr_id, wc.vendor_err);
        let report = if status == UCS_ERR_ENDPOINT_TIMEOUT { status } else { UCS_ERR_CONNECTION_RESET };
        iface.hdr.schedule_ep_err_status(handle, report);
    }
}

fn tx_progress(iface: &Iface<RcIface>) -> u32 {
    let s = &iface.tl;
    let mut room: [MaybeUninit<raw::ibv_wc>; 16] = [const { MaybeUninit::uninit() }; 16];
    let max = (s.p.tx_max_poll as usize).clamp(1, 16);
    let wcs = match s.tx_cq.poll_into(&mut room[..max]) {
        Ok(w) => w,
        Err(e) => {
            crate::error!("rc_verbs: ibv_poll_cq(tx) failed: {}", e);
            return 0;
        }
    };
    let n = wcs.len();
    for wc in wcs {
        let Some(ep) = s.eps.borrow().get(&wc.qp_num).cloned() else { continue };
        if wc.status != raw::ibv_wc_status::IBV_WC_SUCCESS {
            handle_failure(iface, &ep, wc);
            continue;
        }
        let w = wc.wr_id as u16;
        ep.borrow_mut().retire(s, w);
        loop {
            let op = ep.borrow_mut().pop_done(w);
            let Some(op) = op else { break };
            complete_op(s, op, UCS_OK);
        }
    }
    if n > 0 && !s.arb.borrow().is_empty() {
        dispatch_pending(iface);
    }
    n as u32
}

/// Read and log asynchronous events of the device (non-blocking).
fn async_events(s: &RcIface) {
    for _ in 0..8 {
        match s.md().ctx.get_async_event() {
            Ok(ev) => {
                let name = verbs::device::event_name(ev.kind);
                match (ev.qp_num, ev.port) {
                    (Some(q), _) if s.eps.borrow().contains_key(&q) => {
                        if ev.kind != raw::ibv_event_type::IBV_EVENT_QP_LAST_WQE_REACHED {
                            crate::diag!("rc_verbs: {} on qp 0x{:x}", name, q)
                        }
                    }
                    (Some(q), _) => crate::debug!("rc_verbs: {} on qp 0x{:x}", name, q),
                    (_, Some(p)) => crate::debug!("rc_verbs: {} on port {}", name, p),
                    _ => crate::debug!("rc_verbs: async event {}", name),
                }
            }
            Err(_) => return,
        }
    }
}

pub fn progress(iface: &Iface<RcIface>) -> u32 {
    let s = &iface.tl;
    let mut count = rx_progress(iface);
    if count == 0 || s.p.tx_poll_always {
        count += tx_progress(iface);
    }
    if count == 0 {
        let idle = s.idle_polls.get().wrapping_add(1);
        s.idle_polls.set(idle);
        if idle % 4096 == 0 {
            async_events(s);
        }
    }
    count
}

/// `uct_iface_event_arm`.
pub fn event_arm(iface: &Iface<RcIface>, events: u32) -> ucs_status_t {
    let s = &iface.tl;
    let Some((tx_ev, rx_ev)) = crate::transports::ib::device::drain_cq_events(&s.channel, &s.tx_cq, &s.rx_cq, "rc_verbs")
    else {
        return UCS_ERR_IO_ERROR;
    };
    if tx_ev + rx_ev > 0 {
        return UCS_ERR_BUSY;
    }
    if events & UCT_EVENT_SEND_COMP != 0 {
        if let Err(e) = s.tx_cq.req_notify(false) {
            crate::error!("rc_verbs: ibv_req_notify_cq(tx) failed: {}", e);
            return UCS_ERR_IO_ERROR;
        }
    }
    let rx_solicited = events & UCT_EVENT_RECV != 0;
    let rx_all = events & UCT_EVENT_SEND_COMP != 0 && s.fc.enabled;
    if rx_solicited || rx_all {
        if let Err(e) = s.rx_cq.req_notify(rx_solicited && !rx_all) {
            crate::error!("rc_verbs: ibv_req_notify_cq(rx) failed: {}", e);
            return UCS_ERR_IO_ERROR;
        }
    }
    UCS_OK
}

/// Everything the header needs to know at close: drop the QPs still open
/// (before the SRQ and CQs go).
pub fn close(iface: &mut Iface<RcIface>) {
    let eps: Vec<EpRef> = iface.tl.eps.borrow_mut().drain().map(|(_, e)| e).collect();
    for ep in eps {
        let mut st = ep.borrow_mut();
        st.qp = None;
        let ops: Vec<(u16, TxOp)> = st.outstanding.drain(..).collect();
        drop(st);
        for (_, op) in ops {
            complete_op(&iface.tl, op, UCS_ERR_CANCELED);
        }
    }
    let (total, free) = iface.tl.rx_pool.counts();
    let posted = iface.tl.rx_posted.get() as usize;
    if total > free + posted {
        crate::warn!("rc_verbs: {} receive descriptors still held by the user at close", total - free - posted);
    }
}

/// Release the QP of a destroyed endpoint: outstanding operations are
/// cancelled, its credits return, and it leaves the dispatch list.
pub fn ep_destroy(iface: &Iface<RcIface>, ep: &EpRef, hdr: &IfaceHeader) {
    let s = &iface.tl;
    let (qpn, handle, ops) = {
        let mut st = ep.borrow_mut();
        if let Some(qp) = st.qp.take() {
            let _ = qp_to_err(&qp);
            drop(qp);
        }
        let inflight = st.pi.wrapping_sub(st.ci) as i32;
        s.cq_available.set(s.cq_available.get() + inflight);
        st.ci = st.pi;
        st.pending.clear();
        let ops: Vec<(u16, TxOp)> = st.outstanding.drain(..).collect();
        (st.qpn, st.ep, ops)
    };
    s.eps.borrow_mut().remove(&qpn);
    s.arb.borrow_mut().retain(|&q| q != qpn);
    hdr.cancel_ep_err(handle);
    for (_, op) in ops {
        complete_op(s, op, UCS_ERR_CANCELED);
    }
}

pub const MAX_SGE_USED: usize = MAX_SGE;
