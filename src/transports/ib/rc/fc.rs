//! The one-byte RC active-message header and UCX's credit flow control.
//!
//! Header: bits 0..4 the AM id, bit 5 a soft credit request, bit 6 a hard
//! credit request, bit 7 a credit grant; all three bits together are a
//! "pure grant", a message that carries nothing else and is not delivered.
//!
//! Sender: each AM costs one credit of the window (`FC_WND_SIZE`). When the
//! window reaches the soft threshold the AM carries a soft request (the
//! peer then piggy-backs a grant on its next AM), at the hard threshold a
//! hard request (the peer answers at once with a pure grant); at 0 AMs are
//! refused with NO_RESOURCE. A grant restores the full window.

/// Bits of the header byte.
pub const AM_ID_MASK: u8 = 0x1f;
pub const SOFT_REQ: u8 = 0x20;
pub const HARD_REQ: u8 = 0x40;
pub const GRANT: u8 = 0x80;
pub const PURE_GRANT: u8 = SOFT_REQ | HARD_REQ | GRANT;
pub const FC_MASK: u8 = PURE_GRANT;

/// Flow-control configuration of an interface.
#[derive(Clone, Copy, Debug)]
pub struct FcConfig {
    pub enabled: bool,
    pub wnd: i32,
    pub soft: i32,
    pub hard: i32,
}

/// The flow-control state of one endpoint.
#[derive(Clone, Copy, Debug)]
pub struct Fc {
    /// Credits left.
    pub wnd: i32,
    /// The peer asked for credits: the next AM carries a grant.
    pub grant_owed: bool,
}

/// What a received header asks of us.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RxFc {
    /// The peer granted credits.
    pub grant: bool,
    /// Nothing to deliver (a pure grant).
    pub pure: bool,
    /// Send a pure grant now.
    pub send_grant: bool,
    /// Piggy-back a grant on the next AM.
    pub owe_grant: bool,
}

impl Fc {
    pub fn new(cfg: &FcConfig) -> Fc {
        Fc { wnd: if cfg.enabled { cfg.wnd } else { i16::MAX as i32 }, grant_owed: false }
    }

    /// The FC bits for the next AM, or None when the window is exhausted.
    /// Nothing changes until [`sent`](Self::sent).
    pub fn check(&mut self, cfg: &FcConfig) -> Option<u8> {
        let mut bits = 0;
        if self.wnd <= cfg.soft {
            if cfg.enabled {
                if self.wnd <= 0 {
                    return None;
                }
                bits = if self.wnd == cfg.hard {
                    HARD_REQ
                } else if self.wnd == cfg.soft {
                    SOFT_REQ
                } else {
                    0
                };
            } else {
                self.wnd = i16::MAX as i32;
            }
        }
        if self.grant_owed {
            bits |= GRANT;
        }
        Some(bits)
    }

    /// An AM left: one credit spent, an owed grant given.
    pub fn sent(&mut self) {
        self.wnd -= 1;
        self.grant_owed = false;
    }

    /// Whether an AM may be sent now.
    pub fn has_credit(&self) -> bool {
        self.wnd > 0
    }

    /// Restore the whole window (a grant arrived, or the endpoint failed);
    /// true when it was exhausted (pending work must be rescheduled).
    pub fn restore(&mut self, cfg: &FcConfig) -> bool {
        let was = self.wnd;
        self.wnd = if cfg.enabled { cfg.wnd } else { i16::MAX as i32 };
        was <= 0
    }
}

/// Decode the FC bits of a received header.
pub fn rx(hdr: u8) -> RxFc {
    let fc = hdr & FC_MASK;
    let pure = fc == PURE_GRANT;
    RxFc {
        grant: fc & GRANT != 0,
        pure,
        send_grant: !pure && fc & SOFT_REQ == 0 && fc & HARD_REQ != 0,
        owe_grant: !pure && fc & SOFT_REQ != 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CFG: FcConfig = FcConfig { enabled: true, wnd: 8, soft: 4, hard: 2 };

    #[test]
    fn window_requests_and_exhaustion() {
        let mut fc = Fc::new(&CFG);
        let mut seen = Vec::new();
        while let Some(bits) = fc.check(&CFG) {
            seen.push(bits);
            fc.sent();
        }
        assert_eq!(seen, vec![0, 0, 0, 0, SOFT_REQ, 0, HARD_REQ, 0]);
        assert_eq!(fc.wnd, 0);
        assert!(fc.restore(&CFG));
        assert_eq!(fc.wnd, 8);
        assert!(!fc.restore(&CFG));
    }

    #[test]
    fn owed_grant_is_piggy_backed_once() {
        let mut fc = Fc::new(&CFG);
        fc.grant_owed = true;
        assert_eq!(fc.check(&CFG), Some(GRANT));
        fc.sent();
        assert_eq!(fc.check(&CFG), Some(0));
    }

    #[test]
    fn disabled_never_runs_out() {
        let cfg = FcConfig { enabled: false, ..CFG };
        let mut fc = Fc::new(&cfg);
        for _ in 0..100_000 {
            assert_eq!(fc.check(&cfg), Some(0));
            fc.sent();
        }
    }

    #[test]
    fn received_bits() {
        assert_eq!(rx(3), RxFc { grant: false, pure: false, send_grant: false, owe_grant: false });
        assert_eq!(rx(PURE_GRANT), RxFc { grant: true, pure: true, send_grant: false, owe_grant: false });
        assert_eq!(rx(HARD_REQ | 1), RxFc { grant: false, pure: false, send_grant: true, owe_grant: false });
        assert_eq!(rx(SOFT_REQ | GRANT | 2), RxFc { grant: true, pure: false, send_grant: false, owe_grant: true });
    }
}
