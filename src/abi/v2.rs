//! Definitions of `uct/api/v2/uct_v2.h` (UCX 1.13.1). Debian does not ship
//! this header, but libucp 1.13.1 was built against it and calls the
//! functions it declares, so the layouts below are part of the ABI.

use super::uct::uct_ppn_bandwidth_t;
use super::uct::uct_completion_t;
use super::uct_def::*;
use super::ucs::*;
use ::core::ffi::{c_char, c_uint, c_void};

/// Kind of endpoint operation whose performance is estimated (C enum).
pub type uct_ep_operation_t = u32;
/// Alias for the C tag `enum uct_ep_operation`.
pub type uct_ep_operation = uct_ep_operation_t;
pub const UCT_EP_OP_AM_SHORT: uct_ep_operation_t = 0;
pub const UCT_EP_OP_AM_BCOPY: uct_ep_operation_t = 1;
pub const UCT_EP_OP_AM_ZCOPY: uct_ep_operation_t = 2;
pub const UCT_EP_OP_PUT_SHORT: uct_ep_operation_t = 3;
pub const UCT_EP_OP_PUT_BCOPY: uct_ep_operation_t = 4;
pub const UCT_EP_OP_PUT_ZCOPY: uct_ep_operation_t = 5;
pub const UCT_EP_OP_GET_SHORT: uct_ep_operation_t = 6;
pub const UCT_EP_OP_GET_BCOPY: uct_ep_operation_t = 7;
pub const UCT_EP_OP_GET_ZCOPY: uct_ep_operation_t = 8;
pub const UCT_EP_OP_EAGER_SHORT: uct_ep_operation_t = 9;
pub const UCT_EP_OP_EAGER_BCOPY: uct_ep_operation_t = 10;
pub const UCT_EP_OP_EAGER_ZCOPY: uct_ep_operation_t = 11;
pub const UCT_EP_OP_RNDV_ZCOPY: uct_ep_operation_t = 12;
pub const UCT_EP_OP_ATOMIC_POST: uct_ep_operation_t = 13;
pub const UCT_EP_OP_ATOMIC_FETCH: uct_ep_operation_t = 14;
pub const UCT_EP_OP_LAST: uct_ep_operation_t = 15;

/// Valid-field bits of `uct_perf_attr_t::field_mask`.
/// (C enum tag, 4 bytes; the constants are u64 like the field they fill.)
pub type uct_perf_attr_field = u32;
pub const UCT_PERF_ATTR_FIELD_OPERATION: u64 = 1u64 << 0;
pub const UCT_PERF_ATTR_FIELD_LOCAL_MEMORY_TYPE: u64 = 1u64 << 1;
pub const UCT_PERF_ATTR_FIELD_REMOTE_MEMORY_TYPE: u64 = 1u64 << 2;
pub const UCT_PERF_ATTR_FIELD_LOCAL_SYS_DEVICE: u64 = 1u64 << 3;
pub const UCT_PERF_ATTR_FIELD_REMOTE_SYS_DEVICE: u64 = 1u64 << 4;
pub const UCT_PERF_ATTR_FIELD_SEND_PRE_OVERHEAD: u64 = 1u64 << 5;
pub const UCT_PERF_ATTR_FIELD_SEND_POST_OVERHEAD: u64 = 1u64 << 6;
pub const UCT_PERF_ATTR_FIELD_RECV_OVERHEAD: u64 = 1u64 << 7;
pub const UCT_PERF_ATTR_FIELD_BANDWIDTH: u64 = 1u64 << 8;
pub const UCT_PERF_ATTR_FIELD_LATENCY: u64 = 1u64 << 9;
pub const UCT_PERF_ATTR_FIELD_MAX_INFLIGHT_EPS: u64 = 1u64 << 10;

/// In/out argument of `uct_iface_estimate_perf` (88 bytes). The first
/// members select the scenario, the rest receive the estimate.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct uct_perf_attr_t {
    pub field_mask: u64,
    pub operation: uct_ep_operation_t,
    pub local_memory_type: ucs_memory_type_t,
    pub remote_memory_type: ucs_memory_type_t,
    pub local_sys_device: ucs_sys_device_t,
    pub remote_sys_device: ucs_sys_device_t,
    /// Seconds spent by the sender before the operation is posted.
    pub send_pre_overhead: f64,
    /// Seconds spent by the sender after posting.
    pub send_post_overhead: f64,
    /// Seconds spent by the receiver.
    pub recv_overhead: f64,
    pub bandwidth: uct_ppn_bandwidth_t,
    pub latency: ucs_linear_func_t,
    pub max_inflight_eps: usize,
}

/// Valid-field bits of `uct_md_mem_dereg_params_t::field_mask`. The C enum
/// type is 4 bytes; the constants are typed u64 to match the mask.
pub type uct_md_mem_dereg_field_mask_t = u32;
pub const UCT_MD_MEM_DEREG_FIELD_MEMH: u64 = 1u64 << 0;
pub const UCT_MD_MEM_DEREG_FIELD_FLAGS: u64 = 1u64 << 1;
pub const UCT_MD_MEM_DEREG_FIELD_COMPLETION: u64 = 1u64 << 2;

/// Valid-field bits of `uct_md_mkey_pack_params_t::field_mask` (constants
/// typed u64 to match the mask).
pub type uct_md_mkey_pack_field_mask_t = u32;
pub const UCT_MD_MKEY_PACK_FIELD_FLAGS: u64 = 1u64 << 0;

/// Valid-field bits of `uct_ep_attr_t::field_mask`.
/// (C enum tag, 4 bytes; the constants are u64 like the field they fill.)
pub type uct_ep_attr_field = u32;
pub const UCT_EP_ATTR_FIELD_LOCAL_SOCKADDR: u64 = 1u64 << 0;
pub const UCT_EP_ATTR_FIELD_REMOTE_SOCKADDR: u64 = 1u64 << 1;

/// Valid-field bits of `uct_iface_is_reachable_params_t::field_mask`
/// (constants typed u64 to match the mask).
pub type uct_iface_is_reachable_field_mask_t = u32;
pub const UCT_IFACE_IS_REACHABLE_FIELD_DEVICE_ADDR: u64 = 1u64 << 0;
pub const UCT_IFACE_IS_REACHABLE_FIELD_IFACE_ADDR: u64 = 1u64 << 1;
pub const UCT_IFACE_IS_REACHABLE_FIELD_INFO_STRING: u64 = 1u64 << 2;
pub const UCT_IFACE_IS_REACHABLE_FIELD_INFO_STRING_LENGTH: u64 = 1u64 << 3;

/// Flags of `uct_md_mem_dereg_params_t::flags` (`unsigned`).
pub type uct_md_mem_dereg_flags_t = u32;
pub const UCT_MD_MEM_DEREG_FLAG_INVALIDATE: u32 = 1u32 << 0;

/// Flags of `uct_md_mkey_pack_params_t::flags` (`unsigned`).
pub type uct_md_mkey_pack_flags_t = u32;
pub const UCT_MD_MKEY_PACK_FLAG_INVALIDATE: u32 = 1u32 << 0;

/// Endpoint attributes, filled by `uct_ep_query` (264 bytes).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct uct_ep_attr_t {
    pub field_mask: u64,
    pub local_address: libc::sockaddr_storage,
    pub remote_address: libc::sockaddr_storage,
}
/// Alias for the C tag `struct uct_ep_attr`.
pub type uct_ep_attr = uct_ep_attr_t;

/// Invalidation notification callback.
pub type uct_md_mem_invalidate_cb_t = Option<unsafe extern "C" fn(arg: *mut c_void)>;

/// Parameters of `uct_md_mem_dereg_v2`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct uct_md_mem_dereg_params_t {
    pub field_mask: u64,
    /// `UCT_MD_MEM_DEREG_FLAG_*` bits.
    pub flags: c_uint,
    pub memh: uct_mem_h,
    /// Completed when an invalidating deregistration has finished.
    pub comp: *mut uct_completion_t,
}
/// Alias for the C tag `struct uct_md_mem_dereg_params`.
pub type uct_md_mem_dereg_params = uct_md_mem_dereg_params_t;

/// Parameters of `uct_md_mkey_pack_v2`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct uct_md_mkey_pack_params_t {
    pub field_mask: u64,
    /// `UCT_MD_MKEY_PACK_FLAG_*` bits.
    pub flags: c_uint,
}
/// Alias for the C tag `struct uct_md_mkey_pack_params`.
pub type uct_md_mkey_pack_params = uct_md_mkey_pack_params_t;

/// Parameters of `uct_iface_is_reachable_v2`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct uct_iface_is_reachable_params_t {
    pub field_mask: u64,
    pub device_addr: *const uct_device_addr_t,
    pub iface_addr: *const uct_iface_addr_t,
    /// Optional buffer for a human-readable reason.
    pub info_string: *mut c_char,
    pub info_string_length: usize,
}
/// Alias for the C tag `struct uct_iface_is_reachable_params`.
pub type uct_iface_is_reachable_params = uct_iface_is_reachable_params_t;
