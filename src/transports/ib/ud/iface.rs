//! The `ud_verbs` interface: one UD QP with a send and a receive CQ, the
//! receive buffers (each starting with the 40-byte GRH area), the send
//! queue accounting (every 64th send signalled), the table of endpoints by
//! id, the AH cache, and progress.

use super::ep::{EpRef, EpState, Peer};
use super::neth::{self, Neth, QKEY};
use super::window::RxClass;
use crate::abi::*;
use crate::core::iface::Iface;
use crate::sys::verbs::{self, raw, Ah, CompChannel, Cq, PortInfo, Qp};
use crate::transports::ib::config::UdParams;
use crate::transports::ib::md::IbMd;
use crate::transports::ib::rc::addr::IbDevAddr;
use crate::transports::ib::bufs::{self, Buf, BufPool};
use libc::c_void;
use std::cell::{Cell, RefCell};
use std::collections::{HashMap, VecDeque};
use std::mem::MaybeUninit;
use std::rc::Rc;

pub const SEND_SIGNALED: u32 = 2;
pub const SEND_SOLICITED: u32 = 4;
pub const SEND_INLINE: u32 = 8;
const WR_SEND: u32 = 2;
/// Sends between two signalled ones.
const TX_MODERATION: u32 = 64;

/// The `uct_recv_desc_t` put in front of receive buffers a handler keeps.
#[repr(C)]
pub struct RxRelease {
    pub base: uct_recv_desc_t,
    pub pool: *const BufPool,
    pub headroom: usize,
    /// The worker's async context: the async side receives into the same
    /// pool, so a release (from any user context) holds its block.
    pub async_ctx: *mut ucs_async_context_t,
}

/// What identifies a peer interface for connection matching: its packed
/// device address and QP number.
pub type PeerKey = (Vec<u8>, u32);

/// Connection matching of one peer interface: the next conn_sn we hand
/// out, and our endpoints by conn_sn.
#[derive(Default)]
pub struct ConnPeer {
    pub next_sn: u32,
    pub eps: HashMap<u32, u32>,
}

pub struct UdIface {
    pub qp: Qp,
    pub tx_cq: Cq,
    pub rx_cq: Cq,
    pub channel: CompChannel,
    pub rx_pool: Box<BufPool>,
    pub tx_pool: BufPool,
    pub release: Box<RxRelease>,
    pub md: *const IbMd,
    pub port: u8,
    pub port_info: PortInfo,
    pub p: UdParams,
    pub max_inline: usize,
    pub zcopy_sge: usize,
    /// Largest datagram (network header included), without the GRH area.
    pub seg_size: usize,
    pub dev_addr: IbDevAddr,
    /// The RoCE addressing (a RoCE port), None on InfiniBand.
    pub roce: Option<crate::transports::ib::roce::Port>,
    /// The destination GID check of a RoCE port (`ETH_DGID_CHECK`).
    pub dgid_check: Option<crate::transports::ib::roce::DgidCheck>,
    pub qpn: u32,
    pub rx_queue_len: u32,
    pub rx_batch: u32,
    pub rx_max_poll: u32,
    pub tx_max_poll: u32,
    pub max_num_eps: usize,
    pub rx_posted: Cell<u32>,
    /// Free send queue entries.
    pub tx_available: Cell<i32>,
    /// Sequence number of the last posted send, and of the last one known
    /// complete.
    pub tx_sn: Cell<u64>,
    pub tx_done_sn: Cell<u64>,
    pub tx_unsignaled: Cell<u32>,
    /// Buffers of control packets and retransmissions, freed when their
    /// (signalled) send completes.
    pub ctl_out: RefCell<VecDeque<(u64, Buf)>>,
    /// Endpoints by id (the lowest free id is reused).
    pub eps: RefCell<Vec<Option<EpRef>>>,
    pub ahs: RefCell<HashMap<Vec<u8>, Rc<Ah>>>,
    /// Endpoints with pending requests, by id.
    pub arb: RefCell<VecDeque<u32>>,
    /// Endpoints owing control packets, by id.
    pub owed: RefCell<VecDeque<u32>>,
    pub conn: RefCell<HashMap<PeerKey, ConnPeer>>,
    pub polls: Cell<u32>,
    /// When progress sweeps the endpoints' timers next.
    pub next_sweep: Cell<f64>,
    pub rx_headroom: usize,
    pub async_timer: Cell<Option<i32>>,
    /// The completion channel's descriptor while it has an async handler.
    pub async_fd: Cell<Option<i32>>,
    pub async_cb: (uct_async_event_cb_t, *mut c_void),
    /// Set while the async timer runs the protocol.
    pub in_async: Cell<bool>,
    /// Endpoints whose peer timed out, reported from the next progress.
    pub timeouts: RefCell<Vec<u32>>,
    /// User completions due, called once no endpoint state is borrowed.
    pub done: RefCell<Vec<(crate::core::handles::Completion, ucs_status_t)>>,
    /// Active messages received by the async timer, in arrival order,
    /// delivered by the next progress: (buffer, length after the network
    /// header, AM id).
    pub rx_queued: RefCell<VecDeque<(Buf, usize, u8)>>,
    /// Most receive completions one async timer run polls.
    pub rx_async_max_poll: u32,
    /// Costs of one send, for the performance estimate.
    pub send_costs: crate::transports::ib::release::SendCosts,
}

pub fn units(v: libc::c_ulong) -> usize {
    use crate::core::config::{UNITS_AUTO, UNITS_INF};
    if v == UNITS_INF || v == UNITS_AUTO { usize::MAX } else { v as usize }
}

impl UdIface {
    pub fn md(&self) -> &IbMd {
        // SAFETY: the md outlives its interfaces.
        unsafe { &*self.md }
    }
    pub fn ep(&self, id: u32) -> Option<EpRef> {
        self.eps.borrow().get(id as usize).and_then(|e| e.clone())
    }
    /// A free id for a new endpoint (the lowest).
    pub fn insert_ep(&self, make: impl FnOnce(u32) -> EpState) -> Option<EpRef> {
        let mut eps = self.eps.borrow_mut();
        let id = eps.iter().position(|e| e.is_none()).unwrap_or(eps.len());
        if id as u32 >= neth::EP_NULL_ID {
            return None;
        }
        let ep = Rc::new(RefCell::new(make(id as u32)));
        if id == eps.len() {
            eps.push(Some(ep.clone()));
        } else {
            eps[id] = Some(ep.clone());
        }
        Some(ep)
    }
    pub fn remove_ep(&self, id: u32) {
        let mut eps = self.eps.borrow_mut();
        if let Some(slot) = eps.get_mut(id as usize) {
            *slot = None;
        }
        while matches!(eps.last(), Some(None)) {
            eps.pop();
        }
    }
    /// Whether a send queue entry is free.
    pub fn has_tx(&self) -> bool {
        self.tx_available.get() > 0
    }
    /// The cached address handle towards a peer device address.
    pub fn peer(&self, dev: &IbDevAddr, qpn: u32) -> Result<Peer, ucs_status_t> {
        let key = dev.pack();
        if let Some(ah) = self.ahs.borrow().get(&key) {
            return Ok(Peer { ah: ah.clone(), qpn, dev: key });
        }
        // SAFETY: all-zero is a valid ibv_ah_attr.
        let mut a: raw::ibv_ah_attr = unsafe { std::mem::zeroed() };
        a.dlid = dev.lid;
        a.sl = 0;
        a.port_num = self.port;
        let global = dev.subnet_prefix != self.dev_addr.subnet_prefix || self.dev_addr.if_id.is_some();
        if self.roce.is_some() != dev.roce.is_some() {
            crate::error!("ud_verbs: the peer's address is of the other link layer (InfiniBand and RoCE never meet)");
            return Err(UCS_ERR_UNREACHABLE);
        }
        if let (Some(r), Some(g)) = (&self.roce, &dev.roce) {
            r.fill_ah(&mut a, &g.gid, 0);
        } else if global {
            let Some(if_id) = dev.if_id else {
                crate::error!("ud_verbs: the peer is on another subnet but its address has no interface id");
                return Err(UCS_ERR_UNREACHABLE);
            };
            a.is_global = 1;
            let mut gid = [0u8; 16];
            gid[..8].copy_from_slice(&dev.subnet_prefix);
            gid[8..].copy_from_slice(&if_id);
            a.grh.dgid = raw::ibv_gid { raw: gid };
            a.grh.hop_limit = 255;
        }
        let ah = Rc::new(Ah::create(&self.md().pd, &mut a).map_err(|e| {
            crate::error!("ud_verbs: ibv_create_ah(lid {}) failed: {}", dev.lid, e);
            UCS_ERR_INVALID_ADDR
        })?);
        self.ahs.borrow_mut().insert(key.clone(), ah.clone());
        Ok(Peer { ah, qpn, dev: key })
    }

    /// Post one datagram to `peer`. `keep`: a buffer freed when the send
    /// completes (the send is then signalled).
    pub fn post(&self, peer: &Peer, sg: &mut [raw::ibv_sge], mut flags: u32, keep: Option<Buf>)
                -> Result<(), ucs_status_t> {
        if self.tx_available.get() <= 0 {
            if let Some(b) = keep {
                self.tx_pool.put(b);
            }
            return Err(UCS_ERR_NO_RESOURCE);
        }
        if keep.is_some() || self.tx_unsignaled.get() + 1 >= TX_MODERATION {
            flags |= SEND_SIGNALED;
        }
        let sn = self.tx_sn.get() + 1;
        // SAFETY: all-zero is a valid ibv_send_wr.
        let mut w: raw::ibv_send_wr = unsafe { std::mem::zeroed() };
        w.opcode = WR_SEND;
        w.sg_list = sg.as_mut_ptr();
        w.num_sge = sg.len() as i32;
        w.send_flags = flags;
        w.wr_id = sn;
        w.wr.ud = raw::ud_t { ah: peer.ah.as_ptr(), remote_qpn: peer.qpn, remote_qkey: QKEY };
        // SAFETY: the request names our registered buffers, inline data
        // copied during the call, or the user's registered memory (zcopy),
        // which stays valid until the operation completes.
        if let Err(e) = unsafe { self.qp.post_send(&mut w) } {
            crate::error!("ud_verbs: ibv_post_send(qpn 0x{:x}) failed: {}", self.qpn, e);
            if let Some(b) = keep {
                self.tx_pool.put(b);
            }
            return Err(UCS_ERR_IO_ERROR);
        }
        self.tx_sn.set(sn);
        self.tx_available.set(self.tx_available.get() - 1);
        if flags & SEND_SIGNALED != 0 {
            self.tx_unsignaled.set(0);
        } else {
            self.tx_unsignaled.set(self.tx_unsignaled.get() + 1);
        }
        if let Some(b) = keep {
            self.ctl_out.borrow_mut().push_back((sn, b));
        }
        Ok(())
    }

    /// Queue `id` for sending the control packets it owes.
    pub fn queue_owed(&self, st: &mut EpState) {
        if !st.owed_queued {
            st.owed_queued = true;
            self.owed.borrow_mut().push_back(st.id);
        }
    }
    /// Queue `id` for pending dispatch.
    pub fn schedule(&self, st: &mut EpState) {
        if !st.scheduled && !st.pending.is_empty() {
            st.scheduled = true;
            self.arb.borrow_mut().push_back(st.id);
        }
    }
}

pub fn sge(addr: *const u8, length: usize, lkey: u32) -> raw::ibv_sge {
    raw::ibv_sge { addr: addr as u64, length: length as u32, lkey }
}

fn release_slot(data: *mut u8, headroom: usize) -> *mut *const uct_recv_desc_t {
    data.wrapping_sub(headroom + 8) as *mut *const uct_recv_desc_t
}

/// Offset of the AM data in a receive buffer: the GRH area, then the
/// network header.
const RX_DATA: usize = neth::GRH_LEN + neth::NETH_LEN;

/// `uct_iface_release_desc` of a receive buffer a handler kept.
///
/// # Safety
/// `self_` is the interface's [`RxRelease`] and `desc` the headroom start
/// of one of its receive buffers, kept and not released yet.
pub unsafe extern "C" fn release_rx_desc(self_: *mut uct_recv_desc_t, desc: *mut c_void) {
    // SAFETY: see the function contract.
    let r = unsafe { &*(self_ as *const RxRelease) };
    let area = (desc as *mut u8).wrapping_add(r.headroom).wrapping_sub(RX_DATA);
    let _block = crate::ucs::async_block::AsyncBlock::new(r.async_ctx);
    // SAFETY: the pool lives as long as the interface.
    let pool = unsafe { &*r.pool };
    match pool.find(area) {
        Some(b) => pool.put(b),
        None => crate::error!("ud_verbs: {:p} is not a receive descriptor of this interface", desc),
    }
}

/// Post receive buffers in batches up to the queue length.
pub fn refill(s: &UdIface) {
    let batch = s.rx_batch as usize;
    loop {
        let missing = (s.rx_queue_len - s.rx_posted.get()) as usize;
        // whole batches only (a post per received packet costs more than
        // the packet), as long as a batch is still posted
        if missing == 0 || (missing < batch && s.rx_posted.get() as usize >= batch) {
            return;
        }
        let n = missing.min(batch).min(16);
        // every receive starts with the GRH area, the datagram follows it
        let mark = s.dgid_check.as_ref().filter(|c| c.marks_buffers()).map(|_| 0xff);
        let got = bufs::post_recv_batch(&s.rx_pool, n, neth::GRH_LEN + s.seg_size, mark, "ud_verbs: ibv_post_recv",
                                        |wr| {
            // SAFETY: the chain holds our registered buffers, not used
            // until their completions are polled.
            unsafe { s.qp.post_recv(wr) }
        });
        s.rx_posted.set(s.rx_posted.get() + got as u32);
        if got < n {
            return;
        }
    }
}

/// Handle one received datagram (`pkt`: network header onwards). Returns
/// whether the buffer was kept by an AM handler.
fn rx_packet(iface: &Iface<UdIface>, b: Buf, len: usize) -> bool {
    let s = &iface.tl;
    // SAFETY: the device wrote `len` bytes after the GRH area of our buffer
    // (len was checked against the buffer size).
    let pkt = unsafe { std::slice::from_raw_parts(b.addr.add(neth::GRH_LEN), len) };
    let Some(n) = Neth::parse(pkt) else {
        crate::debug!("ud_verbs: dropped a datagram of {} bytes", len);
        return false;
    };
    if n.dest() == neth::EP_NULL_ID {
        if n.has(neth::CTL) && !n.is_am() {
            super::conn::rx_creq(iface, &n, &pkt[neth::NETH_LEN..]);
        } else {
            crate::debug!("ud_verbs: dropped a packet without destination (type 0x{:x})", n.ptype);
        }
        return false;
    }
    let Some(ep) = s.ep(n.dest()) else {
        crate::debug!("ud_verbs: dropped a packet for unknown ep id {}", n.dest());
        return false;
    };
    let deliver = {
        let mut st = ep.borrow_mut();
        if st.to_ep && !st.connected() {
            crate::debug!("ud_verbs: ep {} is not connected, dropped a packet", st.id);
            return false;
        }
        super::proto::process_ack(iface, &mut st, n.ack_psn);
        if n.has(neth::ACK_REQ) {
            st.owed.ack = true;
            s.queue_owed(&mut st);
        }
        let class = st.rx.classify(n.psn);
        if class == RxClass::Gap {
            st.owed.nak = true;
            s.queue_owed(&mut st);
        }
        if !n.is_am() {
            if n.has(neth::NAK) {
                st.nacked = true;
                super::proto::resend(iface, &mut st);
                return false;
            }
            if len == neth::NETH_LEN {
                return false;
            }
            if n.has(neth::CTL) {
                super::conn::rx_crep(iface, &mut st, &n, &pkt[neth::NETH_LEN..]);
                return false;
            }
        }
        if class != RxClass::InOrder {
            return false;
        }
        st.rx.accept();
        if !n.is_am() {
            if n.has(neth::PUT) && len == neth::NETH_LEN + 8 {
                // ep_check's empty put: nothing to write.
                return false;
            }
            crate::diag!("ud_verbs: dropped a packet of type 0x{:x} and {} bytes from the peer of ep {}",
                         n.ptype, len, st.id);
            return false;
        }
        n.am_id()
    };
    if s.in_async.get() {
        // The user's handlers run from its own progress: keep the packet
        // (it is already acknowledged and in order) for the next progress.
        s.rx_queued.borrow_mut().push_back((b, len - neth::NETH_LEN, deliver));
        return true;
    }
    deliver_am(iface, b, len - neth::NETH_LEN, deliver)
}

/// Hand one active message (`len` bytes after the network header of
/// buffer `b`) to its handler. Returns whether the handler kept the buffer.
fn deliver_am(iface: &Iface<UdIface>, b: Buf, len: usize, id: u8) -> bool {
    let s = &iface.tl;
    let data = b.addr.wrapping_add(RX_DATA);
    // SAFETY: `len` bytes of AM data follow the network header, with our
    // headroom before them; they live until released.
    let status = unsafe { iface.hdr.invoke_am_raw(id, data as *mut c_void, len, UCT_CB_PARAM_FLAG_DESC) };
    if status == UCS_INPROGRESS {
        // SAFETY: the 8 bytes before the headroom are ours (pool lead + GRH).
        unsafe { release_slot(data, s.rx_headroom).write_unaligned(&s.release.base) };
        return true;
    }
    false
}

/// Deliver up to `max` active messages the async timer received, oldest
/// first. Returns how many were delivered.
pub fn rx_queued_progress(iface: &Iface<UdIface>, max: usize) -> u32 {
    let s = &iface.tl;
    let mut n = 0;
    while n < max {
        let Some((b, len, id)) = s.rx_queued.borrow_mut().pop_front() else { break };
        if !deliver_am(iface, b, len, id) {
            s.rx_pool.put(b);
        }
        n += 1;
    }
    if n > 0 {
        refill(s);
    }
    n as u32
}


pub fn rx_progress(iface: &Iface<UdIface>, max: usize) -> u32 {
    let s = &iface.tl;
    let mut room: [MaybeUninit<raw::ibv_wc>; 64] = [const { MaybeUninit::uninit() }; 64];
    let wcs = match s.rx_cq.poll_into(&mut room[..max.clamp(1, 64)]) {
        Ok(w) => w,
        Err(e) => {
            crate::error!("ud_verbs: ibv_poll_cq(rx) failed: {}", e);
            return 0;
        }
    };
    let n = wcs.len();
    for wc in wcs {
        s.rx_posted.set(s.rx_posted.get().saturating_sub(1));
        let Some(b) = s.rx_pool.find(wc.wr_id as *mut u8) else {
            crate::error!("ud_verbs: receive completion with an unknown buffer 0x{:x}", wc.wr_id);
            continue;
        };
        if wc.status != raw::ibv_wc_status::IBV_WC_SUCCESS {
            if wc.status != raw::ibv_wc_status::IBV_WC_WR_FLUSH_ERR {
                crate::error!("ud_verbs: receive completion with error: {}", verbs::wc_status_str(wc.status));
            }
            s.rx_pool.put(b);
            continue;
        }
        let total = wc.byte_len as usize;
        if total < neth::GRH_LEN + neth::NETH_LEN || total > neth::GRH_LEN + s.seg_size {
            crate::debug!("ud_verbs: dropped a datagram of {} bytes", total);
            s.rx_pool.put(b);
            continue;
        }
        if let Some(c) = &s.dgid_check {
            // SAFETY: every receive buffer starts with the GRH area.
            let grh = unsafe { &*(b.addr as *const [u8; neth::GRH_LEN]) };
            if let Err(to) = c.check(grh, wc.wc_flags, wc.sl) {
                crate::debug!("ud_verbs: drop packet with wrong dgid {}", to);
                s.rx_pool.put(b);
                continue;
            }
        }
        if !rx_packet(iface, b, total - neth::GRH_LEN) {
            s.rx_pool.put(b);
        }
    }
    if n > 0 {
        refill(s);
    }
    n as u32
}

pub fn tx_progress(iface: &Iface<UdIface>) -> u32 {
    let s = &iface.tl;
    let mut room: [MaybeUninit<raw::ibv_wc>; 16] = [const { MaybeUninit::uninit() }; 16];
    let wcs = match s.tx_cq.poll_into(&mut room[..(s.tx_max_poll as usize).clamp(1, 16)]) {
        Ok(w) => w,
        Err(e) => {
            crate::error!("ud_verbs: ibv_poll_cq(tx) failed: {}", e);
            return 0;
        }
    };
    let n = wcs.len();
    for wc in wcs {
        if wc.status != raw::ibv_wc_status::IBV_WC_SUCCESS {
            crate::error!("ud_verbs: send completion with error: {} [wr_id {}]", verbs::wc_status_str(wc.status), wc.wr_id);
        }
        let sn = wc.wr_id;
        if sn > s.tx_done_sn.get() && sn <= s.tx_sn.get() {
            let freed = sn - s.tx_done_sn.get();
            s.tx_done_sn.set(sn);
            s.tx_available.set(s.tx_available.get() + freed as i32);
        }
        let mut out = s.ctl_out.borrow_mut();
        while out.front().is_some_and(|(q, _)| *q <= sn) {
            if let Some((_, b)) = out.pop_front() {
                s.tx_pool.put(b);
            }
        }
    }
    n as u32
}

/// Release everything at close: endpoints (their window buffers and
/// completions), kept buffers.
pub fn close(iface: &mut Iface<UdIface>) {
    super::timer::stop(iface);
    let s = &iface.tl;
    let eps: Vec<EpRef> = s.eps.borrow_mut().drain(..).flatten().collect();
    for ep in eps {
        super::proto::purge(s, &mut ep.borrow_mut(), UCS_ERR_CANCELED);
    }
    let queued: Vec<(Buf, usize, u8)> = s.rx_queued.borrow_mut().drain(..).collect();
    for (b, _, _) in queued {
        s.rx_pool.put(b);
    }
    let out: Vec<(u64, Buf)> = s.ctl_out.borrow_mut().drain(..).collect();
    for (_, b) in out {
        s.tx_pool.put(b);
    }
    let (total, free) = s.rx_pool.counts();
    let posted = s.rx_posted.get() as usize;
    if total > free + posted {
        crate::warn!("ud_verbs: {} receive descriptors still held by the user at close", total - free - posted);
    }
}

/// `uct_iface_event_arm`: BUSY while completions or owed work wait, else
/// the CQs are armed (send completions on the send CQ; any receive).
pub fn event_arm(iface: &Iface<UdIface>, events: u32) -> ucs_status_t {
    let s = &iface.tl;
    let Some((tx_ev, rx_ev)) = crate::transports::ib::device::drain_cq_events(&s.channel, &s.tx_cq, &s.rx_cq, "ud_verbs")
    else {
        return UCS_ERR_IO_ERROR;
    };
    if tx_ev + rx_ev > 0 || !s.done.borrow().is_empty() || !s.owed.borrow().is_empty()
        || !s.rx_queued.borrow().is_empty() || !s.timeouts.borrow().is_empty() {
        return UCS_ERR_BUSY;
    }
    if events & UCT_EVENT_SEND_COMP != 0 {
        if let Err(e) = s.tx_cq.req_notify(false) {
            crate::error!("ud_verbs: ibv_req_notify_cq(tx) failed: {}", e);
            return UCS_ERR_IO_ERROR;
        }
    }
    if events & (UCT_EVENT_SEND_COMP | UCT_EVENT_RECV) != 0 {
        if let Err(e) = s.rx_cq.req_notify(false) {
            crate::error!("ud_verbs: ibv_req_notify_cq(rx) failed: {}", e);
            return UCS_ERR_IO_ERROR;
        }
    }
    UCS_OK
}
