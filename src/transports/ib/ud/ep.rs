//! A ud endpoint's state: its id, the peer it sends to, the sequence
//! numbers ([`super::window`]), the window of unacknowledged packets kept
//! for retransmission, pending requests and the control packets it owes.
//!
//! The state lives in an `Rc<RefCell<..>>` held by the interface's ep
//! table, not by the C-visible endpoint object: `uct_ep_destroy` frees the
//! latter, the state stays in the table until the interface closes or the
//! linger time has passed, so late packets of the peer still find it.

use super::window::{RxWin, TxWin};
use crate::abi::*;
use crate::core::handles::{Completion, PendingReq};
use crate::sys::verbs::Ah;
use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;

use crate::transports::ib::bufs::Buf;

/// The user memory of an am_zcopy packet (kept for retransmission) and
/// its completion, which fires when the packet is acknowledged.
pub struct Zc {
    pub iov: Vec<(u64, usize)>,
    pub lkeys: Vec<u32>,
    pub comp: Completion,
}

/// A packet of the send window: a registered buffer holding the network
/// header and the inline part (everything, but for am_zcopy's payload).
pub struct Skb {
    pub psn: u16,
    pub buf: Buf,
    pub len: usize,
    pub zc: Option<Zc>,
}

pub type EpRef = Rc<RefCell<EpState>>;

/// Where an endpoint sends: the peer iface's QP through a cached AH.
#[derive(Clone)]
pub struct Peer {
    pub ah: Rc<Ah>,
    pub qpn: u32,
    /// The packed device address the AH was made from (conn matching key).
    pub dev: Vec<u8>,
}

/// Control packets an endpoint owes its peer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Owed {
    pub ack: bool,
    pub ack_req: bool,
    pub nak: bool,
    pub creq: bool,
    pub crep: bool,
}

pub struct EpState {
    pub id: u32,
    /// The C endpoint, null once destroyed.
    pub ep: uct_ep_h,
    pub dest_id: Option<u32>,
    pub peer: Option<Peer>,
    pub tx: TxWin,
    pub rx: RxWin,
    pub window: VecDeque<Skb>,
    /// ep_flush completions, each waiting for a psn to be acknowledged.
    pub flushes: VecDeque<(u16, Completion)>,
    pub pending: VecDeque<PendingReq>,
    pub scheduled: bool,
    pub owed: Owed,
    /// Queued on the interface's list of endpoints owing control packets.
    pub owed_queued: bool,
    /// The peer reported a gap: retransmit from the first unacked packet.
    pub nacked: bool,
    pub send_time: f64,
    pub resend_time: f64,
    pub tick: f64,
    pub failed: Option<ucs_status_t>,
    pub conn_sn: u32,
    /// Created by a peer's connection request, not by the user.
    pub private: bool,
    /// Created for connect-to-ep (never matched with a connection request).
    pub to_ep: bool,
    /// Destroyed by the user; kept to answer late packets.
    pub closed_at: Option<f64>,
    /// A retransmission round is under way, up to `resent_psn`.
    pub resending: bool,
    pub resent_psn: u16,
    /// When the retransmission timer looks at the endpoint next.
    pub next_check: f64,
    /// A pending request of this endpoint is being dispatched.
    pub in_pending: bool,
}

impl EpState {
    pub fn new(id: u32, wmax: u32, tick: f64) -> EpState {
        EpState {
            id, ep: std::ptr::null_mut(), dest_id: None, peer: None, tx: TxWin::new(wmax), rx: RxWin::default(),
            window: VecDeque::new(), flushes: VecDeque::new(), pending: VecDeque::new(), scheduled: false,
            owed: Owed::default(), owed_queued: false, nacked: false, send_time: 0.0, resend_time: 0.0, tick,
            failed: None, conn_sn: 0, private: false, to_ep: false, closed_at: None, resending: false, resent_psn: 0,
            next_check: f64::INFINITY, in_pending: false,
        }
    }
    pub fn connected(&self) -> bool {
        self.dest_id.is_some() && self.peer.is_some()
    }
    /// Whether a new packet may go out now (window and connection; the
    /// send queue is the interface's to check).
    pub fn can_send(&self) -> bool {
        self.failed.is_none() && self.closed_at.is_none() && self.connected() && self.tx.can_send()
    }
    /// Whether nothing sent is waiting for an acknowledgement.
    pub fn all_acked(&self) -> bool {
        self.window.is_empty()
    }
}
