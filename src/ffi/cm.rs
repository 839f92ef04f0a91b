//! Connection-manager exports (see `core::cm`).

use super::{component_or_fail, entry, need};
use crate::abi::*;
use crate::core::cm::{CmObj, ListenerObj};
use crate::core::config;
use crate::core::worker::WorkerObj;
use libc::{c_void, socklen_t};

/// Resolve a CM handle or return `UCS_ERR_INVALID_PARAM` with a log line.
macro_rules! cm_or_fail {
    ($cm:expr) => {
        // SAFETY: foreign pointers fail the magic test.
        match unsafe { CmObj::from_handle($cm) } {
            Some(c) => c,
            None => {
                crate::error!("{}: {:p} is not a connection manager of this library", FN, $cm);
                return UCS_ERR_INVALID_PARAM;
            }
        }
    };
}

entry! {
    fn uct_cm_open(component: uct_component_h, worker: uct_worker_h, config: *const uct_cm_config_t,
                   cm_p: *mut uct_cm_h) -> ucs_status_t {
        need!(cm_p, "cm_p");
        need!(config, "config");
        let c = component_or_fail!(component);
        // SAFETY: handle validated by the magic test.
        let Some(w) = (unsafe { WorkerObj::from_handle(worker) }) else {
            crate::error!("{}: invalid worker {:p}", FN, worker);
            return UCS_ERR_INVALID_PARAM;
        };
        let Some(desc) = c.cm.as_ref() else {
            crate::debug!("{}: component {} has no connection manager", FN, c.name);
            return UCS_ERR_UNSUPPORTED;
        };
        // SAFETY: a foreign pointer fails the header test.
        let Some(parsed) = (unsafe { config::Parsed::from_ptr(config as *const c_void) }) else {
            crate::error!("{}: {:p} is not a {} connection-manager config", FN, config, c.name);
            return UCS_ERR_INVALID_PARAM;
        };
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
        // SAFETY: validated by the magic test; closing ends its life.
        unsafe {
            if CmObj::from_handle(cm).is_some() {
                CmObj::destroy(cm);
            } else {
                crate::error!("{}: {:p} is not a connection manager of this library", FN, cm);
            }
        }
    }
}

entry! {
    fn uct_cm_query(cm: uct_cm_h, cm_attr: *mut uct_cm_attr_t) -> ucs_status_t {
        need!(cm_attr, "cm_attr");
        let c = cm_or_fail!(cm);
        // SAFETY: checked non-NULL.
        c.imp.query(unsafe { &mut *cm_attr })
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
                unsafe { ListenerObj::destroy(l) };
                s
            }
        }
    }
}

entry! {
    fn uct_listener_destroy(listener: uct_listener_h) {
        // SAFETY: validated by the magic test; destroying ends its life.
        unsafe {
            if ListenerObj::from_handle(listener).is_some() {
                ListenerObj::destroy(listener as *mut ListenerObj);
            } else {
                crate::error!("{}: {:p} is not a listener of this library", FN, listener);
            }
        }
    }
}

entry! {
    fn uct_listener_query(listener: uct_listener_h, listener_attr: *mut uct_listener_attr_t) -> ucs_status_t {
        need!(listener_attr, "listener_attr");
        // SAFETY: validated by the magic test.
        match unsafe { ListenerObj::from_handle(listener) }.and_then(|l| l.imp()) {
            // SAFETY: checked non-NULL.
            Some(imp) => imp.query(unsafe { &mut *listener_attr }),
            None => {
                crate::error!("{}: {:p} is not a listener of this library", FN, listener);
                UCS_ERR_INVALID_PARAM
            }
        }
    }
}

entry! {
    fn uct_listener_reject(listener: uct_listener_h, conn_request: uct_conn_request_h) -> ucs_status_t {
        need!(conn_request, "conn_request");
        // SAFETY: validated by the magic test.
        match unsafe { ListenerObj::from_handle(listener) }.and_then(|l| l.imp()) {
            Some(imp) => imp.reject(conn_request),
            None => {
                crate::error!("{}: {:p} is not a listener of this library", FN, listener);
                UCS_ERR_INVALID_PARAM
            }
        }
    }
}
