//! The tcp socket connection manager ("sockcm") of UCX 1.13.1, on the wire
//! identical to the C original: one TCP connection per client/server pair,
//! every message a 16-byte header (`length` as a native size_t at offset 0,
//! `status` as one byte at offset 8, padding up to 16) followed by `length`
//! bytes of private data.
//!
//! Exchange: the client connects (non-blocking), reports the local device
//! through `cm_resolve_cb` (or packs at once with `sockaddr_pack_cb`) and
//! sends {len, OK}+data; the server accepts, reads it and hands a connection
//! request to the listener's callback; the server's `uct_ep_create` answers
//! {len, OK}+data (or `uct_listener_reject` answers {0, REJECTED}); the
//! client reports the answer through its connect callback and confirms with
//! `uct_cm_client_ep_conn_notify` ({0, OK}), which the server reports
//! through its notify callback. `uct_ep_disconnect` is `shutdown(SHUT_WR)`;
//! the peer sees the end of the stream and calls its disconnect callback.
//!
//! Everything runs from the worker's progress: the CM keeps one callback on
//! the worker while it lives, which polls its sockets without blocking.
//! State is kept under one mutex per CM that is never held while a user
//! callback runs, so callbacks may call back into the CM (create, destroy,
//! reject, connect, notify) freely.

mod sock;

use crate::abi::*;
use crate::core::cm::{CmImpl, ListenerImpl};
use crate::core::component::Component;
use crate::core::config::{field, parser, ConfigDesc, Table};
use crate::core::iface::{op, slot, Ep, EpParams, Iface, IfaceHeader, Internal, InternalOps, Transport};
use crate::core::worker::WorkerObj;
use crate::ucs;
use libc::{c_char, c_int, c_uint, c_ulong, c_void};
use once_cell::sync::Lazy;
use sock::Sock;
use std::collections::HashMap;
use std::mem::offset_of;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

// ---------------------------------------------------------------------------
// Configuration (`UCX_TCP_CM_*`), UCX's names, order and defaults.

/// The parsed settings; same layout as the C original's config struct.
#[repr(C)]
pub struct SockCmConfig {
    pub failure: c_int,
    pub reuse_addr: c_int,
    pub priv_data_len: usize,
    pub sndbuf: usize,
    pub rcvbuf: usize,
    pub syn_cnt: c_ulong,
}

static BASE_TABLE: Lazy<Table> = Lazy::new(|| {
    Table::new(vec![
        field(c"FAILURE", c"diag", c"Log level of network errors seen by the connection manager",
              offset_of!(SockCmConfig, failure),
              parser::enumeration(std::ptr::addr_of!(crate::ucs::ucs_log_level_names) as *const *const c_char)),
        field(c"REUSEADDR", c"no", c"Let listeners bind to an address that is still in use",
              offset_of!(SockCmConfig, reuse_addr), parser::boolean()),
    ])
});

static TABLE: Lazy<Table> = Lazy::new(|| {
    Table::new(vec![
        field(c"CM_", c"", c"", 0, parser::table(&BASE_TABLE)),
        field(c"PRIV_DATA_LEN", c"2048", c"Most private data a connection message of the tcp CM carries",
              offset_of!(SockCmConfig, priv_data_len), parser::memunits()),
        field(c"SNDBUF", c"auto", c"Socket send buffer size", offset_of!(SockCmConfig, sndbuf), parser::memunits()),
        field(c"RCVBUF", c"auto", c"Socket receive buffer size", offset_of!(SockCmConfig, rcvbuf), parser::memunits()),
        field(c"SYN_CNT", c"auto", c"SYN retransmits before a connection attempt is given up (at most 255;\n\
                auto: the system default)",
              offset_of!(SockCmConfig, syn_cnt), parser::ulunits()),
    ])
});

/// The `TCP_CM_` configuration of the tcp component.
pub static CM_CONFIG: ConfigDesc = ConfigDesc {
    name: c"TCP-SOCKCM connection manager",
    prefix: c"TCP_CM_",
    table: &TABLE,
    size: std::mem::size_of::<SockCmConfig>(),
};

// ---------------------------------------------------------------------------
// Wire format.

/// Size of the message header: size_t length, u8 status, padding.
pub const HDR_LEN: usize = 16;

fn encode_msg(data: &[u8], status: ucs_status_t) -> Vec<u8> {
    let mut v = vec![0u8; HDR_LEN + data.len()];
    v[..8].copy_from_slice(&(data.len() as u64).to_ne_bytes());
    v[8] = status as u8;
    v[HDR_LEN..].copy_from_slice(data);
    v
}

fn hdr_length(buf: &[u8]) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&buf[..8]);
    u64::from_ne_bytes(b)
}

fn hdr_status(buf: &[u8]) -> ucs_status_t {
    buf[8] as ucs_status_t
}

/// `uct_tcp_device_addr_t` of a peer: flags 0, family, then the raw IP.
fn device_addr_of(ss: &libc::sockaddr_storage) -> Option<Vec<u8>> {
    let ip = sock::ip_bytes(ss)?;
    let mut v = vec![0u8, ss.ss_family as u8];
    v.extend_from_slice(&ip);
    Some(v)
}

fn dev_name_array(name: &str) -> [c_char; UCT_DEVICE_NAME_MAX] {
    let mut out = [0 as c_char; UCT_DEVICE_NAME_MAX];
    for (o, b) in out.iter_mut().zip(name.bytes().take(UCT_DEVICE_NAME_MAX - 1)) {
        *o = b as c_char;
    }
    out
}

// ---------------------------------------------------------------------------
// Endpoint state.

mod st {
    pub const SERVER: u32 = 1 << 0;
    pub const CLIENT: u32 = 1 << 1;
    pub const SERVER_CREATED: u32 = 1 << 2;
    pub const PACKED: u32 = 1 << 3;
    pub const DATA_SENT: u32 = 1 << 5;
    pub const DATA_RECEIVED: u32 = 1 << 6;
    pub const CLIENT_CONNECTED: u32 = 1 << 7;
    pub const SERVER_NOTIFIED: u32 = 1 << 8;
    pub const NOTIFY_CALLED: u32 = 1 << 9;
    pub const DISCONNECTING: u32 = 1 << 11;
    pub const DISCONNECTED: u32 = 1 << 12;
    pub const FAILED: u32 = 1 << 13;
    pub const UPPER_CB_FAILED: u32 = 1 << 15;
    pub const REJECT_CALLED: u32 = 1 << 16;
    pub const RESOLVED: u32 = 1 << 19;
    pub const CONN_REQ_GIVEN: u32 = 1 << 20;
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

fn next_id() -> u64 {
    NEXT_ID.fetch_add(1, Ordering::Relaxed)
}

#[derive(Clone, Copy)]
struct Callbacks {
    user_data: *mut c_void,
    resolve: uct_cm_ep_resolve_callback_t,
    pack: uct_cm_ep_priv_data_pack_callback_t,
    client_connect: uct_cm_ep_client_connect_callback_t,
    server_notify: uct_cm_ep_server_conn_notify_callback_t,
    disconnect: uct_ep_disconnect_cb_t,
}

impl Callbacks {
    const NONE: Callbacks = Callbacks {
        user_data: std::ptr::null_mut(),
        resolve: None,
        pack: None,
        client_connect: None,
        server_notify: None,
        disconnect: None,
    };
}

struct EpState {
    handle: uct_ep_h,
    sock: Sock,
    flags: u32,
    cbs: Callbacks,
    /// Listener that accepted it (server side).
    listener: u64,
    tx: Vec<u8>,
    tx_off: usize,
    rx: Vec<u8>,
    /// Still watched by progress (cleared once the endpoint failed).
    polled: bool,
}

impl EpState {
    fn fd(&self) -> RawFd {
        self.sock.0
    }
    fn connected(&self) -> bool {
        self.flags & (st::CLIENT_CONNECTED | st::SERVER_NOTIFIED) != 0
    }
    fn tx_pending(&self) -> bool {
        self.tx_off < self.tx.len()
    }
    fn side(&self) -> &'static str {
        if self.flags & st::SERVER != 0 { "server" } else { "client" }
    }
}

struct ListenerState {
    handle: uct_listener_h,
    sock: Sock,
    conn_request_cb: uct_cm_listener_conn_request_callback_t,
    user_data: *mut c_void,
}

#[derive(Default)]
struct CmState {
    eps: HashMap<u64, EpState>,
    listeners: HashMap<u64, ListenerState>,
    closed: bool,
}

// SAFETY: the raw pointers in the state are handles and user arguments that
// are only passed back to their owner; the state is always behind the mutex.
unsafe impl Send for CmState {}

/// Connection requests handed to a listener callback and not yet consumed
/// (by `uct_ep_create` or `uct_listener_reject`): endpoint handle -> the
/// iface of the CM that holds its state.
static PENDING_REQUESTS: Lazy<Mutex<HashMap<usize, usize>>> = Lazy::new(|| Mutex::new(HashMap::new()));

fn pending() -> MutexGuard<'static, HashMap<usize, usize>> {
    PENDING_REQUESTS.lock().unwrap_or_else(|e| e.into_inner())
}

/// The transport behind the CM's endpoints (its vtable) and the CM's state.
pub struct SockCmTl {
    priv_data_len: usize,
    sndbuf: u64,
    rcvbuf: u64,
    syn_cnt: u64,
    reuse_addr: bool,
    state: Mutex<CmState>,
}

/// The endpoint part of `Ep<SockCmTl>`: its key in the CM's state.
pub struct SockCmEp {
    id: u64,
}

type CmIface = Iface<SockCmTl>;
type CmEp = Ep<SockCmTl>;

impl SockCmTl {
    fn lock(&self) -> MutexGuard<'_, CmState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// What to do once the state lock is released.
enum Call {
    None,
    Resolve { handle: uct_ep_h, cbs: Callbacks, dev: String, status: ucs_status_t, id: u64 },
    PackAndSend { handle: uct_ep_h, cbs: Callbacks, dev: String, id: u64 },
    ClientConnect { handle: uct_ep_h, cbs: Callbacks, remote: Option<(Vec<u8>, Vec<u8>)>, status: ucs_status_t },
    ServerNotify { handle: uct_ep_h, cbs: Callbacks, status: ucs_status_t },
    Disconnect { handle: uct_ep_h, cbs: Callbacks },
    ConnRequest { listener: uct_listener_h, cb: uct_cm_listener_conn_request_callback_t, user_data: *mut c_void,
                  handle: uct_ep_h, dev: String, dev_addr: Vec<u8>, data: Vec<u8>, peer: (libc::sockaddr_storage, libc::socklen_t) },
}

/// Free an endpoint the user never saw (or no longer owns).
fn free_internal(state: &mut CmState, id: u64) {
    if let Some(ep) = state.eps.remove(&id) {
        pending().remove(&(ep.handle as usize));
        // SAFETY: internal endpoints were boxed by us and are not reachable
        // by the user any more; dropping the state closes the socket.
        unsafe { drop(Box::from_raw(ep.handle as *mut CmEp)) };
    }
}

impl SockCmTl {
    /// The endpoint failed (peer closed, reset, rejected, local error):
    /// stop watching it and tell the upper layer through whichever callback
    /// is pending, as the C original does.
    fn fail(&self, state: &mut CmState, id: u64, status: ucs_status_t) -> Call {
        let Some(ep) = state.eps.get_mut(&id) else { return Call::None };
        crate::debug!("tcp sockcm: {} ep {:p} (fd {}) failed: {}", ep.side(), ep.handle, ep.fd(),
                      crate::core::log::status_str(status));
        if ep.flags & (st::SERVER | st::SERVER_CREATED | st::CONN_REQ_GIVEN) == st::SERVER {
            // A connection nobody has seen yet: just drop it.
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
                    let dev = sock::ifname_of(ep.fd()).unwrap_or_default();
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
    fn flush_tx(&self, state: &mut CmState, id: u64) -> Result<(), ucs_status_t> {
        let Some(ep) = state.eps.get_mut(&id) else { return Ok(()) };
        while ep.tx_pending() {
            match sock::send(ep.fd(), &ep.tx[ep.tx_off..]) {
                Ok(0) => return Ok(()),
                Ok(n) => ep.tx_off += n,
                Err(e) => {
                    crate::debug!("tcp sockcm: {} ep {:p} send failed: {}", ep.side(), ep.handle, sock::errno_str(e));
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
    fn queue_msg(&self, state: &mut CmState, id: u64, data: &[u8], status: ucs_status_t) -> Result<(), ucs_status_t> {
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
    fn on_readable(&self, state: &mut CmState, id: u64) -> Call {
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
            match sock::recv(ep.fd(), &mut ep.rx[have..want]) {
                Ok(None) => {
                    ep.rx.truncate(have);
                    return Call::None;
                }
                Ok(Some(0)) => {
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
                Ok(Some(n)) => ep.rx.truncate(have + n),
                Err(e) => {
                    ep.rx.truncate(have);
                    crate::debug!("tcp sockcm: {} ep {:p} recv failed: {}", ep.side(), ep.handle, sock::errno_str(e));
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

    /// A whole message is in `rx`.
    fn on_message(&self, state: &mut CmState, id: u64) -> Call {
        let Some(ep) = state.eps.get_mut(&id) else { return Call::None };
        let msg = std::mem::take(&mut ep.rx);
        let status = hdr_status(&msg);
        let data = msg[HDR_LEN..].to_vec();
        ep.flags |= st::DATA_RECEIVED;
        if ep.flags & st::REJECT_CALLED != 0 {
            return Call::None;
        }
        if ep.flags & st::SERVER != 0 {
            if ep.flags & st::DATA_SENT != 0 && ep.flags & st::SERVER_CREATED != 0 {
                if ep.flags & st::SERVER_NOTIFIED != 0 {
                    crate::error!("tcp sockcm: server ep {:p} got an unexpected message", ep.handle);
                    return self.fail(state, id, UCS_ERR_IO_ERROR);
                }
                ep.flags |= st::SERVER_NOTIFIED;
                return Call::ServerNotify { handle: ep.handle, cbs: ep.cbs, status };
            }
            if ep.flags & (st::SERVER_CREATED | st::CONN_REQ_GIVEN) == 0 {
                let fd = ep.fd();
                let handle = ep.handle;
                let lid = ep.listener;
                let Some(l) = state.listeners.get(&lid) else {
                    crate::debug!("tcp sockcm: connection request on a destroyed listener dropped");
                    free_internal(state, id);
                    return Call::None;
                };
                let (listener, cb, user_data) = (l.handle, l.conn_request_cb, l.user_data);
                let dev = match sock::ifname_of(fd) {
                    Ok(d) => d,
                    Err(s) => return self.fail(state, id, s),
                };
                let Ok(peer) = sock::peer_addr(fd) else {
                    return self.fail(state, id, UCS_ERR_CONNECTION_RESET);
                };
                let Some(dev_addr) = device_addr_of(&peer.0) else {
                    return self.fail(state, id, UCS_ERR_INVALID_PARAM);
                };
                if let Some(ep) = state.eps.get_mut(&id) {
                    ep.flags |= st::CONN_REQ_GIVEN;
                }
                return Call::ConnRequest { listener, cb, user_data, handle, dev, dev_addr, data, peer };
            }
            crate::error!("tcp sockcm: server ep {:p} got a message in an unexpected state 0x{:x}", ep.handle, ep.flags);
            return self.fail(state, id, UCS_ERR_IO_ERROR);
        }
        // Client.
        if status == UCS_ERR_REJECTED {
            crate::debug!("tcp sockcm: client ep {:p} was rejected by the server", ep.handle);
            return self.fail(state, id, UCS_ERR_REJECTED);
        }
        if ep.flags & st::CLIENT_CONNECTED != 0 {
            crate::error!("tcp sockcm: client ep {:p} got an unexpected message", ep.handle);
            return self.fail(state, id, UCS_ERR_IO_ERROR);
        }
        let remote = sock::peer_addr(ep.fd()).ok().and_then(|p| device_addr_of(&p.0));
        let Some(dev_addr) = remote else {
            return self.fail(state, id, UCS_ERR_CONNECTION_RESET);
        };
        ep.flags |= st::CLIENT_CONNECTED;
        Call::ClientConnect { handle: ep.handle, cbs: ep.cbs, remote: Some((dev_addr, data)), status }
    }

    /// A client's connection attempt finished (writable or error).
    fn on_connected(&self, state: &mut CmState, id: u64) -> Call {
        let Some(ep) = state.eps.get_mut(&id) else { return Call::None };
        let err = sock::so_error(ep.fd());
        if err != 0 {
            let status = match err {
                libc::ECONNREFUSED => UCS_ERR_NOT_CONNECTED,
                libc::EPIPE | libc::ECONNRESET => UCS_ERR_CONNECTION_RESET,
                libc::ENETUNREACH | libc::EHOSTUNREACH | libc::ETIMEDOUT => UCS_ERR_UNREACHABLE,
                _ => UCS_ERR_IO_ERROR,
            };
            crate::diag!("tcp sockcm: client ep {:p} could not connect: {}", ep.handle, sock::errno_str(err));
            return self.fail(state, id, status);
        }
        let dev = match sock::ifname_of(ep.fd()) {
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

    /// Run a deferred call with no lock held.
    fn run(&self, call: Call) {
        match call {
            Call::None => {}
            Call::Resolve { handle, cbs, dev, status, id } => {
                let args = uct_cm_ep_resolve_args_t {
                    field_mask: UCT_CM_EP_RESOLVE_ARGS_FIELD_DEV_NAME | UCT_CM_EP_RESOLVE_ARGS_FIELD_STATUS,
                    dev_name: dev_name_array(&dev),
                    status,
                };
                let Some(cb) = cbs.resolve else { return };
                crate::debug!("tcp sockcm: client ep {:p} resolved on {} ({})", handle, dev,
                              crate::core::log::status_str(status));
                // SAFETY: the user's callback with its own argument; `args`
                // lives across the call.
                let r = unsafe { cb(cbs.user_data, &args) };
                if r != UCS_OK {
                    crate::diag!("tcp sockcm: resolve callback failed: {}", crate::core::log::status_str(r));
                    let mut s = self.lock();
                    if let Some(ep) = s.eps.get_mut(&id) {
                        ep.flags |= st::UPPER_CB_FAILED | st::FAILED;
                        ep.polled = false;
                    }
                }
            }
            Call::PackAndSend { handle, cbs, dev, id } => {
                let r = self.invoke_pack(cbs, &dev);
                let call = {
                    let mut s = self.lock();
                    match r {
                        Ok(data) => match self.queue_msg(&mut s, id, &data, UCS_OK) {
                            Ok(()) => {
                                if let Some(ep) = s.eps.get_mut(&id) {
                                    ep.flags |= st::PACKED;
                                }
                                Call::None
                            }
                            Err(st) => self.fail(&mut s, id, st),
                        },
                        Err(_) => {
                            if let Some(ep) = s.eps.get_mut(&id) {
                                ep.flags |= st::UPPER_CB_FAILED | st::FAILED;
                                ep.polled = false;
                            }
                            Call::None
                        }
                    }
                };
                let _ = handle;
                self.run(call);
            }
            Call::ClientConnect { handle, cbs, remote, status } => {
                let Some(cb) = cbs.client_connect else { return };
                let mut rd = uct_cm_remote_data_t {
                    field_mask: 0,
                    dev_addr: std::ptr::null(),
                    dev_addr_length: 0,
                    conn_priv_data: std::ptr::null(),
                    conn_priv_data_length: 0,
                };
                if let Some((dev_addr, data)) = &remote {
                    rd.field_mask = UCT_CM_REMOTE_DATA_FIELD_DEV_ADDR | UCT_CM_REMOTE_DATA_FIELD_DEV_ADDR_LENGTH
                        | UCT_CM_REMOTE_DATA_FIELD_CONN_PRIV_DATA | UCT_CM_REMOTE_DATA_FIELD_CONN_PRIV_DATA_LENGTH;
                    rd.dev_addr = dev_addr.as_ptr() as *const uct_device_addr_t;
                    rd.dev_addr_length = dev_addr.len();
                    rd.conn_priv_data = data.as_ptr() as *const c_void;
                    rd.conn_priv_data_length = data.len();
                }
                let args = uct_cm_ep_client_connect_args_t {
                    field_mask: UCT_CM_EP_CLIENT_CONNECT_ARGS_FIELD_REMOTE_DATA | UCT_CM_EP_CLIENT_CONNECT_ARGS_FIELD_STATUS,
                    remote_data: &rd,
                    status,
                };
                // SAFETY: the user's callback; everything it is given lives
                // across the call.
                unsafe { cb(handle, cbs.user_data, &args) };
            }
            Call::ServerNotify { handle, cbs, status } => {
                let Some(cb) = cbs.server_notify else { return };
                let args = uct_cm_ep_server_conn_notify_args_t {
                    field_mask: UCT_CM_EP_SERVER_CONN_NOTIFY_ARGS_FIELD_STATUS,
                    status,
                };
                // SAFETY: the user's callback with its own argument.
                unsafe { cb(handle, cbs.user_data, &args) };
            }
            Call::Disconnect { handle, cbs } => {
                if let Some(cb) = cbs.disconnect {
                    // SAFETY: the user's callback with its own argument.
                    unsafe { cb(handle, cbs.user_data) };
                }
            }
            Call::ConnRequest { listener, cb, user_data, handle, dev, dev_addr, data, peer } => {
                let rd = uct_cm_remote_data_t {
                    field_mask: UCT_CM_REMOTE_DATA_FIELD_DEV_ADDR | UCT_CM_REMOTE_DATA_FIELD_DEV_ADDR_LENGTH
                        | UCT_CM_REMOTE_DATA_FIELD_CONN_PRIV_DATA | UCT_CM_REMOTE_DATA_FIELD_CONN_PRIV_DATA_LENGTH,
                    dev_addr: dev_addr.as_ptr() as *const uct_device_addr_t,
                    dev_addr_length: dev_addr.len(),
                    conn_priv_data: data.as_ptr() as *const c_void,
                    conn_priv_data_length: data.len(),
                };
                let args = uct_cm_listener_conn_request_args_t {
                    field_mask: UCT_CM_LISTENER_CONN_REQUEST_ARGS_FIELD_DEV_NAME
                        | UCT_CM_LISTENER_CONN_REQUEST_ARGS_FIELD_CONN_REQUEST
                        | UCT_CM_LISTENER_CONN_REQUEST_ARGS_FIELD_REMOTE_DATA
                        | UCT_CM_LISTENER_CONN_REQUEST_ARGS_FIELD_CLIENT_ADDR,
                    dev_name: dev_name_array(&dev),
                    conn_request: handle as uct_conn_request_h,
                    remote_data: &rd,
                    client_address: ucs_sock_addr_t { addr: &peer.0 as *const _ as *const libc::sockaddr, addrlen: peer.1 },
                };
                // SAFETY: the ep's iface is this CM's; remember the request
                // so that uct_ep_create/uct_listener_reject can check it.
                let iface = unsafe { (*handle).iface } as usize;
                pending().insert(handle as usize, iface);
                crate::debug!("tcp sockcm: connection request {:p} on {} with {} bytes of private data",
                              handle, dev, data.len());
                if let Some(cb) = cb {
                    // SAFETY: the user's callback; all it is given lives
                    // across the call.
                    unsafe { cb(listener, user_data, &args) };
                }
            }
        }
    }

    /// Call the user's pack callback for up to `priv_data_len` bytes.
    fn invoke_pack(&self, cbs: Callbacks, dev: &str) -> Result<Vec<u8>, ucs_status_t> {
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

    /// One round of socket polling. Events are handled, and the user's
    /// callbacks called, with the worker's async context blocked by this
    /// thread, as UCX's CM does from its async handlers (libucp asserts it).
    fn progress(&self, async_ctx: *mut ucs_async_context_t) -> u32 {
        let mut fds: Vec<libc::pollfd> = Vec::new();
        let mut keys: Vec<(bool, u64)> = Vec::new();
        {
            let s = self.lock();
            if s.eps.is_empty() && s.listeners.is_empty() {
                return 0;
            }
            for (&id, l) in &s.listeners {
                fds.push(libc::pollfd { fd: l.sock.0, events: libc::POLLIN, revents: 0 });
                keys.push((true, id));
            }
            for (&id, ep) in &s.eps {
                if !ep.polled {
                    continue;
                }
                let mut ev = 0;
                if ep.flags & st::CLIENT != 0 && ep.flags & st::RESOLVED == 0 {
                    ev |= libc::POLLOUT;
                } else {
                    ev |= libc::POLLIN;
                    if ep.tx_pending() {
                        ev |= libc::POLLOUT;
                    }
                }
                fds.push(libc::pollfd { fd: ep.fd(), events: ev, revents: 0 });
                keys.push((false, id));
            }
        }
        if fds.is_empty() {
            return 0;
        }
        // SAFETY: `fds` is a valid array of its length; timeout 0 never blocks.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, 0) };
        if n <= 0 {
            return 0;
        }
        let _blocked = crate::ucs::async_block::AsyncBlock::new(async_ctx);
        let mut count = 0;
        for (pfd, &(is_listener, id)) in fds.iter().zip(keys.iter()) {
            if pfd.revents == 0 {
                continue;
            }
            count += 1;
            if is_listener {
                self.accept_all(id);
            } else {
                self.ep_event(id, pfd.revents);
            }
        }
        count
    }

    fn accept_all(&self, lid: u64) {
        loop {
            let mut s = self.lock();
            let Some(l) = s.listeners.get(&lid) else { return };
            let sock = match sock::accept(l.sock.0) {
                Ok(Some(sk)) => sk,
                Ok(None) => return,
                Err(e) => {
                    crate::error!("tcp sockcm: accept on listener {:p} failed: {}", l.handle, sock::errno_str(e));
                    return;
                }
            };
            let listener_iface = self as *const SockCmTl;
            if let Err(st) = sock::apply_sockopts(sock.0, self.sndbuf, self.rcvbuf, self.syn_cnt) {
                crate::error!("tcp sockcm: could not set up an accepted socket: {}", crate::core::log::status_str(st));
                continue;
            }
            let id = next_id();
            let handle = self.new_ep_handle(id);
            crate::debug!("tcp sockcm: listener accepted fd {} as server ep {:p} (cm {:p})", sock.0, handle, listener_iface);
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
            });
        }
    }

    fn ep_event(&self, id: u64, revents: libc::c_short) {
        let call = {
            let mut s = self.lock();
            let Some(ep) = s.eps.get(&id) else { return };
            if !ep.polled {
                return;
            }
            if ep.flags & st::CLIENT != 0 && ep.flags & st::RESOLVED == 0 {
                self.on_connected(&mut s, id)
            } else if revents & (libc::POLLIN | libc::POLLERR | libc::POLLHUP) != 0 {
                self.on_readable(&mut s, id)
            } else if revents & libc::POLLOUT != 0 {
                match self.flush_tx(&mut s, id) {
                    Ok(()) => Call::None,
                    Err(st) => self.fail(&mut s, id, st),
                }
            } else {
                Call::None
            }
        };
        self.run(call);
    }

    /// A boxed endpoint handle on this CM's iface. `self` is the `tl` of the
    /// CM's boxed `Iface<SockCmTl>`.
    fn new_ep_handle(&self, id: u64) -> uct_ep_h {
        let iface = self.iface_handle();
        Box::into_raw(Box::new(CmEp { base: uct_ep_t { iface }, tl: SockCmEp { id } })) as uct_ep_h
    }

    fn iface_handle(&self) -> uct_iface_h {
        let off = offset_of!(CmIface, tl);
        // SAFETY: every SockCmTl lives inside a boxed Iface<SockCmTl> (see
        // `open`), so stepping back by the field offset finds the iface.
        unsafe { (self as *const SockCmTl as *const u8).sub(off) as uct_iface_h }
    }
}

/// Whether `cbs` were set as UCX's common endpoint checks ask.
fn common_callbacks(params: &uct_ep_params_t, cbs: &mut Callbacks) -> Result<(), ucs_status_t> {
    let m = params.field_mask;
    if m & UCT_EP_PARAM_FIELD_SOCKADDR_CB_FLAGS == 0 || params.sockaddr_cb_flags & UCT_CB_FLAG_ASYNC == 0 {
        crate::error!("tcp sockcm: UCT_EP_PARAM_FIELD_SOCKADDR_CB_FLAGS with UCT_CB_FLAG_ASYNC is required \
                       (field_mask 0x{:x}, sockaddr_cb_flags 0x{:x})", m, params.sockaddr_cb_flags);
        return Err(UCS_ERR_UNSUPPORTED);
    }
    macro_rules! take {
        ($flag:expr, $src:expr, $dst:expr, $name:literal) => {
            if m & $flag != 0 {
                if $src.is_none() {
                    crate::error!("tcp sockcm: {} is set but the callback is NULL", $name);
                    return Err(UCS_ERR_INVALID_PARAM);
                }
                $dst = $src;
            }
        };
    }
    take!(UCT_EP_PARAM_FIELD_SOCKADDR_PACK_CB, params.sockaddr_pack_cb, cbs.pack, "UCT_EP_PARAM_FIELD_SOCKADDR_PACK_CB");
    take!(UCT_EP_PARAM_FIELD_CM_RESOLVE_CB, params.cm_resolve_cb, cbs.resolve, "UCT_EP_PARAM_FIELD_CM_RESOLVE_CB");
    take!(UCT_EP_PARAM_FIELD_SOCKADDR_DISCONNECT_CB, params.disconnect_cb, cbs.disconnect,
          "UCT_EP_PARAM_FIELD_SOCKADDR_DISCONNECT_CB");
    cbs.user_data = if m & UCT_EP_PARAM_FIELD_USER_DATA != 0 { params.user_data } else { std::ptr::null_mut() };
    Ok(())
}

// ---------------------------------------------------------------------------
// The vtable side (endpoint operations).

impl Transport for SockCmTl {
    type Ep = SockCmEp;
    const OPS: u64 = op(slot::EP_CONNECT) | op(slot::EP_DISCONNECT) | op(slot::CM_EP_CONN_NOTIFY);
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
            match sock::local_addr(e.fd()) {
                Ok((ss, _)) => attr.local_address = ss,
                Err(err) => {
                    crate::error!("tcp sockcm: getsockname failed: {}", err);
                    return UCS_ERR_IO_ERROR;
                }
            }
        }
        if attr.field_mask & UCT_EP_ATTR_FIELD_REMOTE_SOCKADDR != 0 {
            match sock::peer_addr(e.fd()) {
                Ok((ss, _)) => attr.remote_address = ss,
                Err(err) => {
                    crate::debug!("tcp sockcm: getpeername failed: {}", err);
                    return UCS_ERR_NOT_CONNECTED;
                }
            }
        }
        UCS_OK
    }

    fn ep_connect(iface: &Iface<Self>, ep: &Ep<Self>, params: Option<&uct_ep_connect_params_t>) -> ucs_status_t {
        let (data, len) = match params {
            Some(p) => (
                if p.field_mask & UCT_EP_CONNECT_PARAM_FIELD_PRIVATE_DATA != 0 { p.private_data } else { std::ptr::null() },
                if p.field_mask & UCT_EP_CONNECT_PARAM_FIELD_PRIVATE_DATA_LENGTH != 0 { p.private_data_length } else { 0 },
            ),
            None => (std::ptr::null(), 0),
        };
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
        if len > 0 && data.is_null() {
            crate::error!("tcp sockcm: NULL private data of {} bytes", len);
            return UCS_ERR_INVALID_PARAM;
        }
        let bytes = if len == 0 {
            Vec::new()
        } else {
            // SAFETY: the caller passes `len` readable bytes at `data` (checked non-NULL).
            unsafe { std::slice::from_raw_parts(data as *const u8, len) }.to_vec()
        };
        e.flags |= st::PACKED;
        // A broken connection shows on the next poll and is reported there.
        let _ = tl.queue_msg(&mut s, id, &bytes, UCS_OK);
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
        // SAFETY: shutting down our own socket.
        if unsafe { libc::shutdown(e.fd(), libc::SHUT_WR) } < 0 {
            let err = std::io::Error::last_os_error();
            if err.raw_os_error() == Some(libc::ENOTCONN) {
                crate::debug!("tcp sockcm: ep {:p}: shutdown: {} (ignored)", e.handle, err);
                return UCS_OK;
            }
            crate::error!("tcp sockcm: ep {:p}: shutdown failed: {}", e.handle, err);
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
        UCS_OK
    }
}

static INTERNAL: InternalOps = Internal::<SockCmTl>::OPS;

unsafe extern "C" fn progress_cb(arg: *mut c_void) -> c_uint {
    let r = std::panic::catch_unwind(|| {
        // SAFETY: `arg` is the CM's iface, alive until the callback is
        // removed (when the CM closes).
        let iface = unsafe { &*(arg as *const CmIface) };
        // SAFETY: the worker outlives the CMs opened on it.
        let async_ctx = unsafe { (*iface.hdr.worker).async_ctx };
        iface.tl.progress(async_ctx)
    });
    r.unwrap_or(0)
}

// ---------------------------------------------------------------------------
// The connection manager and its listeners.

struct SockCm {
    iface: *mut CmIface,
    worker: *const WorkerObj,
    prog_id: c_int,
}

impl SockCm {
    fn tl(&self) -> &SockCmTl {
        // SAFETY: the iface lives as long as the CM.
        unsafe { &(*self.iface).tl }
    }

    fn client_ep_create(&self, params: &uct_ep_params_t) -> Result<uct_ep_h, ucs_status_t> {
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
        let (server, slen) = sock::copy_sockaddr(sa.addr, sa.addrlen)?;
        let sk = sock::stream_socket(server.ss_family as c_int)?;
        sock::apply_sockopts(sk.0, tl.sndbuf, tl.rcvbuf, tl.syn_cnt)?;
        if m & UCT_EP_PARAM_FIELD_LOCAL_SOCKADDR != 0 {
            if params.local_sockaddr.is_null() {
                crate::error!("tcp sockcm: UCT_EP_PARAM_FIELD_LOCAL_SOCKADDR with a NULL sockaddr");
                return Err(UCS_ERR_INVALID_PARAM);
            }
            // SAFETY: checked non-NULL.
            let la = unsafe { &*params.local_sockaddr };
            let (local, llen) = sock::copy_sockaddr(la.addr, la.addrlen)?;
            if let Err(e) = sock::bind(sk.0, &local, llen) {
                crate::diag!("tcp sockcm: binding the client socket failed: {}", e);
                return Err(UCS_ERR_IO_ERROR);
            }
        }
        if let Err(e) = sock::connect(sk.0, &server, slen) {
            crate::diag!("tcp sockcm: connect failed: {}", sock::errno_str(e));
            return Err(match e {
                libc::ECONNREFUSED => UCS_ERR_NOT_CONNECTED,
                libc::ENETUNREACH | libc::EHOSTUNREACH | libc::ETIMEDOUT => UCS_ERR_UNREACHABLE,
                _ => UCS_ERR_IO_ERROR,
            });
        }
        let id = next_id();
        let handle = tl.new_ep_handle(id);
        crate::debug!("tcp sockcm: client ep {:p} (fd {}) connecting", handle, sk.0);
        tl.lock().eps.insert(id, EpState {
            handle,
            sock: sk,
            flags: st::CLIENT,
            cbs,
            listener: 0,
            tx: Vec::new(),
            tx_off: 0,
            rx: Vec::new(),
            polled: true,
        });
        Ok(handle)
    }

    fn server_ep_create(&self, params: &uct_ep_params_t) -> Result<uct_ep_h, ucs_status_t> {
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
            let moved = origin.tl.lock().eps.remove(&id);
            let Some(e) = moved else { return Err(UCS_ERR_INVALID_PARAM) };
            tl.lock().eps.insert(id, e);
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
            if len > 0 && params.private_data.is_null() {
                crate::error!("tcp sockcm: NULL private data of {} bytes", len);
                return fail(UCS_ERR_INVALID_PARAM);
            }
            if len == 0 {
                Vec::new()
            } else {
                // SAFETY: the caller passes `len` readable bytes (checked non-NULL).
                unsafe { std::slice::from_raw_parts(params.private_data as *const u8, len) }.to_vec()
            }
        } else if m & UCT_EP_PARAM_FIELD_SOCKADDR_PACK_CB != 0 {
            let dev = match sock::ifname_of(fd) {
                Ok(d) => d,
                Err(st) => return fail(st),
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
        e.cbs = cbs;
        e.flags |= st::SERVER_CREATED | st::PACKED;
        crate::debug!("tcp sockcm: server ep {:p} (fd {}) created, answering with {} bytes", handle, fd, data.len());
        // A broken connection shows on the next poll (notify callback).
        let _ = tl.queue_msg(&mut s, id, &data, UCS_OK);
        Ok(handle)
    }
}

impl CmImpl for SockCm {
    fn query(&self, attr: &mut uct_cm_attr_t) -> ucs_status_t {
        if attr.field_mask & UCT_CM_ATTR_FIELD_MAX_CONN_PRIV != 0 {
            attr.max_conn_priv = self.tl().priv_data_len;
        }
        UCS_OK
    }

    fn listener_create(&self, _cm: uct_cm_h, addr: *const libc::sockaddr, len: libc::socklen_t,
                       params: &uct_listener_params_t, listener: uct_listener_h)
                       -> Result<Box<dyn ListenerImpl>, ucs_status_t> {
        if params.field_mask & UCT_LISTENER_PARAM_FIELD_CONN_REQUEST_CB == 0 || params.conn_request_cb.is_none() {
            crate::error!("tcp sockcm: a listener needs UCT_LISTENER_PARAM_FIELD_CONN_REQUEST_CB");
            return Err(UCS_ERR_INVALID_PARAM);
        }
        let max = sock::max_backlog();
        let backlog = if params.field_mask & UCT_LISTENER_PARAM_FIELD_BACKLOG != 0 {
            if params.backlog > max {
                crate::diag!("tcp sockcm: backlog {} is more than the system's {}; using {}", params.backlog, max, max);
                max
            } else {
                params.backlog
            }
        } else {
            max
        };
        if backlog <= 0 {
            crate::error!("tcp sockcm: backlog ({}) must be a positive number", backlog);
            return Err(UCS_ERR_INVALID_PARAM);
        }
        let (ss, slen) = sock::copy_sockaddr(addr, len)?;
        let tl = self.tl();
        let sk = sock::stream_socket(ss.ss_family as c_int)?;
        if tl.reuse_addr {
            sock::set_reuseaddr(sk.0)?;
        }
        if let Err(e) = sock::bind(sk.0, &ss, slen) {
            let busy = e.raw_os_error() == Some(libc::EADDRINUSE);
            crate::error!("tcp sockcm: bind(fd {}) failed: {}", sk.0, e);
            return Err(if busy { UCS_ERR_BUSY } else { UCS_ERR_IO_ERROR });
        }
        if let Err(e) = sock::listen(sk.0, backlog) {
            crate::error!("tcp sockcm: listen(fd {}, backlog {}) failed: {}", sk.0, backlog, e);
            return Err(UCS_ERR_IO_ERROR);
        }
        let id = next_id();
        crate::debug!("tcp sockcm: listener {:p} listening on fd {}", listener, sk.0);
        tl.lock().listeners.insert(id, ListenerState {
            handle: listener,
            sock: sk,
            conn_request_cb: params.conn_request_cb,
            user_data: if params.field_mask & UCT_LISTENER_PARAM_FIELD_USER_DATA != 0 {
                params.user_data
            } else {
                std::ptr::null_mut()
            },
        });
        Ok(Box::new(SockListener { iface: self.iface, id }))
    }

    fn ep_create(&self, params: &uct_ep_params_t) -> Result<uct_ep_h, ucs_status_t> {
        if params.field_mask & UCT_EP_PARAM_FIELD_SOCKADDR != 0 {
            self.client_ep_create(params)
        } else if params.field_mask & UCT_EP_PARAM_FIELD_CONN_REQUEST != 0 {
            self.server_ep_create(params)
        } else {
            crate::error!("tcp sockcm: either UCT_EP_PARAM_FIELD_SOCKADDR or UCT_EP_PARAM_FIELD_CONN_REQUEST is needed");
            Err(UCS_ERR_INVALID_PARAM)
        }
    }
}

impl Drop for SockCm {
    fn drop(&mut self) {
        // SAFETY: the worker outlives the CMs opened on it; prog_id came
        // from the same queue.
        unsafe {
            let q = (*self.worker).progress_q();
            ucs::ucs_callbackq_remove_safe(q, self.prog_id);
        }
        let tl = self.tl();
        let user_eps = {
            let mut s = tl.lock();
            s.closed = true;
            // Connections the user never saw go with the CM.
            let internal: Vec<u64> = s.eps.iter()
                .filter(|(_, e)| e.flags & (st::SERVER_CREATED | st::CLIENT) == 0)
                .map(|(&id, _)| id)
                .collect();
            for id in internal {
                free_internal(&mut s, id);
            }
            s.listeners.clear();
            s.eps.len()
        };
        if user_eps > 0 {
            // Their handles still point at this iface: keep it (leaked) so
            // that uct_ep_destroy stays safe.
            crate::warn!("tcp sockcm: CM closed with {} endpoints not destroyed", user_eps);
            return;
        }
        // SAFETY: boxed in `open`, freed once, no endpoint refers to it.
        unsafe { drop(Box::from_raw(self.iface)) };
    }
}

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
            match sock::local_addr(l.sock.0) {
                Ok((ss, _)) => attr.sockaddr = ss,
                Err(e) => {
                    crate::error!("tcp sockcm: getsockname on listener {:p} failed: {}", l.handle, e);
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
            Ok(()) => UCS_OK,
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
            crate::debug!("tcp sockcm: listener {:p} (fd {}) destroyed", l.handle, l.sock.0);
        }
    }
}

/// `cm_open` of the tcp component.
pub fn open(_component: &'static Component, worker: &WorkerObj, config: *const c_void)
            -> Result<Box<dyn CmImpl>, ucs_status_t> {
    if config.is_null() {
        return Err(UCS_ERR_INVALID_PARAM);
    }
    // SAFETY: the generic open hands us this component's parsed CM config.
    let cfg = unsafe { &*(config as *const SockCmConfig) };
    let tl = SockCmTl {
        priv_data_len: cfg.priv_data_len.saturating_add(HDR_LEN),
        sndbuf: cfg.sndbuf as u64,
        rcvbuf: cfg.rcvbuf as u64,
        syn_cnt: cfg.syn_cnt,
        reuse_addr: cfg.reuse_addr != 0,
        state: Mutex::new(CmState::default()),
    };
    let wp = worker as *const WorkerObj;
    let hdr = IfaceHeader::bare(worker, &INTERNAL);
    let iface = Iface::into_handle(hdr, tl) as *mut CmIface;
    // SAFETY: the worker's queue is live; add_safe may be called from any
    // thread; the callback is removed before the iface is freed.
    let prog_id = unsafe {
        ucs::ucs_callbackq_add_safe(worker.progress_q(), Some(progress_cb),
                                    iface as *mut c_void, 0)
    };
    crate::debug!("tcp sockcm: created cm iface {:p} (private data up to {} bytes)", iface,
                  cfg.priv_data_len.saturating_add(HDR_LEN));
    Ok(Box::new(SockCm { iface, worker: wp, prog_id }))
}
