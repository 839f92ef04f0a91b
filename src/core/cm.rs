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
use crate::core::worker::WorkerObj;


const CM_MAGIC: u64 = 0x7563_742d_636d_2121;
const LISTENER_MAGIC: u64 = 0x7563_742d_6c73_6e21;

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

/// The object behind `uct_cm_h`.
pub struct CmObj {
    magic: u64,
    pub component: &'static Component,
    pub worker: *const WorkerObj,
    pub imp: Box<dyn CmImpl>,
}

impl CmObj {
    pub fn into_handle(component: &'static Component, worker: *const WorkerObj, imp: Box<dyn CmImpl>) -> uct_cm_h {
        Box::into_raw(Box::new(CmObj { magic: CM_MAGIC, component, worker, imp })) as uct_cm_h
    }

    /// # Safety
    /// `cm` must be null or point to at least 8 readable bytes.
    pub unsafe fn from_handle<'a>(cm: uct_cm_h) -> Option<&'a CmObj> {
        if cm.is_null() {
            return None;
        }
        // SAFETY: see the function contract; foreign objects fail the magic
        // test.
        let c = unsafe { &*(cm as *const CmObj) };
        (c.magic == CM_MAGIC).then_some(c)
    }

    /// # Safety
    /// `cm` came from [`CmObj::into_handle`] and is not used afterwards.
    pub unsafe fn destroy(cm: uct_cm_h) {
        // SAFETY: see the function contract: we own the box again.
        let mut b = unsafe { Box::from_raw(cm as *mut CmObj) };
        b.magic = 0;
        drop(b);
    }
}

/// The object behind `uct_listener_h`: `uct_listener_t` first.
#[repr(C)]
pub struct ListenerObj {
    pub base: uct_listener_t,
    magic: u64,
    /// Attached once, right after the transport created the listener
    /// (the transport needs the handle first).
    imp: std::cell::OnceCell<Box<dyn ListenerImpl>>,
}

impl ListenerObj {
    /// Allocate the listener first (its handle is needed by the transport),
    /// then attach the implementation.
    pub fn alloc(cm: uct_cm_h) -> *mut ListenerObj {
        Box::into_raw(Box::new(ListenerObj { base: uct_listener_t { cm }, magic: LISTENER_MAGIC,
                                           imp: std::cell::OnceCell::new() }))
    }

    /// # Safety
    /// `l` must be null or point to at least 16 readable bytes.
    pub unsafe fn from_handle<'a>(l: uct_listener_h) -> Option<&'a ListenerObj> {
        if l.is_null() {
            return None;
        }
        // SAFETY: see the function contract; foreign objects fail the magic
        // test.
        let o = unsafe { &*(l as *const ListenerObj) };
        (o.magic == LISTENER_MAGIC).then_some(o)
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

    /// # Safety
    /// `l` came from [`ListenerObj::alloc`] and is not used afterwards.
    pub unsafe fn destroy(l: *mut ListenerObj) {
        // SAFETY: see the function contract: we own the box again.
        let mut b = unsafe { Box::from_raw(l) };
        b.magic = 0;
        drop(b);
    }
}

/// `uct_ep_create` with `UCT_EP_PARAM_FIELD_CM`.
pub fn ep_create(params: &uct_ep_params_t) -> Result<uct_ep_h, ucs_status_t> {
    // SAFETY: foreign pointers fail the magic test.
    let Some(cm) = (unsafe { CmObj::from_handle(params.cm) }) else {
        crate::error!("uct_ep_create: {:p} is not a connection manager of this library", params.cm);
        return Err(UCS_ERR_INVALID_PARAM);
    };
    cm.imp.ep_create(params)
}
