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
    fn query(&self, attr: &mut uct_cm_attr_t) -> ucs_status_t;
    /// Listen on `addr`; `cm` is the handle listeners must report.
    fn listener_create(&self, cm: uct_cm_h, addr: *const libc::sockaddr, len: libc::socklen_t,
                       params: &uct_listener_params_t, listener: uct_listener_h)
                       -> Result<Box<dyn ListenerImpl>, ucs_status_t>;
    /// Create a client endpoint (SOCKADDR) or a server one (CONN_REQUEST).
    fn ep_create(&self, params: &uct_ep_params_t) -> Result<uct_ep_h, ucs_status_t>;
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
    cm.imp.ep_create(params)
}
