//! Connection-manager exports (see `core::cm`).

use super::{component_or_fail, entry, live_or, need, worker_or_fail};
use crate::abi::*;
use crate::core::cm::{CmObj, ListenerObj};
use crate::core::config;
use crate::core::registry::{self, Kind};
use crate::core::worker::WorkerObj;
use libc::{c_void, socklen_t};

/// Resolve a CM handle or return `UCS_ERR_INVALID_PARAM` with a log line.
macro_rules! cm_or_fail {
    ($cm:expr) => {
        // SAFETY: looked up in the registry; the caller keeps the CM open
        // during the call.
        live_or!(unsafe { CmObj::from_handle($cm) }, $cm, Kind::Cm, "cm", UCS_ERR_INVALID_PARAM)
    };
}

entry! {
    fn uct_cm_open(component: uct_component_h, worker: uct_worker_h, config: *const uct_cm_config_t,
                   cm_p: *mut uct_cm_h) -> ucs_status_t {
        need!(cm_p, "cm_p");
        need!(config, "config");
        let c = component_or_fail!(component);
        let w = worker_or_fail!(worker);
        let Some(desc) = c.cm.as_ref() else {
            crate::debug!("{}: component {} has no connection manager", FN, c.name);
            return UCS_ERR_UNSUPPORTED;
        };
        // SAFETY: looked up in the registry; the caller keeps its config
        // until the CM is open.
        let parsed = live_or!(unsafe { config::Parsed::from_ptr(config as *const c_void) }, config,
                              Kind::Config, "config", UCS_ERR_INVALID_PARAM);
        let wp = w as *const WorkerObj;
        match desc.open(c, w, parsed) {
            Ok(imp) => {
                // SAFETY: out-pointer checked above.
                unsafe { *cm_p = CmObj::into_handle(c, wp, imp) };
                UCS_OK
            }
            Err(s) => s,
        }
    }
}

entry! {
    fn uct_cm_close(cm: uct_cm_h) {
        // SAFETY: `close` frees only a live CM, once; closing ends its life.
        if !unsafe { CmObj::close(cm) } {
            crate::error!("{}: cm {:p} {}", FN, cm, registry::why_not(cm, Kind::Cm));
        }
    }
}

entry! {
    fn uct_cm_query(cm: uct_cm_h, cm_attr: *mut uct_cm_attr_t) -> ucs_status_t {
        need!(cm_attr, "cm_attr");
        let c = cm_or_fail!(cm);
        // SAFETY: checked non-NULL.
        c.query(unsafe { &mut *cm_attr })
    }
}

entry! {
    fn uct_listener_create(cm: uct_cm_h, saddr: *const libc::sockaddr, socklen: socklen_t,
                           params: *const uct_listener_params_t, listener_p: *mut uct_listener_h) -> ucs_status_t {
        need!(listener_p, "listener_p");
        need!(saddr, "saddr");
        need!(params, "params");
        let c = cm_or_fail!(cm);
        let l = ListenerObj::alloc(cm);
        // SAFETY: checked non-NULL; `l` is our fresh listener.
        match c.imp.listener_create(cm, saddr, socklen, unsafe { &*params }, l as uct_listener_h) {
            Ok(imp) => {
                // SAFETY: `l` is our live listener; `listener_p` was
                // checked non-NULL.
                unsafe {
                    (*l).attach(imp);
                    *listener_p = l as uct_listener_h;
                }
                UCS_OK
            }
            Err(s) => {
                // SAFETY: never handed out.
                unsafe { ListenerObj::destroy(l as uct_listener_h) };
                s
            }
        }
    }
}

entry! {
    fn uct_listener_destroy(listener: uct_listener_h) {
        // SAFETY: `destroy` frees only a live listener, once.
        if !unsafe { ListenerObj::destroy(listener) } {
            crate::error!("{}: listener {:p} {}", FN, listener, registry::why_not(listener, Kind::Listener));
        }
    }
}

entry! {
    fn uct_listener_query(listener: uct_listener_h, listener_attr: *mut uct_listener_attr_t) -> ucs_status_t {
        need!(listener_attr, "listener_attr");
        // SAFETY: looked up in the registry; the caller keeps the listener
        // during the call.
        let l = live_or!(unsafe { ListenerObj::from_handle(listener) }, listener, Kind::Listener, "listener",
                         UCS_ERR_INVALID_PARAM);
        match l.imp() {
            // SAFETY: checked non-NULL.
            Some(imp) => imp.query(unsafe { &mut *listener_attr }),
            None => {
                crate::error!("{}: listener {:p} is still being created", FN, listener);
                UCS_ERR_INVALID_PARAM
            }
        }
    }
}

entry! {
    fn uct_listener_reject(listener: uct_listener_h, conn_request: uct_conn_request_h) -> ucs_status_t {
        need!(conn_request, "conn_request");
        // SAFETY: looked up in the registry; the caller keeps the listener
        // during the call.
        let l = live_or!(unsafe { ListenerObj::from_handle(listener) }, listener, Kind::Listener, "listener",
                         UCS_ERR_INVALID_PARAM);
        // SAFETY: the listener's CM, open while its listener lives.
        if let Some(cm) = unsafe { CmObj::from_handle(l.base.cm) } {
            cm.worker().order_all();
        }
        match l.imp() {
            Some(imp) => imp.reject(conn_request),
            None => {
                crate::error!("{}: listener {:p} is still being created", FN, listener);
                UCS_ERR_INVALID_PARAM
            }
        }
    }
}
