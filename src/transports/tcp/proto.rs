//! What a peer may send on a tcp connection, and when: pure functions from
//! received bytes (and the few facts about the connection they depend on)
//! to a decoded frame or the protocol violation that closes the connection.
//! No I/O and no state here, so that they can be fuzzed.
//!
//! The rules keep the wire compatible with UCX 1.13.1: everything the C
//! original sends is accepted, and what it never sends is refused.
//! - Before the handshake (an accepted socket, after the magic number) the
//!   only frame is one connection request ([`handshake_frame_len`]).
//! - Active messages and put requests need the receive direction: the peer
//!   introduced itself on this connection (its connection request, or an
//!   acknowledgement carrying one) or we connected to a peer that sends on
//!   our socket (CONNECT_TO_EP).
//! - A put request is exactly its 20-byte header, an acknowledgement of a
//!   put exactly 4 bytes, connection events exactly 4 bytes and a
//!   connection request its fixed part and one socket address.
//! - A second connection request is refused, except the one case of the
//!   protocol: a peer that takes over the connection we opened to it sends
//!   its own request on it, once, with the sequence number and address of
//!   that connection. An acknowledgement needs a request of ours, a FIN the
//!   receive direction.
//! - Frame ids above the internal ones are unknown; a frame longer than the
//!   receive segment is refused.

use super::codec::{self, ConnReq, PutReq};
use crate::sys::addr::SockAddr;
use std::fmt;

/// Where the connection is in the handshake, as far as the rules care.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Phase {
    /// Accepted, the peer's connection request not received yet.
    Handshake,
    /// We sent our connection request and wait for the acknowledgement.
    WaitingAck,
    Connected,
    /// Closed, connecting or receiving the magic number: no frame expected.
    Other,
}

/// The facts about the connection a received frame is checked against.
#[derive(Clone, Copy, Debug)]
pub struct RxCtx {
    pub phase: Phase,
    /// The peer sends on this connection (UCX's RX capability).
    pub rx_cap: bool,
    /// The largest frame body (the receive segment less the header).
    pub max_len: usize,
}

/// The facts a connection event is checked against.
#[derive(Clone, Copy, Debug)]
pub struct CmCtx {
    pub phase: Phase,
    pub rx_cap: bool,
    /// We sent a connection request on this connection.
    pub req_sent: bool,
    /// The connection's sequence number (or endpoint key).
    pub cm_id: u64,
    /// The peer's listening address, when known.
    pub peer: Option<SockAddr>,
}

/// A decoded connection event.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum CmEvent {
    Req(ConnReq),
    Ack,
    AckWithReq,
    Fin,
}

/// A frame whose header and body are in the buffer.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Frame {
    /// A user active message: the body is its payload.
    Am(u8),
    /// A put request: the data follows the frame.
    PutReq(PutReq),
    PutAck(u32),
    Keepalive,
    /// A connection packet (decode it with [`decode_cm`]).
    Cm,
}

/// What the next bytes of the receive buffer hold.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Scan {
    /// Not a whole frame yet.
    Partial,
    /// A frame: its body is `buf[HDR_LEN..HDR_LEN + len]`.
    Frame { frame: Frame, len: usize },
}

/// Why a connection is closed.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Violation {
    TooLong { len: usize, max: usize },
    UnknownId(u8),
    BeforeHandshake(u8),
    /// An active message or put without the receive direction.
    NoRx(u8),
    BadLength { id: u8, len: usize },
    BadEvent(Option<u32>),
    BadRequest(usize),
    /// A connection event the state machine does not expect.
    Unexpected { event: &'static str, phase: Phase },
    SecondRequest,
    /// A connection request on our connection that names another one.
    RequestMismatch,
    /// A put outside the memory registered with the memory domain.
    PutOutside { addr: u64, length: u64 },
    /// A put (not checked against registrations) into memory the process
    /// cannot write.
    PutFault { addr: u64, length: u64 },
    BadMagic(u64),
    /// A put acknowledgement for no put we sent.
    UnaskedAck { sn: u32, last_sent: Option<u32> },
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Violation::TooLong { len, max } => {
                write!(f, "a frame of {} bytes, more than the {} of the receive buffer", len, max)
            }
            Violation::UnknownId(id) => write!(f, "a frame with unknown id {}", id),
            Violation::BeforeHandshake(id) => write!(f, "frame id {} before the connection request", id),
            Violation::NoRx(id) => write!(f, "frame id {} on a connection the peer does not send on", id),
            Violation::BadLength { id, len } => write!(f, "frame id {} with a body of {} bytes", id, len),
            Violation::BadEvent(ev) => write!(f, "unknown connection event {:?}", ev),
            Violation::BadRequest(len) => write!(f, "a malformed connection request ({} bytes)", len),
            Violation::Unexpected { event, phase } => write!(f, "connection event {} in state {:?}", event, phase),
            Violation::SecondRequest => write!(f, "a second connection request"),
            Violation::UnaskedAck { sn, last_sent: Some(last) } => {
                write!(f, "an acknowledgement of put {} when the last put sent is {}", sn, last)
            }
            Violation::UnaskedAck { sn, last_sent: None } => {
                write!(f, "an acknowledgement of put {} while no put waits for one", sn)
            }
            Violation::RequestMismatch => {
                write!(f, "a connection request naming another connection than this one")
            }
            Violation::PutOutside { addr, length } => {
                write!(f, "a put to {:#x} (+{}) outside registered memory", addr, length)
            }
            Violation::PutFault { addr, length } => {
                write!(f, "a put to {:#x} (+{}) into memory this process cannot write", addr, length)
            }
            Violation::BadMagic(m) => write!(f, "wrong magic number {:#x}", m),
        }
    }
}

/// Whether data frames (active messages, puts) may arrive in `phase`.
fn data_phase(phase: Phase) -> bool {
    matches!(phase, Phase::Connected | Phase::WaitingAck)
}

/// The next frame at the start of `buf` (what is received and not handled
/// yet), checked against the connection's state.
#[inline]
pub fn classify(buf: &[u8], ctx: &RxCtx) -> Result<Scan, Violation> {
    let Some((id, len)) = codec::get_hdr(buf) else { return Ok(Scan::Partial) };
    let len = len as usize;
    if len > ctx.max_len {
        return Err(Violation::TooLong { len, max: ctx.max_len });
    }
    if id > codec::AM_ID_KEEPALIVE {
        return Err(Violation::UnknownId(id));
    }
    if ctx.phase == Phase::Handshake && id != codec::AM_ID_CM {
        return Err(Violation::BeforeHandshake(id));
    }
    // Lengths are checked before the body is complete: a bad one closes
    // the connection without waiting for bytes that may never come.
    let fixed = match id {
        codec::AM_ID_PUT_REQ => Some(codec::PUT_REQ_LEN),
        codec::AM_ID_PUT_ACK => Some(codec::PUT_ACK_LEN),
        _ => None,
    };
    if fixed.is_some_and(|f| f != len) {
        return Err(Violation::BadLength { id, len });
    }
    if (id < codec::AM_ID_MAX || id == codec::AM_ID_PUT_REQ) && !(ctx.rx_cap && data_phase(ctx.phase)) {
        return Err(Violation::NoRx(id));
    }
    if (id == codec::AM_ID_PUT_ACK || id == codec::AM_ID_KEEPALIVE) && !data_phase(ctx.phase) {
        return Err(Violation::Unexpected { event: "PUT_ACK/KEEPALIVE", phase: ctx.phase });
    }
    if buf.len() - codec::HDR_LEN < len {
        return Ok(Scan::Partial);
    }
    let body = &buf[codec::HDR_LEN..codec::HDR_LEN + len];
    let frame = match id {
        codec::AM_ID_CM => Frame::Cm,
        codec::AM_ID_PUT_REQ => Frame::PutReq(codec::decode_put_req(body).ok_or(Violation::BadLength { id, len })?),
        codec::AM_ID_PUT_ACK => Frame::PutAck(codec::decode_put_ack(body).ok_or(Violation::BadLength { id, len })?),
        codec::AM_ID_KEEPALIVE => Frame::Keepalive,
        _ => Frame::Am(id),
    };
    Ok(Scan::Frame { frame, len })
}

/// The most bytes of the handshake after the magic number: one frame
/// header and the largest connection request (IPv6).
pub const HANDSHAKE_MAX: usize = codec::HDR_LEN + codec::CONN_REQ_LEN + SOCKADDR_IN6_LEN;
const SOCKADDR_IN_LEN: usize = 16;
const SOCKADDR_IN6_LEN: usize = 28;

/// The body length of the first frame of an accepted connection, from its
/// header: only a connection request, of one of the two sizes.
pub fn handshake_frame_len(hdr: &[u8]) -> Result<usize, Violation> {
    let (id, len) = codec::get_hdr(hdr).ok_or(Violation::BadRequest(hdr.len()))?;
    let len = len as usize;
    if id != codec::AM_ID_CM {
        return Err(if id > codec::AM_ID_KEEPALIVE { Violation::UnknownId(id) } else { Violation::BeforeHandshake(id) });
    }
    if len != codec::CONN_REQ_LEN + SOCKADDR_IN_LEN && len != codec::CONN_REQ_LEN + SOCKADDR_IN6_LEN {
        return Err(Violation::BadRequest(len));
    }
    Ok(len)
}

/// Whether `magic` (the first 8 bytes of an accepted connection) is UCX's.
pub fn check_magic(magic: &[u8; codec::MAGIC_LEN]) -> Result<(), Violation> {
    let m = u64::from_ne_bytes(*magic);
    if m == codec::MAGIC { Ok(()) } else { Err(Violation::BadMagic(m)) }
}

/// Decode a connection packet body.
pub fn decode_cm(body: &[u8]) -> Result<CmEvent, Violation> {
    let ev = codec::conn_event(body);
    match ev {
        Some(codec::EV_CONN_REQ) => {
            let req = codec::decode_conn_req(body).ok_or(Violation::BadRequest(body.len()))?;
            let want = codec::CONN_REQ_LEN
                + if req.addr.family == crate::sys::addr::AF_INET { SOCKADDR_IN_LEN } else { SOCKADDR_IN6_LEN };
            if body.len() != want {
                return Err(Violation::BadRequest(body.len()));
            }
            Ok(CmEvent::Req(req))
        }
        Some(e @ (codec::EV_CONN_ACK | codec::EV_CONN_ACK_WITH_REQ | codec::EV_CONN_FIN)) => {
            if body.len() != codec::EVENT_LEN {
                return Err(Violation::BadLength { id: codec::AM_ID_CM, len: body.len() });
            }
            Ok(match e {
                codec::EV_CONN_ACK => CmEvent::Ack,
                codec::EV_CONN_ACK_WITH_REQ => CmEvent::AckWithReq,
                _ => CmEvent::Fin,
            })
        }
        _ => Err(Violation::BadEvent(ev)),
    }
}

/// Whether the connection's state machine expects `ev`.
pub fn check_cm(ev: &CmEvent, c: &CmCtx) -> Result<(), Violation> {
    let unexpected = |event| Err(Violation::Unexpected { event, phase: c.phase });
    match ev {
        CmEvent::Req(req) => match c.phase {
            Phase::Handshake => Ok(()),
            Phase::Connected => {
                // The peer takes over the connection we opened: its request
                // names our connection (sequence number and address).
                if c.rx_cap {
                    return Err(Violation::SecondRequest);
                }
                let to_ep = req.flags & codec::REQ_FLAG_CONNECT_TO_EP != 0;
                if to_ep || req.cm_id != c.cm_id || !c.peer.is_some_and(|p| p.same(&req.addr)) {
                    return Err(Violation::RequestMismatch);
                }
                Ok(())
            }
            _ => unexpected("CONN_REQ"),
        },
        CmEvent::Ack | CmEvent::AckWithReq => {
            if !c.req_sent || !data_phase(c.phase) {
                return unexpected(if *ev == CmEvent::Ack { "CONN_ACK" } else { "CONN_ACK|REQ" });
            }
            Ok(())
        }
        CmEvent::Fin => {
            if !c.rx_cap || !data_phase(c.phase) {
                return unexpected("CONN_FIN");
            }
            Ok(())
        }
    }
}

/// Whether a put acknowledgement for `sn` is one the peer may send: a put
/// of ours waits for it (`waiting`, the last one sent being `last_sent`)
/// and `sn` is at or before that put. The peer acknowledges each put it
/// received once, in order (several at once with the last one's number),
/// so any other acknowledgement would complete flushes for data that
/// never arrived.
pub fn check_put_ack(sn: u32, waiting: bool, last_sent: u32) -> Result<(), Violation> {
    if !waiting {
        return Err(Violation::UnaskedAck { sn, last_sent: None });
    }
    if !codec::sn_le(sn, last_sent) {
        return Err(Violation::UnaskedAck { sn, last_sent: Some(last_sent) });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(id: u8, body: &[u8]) -> Vec<u8> {
        let mut v = vec![0u8; codec::HDR_LEN];
        codec::put_hdr(&mut v, id, body.len() as u32);
        v.extend_from_slice(body);
        v
    }

    #[test]
    fn put_ack_needs_a_put_waiting() {
        assert_eq!(check_put_ack(5, true, 5), Ok(()));
        assert_eq!(check_put_ack(4, true, 5), Ok(()));
        assert_eq!(check_put_ack(u32::MAX, true, 1), Ok(()));
        assert_eq!(check_put_ack(6, true, 5), Err(Violation::UnaskedAck { sn: 6, last_sent: Some(5) }));
        assert_eq!(check_put_ack(5, false, 5), Err(Violation::UnaskedAck { sn: 5, last_sent: None }));
    }

    const OPEN: RxCtx = RxCtx { phase: Phase::Connected, rx_cap: true, max_len: 1000 };

    #[test]
    fn frames() {
        assert_eq!(classify(&[1, 2], &OPEN), Ok(Scan::Partial));
        let f = frame(3, &[9; 10]);
        assert_eq!(classify(&f, &OPEN), Ok(Scan::Frame { frame: Frame::Am(3), len: 10 }));
        assert_eq!(classify(&f[..10], &OPEN), Ok(Scan::Partial));
        assert_eq!(classify(&frame(40, &[]), &OPEN), Err(Violation::UnknownId(40)));
        let long = frame(3, &[0; 1001]);
        assert_eq!(classify(&long[..5], &OPEN), Err(Violation::TooLong { len: 1001, max: 1000 }));
        // a put request is exactly its header
        let mut p = [0u8; codec::PUT_REQ_LEN];
        codec::encode_put_req(&mut p, &PutReq { addr: 0x1000, length: 5, sn: 1 });
        assert_eq!(classify(&frame(codec::AM_ID_PUT_REQ, &p), &OPEN),
                   Ok(Scan::Frame { frame: Frame::PutReq(PutReq { addr: 0x1000, length: 5, sn: 1 }), len: 20 }));
        assert_eq!(classify(&frame(codec::AM_ID_PUT_REQ, &p[..19]), &OPEN),
                   Err(Violation::BadLength { id: codec::AM_ID_PUT_REQ, len: 19 }));
        // nothing but the request before the handshake; nothing without RX
        let hs = RxCtx { phase: Phase::Handshake, rx_cap: false, max_len: 1000 };
        assert_eq!(classify(&f, &hs), Err(Violation::BeforeHandshake(3)));
        assert_eq!(classify(&frame(codec::AM_ID_PUT_REQ, &p), &hs), Err(Violation::BeforeHandshake(codec::AM_ID_PUT_REQ)));
        let tx_only = RxCtx { rx_cap: false, ..OPEN };
        assert_eq!(classify(&f, &tx_only), Err(Violation::NoRx(3)));
        let ack = frame(codec::AM_ID_PUT_ACK, &7u32.to_ne_bytes());
        assert_eq!(classify(&ack, &tx_only), Ok(Scan::Frame { frame: Frame::PutAck(7), len: 4 }));
    }

    fn req(cm_id: u64, addr: SockAddr, flags: u8) -> Vec<u8> {
        let mut v = Vec::new();
        codec::encode_conn_req(&mut v, flags, cm_id, &addr);
        v
    }

    #[test]
    fn connection_events() {
        let a = SockAddr::v4([127, 0, 0, 1], 4000);
        let body = req(5, a, 0);
        let ev = decode_cm(&body).unwrap();
        assert_eq!(ev, CmEvent::Req(ConnReq { flags: 0, cm_id: 5, addr: a }));
        assert_eq!(decode_cm(&body[..20]), Err(Violation::BadRequest(20)));
        let mut long = body.clone();
        long.push(0);
        assert_eq!(decode_cm(&long), Err(Violation::BadRequest(30)));
        assert_eq!(decode_cm(&9u32.to_ne_bytes()), Err(Violation::BadEvent(Some(9))));
        assert_eq!(decode_cm(&[1]), Err(Violation::BadEvent(None)));
        assert_eq!(decode_cm(&2u32.to_ne_bytes()), Ok(CmEvent::Ack));
        assert_eq!(decode_cm(&[2, 0, 0, 0, 0]), Err(Violation::BadLength { id: codec::AM_ID_CM, len: 5 }));

        let hs = CmCtx { phase: Phase::Handshake, rx_cap: false, req_sent: false, cm_id: u64::MAX, peer: None };
        assert_eq!(check_cm(&ev, &hs), Ok(()));
        assert!(check_cm(&CmEvent::Ack, &hs).is_err());
        assert!(check_cm(&CmEvent::Fin, &hs).is_err());
        // accepted and connected: the peer may not introduce itself again
        let acc = CmCtx { phase: Phase::Connected, rx_cap: true, req_sent: false, cm_id: 5, peer: Some(a) };
        assert_eq!(check_cm(&ev, &acc), Err(Violation::SecondRequest));
        assert!(check_cm(&CmEvent::Ack, &acc).is_err());
        assert_eq!(check_cm(&CmEvent::Fin, &acc), Ok(()));
        // our connection, taken over by the peer: its request names it
        let mine = CmCtx { phase: Phase::Connected, rx_cap: false, req_sent: true, cm_id: 5, peer: Some(a) };
        assert_eq!(check_cm(&ev, &mine), Ok(()));
        assert_eq!(check_cm(&CmEvent::Req(ConnReq { flags: 0, cm_id: 6, addr: a }), &mine),
                   Err(Violation::RequestMismatch));
        assert_eq!(check_cm(&CmEvent::Ack, &mine), Ok(()));
        assert!(check_cm(&CmEvent::Fin, &mine).is_err());
        let waiting = CmCtx { phase: Phase::WaitingAck, ..mine };
        assert!(check_cm(&ev, &waiting).is_err());
        assert_eq!(check_cm(&CmEvent::AckWithReq, &waiting), Ok(()));
    }

    #[test]
    fn handshake() {
        let a = SockAddr::v4([127, 0, 0, 1], 4000);
        let f = frame(codec::AM_ID_CM, &req(1, a, 0));
        assert_eq!(handshake_frame_len(&f[..5]), Ok(29));
        assert!(f.len() <= HANDSHAKE_MAX);
        assert_eq!(handshake_frame_len(&frame(codec::AM_ID_CM, &[0; 30])[..5]), Err(Violation::BadRequest(30)));
        assert_eq!(handshake_frame_len(&frame(1, &[])[..5]), Err(Violation::BeforeHandshake(1)));
        assert!(check_magic(&codec::MAGIC.to_ne_bytes()).is_ok());
        assert!(check_magic(&[0; 8]).is_err());
    }
}
