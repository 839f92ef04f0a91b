//! Definitions of `uct/api/device/uct_device_types.h` and the device
//! handles of `uct_def.h` (since 1.20): what a GPU-side caller needs to
//! address a transport's endpoint and memory from device code. The host
//! library only hands these out (`uct_ep_get_device_ep`, the memory
//! element pack calls); their contents belong to the transport.
//!
//! The memory-element types changed shape twice: 1.20 declares an empty
//! `uct_device_mem_element_t`, 1.21 makes it a union and adds list
//! elements, and 1.22 renames the union `uct_device_mem_elem_t` and
//! replaces the list elements by elements with a trailing per-transport
//! array.

use ::core::ffi::c_void;

/// Which device transport an endpoint belongs to (C enum, 4 bytes, since
/// 1.20; for the library's own use).
/// Releases: 1.20+.
pub type uct_device_tl_id_t = u32;
/// Releases: 1.20+.
pub const UCT_DEVICE_TL_RC_MLX5_GDA: uct_device_tl_id_t = 0;
/// Releases: 1.20+.
pub const UCT_DEVICE_TL_CUDA_IPC: uct_device_tl_id_t = 1;
/// Device-to-peer transport (since 1.22).
/// Releases: 1.22+.
pub const UCT_DEVICE_TL_D2P: uct_device_tl_id_t = 2;
/// Number of device transports in 1.20-1.21.
/// Releases: 1.20-1.21.
pub const UCT_DEVICE_TL_LAST_v1_20: uct_device_tl_id_t = 2;
/// Number of device transports (`D2P` joined in 1.22).
/// Releases: 1.22+.
pub const UCT_DEVICE_TL_LAST: uct_device_tl_id_t = 3;

/// Flags of device operations (C enum, 4 bytes, since 1.20).
/// Releases: 1.20+.
pub type uct_device_flags_t = u32;
/// The operation completes before it returns.
/// Releases: 1.20+.
pub const UCT_DEVICE_FLAG_NODELAY: uct_device_flags_t = 1 << 0;

/// Head of every device endpoint: the transport it belongs to (since 1.20).
/// Releases: 1.20+.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct uct_device_ep_t {
    /// A `uct_device_tl_id_t` value.
    pub uct_tl_id: u8,
}
/// Alias for the C tag `struct uct_device_ep`.
/// Releases: 1.20+.
pub type uct_device_ep = uct_device_ep_t;
/// Handle of a device endpoint (since 1.20).
/// Releases: 1.20+.
pub type uct_device_ep_h = *mut uct_device_ep_t;

/// What the CUDA IPC transport keeps about a memory range for device code
/// (since 1.21).
/// Releases: 1.21+.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct uct_cuda_ipc_md_device_mem_element_t {
    /// Distance from the local address to the peer's mapping.
    pub mapped_offset: isize,
}

/// What the IB transport keeps about a memory range for device code (since
/// 1.21).
/// Releases: 1.21+.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct uct_ib_md_device_mem_element_t {
    pub lkey: u32,
    pub rkey: u32,
}
/// Alias for the C tag `struct uct_ib_md_device_mem_element`.
/// Releases: 1.21+.
pub type uct_ib_md_device_mem_element = uct_ib_md_device_mem_element_t;

/// A transport's memory element for device code, in the transport's own
/// form (named `uct_device_mem_elem_t` since 1.22; 1.21:
/// `uct_device_mem_element_t`, the same 8 bytes).
/// Releases: 1.22+.
#[repr(C)]
#[derive(Clone, Copy)]
pub union uct_device_mem_elem_t {
    pub ib_md_mem_element: uct_ib_md_device_mem_element_t,
    pub cuda_ipc_md_mem_element: uct_cuda_ipc_md_device_mem_element_t,
}
/// Alias for the C tag `union uct_device_mem_elem`.
/// Releases: 1.22+.
pub type uct_device_mem_elem = uct_device_mem_elem_t;

/// A transport's memory element for device code, as 1.21 names it (the
/// union renamed `uct_device_mem_elem_t` in 1.22).
/// Releases: 1.21-1.21.
#[repr(C)]
#[derive(Clone, Copy)]
pub union uct_device_mem_element_t {
    pub ib_md_mem_element: uct_ib_md_device_mem_element_t,
    pub cuda_ipc_md_mem_element: uct_cuda_ipc_md_device_mem_element_t,
}
/// Alias for the C tag `union uct_device_mem_element`.
/// Releases: 1.21-1.21.
pub type uct_device_mem_element = uct_device_mem_element_t;

/// 1.20's memory element for device code: an empty struct that only
/// appears behind pointers.
/// Releases: 1.20-1.20.
#[repr(C, align(8))]
pub struct uct_device_mem_element_t_v1_20 {
    _private: [u8; 0],
}

/// A local memory range and its memory element (1.21).
/// Releases: 1.21-1.21.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct uct_device_local_mem_list_elem_t {
    pub addr: *mut c_void,
    pub uct_mem_element: uct_device_mem_element_t,
}
/// Alias for the C tag `struct uct_device_local_mem_list_elem`.
/// Releases: 1.21-1.21.
pub type uct_device_local_mem_list_elem = uct_device_local_mem_list_elem_t;

/// A remote memory range, the device endpoint that reaches it and its
/// memory element (1.21).
/// Releases: 1.21-1.21.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct uct_device_remote_mem_list_elem_t {
    pub device_ep: uct_device_ep_h,
    pub addr: u64,
    pub uct_mem_element: uct_device_mem_element_t,
}
/// Alias for the C tag `struct uct_device_remote_mem_list_elem`.
/// Releases: 1.21-1.21.
pub type uct_device_remote_mem_list_elem = uct_device_remote_mem_list_elem_t;

/// A local memory range followed by one memory element per transport
/// (since 1.22; the elements follow the 8-byte head).
/// Releases: 1.22+.
#[repr(C)]
pub struct uct_device_local_mem_elem_t {
    pub addr: *mut c_void,
    pub tl: [uct_device_mem_elem_t; 0],
}
/// Alias for the C tag `struct uct_device_local_mem_elem`.
/// Releases: 1.22+.
pub type uct_device_local_mem_elem = uct_device_local_mem_elem_t;

/// One transport's way to a remote memory range: its device endpoint and
/// memory element (since 1.22).
/// Releases: 1.22+.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct uct_device_remote_tl_elem_t {
    pub ep: uct_device_ep_h,
    pub uct: uct_device_mem_elem_t,
}
/// Alias for the C tag `struct uct_device_remote_tl_elem`.
/// Releases: 1.22+.
pub type uct_device_remote_tl_elem = uct_device_remote_tl_elem_t;

/// A remote memory range followed by one `uct_device_remote_tl_elem_t` per
/// transport (since 1.22; the elements follow the 8-byte head).
/// Releases: 1.22+.
#[repr(C)]
pub struct uct_device_remote_mem_elem_t {
    pub addr: u64,
    pub tl: [uct_device_remote_tl_elem_t; 0],
}
/// Alias for the C tag `struct uct_device_remote_mem_elem`.
/// Releases: 1.22+.
pub type uct_device_remote_mem_elem = uct_device_remote_mem_elem_t;
