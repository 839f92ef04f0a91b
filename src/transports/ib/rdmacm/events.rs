//! Reading the CM's event channel and what each event means: the state
//! changes are made under the lock, and the user calls they lead to run
//! after it is released (callbacks may call back into the CM).

use super::devaddr::{self, dev_name};
use super::state::{next_key, pending, st, Call, CmIface, CmState, ReqState, RdmaCmTl, HDR_LEN, MAX_CONN_PRIV};
use crate::abi::*;
use crate::core::cm;
use crate::core::log::status_str;
use crate::sys::verbs::cm::{ev, event_name, CmId, Event};
use libc::{c_int, c_uint, c_void};
use std::sync::atomic::Ordering;

/// The status a peer's private data header carries, when it is one UCX
/// sends (OK or an error code).
fn peer_status(b: u8) -> Option<ucs_status_t> {
    let s = b as i8;
    (s <= 0 && s > UCS_ERR_LAST).then_some(s)
}

/// The user's part of a peer's private data, checked against the header.
fn split_private(data: &[u8]) -> Result<(&[u8], u8), String> {
    if data.len() < HDR_LEN {
        return Err(format!("{} bytes of private data, shorter than the header", data.len()));
    }
    let len = data[0] as usize;
    if len > data.len() - HDR_LEN || len > MAX_CONN_PRIV {
        return Err(format!("the header claims {} bytes of private data, {} arrived", len, data.len() - HDR_LEN));
    }
    Ok((&data[HDR_LEN..HDR_LEN + len], data[1]))
}

impl RdmaCmTl {
    /// Read and handle every queued event. Runs with the worker's async
    /// context blocked (on the async thread, or from progress).
    pub(super) fn handle_events(&self) -> u32 {
        let mut n = 0;
        loop {
            match self.channel.next_event() {
                Ok(Some(e)) => {
                    n += 1;
                    let calls = self.on_event(e);
                    for c in calls {
                        self.run(c);
                    }
                }
                Ok(None) => return n,
                Err(e) => {
                    crate::warn!("rdmacm: rdma_get_cm_event() failed: {}", e.desc());
                    return n;
                }
            }
        }
    }

    fn on_event(&self, e: Event) -> Vec<Call> {
        let key = e.context as u64;
        crate::debug!("rdmacm: event {} (status {}) on id {:p} key {}", event_name(e.kind), e.status, e.id, key);
        let mut s = self.lock();
        if e.kind == ev::CONNECT_REQUEST {
            return self.on_conn_request(&mut s, e).into_iter().collect();
        }
        if let Some(r) = s.reqs.get_mut(&key) {
            // A request the user has not answered yet: it can only fail.
            if matches!(e.kind, ev::DISCONNECTED | ev::REJECTED | ev::CONNECT_ERROR | ev::UNREACHABLE
                | ev::DEVICE_REMOVAL | ev::ADDR_CHANGE) {
                crate::debug!("rdmacm: connection request {} failed before it was answered: {}", key,
                              event_name(e.kind));
                r.failed = true;
            }
            return Vec::new();
        }
        if s.listeners.contains_key(&key) {
            if e.kind != ev::TIMEWAIT_EXIT {
                crate::diag!("rdmacm: listener event {} (status {}) ignored", event_name(e.kind), e.status);
            }
            return Vec::new();
        }
        if !s.eps.contains_key(&key) {
            crate::debug!("rdmacm: event {} for a destroyed endpoint dropped", event_name(e.kind));
            return Vec::new();
        }
        match e.kind {
            ev::ADDR_RESOLVED => self.on_addr_resolved(&mut s, key),
            ev::ROUTE_RESOLVED => self.on_route_resolved(&mut s, key),
            ev::CONNECT_RESPONSE => self.on_connect_response(&mut s, key, &e.private_data),
            ev::ESTABLISHED => {
                let Some(ep) = s.eps.get_mut(&key) else { return Vec::new() };
                if ep.flags & (st::GOT_DISCONNECT | st::FAILED) != 0 || ep.flags & st::SERVER == 0 {
                    return Vec::new();
                }
                ep.flags |= st::NOTIFY_CB_INVOKED;
                vec![Call::ServerNotify { handle: ep.handle, cbs: ep.cbs, status: UCS_OK }]
            }
            ev::DISCONNECTED => self.on_disconnected(&mut s, key, e.status),
            ev::TIMEWAIT_EXIT => Vec::new(),
            ev::UNREACHABLE | ev::ADDR_ERROR | ev::ROUTE_ERROR | ev::DEVICE_REMOVAL | ev::ADDR_CHANGE
            | ev::REJECTED | ev::CONNECT_ERROR => self.on_error_event(&mut s, key, &e),
            k => {
                crate::warn!("rdmacm: unexpected event: {}", event_name(k));
                Vec::new()
            }
        }
    }

    fn on_addr_resolved(&self, s: &mut CmState, key: u64) -> Vec<Call> {
        let Some(ep) = s.eps.get(&key) else { return Vec::new() };
        if let Err(e) = ep.id.resolve_route(self.timeout_ms) {
            crate::diag!("rdmacm: {}: rdma_resolve_route failed: {}", ep.addrs(), e.desc());
            return self.set_failed(s, key, UCS_ERR_UNREACHABLE, true);
        }
        Vec::new()
    }

    fn on_route_resolved(&self, s: &mut CmState, key: u64) -> Vec<Call> {
        let Some(ep) = s.eps.get_mut(&key) else { return Vec::new() };
        let dev = dev_name(&ep.id);
        if ep.cbs.resolve.is_some() {
            ep.flags |= st::RESOLVE_CB_INVOKED;
            vec![Call::Resolve { handle: ep.handle, cbs: ep.cbs, dev, key }]
        } else {
            vec![Call::PackAndConnect { cbs: ep.cbs, dev, key }]
        }
    }

    fn on_connect_response(&self, s: &mut CmState, key: u64, data: &[u8]) -> Vec<Call> {
        let Some(ep) = s.eps.get_mut(&key) else { return Vec::new() };
        // A response after a disconnect (events out of order): not reported.
        if ep.flags & (st::GOT_DISCONNECT | st::FAILED) != 0 || ep.flags & st::CLIENT == 0 {
            return Vec::new();
        }
        let (user, status) = match split_private(data) {
            Ok((u, b)) => match peer_status(b) {
                Some(st) => (cm::PrivData::new(u, MAX_CONN_PRIV), st),
                None => {
                    crate::error!("rdmacm: {}: the server's answer carries status {}, not a UCX status; \
                                   connection dropped", ep.addrs(), b as i8);
                    return self.set_failed(s, key, UCS_ERR_CONNECTION_RESET, true);
                }
            },
            Err(why) => {
                crate::error!("rdmacm: {}: malformed answer from the server: {}; connection dropped", ep.addrs(), why);
                return self.set_failed(s, key, UCS_ERR_CONNECTION_RESET, true);
            }
        };
        let dev_addr = match devaddr::of(&ep.id) {
            Ok(a) => a,
            Err(st) => {
                crate::diag!("rdmacm: client {} failed to process a connect response", ep.addrs());
                return self.set_failed(s, key, st, true);
            }
        };
        ep.flags |= st::CONN_CB_INVOKED;
        vec![Call::ClientConnect { handle: ep.handle, cbs: ep.cbs, remote: Some((dev_addr, user)), status }]
    }

    fn on_disconnected(&self, s: &mut CmState, key: u64, status: i32) -> Vec<Call> {
        let Some(ep) = s.eps.get_mut(&key) else { return Vec::new() };
        crate::debug!("rdmacm: {} ep {:p} ({}) got disconnect event, status {}", ep.side(), ep.handle, ep.addrs(),
                      status);
        ep.flags |= st::GOT_DISCONNECT;
        if ep.flags & st::FAILED != 0 {
            return Vec::new();
        }
        self.error_cb(s, key, UCS_ERR_CONNECTION_RESET)
    }

    fn on_error_event(&self, s: &mut CmState, key: u64, e: &Event) -> Vec<Call> {
        let Some(ep) = s.eps.get(&key) else { return Vec::new() };
        let (status, level, why) = match e.kind {
            ev::REJECTED => {
                let st = if ep.flags & st::SERVER != 0 {
                    // The client turned down the server's answer.
                    UCS_ERR_CONNECTION_RESET
                } else if e.private_data.len() >= HDR_LEN && e.private_data[1] as i8 == UCS_ERR_REJECTED {
                    UCS_ERR_REJECTED
                } else {
                    UCS_ERR_CONNECTION_RESET
                };
                (st, crate::core::log::LEVEL_DEBUG, crate::sys::errno_str(libc::ECONNREFUSED))
            }
            ev::UNREACHABLE | ev::ADDR_ERROR | ev::ROUTE_ERROR | ev::CONNECT_ERROR => {
                (UCS_ERR_UNREACHABLE, self.failure_level, crate::sys::errno_str(-e.status))
            }
            _ => (UCS_ERR_IO_ERROR, crate::core::log::LEVEL_ERROR, crate::sys::errno_str(-e.status)),
        };
        crate::log_at!(level, "rdmacm: {} ep {:p} ({}) got error event {}, event status {} ({})", ep.side(),
                       ep.handle, ep.addrs(), event_name(e.kind), why, e.status);
        if ep.connected() && ep.flags & st::FAILED == 0 {
            // A connected endpoint reports its first failure as a
            // disconnection (the disconnect callback has no status).
            return self.on_disconnected(s, key, e.status);
        }
        self.set_failed(s, key, status, true)
    }

    /// A connection request on one of our listeners: checked, then handed
    /// to the listener's callback; refused (rejected and destroyed) when
    /// it cannot be.
    fn on_conn_request(&self, s: &mut CmState, e: Event) -> Option<Call> {
        // SAFETY: the new id of a CONNECT_REQUEST belongs to its receiver.
        let id = unsafe { CmId::adopt(e.id) };
        let refuse = |id: CmId, why: &str| {
            crate::diag!("rdmacm: connection request from {} refused: {}", super::state::addrs_of(&id), why);
            reject(&id);
            None
        };
        let Some(l) = s.listeners.get(&(e.context as u64)) else {
            return refuse(id, "its listener is gone");
        };
        let (listener, cb, user_data) = (l.handle, l.conn_request_cb, l.user_data);
        let (data, status) = match split_private(&e.private_data) {
            Ok((d, b)) => (cm::PrivData::new(d, MAX_CONN_PRIV), b),
            Err(why) => return refuse(id, &why),
        };
        if status != 0 {
            return refuse(id, &format!("its header carries status {}", status as i8));
        }
        let dev_addr = match devaddr::of(&id) {
            Ok(a) => a,
            Err(_) => return refuse(id, "no device address for it"),
        };
        let Some(peer) = id.peer_addr() else {
            return refuse(id, "no client address");
        };
        let dev = dev_name(&id);
        let key = next_key();
        id.set_context(key as usize);
        s.reqs.insert(key, ReqState { id, failed: false });
        pending().insert(key, self as *const RdmaCmTl as usize);
        self.mark_busy();
        Some(Call::ConnRequest { listener, cb, user_data, key, dev, dev_addr, data,
                                 client: peer.to_storage() })
    }

    /// The endpoint failed: tell the user through whichever callback is
    /// due (when `invoke_cb`), and remember the status for
    /// `uct_ep_disconnect` and `uct_cm_client_ep_conn_notify`.
    pub(super) fn set_failed(&self, s: &mut CmState, key: u64, status: ucs_status_t, invoke_cb: bool) -> Vec<Call> {
        let Some(ep) = s.eps.get(&key) else { return Vec::new() };
        if ep.flags & st::FAILED != 0 {
            return Vec::new();
        }
        let calls = if invoke_cb { self.error_cb(s, key, status) } else { Vec::new() };
        if let Some(ep) = s.eps.get_mut(&key) {
            ep.flags |= st::FAILED;
            ep.status = status;
        }
        calls
    }

    /// The callback an endpoint's failure goes to: disconnect once
    /// connected; before, the client's connect (or, not yet resolved, its
    /// resolve) callback, or the server's notify callback.
    fn error_cb(&self, s: &mut CmState, key: u64, status: ucs_status_t) -> Vec<Call> {
        let Some(ep) = s.eps.get_mut(&key) else { return Vec::new() };
        let (handle, cbs) = (ep.handle, ep.cbs);
        if ep.connected() {
            return vec![Call::Disconnect { handle, cbs }];
        }
        if ep.flags & st::CLIENT != 0 {
            if ep.flags & st::RESOLVE_CB_INVOKED != 0 || cbs.resolve.is_none() {
                ep.flags |= st::CONN_CB_INVOKED;
                return vec![Call::ClientConnect { handle, cbs, remote: None, status }];
            }
            ep.flags |= st::RESOLVE_CB_INVOKED;
            return vec![Call::ResolveFailed { cbs, status }];
        }
        ep.flags |= st::NOTIFY_CB_INVOKED;
        vec![Call::ServerNotify { handle, cbs, status }]
    }

    /// Run a deferred call with no lock held.
    pub(super) fn run(&self, call: Call) {
        match call {
            Call::Resolve { handle, cbs, dev, key } => {
                crate::debug!("rdmacm: client ep {:p} resolved on {}", handle, dev);
                let r = cm::invoke_resolve(&cbs, &dev, UCS_OK);
                if r != UCS_OK {
                    crate::diag!("rdmacm: resolve callback failed: {}", status_str(r));
                    let mut s = self.lock();
                    let _ = self.set_failed(&mut s, key, r, false);
                }
            }
            Call::PackAndConnect { cbs, dev, key } => {
                let r = cm::invoke_pack(&cbs, &dev, MAX_CONN_PRIV, "rdmacm");
                let mut s = self.lock();
                let r = r.and_then(|data| self.send_priv_data(&mut s, key, &data));
                if let Err(st) = r {
                    let _ = self.set_failed(&mut s, key, st, false);
                }
            }
            Call::ResolveFailed { cbs, status } => {
                let _ = cm::invoke_resolve(&cbs, "", status);
            }
            Call::ClientConnect { handle, cbs, remote, status } => {
                let remote = remote.as_ref().map(|(a, d)| (a.as_slice(), d.data()));
                // SAFETY: a live endpoint of this CM with its user's callbacks.
                unsafe { cm::invoke_client_connect(handle, &cbs, remote, status) };
            }
            // SAFETY: a live endpoint of this CM with its user's callbacks.
            Call::ServerNotify { handle, cbs, status } => unsafe { cm::invoke_server_notify(handle, &cbs, status) },
            // SAFETY: a live endpoint of this CM with its user's callbacks.
            Call::Disconnect { handle, cbs } => unsafe { cm::invoke_disconnect(handle, &cbs) },
            Call::ConnRequest { listener, cb, user_data, key, dev, dev_addr, data, client } => {
                crate::debug!("rdmacm: connection request {} on {} with {} bytes of private data", key, dev,
                              data.data().len());
                let req = cm::ConnRequest { dev: &dev, request: key as usize as uct_conn_request_h,
                                            dev_addr: &dev_addr, data: data.data(), client };
                // SAFETY: a live listener of this CM with its user's callback;
                // the request is pending for uct_ep_create/uct_listener_reject.
                unsafe { cm::invoke_conn_request(listener, cb, user_data, &req) };
            }
        }
    }
}

/// Reject a connection request with our header {0, REJECTED}.
pub(super) fn reject(id: &CmId) -> bool {
    let hdr = [0u8, UCS_ERR_REJECTED as u8];
    if let Err(e) = id.reject(&hdr) {
        crate::diag!("rdmacm: rdma_reject ({}) failed: {}", super::state::addrs_of(id), e.desc());
        return false;
    }
    true
}

/// The async thread's handler of the CM's event channel.
///
/// # Safety
/// `arg` is the CM's iface, alive while the handler is added.
pub(super) unsafe extern "C" fn on_channel(_fd: c_int, _events: c_uint, arg: *mut c_void) {
    let _ = std::panic::catch_unwind(|| {
        // SAFETY: see the function contract.
        let iface = unsafe { &*(arg as *const CmIface) };
        iface.tl.handle_events()
    });
}

/// The CM's callback on the worker's progress queue, for a worker whose
/// async context the async thread does not serve.
///
/// # Safety
/// `arg` is the CM's iface, alive until the callback is removed.
pub(super) unsafe extern "C" fn progress_cb(arg: *mut c_void) -> c_uint {
    let r = std::panic::catch_unwind(|| {
        // SAFETY: see the function contract.
        let iface = unsafe { &*(arg as *const CmIface) };
        if !iface.tl.busy.load(Ordering::Acquire) {
            return 0;
        }
        // SAFETY: the worker outlives the CMs opened on it.
        let async_ctx = unsafe { (*iface.hdr.worker).async_ctx };
        let _blocked = crate::ucs::async_block::AsyncBlock::new(async_ctx);
        iface.tl.handle_events()
    });
    r.unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_data_is_checked_against_its_header() {
        assert_eq!(split_private(&[3, 0, 1, 2, 3, 0, 0]).unwrap(), (&[1u8, 2, 3][..], 0));
        assert_eq!(split_private(&[0, 0xef]).unwrap(), (&[][..], 0xef));
        assert!(split_private(&[5]).is_err());
        assert!(split_private(&[9, 0, 1, 2]).is_err());
        let mut big = vec![55u8, 0];
        big.extend([0u8; 60]);
        assert!(split_private(&big).is_err());
    }

    #[test]
    fn only_ucx_statuses_pass() {
        assert_eq!(peer_status(0), Some(UCS_OK));
        assert_eq!(peer_status(UCS_ERR_REJECTED as u8), Some(UCS_ERR_REJECTED));
        assert_eq!(peer_status(1), None);
        assert_eq!(peer_status(0x80), None);
    }
}
