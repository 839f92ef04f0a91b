//! libucs types that the UCT public API embeds or passes around, and those
//! our library fills for libucs, in every served release's layout.
//!
//! libucs (`libucs.so.0`) stays installed next to our libuct, so these
//! definitions have to agree byte-for-byte with the `ucs/...` headers of
//! the release the process runs. Only the pieces that UCT's headers (and
//! our use of the libucs config parser) need are mirrored here.

use super::release::Release;
use ::core::ffi::{c_char, c_int, c_uint, c_ulong, c_void};

// ---------------------------------------------------------------------------
// Status codes (ucs/type/status.h)
// ---------------------------------------------------------------------------

/// Completion / error code of nearly every UCX call.
///
/// In C this is a *packed* enum, so it occupies exactly one byte, both as a
/// return value and as a struct member.
pub type ucs_status_t = i8;

/// The operation finished successfully.
pub const UCS_OK: ucs_status_t = 0;
/// The operation was started and will finish later.
pub const UCS_INPROGRESS: ucs_status_t = 1;
/// Nothing to receive.
pub const UCS_ERR_NO_MESSAGE: ucs_status_t = -1;
/// Out of transmit resources right now; retry later (or use pending).
pub const UCS_ERR_NO_RESOURCE: ucs_status_t = -2;
/// Input/output failure.
pub const UCS_ERR_IO_ERROR: ucs_status_t = -3;
/// Memory could not be allocated.
pub const UCS_ERR_NO_MEMORY: ucs_status_t = -4;
/// An argument was not acceptable.
pub const UCS_ERR_INVALID_PARAM: ucs_status_t = -5;
/// The destination cannot be reached.
pub const UCS_ERR_UNREACHABLE: ucs_status_t = -6;
/// The given address is malformed.
pub const UCS_ERR_INVALID_ADDR: ucs_status_t = -7;
/// The feature exists in the API but has no implementation here.
pub const UCS_ERR_NOT_IMPLEMENTED: ucs_status_t = -8;
/// Received data did not fit in the buffer.
pub const UCS_ERR_MESSAGE_TRUNCATED: ucs_status_t = -9;
/// No progress was made.
pub const UCS_ERR_NO_PROGRESS: ucs_status_t = -10;
/// The output buffer is too small.
pub const UCS_ERR_BUFFER_TOO_SMALL: ucs_status_t = -11;
/// The requested element does not exist.
pub const UCS_ERR_NO_ELEM: ucs_status_t = -12;
/// Part of a group of connections failed.
pub const UCS_ERR_SOME_CONNECTS_FAILED: ucs_status_t = -13;
/// No such device.
pub const UCS_ERR_NO_DEVICE: ucs_status_t = -14;
/// The resource is busy.
pub const UCS_ERR_BUSY: ucs_status_t = -15;
/// The request was cancelled.
pub const UCS_ERR_CANCELED: ucs_status_t = -16;
/// A shared-memory segment operation failed.
pub const UCS_ERR_SHMEM_SEGMENT: ucs_status_t = -17;
/// The element is already present.
pub const UCS_ERR_ALREADY_EXISTS: ucs_status_t = -18;
/// A value is outside the allowed range.
pub const UCS_ERR_OUT_OF_RANGE: ucs_status_t = -19;
/// A timeout expired.
pub const UCS_ERR_TIMED_OUT: ucs_status_t = -20;
/// A configured limit was exceeded.
pub const UCS_ERR_EXCEEDS_LIMIT: ucs_status_t = -21;
/// The requested operation is not supported.
pub const UCS_ERR_UNSUPPORTED: ucs_status_t = -22;
/// The peer refused the request.
pub const UCS_ERR_REJECTED: ucs_status_t = -23;
/// The endpoint is not connected.
pub const UCS_ERR_NOT_CONNECTED: ucs_status_t = -24;
/// The connection was reset by the peer.
pub const UCS_ERR_CONNECTION_RESET: ucs_status_t = -25;
/// First (highest) code of the "link failure" range.
pub const UCS_ERR_FIRST_LINK_FAILURE: ucs_status_t = -40;
/// Last (lowest) code of the "link failure" range.
pub const UCS_ERR_LAST_LINK_FAILURE: ucs_status_t = -59;
/// First (highest) code of the "endpoint failure" range.
pub const UCS_ERR_FIRST_ENDPOINT_FAILURE: ucs_status_t = -60;
/// Endpoint failed because of a timeout (inside the endpoint-failure range).
pub const UCS_ERR_ENDPOINT_TIMEOUT: ucs_status_t = -80;
/// Last (lowest) code of the "endpoint failure" range.
pub const UCS_ERR_LAST_ENDPOINT_FAILURE: ucs_status_t = -89;
/// Lower bound of all status codes.
pub const UCS_ERR_LAST: ucs_status_t = -100;

/// A pointer that either addresses a request object or encodes a
/// `ucs_status_t` (small negative integers cast to a pointer).
pub type ucs_status_ptr_t = *mut c_void;

/// True when `code` lies in the link-failure range.
#[inline]
pub const fn UCS_IS_LINK_ERROR(code: ucs_status_t) -> bool {
    code <= UCS_ERR_FIRST_LINK_FAILURE && code >= UCS_ERR_LAST_LINK_FAILURE
}

/// True when `code` lies in the endpoint-failure range.
#[inline]
pub const fn UCS_IS_ENDPOINT_ERROR(code: ucs_status_t) -> bool {
    code <= UCS_ERR_FIRST_ENDPOINT_FAILURE && code >= UCS_ERR_LAST_ENDPOINT_FAILURE
}

/// True when `status` is an error (negative).
#[inline]
pub const fn UCS_STATUS_IS_ERR(status: ucs_status_t) -> bool {
    status < 0
}

/// Encode a status code as a `ucs_status_ptr_t`.
#[inline]
pub fn UCS_STATUS_PTR(status: ucs_status_t) -> ucs_status_ptr_t {
    status as isize as ucs_status_ptr_t
}

/// True when `ptr` encodes an error status rather than a real pointer.
#[inline]
pub fn UCS_PTR_IS_ERR(ptr: ucs_status_ptr_t) -> bool {
    (ptr as usize) >= (UCS_ERR_LAST as isize as usize)
}

/// True when `ptr` is a real (non-null, non-status) pointer.
#[inline]
pub fn UCS_PTR_IS_PTR(ptr: ucs_status_ptr_t) -> bool {
    (ptr as usize).wrapping_sub(1) < (UCS_ERR_LAST as isize as usize).wrapping_sub(1)
}

/// Reinterpret an encoded pointer as a status code, without checks.
#[inline]
pub fn UCS_PTR_RAW_STATUS(ptr: ucs_status_ptr_t) -> ucs_status_t {
    ptr as isize as ucs_status_t
}

/// Status carried by `ptr`: `UCS_INPROGRESS` for a real pointer, otherwise
/// the encoded code (NULL means `UCS_OK`).
#[inline]
pub fn UCS_PTR_STATUS(ptr: ucs_status_ptr_t) -> ucs_status_t {
    if UCS_PTR_IS_PTR(ptr) {
        UCS_INPROGRESS
    } else {
        UCS_PTR_RAW_STATUS(ptr)
    }
}

// ---------------------------------------------------------------------------
// Memory types (ucs/memory/memory_type.h)
// ---------------------------------------------------------------------------

/// Kind of memory a buffer lives in (C enum, 4 bytes).
pub type ucs_memory_type_t = u32;
/// Alias for the C enum tag `enum ucs_memory_type`.
pub type ucs_memory_type = ucs_memory_type_t;
/// Ordinary host memory.
pub const UCS_MEMORY_TYPE_HOST: ucs_memory_type_t = 0;
/// CUDA device memory.
pub const UCS_MEMORY_TYPE_CUDA: ucs_memory_type_t = 1;
/// CUDA managed (unified) memory.
pub const UCS_MEMORY_TYPE_CUDA_MANAGED: ucs_memory_type_t = 2;
/// ROCm device memory.
pub const UCS_MEMORY_TYPE_ROCM: ucs_memory_type_t = 3;
/// ROCm managed memory.
pub const UCS_MEMORY_TYPE_ROCM_MANAGED: ucs_memory_type_t = 4;
/// Memory of an RDMA device (since 1.16).
/// Releases: 1.16+.
pub const UCS_MEMORY_TYPE_RDMA: ucs_memory_type_t = 5;
/// Intel Level Zero host (USM host) memory (since 1.17).
/// Releases: 1.17+.
pub const UCS_MEMORY_TYPE_ZE_HOST: ucs_memory_type_t = 6;
/// Intel Level Zero device (USM device) memory (since 1.17).
/// Releases: 1.17+.
pub const UCS_MEMORY_TYPE_ZE_DEVICE: ucs_memory_type_t = 7;
/// Intel Level Zero shared (USM shared) memory (since 1.17).
/// Releases: 1.17+.
pub const UCS_MEMORY_TYPE_ZE_MANAGED: ucs_memory_type_t = 8;
/// Number of known memory types in 1.13-1.15 (see `UCS_MEMORY_TYPE_LAST`).
/// Releases: 1.13-1.15.
pub const UCS_MEMORY_TYPE_LAST_v1_13: ucs_memory_type_t = 5;
/// Number of known memory types in 1.16 (RDMA joined).
/// Releases: 1.16-1.16.
pub const UCS_MEMORY_TYPE_LAST_v1_16: ucs_memory_type_t = 6;
/// HabanaLabs Gaudi memory (since 1.21).
/// Releases: 1.21+.
pub const UCS_MEMORY_TYPE_GAUDI: ucs_memory_type_t = 9;
/// Number of known memory types in 1.17-1.20 (the Level Zero kinds joined
/// in 1.17).
/// Releases: 1.17-1.20.
pub const UCS_MEMORY_TYPE_LAST_v1_17: ucs_memory_type_t = 9;
/// Number of known memory types (Gaudi joined in 1.21).
/// Releases: 1.21+.
pub const UCS_MEMORY_TYPE_LAST: ucs_memory_type_t = 10;
/// Memory type could not be determined: the value of `LAST`, so it moves
/// with it. In Rust this is the newest release's value; code that answers
/// a caller uses the running release's (`crate::ucs::release`).
/// Releases: 1.21+.
pub const UCS_MEMORY_TYPE_UNKNOWN: ucs_memory_type_t = UCS_MEMORY_TYPE_LAST;
/// `UCS_MEMORY_TYPE_UNKNOWN` in 1.13-1.15.
/// Releases: 1.13-1.15.
pub const UCS_MEMORY_TYPE_UNKNOWN_v1_13: ucs_memory_type_t = UCS_MEMORY_TYPE_LAST_v1_13;
/// `UCS_MEMORY_TYPE_UNKNOWN` in 1.16.
/// Releases: 1.16-1.16.
pub const UCS_MEMORY_TYPE_UNKNOWN_v1_16: ucs_memory_type_t = UCS_MEMORY_TYPE_LAST_v1_16;
/// `UCS_MEMORY_TYPE_UNKNOWN` in 1.17-1.20.
/// Releases: 1.17-1.20.
pub const UCS_MEMORY_TYPE_UNKNOWN_v1_17: ucs_memory_type_t = UCS_MEMORY_TYPE_LAST_v1_17;

/// `UCS_MEMORY_TYPE_LAST` (and `UNKNOWN`, the same value) of a release.
pub const fn memory_type_last(release: Release) -> ucs_memory_type_t {
    if release.since(21) {
        UCS_MEMORY_TYPE_LAST
    } else if release.since(17) {
        UCS_MEMORY_TYPE_LAST_v1_17
    } else if release.since(16) {
        UCS_MEMORY_TYPE_LAST_v1_16
    } else {
        UCS_MEMORY_TYPE_LAST_v1_13
    }
}

/// Per-range memory flags (C enum, 4 bytes; the constants are u8 like
/// `uct_md_mem_attr_v2_t::mem_flags`, since 1.22).
/// Releases: 1.22+.
pub type ucs_mem_flags_t = u32;
/// Memory domains can register the range.
/// Releases: 1.22+.
pub const UCS_MEM_FLAG_REGISTRABLE: u8 = 1u8 << 0;
/// Bit mask (indexed by memory type) of the types the CPU can access, up
/// to 1.16.
/// Releases: 1.13-1.16.
pub const UCS_MEMORY_TYPES_CPU_ACCESSIBLE_v1_13: u64 =
    (1u64 << UCS_MEMORY_TYPE_HOST) | (1u64 << UCS_MEMORY_TYPE_ROCM_MANAGED);
/// Bit mask (indexed by memory type) of the types the CPU can access (the
/// Level Zero host and shared kinds join in 1.17).
/// Releases: 1.17+.
pub const UCS_MEMORY_TYPES_CPU_ACCESSIBLE: u64 = (1u64 << UCS_MEMORY_TYPE_HOST)
    | (1u64 << UCS_MEMORY_TYPE_ROCM_MANAGED)
    | (1u64 << UCS_MEMORY_TYPE_ZE_HOST)
    | (1u64 << UCS_MEMORY_TYPE_ZE_MANAGED);

// ---------------------------------------------------------------------------
// System devices (ucs/sys/topo/base/topo.h)
// ---------------------------------------------------------------------------

/// Index of a system (PCI) device in libucs's topology table.
pub type ucs_sys_device_t = u8;
/// Largest valid device index.
pub const UCS_SYS_DEVICE_ID_MAX: ucs_sys_device_t = 255;
/// "No particular device".
pub const UCS_SYS_DEVICE_ID_UNKNOWN: ucs_sys_device_t = 255;
/// Buffer length for a textual bus/device/function name.
pub const UCS_SYS_BDF_NAME_MAX: usize = 16;

// ---------------------------------------------------------------------------
// Time and threading
// ---------------------------------------------------------------------------

/// libucs time stamp, in CPU clock ticks (`unsigned long`).
pub type ucs_time_t = c_ulong;

/// Threading level requested for a worker (C enum, 4 bytes).
pub type ucs_thread_mode_t = u32;
/// Only one thread uses the object.
pub const UCS_THREAD_MODE_SINGLE: ucs_thread_mode_t = 0;
/// Several threads, but never concurrently.
pub const UCS_THREAD_MODE_SERIALIZED: ucs_thread_mode_t = 1;
/// Several threads concurrently.
pub const UCS_THREAD_MODE_MULTI: ucs_thread_mode_t = 2;
/// Number of thread modes.
pub const UCS_THREAD_MODE_LAST: ucs_thread_mode_t = 3;

// ---------------------------------------------------------------------------
// Callback queue (ucs/datastruct/callbackq.h)
// ---------------------------------------------------------------------------

/// Number of usable fast-path slots of a callback queue. The array has one
/// more slot that always stays empty and terminates the dispatch loop.
pub const UCS_CALLBACKQ_FAST_COUNT: usize = 7;
/// Value of a callback id that refers to nothing.
pub const UCS_CALLBACKQ_ID_NULL: c_int = -1;

/// Progress callback: returns how many events it processed.
pub type ucs_callback_t = Option<unsafe extern "C" fn(arg: *mut c_void) -> c_uint>;

/// Filter used when removing callbacks selectively; non-zero means "remove".
pub type ucs_callbackq_predicate_t =
    Option<unsafe extern "C" fn(elem: *const ucs_callbackq_elem_t, arg: *mut c_void) -> c_int>;

/// Flag bits of a callback-queue element (`unsigned flags`).
pub type ucs_callbackq_flags = u32;
/// Put the callback on the fast path (`fast_elems`).
pub const UCS_CALLBACKQ_FLAG_FAST: u32 = 1u32 << 0;
/// Run the callback once and then drop it.
pub const UCS_CALLBACKQ_FLAG_ONESHOT: u32 = 1u32 << 1;

/// One entry of a callback queue's fast path, as 1.13-1.15 laid it out:
/// the callback with its flags and id.
/// Releases: 1.13-1.15.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ucs_callbackq_elem_t_v1_13 {
    pub cb: ucs_callback_t,
    pub arg: *mut c_void,
    pub flags: c_uint,
    pub id: c_int,
}

/// One entry of a callback queue's fast path (the queue rewritten in 1.16
/// keeps only the callback).
/// Releases: 1.16+.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ucs_callbackq_elem_t {
    pub cb: ucs_callback_t,
    pub arg: *mut c_void,
}
/// Alias for the C tag `struct ucs_callbackq_elem`.
pub type ucs_callbackq_elem = ucs_callbackq_elem_t;

/// A libucs callback queue as 1.13-1.15 laid it out: the fast path, then
/// libucs's private part inline (72 bytes).
/// Releases: 1.13-1.15.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ucs_callbackq_t_v1_13 {
    pub fast_elems: [ucs_callbackq_elem_t_v1_13; 8],
    pub r#priv: [c_char; 72],
}

/// A libucs callback queue, embedded in `uct_worker_t`.
///
/// The dispatcher (inlined into C callers) walks `fast_elems` until it meets
/// an element whose `cb` is NULL, so the last of the
/// `UCS_CALLBACKQ_FAST_COUNT + 1` (= 8) slots must always stay NULL.
/// `priv` is owned by libucs: a pointer to its private part (an inline
/// block up to 1.15, see `ucs_callbackq_t_v1_13`). Only libucs's own
/// functions initialise and change a queue.
/// Releases: 1.16+.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ucs_callbackq_t {
    /// Fast-path callbacks followed by the NULL terminator slot
    /// (`UCS_CALLBACKQ_FAST_COUNT + 1` entries).
    pub fast_elems: [ucs_callbackq_elem_t; 8],
    pub r#priv: *mut ucs_callbackq_priv_t,
}
/// Alias for the C tag `struct ucs_callbackq`.
pub type ucs_callbackq = ucs_callbackq_t;

// ---------------------------------------------------------------------------
// CPU sets, linear functions, socket addresses
// ---------------------------------------------------------------------------

/// One word of a CPU bit mask.
pub type ucs_cpu_mask_t = c_ulong;
/// Number of CPUs a `ucs_cpu_set_t` can describe.
pub const UCS_CPU_SETSIZE: usize = 1024;
/// Bits in one `ucs_cpu_mask_t` word.
pub const UCS_NCPUBITS: usize = 64;

/// Fixed-size CPU bit mask (1024 CPUs, 16 words of 64 bits).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ucs_cpu_set_t {
    /// Bit `n % 64` of word `n / 64` stands for CPU `n`.
    pub ucs_bits: [ucs_cpu_mask_t; 16],
}

/// `f(x) = c + m * x`, used for costs such as latency and registration.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ucs_linear_func_t {
    /// Constant term.
    pub c: f64,
    /// Slope.
    pub m: f64,
}

/// A socket address given by pointer and length.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ucs_sock_addr_t {
    pub addr: *const libc::sockaddr,
    pub addrlen: libc::socklen_t,
}
/// Alias for the C tag `struct ucs_sock_addr`.
pub type ucs_sock_addr = ucs_sock_addr_t;

// ---------------------------------------------------------------------------
// Opaque libucs objects
// ---------------------------------------------------------------------------

/// libucs asynchronous-event context (opaque; only handled by pointer).
///
/// Opaque structs are declared `#[repr(C, align(8))]` with no usable fields:
/// Rust treats pointers to them as FFI-safe and cbindgen emits a bare
/// forward declaration for them.
#[repr(C, align(8))]
pub struct ucs_async_context {
    _private: [u8; 0],
}
/// C typedef name of `struct ucs_async_context`.
pub type ucs_async_context_t = ucs_async_context;

/// libucs statistics node (opaque).
#[repr(C, align(8))]
pub struct ucs_stats_node {
    _private: [u8; 0],
}
/// C typedef name of `struct ucs_stats_node`.
pub type ucs_stats_node_t = ucs_stats_node;

/// libucs's private part of a callback queue (1.16+; opaque).
/// Releases: 1.16+.
#[repr(C, align(8))]
pub struct ucs_callbackq_priv {
    _private: [u8; 0],
}
/// C typedef name of `struct ucs_callbackq_priv`.
/// Releases: 1.16+.
pub type ucs_callbackq_priv_t = ucs_callbackq_priv;

/// libucs's growable string (1.17+: the `doc` member of a config parser
/// appends to one). Only libucs touches its three words.
/// Releases: 1.17+.
#[repr(C)]
pub struct ucs_string_buffer {
    _private: [usize; 3],
}
/// C typedef name of `struct ucs_string_buffer`.
/// Releases: 1.17+.
pub type ucs_string_buffer_t = ucs_string_buffer;

// ---------------------------------------------------------------------------
// Configuration types (ucs/config/types.h)
// ---------------------------------------------------------------------------

/// Log verbosity (C enum, 4 bytes).
pub type ucs_log_level_t = u32;
pub const UCS_LOG_LEVEL_FATAL: ucs_log_level_t = 0;
pub const UCS_LOG_LEVEL_ERROR: ucs_log_level_t = 1;
pub const UCS_LOG_LEVEL_WARN: ucs_log_level_t = 2;
pub const UCS_LOG_LEVEL_DIAG: ucs_log_level_t = 3;
pub const UCS_LOG_LEVEL_INFO: ucs_log_level_t = 4;
pub const UCS_LOG_LEVEL_DEBUG: ucs_log_level_t = 5;
pub const UCS_LOG_LEVEL_TRACE: ucs_log_level_t = 6;
pub const UCS_LOG_LEVEL_TRACE_REQ: ucs_log_level_t = 7;
pub const UCS_LOG_LEVEL_TRACE_DATA: ucs_log_level_t = 8;
pub const UCS_LOG_LEVEL_TRACE_ASYNC: ucs_log_level_t = 9;
pub const UCS_LOG_LEVEL_TRACE_FUNC: ucs_log_level_t = 10;
pub const UCS_LOG_LEVEL_TRACE_POLL: ucs_log_level_t = 11;
pub const UCS_LOG_LEVEL_LAST: ucs_log_level_t = 12;
/// Pseudo level used for unconditional printing.
pub const UCS_LOG_LEVEL_PRINT: ucs_log_level_t = 13;

/// How asynchronous events are delivered (C enum, 4 bytes).
pub type ucs_async_mode_t = u32;
pub const UCS_ASYNC_MODE_SIGNAL: ucs_async_mode_t = 0;
pub const UCS_ASYNC_MODE_THREAD: ucs_async_mode_t = 1;
pub const UCS_ASYNC_MODE_THREAD_SPINLOCK: ucs_async_mode_t = UCS_ASYNC_MODE_THREAD;
pub const UCS_ASYNC_MODE_THREAD_MUTEX: ucs_async_mode_t = 2;
pub const UCS_ASYNC_MODE_POLL: ucs_async_mode_t = 3;
pub const UCS_ASYNC_MODE_LAST: ucs_async_mode_t = 4;

/// yes / no / try / auto configuration value (C enum, 4 bytes).
pub type ucs_ternary_auto_value_t = u32;
/// Alias for the C tag `enum ucs_ternary_auto_value`.
pub type ucs_ternary_auto_value = ucs_ternary_auto_value_t;
pub const UCS_NO: ucs_ternary_auto_value_t = 0;
pub const UCS_YES: ucs_ternary_auto_value_t = 1;
pub const UCS_TRY: ucs_ternary_auto_value_t = 2;
pub const UCS_AUTO: ucs_ternary_auto_value_t = 3;
pub const UCS_TERNARY_LAST: ucs_ternary_auto_value_t = 4;

/// on / off / auto configuration value (C enum, 4 bytes).
pub type ucs_on_off_auto_value_t = u32;
/// Alias for the C tag `enum ucs_on_off_auto_value`.
pub type ucs_on_off_auto_value = ucs_on_off_auto_value_t;
pub const UCS_CONFIG_OFF: ucs_on_off_auto_value_t = 0;
pub const UCS_CONFIG_ON: ucs_on_off_auto_value_t = 1;
pub const UCS_CONFIG_AUTO: ucs_on_off_auto_value_t = 2;
pub const UCS_CONFIG_ON_OFF_LAST: ucs_on_off_auto_value_t = 3;

/// Flags for libucs's configuration printer (C enum, 4 bytes).
pub type ucs_config_print_flags_t = u32;
pub const UCS_CONFIG_PRINT_CONFIG: ucs_config_print_flags_t = 1 << 0;
pub const UCS_CONFIG_PRINT_HEADER: ucs_config_print_flags_t = 1 << 1;
pub const UCS_CONFIG_PRINT_DOC: ucs_config_print_flags_t = 1 << 2;
pub const UCS_CONFIG_PRINT_HIDDEN: ucs_config_print_flags_t = 1 << 3;
pub const UCS_CONFIG_PRINT_COMMENT_DEFAULT: ucs_config_print_flags_t = 1 << 4;

/// Array of strings as stored in a parsed configuration (1.13-1.21:
/// `ucs_config_names_array_t_v1_13`).
/// Releases: 1.22+.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ucs_config_names_array_t {
    pub names: *mut *mut c_char,
    pub count: c_uint,
    /// Nonzero when libucs dropped names that did not fit (since 1.22,
    /// which named the former padding word; libucs fills it).
    pub truncated: c_uint,
}

/// `ucs_config_names_array_t` as 1.13-1.21 spell it: the same layout, the
/// last word unnamed padding.
/// Releases: 1.13-1.21.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ucs_config_names_array_t_v1_13 {
    pub names: *mut *mut c_char,
    pub count: c_uint,
    pub pad: c_uint,
}

/// How an allow-list configuration value is interpreted (C enum, 4 bytes).
pub type ucs_config_allow_list_mode_t = u32;
pub const UCS_CONFIG_ALLOW_LIST_ALLOW_ALL: ucs_config_allow_list_mode_t = 0;
pub const UCS_CONFIG_ALLOW_LIST_ALLOW: ucs_config_allow_list_mode_t = 1;
pub const UCS_CONFIG_ALLOW_LIST_NEGATE: ucs_config_allow_list_mode_t = 2;

/// Parsed allow-list (names plus mode; 1.13-1.21:
/// `ucs_config_allow_list_t_v1_13`).
/// Releases: 1.22+.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ucs_config_allow_list_t {
    pub array: ucs_config_names_array_t,
    pub mode: ucs_config_allow_list_mode_t,
}

/// `ucs_config_allow_list_t` as 1.13-1.21 spell it (their names array).
/// Releases: 1.13-1.21.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ucs_config_allow_list_t_v1_13 {
    pub array: ucs_config_names_array_t_v1_13,
    pub mode: ucs_config_allow_list_mode_t,
}

// ---------------------------------------------------------------------------
// Configuration parser (ucs/config/parser.h, ucs/datastruct/list.h)
// ---------------------------------------------------------------------------

/// Environment-variable prefix used by default (`"UCX_"`), NUL-terminated.
/// cbindgen:ignore
pub const UCS_DEFAULT_ENV_PREFIX: &::core::ffi::CStr = c"UCX_";
/// Largest number of elements an array configuration value may have.
pub const UCS_CONFIG_ARRAY_MAX: usize = 128;

/// Link of libucs's intrusive doubly linked list.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ucs_list_link_t {
    pub prev: *mut ucs_list_link_t,
    pub next: *mut ucs_list_link_t,
}
/// Alias for the C tag `struct ucs_list_link`.
pub type ucs_list_link = ucs_list_link_t;

/// Value codec of a configuration field (all members are called by libucs).
/// Releases: 1.17+.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ucs_config_parser_t {
    /// Parse text `buf` into `dest`; returns non-zero on success.
    pub read: Option<
        unsafe extern "C" fn(buf: *const c_char, dest: *mut c_void, arg: *const c_void) -> c_int,
    >,
    /// Format `src` into `buf` (at most `max` bytes); returns non-zero on success.
    pub write: Option<
        unsafe extern "C" fn(
            buf: *mut c_char,
            max: usize,
            src: *const c_void,
            arg: *const c_void,
        ) -> c_int,
    >,
    /// Deep-copy a parsed value.
    pub clone: Option<
        unsafe extern "C" fn(src: *const c_void, dest: *mut c_void, arg: *const c_void) -> ucs_status_t,
    >,
    /// Free resources held by a parsed value.
    pub release: Option<unsafe extern "C" fn(ptr: *mut c_void, arg: *const c_void)>,
    /// Write a short description of accepted values into `buf`.
    pub help: Option<unsafe extern "C" fn(buf: *mut c_char, max: usize, arg: *const c_void)>,
    /// Append longer documentation to a libucs string buffer (the plain
    /// parsers use libucs's `ucs_config_doc_nop`).
    pub doc: Option<unsafe extern "C" fn(strb: *mut ucs_string_buffer_t, arg: *const c_void)>,
    /// Parser-specific argument handed to every member above.
    pub arg: *const c_void,
}
/// Alias for the C tag `struct ucs_config_parser`.
pub type ucs_config_parser = ucs_config_parser_t;

/// Parser for an array value: element size plus element parser.
/// Releases: 1.17+.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ucs_config_array_t {
    pub elem_size: usize,
    pub parser: ucs_config_parser_t,
}
/// Alias for the C tag `struct ucs_config_array`.
pub type ucs_config_array = ucs_config_array_t;

/// One row of a configuration table (a table ends with a row whose `name`
/// is NULL).
/// Releases: 1.17+.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ucs_config_field_t {
    pub name: *const c_char,
    pub dfl_value: *const c_char,
    pub doc: *const c_char,
    /// Byte offset of the value inside the configuration struct.
    pub offset: usize,
    pub parser: ucs_config_parser_t,
}
/// Alias for the C tag `struct ucs_config_field`.
pub type ucs_config_field = ucs_config_field_t;

/// A value parser as 1.13-1.16 laid it out: no `doc` member.
/// Releases: 1.13-1.16.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ucs_config_parser_t_v1_13 {
    pub read: Option<unsafe extern "C" fn(buf: *const c_char, dest: *mut c_void, arg: *const c_void) -> c_int>,
    pub write: Option<
        unsafe extern "C" fn(buf: *mut c_char, max: usize, src: *const c_void, arg: *const c_void) -> c_int,
    >,
    pub clone: Option<
        unsafe extern "C" fn(src: *const c_void, dest: *mut c_void, arg: *const c_void) -> ucs_status_t,
    >,
    pub release: Option<unsafe extern "C" fn(ptr: *mut c_void, arg: *const c_void)>,
    pub help: Option<unsafe extern "C" fn(buf: *mut c_char, max: usize, arg: *const c_void)>,
    pub arg: *const c_void,
}

/// An array parser as 1.13-1.16 laid it out (their value parser).
/// Releases: 1.13-1.16.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ucs_config_array_t_v1_13 {
    pub elem_size: usize,
    pub parser: ucs_config_parser_t_v1_13,
}

/// A configuration table row as 1.13-1.16 laid it out (their value
/// parser): tables handed to those releases have this stride.
/// Releases: 1.13-1.16.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ucs_config_field_t_v1_13 {
    pub name: *const c_char,
    pub dfl_value: *const c_char,
    pub doc: *const c_char,
    pub offset: usize,
    pub parser: ucs_config_parser_t_v1_13,
}

impl From<&ucs_config_parser_t> for ucs_config_parser_t_v1_13 {
    fn from(p: &ucs_config_parser_t) -> Self {
        ucs_config_parser_t_v1_13 {
            read: p.read,
            write: p.write,
            clone: p.clone,
            release: p.release,
            help: p.help,
            arg: p.arg,
        }
    }
}

/// Registration record of a configuration table in libucs's global list.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ucs_config_global_list_entry_t {
    pub name: *const c_char,
    pub prefix: *const c_char,
    pub table: *mut ucs_config_field_t,
    /// Size of the configuration struct described by `table`.
    pub size: usize,
    pub list: ucs_list_link_t,
    /// `UCS_CONFIG_TABLE_FLAG_*` (1.15+): libucs marks a table it has
    /// parsed, and checks for unused variables only against those.
    /// Releases: 1.15+.
    pub flags: u8,
}
/// The table has been parsed at least once (1.15+).
/// Releases: 1.15+.
pub const UCS_CONFIG_TABLE_FLAG_LOADED: u8 = 1 << 0;
/// Alias for the C tag `struct ucs_config_global_list_entry`.
pub type ucs_config_global_list_entry = ucs_config_global_list_entry_t;

/// Numeric range value (`first-last`).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ucs_range_spec_t {
    pub first: c_uint,
    pub last: c_uint,
}
/// Alias for the C tag `struct ucs_range_spec`.
pub type ucs_range_spec = ucs_range_spec_t;

/// Bandwidth value bound to a name (`name:bw`).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ucs_config_bw_spec_t {
    pub name: *mut c_char,
    pub bw: f64,
}
/// Alias for the C tag `struct ucs_config_bw_spec`.
pub type ucs_config_bw_spec = ucs_config_bw_spec_t;

// ---------------------------------------------------------------------------
// Logging (ucs/config/types.h, ucs/debug/log_def.h)
// ---------------------------------------------------------------------------

/// A log component's settings; `ucs_global_opts_t` begins with libucs's own.
#[repr(C)]
pub struct ucs_log_component_config_t {
    pub log_level: c_uint,
    pub name: [c_char; 16],
    pub file_filter: *const c_char,
}

/// What libucs's parsers store for a double or a bandwidth of "auto".
pub const UCS_CONFIG_DBL_AUTO: f64 = -2.0;
pub const UCS_CONFIG_BW_AUTO: f64 = -2.0;

// ---------------------------------------------------------------------------
// Memory registration cache (ucs/memory/rcache.h)
// ---------------------------------------------------------------------------

/// The cache (opaque).
#[repr(C)]
pub struct ucs_rcache_t {
    _opaque: [u8; 0],
}

/// The range `[start, end)` of a page table entry.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ucs_pgt_region_t {
    pub start: c_ulong,
    pub end: c_ulong,
}

/// The libucs part of a region descriptor, as 1.13-1.16 lay it out.
/// Releases: 1.13-1.16.
#[repr(C)]
pub struct ucs_rcache_region_t_v1_13 {
    pub super_: ucs_pgt_region_t,
    pub lru_list: ucs_list_link_t,
    pub tmp_list: ucs_list_link_t,
    pub comp_list: ucs_list_link_t,
    pub refcount: u32,
    pub status: ucs_status_t,
    pub prot: u8,
    pub flags: u8,
    pub lru_flags: u8,
    /// libucs's private word (or its page-frame array).
    pub priv_: u64,
}

/// The libucs part of a region descriptor: 1.17 inserted the alignment the
/// region was made with before `refcount`.
/// Releases: 1.17+.
#[repr(C)]
pub struct ucs_rcache_region_t {
    pub super_: ucs_pgt_region_t,
    pub lru_list: ucs_list_link_t,
    pub tmp_list: ucs_list_link_t,
    pub comp_list: ucs_list_link_t,
    pub alignment: usize,
    pub refcount: u32,
    pub status: ucs_status_t,
    pub prot: u8,
    pub flags: u8,
    pub lru_flags: u8,
    /// libucs's private word (or its page-frame array).
    pub priv_: u64,
}

// The callbacks get the region in the running release's layout; only
// `super_` (offset 0 in every layout) may be read through the pointer type.

/// Registers `region` (its range is `super_`); `flags` are
/// `UCS_RCACHE_MEM_REG_*`.
pub type ucs_rcache_mem_reg_fn = unsafe extern "C" fn(context: *mut c_void, rcache: *mut ucs_rcache_t,
                                                      arg: *mut c_void, region: *mut ucs_rcache_region_t,
                                                      flags: u16) -> ucs_status_t;
/// Deregisters `region`.
pub type ucs_rcache_mem_dereg_fn = unsafe extern "C" fn(context: *mut c_void, rcache: *mut ucs_rcache_t,
                                                        region: *mut ucs_rcache_region_t);
/// Called (1.18+) for every existing region a new one is merged with.
pub type ucs_rcache_merge_fn = unsafe extern "C" fn(context: *mut c_void, rcache: *mut ucs_rcache_t,
                                                    arg: *mut c_void, region: *mut ucs_rcache_region_t);
/// Writes the owner's part of a region as text (at most `max` bytes).
pub type ucs_rcache_dump_region_fn = unsafe extern "C" fn(context: *mut c_void, rcache: *mut ucs_rcache_t,
                                                          region: *mut ucs_rcache_region_t, buf: *mut c_char,
                                                          max: usize);

/// The owner's callbacks, as 1.13-1.17 lay them out.
/// Releases: 1.13-1.17.
#[repr(C)]
pub struct ucs_rcache_ops_t_v1_13 {
    pub mem_reg: Option<ucs_rcache_mem_reg_fn>,
    pub mem_dereg: Option<ucs_rcache_mem_dereg_fn>,
    pub dump_region: Option<ucs_rcache_dump_region_fn>,
}

/// The owner's callbacks (1.18 inserted `merge`).
/// Releases: 1.18+.
#[repr(C)]
pub struct ucs_rcache_ops_t {
    pub mem_reg: Option<ucs_rcache_mem_reg_fn>,
    pub mem_dereg: Option<ucs_rcache_mem_dereg_fn>,
    pub merge: Option<ucs_rcache_merge_fn>,
    pub dump_region: Option<ucs_rcache_dump_region_fn>,
}

/// Cache parameters as 1.13-1.16 lay them out (the alignment is the
/// cache's).
/// Releases: 1.13-1.16.
#[repr(C)]
pub struct ucs_rcache_params_t_v1_13 {
    pub region_struct_size: usize,
    pub alignment: usize,
    pub max_alignment: usize,
    pub ucm_events: c_int,
    pub ucm_event_priority: c_int,
    pub ops: *const c_void,
    pub context: *mut c_void,
    pub flags: c_int,
    pub max_regions: c_ulong,
    pub max_size: usize,
    pub max_unreleased: usize,
}

/// Cache parameters (from 1.17 each lookup gives its alignment).
/// Releases: 1.17+.
#[repr(C)]
pub struct ucs_rcache_params_t {
    pub region_struct_size: usize,
    pub ucm_events: c_int,
    pub ucm_event_priority: c_int,
    pub ops: *const c_void,
    pub context: *mut c_void,
    pub flags: c_int,
    pub max_regions: c_ulong,
    pub max_size: usize,
    pub max_unreleased: usize,
}

/// Region flag: registered (the owner's `mem_reg` succeeded).
pub const UCS_RCACHE_REGION_FLAG_REGISTERED: u8 = 1 << 0;
/// Region flag: in the page table.
pub const UCS_RCACHE_REGION_FLAG_PGTABLE: u8 = 1 << 1;
/// `mem_reg` flag: do not log a failure (a merged range is being tried).
pub const UCS_RCACHE_MEM_REG_HIDE_ERRORS: u16 = 1 << 0;
/// Cache flag: do not check page frame numbers.
pub const UCS_RCACHE_FLAG_NO_PFN_CHECK: c_int = 1 << 0;
/// Cache flag: drop every unused region before `fork()`.
pub const UCS_RCACHE_FLAG_PURGE_ON_FORK: c_int = 1 << 1;
/// Cache flag: handle memory events synchronously.
/// Releases: 1.17+.
pub const UCS_RCACHE_FLAG_SYNC_EVENTS: c_int = 1 << 2;
/// Cache flag: the LRU list needs its own lock.
/// Releases: 1.22+.
pub const UCS_RCACHE_FLAG_NEED_LRU_LOCK: c_int = 1 << 3;
/// Smallest alignment of a cache (`UCS_PGT_ADDR_ALIGN`).
pub const UCS_RCACHE_MIN_ALIGNMENT: usize = 16;
/// libucm event: memory unmapped (`UCM_EVENT_VM_UNMAPPED`).
pub const UCM_EVENT_VM_UNMAPPED: c_int = 1 << 17;
