//! Listeners: creating the listening socket (`uct_listener_create`),
//! accepting connections as server endpoints that wait for the client's
//! private data, and the listener object the generic CM layer holds
//! (query, `uct_listener_reject`, destroy).

use super::cm::SockCm;
use super::ep::stream_socket;
use super::state::{free_internal, next_id, pending, st, user_addr, Callbacks, CmEp, CmIface, CmState, EpState,
                   ListenerState, SockCmTl};
use crate::abi::*;
use crate::core::cm::ListenerImpl;
use crate::sys::{bind_errno_status, errno_str, netif, Errno};
use std::time::{Duration, Instant};

impl SockCm {
    /// The listening socket and its state for `uct_listener_create`.
    pub(super) fn create_listener(&self, addr: *const libc::sockaddr, len: libc::socklen_t,
                                  params: &uct_listener_params_t, listener: uct_listener_h)
                                  -> Result<Box<dyn ListenerImpl>, ucs_status_t> {
        if params.field_mask & UCT_LISTENER_PARAM_FIELD_CONN_REQUEST_CB == 0 || params.conn_request_cb.is_none() {
            crate::error!("tcp sockcm: a listener needs UCT_LISTENER_PARAM_FIELD_CONN_REQUEST_CB");
            return Err(UCS_ERR_INVALID_PARAM);
        }
        let backlog = crate::core::cm::listener_backlog(params, netif::somaxconn(), "tcp sockcm")?;
        // SAFETY: the user's listener address: NULL or `len` readable bytes.
        let at = unsafe { user_addr(addr, len) }?;
        let tl = self.tl();
        let sk = stream_socket(at.family)?;
        if tl.reuse_addr {
            if let Err(e) = sk.set_reuseaddr(true) {
                crate::error!("tcp sockcm: setsockopt(SO_REUSEADDR) failed: {}", errno_str(e as i32));
                return Err(UCS_ERR_IO_ERROR);
            }
        }
        if let Err(e) = sk.bind(&at) {
            crate::error!("tcp sockcm: bind(fd {}) failed: {}", sk.fd(), errno_str(e as i32));
            return Err(bind_errno_status(e));
        }
        if let Err(e) = sk.listen(backlog) {
            crate::error!("tcp sockcm: listen(fd {}, backlog {}) failed: {}", sk.fd(), backlog, errno_str(e as i32));
            return Err(UCS_ERR_IO_ERROR);
        }
        let id = next_id();
        crate::debug!("tcp sockcm: listener {:p} listening on fd {}", listener, sk.fd());
        tl.lock().listeners.insert(id, ListenerState {
            handle: listener,
            sock: sk,
            conn_request_cb: params.conn_request_cb,
            user_data: if params.field_mask & UCT_LISTENER_PARAM_FIELD_USER_DATA != 0 {
                params.user_data
            } else {
                std::ptr::null_mut()
            },
            paused_until: None,
            armed: 0,
        });
        tl.mark_busy();
        tl.sync(&mut tl.lock(), id);
        Ok(Box::new(SockListener { iface: self.iface, id }))
    }
}

impl SockCmTl {
    /// Accept every connection waiting on listener `lid`, each as a new
    /// server endpoint that waits for the client's private data (within
    /// the handshake timeout). When the process is out of descriptors or
    /// memory the listener pauses for `ACCEPT_PAUSE` (the connections wait
    /// in the backlog) instead of failing on every progress call.
    pub(super) fn accept_all(&self, lid: u64) {
        loop {
            let mut s = self.lock();
            let Some(l) = s.listeners.get_mut(&lid) else { return };
            let sock = match l.sock.accept() {
                Ok(Some((sk, _))) => sk,
                Ok(None) => return,
                Err(e) if matches!(e, Errno::EMFILE | Errno::ENFILE | Errno::ENOBUFS | Errno::ENOMEM) => {
                    crate::error!("tcp sockcm: accept on listener {:p} failed: {}; not accepting for {} ms",
                                  l.handle, errno_str(e as i32), ACCEPT_PAUSE.as_millis());
                    l.paused_until = Some(Instant::now() + ACCEPT_PAUSE);
                    self.sync(&mut s, lid);
                    self.arm_clock(&mut s);
                    return;
                }
                Err(e) if matches!(e, Errno::ECONNABORTED | Errno::EINTR | Errno::EPROTO) => {
                    // The connection went before it was taken: try the next.
                    crate::debug!("tcp sockcm: accept on listener {:p}: {}", l.handle, errno_str(e as i32));
                    continue;
                }
                Err(e) => {
                    crate::error!("tcp sockcm: accept on listener {:p} failed: {}", l.handle, errno_str(e as i32));
                    return;
                }
            };
            let listener_iface = self as *const SockCmTl;
            if let Err(st) = self.apply_sockopts(&sock) {
                crate::error!("tcp sockcm: could not set up an accepted socket: {}", crate::core::log::status_str(st));
                continue;
            }
            let id = next_id();
            let handle = self.new_ep_handle(id);
            crate::debug!("tcp sockcm: listener accepted fd {} as server ep {:p} (cm {:p})", sock.fd(), handle,
                          listener_iface);
            if let Some(t) = self.handshake_timeout {
                s.handshake_deadlines.push_back((Instant::now() + t, id));
            }
            s.eps.insert(id, EpState {
                handle,
                sock,
                flags: st::SERVER,
                cbs: Callbacks::NONE,
                listener: lid,
                tx: Vec::new(),
                tx_off: 0,
                rx: Vec::new(),
                polled: true,
                armed: 0,
            });
            self.mark_busy();
            self.sync(&mut s, id);
            self.arm_clock(&mut s);
        }
    }

    /// Close the accepted connections whose handshake time is over and
    /// that have not delivered their connection request. Cheap when
    /// nothing is due: one look at the front of the queue.
    pub(super) fn expire_handshakes(&self, s: &mut CmState, now: Instant) {
        while let Some(&(t, id)) = s.handshake_deadlines.front() {
            if t > now {
                return;
            }
            s.handshake_deadlines.pop_front();
            let Some(ep) = s.eps.get(&id) else { continue };
            if ep.flags & (st::SERVER | st::CONN_REQ_GIVEN | st::SERVER_CREATED) != st::SERVER {
                continue;
            }
            let peer = ep.sock.peer_addr().map(|a| a.to_string()).unwrap_or_else(|_| "?".into());
            crate::error!("tcp sockcm: server ep {:p} (fd {}, peer {}) sent {} bytes of its connection request \
                           within the handshake timeout ({:?}); closing the connection",
                          ep.handle, ep.fd(), peer, ep.rx.len(), self.handshake_timeout.unwrap_or_default());
            free_internal(s, id);
        }
    }
}

/// How long a listener stops accepting after running out of descriptors.
const ACCEPT_PAUSE: Duration = Duration::from_millis(100);

/// The listener object behind a `uct_listener_h`: its key in the CM's state.
struct SockListener {
    iface: *mut CmIface,
    id: u64,
}

impl SockListener {
    fn tl(&self) -> &SockCmTl {
        // SAFETY: listeners are destroyed before their CM.
        unsafe { &(*self.iface).tl }
    }
}

impl ListenerImpl for SockListener {
    fn query(&self, attr: &mut uct_listener_attr_t) -> ucs_status_t {
        if attr.field_mask & UCT_LISTENER_ATTR_FIELD_SOCKADDR != 0 {
            let s = self.tl().lock();
            let Some(l) = s.listeners.get(&self.id) else { return UCS_ERR_INVALID_PARAM };
            match l.sock.local_addr() {
                Ok(a) => attr.sockaddr = a.to_storage().0,
                Err(e) => {
                    crate::error!("tcp sockcm: getsockname on listener {:p} failed: {}", l.handle, errno_str(e as i32));
                    return UCS_ERR_IO_ERROR;
                }
            }
        }
        UCS_OK
    }

    fn reject(&self, conn_request: uct_conn_request_h) -> ucs_status_t {
        let handle = conn_request as uct_ep_h;
        let Some(origin) = pending().remove(&(handle as usize)) else {
            crate::error!("tcp sockcm: {:p} is not a pending connection request", conn_request);
            return UCS_ERR_INVALID_PARAM;
        };
        // SAFETY: pending requests are live endpoints of a live CM iface.
        let (origin, id) = unsafe { (&*(origin as *const CmIface), (*(handle as *const CmEp)).tl.id) };
        let tl = &origin.tl;
        let mut s = tl.lock();
        let Some(e) = s.eps.get_mut(&id) else { return UCS_ERR_INVALID_PARAM };
        if e.flags & st::FAILED != 0 {
            free_internal(&mut s, id);
            return UCS_ERR_NOT_CONNECTED;
        }
        e.flags |= st::REJECT_CALLED;
        crate::debug!("tcp sockcm: rejecting connection request {:p} (fd {})", handle, e.fd());
        match tl.queue_msg(&mut s, id, &[], UCS_ERR_REJECTED) {
            Ok(()) => {
                tl.sync(&mut s, id);
                UCS_OK
            }
            Err(st) => {
                free_internal(&mut s, id);
                st
            }
        }
    }
}

impl Drop for SockListener {
    fn drop(&mut self) {
        let mut s = self.tl().lock();
        if let Some(l) = s.listeners.remove(&self.id) {
            crate::debug!("tcp sockcm: listener {:p} (fd {}) destroyed", l.handle, l.sock.fd());
        }
        // Its connections that have not reached the user go with it.
        let unseen: Vec<u64> = s.eps.iter()
            .filter(|(_, e)| e.listener == self.id
                    && e.flags & (st::SERVER | st::CONN_REQ_GIVEN | st::SERVER_CREATED) == st::SERVER)
            .map(|(&id, _)| id)
            .collect();
        for id in unseen {
            free_internal(&mut s, id);
        }
    }
}
