//! Basic UCT definitions: limits, handles, small structs and the callback
//! signatures used throughout the API (mirror of `uct/api/uct_def.h`,
//! every served release; items only some have say so in a `Releases:`
//! line).

use super::tl::{uct_ep_t, uct_iface_t, uct_listener_t, uct_worker_t};
use super::uct::{uct_completion_t, uct_pending_req_t};
use super::ucs::{ucs_sock_addr_t, ucs_status_t};
use ::core::ffi::{c_char, c_int, c_uint, c_void};

// ---------------------------------------------------------------------------
// Limits
// ---------------------------------------------------------------------------

/// Size of a component name buffer (including the terminating NUL).
pub const UCT_COMPONENT_NAME_MAX: usize = 16;
/// Size of the buffer holding a memory domain's global identifier
/// (`uct_md_attr_v2_t::global_id`, since 1.14).
/// Releases: 1.14+.
pub const UCT_MD_GLOBAL_ID_MAX: usize = 256;
/// Size of a transport name buffer.
pub const UCT_TL_NAME_MAX: usize = 10;
/// Size of a memory-domain name buffer.
pub const UCT_MD_NAME_MAX: usize = 16;
/// Size of a device name buffer.
pub const UCT_DEVICE_NAME_MAX: usize = 32;
/// Bytes of `uct_pending_req_t::priv` reserved for the transport.
pub const UCT_PENDING_REQ_PRIV_LEN: usize = 40;
/// Bytes of `uct_tag_context_t::priv` reserved for the transport.
pub const UCT_TAG_PRIV_LEN: usize = 32;
/// Width of an active-message id in bits.
pub const UCT_AM_ID_BITS: u32 = 5;
/// Number of active-message ids (ids are `0 .. UCT_AM_ID_MAX`).
pub const UCT_AM_ID_MAX: usize = 1 << UCT_AM_ID_BITS;

/// "No memory handle".
pub const UCT_MEM_HANDLE_NULL: uct_mem_h = 0 as uct_mem_h;
/// Same as `UCT_MEM_HANDLE_NULL`. Not spelled out in the 1.13.1 headers;
/// provided for code written against later UCX releases.
pub const UCT_INVALID_MEM_HANDLE: uct_mem_h = 0 as uct_mem_h;
/// "No remote key" (all bits set).
pub const UCT_INVALID_RKEY: uct_rkey_t = -1isize as uct_rkey_t;
/// "No dma-buf file descriptor" (`uct_md_mem_attr_t::dmabuf_fd`, since
/// 1.14).
/// Releases: 1.14+.
pub const UCT_DMABUF_FD_INVALID: c_int = -1;

// ---------------------------------------------------------------------------
// Enumerations
// ---------------------------------------------------------------------------

/// What an active-message tracer is being told about (C enum, 4 bytes).
pub type uct_am_trace_type_t = u32;
/// Alias for the C tag `enum uct_am_trace_type`.
pub type uct_am_trace_type = uct_am_trace_type_t;
pub const UCT_AM_TRACE_TYPE_SEND: uct_am_trace_type_t = 0;
pub const UCT_AM_TRACE_TYPE_RECV: uct_am_trace_type_t = 1;
pub const UCT_AM_TRACE_TYPE_SEND_DROP: uct_am_trace_type_t = 2;
pub const UCT_AM_TRACE_TYPE_RECV_DROP: uct_am_trace_type_t = 3;
pub const UCT_AM_TRACE_TYPE_LAST: uct_am_trace_type_t = 4;

/// Flags passed to active-message and tag callbacks (`unsigned flags`).
pub type uct_cb_param_flags = u32;
/// `data` lives in a transport descriptor that the callback may keep by
/// returning `UCS_INPROGRESS`; it has `rx_headroom` writable bytes in front.
pub const UCT_CB_PARAM_FLAG_DESC: u32 = 1u32 << 0;
/// First fragment of a multi-fragment message.
pub const UCT_CB_PARAM_FLAG_FIRST: u32 = 1u32 << 1;
/// More fragments of the message follow.
pub const UCT_CB_PARAM_FLAG_MORE: u32 = 1u32 << 2;

// ---------------------------------------------------------------------------
// Opaque objects and handles
// ---------------------------------------------------------------------------

/// A transport component (opaque).
#[repr(C, align(8))]
pub struct uct_component {
    _private: [u8; 0],
}
/// Handle to a component.
pub type uct_component_h = *mut uct_component;

/// Interface configuration as returned by `uct_md_iface_config_read` (opaque).
#[repr(C, align(8))]
pub struct uct_iface_config {
    _private: [u8; 0],
}
/// C typedef name of `struct uct_iface_config`.
pub type uct_iface_config_t = uct_iface_config;

/// Memory-domain configuration (opaque).
#[repr(C, align(8))]
pub struct uct_md_config {
    _private: [u8; 0],
}
/// C typedef name of `struct uct_md_config`.
pub type uct_md_config_t = uct_md_config;

/// Connection-manager configuration (opaque).
#[repr(C, align(8))]
pub struct uct_cm_config {
    _private: [u8; 0],
}
/// C typedef name of `struct uct_cm_config`.
pub type uct_cm_config_t = uct_cm_config;

/// A memory domain (opaque).
#[repr(C, align(8))]
pub struct uct_md {
    _private: [u8; 0],
}
/// C typedef name of `struct uct_md`.
pub type uct_md_t = uct_md;
/// Handle to a memory domain.
pub type uct_md_h = *mut uct_md;

/// Memory-domain operation table (opaque in the public API).
#[repr(C, align(8))]
pub struct uct_md_ops {
    _private: [u8; 0],
}
/// C typedef name of `struct uct_md_ops`.
pub type uct_md_ops_t = uct_md_ops;

/// Packed device address (opaque bytes of `device_addr_len`).
#[repr(C, align(8))]
pub struct uct_device_addr {
    _private: [u8; 0],
}
/// C typedef name of `struct uct_device_addr`.
pub type uct_device_addr_t = uct_device_addr;

/// Packed interface address (opaque bytes of `iface_addr_len`).
#[repr(C, align(8))]
pub struct uct_iface_addr {
    _private: [u8; 0],
}
/// C typedef name of `struct uct_iface_addr`.
pub type uct_iface_addr_t = uct_iface_addr;

/// Packed endpoint address (opaque bytes of `ep_addr_len`).
#[repr(C, align(8))]
pub struct uct_ep_addr {
    _private: [u8; 0],
}
/// C typedef name of `struct uct_ep_addr`.
pub type uct_ep_addr_t = uct_ep_addr;

/// A connection manager (opaque).
#[repr(C, align(8))]
pub struct uct_cm {
    _private: [u8; 0],
}
/// C typedef name of `struct uct_cm`.
pub type uct_cm_t = uct_cm;
/// Handle to a connection manager.
pub type uct_cm_h = *mut uct_cm;

/// Handle to an interface (points at a struct that starts with the ops table).
pub type uct_iface_h = *mut uct_iface_t;
/// Handle to an endpoint (points at a struct that starts with its iface).
pub type uct_ep_h = *mut uct_ep_t;
/// Handle to a worker (points at a struct that starts with a callback queue).
pub type uct_worker_h = *mut uct_worker_t;
/// Handle to a listener (points at a struct that starts with its CM).
pub type uct_listener_h = *mut uct_listener_t;
/// Handle to registered or allocated memory.
pub type uct_mem_h = *mut c_void;
/// Unpacked remote key (transport-defined word).
pub type uct_rkey_t = usize;
/// Remote-key context handle.
pub type uct_rkey_ctx_h = *mut c_void;
/// Tag of a tag-matching message.
pub type uct_tag_t = u64;
/// Id of a callback registered with `uct_worker_progress_register_safe`.
pub type uct_worker_cb_id_t = c_int;
/// Incoming connection request handle.
pub type uct_conn_request_h = *mut c_void;

// ---------------------------------------------------------------------------
// I/O vector
// ---------------------------------------------------------------------------

/// One element of a scatter/gather list.
///
/// The element describes `count` blocks of `length` bytes each, the blocks
/// starting `stride` bytes apart, beginning at `buffer`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct uct_iov_t {
    pub buffer: *mut c_void,
    pub length: usize,
    /// Memory handle of `buffer`, or `UCT_MEM_HANDLE_NULL`.
    pub memh: uct_mem_h,
    pub stride: usize,
    pub count: c_uint,
}
/// Alias for the C tag `struct uct_iov`.
pub type uct_iov = uct_iov_t;

// ---------------------------------------------------------------------------
// Connection-manager argument structs
// ---------------------------------------------------------------------------

/// Valid-field bits of `uct_cm_ep_priv_data_pack_args_t::field_mask`.
/// (C enum tag, 4 bytes; the constants are u64 like the field they fill.)
pub type uct_cm_ep_priv_data_pack_args_field = u32;
pub const UCT_CM_EP_PRIV_DATA_PACK_ARGS_FIELD_DEVICE_NAME: u64 = 1u64 << 0;

/// Valid-field bits of `uct_cm_ep_resolve_args_t::field_mask`.
/// (C enum tag, 4 bytes; the constants are u64 like the field they fill.)
pub type uct_cm_ep_resolve_args_field = u32;
pub const UCT_CM_EP_RESOLVE_ARGS_FIELD_DEV_NAME: u64 = 1u64 << 0;
pub const UCT_CM_EP_RESOLVE_ARGS_FIELD_STATUS: u64 = 1u64 << 1;

/// Arguments of `uct_cm_ep_priv_data_pack_callback_t`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct uct_cm_ep_priv_data_pack_args_t {
    pub field_mask: u64,
    /// Name of the device the connection will go through.
    pub dev_name: [c_char; UCT_DEVICE_NAME_MAX],
}
/// Alias for the C tag `struct uct_cm_ep_priv_data_pack_args`.
pub type uct_cm_ep_priv_data_pack_args = uct_cm_ep_priv_data_pack_args_t;

/// Arguments of `uct_cm_ep_resolve_callback_t`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct uct_cm_ep_resolve_args_t {
    pub field_mask: u64,
    pub dev_name: [c_char; UCT_DEVICE_NAME_MAX],
    pub status: ucs_status_t,
}
/// Alias for the C tag `struct uct_cm_ep_resolve_args`.
pub type uct_cm_ep_resolve_args = uct_cm_ep_resolve_args_t;

/// Valid-field bits of `uct_cm_remote_data_t::field_mask`.
/// (C enum tag, 4 bytes; the constants are u64 like the field they fill.)
pub type uct_cm_remote_data_field = u32;
pub const UCT_CM_REMOTE_DATA_FIELD_DEV_ADDR: u64 = 1u64 << 0;
pub const UCT_CM_REMOTE_DATA_FIELD_DEV_ADDR_LENGTH: u64 = 1u64 << 1;
pub const UCT_CM_REMOTE_DATA_FIELD_CONN_PRIV_DATA: u64 = 1u64 << 2;
pub const UCT_CM_REMOTE_DATA_FIELD_CONN_PRIV_DATA_LENGTH: u64 = 1u64 << 3;

/// What the remote side sent during connection establishment.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct uct_cm_remote_data_t {
    pub field_mask: u64,
    pub dev_addr: *const uct_device_addr_t,
    pub dev_addr_length: usize,
    pub conn_priv_data: *const c_void,
    pub conn_priv_data_length: usize,
}
/// Alias for the C tag `struct uct_cm_remote_data`.
pub type uct_cm_remote_data = uct_cm_remote_data_t;

/// Valid-field bits of `uct_cm_listener_conn_request_args_t::field_mask`.
/// (C enum tag, 4 bytes; the constants are u64 like the field they fill.)
pub type uct_cm_listener_conn_request_args_field = u32;
pub const UCT_CM_LISTENER_CONN_REQUEST_ARGS_FIELD_DEV_NAME: u64 = 1u64 << 0;
pub const UCT_CM_LISTENER_CONN_REQUEST_ARGS_FIELD_CONN_REQUEST: u64 = 1u64 << 1;
pub const UCT_CM_LISTENER_CONN_REQUEST_ARGS_FIELD_REMOTE_DATA: u64 = 1u64 << 2;
pub const UCT_CM_LISTENER_CONN_REQUEST_ARGS_FIELD_CLIENT_ADDR: u64 = 1u64 << 3;

/// Arguments of `uct_cm_listener_conn_request_callback_t`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct uct_cm_listener_conn_request_args_t {
    pub field_mask: u64,
    pub dev_name: [c_char; UCT_DEVICE_NAME_MAX],
    pub conn_request: uct_conn_request_h,
    pub remote_data: *const uct_cm_remote_data_t,
    pub client_address: ucs_sock_addr_t,
}
/// Alias for the C tag `struct uct_cm_listener_conn_request_args`.
pub type uct_cm_listener_conn_request_args = uct_cm_listener_conn_request_args_t;

/// Valid-field bits of `uct_cm_ep_client_connect_args_t::field_mask`.
/// (C enum tag, 4 bytes; the constants are u64 like the field they fill.)
pub type uct_cm_ep_client_connect_args_field = u32;
pub const UCT_CM_EP_CLIENT_CONNECT_ARGS_FIELD_REMOTE_DATA: u64 = 1u64 << 0;
pub const UCT_CM_EP_CLIENT_CONNECT_ARGS_FIELD_STATUS: u64 = 1u64 << 1;

/// Arguments of `uct_cm_ep_client_connect_callback_t`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct uct_cm_ep_client_connect_args_t {
    pub field_mask: u64,
    pub remote_data: *const uct_cm_remote_data_t,
    pub status: ucs_status_t,
}
/// Alias for the C tag `struct uct_cm_ep_client_connect_args`.
pub type uct_cm_ep_client_connect_args = uct_cm_ep_client_connect_args_t;

/// Valid-field bits of `uct_cm_ep_server_conn_notify_args_t::field_mask`.
/// (C enum tag, 4 bytes; the constants are u64 like the field they fill.)
pub type uct_cm_ep_server_conn_notify_args_field = u32;
pub const UCT_CM_EP_SERVER_CONN_NOTIFY_ARGS_FIELD_STATUS: u64 = 1u64 << 0;

/// Arguments of `uct_cm_ep_server_conn_notify_callback_t`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct uct_cm_ep_server_conn_notify_args_t {
    pub field_mask: u64,
    pub status: ucs_status_t,
}
/// Alias for the C tag `struct uct_cm_ep_server_conn_notify_args`.
pub type uct_cm_ep_server_conn_notify_args = uct_cm_ep_server_conn_notify_args_t;

// ---------------------------------------------------------------------------
// Callback signatures
// ---------------------------------------------------------------------------

/// Active-message handler. May return `UCS_INPROGRESS` only when `flags`
/// contains `UCT_CB_PARAM_FLAG_DESC` (then it owns the descriptor).
pub type uct_am_callback_t = Option<
    unsafe extern "C" fn(arg: *mut c_void, data: *mut c_void, length: usize, flags: c_uint) -> ucs_status_t,
>;

/// Active-message tracer: formats a description of a message into `buffer`.
pub type uct_am_tracer_t = Option<
    unsafe extern "C" fn(
        arg: *mut c_void,
        r#type: uct_am_trace_type_t,
        id: u8,
        data: *const c_void,
        length: usize,
        buffer: *mut c_char,
        max: usize,
    ),
>;

/// Called when a completion's counter drops to zero. In 1.13.1 the status is
/// not an argument: it is stored in `uct_completion_t::status`.
pub type uct_completion_callback_t = Option<unsafe extern "C" fn(self_: *mut uct_completion_t)>;

/// Retry callback of a pending request: `UCS_OK` removes the request,
/// `UCS_INPROGRESS` keeps it and continues, any other value keeps it and
/// stops processing the endpoint's queue.
pub type uct_pending_callback_t =
    Option<unsafe extern "C" fn(self_: *mut uct_pending_req_t) -> ucs_status_t>;

/// Error handler of an interface, called for failed endpoints.
pub type uct_error_handler_t =
    Option<unsafe extern "C" fn(arg: *mut c_void, ep: uct_ep_h, status: ucs_status_t) -> ucs_status_t>;

/// Called for each request removed by `uct_ep_pending_purge`.
pub type uct_pending_purge_callback_t =
    Option<unsafe extern "C" fn(self_: *mut uct_pending_req_t, arg: *mut c_void)>;

/// Copies the payload to `dest` for bcopy operations; returns bytes written.
pub type uct_pack_callback_t = Option<unsafe extern "C" fn(dest: *mut c_void, arg: *mut c_void) -> usize>;

/// Consumes `length` bytes of fetched data for get-bcopy.
pub type uct_unpack_callback_t =
    Option<unsafe extern "C" fn(arg: *mut c_void, data: *const c_void, length: usize)>;

/// Incoming connection request on a sockaddr-mode interface.
pub type uct_sockaddr_conn_request_callback_t = Option<
    unsafe extern "C" fn(
        iface: uct_iface_h,
        arg: *mut c_void,
        conn_request: uct_conn_request_h,
        conn_priv_data: *const c_void,
        length: usize,
    ),
>;

/// Incoming connection request on a CM listener.
pub type uct_cm_listener_conn_request_callback_t = Option<
    unsafe extern "C" fn(
        listener: uct_listener_h,
        arg: *mut c_void,
        conn_req_args: *const uct_cm_listener_conn_request_args_t,
    ),
>;

/// Server side: the client acknowledged the connection.
pub type uct_cm_ep_server_conn_notify_callback_t = Option<
    unsafe extern "C" fn(
        ep: uct_ep_h,
        arg: *mut c_void,
        connect_args: *const uct_cm_ep_server_conn_notify_args_t,
    ),
>;

/// Client side: the server answered the connection request.
pub type uct_cm_ep_client_connect_callback_t = Option<
    unsafe extern "C" fn(
        ep: uct_ep_h,
        arg: *mut c_void,
        connect_args: *const uct_cm_ep_client_connect_args_t,
    ),
>;

/// The remote side disconnected a CM endpoint.
pub type uct_ep_disconnect_cb_t = Option<unsafe extern "C" fn(ep: uct_ep_h, arg: *mut c_void)>;

/// Fills the private data sent with a connection request or reply; returns
/// its length or a negative status.
pub type uct_cm_ep_priv_data_pack_callback_t = Option<
    unsafe extern "C" fn(
        arg: *mut c_void,
        pack_args: *const uct_cm_ep_priv_data_pack_args_t,
        priv_data: *mut c_void,
    ) -> isize,
>;

/// Client side: the remote address was resolved to a local device.
pub type uct_cm_ep_resolve_callback_t = Option<
    unsafe extern "C" fn(user_data: *mut c_void, resolve_args: *const uct_cm_ep_resolve_args_t) -> ucs_status_t,
>;

/// Unexpected eager tagged message (hardware tag matching).
pub type uct_tag_unexp_eager_cb_t = Option<
    unsafe extern "C" fn(
        arg: *mut c_void,
        data: *mut c_void,
        length: usize,
        flags: c_uint,
        stag: uct_tag_t,
        imm: u64,
        context: *mut *mut c_void,
    ) -> ucs_status_t,
>;

/// Unexpected rendezvous request (hardware tag matching).
pub type uct_tag_unexp_rndv_cb_t = Option<
    unsafe extern "C" fn(
        arg: *mut c_void,
        flags: c_uint,
        stag: u64,
        header: *const c_void,
        header_length: c_uint,
        remote_addr: u64,
        length: usize,
        rkey_buf: *const c_void,
    ) -> ucs_status_t,
>;

/// Asynchronous event notification of an interface.
pub type uct_async_event_cb_t = Option<unsafe extern "C" fn(arg: *mut c_void, flags: c_uint)>;
