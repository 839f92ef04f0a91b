//! Public structs, enumerations and flag values of `uct/api/uct.h`
//! (every served release; items only some have say so in a `Releases:`
//! line; the memory-domain part lives in `uct_md.rs`).
//!
//! Anonymous nested structs/unions of the C header get names built from the
//! enclosing typedef name plus the member path, with `_t` at the end:
//!
//! | C member path                         | Rust type                           |
//! |---------------------------------------|-------------------------------------|
//! | `uct_iface_attr_t::cap`               | `uct_iface_attr_cap_t`              |
//! | `uct_iface_attr_t::cap.put`           | `uct_iface_attr_cap_put_t`          |
//! | `uct_iface_attr_t::cap.get`           | `uct_iface_attr_cap_get_t`          |
//! | `uct_iface_attr_t::cap.am`            | `uct_iface_attr_cap_am_t`           |
//! | `uct_iface_attr_t::cap.tag`           | `uct_iface_attr_cap_tag_t`          |
//! | `uct_iface_attr_t::cap.tag.recv`      | `uct_iface_attr_cap_tag_recv_t`     |
//! | `uct_iface_attr_t::cap.tag.eager`     | `uct_iface_attr_cap_tag_eager_t`    |
//! | `uct_iface_attr_t::cap.tag.rndv`      | `uct_iface_attr_cap_tag_rndv_t`     |
//! | `uct_iface_attr_t::cap.atomic32/64`   | `uct_iface_attr_cap_atomic_t` (one type for both, as in C) |
//! | `uct_iface_params_t::mode` (union)    | `uct_iface_params_mode_t`           |
//! | `uct_iface_params_t::mode.device`     | `uct_iface_params_mode_device_t`    |
//! | `uct_iface_params_t::mode.sockaddr`   | `uct_iface_params_mode_sockaddr_t`  |
//! | `uct_md_attr_t::cap`                  | `uct_md_attr_cap_t`                 |
//! | `uct_mem_alloc_params_t::mds`         | `uct_mem_alloc_params_mds_t`        |
//!
//! The three function-pointer members of `uct_tag_context_t` are written
//! inline, as in C, so they have no type name of their own.

use super::uct_def::*;
use super::ucs::*;
use ::core::ffi::{c_char, c_int, c_uint, c_void};

// ---------------------------------------------------------------------------
// Components and resources
// ---------------------------------------------------------------------------

/// Name of one memory domain offered by a component.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct uct_md_resource_desc_t {
    pub md_name: [c_char; UCT_MD_NAME_MAX],
}
/// Alias for the C tag `struct uct_md_resource_desc`.
pub type uct_md_resource_desc = uct_md_resource_desc_t;

/// Valid-field bits of `uct_component_attr_t::field_mask`.
/// (C enum tag, 4 bytes; the constants are u64 like the field they fill.)
pub type uct_component_attr_field = u32;
pub const UCT_COMPONENT_ATTR_FIELD_NAME: u64 = 1u64 << 0;
pub const UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT: u64 = 1u64 << 1;
pub const UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES: u64 = 1u64 << 2;
pub const UCT_COMPONENT_ATTR_FIELD_FLAGS: u64 = 1u64 << 3;

/// Attributes of a component, filled by `uct_component_query`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct uct_component_attr_t {
    pub field_mask: u64,
    pub name: [c_char; UCT_COMPONENT_NAME_MAX],
    pub md_resource_count: c_uint,
    /// Caller-provided array of `md_resource_count` entries.
    pub md_resources: *mut uct_md_resource_desc_t,
    /// `UCT_COMPONENT_FLAG_*` bits.
    pub flags: u64,
}
/// Alias for the C tag `struct uct_component_attr`.
pub type uct_component_attr = uct_component_attr_t;

/// The component provides a connection manager.
pub const UCT_COMPONENT_FLAG_CM: u64 = 1u64 << 0;
/// The component's remote keys can be turned into local pointers with
/// `uct_rkey_ptr` (since 1.14).
/// Releases: 1.14+.
pub const UCT_COMPONENT_FLAG_RKEY_PTR: u64 = 1u64 << 1;

/// Class of a transport device (C enum, 4 bytes).
pub type uct_device_type_t = u32;
pub const UCT_DEVICE_TYPE_NET: uct_device_type_t = 0;
pub const UCT_DEVICE_TYPE_SHM: uct_device_type_t = 1;
pub const UCT_DEVICE_TYPE_ACC: uct_device_type_t = 2;
pub const UCT_DEVICE_TYPE_SELF: uct_device_type_t = 3;
pub const UCT_DEVICE_TYPE_LAST: uct_device_type_t = 4;

/// One transport/device pair available on a memory domain.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct uct_tl_resource_desc_t {
    pub tl_name: [c_char; UCT_TL_NAME_MAX],
    pub dev_name: [c_char; UCT_DEVICE_NAME_MAX],
    pub dev_type: uct_device_type_t,
    pub sys_device: ucs_sys_device_t,
}
/// Alias for the C tag `struct uct_tl_resource_desc`.
pub type uct_tl_resource_desc = uct_tl_resource_desc_t;

/// printf format that prints a resource as `tl_name/dev_name`; pair it with
/// the two name fields of a `uct_tl_resource_desc_t`.
/// cbindgen:ignore
pub const UCT_TL_RESOURCE_DESC_FMT: &::core::ffi::CStr = c"%s/%s";

// ---------------------------------------------------------------------------
// Atomics
// ---------------------------------------------------------------------------

/// Atomic operation selector (C enum, 4 bytes). The capability masks in
/// `uct_iface_attr_t::cap.atomic32/64` use bit `1 << op`.
pub type uct_atomic_op_t = u32;
/// Alias for the C tag `enum uct_atomic_op`.
pub type uct_atomic_op = uct_atomic_op_t;
pub const UCT_ATOMIC_OP_ADD: uct_atomic_op_t = 0;
pub const UCT_ATOMIC_OP_AND: uct_atomic_op_t = 1;
pub const UCT_ATOMIC_OP_OR: uct_atomic_op_t = 2;
pub const UCT_ATOMIC_OP_XOR: uct_atomic_op_t = 3;
pub const UCT_ATOMIC_OP_SWAP: uct_atomic_op_t = 4;
pub const UCT_ATOMIC_OP_CSWAP: uct_atomic_op_t = 5;
pub const UCT_ATOMIC_OP_LAST: uct_atomic_op_t = 6;

// ---------------------------------------------------------------------------
// Interface capability flags (uct_iface_attr_t::cap.flags, u64)
// ---------------------------------------------------------------------------

pub const UCT_IFACE_FLAG_AM_SHORT: u64 = 1u64 << 0;
pub const UCT_IFACE_FLAG_AM_BCOPY: u64 = 1u64 << 1;
pub const UCT_IFACE_FLAG_AM_ZCOPY: u64 = 1u64 << 2;
pub const UCT_IFACE_FLAG_PENDING: u64 = 1u64 << 3;
pub const UCT_IFACE_FLAG_PUT_SHORT: u64 = 1u64 << 4;
pub const UCT_IFACE_FLAG_PUT_BCOPY: u64 = 1u64 << 5;
pub const UCT_IFACE_FLAG_PUT_ZCOPY: u64 = 1u64 << 6;
pub const UCT_IFACE_FLAG_GET_SHORT: u64 = 1u64 << 8;
pub const UCT_IFACE_FLAG_GET_BCOPY: u64 = 1u64 << 9;
pub const UCT_IFACE_FLAG_GET_ZCOPY: u64 = 1u64 << 10;
pub const UCT_IFACE_FLAG_ATOMIC_CPU: u64 = 1u64 << 30;
pub const UCT_IFACE_FLAG_ATOMIC_DEVICE: u64 = 1u64 << 31;
pub const UCT_IFACE_FLAG_ERRHANDLE_SHORT_BUF: u64 = 1u64 << 32;
pub const UCT_IFACE_FLAG_ERRHANDLE_BCOPY_BUF: u64 = 1u64 << 33;
pub const UCT_IFACE_FLAG_ERRHANDLE_ZCOPY_BUF: u64 = 1u64 << 34;
pub const UCT_IFACE_FLAG_ERRHANDLE_AM_ID: u64 = 1u64 << 35;
pub const UCT_IFACE_FLAG_ERRHANDLE_REMOTE_MEM: u64 = 1u64 << 36;
pub const UCT_IFACE_FLAG_ERRHANDLE_BCOPY_LEN: u64 = 1u64 << 37;
pub const UCT_IFACE_FLAG_ERRHANDLE_PEER_FAILURE: u64 = 1u64 << 38;
pub const UCT_IFACE_FLAG_EP_CHECK: u64 = 1u64 << 39;
pub const UCT_IFACE_FLAG_CONNECT_TO_IFACE: u64 = 1u64 << 40;
pub const UCT_IFACE_FLAG_CONNECT_TO_EP: u64 = 1u64 << 41;
pub const UCT_IFACE_FLAG_CONNECT_TO_SOCKADDR: u64 = 1u64 << 42;
pub const UCT_IFACE_FLAG_AM_DUP: u64 = 1u64 << 43;
pub const UCT_IFACE_FLAG_CB_SYNC: u64 = 1u64 << 44;
pub const UCT_IFACE_FLAG_CB_ASYNC: u64 = 1u64 << 45;
pub const UCT_IFACE_FLAG_EP_KEEPALIVE: u64 = 1u64 << 46;
/// An active message is delivered only after the puts posted before it on
/// the same endpoint (since 1.22).
/// Releases: 1.22+.
pub const UCT_IFACE_FLAG_PUT_AM_ORDER: u64 = 1u64 << 47;
pub const UCT_IFACE_FLAG_TAG_EAGER_SHORT: u64 = 1u64 << 50;
pub const UCT_IFACE_FLAG_TAG_EAGER_BCOPY: u64 = 1u64 << 51;
pub const UCT_IFACE_FLAG_TAG_EAGER_ZCOPY: u64 = 1u64 << 52;
pub const UCT_IFACE_FLAG_TAG_RNDV_ZCOPY: u64 = 1u64 << 53;
/// The interface can reach peers on other hosts (since 1.18).
/// Releases: 1.18+.
pub const UCT_IFACE_FLAG_INTER_NODE: u64 = 1u64 << 54;
/// The interface has device endpoints (`uct_ep_get_device_ep`, since 1.20).
/// Releases: 1.20+.
pub const UCT_IFACE_FLAG_DEVICE_EP: u64 = 1u64 << 55;
/// Device operations need the local key of the memory (since 1.22).
/// Releases: 1.22+.
pub const UCT_IFACE_FLAG_DEVICE_LKEY: u64 = 1u64 << 56;

// Event capability flags (uct_iface_attr_t::cap.event_flags, u64).
pub const UCT_IFACE_FLAG_EVENT_SEND_COMP: u64 = 1u64 << 0;
pub const UCT_IFACE_FLAG_EVENT_RECV: u64 = 1u64 << 1;
pub const UCT_IFACE_FLAG_EVENT_RECV_SIG: u64 = 1u64 << 2;
pub const UCT_IFACE_FLAG_EVENT_FD: u64 = 1u64 << 3;
pub const UCT_IFACE_FLAG_EVENT_ASYNC_CB: u64 = 1u64 << 4;

// ---------------------------------------------------------------------------
// Memory allocation methods
// ---------------------------------------------------------------------------

/// How `uct_mem_alloc` may obtain memory (C enum, 4 bytes).
pub type uct_alloc_method_t = u32;
pub const UCT_ALLOC_METHOD_THP: uct_alloc_method_t = 0;
pub const UCT_ALLOC_METHOD_MD: uct_alloc_method_t = 1;
pub const UCT_ALLOC_METHOD_HEAP: uct_alloc_method_t = 2;
pub const UCT_ALLOC_METHOD_MMAP: uct_alloc_method_t = 3;
pub const UCT_ALLOC_METHOD_HUGE: uct_alloc_method_t = 4;
pub const UCT_ALLOC_METHOD_LAST: uct_alloc_method_t = 5;
/// Use the configured default list (same value as `LAST`).
pub const UCT_ALLOC_METHOD_DEFAULT: uct_alloc_method_t = UCT_ALLOC_METHOD_LAST;

// ---------------------------------------------------------------------------
// Small flag sets taken as `unsigned` arguments
// ---------------------------------------------------------------------------

/// Events accepted by `uct_iface_event_arm` (`unsigned events`).
pub type uct_iface_event_types = u32;
pub const UCT_EVENT_SEND_COMP: u32 = 1u32 << 0;
pub const UCT_EVENT_RECV: u32 = 1u32 << 1;
pub const UCT_EVENT_RECV_SIG: u32 = 1u32 << 2;
/// The link speed changed (since 1.21).
/// Releases: 1.21+.
pub const UCT_EVENT_SPEED_CHANGE: u32 = 1u32 << 3;

/// Flags of the flush operations (`unsigned flags`).
pub type uct_flush_flags = u32;
pub const UCT_FLUSH_FLAG_LOCAL: u32 = 0;
pub const UCT_FLUSH_FLAG_CANCEL: u32 = 1u32 << 0;
/// Complete only when earlier remote updates are visible to every
/// processing element of the target (since 1.14).
/// Releases: 1.14+.
pub const UCT_FLUSH_FLAG_REMOTE: u32 = 1u32 << 1;

/// Progress directions for `uct_iface_progress_enable/disable`.
pub type uct_progress_types = u32;
pub const UCT_PROGRESS_SEND: u32 = 1u32 << 0;
pub const UCT_PROGRESS_RECV: u32 = 1u32 << 1;
pub const UCT_PROGRESS_THREAD_SAFE: u32 = 1u32 << 7;

/// Flags of send operations (`unsigned flags`).
pub type uct_msg_flags = u32;
pub const UCT_SEND_FLAG_SIGNALED: u32 = 1u32 << 0;
pub const UCT_SEND_FLAG_PEER_CHECK: u32 = 1u32 << 1;

/// Callback-context flags (`uint32_t` members such as `err_handler_flags`,
/// `cb_flags`, `sockaddr_cb_flags`, and `uct_iface_set_am_handler` flags).
pub type uct_cb_flags = u32;
pub const UCT_CB_FLAG_RESERVED: u32 = 1u32 << 1;
pub const UCT_CB_FLAG_ASYNC: u32 = 1u32 << 2;

/// Bits of `uct_iface_params_t::open_mode` (u64).
/// (C enum tag, 4 bytes; the constants are u64 like the field they fill.)
pub type uct_iface_open_mode = u32;
pub const UCT_IFACE_OPEN_MODE_DEVICE: u64 = 1u64 << 0;
pub const UCT_IFACE_OPEN_MODE_SOCKADDR_SERVER: u64 = 1u64 << 1;
pub const UCT_IFACE_OPEN_MODE_SOCKADDR_CLIENT: u64 = 1u64 << 2;
/// Open a stub interface bound to no transport, whose operations answer
/// `mode.stub.status` (since 1.22).
/// Releases: 1.22+.
pub const UCT_IFACE_OPEN_MODE_STUB: u64 = 1u64 << 3;

/// Valid-field bits of `uct_iface_params_t::field_mask` (u64).
/// (C enum tag, 4 bytes; the constants are u64 like the field they fill.)
pub type uct_iface_params_field = u32;
pub const UCT_IFACE_PARAM_FIELD_CPU_MASK: u64 = 1u64 << 0;
pub const UCT_IFACE_PARAM_FIELD_OPEN_MODE: u64 = 1u64 << 1;
pub const UCT_IFACE_PARAM_FIELD_DEVICE: u64 = 1u64 << 2;
pub const UCT_IFACE_PARAM_FIELD_SOCKADDR: u64 = 1u64 << 3;
pub const UCT_IFACE_PARAM_FIELD_STATS_ROOT: u64 = 1u64 << 4;
pub const UCT_IFACE_PARAM_FIELD_RX_HEADROOM: u64 = 1u64 << 5;
pub const UCT_IFACE_PARAM_FIELD_ERR_HANDLER_ARG: u64 = 1u64 << 6;
pub const UCT_IFACE_PARAM_FIELD_ERR_HANDLER: u64 = 1u64 << 7;
pub const UCT_IFACE_PARAM_FIELD_ERR_HANDLER_FLAGS: u64 = 1u64 << 8;
pub const UCT_IFACE_PARAM_FIELD_HW_TM_EAGER_ARG: u64 = 1u64 << 9;
pub const UCT_IFACE_PARAM_FIELD_HW_TM_EAGER_CB: u64 = 1u64 << 10;
pub const UCT_IFACE_PARAM_FIELD_HW_TM_RNDV_ARG: u64 = 1u64 << 11;
pub const UCT_IFACE_PARAM_FIELD_HW_TM_RNDV_CB: u64 = 1u64 << 12;
pub const UCT_IFACE_PARAM_FIELD_ASYNC_EVENT_ARG: u64 = 1u64 << 13;
pub const UCT_IFACE_PARAM_FIELD_ASYNC_EVENT_CB: u64 = 1u64 << 14;
pub const UCT_IFACE_PARAM_FIELD_KEEPALIVE_INTERVAL: u64 = 1u64 << 15;
pub const UCT_IFACE_PARAM_FIELD_AM_ALIGNMENT: u64 = 1u64 << 16;
pub const UCT_IFACE_PARAM_FIELD_AM_ALIGN_OFFSET: u64 = 1u64 << 17;
pub const UCT_IFACE_PARAM_FIELD_FEATURES: u64 = 1u64 << 18;

/// Whether a socket address must be reachable locally or remotely (C enum).
pub type uct_sockaddr_accessibility_t = u32;
pub const UCT_SOCKADDR_ACC_LOCAL: uct_sockaddr_accessibility_t = 0;
pub const UCT_SOCKADDR_ACC_REMOTE: uct_sockaddr_accessibility_t = 1;

// ---------------------------------------------------------------------------
// Connection manager / listener / endpoint parameter bits
// ---------------------------------------------------------------------------

/// Valid-field bits of `uct_cm_attr_t::field_mask`.
/// (C enum tag, 4 bytes; the constants are u64 like the field they fill.)
pub type uct_cm_attr_field = u32;
pub const UCT_CM_ATTR_FIELD_MAX_CONN_PRIV: u64 = 1u64 << 0;

/// Valid-field bits of `uct_listener_attr_t::field_mask`.
/// (C enum tag, 4 bytes; the constants are u64 like the field they fill.)
pub type uct_listener_attr_field = u32;
pub const UCT_LISTENER_ATTR_FIELD_SOCKADDR: u64 = 1u64 << 0;

/// Valid-field bits of `uct_listener_params_t::field_mask`.
/// (C enum tag, 4 bytes; the constants are u64 like the field they fill.)
pub type uct_listener_params_field = u32;
pub const UCT_LISTENER_PARAM_FIELD_BACKLOG: u64 = 1u64 << 0;
pub const UCT_LISTENER_PARAM_FIELD_CONN_REQUEST_CB: u64 = 1u64 << 1;
pub const UCT_LISTENER_PARAM_FIELD_USER_DATA: u64 = 1u64 << 2;

/// Valid-field bits of `uct_ep_params_t::field_mask` (u64).
/// (C enum tag, 4 bytes; the constants are u64 like the field they fill.)
pub type uct_ep_params_field = u32;
pub const UCT_EP_PARAM_FIELD_IFACE: u64 = 1u64 << 0;
pub const UCT_EP_PARAM_FIELD_USER_DATA: u64 = 1u64 << 1;
pub const UCT_EP_PARAM_FIELD_DEV_ADDR: u64 = 1u64 << 2;
pub const UCT_EP_PARAM_FIELD_IFACE_ADDR: u64 = 1u64 << 3;
pub const UCT_EP_PARAM_FIELD_SOCKADDR: u64 = 1u64 << 4;
pub const UCT_EP_PARAM_FIELD_SOCKADDR_CB_FLAGS: u64 = 1u64 << 5;
pub const UCT_EP_PARAM_FIELD_SOCKADDR_PACK_CB: u64 = 1u64 << 6;
pub const UCT_EP_PARAM_FIELD_CM: u64 = 1u64 << 7;
pub const UCT_EP_PARAM_FIELD_CONN_REQUEST: u64 = 1u64 << 8;
pub const UCT_EP_PARAM_FIELD_SOCKADDR_CONNECT_CB_CLIENT: u64 = 1u64 << 9;
pub const UCT_EP_PARAM_FIELD_SOCKADDR_NOTIFY_CB_SERVER: u64 = 1u64 << 10;
pub const UCT_EP_PARAM_FIELD_SOCKADDR_DISCONNECT_CB: u64 = 1u64 << 11;
pub const UCT_EP_PARAM_FIELD_PATH_INDEX: u64 = 1u64 << 12;
pub const UCT_EP_PARAM_FIELD_CM_RESOLVE_CB: u64 = 1u64 << 13;
pub const UCT_EP_PARAM_FIELD_PRIV_DATA: u64 = 1u64 << 14;
pub const UCT_EP_PARAM_FIELD_PRIV_DATA_LENGTH: u64 = 1u64 << 15;
pub const UCT_EP_PARAM_FIELD_LOCAL_SOCKADDR: u64 = 1u64 << 16;
/// `uct_ep_params_t::dev_addr_length` is set (since 1.18).
/// Releases: 1.18+.
pub const UCT_EP_PARAM_FIELD_DEV_ADDR_LENGTH: u64 = 1u64 << 17;
/// `uct_ep_params_t::iface_addr_length` is set (since 1.18).
/// Releases: 1.18+.
pub const UCT_EP_PARAM_FIELD_IFACE_ADDR_LENGTH: u64 = 1u64 << 18;

/// Valid-field bits of `uct_ep_connect_params_t::field_mask`.
/// (C enum tag, 4 bytes; the constants are u64 like the field they fill.)
pub type uct_ep_connect_params_field = u32;
pub const UCT_EP_CONNECT_PARAM_FIELD_PRIVATE_DATA: u64 = 1u64 << 0;
pub const UCT_EP_CONNECT_PARAM_FIELD_PRIVATE_DATA_LENGTH: u64 = 1u64 << 1;

/// Bits of `uct_iface_params_t::features` (u64).
/// (C enum tag, 4 bytes; the constants are u64 like the field they fill.)
pub type uct_iface_feature = u32;
pub const UCT_IFACE_FEATURE_AM: u64 = 1u64 << 0;
pub const UCT_IFACE_FEATURE_PUT: u64 = 1u64 << 1;
pub const UCT_IFACE_FEATURE_GET: u64 = 1u64 << 2;
pub const UCT_IFACE_FEATURE_AMO32: u64 = 1u64 << 3;
pub const UCT_IFACE_FEATURE_AMO64: u64 = 1u64 << 4;
pub const UCT_IFACE_FEATURE_TAG: u64 = 1u64 << 5;
/// Flushes with `UCT_FLUSH_FLAG_REMOTE` (since 1.14).
/// Releases: 1.14+.
pub const UCT_IFACE_FEATURE_FLUSH_REMOTE: u64 = 1u64 << 6;
/// First bit past the known features in 1.13.
/// Releases: 1.13-1.13.
pub const UCT_IFACE_FEATURE_LAST_v1_13: u64 = 1u64 << 6;
/// First bit past the known features (moves up by one in 1.14).
/// Releases: 1.14+.
pub const UCT_IFACE_FEATURE_LAST: u64 = 1u64 << 7;

// ---------------------------------------------------------------------------
// Interface attributes
// ---------------------------------------------------------------------------

/// Bandwidth split into a per-process-dedicated part and a shared part.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct uct_ppn_bandwidth_t {
    /// Bytes/second each process gets for itself.
    pub dedicated: f64,
    /// Bytes/second shared among all processes on the node.
    pub shared: f64,
}
/// Alias for the C tag `struct uct_ppn_bandwidth`.
pub type uct_ppn_bandwidth = uct_ppn_bandwidth_t;

/// Limits of put operations (`uct_iface_attr_t::cap.put`).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct uct_iface_attr_cap_put_t {
    pub max_short: usize,
    pub max_bcopy: usize,
    pub min_zcopy: usize,
    pub max_zcopy: usize,
    pub opt_zcopy_align: usize,
    pub align_mtu: usize,
    pub max_iov: usize,
}

/// Limits of get operations (`uct_iface_attr_t::cap.get`).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct uct_iface_attr_cap_get_t {
    pub max_short: usize,
    pub max_bcopy: usize,
    pub min_zcopy: usize,
    pub max_zcopy: usize,
    pub opt_zcopy_align: usize,
    pub align_mtu: usize,
    pub max_iov: usize,
}

/// Limits of active messages (`uct_iface_attr_t::cap.am`).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct uct_iface_attr_cap_am_t {
    pub max_short: usize,
    pub max_bcopy: usize,
    pub min_zcopy: usize,
    pub max_zcopy: usize,
    pub opt_zcopy_align: usize,
    pub align_mtu: usize,
    pub max_hdr: usize,
    pub max_iov: usize,
}

/// Tag-matching receive limits (`uct_iface_attr_t::cap.tag.recv`).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct uct_iface_attr_cap_tag_recv_t {
    pub min_recv: usize,
    pub max_zcopy: usize,
    pub max_iov: usize,
    pub max_outstanding: usize,
}

/// Tag-matching eager-send limits (`uct_iface_attr_t::cap.tag.eager`).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct uct_iface_attr_cap_tag_eager_t {
    pub max_short: usize,
    pub max_bcopy: usize,
    pub max_zcopy: usize,
    pub max_iov: usize,
}

/// Tag-matching rendezvous limits (`uct_iface_attr_t::cap.tag.rndv`).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct uct_iface_attr_cap_tag_rndv_t {
    pub max_zcopy: usize,
    pub max_hdr: usize,
    pub max_iov: usize,
}

/// Tag-matching limits (`uct_iface_attr_t::cap.tag`).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct uct_iface_attr_cap_tag_t {
    pub recv: uct_iface_attr_cap_tag_recv_t,
    pub eager: uct_iface_attr_cap_tag_eager_t,
    pub rndv: uct_iface_attr_cap_tag_rndv_t,
}

/// Supported atomic operations, as `1 << UCT_ATOMIC_OP_*` masks
/// (`uct_iface_attr_t::cap.atomic32` and `cap.atomic64`).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct uct_iface_attr_cap_atomic_t {
    /// Operations without a result (post).
    pub op_flags: u64,
    /// Operations that fetch the old value.
    pub fop_flags: u64,
}

/// Capabilities of an interface (`uct_iface_attr_t::cap`).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct uct_iface_attr_cap_t {
    pub put: uct_iface_attr_cap_put_t,
    pub get: uct_iface_attr_cap_get_t,
    pub am: uct_iface_attr_cap_am_t,
    pub tag: uct_iface_attr_cap_tag_t,
    pub atomic32: uct_iface_attr_cap_atomic_t,
    pub atomic64: uct_iface_attr_cap_atomic_t,
    /// `UCT_IFACE_FLAG_*` bits.
    pub flags: u64,
    /// `UCT_IFACE_FLAG_EVENT_*` bits.
    pub event_flags: u64,
}

/// Interface attributes, filled by `uct_iface_query` (536 bytes).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct uct_iface_attr_t {
    pub cap: uct_iface_attr_cap_t,
    pub device_addr_len: usize,
    pub iface_addr_len: usize,
    pub ep_addr_len: usize,
    pub max_conn_priv: usize,
    pub listen_sockaddr: libc::sockaddr_storage,
    /// Host overhead of a send, in seconds.
    pub overhead: f64,
    pub bandwidth: uct_ppn_bandwidth_t,
    /// Latency in seconds as a function of the number of endpoints.
    pub latency: ucs_linear_func_t,
    /// Tie-breaker between otherwise equal devices (larger is better).
    pub priority: u8,
    pub max_num_eps: usize,
    pub dev_num_paths: c_uint,
    /// System device that controls the interface (since 1.22, in what was
    /// padding before; no field-mask bit guards it).
    /// Releases: 1.22+.
    pub ctl_device: ucs_sys_device_t,
}
/// Alias for the C tag `struct uct_iface_attr`.
pub type uct_iface_attr = uct_iface_attr_t;

// ---------------------------------------------------------------------------
// Interface open parameters
// ---------------------------------------------------------------------------

/// Device-mode selector (`uct_iface_params_t::mode.device`).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct uct_iface_params_mode_device_t {
    pub tl_name: *const c_char,
    pub dev_name: *const c_char,
}

/// Sockaddr-server-mode parameters (`uct_iface_params_t::mode.sockaddr`).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct uct_iface_params_mode_sockaddr_t {
    pub listen_sockaddr: ucs_sock_addr_t,
    pub conn_request_arg: *mut c_void,
    pub conn_request_cb: uct_sockaddr_conn_request_callback_t,
    /// `UCT_CB_FLAG_*` bits.
    pub cb_flags: u32,
}

/// Stub-mode parameters (`uct_iface_params_t::mode.stub`, since 1.22).
/// Releases: 1.22+.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct uct_iface_params_mode_stub_t {
    /// What the stub's operations return.
    pub status: ucs_status_t,
}

/// Mode-specific part of `uct_iface_params_t`, selected by `open_mode`.
#[repr(C)]
#[derive(Clone, Copy)]
pub union uct_iface_params_mode_t {
    pub device: uct_iface_params_mode_device_t,
    pub sockaddr: uct_iface_params_mode_sockaddr_t,
    /// Releases: 1.22+.
    pub stub: uct_iface_params_mode_stub_t,
}

/// Parameters of `uct_iface_open` (304 bytes). Only the members whose bit
/// is set in `field_mask` are meaningful.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct uct_iface_params_t {
    /// `UCT_IFACE_PARAM_FIELD_*` bits.
    pub field_mask: u64,
    pub cpu_mask: ucs_cpu_set_t,
    /// `UCT_IFACE_OPEN_MODE_*` bits.
    pub open_mode: u64,
    pub mode: uct_iface_params_mode_t,
    pub stats_root: *mut ucs_stats_node_t,
    /// Bytes the caller wants in front of received descriptor data.
    pub rx_headroom: usize,
    pub err_handler_arg: *mut c_void,
    pub err_handler: uct_error_handler_t,
    /// `UCT_CB_FLAG_*` bits.
    pub err_handler_flags: u32,
    pub eager_arg: *mut c_void,
    pub eager_cb: uct_tag_unexp_eager_cb_t,
    pub rndv_arg: *mut c_void,
    pub rndv_cb: uct_tag_unexp_rndv_cb_t,
    pub async_event_arg: *mut c_void,
    pub async_event_cb: uct_async_event_cb_t,
    pub keepalive_interval: ucs_time_t,
    pub am_alignment: usize,
    pub am_align_offset: usize,
    /// `UCT_IFACE_FEATURE_*` bits.
    pub features: u64,
}
/// Alias for the C tag `struct uct_iface_params`.
pub type uct_iface_params = uct_iface_params_t;

// ---------------------------------------------------------------------------
// Endpoint parameters
// ---------------------------------------------------------------------------

/// Parameters of `uct_ep_create` (144 bytes; 160 from 1.18, which appends
/// the two address lengths).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct uct_ep_params_t {
    /// `UCT_EP_PARAM_FIELD_*` bits.
    pub field_mask: u64,
    pub iface: uct_iface_h,
    pub user_data: *mut c_void,
    pub dev_addr: *const uct_device_addr_t,
    pub iface_addr: *const uct_iface_addr_t,
    pub sockaddr: *const ucs_sock_addr_t,
    /// `UCT_CB_FLAG_*` bits.
    pub sockaddr_cb_flags: u32,
    pub sockaddr_pack_cb: uct_cm_ep_priv_data_pack_callback_t,
    pub cm: uct_cm_h,
    pub conn_request: uct_conn_request_h,
    pub sockaddr_cb_client: uct_cm_ep_client_connect_callback_t,
    pub sockaddr_cb_server: uct_cm_ep_server_conn_notify_callback_t,
    pub disconnect_cb: uct_ep_disconnect_cb_t,
    pub path_index: c_uint,
    pub cm_resolve_cb: uct_cm_ep_resolve_callback_t,
    pub private_data: *const c_void,
    pub private_data_length: usize,
    pub local_sockaddr: *const ucs_sock_addr_t,
    /// Length of `dev_addr` (since 1.18).
    /// Releases: 1.18+.
    pub dev_addr_length: usize,
    /// Length of `iface_addr` (since 1.18).
    /// Releases: 1.18+.
    pub iface_addr_length: usize,
}
/// Alias for the C tag `struct uct_ep_params`.
pub type uct_ep_params = uct_ep_params_t;

/// Parameters of `uct_ep_connect`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct uct_ep_connect_params_t {
    pub field_mask: u64,
    pub private_data: *const c_void,
    pub private_data_length: usize,
}
/// Alias for the C tag `struct uct_ep_connect_params`.
pub type uct_ep_connect_params = uct_ep_connect_params_t;

// ---------------------------------------------------------------------------
// Connection manager and listener
// ---------------------------------------------------------------------------

/// Connection-manager attributes, filled by `uct_cm_query`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct uct_cm_attr_t {
    pub field_mask: u64,
    pub max_conn_priv: usize,
}
/// Alias for the C tag `struct uct_cm_attr`.
pub type uct_cm_attr = uct_cm_attr_t;

/// Listener attributes, filled by `uct_listener_query`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct uct_listener_attr_t {
    pub field_mask: u64,
    pub sockaddr: libc::sockaddr_storage,
}
/// Alias for the C tag `struct uct_listener_attr`.
pub type uct_listener_attr = uct_listener_attr_t;

/// Parameters of `uct_listener_create`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct uct_listener_params_t {
    pub field_mask: u64,
    pub backlog: c_int,
    pub conn_request_cb: uct_cm_listener_conn_request_callback_t,
    pub user_data: *mut c_void,
}
/// Alias for the C tag `struct uct_listener_params`.
pub type uct_listener_params = uct_listener_params_t;

// ---------------------------------------------------------------------------
// Completions and pending requests
// ---------------------------------------------------------------------------

/// Completion counter shared by one or more asynchronous operations.
///
/// Each finished operation records its status (the first error sticks) and
/// decrements `count`; when `count` reaches zero `func` (if any) is called.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct uct_completion_t {
    pub func: uct_completion_callback_t,
    pub count: c_int,
    /// Must be `UCS_OK` initially; holds the first failure afterwards.
    pub status: ucs_status_t,
}
/// Alias for the C tag `struct uct_completion`.
pub type uct_completion = uct_completion_t;

/// A request waiting for send resources (see `uct_ep_pending_add`).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct uct_pending_req_t {
    pub func: uct_pending_callback_t,
    /// Scratch space owned by the transport while the request is queued.
    pub r#priv: [c_char; UCT_PENDING_REQ_PRIV_LEN],
}
/// Alias for the C tag `struct uct_pending_req`.
pub type uct_pending_req = uct_pending_req_t;

/// Context of a posted tag-matching receive.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct uct_tag_context_t {
    /// The tag matched; data is about to arrive.
    pub tag_consumed_cb: Option<unsafe extern "C" fn(self_: *mut uct_tag_context_t)>,
    /// The matched message was received completely.
    pub completed_cb: Option<
        unsafe extern "C" fn(
            self_: *mut uct_tag_context_t,
            stag: uct_tag_t,
            imm: u64,
            length: usize,
            inline_data: *mut c_void,
            status: ucs_status_t,
        ),
    >,
    /// A rendezvous request matched the receive.
    pub rndv_cb: Option<
        unsafe extern "C" fn(
            self_: *mut uct_tag_context_t,
            stag: uct_tag_t,
            header: *const c_void,
            header_length: c_uint,
            status: ucs_status_t,
            flags: c_uint,
        ),
    >,
    /// Scratch space owned by the transport.
    pub r#priv: [c_char; UCT_TAG_PRIV_LEN],
}
/// Alias for the C tag `struct uct_tag_context`.
pub type uct_tag_context = uct_tag_context_t;

/// `completed_cb` received its data inline (`inline_data` is valid).
pub const UCT_TAG_RECV_CB_INLINE_DATA: u32 = 1u32 << 0;

// ---------------------------------------------------------------------------
// Memory allocation parameters
// ---------------------------------------------------------------------------

/// Valid-field bits of `uct_mem_alloc_params_t::field_mask`. The C enum type
/// is 4 bytes; the constants are typed u64 to match the mask.
pub type uct_mem_alloc_params_field_t = u32;
pub const UCT_MEM_ALLOC_PARAM_FIELD_FLAGS: u64 = 1u64 << 0;
pub const UCT_MEM_ALLOC_PARAM_FIELD_ADDRESS: u64 = 1u64 << 1;
pub const UCT_MEM_ALLOC_PARAM_FIELD_MEM_TYPE: u64 = 1u64 << 2;
pub const UCT_MEM_ALLOC_PARAM_FIELD_MDS: u64 = 1u64 << 3;
pub const UCT_MEM_ALLOC_PARAM_FIELD_NAME: u64 = 1u64 << 4;
/// `sys_device` is set (since 1.19).
/// Releases: 1.19+.
pub const UCT_MEM_ALLOC_PARAM_FIELD_SYS_DEVICE: u64 = 1u64 << 5;

/// Memory domains `uct_mem_alloc` may use (`uct_mem_alloc_params_t::mds`).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct uct_mem_alloc_params_mds_t {
    pub mds: *const uct_md_h,
    pub count: c_uint,
}

/// Parameters of `uct_mem_alloc`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct uct_mem_alloc_params_t {
    pub field_mask: u64,
    /// `UCT_MD_MEM_FLAG_*` / `UCT_MD_MEM_ACCESS_*` bits.
    pub flags: c_uint,
    /// Requested address (hint, or fixed with `UCT_MD_MEM_FLAG_FIXED`).
    pub address: *mut c_void,
    pub mem_type: ucs_memory_type_t,
    pub mds: uct_mem_alloc_params_mds_t,
    /// Name for debugging.
    pub name: *const c_char,
    /// Device the memory should be allocated on, or
    /// `UCS_SYS_DEVICE_ID_UNKNOWN` for any (since 1.19).
    /// Releases: 1.19+.
    pub sys_device: ucs_sys_device_t,
}
