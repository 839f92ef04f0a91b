//! Definitions of `uct/api/v2/uct_v2.h` (UCX 1.13.1, and what later
//! releases up to 1.18.1 added or changed, under `ucx_since_1_*`). Neither
//! Debian nor the PyPI wheels ship this header, but libucp was built against
//! it and calls the functions it declares, so the layouts below are part of
//! the ABI.

use super::uct::uct_ppn_bandwidth_t;
use super::uct::uct_completion_t;
use super::uct_md::UCT_MD_FLAG_LAST;
use super::uct_def::*;
use super::ucs::*;
use ::core::ffi::c_int;
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
/// `uct_perf_attr_t::flags` is requested (since 1.17).
/// Releases: 1.17+.
pub const UCT_PERF_ATTR_FIELD_FLAGS: u64 = 1u64 << 11;

/// Bits of `uct_perf_attr_t::flags` (C enum, 4 bytes; the constants are
/// u64 like the field, since 1.17).
/// Releases: 1.17+.
pub type uct_perf_attr_flags_t = u32;
/// Sends and receives share one resource, so their costs add up.
/// Releases: 1.17+.
pub const UCT_PERF_ATTR_FLAGS_TX_RX_SHARED: u64 = 1u64 << 0;

/// In/out argument of `uct_iface_estimate_perf` (88 bytes; 96 from 1.17,
/// which appends `flags`). The first members select the scenario, the rest
/// receive the estimate.
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
    /// `UCT_PERF_ATTR_FLAGS_*` bits (since 1.17).
    /// Releases: 1.17+.
    pub flags: u64,
}

/// Valid-field bits of `uct_md_mem_reg_params_t::field_mask` (constants
/// typed u64 to match the mask, since 1.14).
/// Releases: 1.14+.
pub type uct_md_mem_reg_field_mask_t = u32;
/// Releases: 1.14+.
pub const UCT_MD_MEM_REG_FIELD_FLAGS: u64 = 1u64 << 0;
/// Releases: 1.14+.
pub const UCT_MD_MEM_REG_FIELD_DMABUF_FD: u64 = 1u64 << 1;
/// Releases: 1.14+.
pub const UCT_MD_MEM_REG_FIELD_DMABUF_OFFSET: u64 = 1u64 << 2;

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

/// Valid-field bits of `uct_md_mem_attach_params_t::field_mask` (constants
/// typed u64 to match the mask, since 1.14).
/// Releases: 1.14+.
pub type uct_md_mem_attach_field_mask_t = u32;
/// Releases: 1.14+.
pub const UCT_MD_MEM_ATTACH_FIELD_FLAGS: u64 = 1u64 << 0;

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
/// `scope` is set (since 1.15).
/// Releases: 1.15+.
pub const UCT_IFACE_IS_REACHABLE_FIELD_SCOPE: u64 = 1u64 << 4;
/// `device_addr_length` is set (since 1.18).
/// Releases: 1.18+.
pub const UCT_IFACE_IS_REACHABLE_FIELD_DEVICE_ADDR_LENGTH: u64 = 1u64 << 5;
/// `iface_addr_length` is set (since 1.18).
/// Releases: 1.18+.
pub const UCT_IFACE_IS_REACHABLE_FIELD_IFACE_ADDR_LENGTH: u64 = 1u64 << 6;

/// Flags of `uct_md_mem_dereg_params_t::flags` (`unsigned`).
pub type uct_md_mem_dereg_flags_t = u32;
pub const UCT_MD_MEM_DEREG_FLAG_INVALIDATE: u32 = 1u32 << 0;

/// Flags of `uct_md_mkey_pack_params_t::flags` (`unsigned`).
pub type uct_md_mkey_pack_flags_t = u32;
/// Pack a key that can be invalidated (up to 1.14; split into `_RMA` and
/// `_AMO` in 1.15).
/// Releases: 1.13-1.14.
pub const UCT_MD_MKEY_PACK_FLAG_INVALIDATE: u32 = 1u32 << 0;
/// Pack a key whose remote memory accesses can be invalidated (since 1.15).
/// Releases: 1.15+.
pub const UCT_MD_MKEY_PACK_FLAG_INVALIDATE_RMA: u32 = 1u32 << 0;
/// Pack a key whose remote atomic accesses can be invalidated (since 1.15).
/// Releases: 1.15+.
pub const UCT_MD_MKEY_PACK_FLAG_INVALIDATE_AMO: u32 = 1u32 << 1;
/// Pack an exported key another process can attach to (since 1.14; bit 1
/// in 1.14, bit 2 from 1.15).
/// Releases: 1.14-1.14.
pub const UCT_MD_MKEY_PACK_FLAG_EXPORT_v1_14: u32 = 1u32 << 1;
/// Pack an exported key another process can attach to (since 1.14; bit 1
/// in 1.14, bit 2 from 1.15).
/// Releases: 1.15+.
pub const UCT_MD_MKEY_PACK_FLAG_EXPORT: u32 = 1u32 << 2;

/// Flags of `uct_md_mem_attach_params_t::flags` (C enum, 4 bytes; the
/// constants are u64 like the field, since 1.14).
/// Releases: 1.14+.
pub type uct_md_mem_attach_flags_t = u32;
/// Do not report a failing attach as an error.
/// Releases: 1.14+.
pub const UCT_MD_MEM_ATTACH_FLAG_HIDE_ERRORS: u64 = 1u64 << 0;

/// Valid-field bits of `uct_ep_connect_to_ep_params_t::field_mask`
/// (constants typed u64 to match the mask, since 1.14).
/// Releases: 1.14+.
pub type uct_ep_connect_to_ep_param_field_t = u32;
/// Releases: 1.14+.
pub const UCT_EP_CONNECT_TO_EP_PARAM_FIELD_DEVICE_ADDR_LENGTH: u64 = 1u64 << 0;
/// Releases: 1.14+.
pub const UCT_EP_CONNECT_TO_EP_PARAM_FIELD_EP_ADDR_LENGTH: u64 = 1u64 << 1;

/// Valid-field bits of `uct_ep_is_connected_params_t::field_mask`
/// (constants typed u64 to match the mask, since 1.16).
/// Releases: 1.16+.
pub type uct_ep_is_connected_field_mask_t = u32;
/// Releases: 1.16+.
pub const UCT_EP_IS_CONNECTED_FIELD_DEVICE_ADDR: u64 = 1u64 << 0;
/// Releases: 1.16+.
pub const UCT_EP_IS_CONNECTED_FIELD_IFACE_ADDR: u64 = 1u64 << 1;
/// Releases: 1.16+.
pub const UCT_EP_IS_CONNECTED_FIELD_EP_ADDR: u64 = 1u64 << 2;

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

/// Parameters of `uct_md_mem_reg_v2` (since 1.14).
/// Releases: 1.14+.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct uct_md_mem_reg_params_t {
    pub field_mask: u64,
    /// `UCT_MD_MEM_FLAG_*` and `UCT_MD_MEM_ACCESS_*` bits.
    pub flags: u64,
    /// dma-buf to register instead of the address range, or
    /// `UCT_DMABUF_FD_INVALID`.
    pub dmabuf_fd: c_int,
    /// Offset of the range inside that dma-buf.
    pub dmabuf_offset: usize,
}
/// Alias for the C tag `struct uct_md_mem_reg_params`.
/// Releases: 1.14+.
pub type uct_md_mem_reg_params = uct_md_mem_reg_params_t;

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

/// Parameters of `uct_md_mem_attach` (since 1.14).
/// Releases: 1.14+.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct uct_md_mem_attach_params_t {
    pub field_mask: u64,
    /// `UCT_MD_MEM_ATTACH_FLAG_*` bits.
    pub flags: u64,
}
/// Alias for the C tag `struct uct_md_mem_attach_params`.
/// Releases: 1.14+.
pub type uct_md_mem_attach_params = uct_md_mem_attach_params_t;

/// How far `uct_iface_is_reachable_v2` looks (C enum, 4 bytes, since 1.15).
/// Releases: 1.15+.
pub type uct_iface_reachability_scope_t = u32;
/// Reachable through this very device.
/// Releases: 1.15+.
pub const UCT_IFACE_REACHABILITY_SCOPE_DEVICE: uct_iface_reachability_scope_t = 0;
/// Reachable through the network, from any device.
/// Releases: 1.15+.
pub const UCT_IFACE_REACHABILITY_SCOPE_NETWORK: uct_iface_reachability_scope_t = 1;

/// Parameters of `uct_iface_is_reachable_v2` (40 bytes; 48 from 1.15,
/// which appends `scope`; 64 from 1.18, which appends the address lengths).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct uct_iface_is_reachable_params_t {
    pub field_mask: u64,
    pub device_addr: *const uct_device_addr_t,
    pub iface_addr: *const uct_iface_addr_t,
    /// Optional buffer for a human-readable reason.
    pub info_string: *mut c_char,
    pub info_string_length: usize,
    /// `UCT_IFACE_REACHABILITY_SCOPE_*` (since 1.15).
    /// Releases: 1.15+.
    pub scope: uct_iface_reachability_scope_t,
    /// Length of `device_addr` (since 1.18).
    /// Releases: 1.18+.
    pub device_addr_length: usize,
    /// Length of `iface_addr` (since 1.18).
    /// Releases: 1.18+.
    pub iface_addr_length: usize,
}
/// Alias for the C tag `struct uct_iface_is_reachable_params`.
pub type uct_iface_is_reachable_params = uct_iface_is_reachable_params_t;

/// Parameters of `uct_ep_is_connected` (since 1.16).
/// Releases: 1.16+.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct uct_ep_is_connected_params_t {
    pub field_mask: u64,
    pub device_addr: *const uct_device_addr_t,
    pub iface_addr: *const uct_iface_addr_t,
    pub ep_addr: *const uct_ep_addr_t,
}
/// Alias for the C tag `struct uct_ep_is_connected_params`.
/// Releases: 1.16+.
pub type uct_ep_is_connected_params = uct_ep_is_connected_params_t;

/// Parameters of `uct_ep_connect_to_ep_v2` (since 1.14).
/// Releases: 1.14+.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct uct_ep_connect_to_ep_params_t {
    pub field_mask: u64,
    pub device_addr_length: usize,
    pub ep_addr_length: usize,
}
/// Alias for the C tag `struct uct_ep_connect_to_ep_params`.
/// Releases: 1.14+.
pub type uct_ep_connect_to_ep_params = uct_ep_connect_to_ep_params_t;

/// Parameters of `uct_rkey_compare` (no optional members yet, since 1.16).
/// Releases: 1.16+.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct uct_rkey_compare_params_t {
    pub field_mask: u64,
}
/// Alias for the C tag `struct uct_rkey_compare_params`.
/// Releases: 1.16+.
pub type uct_rkey_compare_params = uct_rkey_compare_params_t;

/// Valid-field bits of `uct_md_attr_v2_t::field_mask` (C enum, 4 bytes; the
/// constants are u64 like the mask, since 1.14). 1.15 inserted
/// `REG_NONBLOCK_MEM_TYPES` at bit 4, moving the bits after it up by one;
/// 1.16 and 1.18 appended bits.
/// Releases: 1.14+.
pub type uct_md_attr_field_t = u32;
/// Alias for the C tag `enum uct_md_attr_field`.
/// Releases: 1.14+.
pub type uct_md_attr_field = uct_md_attr_field_t;
/// Releases: 1.14+.
pub const UCT_MD_ATTR_FIELD_MAX_ALLOC: u64 = 1u64 << 0;
/// Releases: 1.14+.
pub const UCT_MD_ATTR_FIELD_MAX_REG: u64 = 1u64 << 1;
/// Releases: 1.14+.
pub const UCT_MD_ATTR_FIELD_FLAGS: u64 = 1u64 << 2;
/// Releases: 1.14+.
pub const UCT_MD_ATTR_FIELD_REG_MEM_TYPES: u64 = 1u64 << 3;
/// Releases: 1.15+.
pub const UCT_MD_ATTR_FIELD_REG_NONBLOCK_MEM_TYPES: u64 = 1u64 << 4;
/// Releases: 1.14-1.14.
pub const UCT_MD_ATTR_FIELD_CACHE_MEM_TYPES_v1_14: u64 = 1u64 << 4;
/// Releases: 1.15+.
pub const UCT_MD_ATTR_FIELD_CACHE_MEM_TYPES: u64 = 1u64 << 5;
/// Releases: 1.14-1.14.
pub const UCT_MD_ATTR_FIELD_DETECT_MEM_TYPES_v1_14: u64 = 1u64 << 5;
/// Releases: 1.15+.
pub const UCT_MD_ATTR_FIELD_DETECT_MEM_TYPES: u64 = 1u64 << 6;
/// Releases: 1.14-1.14.
pub const UCT_MD_ATTR_FIELD_ALLOC_MEM_TYPES_v1_14: u64 = 1u64 << 6;
/// Releases: 1.15+.
pub const UCT_MD_ATTR_FIELD_ALLOC_MEM_TYPES: u64 = 1u64 << 7;
/// Releases: 1.14-1.14.
pub const UCT_MD_ATTR_FIELD_ACCESS_MEM_TYPES_v1_14: u64 = 1u64 << 7;
/// Releases: 1.15+.
pub const UCT_MD_ATTR_FIELD_ACCESS_MEM_TYPES: u64 = 1u64 << 8;
/// Releases: 1.14-1.14.
pub const UCT_MD_ATTR_FIELD_DMABUF_MEM_TYPES_v1_14: u64 = 1u64 << 8;
/// Releases: 1.15+.
pub const UCT_MD_ATTR_FIELD_DMABUF_MEM_TYPES: u64 = 1u64 << 9;
/// Releases: 1.14-1.14.
pub const UCT_MD_ATTR_FIELD_REG_COST_v1_14: u64 = 1u64 << 9;
/// Releases: 1.15+.
pub const UCT_MD_ATTR_FIELD_REG_COST: u64 = 1u64 << 10;
/// Releases: 1.14-1.14.
pub const UCT_MD_ATTR_FIELD_COMPONENT_NAME_v1_14: u64 = 1u64 << 10;
/// Releases: 1.15+.
pub const UCT_MD_ATTR_FIELD_COMPONENT_NAME: u64 = 1u64 << 11;
/// Releases: 1.14-1.14.
pub const UCT_MD_ATTR_FIELD_RKEY_PACKED_SIZE_v1_14: u64 = 1u64 << 11;
/// Releases: 1.15+.
pub const UCT_MD_ATTR_FIELD_RKEY_PACKED_SIZE: u64 = 1u64 << 12;
/// Releases: 1.14-1.14.
pub const UCT_MD_ATTR_FIELD_LOCAL_CPUS_v1_14: u64 = 1u64 << 12;
/// Releases: 1.15+.
pub const UCT_MD_ATTR_FIELD_LOCAL_CPUS: u64 = 1u64 << 13;
/// Releases: 1.14-1.14.
pub const UCT_MD_ATTR_FIELD_EXPORTED_MKEY_PACKED_SIZE_v1_14: u64 = 1u64 << 13;
/// Releases: 1.15+.
pub const UCT_MD_ATTR_FIELD_EXPORTED_MKEY_PACKED_SIZE: u64 = 1u64 << 14;
/// Releases: 1.14-1.14.
pub const UCT_MD_ATTR_FIELD_GLOBAL_ID_v1_14: u64 = 1u64 << 14;
/// Releases: 1.15+.
pub const UCT_MD_ATTR_FIELD_GLOBAL_ID: u64 = 1u64 << 15;
/// Releases: 1.16+.
pub const UCT_MD_ATTR_FIELD_REG_ALIGNMENT: u64 = 1u64 << 16;
/// Releases: 1.18+.
pub const UCT_MD_ATTR_FIELD_GVA_MEM_TYPES: u64 = 1u64 << 17;

/// Memory-domain attributes, filled by `uct_md_query_v2` (since 1.14). The
/// members a caller asks for are selected by `field_mask`.
/// Releases: 1.14+.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct uct_md_attr_v2_t {
    /// `UCT_MD_ATTR_FIELD_*` bits.
    pub field_mask: u64,
    pub max_alloc: u64,
    pub max_reg: usize,
    /// `UCT_MD_FLAG_*` bits (and `uct_md_flags_v2_t` from 1.15).
    pub flags: u64,
    pub reg_mem_types: u64,
    /// Memory types registered without blocking (since 1.15).
    /// Releases: 1.15+.
    pub reg_nonblock_mem_types: u64,
    pub cache_mem_types: u64,
    /// Memory types registered through the global virtual address space
    /// (since 1.18).
    /// Releases: 1.18+.
    pub gva_mem_types: u64,
    pub detect_mem_types: u64,
    pub alloc_mem_types: u64,
    pub access_mem_types: u64,
    pub dmabuf_mem_types: u64,
    pub reg_cost: ucs_linear_func_t,
    pub component_name: [c_char; UCT_COMPONENT_NAME_MAX],
    pub rkey_packed_size: usize,
    pub local_cpus: ucs_cpu_set_t,
    pub exported_mkey_packed_size: usize,
    /// Identifier of the MD that is the same in every process of the host.
    pub global_id: [c_char; UCT_MD_GLOBAL_ID_MAX],
    /// Alignment required for registered ranges (since 1.16).
    /// Releases: 1.16+.
    pub reg_alignment: usize,
}

/// Capability bits of `uct_md_attr_v2_t::flags` beyond `UCT_MD_FLAG_*`
/// (C enum, 4 bytes; the constants are u64 like the field, since 1.15).
/// Releases: 1.15+.
pub type uct_md_flags_v2_t = u32;
/// First bit of the v2-only flags.
/// Releases: 1.15+.
pub const UCT_MD_FLAG_V2_FIRST: u64 = UCT_MD_FLAG_LAST;
/// Remote memory accesses through a key can be invalidated.
/// Releases: 1.15+.
pub const UCT_MD_FLAG_INVALIDATE_RMA: u64 = UCT_MD_FLAG_V2_FIRST;
/// Remote atomic accesses through a key can be invalidated.
/// Releases: 1.15+.
pub const UCT_MD_FLAG_INVALIDATE_AMO: u64 = 1u64 << 12;
