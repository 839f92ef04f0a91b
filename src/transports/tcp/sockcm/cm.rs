//! The connection manager object: its `UCX_TCP_CM_*` configuration,
//! `uct_cm_open` (the CM's internal iface and its progress callback on the
//! worker), `uct_cm_query`, the dispatch of `uct_ep_create` and
//! `uct_listener_create`, and closing.

use super::ep::INTERNAL;
use super::progress::progress_cb;
use super::watch::{self, Watch};
use super::state::{free_internal, st, CmIface, CmState, SockCmTl};
use super::proto::HDR_LEN;
use crate::abi::*;
use crate::core::cm::{CmImpl, ListenerImpl};
use crate::core::component::{CmDesc, CmOpen, Component};
use crate::core::config::{field, parser, Table, TIME_AUTO, TIME_INF};
use crate::core::iface::{Iface, IfaceHeader};
use crate::core::worker::WorkerObj;
use crate::ucs;
use libc::{c_int, c_ulong, c_void};
use once_cell::sync::Lazy;
use std::mem::offset_of;
use std::sync::atomic::AtomicBool;
use std::sync::Mutex;
use std::time::Duration;

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
    /// uct-rs extension, after the fields of the C original.
    pub handshake_timeout: u64,
    /// `USER_TIMEOUT` (1.22+; unfilled before), libucs time units.
    pub user_timeout: u64,
}

use crate::core::cm::BASE_TABLE;

static TABLE: Lazy<Table> = Lazy::new(|| {
    let mut t = vec![
        field(c"CM_", c"", c"", 0, parser::table(&BASE_TABLE)),
        field(c"PRIV_DATA_LEN", c"2048", c"Most private data a connection message of the tcp CM carries",
              offset_of!(SockCmConfig, priv_data_len), parser::memunits()),
        field(c"SNDBUF", c"auto", c"Socket send buffer size", offset_of!(SockCmConfig, sndbuf), parser::memunits()),
        field(c"RCVBUF", c"auto", c"Socket receive buffer size", offset_of!(SockCmConfig, rcvbuf), parser::memunits()),
        field(c"SYN_CNT", c"auto", c"SYN retransmits before a connection attempt is given up (at most 255;\n\
                auto: the system default)",
              offset_of!(SockCmConfig, syn_cnt), parser::ulunits()),
        // Not in UCX 1.13.1: an extension of this library.
        field(c"HANDSHAKE_TIMEOUT", c"5s", c"Time an accepted connection has to deliver its connection request\n\
                (header and private data); a connection still incomplete then is closed.\n\
                \"inf\" waits forever, \"auto\" is 5s (uct-rs extension).",
              offset_of!(SockCmConfig, handshake_timeout), parser::time_units()),
    ];
    t.extend(super::super::release::user_timeout_rows(offset_of!(SockCmConfig, user_timeout)));
    Table::new(t)
});

/// The connection manager of the tcp component (`UCX_TCP_CM_*`).
pub const CM: CmDesc = CmDesc::new::<SockCmOpen>(c"TCP-SOCKCM connection manager", c"TCP_CM_", &TABLE);

// ---------------------------------------------------------------------------
// The connection manager.

/// The CM object behind a `uct_cm_h` of the tcp component: its internal
/// iface (which holds the state) and what drives it: its epoll set on the
/// async thread (`watched`) or its progress callback on the worker.
pub(super) struct SockCm {
    pub(super) iface: *mut CmIface,
    worker: *const WorkerObj,
    watched: bool,
    prog_id: Option<c_int>,
}

impl SockCm {
    pub(super) fn tl(&self) -> &SockCmTl {
        // SAFETY: the iface lives as long as the CM.
        unsafe { &(*self.iface).tl }
    }
}

impl CmImpl for SockCm {
    fn max_conn_priv(&self) -> usize {
        self.tl().priv_data_len
    }

    fn listener_create(&self, _cm: uct_cm_h, addr: *const libc::sockaddr, len: libc::socklen_t,
                       params: &uct_listener_params_t, listener: uct_listener_h)
                       -> Result<Box<dyn ListenerImpl>, ucs_status_t> {
        self.create_listener(addr, len, params, listener)
    }

    fn client_ep_create(&self, params: &uct_ep_params_t) -> Result<uct_ep_h, ucs_status_t> {
        self.client_ep(params)
    }

    fn server_ep_create(&self, params: &uct_ep_params_t) -> Result<uct_ep_h, ucs_status_t> {
        self.server_ep(params)
    }
}

impl Drop for SockCm {
    fn drop(&mut self) {
        if self.watched {
            // SAFETY: the iface is alive until the end of this function.
            watch::stop(unsafe { &*self.iface });
        }
        if let Some(id) = self.prog_id {
            // SAFETY: the worker outlives the CMs opened on it; the id
            // came from the same queue.
            unsafe { ucs::callbackq::remove_safe((*self.worker).progress_q(), id) };
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
        // SAFETY: boxed in `open`, not used after the CM's drop.
        unsafe { crate::core::iface::free_cm_iface(self.iface, user_eps, "tcp sockcm") };
    }
}

/// Opens the tcp component's connection manager.
pub struct SockCmOpen;

impl CmOpen for SockCmOpen {
    type Config = SockCmConfig;
    fn open(_component: &'static Component, worker: &WorkerObj, cfg: &SockCmConfig)
            -> Result<Box<dyn CmImpl>, ucs_status_t> {
        open(worker, cfg)
    }
}

/// The handshake timeout of a `time_units` setting (ucs_time_t ticks,
/// "inf", "auto"); None: no timeout.
fn handshake_timeout(t: u64) -> Option<Duration> {
    if t == TIME_INF {
        return None;
    }
    if t == TIME_AUTO {
        return Some(HANDSHAKE_TIMEOUT_AUTO);
    }
    let secs = ucs::clocks_to_secs(t);
    Some(if secs.is_finite() && secs > 0.0 { Duration::from_secs_f64(secs.min(1e9)) } else { Duration::ZERO })
}

/// What "auto" means for HANDSHAKE_TIMEOUT.
const HANDSHAKE_TIMEOUT_AUTO: Duration = Duration::from_secs(5);

fn open(worker: &WorkerObj, cfg: &SockCmConfig) -> Result<Box<dyn CmImpl>, ucs_status_t> {
    // The async thread drives the CM where the worker's context runs in a
    // thread mode (`watch`).
    let threaded = crate::ucs::async_block::mode_of(worker.async_ctx)
        .is_some_and(|m| matches!(m, UCS_ASYNC_MODE_THREAD_SPINLOCK | UCS_ASYNC_MODE_THREAD_MUTEX));
    let watch = if threaded {
        match Watch::new() {
            Ok(w) => Some(w),
            Err(e) => {
                crate::diag!("tcp sockcm: no epoll set for the CM ({}); it runs from progress",
                             crate::sys::errno_str(e as i32));
                None
            }
        }
    } else {
        None
    };
    let tl = SockCmTl {
        priv_data_len: cfg.priv_data_len.saturating_add(HDR_LEN),
        sndbuf: cfg.sndbuf as u64,
        rcvbuf: cfg.rcvbuf as u64,
        syn_cnt: cfg.syn_cnt,
        user_timeout_ms: super::super::release::user_timeout_ms(cfg.user_timeout),
        reuse_addr: cfg.reuse_addr != 0,
        handshake_timeout: handshake_timeout(cfg.handshake_timeout),
        state: Mutex::new(CmState::default()),
        busy: AtomicBool::new(false),
        watch,
    };
    let wp = worker as *const WorkerObj;
    let hdr = IfaceHeader::bare(worker, &INTERNAL);
    let iface = Iface::into_handle(hdr, tl) as *mut CmIface;
    // SAFETY: the iface is boxed and freed only after `watch::stop` (in
    // the CM's drop); the worker, and its context, outlive the CM.
    let watched = unsafe { watch::start(iface, worker.async_ctx) };
    let prog_id = if watched {
        None
    } else {
        // SAFETY: the worker's queue is live; add_safe may be called from
        // any thread; the callback is removed before the iface is freed.
        Some(unsafe { ucs::callbackq::add_safe(worker.progress_q(), Some(progress_cb), iface as *mut c_void, 0) })
    };
    crate::debug!("tcp sockcm: created cm iface {:p} (private data up to {} bytes, {})", iface,
                  cfg.priv_data_len.saturating_add(HDR_LEN),
                  if watched { "on the async thread" } else { "from progress" });
    Ok(Box::new(SockCm { iface, worker: wp, watched, prog_id }))
}
