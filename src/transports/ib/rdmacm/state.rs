//! What an rdmacm CM keeps: its endpoints, listeners and connection
//! requests not yet answered, keyed by the number each CM id carries as its
//! context; the dummy-QP completion queue of each device; the endpoint
//! flags; and the user calls an event leads to, run once the lock is
//! released.

use crate::abi::*;
use crate::core::cm::{Callbacks, PrivData};
use crate::core::iface::{Ep, Iface};
use crate::sys::addr::SockAddr;
use crate::sys::verbs::cm::{CmId, DummyCq, DummyQp, EventChannel};
use libc::c_void;
use once_cell::sync::Lazy;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

/// The longest private data of an RDMA CM connection (RC).
pub(super) const PRIV_DATA_LEN: usize = 56;
/// The header our private data starts with: its length, then a status.
pub(super) const HDR_LEN: usize = 2;
/// What the user may send: the rest.
pub(super) const MAX_CONN_PRIV: usize = PRIV_DATA_LEN - HDR_LEN;

static NEXT_KEY: AtomicU64 = AtomicU64::new(1);

/// A new key (never 0: an id without context has 0).
pub(super) fn next_key() -> u64 {
    NEXT_KEY.fetch_add(1, Ordering::Relaxed)
}

/// Endpoint flags, after the original's.
pub(super) mod st {
    pub const CLIENT: u32 = 1 << 0;
    pub const SERVER: u32 = 1 << 1;
    pub const RESOLVE_CB_INVOKED: u32 = 1 << 2;
    pub const CONN_CB_INVOKED: u32 = 1 << 3;
    pub const NOTIFY_CB_INVOKED: u32 = 1 << 4;
    pub const GOT_DISCONNECT: u32 = 1 << 5;
    pub const DISCONNECTING: u32 = 1 << 6;
    pub const FAILED: u32 = 1 << 7;
}

pub(super) struct EpState {
    pub(super) handle: uct_ep_h,
    /// The dummy QP whose number the connection carries (before `id`: it
    /// goes first).
    pub(super) qp: Option<DummyQp>,
    pub(super) id: CmId,
    pub(super) flags: u32,
    /// The failure the endpoint ended with (`UCS_OK` while it has none).
    pub(super) status: ucs_status_t,
    pub(super) cbs: Callbacks,
}

impl EpState {
    pub(super) fn connected(&self) -> bool {
        self.flags & (st::CONN_CB_INVOKED | st::NOTIFY_CB_INVOKED) != 0
    }
    pub(super) fn side(&self) -> &'static str {
        if self.flags & st::SERVER != 0 { "server" } else { "client" }
    }
    /// "local->remote" for log lines.
    pub(super) fn addrs(&self) -> String {
        addrs_of(&self.id)
    }
}

/// "local->remote" of an id, for log lines.
pub(super) fn addrs_of(id: &CmId) -> String {
    let show = |a: Option<SockAddr>| a.map_or_else(|| "<invalid>".to_string(), |a| a.to_string());
    format!("{}->{}", show(id.local_addr()), show(id.peer_addr()))
}

pub(super) struct ListenerState {
    pub(super) handle: uct_listener_h,
    pub(super) id: CmId,
    pub(super) conn_request_cb: uct_cm_listener_conn_request_callback_t,
    pub(super) user_data: *mut c_void,
}

/// A connection request handed to a listener's callback and not yet
/// answered (`uct_ep_create` or `uct_listener_reject`).
pub(super) struct ReqState {
    pub(super) id: CmId,
    /// The client went away (or the request failed) meanwhile.
    pub(super) failed: bool,
}

/// The dummy-QP completion queue of one device, and the QPs on it.
pub(super) struct DevCtx {
    pub(super) cq: DummyCq,
    pub(super) qps: usize,
}

/// The CM's tables. Endpoints and requests are declared (and dropped)
/// before the device contexts whose CQs their QPs use.
#[derive(Default)]
pub(super) struct CmState {
    pub(super) eps: HashMap<u64, EpState>,
    pub(super) reqs: HashMap<u64, ReqState>,
    pub(super) listeners: HashMap<u64, ListenerState>,
    pub(super) devs: HashMap<u64, DevCtx>,
}

// SAFETY: the raw pointers in the state are handles and user arguments that
// are only passed back to their owner; the state is always behind the mutex.
unsafe impl Send for CmState {}

/// Connection requests handed to a listener callback and not yet consumed,
/// across CMs (libucp may answer on another worker's CM): key -> the
/// `RdmaCmTl` that holds the request.
static PENDING: Lazy<Mutex<HashMap<u64, usize>>> = Lazy::new(|| Mutex::new(HashMap::new()));

pub(super) fn pending() -> MutexGuard<'static, HashMap<u64, usize>> {
    PENDING.lock().unwrap_or_else(|e| e.into_inner())
}

/// The transport behind the CM's endpoints (its vtable) and the CM's state.
pub struct RdmaCmTl {
    /// The tables (declared before the channel: the ids on it go first).
    pub(super) state: Mutex<CmState>,
    pub(super) channel: EventChannel,
    /// `UCX_RDMA_CM_SOURCE_ADDRESS`.
    pub(super) src_addr: Option<SockAddr>,
    /// `UCX_RDMA_CM_TIMEOUT` in ms (address and route resolution).
    pub(super) timeout_ms: i32,
    /// `UCX_RDMA_CM_RESERVED_QPN` is "yes" (no device here has them).
    pub(super) reserved_qpn_required: bool,
    pub(super) reuse_addr: bool,
    /// `UCX_RDMA_CM_FAILURE`: the level of network failures' log lines.
    pub(super) failure_level: u32,
    /// Whether the state may hold anything (the progress callback of a
    /// polled context returns at once while it holds nothing).
    pub(super) busy: AtomicBool,
}

/// The endpoint part of `Ep<RdmaCmTl>`: its key in the CM's state.
pub struct RdmaCmEp {
    pub(super) key: u64,
}

pub(super) type CmIface = Iface<RdmaCmTl>;
pub(super) type CmEp = Ep<RdmaCmTl>;

impl RdmaCmTl {
    pub(super) fn lock(&self) -> MutexGuard<'_, CmState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(super) fn mark_busy(&self) {
        self.busy.store(true, Ordering::Release);
    }

    /// A boxed endpoint handle on this CM's iface.
    pub(super) fn new_ep_handle(&self, key: u64) -> uct_ep_h {
        CmEp::boxed_handle(self.iface_handle(), RdmaCmEp { key })
    }

    pub(super) fn iface_handle(&self) -> uct_iface_h {
        // SAFETY: every RdmaCmTl lives inside a boxed Iface<RdmaCmTl> (see `cm::open`).
        unsafe { CmIface::handle_of_tl(self) }
    }
}

/// What to do once the state lock is released.
pub(super) enum Call {
    /// Resolved: the client's resolve callback with its device; a failure
    /// it returns fails the endpoint.
    Resolve { handle: uct_ep_h, cbs: Callbacks, dev: String, key: u64 },
    /// Resolved, for a client with a pack callback: pack and connect.
    PackAndConnect { cbs: Callbacks, dev: String, key: u64 },
    /// The resolve callback with a failure.
    ResolveFailed { cbs: Callbacks, status: ucs_status_t },
    /// `remote`: the peer's device address and private data.
    ClientConnect { handle: uct_ep_h, cbs: Callbacks, remote: Option<(Vec<u8>, PrivData)>, status: ucs_status_t },
    ServerNotify { handle: uct_ep_h, cbs: Callbacks, status: ucs_status_t },
    Disconnect { handle: uct_ep_h, cbs: Callbacks },
    ConnRequest { listener: uct_listener_h, cb: uct_cm_listener_conn_request_callback_t, user_data: *mut c_void,
                  key: u64, dev: String, dev_addr: Vec<u8>, data: PrivData,
                  client: (libc::sockaddr_storage, libc::socklen_t) },
}
