//! The state a connection manager keeps: its endpoints and listeners, keyed
//! by id, behind one mutex; the endpoint state flags; the connection requests
//! waiting for an answer; the deferred user callbacks (`Call`) that run
//! once the lock is released; and the CM's setup of its sockets (options,
//! the device a connection runs on). Sockets are `crate::sys` values: an
//! endpoint's or listener's socket closes when its state is dropped.

use crate::abi::*;
use crate::core::config::UNITS_AUTO;
use crate::core::iface::{Ep, Iface};
use crate::sys::addr::SockAddr;
use crate::sys::socket::Socket;
use crate::sys::{errno_str, netif};
use libc::c_void;
use once_cell::sync::Lazy;
use std::collections::{HashMap, VecDeque};
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

pub(super) use super::proto::st;

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

pub(super) fn next_id() -> u64 {
    NEXT_ID.fetch_add(1, Ordering::Relaxed)
}

pub(super) use crate::core::cm::Callbacks;

pub(super) struct EpState {
    pub(super) handle: uct_ep_h,
    pub(super) sock: Socket,
    pub(super) flags: u32,
    pub(super) cbs: Callbacks,
    /// Listener that accepted it (server side).
    pub(super) listener: u64,
    pub(super) tx: Vec<u8>,
    pub(super) tx_off: usize,
    pub(super) rx: Vec<u8>,
    /// Still watched (cleared once the endpoint failed).
    pub(super) polled: bool,
    /// The events its socket is in the CM's epoll set for (0: not in it).
    pub(super) armed: u32,
}

impl EpState {
    pub(super) fn fd(&self) -> RawFd {
        self.sock.fd()
    }
    pub(super) fn connected(&self) -> bool {
        self.flags & (st::CLIENT_CONNECTED | st::SERVER_NOTIFIED) != 0
    }
    /// A client whose connection attempt has not finished.
    pub(super) fn connecting(&self) -> bool {
        self.flags & st::CLIENT != 0 && self.flags & st::RESOLVED == 0
    }
    pub(super) fn tx_pending(&self) -> bool {
        self.tx_off < self.tx.len()
    }
    pub(super) fn side(&self) -> &'static str {
        if self.flags & st::SERVER != 0 { "server" } else { "client" }
    }
}

pub(super) struct ListenerState {
    pub(super) handle: uct_listener_h,
    pub(super) sock: Socket,
    pub(super) conn_request_cb: uct_cm_listener_conn_request_callback_t,
    pub(super) user_data: *mut c_void,
    /// Not polled before this time: `accept` ran out of descriptors or
    /// memory, and waiting lets the process free some.
    pub(super) paused_until: Option<Instant>,
    /// The events its socket is in the CM's epoll set for (0: not in it).
    pub(super) armed: u32,
}

#[derive(Default)]
pub(super) struct CmState {
    pub(super) eps: HashMap<u64, EpState>,
    pub(super) listeners: HashMap<u64, ListenerState>,
    pub(super) closed: bool,
    /// Accepted connections in accept order, with the time by which their
    /// connection request must be complete (HANDSHAKE_TIMEOUT). Entries
    /// stay until their time comes, whatever became of the connection;
    /// progress looks at the front only.
    pub(super) handshake_deadlines: VecDeque<(Instant, u64)>,
    /// When the CM's timer is set to expire (event-driven CMs).
    pub(super) clock_at: Option<Instant>,
}

// SAFETY: the raw pointers in the state are handles and user arguments that
// are only passed back to their owner; the state is always behind the mutex.
unsafe impl Send for CmState {}

/// Connection requests handed to a listener callback and not yet consumed
/// (by `uct_ep_create` or `uct_listener_reject`): endpoint handle -> the
/// iface of the CM that holds its state.
static PENDING_REQUESTS: Lazy<Mutex<HashMap<usize, usize>>> = Lazy::new(|| Mutex::new(HashMap::new()));

pub(super) fn pending() -> MutexGuard<'static, HashMap<usize, usize>> {
    PENDING_REQUESTS.lock().unwrap_or_else(|e| e.into_inner())
}

/// The transport behind the CM's endpoints (its vtable) and the CM's state.
pub struct SockCmTl {
    pub(super) priv_data_len: usize,
    pub(super) sndbuf: u64,
    pub(super) rcvbuf: u64,
    pub(super) syn_cnt: u64,
    /// `TCP_USER_TIMEOUT` to set, ms (1.22+ `UCX_TCP_CM_USER_TIMEOUT`).
    pub(super) user_timeout_ms: Option<u32>,
    pub(super) reuse_addr: bool,
    /// How long an accepted connection may take to deliver its request
    /// (None: forever).
    pub(super) handshake_timeout: Option<Duration>,
    pub(super) state: Mutex<CmState>,
    /// The CM's epoll set, when libucs's async thread drives the CM
    /// (`watch`); None: the worker's progress polls its sockets.
    pub(super) watch: Option<super::watch::Watch>,
    /// Whether the state may hold an endpoint or a listener: set after
    /// every insertion, cleared by the progress callback (under the lock)
    /// when it finds none. While clear, progress returns without taking
    /// the lock: every libucp worker has a CM, and most never use it.
    pub(super) busy: AtomicBool,
}

/// The endpoint part of `Ep<SockCmTl>`: its key in the CM's state.
pub struct SockCmEp {
    pub(super) id: u64,
}

pub(super) type CmIface = Iface<SockCmTl>;
pub(super) type CmEp = Ep<SockCmTl>;

impl SockCmTl {
    pub(super) fn lock(&self) -> MutexGuard<'_, CmState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// After an endpoint or a listener went into the state.
    pub(super) fn mark_busy(&self) {
        self.busy.store(true, Ordering::Release);
    }
}

/// What to do once the state lock is released.
pub(super) enum Call {
    None,
    Resolve { handle: uct_ep_h, cbs: Callbacks, dev: String, status: ucs_status_t, id: u64 },
    PackAndSend { handle: uct_ep_h, cbs: Callbacks, dev: String, id: u64 },
    ClientConnect { handle: uct_ep_h, cbs: Callbacks, remote: Option<(Vec<u8>, crate::core::cm::PrivData)>,
                    status: ucs_status_t },
    ServerNotify { handle: uct_ep_h, cbs: Callbacks, status: ucs_status_t },
    Disconnect { handle: uct_ep_h, cbs: Callbacks },
    ConnRequest { listener: uct_listener_h, cb: uct_cm_listener_conn_request_callback_t, user_data: *mut c_void,
                  handle: uct_ep_h, dev: String, dev_addr: Vec<u8>, data: crate::core::cm::PrivData, peer: (libc::sockaddr_storage, libc::socklen_t) },
}

impl SockCmTl {
    /// `SO_SNDBUF`/`SO_RCVBUF` (at most `INT_MAX`) unless "auto", and
    /// `TCP_SYNCNT` (at most 255, best effort) unless "auto", on a new
    /// socket of the CM.
    pub(super) fn apply_sockopts(&self, s: &Socket) -> Result<(), ucs_status_t> {
        type SetSize = fn(&Socket, usize) -> Result<(), crate::sys::Errno>;
        let sizes: [(u64, SetSize, &str); 2] =
            [(self.sndbuf, Socket::set_sndbuf, "SO_SNDBUF"), (self.rcvbuf, Socket::set_rcvbuf, "SO_RCVBUF")];
        for (v, set, what) in sizes {
            if v != UNITS_AUTO {
                let v = v.min(libc::c_int::MAX as u64) as usize;
                if let Err(e) = set(s, v) {
                    crate::error!("tcp sockcm: setsockopt({}, {}) failed: {}", what, v, errno_str(e as i32));
                    return Err(UCS_ERR_IO_ERROR);
                }
            }
        }
        if self.syn_cnt != UNITS_AUTO {
            if let Err(e) = s.set_syncnt(self.syn_cnt.min(255) as i32) {
                crate::debug!("tcp sockcm: setsockopt(TCP_SYNCNT) failed: {}", errno_str(e as i32));
            }
        }
        if let Some(ms) = self.user_timeout_ms {
            if let Err(e) = s.set_user_timeout(ms) {
                crate::error!("tcp sockcm: setsockopt(TCP_USER_TIMEOUT) failed: {}", errno_str(e as i32));
                return Err(UCS_ERR_IO_ERROR);
            }
        }
        Ok(())
    }
}

/// A socket address handed over by the user, checked (NULL, family,
/// length) with the refusal logged.
///
/// # Safety
/// `sa` must be NULL or readable for `len` bytes.
pub(super) unsafe fn user_addr(sa: *const libc::sockaddr, len: libc::socklen_t) -> Result<SockAddr, ucs_status_t> {
    // SAFETY: the caller's contract is the one of `from_user`.
    unsafe { SockAddr::from_user(sa, len) }.map_err(|e| {
        crate::error!("tcp sockcm: {}", e);
        UCS_ERR_INVALID_PARAM
    })
}

/// The name of the network device whose address is the local address of
/// the connected socket `s` (what UCX reports as the device name).
pub(super) fn ifname_of(s: &Socket) -> Result<String, ucs_status_t> {
    let local = s.local_addr().map_err(|e| {
        crate::warn!("tcp sockcm: getsockname(fd {}) failed: {}", s.fd(), errno_str(e as i32));
        UCS_ERR_IO_ERROR
    })?;
    match netif::name_of_address(&local) {
        Ok(Some(name)) => Ok(name),
        Ok(None) => {
            crate::debug!("tcp sockcm: no network device owns the local address of fd {}", s.fd());
            Err(UCS_ERR_NO_DEVICE)
        }
        Err(e) => {
            crate::warn!("tcp sockcm: getifaddrs failed: {}", errno_str(e as i32));
            Err(UCS_ERR_IO_ERROR)
        }
    }
}

/// Free an endpoint the user never saw (or no longer owns).
pub(super) fn free_internal(state: &mut CmState, id: u64) {
    if let Some(ep) = state.eps.remove(&id) {
        pending().remove(&(ep.handle as usize));
        // SAFETY: internal endpoints were boxed by us and are not reachable
        // by the user any more; dropping the state closes the socket.
        unsafe { drop(Box::from_raw(ep.handle as *mut CmEp)) };
    }
}

impl SockCmTl {
    /// A boxed endpoint handle on this CM's iface.
    pub(super) fn new_ep_handle(&self, id: u64) -> uct_ep_h {
        CmEp::boxed_handle(self.iface_handle(), SockCmEp { id })
    }

    pub(super) fn iface_handle(&self) -> uct_iface_h {
        // SAFETY: every SockCmTl lives inside a boxed Iface<SockCmTl> (see `open`).
        unsafe { CmIface::handle_of_tl(self) }
    }
}
