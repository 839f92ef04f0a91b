//! Endpoint exports. As in UCX 1.13.1 they are trampolines through
//! `ep->iface->ops`: libucp hands in endpoint objects it built itself.

use super::{entry, need};
use crate::abi::layout_sizes::ReleaseSized;
use crate::abi::*;
use crate::core::iface::stub_iface;
use crate::core::iface::IfaceHeader;
use libc::c_uint;

/// The vtable of an endpoint's interface, or a status for a NULL endpoint.
macro_rules! ops_of {
    ($ep:expr) => {{
        need!($ep, "ep");
        // SAFETY: a non-NULL endpoint begins with its interface pointer,
        // and an interface begins with its vtable (the UCT object model).
        let iface = unsafe { (*$ep).iface };
        need!(iface, "ep->iface");
        // SAFETY: as above.
        unsafe { &(*iface).ops }
    }};
}

entry! {
    fn uct_ep_create(params: *const uct_ep_params_t, ep_p: *mut uct_ep_h) -> ucs_status_t {
        need!(params, "params");
        need!(ep_p, "ep_p");
        // SAFETY: checked non-NULL: the caller's parameters, in its
        // release's layout, copied for the call.
        let p = &unsafe { uct_ep_params_t::read_in(params, crate::ucs::release::running()) };
        if p.field_mask & !crate::core::release::ep_param_fields() != 0 {
            crate::error!("{}: field_mask {:#x} has unknown bits", FN, p.field_mask);
            return UCS_ERR_INVALID_PARAM;
        }
        if p.field_mask & UCT_EP_PARAM_FIELD_IFACE != 0 {
            let hdr = super::iface_or_fail!(p.iface);
            match hdr.base.ops.ep_create {
                // SAFETY: calling the interface's own constructor with the
                // copy (a struct of the newest layout, valid for the call).
                Some(f) => unsafe { f(p, ep_p) },
                None => UCS_ERR_UNSUPPORTED,
            }
        } else if p.field_mask & UCT_EP_PARAM_FIELD_CM != 0 {
            match crate::core::cm::ep_create(p) {
                Ok(ep) => {
                    // SAFETY: out-pointer checked above.
                    unsafe { *ep_p = ep };
                    UCS_OK
                }
                Err(s) => s,
            }
        } else {
            crate::error!("{}: neither UCT_EP_PARAM_FIELD_IFACE nor UCT_EP_PARAM_FIELD_CM is set", FN);
            UCS_ERR_INVALID_PARAM
        }
    }
}

entry! {
    fn uct_ep_destroy(ep: uct_ep_h) {
        if ep.is_null() {
            crate::error!("{}: ep must not be NULL", FN);
            return;
        }
        // SAFETY: the UCT object model (see ops_of).
        unsafe {
            let iface = (*ep).iface;
            if iface.is_null() {
                crate::error!("{}: ep->iface is NULL", FN);
                return;
            }
            if let Some(f) = (*iface).ops.ep_destroy {
                f(ep)
            }
        }
    }
}

entry! {
    fn uct_ep_get_address(ep: uct_ep_h, addr: *mut uct_ep_addr_t) -> ucs_status_t {
        let ops = ops_of!(ep);
        // SAFETY: dispatching to the endpoint's own implementation.
        ops.ep_get_address.map_or(UCS_ERR_UNSUPPORTED, |f| unsafe { f(ep, addr) })
    }
}

entry! {
    fn uct_ep_connect_to_ep(ep: uct_ep_h, dev_addr: *const uct_device_addr_t,
                            ep_addr: *const uct_ep_addr_t) -> ucs_status_t {
        let ops = ops_of!(ep);
        // SAFETY: dispatching to the endpoint's own implementation.
        ops.ep_connect_to_ep.map_or(UCS_ERR_UNSUPPORTED, |f| unsafe { f(ep, dev_addr, ep_addr) })
    }
}

entry! {
    fn uct_ep_connect(ep: uct_ep_h, params: *const uct_ep_connect_params_t) -> ucs_status_t {
        let ops = ops_of!(ep);
        // SAFETY: dispatching to the endpoint's own implementation.
        ops.ep_connect.map_or(UCS_ERR_UNSUPPORTED, |f| unsafe { f(ep, params) })
    }
}

entry! {
    fn uct_ep_disconnect(ep: uct_ep_h, flags: c_uint) -> ucs_status_t {
        let ops = ops_of!(ep);
        // SAFETY: dispatching to the endpoint's own implementation.
        ops.ep_disconnect.map_or(UCS_ERR_UNSUPPORTED, |f| unsafe { f(ep, flags) })
    }
}

entry! {
    fn uct_ep_check(ep: uct_ep_h, flags: c_uint, comp: *mut uct_completion_t) -> ucs_status_t {
        let ops = ops_of!(ep);
        // SAFETY: dispatching to the endpoint's own implementation.
        ops.ep_check.map_or(UCS_ERR_UNSUPPORTED, |f| unsafe { f(ep, flags, comp) })
    }
}

entry! {
    fn uct_cm_client_ep_conn_notify(ep: uct_ep_h) -> ucs_status_t {
        let ops = ops_of!(ep);
        // SAFETY: dispatching to the endpoint's own implementation.
        ops.cm_ep_conn_notify.map_or(UCS_ERR_UNSUPPORTED, |f| unsafe { f(ep) })
    }
}

entry! {
    fn uct_ep_query(ep: uct_ep_h, ep_attr: *mut uct_ep_attr_t) -> ucs_status_t {
        need!(ep, "ep");
        need!(ep_attr, "ep_attr");
        // SAFETY: the UCT object model (an endpoint begins with its
        // interface pointer).
        if let Some(status) = unsafe { stub_iface::status_of_ep(ep) } {
            return status;
        }
        // SAFETY: as above; the interface is looked up in the registry.
        let Some(hdr) = (unsafe { IfaceHeader::of_ep((*ep).iface) }) else {
            crate::error!("{}: endpoint {:p} does not belong to a live interface of this library", FN, ep);
            return UCS_ERR_INVALID_PARAM;
        };
        let release = crate::ucs::release::running();
        // SAFETY: checked non-NULL: the caller's struct, in its release's
        // layout, copied in and (what the release has of it) out again.
        let mut attr = unsafe { uct_ep_attr_t::read_in(ep_attr, release) };
        // SAFETY: the interface is ours, so the endpoint is one of its own;
        // a local struct of the newest layout.
        let status = unsafe { (hdr.internal.ep_query)(ep, &mut attr) };
        // SAFETY: as above.
        unsafe { attr.write_in(ep_attr, release) };
        status
    }
}
