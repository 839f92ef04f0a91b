//! Endpoints: creating a client endpoint (resolving the server's address)
//! and a server endpoint (answering a connection request), sending the
//! private data (connect or accept, with a dummy QP's number), and the
//! endpoint operations of the CM's iface (`uct_ep_connect`,
//! `uct_ep_disconnect`, `uct_cm_client_ep_conn_notify`, query, destroy).

use super::cm::RdmaCm;
use super::devaddr::dev_name;
use super::events::reject;
use super::state::{pending, st, CmEp, CmState, DevCtx, EpState, RdmaCmEp, RdmaCmTl, HDR_LEN,
                   MAX_CONN_PRIV, next_key};
use crate::abi::*;
use crate::core::cm::{self, Callbacks};
use crate::core::iface::{Ep, EpParams, Iface, Internal, InternalOps, Transport};
use crate::sys::addr::SockAddr;
use crate::sys::verbs::cm::CmId;

impl RdmaCmTl {
    /// Connect (client) or accept (server) with `data` after our header,
    /// naming a new dummy QP. Runs under the lock.
    pub(super) fn send_priv_data(&self, s: &mut CmState, key: u64, data: &[u8]) -> Result<(), ucs_status_t> {
        if data.len() > MAX_CONN_PRIV {
            crate::error!("rdmacm: {} bytes of private data, at most {}", data.len(), MAX_CONN_PRIV);
            return Err(UCS_ERR_EXCEEDS_LIMIT);
        }
        let Some(ep) = s.eps.get(&key) else { return Err(UCS_ERR_INVALID_PARAM) };
        let Some((dev, guid, _)) = ep.id.device() else {
            crate::error!("rdmacm: {}: the connection has no device", ep.addrs());
            return Err(UCS_ERR_NO_DEVICE);
        };
        if let std::collections::hash_map::Entry::Vacant(v) = s.devs.entry(guid) {
            if self.reserved_qpn_required {
                crate::error!("{}: reserved qpn is not supported, failed to use it", dev);
                return Err(UCS_ERR_UNSUPPORTED);
            }
            let cq = ep.id.dummy_cq().map_err(|e| {
                crate::error!("rdmacm: ibv_create_cq({}) failed: {}", dev, e.desc());
                UCS_ERR_IO_ERROR
            })?;
            v.insert(DevCtx { cq, qps: 0 });
        }
        let Some(ctx) = s.devs.get_mut(&guid) else { return Err(UCS_ERR_NO_DEVICE) };
        let Some(ep) = s.eps.get_mut(&key) else { return Err(UCS_ERR_INVALID_PARAM) };
        let qp = ep.id.dummy_qp(&ctx.cq).map_err(|e| {
            crate::error!("rdmacm: failed to create a dummy ud qp on {}: {}", dev, e.desc());
            UCS_ERR_IO_ERROR
        })?;
        let qpn = qp.qp_num();
        let mut buf = Vec::with_capacity(HDR_LEN + data.len());
        buf.push(data.len() as u8);
        buf.push(UCS_OK as u8);
        buf.extend_from_slice(data);
        let r = if ep.flags & st::CLIENT != 0 {
            crate::debug!("rdmacm: {}: rdma_connect with qp 0x{:x} and {} bytes", ep.addrs(), qpn, data.len());
            ep.id.connect(qpn, &buf).map_err(|e| {
                crate::log_at!(self.failure_level, "rdmacm: {}: rdma_connect failed: {}", ep.addrs(), e.desc());
                UCS_ERR_IO_ERROR
            })
        } else {
            crate::debug!("rdmacm: {}: rdma_accept with qp 0x{:x} and {} bytes", ep.addrs(), qpn, data.len());
            ep.id.accept(qpn, &buf).map_err(|e| {
                crate::log_at!(self.failure_level, "rdmacm: {}: rdma_accept failed: {}", ep.addrs(), e.desc());
                UCS_ERR_CONNECTION_RESET
            })
        };
        if r.is_ok() {
            ep.qp = Some(qp);
            ctx.qps += 1;
        }
        r
    }

    /// Take endpoint `key`'s state out (destroying it: its QP, then its id,
    /// once the lock is released by the caller dropping the value).
    fn take_ep(&self, key: u64) -> Option<EpState> {
        let mut s = self.lock();
        let e = s.eps.remove(&key)?;
        if e.qp.is_some() {
            if let Some((_, guid, _)) = e.id.device() {
                if let Some(ctx) = s.devs.get_mut(&guid) {
                    ctx.qps = ctx.qps.saturating_sub(1);
                }
            }
        }
        Some(e)
    }
}

// ---------------------------------------------------------------------------
// Endpoint creation (`uct_ep_create` with `UCT_EP_PARAM_FIELD_CM`).

/// A socket address of the user's, checked, with the refusal logged.
///
/// # Safety
/// `sa` must be NULL or readable for `len` bytes.
unsafe fn user_addr(sa: *const libc::sockaddr, len: libc::socklen_t) -> Result<SockAddr, ucs_status_t> {
    // SAFETY: the caller's contract is the one of `from_user`.
    unsafe { SockAddr::from_user(sa, len) }.map_err(|e| {
        crate::error!("rdmacm: {}", e);
        UCS_ERR_INVALID_PARAM
    })
}

impl RdmaCm {
    /// A client endpoint: an id resolving the server's address.
    pub(super) fn client_ep(&self, params: &uct_ep_params_t) -> Result<uct_ep_h, ucs_status_t> {
        let tl = self.tl();
        let cbs = Callbacks::common(params, "rdmacm")?;
        if cbs.resolve.is_some() == cbs.pack.is_some() {
            crate::error!("rdmacm: a client needs exactly one of UCT_EP_PARAM_FIELD_CM_RESOLVE_CB and \
                           UCT_EP_PARAM_FIELD_SOCKADDR_PACK_CB");
            return Err(UCS_ERR_INVALID_PARAM);
        }
        if params.sockaddr.is_null() {
            crate::error!("rdmacm: UCT_EP_PARAM_FIELD_SOCKADDR with a NULL sockaddr");
            return Err(UCS_ERR_INVALID_PARAM);
        }
        // SAFETY: checked non-NULL; a ucs_sock_addr_t of the caller.
        let sa = unsafe { &*params.sockaddr };
        // SAFETY: a ucs_sock_addr_t names `addrlen` readable bytes (or NULL).
        let server = unsafe { user_addr(sa.addr, sa.addrlen) }?;
        let src = if params.field_mask & UCT_EP_PARAM_FIELD_LOCAL_SOCKADDR != 0 && !params.local_sockaddr.is_null() {
            // SAFETY: checked non-NULL.
            let la = unsafe { &*params.local_sockaddr };
            // SAFETY: as for the server's address.
            Some(unsafe { user_addr(la.addr, la.addrlen) }?)
        } else {
            tl.src_addr
        };
        let key = next_key();
        let id = CmId::create(&tl.channel, key as usize).map_err(|e| {
            crate::error!("rdmacm: rdma_create_id() failed: {}", e.desc());
            UCS_ERR_IO_ERROR
        })?;
        let handle = tl.new_ep_handle(key);
        {
            // In the table before resolving: its events may come at once.
            let mut s = tl.lock();
            s.eps.insert(key, EpState { handle, qp: None, id, flags: st::CLIENT, status: UCS_OK, cbs });
            tl.mark_busy();
            let ep = s.eps.get(&key).map(|e| e.id.resolve_addr(src.as_ref(), &server, tl.timeout_ms));
            if let Some(Err(e)) = ep {
                crate::diag!("rdmacm: rdma_resolve_addr(src={}, dst={}) failed: {}",
                             src.map_or_else(|| "<none>".to_string(), |a| a.to_string()), server, e.desc());
                let gone = s.eps.remove(&key);
                drop(s);
                drop(gone);
                // SAFETY: boxed above, never handed out.
                unsafe { drop(Box::from_raw(handle as *mut CmEp)) };
                return Err(UCS_ERR_IO_ERROR);
            }
        }
        crate::debug!("rdmacm: client ep {:p} resolving {}", handle, server);
        Ok(handle)
    }

    /// A server endpoint from a connection request: it accepts with its
    /// private data at once.
    pub(super) fn server_ep(&self, params: &uct_ep_params_t) -> Result<uct_ep_h, ucs_status_t> {
        let key = params.conn_request as usize as u64;
        let Some(origin) = pending().remove(&key) else {
            crate::error!("rdmacm: {:p} is not a pending connection request", params.conn_request);
            return Err(UCS_ERR_INVALID_PARAM);
        };
        // SAFETY: pending requests belong to a live CM (a CM drops its
        // entries when it closes).
        let origin = unsafe { &*(origin as *const RdmaCmTl) };
        let Some(req) = origin.lock().reqs.remove(&key) else { return Err(UCS_ERR_INVALID_PARAM) };
        let tl = self.tl();
        let fail = |id: CmId, status: ucs_status_t| {
            reject(&id);
            drop(id);
            Err(status)
        };
        if req.failed {
            crate::debug!("rdmacm: connection request {} failed before it was answered", key);
            return fail(req.id, UCS_ERR_CONNECTION_RESET);
        }
        let cbs = match Callbacks::common(params, "rdmacm") {
            Ok(c) => c,
            Err(st) => return fail(req.id, st),
        };
        if !std::ptr::eq(origin, tl) {
            if let Err(e) = req.id.migrate(&tl.channel) {
                crate::error!("rdmacm: failed to migrate connection request {} to another CM: {}", key, e.desc());
                return fail(req.id, UCS_ERR_IO_ERROR);
            }
        }
        let m = params.field_mask;
        let data = if m & (UCT_EP_PARAM_FIELD_PRIV_DATA | UCT_EP_PARAM_FIELD_PRIV_DATA_LENGTH)
            == (UCT_EP_PARAM_FIELD_PRIV_DATA | UCT_EP_PARAM_FIELD_PRIV_DATA_LENGTH)
        {
            let len = params.private_data_length;
            if len > MAX_CONN_PRIV {
                crate::error!("rdmacm: {} bytes of private data, at most {}", len, MAX_CONN_PRIV);
                return fail(req.id, UCS_ERR_EXCEEDS_LIMIT);
            }
            // SAFETY: the user passes `len` readable bytes (or NULL).
            match unsafe { cm::user_bytes(params.private_data, len, "rdmacm") } {
                Ok(d) => d,
                Err(st) => return fail(req.id, st),
            }
        } else if m & UCT_EP_PARAM_FIELD_SOCKADDR_PACK_CB != 0 {
            match cm::invoke_pack(&cbs, &dev_name(&req.id), MAX_CONN_PRIV, "rdmacm") {
                Ok(d) => d,
                Err(st) => return fail(req.id, st),
            }
        } else {
            Vec::new()
        };
        req.id.set_context(key as usize);
        let handle = tl.new_ep_handle(key);
        let mut s = tl.lock();
        s.eps.insert(key, EpState { handle, qp: None, id: req.id, flags: st::SERVER, status: UCS_OK, cbs });
        tl.mark_busy();
        if let Err(st) = tl.send_priv_data(&mut s, key, &data) {
            let gone = s.eps.remove(&key);
            drop(s);
            drop(gone);
            // SAFETY: boxed above, never handed out.
            unsafe { drop(Box::from_raw(handle as *mut CmEp)) };
            return Err(st);
        }
        crate::debug!("rdmacm: server ep {:p} created, answered with {} bytes", handle, data.len());
        Ok(handle)
    }
}

// ---------------------------------------------------------------------------
// The vtable side (endpoint operations of the CM's iface).

impl Transport for RdmaCmTl {
    type Ep = RdmaCmEp;
    const NAME: &'static str = "rdmacm";
    const HAS_PROGRESS: bool = false;

    fn query(_iface: &Iface<Self>, _attr: &mut uct_iface_attr_t) {}

    fn ep_create(_iface: &Iface<Self>, _params: &EpParams<'_>) -> Result<RdmaCmEp, ucs_status_t> {
        crate::error!("rdmacm: endpoints are created with UCT_EP_PARAM_FIELD_CM, not on the CM's iface");
        Err(UCS_ERR_UNSUPPORTED)
    }

    fn ep_destroy(iface: &Iface<Self>, ep: &mut Ep<Self>) {
        // Dropped here, with no lock held: the QP, then the id (whose
        // destruction waits for events librdmacm is handing out).
        if let Some(e) = iface.tl.take_ep(ep.tl.key) {
            crate::debug!("rdmacm: {} ep {:p} ({}) destroyed", e.side(), e.handle, e.addrs());
        }
    }

    fn ep_query(iface: &Iface<Self>, ep: &Ep<Self>, attr: &mut uct_ep_attr_t) -> ucs_status_t {
        let s = iface.tl.lock();
        let Some(e) = s.eps.get(&ep.tl.key) else { return UCS_ERR_INVALID_PARAM };
        if attr.field_mask & UCT_EP_ATTR_FIELD_LOCAL_SOCKADDR != 0 {
            match e.id.local_addr() {
                Some(a) => attr.local_address = a.to_storage().0,
                None => return UCS_ERR_INVALID_PARAM,
            }
        }
        if attr.field_mask & UCT_EP_ATTR_FIELD_REMOTE_SOCKADDR != 0 {
            match e.id.peer_addr() {
                Some(a) => attr.remote_address = a.to_storage().0,
                None => return UCS_ERR_INVALID_PARAM,
            }
        }
        UCS_OK
    }

    crate::transport_ops! {
        fn ep_connect(iface: &Iface<Self>, ep: &Ep<Self>, params: Option<&uct_ep_connect_params_t>) -> ucs_status_t {
            let (data, len) = cm::connect_params_data(params);
            if len > MAX_CONN_PRIV {
                crate::error!("rdmacm: {} bytes of private data, at most {}", len, MAX_CONN_PRIV);
                return UCS_ERR_EXCEEDS_LIMIT;
            }
            // SAFETY: the user passes `len` readable bytes at `data` (or NULL).
            let bytes = match unsafe { cm::user_bytes(data, len, "rdmacm") } {
                Ok(b) => b,
                Err(st) => return st,
            };
            let tl = &iface.tl;
            let mut s = tl.lock();
            let key = ep.tl.key;
            let Some(e) = s.eps.get(&key) else { return UCS_ERR_INVALID_PARAM };
            if e.flags & st::CLIENT == 0 || e.qp.is_some() {
                crate::error!("rdmacm: uct_ep_connect on {} ep {:p} that {}", e.side(), e.handle,
                              if e.flags & st::CLIENT == 0 { "is not a client" } else { "already connected" });
                return UCS_ERR_INVALID_PARAM;
            }
            if e.flags & st::FAILED != 0 {
                return e.status;
            }
            match tl.send_priv_data(&mut s, key, &bytes) {
                Ok(()) => UCS_OK,
                Err(st) => st,
            }
        }

        fn ep_disconnect(iface: &Iface<Self>, ep: &Ep<Self>, _flags: u32) -> ucs_status_t {
            let mut s = iface.tl.lock();
            let Some(e) = s.eps.get_mut(&ep.tl.key) else { return UCS_ERR_INVALID_PARAM };
            if e.flags & st::FAILED != 0 {
                crate::log_at!(iface.tl.failure_level, "rdmacm: {} ep {:p} ({}) failed: {}", e.side(), e.handle,
                               e.addrs(), crate::core::log::status_str(e.status));
                return e.status;
            }
            if e.flags & st::DISCONNECTING != 0 {
                if e.flags & st::GOT_DISCONNECT != 0 {
                    crate::error!("rdmacm: duplicate call of uct_ep_disconnect on a disconnected ep {:p} ({})",
                                  e.handle, e.addrs());
                    return UCS_ERR_NOT_CONNECTED;
                }
                crate::debug!("rdmacm: duplicate call of uct_ep_disconnect on ep {:p} ({})", e.handle, e.addrs());
                return UCS_INPROGRESS;
            }
            if !e.connected() {
                crate::debug!("rdmacm: uct_ep_disconnect on ep {:p} ({}) that is not connected yet", e.handle,
                              e.addrs());
                return UCS_ERR_BUSY;
            }
            e.flags |= st::DISCONNECTING;
            if let Err(err) = e.id.disconnect() {
                crate::error!("rdmacm: {} ep {:p} ({}) failed to disconnect: {}", e.side(), e.handle, e.addrs(),
                              err.desc());
                return UCS_ERR_IO_ERROR;
            }
            crate::debug!("rdmacm: {} ep {:p} ({}) disconnected", e.side(), e.handle, e.addrs());
            UCS_OK
        }

        fn cm_ep_conn_notify(iface: &Iface<Self>, ep: &Ep<Self>) -> ucs_status_t {
            let mut s = iface.tl.lock();
            let Some(e) = s.eps.get_mut(&ep.tl.key) else { return UCS_ERR_INVALID_PARAM };
            if e.flags & (st::FAILED | st::GOT_DISCONNECT) == 0 {
                if let Err(err) = e.id.establish() {
                    crate::log_at!(iface.tl.failure_level, "rdmacm: rdma_establish on ep {:p} ({}) failed: {}",
                                   e.handle, e.addrs(), err.desc());
                    e.status = UCS_ERR_CONNECTION_RESET;
                    e.flags |= st::FAILED;
                }
            }
            e.status
        }
    }
}

/// The internal operations of the CM's iface.
pub(super) static INTERNAL: InternalOps = Internal::<RdmaCmTl>::OPS;

/// Free the request `key` of a listener's callback that the user turned
/// down (`uct_listener_reject`): rejected, then destroyed.
pub(super) fn reject_request(key: u64) -> ucs_status_t {
    let Some(origin) = pending().remove(&key) else {
        crate::error!("rdmacm: {} is not a pending connection request", key);
        return UCS_ERR_INVALID_PARAM;
    };
    // SAFETY: pending requests belong to a live CM.
    let origin = unsafe { &*(origin as *const RdmaCmTl) };
    let Some(req) = origin.lock().reqs.remove(&key) else { return UCS_ERR_INVALID_PARAM };
    reject(&req.id);
    drop(req);
    UCS_OK
}
