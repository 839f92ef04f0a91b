//! The frames of a tcp connection as the receive path classifies them
//! (`transports::tcp::proto::classify`, and `handshake_frame_len` for the
//! first frame of an accepted connection).
//!
//! Input: byte 0 picks the connection's state (phase, receive direction),
//! byte 1 the receive segment; the rest is the stream, classified frame
//! after frame as the receive path does (the data of a put skipped).
//!
//! Invariants checked on every input:
//! - a frame's body lies inside the input, within the segment, and the
//!   decoded frame agrees with its header (id, fixed lengths, the put
//!   request and acknowledgement re-encoding to their bytes);
//! - no active message or put is accepted without the receive direction
//!   or before the handshake, and before the handshake only connection
//!   packets are;
//! - "partial" is said only when the header or the body is incomplete, and
//!   a rejected frame is rejected again, the same way, with more bytes
//!   after it (the verdict never depends on bytes past the frame);
//! - the handshake accepts only a connection packet of one of the two
//!   request sizes.

use uct::transports::tcp::proto::{self, Frame, Phase, RxCtx, Scan};
use uct::transports::tcp::codec;

pub fn run(data: &[u8]) {
    if data.len() < 2 {
        return;
    }
    let phase = match data[0] & 3 {
        0 => Phase::Handshake,
        1 => Phase::WaitingAck,
        2 => Phase::Connected,
        _ => Phase::Other,
    };
    let rx_cap = data[0] & 4 != 0;
    let max_len = match data[1] % 4 {
        0 => 0,
        1 => 64,
        2 => 1000,
        _ => 65536,
    };
    let ctx = RxCtx { phase, rx_cap, max_len };
    let stream = &data[2..];
    handshake(stream);
    let mut off = 0;
    while off <= stream.len() {
        let buf = &stream[off..];
        let r = proto::classify(buf, &ctx);
        let mut longer = buf.to_vec();
        longer.extend_from_slice(&[0xa5; 64]);
        match r {
            Ok(Scan::Partial) => {
                match codec::get_hdr(buf) {
                    None => assert!(buf.len() < codec::HDR_LEN),
                    Some((_, l)) => assert!(buf.len() - codec::HDR_LEN < l as usize),
                }
                break;
            }
            Ok(Scan::Frame { frame, len }) => {
                assert!(codec::HDR_LEN + len <= buf.len());
                assert!(len <= max_len);
                let (id, l) = codec::get_hdr(buf).unwrap();
                assert_eq!(l as usize, len);
                let body = &buf[codec::HDR_LEN..codec::HDR_LEN + len];
                let data_ok = rx_cap && matches!(phase, Phase::Connected | Phase::WaitingAck);
                if phase == Phase::Handshake {
                    assert_eq!(frame, Frame::Cm);
                }
                let mut skip = 0;
                match frame {
                    Frame::Am(a) => {
                        assert_eq!(a, id);
                        assert!(a < codec::AM_ID_MAX && data_ok);
                    }
                    Frame::PutReq(p) => {
                        assert!(id == codec::AM_ID_PUT_REQ && len == codec::PUT_REQ_LEN && data_ok);
                        let mut b = [0u8; codec::PUT_REQ_LEN];
                        codec::encode_put_req(&mut b, &p);
                        assert_eq!(&b[..], body);
                        skip = p.length.min((buf.len() - codec::HDR_LEN - len) as u64) as usize;
                    }
                    Frame::PutAck(sn) => {
                        assert!(id == codec::AM_ID_PUT_ACK && len == codec::PUT_ACK_LEN);
                        assert_eq!(&sn.to_ne_bytes()[..], body);
                    }
                    Frame::Keepalive => assert_eq!(id, codec::AM_ID_KEEPALIVE),
                    Frame::Cm => {
                        assert_eq!(id, codec::AM_ID_CM);
                        // the connection packet's own target checks more
                        let _ = proto::decode_cm(body);
                    }
                }
                // more bytes after the frame change nothing
                assert_eq!(proto::classify(&longer, &ctx), r);
                off += codec::HDR_LEN + len + skip;
            }
            Err(v) => {
                assert_eq!(proto::classify(&longer, &ctx), Err(v));
                let (id, _) = codec::get_hdr(buf).expect("a verdict needs a header");
                if phase == Phase::Handshake && id != codec::AM_ID_CM {
                    assert!(matches!(v, proto::Violation::BeforeHandshake(_) | proto::Violation::TooLong { .. }
                                        | proto::Violation::UnknownId(_)));
                }
                break;
            }
        }
    }
}

fn handshake(stream: &[u8]) {
    if stream.len() < codec::HDR_LEN {
        return;
    }
    let (id, l) = codec::get_hdr(stream).unwrap();
    match proto::handshake_frame_len(&stream[..codec::HDR_LEN]) {
        Ok(n) => {
            assert_eq!(id, codec::AM_ID_CM);
            assert_eq!(n, l as usize);
            assert!(n == codec::CONN_REQ_LEN + 16 || n == codec::CONN_REQ_LEN + 28);
            assert!(codec::HDR_LEN + n <= proto::HANDSHAKE_MAX);
        }
        Err(_) => assert!(id != codec::AM_ID_CM || (l as usize != codec::CONN_REQ_LEN + 16
                                                   && l as usize != codec::CONN_REQ_LEN + 28)),
    }
    if stream.len() >= codec::MAGIC_LEN {
        let mut m = [0u8; codec::MAGIC_LEN];
        m.copy_from_slice(&stream[..codec::MAGIC_LEN]);
        assert_eq!(proto::check_magic(&m).is_ok(), u64::from_ne_bytes(m) == codec::MAGIC);
    }
}
