//! Vtable entries for operations a transport does not have. No slot of an
//! interface we hand out is ever NULL: callers (and libucp's proxy endpoints,
//! which copy slots) call through them blindly, and get a status instead.

use crate::abi::*;
use libc::{c_int, c_uint, c_void};

const U: ucs_status_t = UCS_ERR_UNSUPPORTED;

unsafe extern "C" fn put_short(_: uct_ep_h, _: *const c_void, _: c_uint, _: u64, _: uct_rkey_t) -> ucs_status_t { U }
unsafe extern "C" fn put_bcopy(_: uct_ep_h, _: uct_pack_callback_t, _: *mut c_void, _: u64, _: uct_rkey_t) -> isize { U as isize }
unsafe extern "C" fn put_zcopy(_: uct_ep_h, _: *const uct_iov_t, _: usize, _: u64, _: uct_rkey_t, _: *mut uct_completion_t) -> ucs_status_t { U }
unsafe extern "C" fn get_short(_: uct_ep_h, _: *mut c_void, _: c_uint, _: u64, _: uct_rkey_t) -> ucs_status_t { U }
unsafe extern "C" fn get_bcopy(_: uct_ep_h, _: uct_unpack_callback_t, _: *mut c_void, _: usize, _: u64, _: uct_rkey_t, _: *mut uct_completion_t) -> ucs_status_t { U }
unsafe extern "C" fn get_zcopy(_: uct_ep_h, _: *const uct_iov_t, _: usize, _: u64, _: uct_rkey_t, _: *mut uct_completion_t) -> ucs_status_t { U }
unsafe extern "C" fn am_short(_: uct_ep_h, _: u8, _: u64, _: *const c_void, _: c_uint) -> ucs_status_t { U }
unsafe extern "C" fn am_short_iov(_: uct_ep_h, _: u8, _: *const uct_iov_t, _: usize) -> ucs_status_t { U }
unsafe extern "C" fn am_bcopy(_: uct_ep_h, _: u8, _: uct_pack_callback_t, _: *mut c_void, _: c_uint) -> isize { U as isize }
unsafe extern "C" fn am_zcopy(_: uct_ep_h, _: u8, _: *const c_void, _: c_uint, _: *const uct_iov_t, _: usize, _: c_uint, _: *mut uct_completion_t) -> ucs_status_t { U }
unsafe extern "C" fn cswap64(_: uct_ep_h, _: u64, _: u64, _: u64, _: uct_rkey_t, _: *mut u64, _: *mut uct_completion_t) -> ucs_status_t { U }
unsafe extern "C" fn cswap32(_: uct_ep_h, _: u32, _: u32, _: u64, _: uct_rkey_t, _: *mut u32, _: *mut uct_completion_t) -> ucs_status_t { U }
unsafe extern "C" fn atomic32_post(_: uct_ep_h, _: c_uint, _: u32, _: u64, _: uct_rkey_t) -> ucs_status_t { U }
unsafe extern "C" fn atomic64_post(_: uct_ep_h, _: c_uint, _: u64, _: u64, _: uct_rkey_t) -> ucs_status_t { U }
unsafe extern "C" fn atomic32_fetch(_: uct_ep_h, _: c_uint, _: u32, _: *mut u32, _: u64, _: uct_rkey_t, _: *mut uct_completion_t) -> ucs_status_t { U }
unsafe extern "C" fn atomic64_fetch(_: uct_ep_h, _: c_uint, _: u64, _: *mut u64, _: u64, _: uct_rkey_t, _: *mut uct_completion_t) -> ucs_status_t { U }
unsafe extern "C" fn tag_eager_short(_: uct_ep_h, _: uct_tag_t, _: *const c_void, _: usize) -> ucs_status_t { U }
unsafe extern "C" fn tag_eager_bcopy(_: uct_ep_h, _: uct_tag_t, _: u64, _: uct_pack_callback_t, _: *mut c_void, _: c_uint) -> isize { U as isize }
unsafe extern "C" fn tag_eager_zcopy(_: uct_ep_h, _: uct_tag_t, _: u64, _: *const uct_iov_t, _: usize, _: c_uint, _: *mut uct_completion_t) -> ucs_status_t { U }
unsafe extern "C" fn tag_rndv_zcopy(_: uct_ep_h, _: uct_tag_t, _: *const c_void, _: c_uint, _: *const uct_iov_t, _: usize, _: c_uint, _: *mut uct_completion_t) -> ucs_status_ptr_t {
    // A status pointer carries the status in its value.
    U as isize as ucs_status_ptr_t
}
unsafe extern "C" fn tag_rndv_cancel(_: uct_ep_h, _: *mut c_void) -> ucs_status_t { U }
unsafe extern "C" fn tag_rndv_request(_: uct_ep_h, _: uct_tag_t, _: *const c_void, _: c_uint, _: c_uint) -> ucs_status_t { U }
unsafe extern "C" fn tag_recv_zcopy(_: uct_iface_h, _: uct_tag_t, _: uct_tag_t, _: *const uct_iov_t, _: usize, _: *mut uct_tag_context_t) -> ucs_status_t { U }
unsafe extern "C" fn tag_recv_cancel(_: uct_iface_h, _: *mut uct_tag_context_t, _: c_int) -> ucs_status_t { U }
unsafe extern "C" fn pending_add(_: uct_ep_h, _: *mut uct_pending_req_t, _: c_uint) -> ucs_status_t { U }
unsafe extern "C" fn pending_purge(_: uct_ep_h, _: uct_pending_purge_callback_t, _: *mut c_void) {}
unsafe extern "C" fn ep_flush(_: uct_ep_h, _: c_uint, _: *mut uct_completion_t) -> ucs_status_t { U }
unsafe extern "C" fn ep_fence(_: uct_ep_h, _: c_uint) -> ucs_status_t { U }
unsafe extern "C" fn ep_check(_: uct_ep_h, _: c_uint, _: *mut uct_completion_t) -> ucs_status_t { U }
unsafe extern "C" fn ep_create(_: *const uct_ep_params_t, _: *mut uct_ep_h) -> ucs_status_t { U }
unsafe extern "C" fn ep_connect(_: uct_ep_h, _: *const uct_ep_connect_params_t) -> ucs_status_t { U }
unsafe extern "C" fn ep_disconnect(_: uct_ep_h, _: c_uint) -> ucs_status_t { U }
unsafe extern "C" fn cm_ep_conn_notify(_: uct_ep_h) -> ucs_status_t { U }
unsafe extern "C" fn ep_destroy(_: uct_ep_h) {}
unsafe extern "C" fn ep_get_address(_: uct_ep_h, _: *mut uct_ep_addr_t) -> ucs_status_t { U }
unsafe extern "C" fn ep_connect_to_ep(_: uct_ep_h, _: *const uct_device_addr_t, _: *const uct_ep_addr_t) -> ucs_status_t { U }
unsafe extern "C" fn iface_accept(_: uct_iface_h, _: uct_conn_request_h) -> ucs_status_t { U }
unsafe extern "C" fn iface_reject(_: uct_iface_h, _: uct_conn_request_h) -> ucs_status_t { U }
unsafe extern "C" fn iface_flush(_: uct_iface_h, _: c_uint, _: *mut uct_completion_t) -> ucs_status_t { U }
unsafe extern "C" fn iface_fence(_: uct_iface_h, _: c_uint) -> ucs_status_t { U }
unsafe extern "C" fn progress_toggle(_: uct_iface_h, _: c_uint) {}
unsafe extern "C" fn progress(_: uct_iface_h) -> c_uint { 0 }
unsafe extern "C" fn event_fd_get(_: uct_iface_h, _: *mut c_int) -> ucs_status_t { U }
unsafe extern "C" fn event_arm(_: uct_iface_h, _: c_uint) -> ucs_status_t { U }
unsafe extern "C" fn iface_close(_: uct_iface_h) {}
unsafe extern "C" fn iface_query(_: uct_iface_h, _: *mut uct_iface_attr_t) -> ucs_status_t { U }
unsafe extern "C" fn get_device_address(_: uct_iface_h, _: *mut uct_device_addr_t) -> ucs_status_t { U }
unsafe extern "C" fn get_address(_: uct_iface_h, _: *mut uct_iface_addr_t) -> ucs_status_t { U }
unsafe extern "C" fn is_reachable(_: uct_iface_h, _: *const uct_device_addr_t, _: *const uct_iface_addr_t) -> c_int { 0 }

/// A vtable in which every slot reports `UCS_ERR_UNSUPPORTED` (or does
/// nothing, for the slots that return no status).
pub fn unsupported_ops() -> uct_iface_ops_t {
    uct_iface_ops_t {
        ep_put_short: Some(put_short),
        ep_put_bcopy: Some(put_bcopy),
        ep_put_zcopy: Some(put_zcopy),
        ep_get_short: Some(get_short),
        ep_get_bcopy: Some(get_bcopy),
        ep_get_zcopy: Some(get_zcopy),
        ep_am_short: Some(am_short),
        ep_am_short_iov: Some(am_short_iov),
        ep_am_bcopy: Some(am_bcopy),
        ep_am_zcopy: Some(am_zcopy),
        ep_atomic_cswap64: Some(cswap64),
        ep_atomic_cswap32: Some(cswap32),
        ep_atomic32_post: Some(atomic32_post),
        ep_atomic64_post: Some(atomic64_post),
        ep_atomic32_fetch: Some(atomic32_fetch),
        ep_atomic64_fetch: Some(atomic64_fetch),
        ep_tag_eager_short: Some(tag_eager_short),
        ep_tag_eager_bcopy: Some(tag_eager_bcopy),
        ep_tag_eager_zcopy: Some(tag_eager_zcopy),
        ep_tag_rndv_zcopy: Some(tag_rndv_zcopy),
        ep_tag_rndv_cancel: Some(tag_rndv_cancel),
        ep_tag_rndv_request: Some(tag_rndv_request),
        iface_tag_recv_zcopy: Some(tag_recv_zcopy),
        iface_tag_recv_cancel: Some(tag_recv_cancel),
        ep_pending_add: Some(pending_add),
        ep_pending_purge: Some(pending_purge),
        ep_flush: Some(ep_flush),
        ep_fence: Some(ep_fence),
        ep_check: Some(ep_check),
        ep_create: Some(ep_create),
        ep_connect: Some(ep_connect),
        ep_disconnect: Some(ep_disconnect),
        cm_ep_conn_notify: Some(cm_ep_conn_notify),
        ep_destroy: Some(ep_destroy),
        ep_get_address: Some(ep_get_address),
        ep_connect_to_ep: Some(ep_connect_to_ep),
        iface_accept: Some(iface_accept),
        iface_reject: Some(iface_reject),
        iface_flush: Some(iface_flush),
        iface_fence: Some(iface_fence),
        iface_progress_enable: Some(progress_toggle),
        iface_progress_disable: Some(progress_toggle),
        iface_progress: Some(progress),
        iface_event_fd_get: Some(event_fd_get),
        iface_event_arm: Some(event_arm),
        iface_close: Some(iface_close),
        iface_query: Some(iface_query),
        iface_get_device_address: Some(get_device_address),
        iface_get_address: Some(get_address),
        iface_is_reachable: Some(is_reachable),
    }
}
