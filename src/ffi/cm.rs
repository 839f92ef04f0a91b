//! Connection-manager exports (see `core::cm`: none can be opened yet).

use super::{component_or_fail, entry, need};
use crate::abi::*;
use libc::{c_void, socklen_t};

fn no_cm(func: &str, cm: *const c_void) -> ucs_status_t {
    crate::error!("{}: {:p} is not a connection manager of this library", func, cm);
    UCS_ERR_INVALID_PARAM
}

entry! {
    fn uct_cm_open(component: uct_component_h, worker: uct_worker_h, config: *const uct_cm_config_t,
                   cm_p: *mut uct_cm_h) -> ucs_status_t {
        let _ = (worker, config);
        need!(cm_p, "cm_p");
        let c = component_or_fail!(component);
        crate::debug!("{}: component {} has no connection manager", FN, c.name);
        UCS_ERR_UNSUPPORTED
    }
}

entry! {
    fn uct_cm_close(cm: uct_cm_h) {
        no_cm(FN, cm as *const c_void);
    }
}

entry! {
    fn uct_cm_query(cm: uct_cm_h, cm_attr: *mut uct_cm_attr_t) -> ucs_status_t {
        need!(cm_attr, "cm_attr");
        no_cm(FN, cm as *const c_void)
    }
}

entry! {
    fn uct_listener_create(cm: uct_cm_h, saddr: *const libc::sockaddr, socklen: socklen_t,
                           params: *const uct_listener_params_t, listener_p: *mut uct_listener_h) -> ucs_status_t {
        let _ = (saddr, socklen, params);
        need!(listener_p, "listener_p");
        no_cm(FN, cm as *const c_void)
    }
}

entry! {
    fn uct_listener_destroy(listener: uct_listener_h) {
        no_cm(FN, listener as *const c_void);
    }
}

entry! {
    fn uct_listener_query(listener: uct_listener_h, listener_attr: *mut uct_listener_attr_t) -> ucs_status_t {
        need!(listener_attr, "listener_attr");
        no_cm(FN, listener as *const c_void)
    }
}

entry! {
    fn uct_listener_reject(listener: uct_listener_h, conn_request: uct_conn_request_h) -> ucs_status_t {
        let _ = conn_request;
        no_cm(FN, listener as *const c_void)
    }
}
