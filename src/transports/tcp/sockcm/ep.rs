//! Endpoints of both sides: creating a client endpoint (from a server
//! address) and a server endpoint (from a connection request); the state
//! machine (how a failure is reported to the upper layer, what a received
//! message means to a client or a server, a client's finished connection
//! attempt); the callback checks shared by both kinds of endpoint; and the
//! endpoint operations of the CM's iface (`uct_ep_connect`,
//! `uct_ep_disconnect`, `uct_cm_client_ep_conn_notify`, query, destroy).

use super::cm::SockCm;
use super::state::{free_internal, ifname_of, next_id, pending, st, user_addr, Call, Callbacks, CmEp, CmIface,
                   CmState, EpState, SockCmEp, SockCmTl};
use super::proto::Event;
use super::sockio::device_addr_of;
use crate::abi::*;
use crate::core::iface::{Ep, EpParams, Iface, Internal, InternalOps, Transport};
use crate::sys::socket::Socket;
use crate::sys::{connect_errno_status, errno_str, Errno};

impl SockCmTl {
    /// The endpoint failed (peer closed, reset, rejected, local error):
    /// stop watching it and tell the upper layer through whichever callback
    /// is pending, as the C original does.
    pub(super) fn fail(&self, state: &mut CmState, id: u64, status: ucs_status_t) -> Call {
        let Some(ep) = state.eps.get_mut(&id) else { return Call::None };
        crate::debug!("tcp sockcm: {} ep {:p} (fd {}) failed: {}", ep.side(), ep.handle, ep.fd(),
                      crate::core::log::status_str(status));
        if ep.flags & (st::SERVER | st::SERVER_CREATED | st::CONN_REQ_GIVEN) == st::SERVER
            || ep.flags & st::REJECT_CALLED != 0
        {
            // A connection nobody has seen yet, or one the user rejected
            // (and so no longer owns): just drop it.
            free_internal(state, id);
            return Call::None;
        }
        ep.polled = false;
        let mut call = Call::None;
        if ep.flags & st::UPPER_CB_FAILED == 0 && ep.flags & (st::SERVER_CREATED | st::CLIENT) != 0 {
            let (handle, cbs) = (ep.handle, ep.cbs);
            if ep.connected() {
                ep.flags |= st::DISCONNECTED;
                call = Call::Disconnect { handle, cbs };
            } else if ep.flags & st::CLIENT != 0 {
                if ep.flags & st::RESOLVED != 0 || cbs.resolve.is_none() {
                    ep.flags |= st::CLIENT_CONNECTED;
                    call = Call::ClientConnect { handle, cbs, remote: None, status };
                } else {
                    ep.flags |= st::RESOLVED;
                    let dev = ifname_of(&ep.sock).unwrap_or_default();
                    call = Call::Resolve { handle, cbs, dev, status, id };
                }
            } else {
                ep.flags |= st::SERVER_NOTIFIED;
                call = Call::ServerNotify { handle, cbs, status };
            }
        }
        ep.flags |= st::FAILED;
        call
    }

    /// Endpoint `id` received a whole message, checked by `proto::step`
    /// (which already set the flags it implies).
    pub(super) fn on_message(&self, state: &mut CmState, id: u64, ev: Event<'_>) -> Call {
        let Some(ep) = state.eps.get_mut(&id) else { return Call::None };
        match ev {
            Event::Notify(status) => Call::ServerNotify { handle: ep.handle, cbs: ep.cbs, status },
            Event::ConnRequest(data) => {
                let (handle, lid) = (ep.handle, ep.listener);
                let Some(l) = state.listeners.get(&lid) else {
                    crate::debug!("tcp sockcm: connection request on a destroyed listener dropped");
                    free_internal(state, id);
                    return Call::None;
                };
                let (listener, cb, user_data) = (l.handle, l.conn_request_cb, l.user_data);
                let Some(sock) = state.eps.get(&id).map(|e| &e.sock) else { return Call::None };
                let dev = match ifname_of(sock) {
                    Ok(d) => d,
                    Err(s) => return self.fail_unseen(state, id, s),
                };
                let Ok(peer) = sock.peer_addr() else {
                    return self.fail_unseen(state, id, UCS_ERR_CONNECTION_RESET);
                };
                let dev_addr = device_addr_of(&peer);
                let peer = peer.to_storage();
                Call::ConnRequest { listener, cb, user_data, handle, dev, dev_addr,
                                   data: crate::core::cm::PrivData::new(data, self.priv_data_len), peer }
            }
            Event::Rejected => {
                crate::debug!("tcp sockcm: client ep {:p} was rejected by the server", ep.handle);
                self.fail(state, id, UCS_ERR_REJECTED)
            }
            Event::Connected(data) => {
                let remote = ep.sock.peer_addr().ok().map(|p| device_addr_of(&p));
                let Some(dev_addr) = remote else {
                    ep.flags &= !st::CLIENT_CONNECTED;
                    return self.fail(state, id, UCS_ERR_CONNECTION_RESET);
                };
                Call::ClientConnect { handle: ep.handle, cbs: ep.cbs, remote: Some((dev_addr, crate::core::cm::PrivData::new(data, self.priv_data_len))),
                                   status: UCS_OK }
            }
            Event::Need(_) | Event::Close(_) => Call::None,
        }
    }

    /// A server connection whose request could not be handed over: it
    /// goes before the user saw it.
    fn fail_unseen(&self, state: &mut CmState, id: u64, status: ucs_status_t) -> Call {
        if let Some(ep) = state.eps.get_mut(&id) {
            ep.flags &= !st::CONN_REQ_GIVEN;
        }
        self.fail(state, id, status)
    }

    /// A client's connection attempt finished (writable or error).
    pub(super) fn on_connected(&self, state: &mut CmState, id: u64) -> Call {
        let Some(ep) = state.eps.get_mut(&id) else { return Call::None };
        // A failed SO_ERROR query reports its own errno.
        let err = ep.sock.so_error().unwrap_or_else(|e| e as i32);
        if err != 0 {
            crate::diag!("tcp sockcm: client ep {:p} could not connect: {}", ep.handle, errno_str(err));
            return self.fail(state, id, connect_errno_status(err));
        }
        let dev = match ifname_of(&ep.sock) {
            Ok(d) => d,
            Err(s) => return self.fail(state, id, s),
        };
        ep.flags |= st::RESOLVED;
        let (handle, cbs) = (ep.handle, ep.cbs);
        if cbs.resolve.is_some() {
            Call::Resolve { handle, cbs, dev, status: UCS_OK, id }
        } else {
            Call::PackAndSend { handle, cbs, dev, id }
        }
    }
}

/// Whether `cbs` were set as UCX's common endpoint checks ask.
pub(super) fn common_callbacks(params: &uct_ep_params_t, cbs: &mut Callbacks) -> Result<(), ucs_status_t> {
    *cbs = Callbacks::common(params, "tcp sockcm")?;
    Ok(())
}

// ---------------------------------------------------------------------------
// Endpoint creation (`uct_ep_create` with `UCT_EP_PARAM_FIELD_CM`).

impl SockCm {
    /// A client endpoint: a non-blocking connection to the server's address.
    pub(super) fn client_ep(&self, params: &uct_ep_params_t) -> Result<uct_ep_h, ucs_status_t> {
        let tl = self.tl();
        let mut cbs = Callbacks::NONE;
        common_callbacks(params, &mut cbs)?;
        let m = params.field_mask;
        if m & UCT_EP_PARAM_FIELD_SOCKADDR_CONNECT_CB_CLIENT != 0 {
            if params.sockaddr_cb_client.is_none() {
                crate::error!("tcp sockcm: UCT_EP_PARAM_FIELD_SOCKADDR_CONNECT_CB_CLIENT is set but the callback is NULL");
                return Err(UCS_ERR_INVALID_PARAM);
            }
            cbs.client_connect = params.sockaddr_cb_client;
        }
        if cbs.resolve.is_some() == cbs.pack.is_some() {
            crate::error!("tcp sockcm: a client needs exactly one of UCT_EP_PARAM_FIELD_CM_RESOLVE_CB and \
                           UCT_EP_PARAM_FIELD_SOCKADDR_PACK_CB");
            return Err(UCS_ERR_INVALID_PARAM);
        }
        if params.sockaddr.is_null() {
            crate::error!("tcp sockcm: UCT_EP_PARAM_FIELD_SOCKADDR with a NULL sockaddr");
            return Err(UCS_ERR_INVALID_PARAM);
        }
        // SAFETY: checked non-NULL; a ucs_sock_addr_t of the caller.
        let sa = unsafe { &*params.sockaddr };
        // SAFETY: a ucs_sock_addr_t names `addrlen` readable bytes (or NULL).
        let server = unsafe { user_addr(sa.addr, sa.addrlen) }?;
        let sk = stream_socket(server.family)?;
        tl.apply_sockopts(&sk)?;
        if m & UCT_EP_PARAM_FIELD_LOCAL_SOCKADDR != 0 {
            if params.local_sockaddr.is_null() {
                crate::error!("tcp sockcm: UCT_EP_PARAM_FIELD_LOCAL_SOCKADDR with a NULL sockaddr");
                return Err(UCS_ERR_INVALID_PARAM);
            }
            // SAFETY: checked non-NULL.
            let la = unsafe { &*params.local_sockaddr };
            // SAFETY: as for the server's address.
            let local = unsafe { user_addr(la.addr, la.addrlen) }?;
            if let Err(e) = sk.bind(&local) {
                crate::diag!("tcp sockcm: binding the client socket failed: {}", errno_str(e as i32));
                return Err(UCS_ERR_IO_ERROR);
            }
        }
        // Connected or in progress are both fine: progress sees the outcome.
        if let Err(e) = sk.connect(&server) {
            crate::diag!("tcp sockcm: connect failed: {}", errno_str(e as i32));
            return Err(connect_errno_status(e as i32));
        }
        let id = next_id();
        let handle = tl.new_ep_handle(id);
        crate::debug!("tcp sockcm: client ep {:p} (fd {}) connecting", handle, sk.fd());
        let mut s = tl.lock();
        s.eps.insert(id, EpState {
            handle,
            sock: sk,
            flags: st::CLIENT,
            cbs,
            listener: 0,
            tx: Vec::new(),
            tx_off: 0,
            rx: Vec::new(),
            polled: true,
            armed: 0,
        });
        tl.mark_busy();
        tl.sync(&mut s, id);
        Ok(handle)
    }

    /// A server endpoint from a connection request the listener's callback
    /// was given; it answers with its private data at once.
    pub(super) fn server_ep(&self, params: &uct_ep_params_t) -> Result<uct_ep_h, ucs_status_t> {
        let handle = params.conn_request as uct_ep_h;
        let Some(origin) = pending().remove(&(handle as usize)) else {
            crate::error!("tcp sockcm: {:p} is not a pending connection request", params.conn_request);
            return Err(UCS_ERR_INVALID_PARAM);
        };
        // SAFETY: pending requests are live endpoints of a live CM iface.
        let (origin, id) = unsafe { (&*(origin as *const CmIface), (*(handle as *const CmEp)).tl.id) };
        let tl = self.tl();
        // Move the endpoint over when it is created on another CM.
        if !std::ptr::eq(&origin.tl, tl) {
            let moved = {
                let mut o = origin.tl.lock();
                origin.tl.unwatch(&mut o, id);
                o.eps.remove(&id)
            };
            let Some(e) = moved else { return Err(UCS_ERR_INVALID_PARAM) };
            let mut s = tl.lock();
            s.eps.insert(id, e);
            tl.mark_busy();
            tl.sync(&mut s, id);
            drop(s);
            // SAFETY: the endpoint is ours; it now belongs to this CM's iface.
            unsafe { (*(handle as *mut CmEp)).base.iface = self.iface as uct_iface_h };
        }
        let fail = |st: ucs_status_t| {
            let mut s = tl.lock();
            free_internal(&mut s, id);
            Err(st)
        };
        let (fd, flags) = match tl.lock().eps.get(&id) {
            Some(e) => (e.fd(), e.flags),
            None => return Err(UCS_ERR_INVALID_PARAM),
        };
        if flags & st::FAILED != 0 {
            return fail(UCS_ERR_CONNECTION_RESET);
        }
        let mut cbs = Callbacks::NONE;
        if let Err(st) = common_callbacks(params, &mut cbs) {
            return fail(st);
        }
        if params.field_mask & UCT_EP_PARAM_FIELD_SOCKADDR_NOTIFY_CB_SERVER != 0 {
            if params.sockaddr_cb_server.is_none() {
                crate::error!("tcp sockcm: UCT_EP_PARAM_FIELD_SOCKADDR_NOTIFY_CB_SERVER is set but the callback is NULL");
                return fail(UCS_ERR_INVALID_PARAM);
            }
            cbs.server_notify = params.sockaddr_cb_server;
        }
        let m = params.field_mask;
        let data = if m & (UCT_EP_PARAM_FIELD_PRIV_DATA | UCT_EP_PARAM_FIELD_PRIV_DATA_LENGTH)
            == (UCT_EP_PARAM_FIELD_PRIV_DATA | UCT_EP_PARAM_FIELD_PRIV_DATA_LENGTH)
        {
            let len = params.private_data_length;
            if len > tl.priv_data_len {
                crate::error!("tcp sockcm: {} bytes of private data, at most {}", len, tl.priv_data_len);
                return fail(UCS_ERR_BUFFER_TOO_SMALL);
            }
            // SAFETY: the caller passes `len` readable bytes (or NULL).
            match unsafe { crate::core::cm::user_bytes(params.private_data, len, "tcp sockcm") } {
                Ok(d) => d,
                Err(st) => return fail(st),
            }
        } else if m & UCT_EP_PARAM_FIELD_SOCKADDR_PACK_CB != 0 {
            // (The lock goes before `fail` takes it again.)
            let dev = tl.lock().eps.get(&id).map(|e| ifname_of(&e.sock));
            let dev = match dev {
                Some(Ok(d)) => d,
                Some(Err(st)) => return fail(st),
                None => return Err(UCS_ERR_INVALID_PARAM),
            };
            match tl.invoke_pack(cbs, &dev) {
                Ok(d) => d,
                Err(st) => return fail(st),
            }
        } else {
            Vec::new()
        };
        let mut s = tl.lock();
        let Some(e) = s.eps.get_mut(&id) else { return Err(UCS_ERR_CONNECTION_RESET) };
        // The async thread may have seen the connection fail while the lock
        // was free; it reported nothing (the endpoint had no callbacks yet),
        // so the failure is reported here, as for one found failed above.
        if e.flags & st::FAILED != 0 {
            crate::debug!("tcp sockcm: server ep {:p} (fd {}) failed while being created", handle, fd);
            free_internal(&mut s, id);
            return Err(UCS_ERR_CONNECTION_RESET);
        }
        e.cbs = cbs;
        e.flags |= st::SERVER_CREATED | st::PACKED;
        crate::debug!("tcp sockcm: server ep {:p} (fd {}) created, answering with {} bytes", handle, fd, data.len());
        // A broken connection shows on the next poll (notify callback).
        let _ = tl.queue_msg(&mut s, id, &data, UCS_OK);
        tl.sync(&mut s, id);
        Ok(handle)
    }
}

// ---------------------------------------------------------------------------
// The vtable side (endpoint operations of the CM's iface).

impl Transport for SockCmTl {
    type Ep = SockCmEp;
    const NAME: &'static str = "tcp_sockcm";
    const HAS_PROGRESS: bool = false;

    fn query(_iface: &Iface<Self>, _attr: &mut uct_iface_attr_t) {}

    fn ep_create(_iface: &Iface<Self>, _params: &EpParams<'_>) -> Result<SockCmEp, ucs_status_t> {
        crate::error!("tcp sockcm: endpoints are created with UCT_EP_PARAM_FIELD_CM, not on the CM's iface");
        Err(UCS_ERR_UNSUPPORTED)
    }

    fn ep_destroy(iface: &Iface<Self>, ep: &mut Ep<Self>) {
        let mut s = iface.tl.lock();
        if let Some(e) = s.eps.remove(&ep.tl.id) {
            pending().remove(&(e.handle as usize));
            crate::debug!("tcp sockcm: {} ep {:p} (fd {}) destroyed", e.side(), e.handle, e.fd());
        }
    }

    fn ep_query(iface: &Iface<Self>, ep: &Ep<Self>, attr: &mut uct_ep_attr_t) -> ucs_status_t {
        let s = iface.tl.lock();
        let Some(e) = s.eps.get(&ep.tl.id) else { return UCS_ERR_INVALID_PARAM };
        if attr.field_mask & UCT_EP_ATTR_FIELD_LOCAL_SOCKADDR != 0 {
            match e.sock.local_addr() {
                Ok(a) => attr.local_address = a.to_storage().0,
                Err(err) => {
                    crate::error!("tcp sockcm: getsockname failed: {}", errno_str(err as i32));
                    return UCS_ERR_IO_ERROR;
                }
            }
        }
        if attr.field_mask & UCT_EP_ATTR_FIELD_REMOTE_SOCKADDR != 0 {
            match e.sock.peer_addr() {
                Ok(a) => attr.remote_address = a.to_storage().0,
                Err(err) => {
                    crate::debug!("tcp sockcm: getpeername failed: {}", errno_str(err as i32));
                    return UCS_ERR_NOT_CONNECTED;
                }
            }
        }
        UCS_OK
    }

    crate::transport_ops! {
        fn ep_connect(iface: &Iface<Self>, ep: &Ep<Self>, params: Option<&uct_ep_connect_params_t>) -> ucs_status_t {
            let (data, len) = crate::core::cm::connect_params_data(params);
            let tl = &iface.tl;
            let mut s = tl.lock();
            let id = ep.tl.id;
            let Some(e) = s.eps.get_mut(&id) else { return UCS_ERR_INVALID_PARAM };
            if e.flags & st::CLIENT == 0 || e.flags & st::PACKED != 0 {
                crate::error!("tcp sockcm: uct_ep_connect on {} ep {:p} that {}", e.side(), e.handle,
                              if e.flags & st::CLIENT == 0 { "is not a client" } else { "already sent its data" });
                return UCS_ERR_INVALID_PARAM;
            }
            if len > tl.priv_data_len {
                crate::error!("tcp sockcm: {} bytes of private data, at most {}", len, tl.priv_data_len);
                e.flags |= st::UPPER_CB_FAILED;
                return UCS_ERR_BUFFER_TOO_SMALL;
            }
            // SAFETY: the caller passes `len` readable bytes at `data` (or NULL).
            let bytes = match unsafe { crate::core::cm::user_bytes(data, len, "tcp sockcm") } {
                Ok(b) => b,
                Err(st) => return st,
            };
            e.flags |= st::PACKED;
            // A broken connection shows on the next poll and is reported there.
            let _ = tl.queue_msg(&mut s, id, &bytes, UCS_OK);
            tl.sync(&mut s, id);
            UCS_OK
        }

        fn ep_disconnect(iface: &Iface<Self>, ep: &Ep<Self>, _flags: u32) -> ucs_status_t {
            let mut s = iface.tl.lock();
            let Some(e) = s.eps.get_mut(&ep.tl.id) else { return UCS_ERR_INVALID_PARAM };
            if e.flags & st::FAILED != 0 && e.flags & st::DISCONNECTED == 0 {
                return UCS_ERR_NOT_CONNECTED;
            }
            if e.flags & st::DISCONNECTING != 0 {
                if e.flags & st::DISCONNECTED != 0 {
                    crate::error!("tcp sockcm: uct_ep_disconnect called twice on disconnected ep {:p}", e.handle);
                    return UCS_ERR_NOT_CONNECTED;
                }
                crate::debug!("tcp sockcm: ep {:p} is already disconnecting", e.handle);
                return UCS_INPROGRESS;
            }
            if !e.connected() {
                crate::debug!("tcp sockcm: uct_ep_disconnect on ep {:p} that is not connected yet", e.handle);
                return UCS_ERR_BUSY;
            }
            e.flags |= st::DISCONNECTING;
            if let Err(err) = e.sock.shutdown_write() {
                if err == Errno::ENOTCONN {
                    crate::debug!("tcp sockcm: ep {:p}: shutdown: {} (ignored)", e.handle, errno_str(err as i32));
                    return UCS_OK;
                }
                crate::error!("tcp sockcm: ep {:p}: shutdown failed: {}", e.handle, errno_str(err as i32));
                return UCS_ERR_IO_ERROR;
            }
            crate::debug!("tcp sockcm: {} ep {:p} (fd {}) disconnecting", e.side(), e.handle, e.fd());
            UCS_OK
        }

        fn cm_ep_conn_notify(iface: &Iface<Self>, ep: &Ep<Self>) -> ucs_status_t {
            let tl = &iface.tl;
            let mut s = tl.lock();
            let id = ep.tl.id;
            let Some(e) = s.eps.get_mut(&id) else { return UCS_ERR_INVALID_PARAM };
            if e.flags & (st::DISCONNECTING | st::FAILED) != 0 {
                return UCS_ERR_NOT_CONNECTED;
            }
            if e.flags & st::CLIENT == 0 || e.flags & st::CLIENT_CONNECTED == 0 || e.flags & st::NOTIFY_CALLED != 0 {
                crate::error!("tcp sockcm: uct_cm_client_ep_conn_notify on ep {:p} in state 0x{:x}", e.handle, e.flags);
                return UCS_ERR_INVALID_PARAM;
            }
            e.flags |= st::NOTIFY_CALLED;
            let _ = tl.queue_msg(&mut s, id, &[], UCS_OK);
            tl.sync(&mut s, id);
            UCS_OK
        }
    }
}

/// The internal operations of the CM's iface.
pub(super) static INTERNAL: InternalOps = Internal::<SockCmTl>::OPS;

/// A non-blocking, close-on-exec stream socket of `family` for the CM.
pub(super) fn stream_socket(family: u16) -> Result<Socket, ucs_status_t> {
    Socket::stream(family, true).map_err(|e| {
        crate::error!("tcp sockcm: socket(family {}) failed: {}", family, errno_str(e as i32));
        UCS_ERR_IO_ERROR
    })
}
