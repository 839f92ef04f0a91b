//! Definitions of `uct/api/v2/uct_v2.h` of every served release (items
//! only some releases have say so in a `Releases:` line). Neither
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
/// `path_bandwidth` is requested (since 1.19; the bits after it moved up
/// by one then).
/// Releases: 1.19+.
pub const UCT_PERF_ATTR_FIELD_PATH_BANDWIDTH: u64 = 1u64 << 9;
/// Releases: 1.13-1.18.
pub const UCT_PERF_ATTR_FIELD_LATENCY_v1_13: u64 = 1u64 << 9;
/// Releases: 1.19+.
pub const UCT_PERF_ATTR_FIELD_LATENCY: u64 = 1u64 << 10;
/// Releases: 1.13-1.18.
pub const UCT_PERF_ATTR_FIELD_MAX_INFLIGHT_EPS_v1_13: u64 = 1u64 << 10;
/// Releases: 1.19+.
pub const UCT_PERF_ATTR_FIELD_MAX_INFLIGHT_EPS: u64 = 1u64 << 11;
/// `flags` is requested (1.17 and 1.18: bit 11).
/// Releases: 1.17-1.18.
pub const UCT_PERF_ATTR_FIELD_FLAGS_v1_17: u64 = 1u64 << 11;
/// `flags` is requested (bit 12 from 1.19).
/// Releases: 1.19+.
pub const UCT_PERF_ATTR_FIELD_FLAGS: u64 = 1u64 << 12;

/// Bits of `uct_perf_attr_t::flags` (C enum, 4 bytes; the constants are
/// u64 like the field, since 1.17).
/// Releases: 1.17+.
pub type uct_perf_attr_flags_t = u32;
/// Sends and receives share one resource, so their costs add up.
/// Releases: 1.17+.
pub const UCT_PERF_ATTR_FLAGS_TX_RX_SHARED: u64 = 1u64 << 0;

/// In/out argument of `uct_iface_estimate_perf` (112 bytes, the layout
/// since 1.19, which inserted `path_bandwidth` after `bandwidth`; older
/// releases: `uct_perf_attr_t_v1_13`). The first members select the
/// scenario, the rest receive the estimate.
/// Releases: 1.19+.
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
    /// Bandwidth of the whole path to the peer, which may be below the
    /// interface's own.
    pub path_bandwidth: uct_ppn_bandwidth_t,
    pub latency: ucs_linear_func_t,
    pub max_inflight_eps: usize,
    /// `UCT_PERF_ATTR_FLAGS_*` bits.
    pub flags: u64,
}

/// `uct_perf_attr_t` as 1.13-1.18 lay it out (88 bytes; 96 from 1.17,
/// which appends `flags`), with the field-mask bits `_v1_13`/`_v1_17`.
/// Releases: 1.13-1.18.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct uct_perf_attr_t_v1_13 {
    pub field_mask: u64,
    pub operation: uct_ep_operation_t,
    pub local_memory_type: ucs_memory_type_t,
    pub remote_memory_type: ucs_memory_type_t,
    pub local_sys_device: ucs_sys_device_t,
    pub remote_sys_device: ucs_sys_device_t,
    pub send_pre_overhead: f64,
    pub send_post_overhead: f64,
    pub recv_overhead: f64,
    pub bandwidth: uct_ppn_bandwidth_t,
    pub latency: ucs_linear_func_t,
    pub max_inflight_eps: usize,
    /// `UCT_PERF_ATTR_FLAGS_*` bits (since 1.17).
    /// Releases: 1.17+.
    pub flags: u64,
}

/// Field-mask bits that 1.19 renumbered: (1.13-1.18 bit, newest bit).
const PERF_ATTR_MOVED_BITS: [(u64, u64); 3] = [
    (UCT_PERF_ATTR_FIELD_LATENCY_v1_13, UCT_PERF_ATTR_FIELD_LATENCY),
    (UCT_PERF_ATTR_FIELD_MAX_INFLIGHT_EPS_v1_13, UCT_PERF_ATTR_FIELD_MAX_INFLIGHT_EPS),
    (UCT_PERF_ATTR_FIELD_FLAGS_v1_17, UCT_PERF_ATTR_FIELD_FLAGS),
];
/// Field-mask bits numbered alike in every release.
const PERF_ATTR_SAME_BITS: u64 = UCT_PERF_ATTR_FIELD_PATH_BANDWIDTH - 1;

impl uct_perf_attr_t_v1_13 {
    /// The same request in the newest layout and bit numbering.
    pub fn to_newest(&self) -> uct_perf_attr_t {
        let mut mask = self.field_mask & PERF_ATTR_SAME_BITS;
        for (old, new) in PERF_ATTR_MOVED_BITS {
            if self.field_mask & old != 0 {
                mask |= new;
            }
        }
        uct_perf_attr_t {
            field_mask: mask,
            operation: self.operation,
            local_memory_type: self.local_memory_type,
            remote_memory_type: self.remote_memory_type,
            local_sys_device: self.local_sys_device,
            remote_sys_device: self.remote_sys_device,
            send_pre_overhead: self.send_pre_overhead,
            send_post_overhead: self.send_post_overhead,
            recv_overhead: self.recv_overhead,
            bandwidth: self.bandwidth,
            path_bandwidth: uct_ppn_bandwidth_t { dedicated: 0.0, shared: 0.0 },
            latency: self.latency,
            max_inflight_eps: self.max_inflight_eps,
            flags: self.flags,
        }
    }

    /// Take the members of `new` (the newest layout) that this layout has;
    /// the field mask is left as it is.
    pub fn update_from(&mut self, new: &uct_perf_attr_t) {
        self.operation = new.operation;
        self.local_memory_type = new.local_memory_type;
        self.remote_memory_type = new.remote_memory_type;
        self.local_sys_device = new.local_sys_device;
        self.remote_sys_device = new.remote_sys_device;
        self.send_pre_overhead = new.send_pre_overhead;
        self.send_post_overhead = new.send_post_overhead;
        self.recv_overhead = new.recv_overhead;
        self.bandwidth = new.bandwidth;
        self.latency = new.latency;
        self.max_inflight_eps = new.max_inflight_eps;
        self.flags = new.flags;
    }
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
/// `mem_type` is set (since 1.22).
/// Releases: 1.22+.
pub const UCT_MD_MEM_REG_FIELD_MEM_TYPE: u64 = 1u64 << 3;

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
/// `mkey_size` is set (since 1.19).
/// Releases: 1.19+.
pub const UCT_MD_MEM_ATTACH_FIELD_MKEY_SIZE: u64 = 1u64 << 1;

/// Valid-field bits of `uct_ep_attr_t::field_mask`.
/// (C enum tag, 4 bytes; the constants are u64 like the field they fill.)
pub type uct_ep_attr_field = u32;
pub const UCT_EP_ATTR_FIELD_LOCAL_SOCKADDR: u64 = 1u64 << 0;
pub const UCT_EP_ATTR_FIELD_REMOTE_SOCKADDR: u64 = 1u64 << 1;
/// `tx_token` is requested (since 1.22).
/// Releases: 1.22+.
pub const UCT_EP_ATTR_FIELD_TX_TOKEN: u64 = 1u64 << 2;
/// `rx_token` is requested (since 1.22).
/// Releases: 1.22+.
pub const UCT_EP_ATTR_FIELD_RX_TOKEN: u64 = 1u64 << 3;

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

/// Endpoint attributes, filled by `uct_ep_query` (264 bytes; 280 from
/// 1.22, which appends the token buffers).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct uct_ep_attr_t {
    pub field_mask: u64,
    pub local_address: libc::sockaddr_storage,
    pub remote_address: libc::sockaddr_storage,
    /// Caller's buffer (`uct_iface_attr_v2_t::tx_token_length` bytes) that
    /// receives the endpoint's send-side token (since 1.22).
    /// Releases: 1.22+.
    pub tx_token: *mut c_void,
    /// Caller's buffer (`uct_iface_attr_v2_t::rx_token_length` bytes) that
    /// receives the endpoint's receive-side token (since 1.22).
    /// Releases: 1.22+.
    pub rx_token: *mut c_void,
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
    /// Memory type of the range, when the caller knows it (since 1.22).
    /// Releases: 1.22+.
    pub mem_type: ucs_memory_type_t,
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
    /// Length of the exported key being attached (since 1.19).
    /// Releases: 1.19+.
    pub mkey_size: usize,
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
/// Releases: 1.22+.
pub const UCT_MD_ATTR_FIELD_REQUIRED_MEM_FLAGS: u64 = 1u64 << 18;

/// Memory-domain attributes, filled by `uct_md_query_v2`, in the layout
/// since 1.18 (which inserted `gva_mem_types`; 1.22 appends
/// `required_mem_flags`). Older layouts: `uct_md_attr_v2_t_v1_14`,
/// `uct_md_attr_v2_t_v1_15`. The members a caller asks for are selected by
/// `field_mask`.
/// Releases: 1.18+.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct uct_md_attr_v2_t {
    /// `UCT_MD_ATTR_FIELD_*` bits.
    pub field_mask: u64,
    pub max_alloc: u64,
    pub max_reg: usize,
    /// `UCT_MD_FLAG_*` bits and `uct_md_flags_v2_t` bits.
    pub flags: u64,
    pub reg_mem_types: u64,
    /// Memory types registered without blocking.
    pub reg_nonblock_mem_types: u64,
    pub cache_mem_types: u64,
    /// Memory types registered through the global virtual address space.
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
    /// Alignment required for registered ranges.
    pub reg_alignment: usize,
    /// `ucs_mem_flags_t` bits a range must have to be registered here
    /// (since 1.22).
    /// Releases: 1.22+.
    pub required_mem_flags: u8,
}

/// `uct_md_attr_v2_t` as 1.15-1.17 lay it out (520 bytes; 528 from 1.16,
/// which appends `reg_alignment`): no `gva_mem_types`.
/// Releases: 1.15-1.17.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct uct_md_attr_v2_t_v1_15 {
    pub field_mask: u64,
    pub max_alloc: u64,
    pub max_reg: usize,
    pub flags: u64,
    pub reg_mem_types: u64,
    pub reg_nonblock_mem_types: u64,
    pub cache_mem_types: u64,
    pub detect_mem_types: u64,
    pub alloc_mem_types: u64,
    pub access_mem_types: u64,
    pub dmabuf_mem_types: u64,
    pub reg_cost: ucs_linear_func_t,
    pub component_name: [c_char; UCT_COMPONENT_NAME_MAX],
    pub rkey_packed_size: usize,
    pub local_cpus: ucs_cpu_set_t,
    pub exported_mkey_packed_size: usize,
    pub global_id: [c_char; UCT_MD_GLOBAL_ID_MAX],
    /// Alignment required for registered ranges (since 1.16).
    /// Releases: 1.16+.
    pub reg_alignment: usize,
}

/// `uct_md_attr_v2_t` as 1.14 lays it out (512 bytes): neither
/// `reg_nonblock_mem_types` nor `gva_mem_types`, field bits `_v1_14`.
/// Releases: 1.14-1.14.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct uct_md_attr_v2_t_v1_14 {
    pub field_mask: u64,
    pub max_alloc: u64,
    pub max_reg: usize,
    pub flags: u64,
    pub reg_mem_types: u64,
    pub cache_mem_types: u64,
    pub detect_mem_types: u64,
    pub alloc_mem_types: u64,
    pub access_mem_types: u64,
    pub dmabuf_mem_types: u64,
    pub reg_cost: ucs_linear_func_t,
    pub component_name: [c_char; UCT_COMPONENT_NAME_MAX],
    pub rkey_packed_size: usize,
    pub local_cpus: ucs_cpu_set_t,
    pub exported_mkey_packed_size: usize,
    pub global_id: [c_char; UCT_MD_GLOBAL_ID_MAX],
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

/// Memory can be copied by the MD between memory types (since 1.19).
/// Releases: 1.19+.
pub const UCT_MD_FLAG_MEMTYPE_COPY: u64 = 1u64 << 13;

/// Parameters of `uct_ep_invalidate` (no optional members yet, since 1.21;
/// earlier releases take `unsigned flags` instead).
/// Releases: 1.21+.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct uct_ep_invalidate_params_t {
    pub field_mask: u64,
}

/// Valid-field bits of `uct_rkey_unpack_params_t::field_mask` (constants
/// typed u64 to match the mask, since 1.19).
/// Releases: 1.19+.
pub type uct_rkey_unpack_field_mask_t = u32;
/// `sys_device` is set.
/// Releases: 1.19+.
pub const UCT_RKEY_UNPACK_FIELD_SYS_DEVICE: u64 = 1u64 << 0;

/// Parameters of `uct_rkey_unpack_v2` (since 1.19).
/// Releases: 1.19+.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct uct_rkey_unpack_params_t {
    pub field_mask: u64,
    /// Device that will access the remote memory through the key.
    pub sys_device: ucs_sys_device_t,
}
/// Alias for the C tag `struct uct_rkey_unpack_params`.
/// Releases: 1.19+.
pub type uct_rkey_unpack_params = uct_rkey_unpack_params_t;

/// Valid-field bits of `uct_md_mem_attr_v2_t::field_mask` (C enum, 4 bytes;
/// the constants are u64 like the mask, since 1.22).
/// Releases: 1.22+.
pub type uct_md_mem_attr_v2_field_t = u32;
/// Releases: 1.22+.
pub const UCT_MD_MEM_ATTR_V2_FIELD_MEM_TYPE: u64 = 1u64 << 0;
/// Releases: 1.22+.
pub const UCT_MD_MEM_ATTR_V2_FIELD_SYS_DEV: u64 = 1u64 << 1;
/// Releases: 1.22+.
pub const UCT_MD_MEM_ATTR_V2_FIELD_BASE_ADDRESS: u64 = 1u64 << 2;
/// Releases: 1.22+.
pub const UCT_MD_MEM_ATTR_V2_FIELD_ALLOC_LENGTH: u64 = 1u64 << 3;
/// Releases: 1.22+.
pub const UCT_MD_MEM_ATTR_V2_FIELD_DMABUF_FD: u64 = 1u64 << 4;
/// Releases: 1.22+.
pub const UCT_MD_MEM_ATTR_V2_FIELD_DMABUF_OFFSET: u64 = 1u64 << 5;
/// Releases: 1.22+.
pub const UCT_MD_MEM_ATTR_V2_FIELD_MEM_FLAGS: u64 = 1u64 << 6;

/// Attributes of a memory range, filled by `uct_md_mem_query_v2` (since
/// 1.22): `uct_md_mem_attr_t`'s members plus per-range memory flags.
/// Releases: 1.22+.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct uct_md_mem_attr_v2_t {
    /// `UCT_MD_MEM_ATTR_V2_FIELD_*` bits.
    pub field_mask: u64,
    pub mem_type: ucs_memory_type_t,
    pub sys_dev: ucs_sys_device_t,
    /// Start of the allocation holding the queried range.
    pub base_address: *mut c_void,
    /// Length of that allocation.
    pub alloc_length: usize,
    /// dma-buf of the range, or `UCT_DMABUF_FD_INVALID`.
    pub dmabuf_fd: c_int,
    pub dmabuf_offset: usize,
    /// `ucs_mem_flags_t` bits of the range.
    pub mem_flags: u8,
}
/// Alias for the C tag `struct uct_md_mem_attr_v2`.
/// Releases: 1.22+.
pub type uct_md_mem_attr_v2 = uct_md_mem_attr_v2_t;

/// Valid-field bits of `uct_iface_attr_v2_t::field_mask` (C enum tag
/// `uct_iface_attr_field`, 4 bytes; the constants are u64 like the mask).
/// 1.20 and 1.22 give bit 0 unrelated meanings; 1.21 has no such struct
/// (nor any of these bits).
/// Releases: 1.20+.
pub type uct_iface_attr_field = u32;
/// `device_mem_element_size` is requested (1.20 only).
/// Releases: 1.20-1.20.
pub const UCT_IFACE_ATTR_FIELD_DEVICE_MEM_ELEMENT_SIZE: u64 = 1u64 << 0;
/// Releases: 1.22+.
pub const UCT_IFACE_ATTR_FIELD_MAX_PUT_SGL_ZCOPY_COUNT: u64 = 1u64 << 0;
/// Releases: 1.22+.
pub const UCT_IFACE_ATTR_FIELD_CAP_FLAGS: u64 = 1u64 << 1;
/// Releases: 1.22+.
pub const UCT_IFACE_ATTR_FIELD_TX_TOKEN_LENGTH: u64 = 1u64 << 2;
/// Releases: 1.22+.
pub const UCT_IFACE_ATTR_FIELD_RX_TOKEN_LENGTH: u64 = 1u64 << 3;
/// Releases: 1.22+.
pub const UCT_IFACE_ATTR_FIELD_TX_TOKEN: u64 = 1u64 << 4;
/// Releases: 1.22+.
pub const UCT_IFACE_ATTR_FIELD_RX_TOKEN: u64 = 1u64 << 5;

// Bits of `uct_iface_attr_v2_t::cap.flags` (u64, since 1.22).
/// The interface puts a scatter-gather list with zero copy.
/// Releases: 1.22+.
pub const UCT_IFACE_FLAG_V2_PUT_SGL_ZCOPY: u64 = 1u64 << 0;
/// The interface answers token queries.
/// Releases: 1.22+.
pub const UCT_IFACE_FLAG_V2_QUERY_TOKEN: u64 = 1u64 << 1;

/// Capabilities part of `uct_iface_attr_v2_t` (`cap`, since 1.22).
/// Releases: 1.22+.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct uct_iface_attr_v2_cap_t {
    /// `UCT_IFACE_FLAG_V2_*` bits.
    pub flags: u64,
}

/// More interface attributes, filled by `uct_iface_query_v2` (the 1.22
/// layout, 56 bytes; 1.20's unrelated one is `uct_iface_attr_v2_t_v1_20`).
/// Releases: 1.22+.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct uct_iface_attr_v2_t {
    /// `UCT_IFACE_ATTR_FIELD_*` bits.
    pub field_mask: u64,
    /// Most entries a scatter-gather zero-copy put takes.
    pub max_put_sgl_zcopy_count: usize,
    pub cap: uct_iface_attr_v2_cap_t,
    /// Length of an endpoint's send-side token.
    pub tx_token_length: usize,
    /// Length of an endpoint's receive-side token.
    pub rx_token_length: usize,
    /// The interface's send-side token.
    pub tx_token: *const c_void,
    /// Caller's buffer that receives the interface's receive-side token.
    pub rx_token: *mut c_void,
}

/// `uct_iface_attr_v2_t` as 1.20 lays it out (16 bytes).
/// Releases: 1.20-1.20.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct uct_iface_attr_v2_t_v1_20 {
    /// `UCT_IFACE_ATTR_FIELD_DEVICE_MEM_ELEMENT_SIZE`.
    pub field_mask: u64,
    /// Size of the memory element a device needs for this interface.
    pub device_mem_element_size: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perf_attr_bits_follow_the_1_19_renumbering() {
        let old = uct_perf_attr_t_v1_13 {
            field_mask: UCT_PERF_ATTR_FIELD_BANDWIDTH
                | UCT_PERF_ATTR_FIELD_LATENCY_v1_13
                | UCT_PERF_ATTR_FIELD_MAX_INFLIGHT_EPS_v1_13
                | UCT_PERF_ATTR_FIELD_FLAGS_v1_17,
            ..Default::default()
        };
        let mut new = old.to_newest();
        assert_eq!(
            new.field_mask,
            UCT_PERF_ATTR_FIELD_BANDWIDTH
                | UCT_PERF_ATTR_FIELD_LATENCY
                | UCT_PERF_ATTR_FIELD_MAX_INFLIGHT_EPS
                | UCT_PERF_ATTR_FIELD_FLAGS
        );
        new.max_inflight_eps = 7;
        new.flags = UCT_PERF_ATTR_FLAGS_TX_RX_SHARED;
        let mut back = old;
        back.update_from(&new);
        assert_eq!(back.field_mask, old.field_mask);
        assert_eq!(back.max_inflight_eps, 7);
        assert_eq!(back.flags, UCT_PERF_ATTR_FLAGS_TX_RX_SHARED);
    }
}
