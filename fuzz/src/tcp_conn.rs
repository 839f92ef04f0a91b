//! The connection packets of the tcp transport: decoding
//! (`transports::tcp::proto::decode_cm`) and the state machine's verdict
//! on a decoded event (`proto::check_cm`).
//!
//! Input: the body of a connection packet (what follows the frame header).
//!
//! Invariants checked on every input:
//! - a decoded request is exactly as long as its fixed part and one socket
//!   address of its family, and encodes back to a packet that decodes to
//!   the same request (an IPv4 address's padding is not kept);
//! - other events are exactly 4 bytes, the event number they decode from;
//! - the verdict, over every state the connection can be in: before the
//!   handshake only a request passes; an acknowledgement needs a request of
//!   ours, a FIN the receive direction; a request on a connected
//!   connection passes only once, naming that connection (sequence number
//!   and peer address, not CONNECT_TO_EP); nothing passes in the other
//!   states; the same question gets the same answer.

use uct::sys::addr::{SockAddr, AF_INET};
use uct::transports::tcp::proto::{self, CmCtx, CmEvent, Phase};
use uct::transports::tcp::codec;

pub fn run(data: &[u8]) {
    let r = proto::decode_cm(data);
    assert_eq!(proto::decode_cm(data), r);
    let Ok(ev) = r else { return };
    match ev {
        CmEvent::Req(req) => {
            let want = codec::CONN_REQ_LEN + if req.addr.family == AF_INET { 16 } else { 28 };
            assert_eq!(data.len(), want);
            let mut out = Vec::new();
            codec::encode_conn_req(&mut out, req.flags, req.cm_id, &req.addr);
            assert_eq!(out.len(), data.len());
            assert_eq!(proto::decode_cm(&out), Ok(ev));
            assert_eq!(&out[..codec::CONN_REQ_LEN], &data[..codec::CONN_REQ_LEN]);
        }
        CmEvent::Ack | CmEvent::AckWithReq | CmEvent::Fin => {
            assert_eq!(data.len(), codec::EVENT_LEN);
            let n = u32::from_ne_bytes([data[0], data[1], data[2], data[3]]);
            let want = match ev {
                CmEvent::Ack => codec::EV_CONN_ACK,
                CmEvent::AckWithReq => codec::EV_CONN_ACK_WITH_REQ,
                _ => codec::EV_CONN_FIN,
            };
            assert_eq!(n, want);
        }
    }
    let other = SockAddr::v4([10, 0, 0, 1], 1);
    let (cm_id, addr) = match ev {
        CmEvent::Req(r) => (r.cm_id, r.addr),
        _ => (7, other),
    };
    for phase in [Phase::Handshake, Phase::WaitingAck, Phase::Connected, Phase::Other] {
        for bits in 0..8u8 {
            for (id, peer) in [(cm_id, Some(addr)), (cm_id ^ 1, Some(addr)), (cm_id, Some(other)), (cm_id, None)] {
                let c = CmCtx { phase, rx_cap: bits & 1 != 0, req_sent: bits & 2 != 0, cm_id: id, peer };
                let v = proto::check_cm(&ev, &c);
                assert_eq!(proto::check_cm(&ev, &c), v);
                if v.is_err() {
                    continue;
                }
                match ev {
                    CmEvent::Req(r) => match phase {
                        Phase::Handshake => {}
                        Phase::Connected => {
                            assert!(!c.rx_cap && r.cm_id == id && peer.is_some_and(|p| p.same(&r.addr)));
                            assert_eq!(r.flags & codec::REQ_FLAG_CONNECT_TO_EP, 0);
                        }
                        _ => panic!("a request passed in {phase:?}"),
                    },
                    CmEvent::Ack | CmEvent::AckWithReq => {
                        assert!(c.req_sent && matches!(phase, Phase::Connected | Phase::WaitingAck))
                    }
                    CmEvent::Fin => assert!(c.rx_cap && matches!(phase, Phase::Connected | Phase::WaitingAck)),
                }
            }
        }
    }
}
