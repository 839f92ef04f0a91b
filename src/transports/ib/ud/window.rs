//! The per-endpoint sequence-number state of the ud reliability protocol,
//! as plain Rust: what may be sent, when an acknowledgement is asked for,
//! what an acknowledgement releases, and how a received sequence number is
//! classified. The send window is `[acked_psn + 1, max_psn)`; the
//! congestion window starts at 2 and grows by one per new acknowledgement
//! up to the configured maximum, halving on a retransmission timeout.

use super::neth::{psn_le, psn_lt};

/// The first sequence number of a fresh endpoint.
pub const INITIAL_PSN: u16 = 1;
/// The least congestion window.
pub const MIN_WINDOW: u16 = 2;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TxWin {
    /// Next sequence number to send.
    pub psn: u16,
    /// Last sequence number the peer acknowledged.
    pub acked_psn: u16,
    /// First sequence number beyond the window.
    pub max_psn: u16,
    pub cwnd: u16,
    pub wmax: u16,
}

impl TxWin {
    pub fn new(wmax: u32) -> TxWin {
        let wmax = wmax.clamp(MIN_WINDOW as u32, u16::MAX as u32 / 2) as u16;
        TxWin { psn: INITIAL_PSN, acked_psn: INITIAL_PSN - 1, max_psn: INITIAL_PSN + MIN_WINDOW, cwnd: MIN_WINDOW, wmax }
    }
    /// Whether one more packet fits in the window.
    pub fn can_send(&self) -> bool {
        psn_lt(self.psn, self.max_psn)
    }
    /// Packets sent and not acknowledged.
    pub fn in_flight(&self) -> u16 {
        self.psn.wrapping_sub(self.acked_psn).wrapping_sub(1)
    }
    /// Whether the packet about to be sent (at `psn`) asks for an
    /// acknowledgement: one quarter into the window, or its last slot.
    pub fn wants_ack_req(&self) -> bool {
        let quarter = ((3 * self.acked_psn as u32 + self.max_psn as u32) / 4) as u16;
        self.psn == quarter || self.psn.wrapping_add(1) == self.max_psn
    }
    /// Take the next sequence number.
    pub fn advance(&mut self) -> u16 {
        let p = self.psn;
        self.psn = self.psn.wrapping_add(1);
        p
    }
    /// A cumulative acknowledgement up to `ack`: true when it is new (the
    /// window moved). Acknowledgements of packets never sent are ignored.
    pub fn ack(&mut self, ack: u16) -> bool {
        if psn_le(ack, self.acked_psn) || !psn_lt(ack, self.psn) {
            return false;
        }
        self.acked_psn = ack;
        if self.cwnd < self.wmax {
            self.cwnd += 1;
        }
        self.max_psn = self.acked_psn.wrapping_add(self.cwnd);
        true
    }
    /// A retransmission timeout: halve the window.
    pub fn drop_window(&mut self) {
        self.cwnd = (self.cwnd / 2).max(MIN_WINDOW);
        self.max_psn = self.acked_psn.wrapping_add(self.cwnd);
        if psn_lt(self.psn, self.max_psn) {
            // As the original: no new packets until acknowledgements flow.
            self.max_psn = self.psn;
        }
    }
    /// Everything sent counts as acknowledged (flush with cancel).
    pub fn ack_all(&mut self) {
        self.acked_psn = self.psn.wrapping_sub(1);
        self.max_psn = self.acked_psn.wrapping_add(self.cwnd);
    }
}

/// How a received sequence number fits the in-order stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RxClass {
    /// The next one: deliver.
    InOrder,
    /// Already received: drop.
    Dup,
    /// Beyond the next one: drop, and ask for a retransmission.
    Gap,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RxWin {
    /// The last sequence number received in order.
    pub head_sn: u16,
    /// The last sequence number we acknowledged to the peer.
    pub acked_psn: u16,
}

impl Default for RxWin {
    fn default() -> RxWin {
        RxWin { head_sn: INITIAL_PSN - 1, acked_psn: INITIAL_PSN - 1 }
    }
}

impl RxWin {
    pub fn classify(&self, psn: u16) -> RxClass {
        let next = self.head_sn.wrapping_add(1);
        if psn == next {
            RxClass::InOrder
        } else if psn_lt(psn, next) {
            RxClass::Dup
        } else {
            RxClass::Gap
        }
    }
    /// Take an in-order packet.
    pub fn accept(&mut self) {
        self.head_sn = self.head_sn.wrapping_add(1);
    }
    /// The acknowledgement the next packet carries (and remember it).
    pub fn take_ack(&mut self) -> u16 {
        self.acked_psn = self.head_sn;
        self.head_sn
    }
    /// Whether the peer has been told about everything received.
    pub fn ack_current(&self) -> bool {
        self.acked_psn == self.head_sn
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fresh_window() {
        let mut w = TxWin::new(1025);
        assert_eq!((w.psn, w.acked_psn, w.max_psn), (1, 0, 3));
        assert!(w.can_send() && !w.wants_ack_req());
        assert_eq!(w.advance(), 1);
        assert!(w.can_send() && w.wants_ack_req());
        w.advance();
        assert!(!w.can_send());
        assert_eq!(w.in_flight(), 2);
        assert!(w.ack(2));
        assert_eq!((w.cwnd, w.max_psn), (3, 5));
        assert!(!w.ack(2) && !w.ack(1));
        // An acknowledgement of a packet never sent.
        assert!(!w.ack(9));
    }

    #[test]
    fn window_grows_to_wmax_and_halves() {
        let mut w = TxWin::new(4);
        for _ in 0..10 {
            while w.can_send() {
                w.advance();
            }
            let p = w.psn.wrapping_sub(1);
            w.ack(p);
        }
        assert_eq!(w.cwnd, 4);
        w.advance();
        w.advance();
        w.drop_window();
        assert_eq!(w.cwnd, 2);
        assert!(!w.can_send());
        assert_eq!(TxWin::new(1).wmax, 2);
    }

    #[test]
    fn wraps() {
        let mut w = TxWin::new(1025);
        w.psn = 0xffff;
        w.acked_psn = 0xfffe;
        w.max_psn = 3;
        assert!(w.can_send());
        w.advance();
        w.advance();
        assert_eq!(w.psn, 1);
        assert!(w.ack(0));
        assert_eq!(w.in_flight(), 0);
    }

    #[test]
    fn rx_classes() {
        let mut r = RxWin::default();
        assert_eq!(r.classify(1), RxClass::InOrder);
        assert_eq!(r.classify(0), RxClass::Dup);
        assert_eq!(r.classify(2), RxClass::Gap);
        assert_eq!(r.classify(0x8000), RxClass::Gap);
        r.accept();
        assert!(!r.ack_current());
        assert_eq!(r.take_ack(), 1);
        assert!(r.ack_current());
        r.head_sn = 0xffff;
        assert_eq!(r.classify(0), RxClass::InOrder);
        assert_eq!(r.classify(0xfff0), RxClass::Dup);
    }
}
