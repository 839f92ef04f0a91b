//! The component and its connection manager object: the `UCX_RDMA_CM_*`
//! settings, `uct_cm_open` (the event channel, watched by libucs's async
//! thread or polled from the worker's progress), `uct_cm_query`, closing,
//! and the listeners (`uct_listener_create`, query, reject).

use super::ep::{reject_request, INTERNAL};
use super::events::{on_channel, progress_cb};
use super::state::{pending, CmIface, CmState, ListenerState, RdmaCmTl, MAX_CONN_PRIV, next_key};
use crate::abi::*;
use crate::core::cm::{CmImpl, ListenerImpl, BASE_TABLE};
use crate::core::component::{self, CmDesc, CmOpen, Component, MdDesc, MdOpen};
use crate::core::config::{field, parser, Table};
use crate::core::iface::{Iface, IfaceHeader};
use crate::core::md::MdImpl;
use crate::core::worker::WorkerObj;
use crate::sys::addr::SockAddr;
use crate::sys::verbs::cm::{CmId, EventChannel};
use crate::sys::verbs::Errno;
use crate::ucs;
use libc::{c_char, c_int, c_void};
use once_cell::sync::Lazy;
use std::ffi::CStr;
use std::mem::offset_of;
use std::sync::atomic::AtomicBool;
use std::sync::Mutex;

pub const NAME: &str = "rdmacm";

/// The parsed settings; the layout of the original's config struct.
#[repr(C)]
pub struct RdmaCmConfig {
    pub failure: c_int,
    pub reuse_addr: c_int,
    pub src_addr: *mut c_char,
    /// Seconds.
    pub timeout: f64,
    /// `ucs_ternary_auto_value_t`: no 0, yes 1, try 2.
    pub reserved_qpn: c_int,
}

static TABLE: Lazy<Table> = Lazy::new(|| {
    Table::new(vec![
        field(c"CM_", c"", c"", 0, parser::table(&BASE_TABLE)),
        field(c"SOURCE_ADDRESS", c"", c"The local address (IPv4 or IPv6) client connections start from,\n\
                when not empty", offset_of!(RdmaCmConfig, src_addr), parser::string()),
        field(c"TIMEOUT", c"10s", c"How long resolving a server's address and route may take",
              offset_of!(RdmaCmConfig, timeout), parser::time()),
        field(c"RESERVED_QPN", c"try", c"Reserved QP numbers for connections:\n\
                yes - required (fails where the device has none)\n\
                try - used where the device has them, a dummy QP's number otherwise\n\
                no  - always a dummy QP's number",
              offset_of!(RdmaCmConfig, reserved_qpn), parser::ternary()),
    ])
});

/// Neither the component's md nor anything else has settings.
#[repr(C)]
pub struct NoConfig {
    _unused: u8,
}

static EMPTY_TABLE: Lazy<Table> = Lazy::new(|| Table::new(vec![]));

struct RdmacmMd;

impl MdOpen for RdmacmMd {
    type Config = NoConfig;
    fn open(_c: &'static Component, name: &str, _cfg: &NoConfig) -> Result<Box<dyn MdImpl>, ucs_status_t> {
        crate::debug!("rdmacm: no memory domain '{}' (the component has none)", name);
        Err(UCS_ERR_NO_DEVICE)
    }
}

fn md_resources() -> Vec<String> {
    Vec::new()
}

fn rkey_unpack(_buf: *const u8) -> Result<(uct_rkey_t, *mut libc::c_void), ucs_status_t> {
    Err(UCS_ERR_UNSUPPORTED)
}

pub static COMPONENT: Component = Component {
    name: NAME,
    flags: || UCT_COMPONENT_FLAG_CM,
    md: MdDesc::new::<RdmacmMd>(c"", c"", &EMPTY_TABLE),
    cm: Some(CmDesc::new::<RdmaCmOpen>(c"RDMA-CM connection manager", c"RDMA_CM_", &TABLE)),
    md_resources,
    tls: &[],
    rkey_unpack,
    rkey_ptr: component::rkey_ptr_unsupported,
    rkey_release: component::rkey_release_nop,
};

// ---------------------------------------------------------------------------
// The connection manager.

/// The CM object behind a `uct_cm_h` of the component.
pub(super) struct RdmaCm {
    iface: *mut CmIface,
    worker: *const WorkerObj,
    watched: bool,
    prog_id: Option<c_int>,
}

impl RdmaCm {
    pub(super) fn tl(&self) -> &RdmaCmTl {
        // SAFETY: the iface lives as long as the CM.
        unsafe { &(*self.iface).tl }
    }
}

impl CmImpl for RdmaCm {
    fn max_conn_priv(&self) -> usize {
        MAX_CONN_PRIV
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

impl Drop for RdmaCm {
    fn drop(&mut self) {
        let tl = self.tl();
        if self.watched {
            // Ours, added by `open`; sync: the handler does not run after this.
            ucs::remove_handler(tl.channel.fd(), true);
        }
        if let Some(id) = self.prog_id {
            // SAFETY: the worker outlives the CMs opened on it; the id came
            // from the same queue.
            unsafe { ucs::callbackq::remove_safe((*self.worker).progress_q(), id) };
        }
        let (user_eps, gone) = {
            let mut s = tl.lock();
            let reqs: Vec<u64> = s.reqs.keys().copied().collect();
            {
                let mut p = pending();
                for k in &reqs {
                    p.remove(k);
                }
            }
            let gone = std::mem::take(&mut s.reqs);
            s.listeners.clear();
            (s.eps.len(), gone)
        };
        drop(gone);
        // SAFETY: boxed in `open`, not used after the CM's drop.
        unsafe { crate::core::iface::free_cm_iface(self.iface, user_eps, "rdmacm") };
    }
}

/// Opens the component's connection manager.
pub struct RdmaCmOpen;

impl CmOpen for RdmaCmOpen {
    type Config = RdmaCmConfig;
    fn open(_component: &'static Component, worker: &WorkerObj, cfg: &RdmaCmConfig)
            -> Result<Box<dyn CmImpl>, ucs_status_t> {
        open(worker, cfg)
    }
}

fn open(worker: &WorkerObj, cfg: &RdmaCmConfig) -> Result<Box<dyn CmImpl>, ucs_status_t> {
    let channel = EventChannel::create().map_err(|e| {
        if matches!(e, Errno::ENODEV | Errno::ENOENT | Errno::EACCES) {
            crate::diag!("rdma_create_event_channel failed: {}", e.desc());
        } else {
            crate::error!("rdma_create_event_channel failed: {}", e.desc());
        }
        UCS_ERR_IO_ERROR
    })?;
    if let Err(e) = channel.set_nonblocking() {
        crate::error!("rdmacm: fcntl(O_NONBLOCK) on the event channel failed: {}", e.desc());
        return Err(UCS_ERR_IO_ERROR);
    }
    let src_addr = if cfg.src_addr.is_null() {
        None
    } else {
        // SAFETY: a NUL-terminated string libucs parsed.
        let s = unsafe { CStr::from_ptr(cfg.src_addr) }.to_string_lossy().into_owned();
        if s.is_empty() {
            None
        } else {
            match s.parse::<std::net::IpAddr>() {
                Ok(ip) => Some(SockAddr::from_std(std::net::SocketAddr::new(ip, 0))),
                Err(_) => {
                    crate::error!("rdmacm: UCX_RDMA_CM_SOURCE_ADDRESS: '{}' is not an IP address", s);
                    return Err(UCS_ERR_INVALID_ADDR);
                }
            }
        }
    };
    let timeout_ms = (cfg.timeout * 1000.0).clamp(0.0, i32::MAX as f64) as i32;
    let tl = RdmaCmTl {
        state: Mutex::new(CmState::default()),
        channel,
        src_addr,
        timeout_ms,
        reserved_qpn_required: cfg.reserved_qpn == 1,
        reuse_addr: cfg.reuse_addr != 0,
        failure_level: cfg.failure.max(0) as u32,
        busy: AtomicBool::new(false),
    };
    let fd = tl.channel.fd();
    let hdr = IfaceHeader::bare(worker, &INTERNAL);
    let iface = Iface::into_handle(hdr, tl) as *mut CmIface;
    // The async thread reads the channel for a worker whose context runs
    // in a thread mode; otherwise the worker's progress does.
    let mode = ucs::async_block::mode_of(worker.async_ctx)
        .filter(|m| matches!(*m, UCS_ASYNC_MODE_THREAD_SPINLOCK | UCS_ASYNC_MODE_THREAD_MUTEX));
    // The handler's argument is the iface, alive until the CM's drop
    // removes the handler (synchronously); the worker's context outlives
    // the CM.
    let watched = match mode {
        Some(m) => {
            // SAFETY: see just above.
            let st = unsafe {
                ucs::set_event_handler(m, fd, ucs::EVENT_READ, on_channel, iface as *mut c_void, worker.async_ctx)
            };
            st == UCS_OK
        }
        None => false,
    };
    let prog_id = if watched {
        None
    } else {
        // SAFETY: the worker's queue is live; the callback is removed
        // before the iface is freed.
        Some(unsafe { ucs::callbackq::add_safe(worker.progress_q(), Some(progress_cb), iface as *mut c_void, 0) })
    };
    crate::debug!("rdmacm: created cm iface {:p} with event channel fd {} ({})", iface, fd,
                  if watched { "on the async thread" } else { "from progress" });
    Ok(Box::new(RdmaCm { iface, worker, watched, prog_id }))
}

// ---------------------------------------------------------------------------
// Listeners.

struct RdmaCmListener {
    tl: *const RdmaCmTl,
    key: u64,
}

impl ListenerImpl for RdmaCmListener {
    fn query(&self, attr: &mut uct_listener_attr_t) -> ucs_status_t {
        if attr.field_mask & UCT_LISTENER_ATTR_FIELD_SOCKADDR != 0 {
            // SAFETY: the CM outlives its listeners.
            let tl = unsafe { &*self.tl };
            let s = tl.lock();
            let Some(l) = s.listeners.get(&self.key) else { return UCS_ERR_INVALID_PARAM };
            match l.id.local_addr() {
                Some(a) => attr.sockaddr = a.to_storage().0,
                None => return UCS_ERR_INVALID_PARAM,
            }
        }
        UCS_OK
    }

    fn reject(&self, conn_request: uct_conn_request_h) -> ucs_status_t {
        reject_request(conn_request as usize as u64)
    }
}

impl Drop for RdmaCmListener {
    fn drop(&mut self) {
        // SAFETY: the CM outlives its listeners.
        let tl = unsafe { &*self.tl };
        let gone = tl.lock().listeners.remove(&self.key);
        if let Some(l) = &gone {
            crate::debug!("rdmacm: listener {:p} destroyed", l.handle);
        }
        drop(gone);
    }
}

impl RdmaCm {
    fn create_listener(&self, addr: *const libc::sockaddr, len: libc::socklen_t, params: &uct_listener_params_t,
                       listener: uct_listener_h) -> Result<Box<dyn ListenerImpl>, ucs_status_t> {
        if params.field_mask & UCT_LISTENER_PARAM_FIELD_CONN_REQUEST_CB == 0 || params.conn_request_cb.is_none() {
            crate::error!("rdmacm: a listener needs UCT_LISTENER_PARAM_FIELD_CONN_REQUEST_CB");
            return Err(UCS_ERR_INVALID_PARAM);
        }
        // SAFETY: the user's listener address: NULL or `len` readable bytes.
        let at = unsafe { SockAddr::from_user(addr, len) }.map_err(|e| {
            crate::error!("rdmacm: {}", e);
            UCS_ERR_INVALID_PARAM
        })?;
        let tl = self.tl();
        let key = next_key();
        let id = CmId::create(&tl.channel, key as usize).map_err(|e| {
            crate::error!("rdmacm: rdma_create_id() failed: {}", e.desc());
            UCS_ERR_IO_ERROR
        })?;
        if tl.reuse_addr {
            if let Err(e) = id.set_reuseaddr() {
                crate::error!("rdmacm: rdma_set_option(REUSEADDR) failed: {}", e.desc());
                return Err(UCS_ERR_IO_ERROR);
            }
        }
        if let Err(e) = id.bind(&at) {
            crate::diag!("rdmacm: rdma_bind_addr(addr={}) failed: {}", at, e.desc());
            return Err(match e {
                Errno::EADDRINUSE | Errno::EADDRNOTAVAIL => UCS_ERR_BUSY,
                Errno::ENODEV => UCS_ERR_NO_DEVICE,
                _ => UCS_ERR_IO_ERROR,
            });
        }
        let max = crate::sys::netif::rdma_cm_max_backlog().unwrap_or_else(|| {
            crate::diag!("rdmacm: unable to read max_backlog value from /proc/sys/net/rdma_ucm/max_backlog");
            1024
        });
        let backlog = crate::core::cm::listener_backlog(params, max, "rdmacm")?;
        if let Err(e) = id.listen(backlog) {
            crate::error!("rdmacm: rdma_listen(addr={} backlog={}) failed: {}", at, backlog, e.desc());
            return Err(UCS_ERR_IO_ERROR);
        }
        crate::debug!("rdmacm: listener {:p} created on {}", listener,
                      id.local_addr().map_or_else(|| at.to_string(), |a| a.to_string()));
        let user_data = if params.field_mask & UCT_LISTENER_PARAM_FIELD_USER_DATA != 0 {
            params.user_data
        } else {
            std::ptr::null_mut()
        };
        tl.lock().listeners.insert(key, ListenerState { handle: listener, id, conn_request_cb: params.conn_request_cb,
                                                        user_data });
        tl.mark_busy();
        Ok(Box::new(RdmaCmListener { tl, key }))
    }
}
