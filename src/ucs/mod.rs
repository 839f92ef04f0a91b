//! The parts of the distro's `libucs.so.0` that we reuse.
#![allow(non_camel_case_types, non_upper_case_globals)]
//!
//! libucs is always loaded next to libuct (every UCX application links it),
//! so relying on it costs nothing and buys exact behaviour: the worker's
//! progress queue is walked by an inline function of libucs's header, so the
//! queue has to be libucs's own; configuration parsing through libucs gives
//! the same units, config files and "unused variable" accounting as UCX; and
//! log lines go through UCX's logger, honouring `UCX_LOG_LEVEL`/`UCX_LOG_FILE`.

use crate::abi::*;

pub mod async_block;
pub mod async_handler;
pub mod callbackq;
pub mod host;
pub mod parser;
pub mod optional;
pub mod rcache;
pub mod release;
pub use async_handler::{add_timer, remove_handler, set_event_handler, AsyncCallback};
pub use host::*;
use libc::{c_char, c_int, c_uint, c_void, size_t};

/// `ucs_log_component_config_t` (libucs `config/types.h`).
#[repr(C)]
pub struct ucs_log_component_config_t {
    pub log_level: c_uint,
    pub name: [c_char; 16],
    pub file_filter: *const c_char,
}

/// `ucs_event_set_types_t` (ucs/sys/event_set.h): readable, and
/// edge-triggered (one event per change, not one per wait).
pub const EVENT_READ: c_uint = 1;
pub const EVENT_EDGE: c_uint = 1 << 3;
/// `ucs_sys_namespace_type_t` values.
pub const UCS_SYS_NS_TYPE_IPC: c_uint = 0;
pub const UCS_SYS_NS_TYPE_NET: c_uint = 2;
pub const UCS_SYS_NS_TYPE_PID: c_uint = 3;

#[link(name = "ucs")]
extern "C" {
    // config/parser.h: the list of every configuration table, walked by
    // `ucx_info -c` and the "unused variable" check.
    pub static mut ucs_config_global_list: ucs_list_link_t;

    // datastruct/callbackq.h (the other calls, whose signatures changed in
    // 1.16, are in `optional`; use the adapter in `callbackq`)
    pub fn ucs_callbackq_init(cbq: *mut ucs_callbackq_t) -> ucs_status_t;
    pub fn ucs_callbackq_cleanup(cbq: *mut ucs_callbackq_t);

    // async/async.h (contexts of our own, to learn their layout)
    pub fn ucs_async_context_create(mode: c_uint, async_p: *mut *mut ucs_async_context_t) -> ucs_status_t;
    pub fn ucs_async_context_destroy(async_: *mut ucs_async_context_t);
    pub fn ucs_async_add_timer(mode: c_uint, interval: u64,
                               cb: Option<unsafe extern "C" fn(id: c_int, events: c_uint, arg: *mut c_void)>,
                               arg: *mut c_void, async_: *mut ucs_async_context_t, timer_id_p: *mut c_int)
                               -> ucs_status_t;
    pub fn ucs_async_remove_handler(id: c_int, sync: c_int) -> ucs_status_t;
    pub fn ucs_async_set_event_handler(mode: c_uint, event_fd: c_int, events: c_uint,
                                       cb: Option<unsafe extern "C" fn(id: c_int, events: c_uint, arg: *mut c_void)>,
                                       arg: *mut c_void, async_: *mut ucs_async_context_t) -> ucs_status_t;

    // config/parser.h (the calls whose signature changed in 1.15 and 1.17
    // are in `optional`; use the adapter in `parser`)
    pub fn ucs_config_parser_release_opts(opts: *mut c_void, fields: *mut ucs_config_field_t);
    pub fn ucs_config_parser_get_value(opts: *mut c_void, fields: *mut ucs_config_field_t, name: *const c_char,
                                       value: *mut c_char, max: size_t) -> ucs_status_t;

    // The value parsers of config/parser.h, used to build our tables.
    pub fn ucs_config_sscanf_memunits(buf: *const c_char, dest: *mut c_void, arg: *const c_void) -> c_int;
    pub fn ucs_config_sprintf_memunits(buf: *mut c_char, max: size_t, src: *const c_void, arg: *const c_void) -> c_int;
    pub fn ucs_config_sscanf_ulunits(buf: *const c_char, dest: *mut c_void, arg: *const c_void) -> c_int;
    pub fn ucs_config_sprintf_ulunits(buf: *mut c_char, max: size_t, src: *const c_void, arg: *const c_void) -> c_int;
    pub fn ucs_config_sscanf_uint(buf: *const c_char, dest: *mut c_void, arg: *const c_void) -> c_int;
    pub fn ucs_config_sprintf_uint(buf: *mut c_char, max: size_t, src: *const c_void, arg: *const c_void) -> c_int;
    pub fn ucs_config_sscanf_int(buf: *const c_char, dest: *mut c_void, arg: *const c_void) -> c_int;
    pub fn ucs_config_sprintf_int(buf: *mut c_char, max: size_t, src: *const c_void, arg: *const c_void) -> c_int;
    pub fn ucs_config_sscanf_ulong(buf: *const c_char, dest: *mut c_void, arg: *const c_void) -> c_int;
    pub fn ucs_config_sprintf_ulong(buf: *mut c_char, max: size_t, src: *const c_void, arg: *const c_void) -> c_int;
    pub fn ucs_config_sscanf_double(buf: *const c_char, dest: *mut c_void, arg: *const c_void) -> c_int;
    pub fn ucs_config_sprintf_double(buf: *mut c_char, max: size_t, src: *const c_void, arg: *const c_void) -> c_int;
    pub fn ucs_config_sscanf_bool(buf: *const c_char, dest: *mut c_void, arg: *const c_void) -> c_int;
    pub fn ucs_config_sprintf_bool(buf: *mut c_char, max: size_t, src: *const c_void, arg: *const c_void) -> c_int;
    pub fn ucs_config_sscanf_string(buf: *const c_char, dest: *mut c_void, arg: *const c_void) -> c_int;
    pub fn ucs_config_sprintf_string(buf: *mut c_char, max: size_t, src: *const c_void, arg: *const c_void) -> c_int;
    pub fn ucs_config_sscanf_enum(buf: *const c_char, dest: *mut c_void, arg: *const c_void) -> c_int;
    pub fn ucs_config_sprintf_enum(buf: *mut c_char, max: size_t, src: *const c_void, arg: *const c_void) -> c_int;
    pub fn ucs_config_sscanf_bw(buf: *const c_char, dest: *mut c_void, arg: *const c_void) -> c_int;
    pub fn ucs_config_sprintf_bw(buf: *mut c_char, max: size_t, src: *const c_void, arg: *const c_void) -> c_int;
    pub fn ucs_config_sscanf_time(buf: *const c_char, dest: *mut c_void, arg: *const c_void) -> c_int;
    pub fn ucs_config_sprintf_time(buf: *mut c_char, max: size_t, src: *const c_void, arg: *const c_void) -> c_int;
    pub fn ucs_config_sscanf_time_units(buf: *const c_char, dest: *mut c_void, arg: *const c_void) -> c_int;
    pub fn ucs_config_sprintf_time_units(buf: *mut c_char, max: size_t, src: *const c_void, arg: *const c_void) -> c_int;
    pub fn ucs_config_sscanf_on_off_auto(buf: *const c_char, dest: *mut c_void, arg: *const c_void) -> c_int;
    pub fn ucs_config_sprintf_on_off_auto(buf: *mut c_char, max: size_t, src: *const c_void, arg: *const c_void) -> c_int;
    pub fn ucs_config_sscanf_ternary(buf: *const c_char, dest: *mut c_void, arg: *const c_void) -> c_int;
    pub fn ucs_config_sscanf_ternary_auto(buf: *const c_char, dest: *mut c_void, arg: *const c_void) -> c_int;
    pub fn ucs_config_sprintf_ternary_auto(buf: *mut c_char, max: size_t, src: *const c_void, arg: *const c_void) -> c_int;
    pub fn ucs_config_sscanf_array(buf: *const c_char, dest: *mut c_void, arg: *const c_void) -> c_int;
    pub fn ucs_config_sprintf_array(buf: *mut c_char, max: size_t, src: *const c_void, arg: *const c_void) -> c_int;
    pub fn ucs_config_sscanf_table(buf: *const c_char, dest: *mut c_void, arg: *const c_void) -> c_int;
    pub fn ucs_config_sscanf_range_spec(buf: *const c_char, dest: *mut c_void, arg: *const c_void) -> c_int;
    pub fn ucs_config_sprintf_range_spec(buf: *mut c_char, max: size_t, src: *const c_void, arg: *const c_void) -> c_int;
    pub fn ucs_config_clone_uint(src: *const c_void, dest: *mut c_void, arg: *const c_void) -> ucs_status_t;
    pub fn ucs_config_clone_int(src: *const c_void, dest: *mut c_void, arg: *const c_void) -> ucs_status_t;
    pub fn ucs_config_clone_ulong(src: *const c_void, dest: *mut c_void, arg: *const c_void) -> ucs_status_t;
    pub fn ucs_config_clone_double(src: *const c_void, dest: *mut c_void, arg: *const c_void) -> ucs_status_t;
    pub fn ucs_config_clone_string(src: *const c_void, dest: *mut c_void, arg: *const c_void) -> ucs_status_t;
    pub fn ucs_config_clone_array(src: *const c_void, dest: *mut c_void, arg: *const c_void) -> ucs_status_t;
    pub fn ucs_config_clone_table(src: *const c_void, dest: *mut c_void, arg: *const c_void) -> ucs_status_t;
    pub fn ucs_config_clone_range_spec(src: *const c_void, dest: *mut c_void, arg: *const c_void) -> ucs_status_t;
    pub fn ucs_config_release_nop(ptr: *mut c_void, arg: *const c_void);
    pub fn ucs_config_release_string(ptr: *mut c_void, arg: *const c_void);
    pub fn ucs_config_release_array(ptr: *mut c_void, arg: *const c_void);
    pub fn ucs_config_release_table(ptr: *mut c_void, arg: *const c_void);
    pub fn ucs_config_help_generic(buf: *mut c_char, max: size_t, arg: *const c_void);
    pub fn ucs_config_help_enum(buf: *mut c_char, max: size_t, arg: *const c_void);
    pub fn ucs_config_help_array(buf: *mut c_char, max: size_t, arg: *const c_void);
    pub fn ucs_config_help_table(buf: *mut c_char, max: size_t, arg: *const c_void);
    /// A 16-bit hexadecimal number or "auto".
    pub fn ucs_config_sscanf_hex(buf: *const c_char, dest: *mut c_void, arg: *const c_void) -> c_int;
    pub fn ucs_config_sprintf_hex(buf: *mut c_char, max: size_t, src: *const c_void, arg: *const c_void) -> c_int;
    /// A set of names stored as bits.
    pub fn ucs_config_sscanf_bitmap(buf: *const c_char, dest: *mut c_void, arg: *const c_void) -> c_int;
    pub fn ucs_config_sprintf_bitmap(buf: *mut c_char, max: size_t, src: *const c_void, arg: *const c_void) -> c_int;
    pub fn ucs_config_help_bitmap(buf: *mut c_char, max: size_t, arg: *const c_void);
    /// A device name with a bandwidth (`dev:<bw>` or `dev:auto`).
    pub fn ucs_config_sscanf_bw_spec(buf: *const c_char, dest: *mut c_void, arg: *const c_void) -> c_int;
    pub fn ucs_config_sprintf_bw_spec(buf: *mut c_char, max: size_t, src: *const c_void, arg: *const c_void) -> c_int;
    pub fn ucs_config_clone_bw_spec(src: *const c_void, dest: *mut c_void, arg: *const c_void) -> ucs_status_t;
    pub fn ucs_config_release_bw_spec(ptr: *mut c_void, arg: *const c_void);
    /// libucs's description of a list of strings (its own `STRING_ARRAY`).
    pub static ucs_config_array_string: ucs_config_array_t;

    // debug/log_def.h, config/global_opts.h
    pub fn ucs_log_dispatch(file: *const c_char, line: c_uint, function: *const c_char, level: c_uint,
                            comp_conf: *mut ucs_log_component_config_t, format: *const c_char, ...);
    /// `ucs_global_opts_t` begins with its `ucs_log_component_config_t`.
    pub static mut ucs_global_opts: ucs_log_component_config_t;
    pub static ucs_log_level_names: [*const c_char; 0];

    // sys/sys.h (namespaces, process identity). `ucs_sys_get_ns` returns
    // `ucs_sys_ns_t`: 64 bits up to 1.21, 32 from 1.22 (only the low half
    // of the result is defined then); read it through `host::ns_id`.
    pub fn ucs_sys_get_ns(ns_type: c_uint) -> u64;
    pub fn ucs_sys_ns_is_default(ns_type: c_uint) -> c_int;
    pub fn ucs_sys_get_proc_create_time(pid: libc::pid_t) -> libc::c_ulong;

    // misc
    pub fn ucs_status_string(status: ucs_status_t) -> *const c_char;
    pub fn ucs_generate_uuid(seed: u64) -> u64;
    pub fn ucs_get_system_id() -> u64;
    pub fn ucs_get_cpu_clocks_per_sec() -> f64;
}

/// libucs's estimate of this CPU's memcpy bandwidth (bytes/s), where the
/// release exports one (up to 1.17).
pub fn memcpy_bw() -> Option<f64> {
    // SAFETY: a pure libucs function without arguments returning an estimate.
    optional::cpu_get_memcpy_bw().map(|f| unsafe { f() })
}
