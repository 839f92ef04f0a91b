//! The private-data exchange on the socket. Every message is a 16-byte
//! header (the data length as a native size_t at offset 0, a status byte at
//! offset 8, padding up to 16) followed by that many bytes of private data,
//! as UCX's `src/uct/tcp/sockcm/tcp_sockcm_ep.c` sends them. Here are the
//! header codec, the device address handed to the peer's callbacks, and the
//! sending and receiving of whole messages on an endpoint.

use super::state::{free_internal, st, Call, Callbacks, CmState, EpState, SockCmTl};
use crate::abi::*;
use crate::sys::addr::SockAddr;
use crate::sys::errno_str;
use crate::sys::socket::{Io, MsgFlags};
use libc::{c_char, c_void};

/// Size of the message header: size_t length, u8 status, padding.
pub const HDR_LEN: usize = 16;

/// A whole message: the header for `data` and `status`, then `data`.
pub(super) fn encode_msg(data: &[u8], status: ucs_status_t) -> Vec<u8> {
    let mut v = vec![0u8; HDR_LEN + data.len()];
    v[..8].copy_from_slice(&(data.len() as u64).to_ne_bytes());
    v[8] = status as u8;
    v[HDR_LEN..].copy_from_slice(data);
    v
}

/// The data length a received header announces.
pub(super) fn hdr_length(buf: &[u8]) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&buf[..8]);
    u64::from_ne_bytes(b)
}

/// The status a received header carries.
pub(super) fn hdr_status(buf: &[u8]) -> ucs_status_t {
    buf[8] as ucs_status_t
}

/// `uct_tcp_device_addr_t` of a peer: flags 0, family, then the raw IP.
pub(super) fn device_addr_of(peer: &SockAddr) -> Vec<u8> {
    let mut v = vec![0u8, peer.family as u8];
    v.extend_from_slice(peer.ip_bytes());
    v
}

/// A device name as the NUL-terminated array of the callback arguments.
pub(super) fn dev_name_array(name: &str) -> [c_char; UCT_DEVICE_NAME_MAX] {
    let mut out = [0 as c_char; UCT_DEVICE_NAME_MAX];
    for (o, b) in out.iter_mut().zip(name.bytes().take(UCT_DEVICE_NAME_MAX - 1)) {
        *o = b as c_char;
    }
    out
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

    /// Read what the socket has of the current message; handle it when
    /// complete.
    pub(super) fn on_readable(&self, state: &mut CmState, id: u64) -> Call {
        loop {
            let max = self.priv_data_len;
            let Some(ep) = state.eps.get_mut(&id) else { return Call::None };
            let want = if ep.rx.len() < HDR_LEN {
                HDR_LEN
            } else {
                let len = hdr_length(&ep.rx);
                if len > max as u64 {
                    crate::error!("tcp sockcm: {} ep {:p} got a message of {} bytes (at most {} allowed)",
                                  ep.side(), ep.handle, len, max);
                    return self.fail(state, id, UCS_ERR_IO_ERROR);
                }
                HDR_LEN + len as usize
            };
            if ep.rx.len() == want && want >= HDR_LEN && ep.rx.len() >= HDR_LEN {
                return self.on_message(state, id);
            }
            let have = ep.rx.len();
            ep.rx.resize(want, 0);
            match ep.sock.recv(&mut ep.rx[have..want], MsgFlags::MSG_DONTWAIT) {
                Io::Again => {
                    ep.rx.truncate(have);
                    return Call::None;
                }
                // (`want > have`: the buffer is never empty.)
                Io::Closed | Io::Done(0) => {
                    ep.rx.truncate(have);
                    if ep.flags & st::REJECT_CALLED != 0 {
                        free_internal(state, id);
                        return Call::None;
                    }
                    let s = Self::remote_gone_status(ep);
                    crate::debug!("tcp sockcm: {} ep {:p} (fd {}): the peer closed the connection",
                                  ep.side(), ep.handle, ep.fd());
                    return self.fail(state, id, s);
                }
                Io::Done(n) => ep.rx.truncate(have + n),
                Io::Err(e) => {
                    ep.rx.truncate(have);
                    crate::debug!("tcp sockcm: {} ep {:p} recv failed: {}", ep.side(), ep.handle,
                                  errno_str(e as i32));
                    if ep.flags & st::REJECT_CALLED != 0 {
                        free_internal(state, id);
                        return Call::None;
                    }
                    let s = Self::remote_gone_status(ep);
                    return self.fail(state, id, s);
                }
            }
        }
    }

    /// Call the user's pack callback for up to `priv_data_len` bytes.
    pub(super) fn invoke_pack(&self, cbs: Callbacks, dev: &str) -> Result<Vec<u8>, ucs_status_t> {
        let Some(pack) = cbs.pack else { return Ok(Vec::new()) };
        let args = uct_cm_ep_priv_data_pack_args_t {
            field_mask: UCT_CM_EP_PRIV_DATA_PACK_ARGS_FIELD_DEVICE_NAME,
            dev_name: dev_name_array(dev),
        };
        let mut buf = vec![0u8; self.priv_data_len];
        // SAFETY: the user's callback; `buf` holds priv_data_len bytes,
        // the most it may write (max_conn_priv).
        let r = unsafe { pack(cbs.user_data, &args, buf.as_mut_ptr() as *mut c_void) };
        if r < 0 {
            let s = r.max(i8::MIN as isize) as ucs_status_t;
            crate::debug!("tcp sockcm: private data pack callback failed: {}", crate::core::log::status_str(s));
            return Err(s);
        }
        if r as usize > self.priv_data_len {
            crate::debug!("tcp sockcm: pack callback returned {} bytes (at most {})", r, self.priv_data_len);
            return Err(UCS_ERR_EXCEEDS_LIMIT);
        }
        buf.truncate(r as usize);
        Ok(buf)
    }
}
