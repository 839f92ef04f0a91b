//! Connection managers: the objects behind `uct_cm_h` and `uct_listener_h`.
//!
//! A component with `UCT_COMPONENT_FLAG_CM` has a `CmDesc`, whose opener
//! returns a [`CmImpl`]. Endpoints of a CM are ordinary UCT endpoints whose
//! interface is a vtable owned by the CM (built with the generic
//! `Iface<T>` machinery), so `uct_ep_connect`, `uct_ep_disconnect`,
//! `uct_cm_client_ep_conn_notify`, `uct_ep_destroy` and `uct_ep_query`
//! reach them like any other endpoint. A listener begins with the
//! `uct_listener_t` C callers may read (its `cm` pointer).

use crate::abi::*;
use crate::core::component::Component;
use crate::core::registry::{self, Kind};
use crate::core::worker::WorkerObj;

/// What a connection manager does.
pub trait CmImpl: std::any::Any {
    /// The most private data a connection carries for the user
    /// (`uct_cm_query`'s `max_conn_priv`).
    fn max_conn_priv(&self) -> usize;
    /// Listen on `addr`; `cm` is the handle listeners must report.
    fn listener_create(&self, cm: uct_cm_h, addr: *const libc::sockaddr, len: libc::socklen_t,
                       params: &uct_listener_params_t, listener: uct_listener_h)
                       -> Result<Box<dyn ListenerImpl>, ucs_status_t>;
    /// A client endpoint (the parameters name SOCKADDR).
    fn client_ep_create(&self, params: &uct_ep_params_t) -> Result<uct_ep_h, ucs_status_t>;
    /// A server endpoint answering a connection request (CONN_REQUEST).
    fn server_ep_create(&self, params: &uct_ep_params_t) -> Result<uct_ep_h, ucs_status_t>;
}

/// What a listener does.
pub trait ListenerImpl {
    fn query(&self, attr: &mut uct_listener_attr_t) -> ucs_status_t;
    fn reject(&self, conn_request: uct_conn_request_h) -> ucs_status_t;
}

/// The object behind `uct_cm_h` (live ones are in the [`registry`]).
pub struct CmObj {
    pub component: &'static Component,
    pub worker: *const WorkerObj,
    pub imp: Box<dyn CmImpl>,
}

impl CmObj {
    pub fn into_handle(component: &'static Component, worker: *const WorkerObj, imp: Box<dyn CmImpl>) -> uct_cm_h {
        let h = Box::into_raw(Box::new(CmObj { component, worker, imp })) as uct_cm_h;
        registry::register(h, Kind::Cm);
        h
    }

    /// The CM behind a handle, if it is a live CM of this library.
    ///
    /// # Safety
    /// The CM must stay open while the reference is used.
    pub unsafe fn from_handle<'a>(cm: uct_cm_h) -> Option<&'a CmObj> {
        // SAFETY: a live CM is the box made by `into_handle`; see the
        // function contract for the lifetime.
        registry::is(cm, Kind::Cm).then(|| unsafe { &*(cm as *const CmObj) })
    }

    /// `uct_cm_query`.
    pub fn query(&self, attr: &mut uct_cm_attr_t) -> ucs_status_t {
        if attr.field_mask & UCT_CM_ATTR_FIELD_MAX_CONN_PRIV != 0 {
            attr.max_conn_priv = self.imp.max_conn_priv();
        }
        UCS_OK
    }

    /// The worker the CM was opened on.
    pub fn worker(&self) -> &WorkerObj {
        // SAFETY: a live worker handle was given to uct_cm_open, and the
        // worker outlives its CMs (uct_cm_close before uct_worker_destroy).
        unsafe { &*self.worker }
    }

    /// Close a handle: false (and nothing done) when it is not a live CM.
    ///
    /// # Safety
    /// Nothing uses the CM once this returned true.
    pub unsafe fn close(cm: uct_cm_h) -> bool {
        if !registry::take(cm, Kind::Cm) {
            return false;
        }
        // SAFETY: it was live, so it is our box, now owned by this call.
        let b = unsafe { Box::from_raw(cm as *mut CmObj) };
        b.worker().order_all();
        drop(b);
        true
    }
}

/// The object behind `uct_listener_h`: `uct_listener_t` first.
#[repr(C)]
pub struct ListenerObj {
    pub base: uct_listener_t,
    /// Attached once, right after the transport created the listener
    /// (the transport needs the handle first).
    imp: std::cell::OnceCell<Box<dyn ListenerImpl>>,
}

impl ListenerObj {
    /// Allocate the listener first (its handle is needed by the transport),
    /// then attach the implementation. It is live from here on (queries
    /// before the attachment find no implementation and fail).
    pub fn alloc(cm: uct_cm_h) -> *mut ListenerObj {
        let l = Box::into_raw(Box::new(ListenerObj { base: uct_listener_t { cm }, imp: std::cell::OnceCell::new() }));
        registry::register(l, Kind::Listener);
        l
    }

    /// The listener behind a handle, if it is a live listener of this
    /// library.
    ///
    /// # Safety
    /// The listener must stay alive while the reference is used.
    pub unsafe fn from_handle<'a>(l: uct_listener_h) -> Option<&'a ListenerObj> {
        // SAFETY: a live listener is the box made by `alloc`; see the
        // function contract for the lifetime.
        registry::is(l, Kind::Listener).then(|| unsafe { &*(l as *const ListenerObj) })
    }

    /// Attach the transport's listener (once).
    pub fn attach(&self, imp: Box<dyn ListenerImpl>) {
        if self.imp.set(imp).is_err() {
            crate::error!("listener {:p}: implementation attached twice", self);
        }
    }

    /// The transport's listener, once attached.
    pub fn imp(&self) -> Option<&dyn ListenerImpl> {
        self.imp.get().map(|b| b.as_ref())
    }

    /// Destroy a handle: false (and nothing done) when it is not a live
    /// listener.
    ///
    /// # Safety
    /// Nothing uses the listener once this returned true.
    pub unsafe fn destroy(l: uct_listener_h) -> bool {
        if !registry::take(l, Kind::Listener) {
            return false;
        }
        // SAFETY: it was live, so it is our box, now owned by this call.
        drop(unsafe { Box::from_raw(l as *mut ListenerObj) });
        true
    }
}

/// `uct_ep_create` with `UCT_EP_PARAM_FIELD_CM`.
pub fn ep_create(params: &uct_ep_params_t) -> Result<uct_ep_h, ucs_status_t> {
    // SAFETY: looked up in the registry; the caller keeps its CM open.
    let Some(cm) = (unsafe { CmObj::from_handle(params.cm) }) else {
        crate::error!("uct_ep_create: cm {:p} {}", params.cm, registry::why_not(params.cm, Kind::Cm));
        return Err(UCS_ERR_INVALID_PARAM);
    };
    // A client endpoint sends its private data, a server one its answer:
    // held messages of the worker go first.
    cm.worker().order_all();
    if params.field_mask & UCT_EP_PARAM_FIELD_SOCKADDR != 0 {
        cm.imp.client_ep_create(params)
    } else if params.field_mask & UCT_EP_PARAM_FIELD_CONN_REQUEST != 0 {
        cm.imp.server_ep_create(params)
    } else {
        crate::error!("{}: either UCT_EP_PARAM_FIELD_SOCKADDR or UCT_EP_PARAM_FIELD_CONN_REQUEST has to be provided",
                      cm.component.name);
        Err(UCS_ERR_INVALID_PARAM)
    }
}

// ---------------------------------------------------------------------------
// What every connection manager shares: the `UCX_<CM>_CM_*` base settings,
// the endpoint callbacks a user registers and their checks, and the calls
// into those callbacks.

use crate::core::config::{field, parser, Table};
use libc::{c_char, c_void};
use once_cell::sync::Lazy;

/// The settings every CM's table embeds first under "CM_" (UCX's
/// `uct_cm_config_table`): a config struct starts with these two ints.
pub static BASE_TABLE: Lazy<Table> = Lazy::new(|| {
    Table::new(vec![
        field(c"FAILURE", c"diag", c"Log level of network errors seen by the connection manager", 0,
              parser::enumeration(std::ptr::addr_of!(crate::ucs::ucs_log_level_names) as *const *const c_char)),
        field(c"REUSEADDR", c"no", c"Let listeners bind to an address that is still in use",
              std::mem::size_of::<libc::c_int>(), parser::boolean()),
    ])
});

/// The callbacks and argument of a CM endpoint.
#[derive(Clone, Copy)]
pub struct Callbacks {
    pub user_data: *mut c_void,
    pub resolve: uct_cm_ep_resolve_callback_t,
    pub pack: uct_cm_ep_priv_data_pack_callback_t,
    pub client_connect: uct_cm_ep_client_connect_callback_t,
    pub server_notify: uct_cm_ep_server_conn_notify_callback_t,
    pub disconnect: uct_ep_disconnect_cb_t,
}

impl Callbacks {
    pub const NONE: Callbacks = Callbacks {
        user_data: std::ptr::null_mut(),
        resolve: None,
        pack: None,
        client_connect: None,
        server_notify: None,
        disconnect: None,
    };

    /// Take the callbacks common to both sides from `params`, checked as
    /// UCX checks them (the callbacks must be asynchronous-safe; a field
    /// that is set names a callback). `who` starts the log lines.
    pub fn common(params: &uct_ep_params_t, who: &str) -> Result<Callbacks, ucs_status_t> {
        let m = params.field_mask;
        if m & UCT_EP_PARAM_FIELD_SOCKADDR_CB_FLAGS == 0 || params.sockaddr_cb_flags & UCT_CB_FLAG_ASYNC == 0 {
            crate::error!("{}: UCT_EP_PARAM_FIELD_SOCKADDR_CB_FLAGS with UCT_CB_FLAG_ASYNC is required \
                           (field_mask 0x{:x}, sockaddr_cb_flags 0x{:x})", who, m, params.sockaddr_cb_flags);
            return Err(UCS_ERR_UNSUPPORTED);
        }
        let mut cbs = Callbacks::NONE;
        macro_rules! take {
            ($flag:expr, $src:expr, $dst:expr, $name:literal) => {
                if m & $flag != 0 {
                    if $src.is_none() {
                        crate::error!("{}: {} is set but the callback is NULL", who, $name);
                        return Err(UCS_ERR_INVALID_PARAM);
                    }
                    $dst = $src;
                }
            };
        }
        take!(UCT_EP_PARAM_FIELD_SOCKADDR_PACK_CB, params.sockaddr_pack_cb, cbs.pack,
              "UCT_EP_PARAM_FIELD_SOCKADDR_PACK_CB");
        take!(UCT_EP_PARAM_FIELD_CM_RESOLVE_CB, params.cm_resolve_cb, cbs.resolve, "UCT_EP_PARAM_FIELD_CM_RESOLVE_CB");
        take!(UCT_EP_PARAM_FIELD_SOCKADDR_DISCONNECT_CB, params.disconnect_cb, cbs.disconnect,
              "UCT_EP_PARAM_FIELD_SOCKADDR_DISCONNECT_CB");
        take!(UCT_EP_PARAM_FIELD_SOCKADDR_CONNECT_CB_CLIENT, params.sockaddr_cb_client, cbs.client_connect,
              "UCT_EP_PARAM_FIELD_SOCKADDR_CONNECT_CB_CLIENT");
        take!(UCT_EP_PARAM_FIELD_SOCKADDR_NOTIFY_CB_SERVER, params.sockaddr_cb_server, cbs.server_notify,
              "UCT_EP_PARAM_FIELD_SOCKADDR_NOTIFY_CB_SERVER");
        cbs.user_data = if m & UCT_EP_PARAM_FIELD_USER_DATA != 0 { params.user_data } else { std::ptr::null_mut() };
        Ok(cbs)
    }
}

/// The backlog of a new listener: the user's (`UCT_LISTENER_PARAM_FIELD_BACKLOG`)
/// up to the system's `max`, else `max`; refused when not positive.
pub fn listener_backlog(params: &uct_listener_params_t, max: i32, who: &str) -> Result<i32, ucs_status_t> {
    let backlog = if params.field_mask & UCT_LISTENER_PARAM_FIELD_BACKLOG != 0 {
        if params.backlog > max {
            crate::diag!("{}: backlog {} is more than the system's {}; using {}", who, params.backlog, max, max);
            max
        } else {
            params.backlog
        }
    } else {
        max
    };
    if backlog <= 0 {
        crate::error!("{}: backlog ({}) must be a positive number", who, backlog);
        return Err(UCS_ERR_INVALID_PARAM);
    }
    Ok(backlog)
}

/// The private data pointer and length `uct_ep_connect`'s parameters carry
/// (none without parameters or without the fields).
pub fn connect_params_data(params: Option<&uct_ep_connect_params_t>) -> (*const c_void, usize) {
    match params {
        Some(p) => (
            if p.field_mask & UCT_EP_CONNECT_PARAM_FIELD_PRIVATE_DATA != 0 { p.private_data } else { std::ptr::null() },
            if p.field_mask & UCT_EP_CONNECT_PARAM_FIELD_PRIVATE_DATA_LENGTH != 0 { p.private_data_length } else { 0 },
        ),
        None => (std::ptr::null(), 0),
    }
}

/// A copy of `len` bytes of the user's at `data`; NULL with a length is
/// refused with a log line.
///
/// # Safety
/// `data` is NULL or readable for `len` bytes.
pub unsafe fn user_bytes(data: *const c_void, len: usize, who: &str) -> Result<Vec<u8>, ucs_status_t> {
    if len == 0 {
        return Ok(Vec::new());
    }
    if data.is_null() {
        crate::error!("{}: NULL private data of {} bytes", who, len);
        return Err(UCS_ERR_INVALID_PARAM);
    }
    // SAFETY: non-NULL, and readable for `len` bytes (function contract).
    Ok(unsafe { std::slice::from_raw_parts(data as *const u8, len) }.to_vec())
}

/// A peer's private data as it is handed to a user callback: the bytes
/// that arrived, in a zero-filled buffer of at least the CM's largest
/// private data. libucp reads its own header out of that data without
/// checking the length it was given; with the original's CMs that read
/// stays inside the CM's receive buffer, and here it stays inside this one.
pub struct PrivData {
    buf: Vec<u8>,
    len: usize,
}

impl PrivData {
    pub fn new(data: &[u8], room: usize) -> PrivData {
        let mut buf = vec![0u8; room.max(data.len())];
        buf[..data.len()].copy_from_slice(data);
        PrivData { buf, len: data.len() }
    }
    /// The bytes that arrived (their pointer is the start of the buffer).
    pub fn data(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

/// A device name as the CM argument structs carry it (NUL-terminated,
/// truncated to fit).
pub fn dev_name_array(name: &str) -> [c_char; UCT_DEVICE_NAME_MAX] {
    let mut out = [0 as c_char; UCT_DEVICE_NAME_MAX];
    for (o, b) in out.iter_mut().zip(name.bytes().take(UCT_DEVICE_NAME_MAX - 1)) {
        *o = b as c_char;
    }
    out
}

/// The user's private data pack callback for device `dev`, into at most
/// `max` bytes: the packed bytes, or the callback's failure (or
/// `UCS_ERR_EXCEEDS_LIMIT` when it claims more than `max`). No callback:
/// no data.
pub fn invoke_pack(cbs: &Callbacks, dev: &str, max: usize, who: &str) -> Result<Vec<u8>, ucs_status_t> {
    let Some(pack) = cbs.pack else { return Ok(Vec::new()) };
    let args = uct_cm_ep_priv_data_pack_args_t {
        field_mask: UCT_CM_EP_PRIV_DATA_PACK_ARGS_FIELD_DEVICE_NAME,
        dev_name: dev_name_array(dev),
    };
    let mut buf = vec![0u8; max];
    // SAFETY: the user's callback; `buf` holds `max` bytes, the most it may
    // write (the CM's max_conn_priv).
    let r = unsafe { pack(cbs.user_data, &args, buf.as_mut_ptr() as *mut c_void) };
    if r < 0 {
        let s = r.max(i8::MIN as isize) as ucs_status_t;
        crate::debug!("{}: private data pack callback failed: {}", who, crate::core::log::status_str(s));
        return Err(s);
    }
    if r as usize > max {
        crate::debug!("{}: pack callback returned {} bytes (at most {})", who, r, max);
        return Err(UCS_ERR_EXCEEDS_LIMIT);
    }
    buf.truncate(r as usize);
    Ok(buf)
}

/// The resolve callback of a client endpoint: the status it returns.
pub fn invoke_resolve(cbs: &Callbacks, dev: &str, status: ucs_status_t) -> ucs_status_t {
    let Some(cb) = cbs.resolve else { return UCS_OK };
    let args = uct_cm_ep_resolve_args_t {
        field_mask: UCT_CM_EP_RESOLVE_ARGS_FIELD_DEV_NAME | UCT_CM_EP_RESOLVE_ARGS_FIELD_STATUS,
        dev_name: dev_name_array(dev),
        status,
    };
    // SAFETY: the user's callback with its own argument; `args` lives
    // across the call.
    unsafe { cb(cbs.user_data, &args) }
}

/// The connect callback of a client endpoint, with the server's device
/// address and private data when there is an answer.
///
/// # Safety
/// `handle` and `cbs` are a live endpoint's and the callbacks its user
/// registered with it (the callback receives the handle).
pub unsafe fn invoke_client_connect(handle: uct_ep_h, cbs: &Callbacks, remote: Option<(&[u8], &[u8])>,
                             status: ucs_status_t) {
    let Some(cb) = cbs.client_connect else { return };
    let mut rd = uct_cm_remote_data_t {
        field_mask: 0,
        dev_addr: std::ptr::null(),
        dev_addr_length: 0,
        conn_priv_data: std::ptr::null(),
        conn_priv_data_length: 0,
    };
    if let Some((dev_addr, data)) = remote {
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
    // SAFETY: the user's callback; everything it is given lives across
    // the call.
    unsafe { cb(handle, cbs.user_data, &args) };
}

/// The notify callback of a server endpoint.
///
/// # Safety
/// As [`invoke_client_connect`].
pub unsafe fn invoke_server_notify(handle: uct_ep_h, cbs: &Callbacks, status: ucs_status_t) {
    let Some(cb) = cbs.server_notify else { return };
    let args = uct_cm_ep_server_conn_notify_args_t { field_mask: UCT_CM_EP_SERVER_CONN_NOTIFY_ARGS_FIELD_STATUS, status };
    // SAFETY: the user's callback with its own argument.
    unsafe { cb(handle, cbs.user_data, &args) };
}

/// The disconnect callback of an endpoint.
///
/// # Safety
/// As [`invoke_client_connect`].
pub unsafe fn invoke_disconnect(handle: uct_ep_h, cbs: &Callbacks) {
    if let Some(cb) = cbs.disconnect {
        // SAFETY: the user's callback with its own argument.
        unsafe { cb(handle, cbs.user_data) };
    }
}

/// A connection request for a listener's callback.
pub struct ConnRequest<'a> {
    pub dev: &'a str,
    pub request: uct_conn_request_h,
    pub dev_addr: &'a [u8],
    pub data: &'a [u8],
    pub client: (libc::sockaddr_storage, libc::socklen_t),
}

/// The connection request callback of a listener.
///
/// # Safety
/// `listener`, `cb` and `user_data` are a live listener's as its user
/// created it; `req.request` is a request the CM can answer.
pub unsafe fn invoke_conn_request(listener: uct_listener_h, cb: uct_cm_listener_conn_request_callback_t,
                           user_data: *mut c_void, req: &ConnRequest<'_>) {
    let Some(cb) = cb else { return };
    let rd = uct_cm_remote_data_t {
        field_mask: UCT_CM_REMOTE_DATA_FIELD_DEV_ADDR | UCT_CM_REMOTE_DATA_FIELD_DEV_ADDR_LENGTH
            | UCT_CM_REMOTE_DATA_FIELD_CONN_PRIV_DATA | UCT_CM_REMOTE_DATA_FIELD_CONN_PRIV_DATA_LENGTH,
        dev_addr: req.dev_addr.as_ptr() as *const uct_device_addr_t,
        dev_addr_length: req.dev_addr.len(),
        conn_priv_data: req.data.as_ptr() as *const c_void,
        conn_priv_data_length: req.data.len(),
    };
    let args = uct_cm_listener_conn_request_args_t {
        field_mask: UCT_CM_LISTENER_CONN_REQUEST_ARGS_FIELD_DEV_NAME
            | UCT_CM_LISTENER_CONN_REQUEST_ARGS_FIELD_CONN_REQUEST
            | UCT_CM_LISTENER_CONN_REQUEST_ARGS_FIELD_REMOTE_DATA
            | UCT_CM_LISTENER_CONN_REQUEST_ARGS_FIELD_CLIENT_ADDR,
        dev_name: dev_name_array(req.dev),
        conn_request: req.request,
        remote_data: &rd,
        client_address: ucs_sock_addr_t { addr: &req.client.0 as *const _ as *const libc::sockaddr,
                                          addrlen: req.client.1 },
    };
    // SAFETY: the user's callback; all it is given lives across the call.
    unsafe { cb(listener, user_data, &args) };
}
