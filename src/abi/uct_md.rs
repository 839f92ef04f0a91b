//! Memory-domain part of `uct/api/uct.h`: capability and registration
//! flags, `uct_md_attr_t`, `uct_md_mem_attr_t`, allocated memory and remote
//! key bundles (every served release). Kept apart from `uct.rs` only for
//! size; the C header
//! has them in one file.

use super::ucs::*;
use super::uct_def::*;
use super::uct::uct_alloc_method_t;
use ::core::ffi::c_int;
use ::core::ffi::{c_char, c_void};

// ---------------------------------------------------------------------------
// Memory-domain capability and registration flags
// ---------------------------------------------------------------------------

// Bits of `uct_md_attr_t::cap.flags` (u64).
pub const UCT_MD_FLAG_ALLOC: u64 = 1u64 << 0;
pub const UCT_MD_FLAG_REG: u64 = 1u64 << 1;
pub const UCT_MD_FLAG_NEED_MEMH: u64 = 1u64 << 2;
pub const UCT_MD_FLAG_NEED_RKEY: u64 = 1u64 << 3;
pub const UCT_MD_FLAG_ADVISE: u64 = 1u64 << 4;
pub const UCT_MD_FLAG_FIXED: u64 = 1u64 << 5;
pub const UCT_MD_FLAG_RKEY_PTR: u64 = 1u64 << 6;
pub const UCT_MD_FLAG_SOCKADDR: u64 = 1u64 << 7;
pub const UCT_MD_FLAG_INVALIDATE: u64 = 1u64 << 8;
/// The MD can export memory keys that another process attaches to (since
/// 1.14).
/// Releases: 1.14+.
pub const UCT_MD_FLAG_EXPORTED_MKEY: u64 = 1u64 << 9;
/// The MD registers dma-buf file descriptors (since 1.14).
/// Releases: 1.14+.
pub const UCT_MD_FLAG_REG_DMABUF: u64 = 1u64 << 10;
/// First bit not used by the flags above; `uct_md_flags_v2_t` continues
/// from here (since 1.15).
/// Releases: 1.15+.
pub const UCT_MD_FLAG_LAST: u64 = 1u64 << 11;

/// Flags of memory registration/allocation (`unsigned flags`).
pub type uct_md_mem_flags = u32;
pub const UCT_MD_MEM_FLAG_NONBLOCK: u32 = 1u32 << 0;
pub const UCT_MD_MEM_FLAG_FIXED: u32 = 1u32 << 1;
pub const UCT_MD_MEM_FLAG_LOCK: u32 = 1u32 << 2;
pub const UCT_MD_MEM_FLAG_HIDE_ERRORS: u32 = 1u32 << 3;
pub const UCT_MD_MEM_ACCESS_REMOTE_PUT: u32 = 1u32 << 5;
pub const UCT_MD_MEM_ACCESS_REMOTE_GET: u32 = 1u32 << 6;
pub const UCT_MD_MEM_ACCESS_REMOTE_ATOMIC: u32 = 1u32 << 7;
pub const UCT_MD_MEM_ACCESS_LOCAL_READ: u32 = 1u32 << 8;
pub const UCT_MD_MEM_ACCESS_LOCAL_WRITE: u32 = 1u32 << 9;
/// Ask for a remote key that is the same in every process (since 1.16).
/// Releases: 1.16+.
pub const UCT_MD_MEM_SYMMETRIC_RKEY: u32 = 1u32 << 10;
/// Register through the global virtual address space (since 1.18).
/// Releases: 1.18+.
pub const UCT_MD_MEM_GVA: u32 = 1u32 << 11;
/// Every access kind.
pub const UCT_MD_MEM_ACCESS_ALL: u32 = UCT_MD_MEM_ACCESS_REMOTE_PUT
    | UCT_MD_MEM_ACCESS_REMOTE_GET
    | UCT_MD_MEM_ACCESS_REMOTE_ATOMIC
    | UCT_MD_MEM_ACCESS_LOCAL_READ
    | UCT_MD_MEM_ACCESS_LOCAL_WRITE;
/// Remote put/get plus local read/write (no atomics).
pub const UCT_MD_MEM_ACCESS_RMA: u32 = UCT_MD_MEM_ACCESS_REMOTE_PUT
    | UCT_MD_MEM_ACCESS_REMOTE_GET
    | UCT_MD_MEM_ACCESS_LOCAL_READ
    | UCT_MD_MEM_ACCESS_LOCAL_WRITE;

/// Advice for `uct_md_mem_advise` (C enum, 4 bytes).
pub type uct_mem_advice_t = u32;
pub const UCT_MADV_NORMAL: uct_mem_advice_t = 0;
pub const UCT_MADV_WILLNEED: uct_mem_advice_t = 1;

// ---------------------------------------------------------------------------
// Memory-domain attributes
// ---------------------------------------------------------------------------

/// Capabilities of a memory domain (`uct_md_attr_t::cap`).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct uct_md_attr_cap_t {
    pub max_alloc: u64,
    pub max_reg: usize,
    /// `UCT_MD_FLAG_*` bits.
    pub flags: u64,
    /// Bit masks indexed by `ucs_memory_type_t`.
    pub reg_mem_types: u64,
    pub detect_mem_types: u64,
    pub alloc_mem_types: u64,
    pub access_mem_types: u64,
}

/// Memory-domain attributes, filled by `uct_md_query` (224 bytes).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct uct_md_attr_t {
    pub cap: uct_md_attr_cap_t,
    pub reg_cost: ucs_linear_func_t,
    pub component_name: [c_char; UCT_COMPONENT_NAME_MAX],
    pub rkey_packed_size: usize,
    pub local_cpus: ucs_cpu_set_t,
}
/// Alias for the C tag `struct uct_md_attr`.
pub type uct_md_attr = uct_md_attr_t;

/// Valid-field bits of `uct_md_mem_attr_t::field_mask`. The C enum type is
/// 4 bytes; the constants are typed u64 to match the mask they go into.
pub type uct_md_mem_attr_field_t = u32;
/// Alias for the C tag `enum uct_md_mem_attr_field`.
pub type uct_md_mem_attr_field = uct_md_mem_attr_field_t;
pub const UCT_MD_MEM_ATTR_FIELD_MEM_TYPE: u64 = 1u64 << 0;
pub const UCT_MD_MEM_ATTR_FIELD_SYS_DEV: u64 = 1u64 << 1;
pub const UCT_MD_MEM_ATTR_FIELD_BASE_ADDRESS: u64 = 1u64 << 2;
pub const UCT_MD_MEM_ATTR_FIELD_ALLOC_LENGTH: u64 = 1u64 << 3;
/// Ask for `dmabuf_fd` (since 1.14).
/// Releases: 1.14+.
pub const UCT_MD_MEM_ATTR_FIELD_DMABUF_FD: u64 = 1u64 << 4;
/// Ask for `dmabuf_offset` (since 1.14).
/// Releases: 1.14+.
pub const UCT_MD_MEM_ATTR_FIELD_DMABUF_OFFSET: u64 = 1u64 << 5;

/// Result of `uct_md_mem_query` (32 bytes; 48 from 1.14, which appends
/// the dma-buf members).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct uct_md_mem_attr_t {
    pub field_mask: u64,
    pub mem_type: ucs_memory_type_t,
    pub sys_dev: ucs_sys_device_t,
    pub base_address: *mut c_void,
    pub alloc_length: usize,
    /// A dma-buf file descriptor for the range, to be closed by the
    /// caller, or `UCT_DMABUF_FD_INVALID` (since 1.14).
    /// Releases: 1.14+.
    pub dmabuf_fd: c_int,
    /// Offset of the queried address inside that dma-buf (since 1.14).
    /// Releases: 1.14+.
    pub dmabuf_offset: usize,
}
/// Alias for the C tag `struct uct_md_mem_attr`.
pub type uct_md_mem_attr = uct_md_mem_attr_t;

/// Description of memory obtained with `uct_mem_alloc` /
/// `uct_iface_mem_alloc`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct uct_allocated_memory_t {
    pub address: *mut c_void,
    pub length: usize,
    pub method: uct_alloc_method_t,
    pub mem_type: ucs_memory_type_t,
    /// MD that allocated the memory (method `UCT_ALLOC_METHOD_MD`).
    pub md: uct_md_h,
    pub memh: uct_mem_h,
    /// Device the memory was allocated on (since 1.19; no field mask: a
    /// caller of an older release has no room for it).
    /// Releases: 1.19+.
    pub sys_device: ucs_sys_device_t,
}
/// Alias for the C tag `struct uct_allocated_memory`.
pub type uct_allocated_memory = uct_allocated_memory_t;

/// Unpacked remote key: the key itself plus private handles for release.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct uct_rkey_bundle_t {
    pub rkey: uct_rkey_t,
    pub handle: *mut c_void,
    pub r#type: *mut c_void,
}
/// Alias for the C tag `struct uct_rkey_bundle`.
pub type uct_rkey_bundle = uct_rkey_bundle_t;

