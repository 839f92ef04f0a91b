//! `rc_verbs` endpoints: one RC QP each, its send credits, flow-control
//! window, outstanding operations and pending requests; and the posting of
//! every work request.
//!
//! Work request ids are the endpoint's 16-bit post counter after the post.
//! A send completion with id W retires every work request up to W (RC
//! completes in order, and one signalled completion stands for the
//! unsignalled ones before it): their QP slots and CQ credits come back,
//! and the operations recorded with a sequence number up to W complete.

use crate::transports::ib::bufs::Buf;
use super::fc::{self, Fc};
use super::iface::RcIface;
use super::params::FenceMode;
use crate::abi::*;
use crate::core::iface::Iface;
use crate::core::handles::*;
use crate::sys::verbs::{raw, Qp};
use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;

/// `ibv_wr_opcode` values.
pub const WR_RDMA_WRITE: u32 = 0;
pub const WR_SEND: u32 = 2;
pub const WR_RDMA_READ: u32 = 4;
pub const WR_ATOMIC_CMP_AND_SWP: u32 = 5;
pub const WR_ATOMIC_FETCH_AND_ADD: u32 = 6;
/// `ibv_send_flags` bits.
pub const SEND_FENCE: u32 = 1;
pub const SEND_SIGNALED: u32 = 2;
pub const SEND_SOLICITED: u32 = 4;
pub const SEND_INLINE: u32 = 8;

/// What completes when a work request is retired.
pub enum TxOp {
    /// A send buffer goes back to the pool.
    Buf(Buf),
    /// The user's completion is called.
    Comp(Completion),
    /// Both (am_zcopy: the header buffer and the user's completion).
    BufComp(Buf, Completion),
    /// get_bcopy: the data is unpacked from the buffer, then completed.
    GetBcopy(Buf, Unpack, usize, Completion),
    /// Fetching atomic: the old value is stored, then completed.
    Fetch(Buf, FetchResult, Completion),
    /// ep_flush's completion.
    Flush(Completion),
}

/// A pending request: the user's, or a flow-control grant we owe.
pub enum Pend {
    User(PendingReq),
    Grant,
}

/// The mutable state of an endpoint.
pub struct EpState {
    /// None once the endpoint is destroyed (or its interface closed).
    pub qp: Option<Qp>,
    pub qpn: u32,
    pub ep: uct_ep_h,
    /// Connected to (peer LID, peer QPN, the peer's GID on RoCE).
    pub peer: Option<(u16, u32, Option<[u8; 16]>)>,
    /// Post and completion counters.
    pub pi: u16,
    pub ci: u16,
    /// Free send slots.
    pub available: i32,
    /// Unsignalled work requests since the last signalled one.
    pub unsignaled: u32,
    pub fc: Fc,
    pub fence_beat: u32,
    pub outstanding: VecDeque<(u16, TxOp)>,
    pub pending: VecDeque<Pend>,
    /// In the interface's dispatch list.
    pub scheduled: bool,
    /// The status of the first failed completion.
    pub failed: Option<ucs_status_t>,
    /// ep_flush(CANCEL) moved the QP to the error state.
    pub flush_cancel: bool,
}

pub type EpRef = Rc<RefCell<EpState>>;

/// The transport part of a `uct_ep`.
pub struct RcEp {
    pub st: EpRef,
}

/// Whether sequence number `a` is at or before `b` (16-bit wrap-around).
#[inline(always)]
pub fn sn_le(a: u16, b: u16) -> bool {
    (b.wrapping_sub(a) as i16) >= 0
}

/// Map a failed work completion's status to what UCT reports.
pub fn wc_status_to_ucs(status: u32) -> ucs_status_t {
    use raw::ibv_wc_status::*;
    match status {
        IBV_WC_SUCCESS => UCS_OK,
        IBV_WC_REM_ACCESS_ERR | IBV_WC_REM_OP_ERR => UCS_ERR_CONNECTION_RESET,
        IBV_WC_RETRY_EXC_ERR | IBV_WC_RNR_RETRY_EXC_ERR | IBV_WC_REM_ABORT_ERR => UCS_ERR_ENDPOINT_TIMEOUT,
        IBV_WC_WR_FLUSH_ERR => UCS_ERR_CANCELED,
        _ => UCS_ERR_IO_ERROR,
    }
}

pub fn sge(addr: *const u8, length: usize, lkey: u32) -> raw::ibv_sge {
    raw::ibv_sge { addr: addr as u64, length: length as u32, lkey }
}

/// An empty send work request.
pub fn wr(opcode: u32, sg: &mut [raw::ibv_sge]) -> raw::ibv_send_wr {
    // SAFETY: all-zero is a valid ibv_send_wr (null pointers, zero numbers).
    let mut w: raw::ibv_send_wr = unsafe { std::mem::zeroed() };
    w.opcode = opcode;
    w.sg_list = if sg.is_empty() { std::ptr::null_mut() } else { sg.as_mut_ptr() };
    w.num_sge = sg.len() as i32;
    w
}

pub fn set_rdma(w: &mut raw::ibv_send_wr, remote_addr: u64, rkey: u32) {
    w.wr.rdma = raw::rdma_t { remote_addr, rkey };
}

impl EpState {
    /// The status that refuses a new operation, if any: the failure, no
    /// connection, or no send slot / CQ credit.
    #[inline]
    pub fn check_res(&self, iface: &RcIface) -> Result<(), ucs_status_t> {
        if let Some(s) = self.failed {
            return Err(s);
        }
        if self.peer.is_none() || self.qp.is_none() {
            return Err(UCS_ERR_NOT_CONNECTED);
        }
        if self.available <= 0 || iface.cq_available.get() <= 0 {
            return Err(UCS_ERR_NO_RESOURCE);
        }
        Ok(())
    }

    /// Whether the endpoint could send an AM now.
    pub fn has_tx_res(&self, iface: &RcIface) -> bool {
        self.available > 0 && iface.cq_available.get() > 0 && self.fc.has_credit()
    }

    /// The fence mark of the next RDMA READ or atomic (and of puts, which
    /// then use the atomic key): true once after a fence.
    #[inline]
    pub fn fence_mark(&mut self, iface: &RcIface) -> bool {
        let beat = iface.fence_beat.get();
        let f = self.fence_beat != beat;
        self.fence_beat = beat;
        f
    }

    pub fn fence(&mut self, iface: &RcIface) {
        if iface.p.fence != FenceMode::None {
            self.fence_beat = iface.fence_beat.get().wrapping_sub(1);
        }
    }

    /// Post one work request; returns its sequence number. The caller
    /// checked resources ([`check_res`](Self::check_res)). Unsignalled
    /// requests become signalled every `tx_moderation`, or when CQ credits
    /// run low.
    #[inline]
    pub fn post(&mut self, iface: &RcIface, w: &mut raw::ibv_send_wr, mut flags: u32) -> Result<u16, ucs_status_t> {
        let moderation = iface.d.tx_moderation;
        if flags & SEND_SIGNALED == 0
            && (self.unsignaled >= moderation || iface.cq_available.get() <= moderation as i32 + 1)
        {
            flags |= SEND_SIGNALED;
        }
        if w.opcode == WR_RDMA_READ && self.fence_mark(iface) {
            flags |= SEND_FENCE;
        }
        let Some(qp) = self.qp.as_ref() else { return Err(UCS_ERR_NOT_CONNECTED) };
        let sn = self.pi.wrapping_add(1);
        w.send_flags = flags;
        w.wr_id = sn as u64;
        w.next = std::ptr::null_mut();
        // SAFETY: the request names our registered buffers, the user's
        // registered memory (zcopy) or inline data copied during the call;
        // buffers stay alive until the request's completion is retired.
        if let Err(e) = unsafe { qp.post_send(w) } {
            crate::error!("rc_verbs: ibv_post_send(qp 0x{:x}, opcode {}) failed: {}", self.qpn, w.opcode, e);
            return Err(UCS_ERR_IO_ERROR);
        }
        self.pi = sn;
        if flags & SEND_SIGNALED != 0 {
            self.unsignaled = 0;
        } else {
            self.unsignaled += 1;
        }
        iface.cq_available.set(iface.cq_available.get() - 1);
        self.available -= 1;
        Ok(sn)
    }

    /// Retire work requests up to `wr_id`: slots and CQ credits return.
    pub fn retire(&mut self, iface: &RcIface, wr_id: u16) {
        let count = wr_id.wrapping_sub(self.ci) as i32;
        self.ci = wr_id;
        self.available += count;
        iface.cq_available.set(iface.cq_available.get() + count);
    }

    /// The next outstanding operation retired by `wr_id`.
    pub fn pop_done(&mut self, wr_id: u16) -> Option<TxOp> {
        match self.outstanding.front() {
            Some(&(sn, _)) if sn_le(sn, wr_id) => self.outstanding.pop_front().map(|(_, op)| op),
            _ => None,
        }
    }

    /// Post a pure flow-control grant (1-byte inline SEND, no FC check).
    pub fn post_grant(&mut self, iface: &RcIface) -> ucs_status_t {
        if self.failed.is_some() || self.qp.is_none() {
            return UCS_OK; // nothing to grant to a dead peer
        }
        if self.available <= 0 || iface.cq_available.get() <= 0 {
            return UCS_ERR_NO_RESOURCE;
        }
        let hdr = [fc::PURE_GRANT];
        let mut sg = [sge(hdr.as_ptr(), 1, 0)];
        let mut w = wr(WR_SEND, &mut sg);
        match self.post(iface, &mut w, SEND_INLINE) {
            Ok(_) => UCS_OK,
            Err(s) => s,
        }
    }

    /// Queue `p` and put the endpoint on the dispatch list.
    pub fn add_pending(&mut self, iface: &RcIface, p: Pend, front: bool) {
        if front {
            self.pending.push_front(p);
        } else {
            self.pending.push_back(p);
        }
        if !self.scheduled {
            self.scheduled = true;
            iface.arb.borrow_mut().push_back(self.qpn);
        }
    }
}

/// Complete a retired operation (no endpoint or interface state borrowed:
/// user callbacks may post more work).
pub fn complete_op(iface: &RcIface, op: TxOp, status: ucs_status_t) {
    match op {
        TxOp::Buf(b) => iface.tx_pool.put(b),
        TxOp::Comp(c) | TxOp::Flush(c) => c.complete(status),
        TxOp::BufComp(b, c) => {
            iface.tx_pool.put(b);
            c.complete(status);
        }
        TxOp::GetBcopy(b, unpack, len, c) => {
            if status == UCS_OK {
                // SAFETY: the device wrote `len` bytes (at most seg_size)
                // into our buffer.
                unsafe { unpack.unpack_raw(b.addr, len) };
            }
            iface.tx_pool.put(b);
            c.complete(status);
        }
        TxOp::Fetch(b, result, c) => {
            if status == UCS_OK {
                // SAFETY: an 8-byte result slot of our buffer, written by
                // the device.
                let v = unsafe { std::ptr::read_unaligned(b.addr as *const u64) };
                result.store(v);
            }
            iface.tx_pool.put(b);
            c.complete(status);
        }
    }
}

/// The endpoint of a handle's transport part.
#[inline(always)]
pub fn state(ep: &crate::core::iface::Ep<RcIface>) -> &EpRef {
    &ep.tl.st
}

/// Dispatch pending requests of the scheduled endpoints, one round.
pub fn dispatch_pending(iface: &Iface<RcIface>) {
    let s = &iface.tl;
    let rounds = s.arb.borrow().len();
    for _ in 0..rounds {
        let Some(qpn) = s.arb.borrow_mut().pop_front() else { break };
        let Some(ep) = s.eps.borrow().get(&qpn).cloned() else { continue };
        loop {
            let item = {
                let mut st = ep.borrow_mut();
                let grant_first = matches!(st.pending.front(), Some(Pend::Grant));
                if st.pending.is_empty() {
                    st.scheduled = false;
                    break;
                }
                let ok = st.available > 0 && s.cq_available.get() > 0 && (grant_first || st.fc.has_credit());
                if !ok {
                    s.arb.borrow_mut().push_back(qpn);
                    break;
                }
                st.pending.pop_front()
            };
            let Some(item) = item else { break };
            let status = match &item {
                Pend::Grant => ep.borrow_mut().post_grant(s),
                Pend::User(r) => r.dispatch(),
            };
            if status != UCS_OK {
                let mut st = ep.borrow_mut();
                st.pending.push_front(item);
                s.arb.borrow_mut().push_back(qpn);
                break;
            }
        }
    }
}
