//! The private-data exchange on the socket (the message format and its
//! checks are in `proto`): the device address handed to the peer's
//! callbacks, and the sending and receiving of whole messages on an
//! endpoint. The peer is not trusted: what it sends goes through
//! `proto::step`, which refuses bad headers before their data is read, and
//! receive buffers grow only with the bytes that really arrived.

use super::proto::{encode_msg, expect, step, Event, Expect, Violation, HDR_LEN};
use super::state::{free_internal, st, Call, Callbacks, CmState, EpState, SockCmTl};
use crate::abi::*;
use crate::sys::addr::SockAddr;
use crate::sys::errno_str;
use crate::sys::socket::{Io, MsgFlags};

/// `uct_tcp_device_addr_t` of a peer: flags 0, family, then the raw IP.
pub(super) fn device_addr_of(peer: &SockAddr) -> Vec<u8> {
    let mut v = vec![0u8, peer.family as u8];
    v.extend_from_slice(peer.ip_bytes());
    v
}

impl SockCmTl {
    /// Status the peer's going away means: a client whose request got no
    /// answer at all was turned away by the network (or the server's
    /// process), anything later is a reset.
    fn remote_gone_status(ep: &EpState) -> ucs_status_t {
        if ep.flags & (st::CLIENT | st::DATA_SENT) == (st::CLIENT | st::DATA_SENT)
            && ep.flags & st::DATA_RECEIVED == 0 && ep.rx.len() < HDR_LEN
        {
            UCS_ERR_NOT_CONNECTED
        } else {
            UCS_ERR_CONNECTION_RESET
        }
    }

    /// Send what is queued. Err(status) when the connection broke.
    pub(super) fn flush_tx(&self, state: &mut CmState, id: u64) -> Result<(), ucs_status_t> {
        let Some(ep) = state.eps.get_mut(&id) else { return Ok(()) };
        while ep.tx_pending() {
            match ep.sock.send(&ep.tx[ep.tx_off..], MsgFlags::MSG_NOSIGNAL | MsgFlags::MSG_DONTWAIT) {
                Io::Again | Io::Done(0) => return Ok(()),
                Io::Done(n) => ep.tx_off += n,
                r @ (Io::Closed | Io::Err(_)) => {
                    // (A send never reports the end of the stream.)
                    let e = if let Io::Err(e) = r { e as i32 } else { libc::EPIPE };
                    crate::debug!("tcp sockcm: {} ep {:p} send failed: {}", ep.side(), ep.handle, errno_str(e));
                    ep.tx.clear();
                    ep.tx_off = 0;
                    return Err(Self::remote_gone_status(ep));
                }
            }
        }
        ep.tx.clear();
        ep.tx_off = 0;
        ep.flags |= st::DATA_SENT;
        if ep.flags & st::REJECT_CALLED != 0 {
            // The reject message is out: the request is done with.
            free_internal(state, id);
        }
        Ok(())
    }

    /// Queue a message and push out what the socket takes now; a broken
    /// connection is left for progress to report.
    pub(super) fn queue_msg(&self, state: &mut CmState, id: u64, data: &[u8], status: ucs_status_t) -> Result<(), ucs_status_t> {
        let Some(ep) = state.eps.get_mut(&id) else { return Err(UCS_ERR_INVALID_PARAM) };
        ep.tx = encode_msg(data, status);
        ep.tx_off = 0;
        if ep.flags & (st::SERVER | st::RESOLVED) != 0 {
            self.flush_tx(state, id)
        } else {
            Ok(())
        }
    }

    /// Read what the socket has of the next message and act on it once
    /// `proto::step` decides: a whole message goes to `on_message`, a
    /// violation closes the connection (with one log line).
    pub(super) fn on_readable(&self, state: &mut CmState, id: u64) -> Call {
        let max = self.priv_data_len;
        let mut chunk = [0u8; 4096];
        loop {
            let Some(ep) = state.eps.get_mut(&id) else { return Call::None };
            let mut rx = std::mem::take(&mut ep.rx);
            let want = match step(ep.flags, &rx, max) {
                (Event::Need(n), _) => n,
                (Event::Close(v), _) => return self.violation(state, id, v),
                (Event::ConnRequest(_), _) if Self::more_bytes_waiting(ep) => {
                    // The request came with bytes after it, which no
                    // client may send before the server answered: the
                    // request is not handed over.
                    return self.violation(state, id, Violation::Unexpected(Expect::Nothing));
                }
                (ev, flags) => {
                    ep.flags = flags;
                    return self.on_message(state, id, ev);
                }
            };
            let n = want.min(chunk.len());
            match ep.sock.recv(&mut chunk[..n], MsgFlags::MSG_DONTWAIT) {
                Io::Again => {
                    ep.rx = rx;
                    return Call::None;
                }
                // (`n > 0`: a zero-length read is the end of the stream.)
                Io::Closed | Io::Done(0) => {
                    ep.rx = rx;
                    return self.peer_closed(state, id, None);
                }
                Io::Done(k) => {
                    rx.extend_from_slice(&chunk[..k]);
                    ep.rx = rx;
                }
                Io::Err(e) => {
                    ep.rx = rx;
                    return self.peer_closed(state, id, Some(e as i32));
                }
            }
        }
    }

    /// Whether the socket already holds bytes past the message just read.
    fn more_bytes_waiting(ep: &EpState) -> bool {
        let mut b = [0u8; 1];
        matches!(ep.sock.recv(&mut b, MsgFlags::MSG_PEEK | MsgFlags::MSG_DONTWAIT), Io::Done(n) if n > 0)
    }

    /// The peer broke the protocol on endpoint `id`: one error line, and
    /// the connection is closed (reported to its owner, if any).
    fn violation(&self, state: &mut CmState, id: u64, v: Violation) -> Call {
        let Some(ep) = state.eps.get(&id) else { return Call::None };
        let peer = ep.sock.peer_addr().map(|a| a.to_string()).unwrap_or_else(|_| "?".into());
        crate::error!("tcp sockcm: {} ep {:p} (fd {}, peer {}): {}; closing the connection", ep.side(), ep.handle,
                      ep.fd(), peer, v);
        let call = self.fail(state, id, UCS_ERR_IO_ERROR);
        if let Some(ep) = state.eps.get(&id) {
            // Kept until its owner lets it go: the peer sees the end now.
            let _ = ep.sock.shutdown_write();
        }
        call
    }

    /// The peer closed the connection (or it broke, `err`) while endpoint
    /// `id` waited for bytes. A message cut short is logged as an error;
    /// a request never started is a client that connected and left.
    fn peer_closed(&self, state: &mut CmState, id: u64, err: Option<i32>) -> Call {
        let Some(ep) = state.eps.get(&id) else { return Call::None };
        let what = match err {
            Some(e) => format!("recv failed: {}", errno_str(e)),
            None => "the peer closed the connection".to_string(),
        };
        let e = expect(ep.flags);
        if !ep.rx.is_empty() {
            crate::error!("tcp sockcm: {} ep {:p} (fd {}): {} after {} bytes of {}", ep.side(), ep.handle, ep.fd(),
                          what, ep.rx.len(), e.name());
        } else if e == Expect::Request {
            crate::diag!("tcp sockcm: server ep {:p} (fd {}): {} before sending its connection request",
                         ep.handle, ep.fd(), what);
        } else {
            crate::debug!("tcp sockcm: {} ep {:p} (fd {}): {}", ep.side(), ep.handle, ep.fd(), what);
        }
        let s = Self::remote_gone_status(ep);
        self.fail(state, id, s)
    }

    /// Call the user's pack callback for up to `priv_data_len` bytes.
    pub(super) fn invoke_pack(&self, cbs: Callbacks, dev: &str) -> Result<Vec<u8>, ucs_status_t> {
        crate::core::cm::invoke_pack(&cbs, dev, self.priv_data_len, "tcp sockcm")
    }
}
