//! libucs functions and tables that not every served release has, or whose
//! signature a release changed. They are not linked (a library linked
//! against one release's extra symbols would not load with another's):
//! each is looked up by name in the process's libucs the first time it is
//! asked for, and cached.
//!
//! A name with two signatures has one accessor per signature, the older
//! suffixed `_v1_<N>` (N: the first release of that signature), like the
//! ABI's items. Callers pick by the running release (`super::release`);
//! an accessor answers None when this libucs does not export the name.

use crate::abi::*;
use libc::{c_char, c_int, c_uint, c_void, size_t};
use once_cell::sync::OnceCell;
use std::ffi::CStr;

/// The address of `name` in the process's libucs, looked up once per cell.
fn lookup(cell: &OnceCell<usize>, name: &CStr) -> usize {
    *cell.get_or_init(|| super::release::optional_symbol(name).map_or(0, |p| p as usize))
}

macro_rules! optional_fns {
    ($( $(#[$m:meta])* fn $name:ident = $sym:literal : $ty:ty; )*) => {
        $(
            $(#[$m])*
            pub fn $name() -> Option<$ty> {
                static CELL: OnceCell<usize> = OnceCell::new();
                let p = lookup(&CELL, $sym);
                // SAFETY: `p` is the address of the libucs function named
                // $sym, and $ty is its signature in the releases this
                // accessor is used for (the callers check the release).
                (p != 0).then(|| unsafe { std::mem::transmute::<usize, $ty>(p) })
            }
        )*
    };
}

macro_rules! optional_tables {
    ($( $(#[$m:meta])* table $name:ident = $sym:literal; )*) => {
        $(
            $(#[$m])*
            pub fn $name() -> Option<*const *const c_char> {
                static CELL: OnceCell<usize> = OnceCell::new();
                let p = lookup(&CELL, $sym);
                (p != 0).then_some(p as *const *const c_char)
            }
        )*
    };
}

type Read = unsafe extern "C" fn(*const c_char, *mut c_void, *const c_void) -> c_int;
type Write = unsafe extern "C" fn(*mut c_char, size_t, *const c_void, *const c_void) -> c_int;
type Clone = unsafe extern "C" fn(*const c_void, *mut c_void, *const c_void) -> ucs_status_t;
type Release = unsafe extern "C" fn(*mut c_void, *const c_void);
type Help = unsafe extern "C" fn(*mut c_char, size_t, *const c_void);
type Doc = unsafe extern "C" fn(*mut ucs_string_buffer_t, *const c_void);

optional_fns! {
    // datastruct/callbackq.h, 1.13-1.15: ids for every callback, flags
    // choose the fast path and one-shot callbacks.
    fn callbackq_add_v1_13 = c"ucs_callbackq_add":
        unsafe extern "C" fn(*mut c_void, ucs_callback_t, *mut c_void, c_uint) -> c_int;
    fn callbackq_remove_v1_13 = c"ucs_callbackq_remove": unsafe extern "C" fn(*mut c_void, c_int);
    fn callbackq_add_safe_v1_13 = c"ucs_callbackq_add_safe":
        unsafe extern "C" fn(*mut c_void, ucs_callback_t, *mut c_void, c_uint) -> c_int;
    fn callbackq_remove_safe_v1_13 = c"ucs_callbackq_remove_safe": unsafe extern "C" fn(*mut c_void, c_int);
    fn callbackq_remove_if_v1_13 = c"ucs_callbackq_remove_if":
        unsafe extern "C" fn(*mut c_void, ucs_callbackq_predicate_t, *mut c_void);
    // 1.16+: no flags; one-shot callbacks are keyed.
    fn callbackq_add = c"ucs_callbackq_add":
        unsafe extern "C" fn(*mut c_void, ucs_callback_t, *mut c_void) -> c_int;
    fn callbackq_remove = c"ucs_callbackq_remove": unsafe extern "C" fn(*mut c_void, c_int) -> *mut c_void;
    fn callbackq_add_safe = c"ucs_callbackq_add_safe":
        unsafe extern "C" fn(*mut c_void, ucs_callback_t, *mut c_void) -> c_int;
    fn callbackq_remove_safe = c"ucs_callbackq_remove_safe":
        unsafe extern "C" fn(*mut c_void, c_int) -> *mut c_void;
    fn callbackq_add_oneshot = c"ucs_callbackq_add_oneshot":
        unsafe extern "C" fn(*mut c_void, *mut c_void, ucs_callback_t, *mut c_void);
    fn callbackq_remove_oneshot = c"ucs_callbackq_remove_oneshot":
        unsafe extern "C" fn(*mut c_void, *mut c_void, ucs_callbackq_predicate_t, *mut c_void);

    // config/parser.h: 1.13-1.14 take the table and its prefix, 1.15+ the
    // table's registration entry.
    fn config_parser_fill_opts_v1_13 = c"ucs_config_parser_fill_opts":
        unsafe extern "C" fn(*mut c_void, *mut c_void, *const c_char, *const c_char, c_int) -> ucs_status_t;
    fn config_parser_fill_opts = c"ucs_config_parser_fill_opts":
        unsafe extern "C" fn(*mut c_void, *mut ucs_config_global_list_entry_t, *const c_char, c_int)
                             -> ucs_status_t;
    // 1.17+ take the table's prefix as well.
    fn config_parser_set_value_v1_13 = c"ucs_config_parser_set_value":
        unsafe extern "C" fn(*mut c_void, *mut c_void, *const c_char, *const c_char) -> ucs_status_t;
    fn config_parser_set_value = c"ucs_config_parser_set_value":
        unsafe extern "C" fn(*mut c_void, *mut c_void, *const c_char, *const c_char, *const c_char)
                             -> ucs_status_t;
    // Up to 1.18: (stream, title, opts, fields, table_prefix, prefix, flags).
    fn config_parser_print_opts_v1_13 = c"ucs_config_parser_print_opts":
        unsafe extern "C" fn(*mut libc::FILE, *const c_char, *const c_void, *mut c_void, *const c_char,
                             *const c_char, c_int);

    /// The `doc` member of every plain parser (1.17+).
    fn config_doc_nop = c"ucs_config_doc_nop": Doc;
    /// The key-value parser (1.17+; its arg is a
    /// `ucs_config_key_value_param_t`).
    fn config_sscanf_key_value = c"ucs_config_sscanf_key_value": Read;
    fn config_sprintf_key_value = c"ucs_config_sprintf_key_value": Write;
    fn config_clone_key_value = c"ucs_config_clone_key_value": Clone;
    fn config_release_key_value = c"ucs_config_release_key_value": Release;
    fn config_help_key_value = c"ucs_config_help_key_value": Help;
    fn config_doc_key_value = c"ucs_config_doc_key_value": Doc;
    /// An allow or deny list of names (1.18+).
    fn config_sscanf_allow_list = c"ucs_config_sscanf_allow_list": Read;
    fn config_sprintf_allow_list = c"ucs_config_sprintf_allow_list": Write;
    fn config_clone_allow_list = c"ucs_config_clone_allow_list": Clone;
    fn config_release_allow_list = c"ucs_config_release_allow_list": Release;
    fn config_help_allow_list = c"ucs_config_help_allow_list": Help;

    // memory/rcache.h: 1.17 moved the alignment from the cache to each lookup.
    fn rcache_get_v1_13 = c"ucs_rcache_get":
        unsafe extern "C" fn(*mut ucs_rcache_t, *mut c_void, size_t, c_int, *mut c_void,
                             *mut *mut ucs_rcache_region_t) -> ucs_status_t;
    fn rcache_get = c"ucs_rcache_get":
        unsafe extern "C" fn(*mut ucs_rcache_t, *mut c_void, size_t, size_t, c_int, *mut c_void,
                             *mut *mut ucs_rcache_region_t) -> ucs_status_t;

    /// libucs's estimate of the memcpy bandwidth (up to 1.17).
    fn cpu_get_memcpy_bw = c"ucs_cpu_get_memcpy_bw": unsafe extern "C" fn() -> f64;

    // sys/topo/base/topo.h, sys/sock.h (1.16+).
    fn netif_get_lowest_device_path = c"ucs_netif_get_lowest_device_path":
        unsafe extern "C" fn(*const c_char, *mut c_char, size_t) -> ucs_status_t;
    fn topo_resolve_sysfs_path = c"ucs_topo_resolve_sysfs_path":
        unsafe extern "C" fn(*const c_char, *mut c_char) -> *const c_char;
    fn topo_get_sysfs_dev = c"ucs_topo_get_sysfs_dev":
        unsafe extern "C" fn(*const c_char, *const c_char, c_uint) -> ucs_sys_device_t;
    fn topo_get_pci_bw = c"ucs_topo_get_pci_bw": unsafe extern "C" fn(*const c_char, *const c_char) -> f64;
}

optional_tables! {
    /// Names of the NUMA policies, NULL-terminated (up to 1.14).
    table numa_policy_names = c"ucs_numa_policy_names";
    /// Names of the memory types, NULL-terminated.
    table memory_type_names = c"ucs_memory_type_names";
}
