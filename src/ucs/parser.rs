//! libucs's configuration parser, through one interface for every UCX
//! release. What changed:
//!
//! * 1.15: `ucs_config_parser_fill_opts` takes the table's registration
//!   entry (name, prefix, table, size) instead of the table and prefix, and
//!   marks the entry as loaded; libucs's "unused variable" warning then
//!   considers only loaded tables. We pass the entry we published for the
//!   table (see `core::config_list`), so the accounting is the C original's.
//! * 1.17: every value parser gained a `doc` member (libucs's
//!   `ucs_config_doc_nop` for all plain parsers), and
//!   `ucs_config_parser_set_value` takes the table's prefix.

use super::optional as opt;
use super::release;
use crate::abi::*;
use libc::{c_char, c_int, c_void};

/// Function types of a value parser (`ucs_config_parser_t` without `doc`).
pub type ReadFn = unsafe extern "C" fn(*const c_char, *mut c_void, *const c_void) -> c_int;
pub type WriteFn = unsafe extern "C" fn(*mut c_char, usize, *const c_void, *const c_void) -> c_int;
pub type CloneFn = unsafe extern "C" fn(*const c_void, *mut c_void, *const c_void) -> ucs_status_t;
pub type ReleaseFn = unsafe extern "C" fn(*mut c_void, *const c_void);
pub type HelpFn = unsafe extern "C" fn(*mut c_char, usize, *const c_void);

/// A value parser with the release's `doc` member filled in.
pub fn value_parser(read: Option<ReadFn>, write: Option<WriteFn>, clone: CloneFn, release: ReleaseFn,
                    help: HelpFn, arg: *const c_void) -> ucs_config_parser_t {
    ucs_config_parser_t {
        read,
        write,
        clone: Some(clone),
        release: Some(release),
        help: Some(help),
        // Only releases with the member have (and read) libucs's no-op.
        doc: opt::config_doc_nop(),
        arg,
    }
}

/// The options `opts` parsed from `table` (prefix `table_prefix`), printed by
/// libucs as `ucx_info -c` prints them (`UCX_<prefix>NAME=value` lines).
///
/// # Safety
/// `opts` is a live options block parsed from `table`.
#[cfg(test)]
pub unsafe fn print_opts(opts: *const c_void, table: *mut ucs_config_field_t, table_prefix: &std::ffi::CStr) -> String {
    let mut buf: *mut c_char = std::ptr::null_mut();
    let mut size = 0usize;
    // SAFETY: open_memstream/fclose manage `buf`, freed after the copy;
    // `opts` was parsed from `table` (the function's contract).
    unsafe {
        let f = libc::open_memstream(&mut buf, &mut size);
        assert!(!f.is_null());
        let print = opt::config_parser_print_opts_v1_13().expect("ucs_config_parser_print_opts");
        print(f, c"test".as_ptr(), opts, table.cast(), table_prefix.as_ptr(), c"UCX_".as_ptr(), 1 /* CONFIG */);
        libc::fclose(f);
        let text = std::ffi::CStr::from_ptr(buf).to_string_lossy().into_owned();
        libc::free(buf as *mut c_void);
        text
    }
}

/// A registration entry for a table (not linked into any list).
pub fn entry(name: *const c_char, prefix: *const c_char, table: *mut ucs_config_field_t,
             size: usize) -> ucs_config_global_list_entry_t {
    ucs_config_global_list_entry_t {
        name,
        prefix,
        table,
        size,
        list: ucs_list_link_t { prev: std::ptr::null_mut(), next: std::ptr::null_mut() },
        flags: 0,
    }
}

/// Fill `opts` from defaults, config files and the environment
/// (`env_prefix` is the full one, e.g. `UCX_`).
///
/// # Safety
/// `opts` is a zeroed block of `entry.size` bytes; `entry` describes a live
/// table; `env_prefix` is a C string.
pub unsafe fn fill_opts(opts: *mut c_void, entry: *mut ucs_config_global_list_entry_t,
                        env_prefix: *const c_char) -> ucs_status_t {
    if release::running().since(15) {
        let Some(f) = opt::config_parser_fill_opts() else { return UCS_ERR_UNSUPPORTED };
        // SAFETY: see the function contract.
        unsafe { f(opts, entry, env_prefix, 0) }
    } else {
        let Some(f) = opt::config_parser_fill_opts_v1_13() else { return UCS_ERR_UNSUPPORTED };
        // SAFETY: see the function contract.
        unsafe { f(opts, (*entry).table.cast(), env_prefix, (*entry).prefix, 0) }
    }
}

/// Set one value by name (with or without the table's prefix).
///
/// # Safety
/// `opts` was filled from `table`; the strings are C strings (`prefix` may
/// be NULL).
pub unsafe fn set_value(opts: *mut c_void, table: *mut ucs_config_field_t, prefix: *const c_char,
                        name: *const c_char, value: *const c_char) -> ucs_status_t {
    if release::running().since(17) {
        let Some(f) = opt::config_parser_set_value() else { return UCS_ERR_UNSUPPORTED };
        // SAFETY: see the function contract.
        unsafe { f(opts, table.cast(), prefix, name, value) }
    } else {
        let Some(f) = opt::config_parser_set_value_v1_13() else { return UCS_ERR_UNSUPPORTED };
        // SAFETY: see the function contract.
        unsafe { f(opts, table.cast(), name, value) }
    }
}
