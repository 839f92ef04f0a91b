//! Logging through UCX's own logger, so our lines look like UCX's and obey
//! `UCX_LOG_LEVEL`, `UCX_LOG_FILE` and friends.

use crate::ucs;
use std::ffi::CString;

pub const LEVEL_FATAL: u32 = 0;
pub const LEVEL_ERROR: u32 = 1;
pub const LEVEL_WARN: u32 = 2;
pub const LEVEL_DIAG: u32 = 3;
pub const LEVEL_INFO: u32 = 4;
pub const LEVEL_DEBUG: u32 = 5;
pub const LEVEL_TRACE: u32 = 6;

/// True when a message of `level` would be printed.
#[inline]
pub fn enabled(level: u32) -> bool {
    // SAFETY: `ucs_global_opts` is a plain global of libucs whose first field
    // is the log component configuration; reading the level is a plain load
    // of a word that libucs writes once during its initialisation.
    let current = unsafe { std::ptr::addr_of!(ucs::ucs_global_opts.log_level).read_volatile() };
    level <= current
}

/// Hand one formatted line to libucs's logger. `file` must be a static,
/// NUL-terminated string: libucs keeps the pointer in its per-file filter.
pub fn emit(level: u32, file: &'static str, line: u32, msg: std::fmt::Arguments<'_>) {
    if !enabled(level) {
        return;
    }
    let text = CString::new(msg.to_string().replace('\0', "\\0")).unwrap_or_default();
    let file = std::ffi::CStr::from_bytes_with_nul(file.as_bytes()).unwrap_or(c"uct");
    // SAFETY: every pointer is a valid NUL-terminated string that outlives
    // the call, the format is the constant "%s" consuming exactly one string
    // argument, and the component configuration is libucs's global one.
    unsafe {
        ucs::ucs_log_dispatch(
            file.as_ptr(),
            line,
            c"uct".as_ptr(),
            level,
            std::ptr::addr_of_mut!(ucs::ucs_global_opts),
            c"%s".as_ptr(),
            text.as_ptr(),
        );
    }
}

#[macro_export]
macro_rules! log_at {
    ($lvl:expr, $($arg:tt)*) => {
        if $crate::core::log::enabled($lvl) {
            $crate::core::log::emit($lvl, concat!(file!(), "\0"), line!(), format_args!($($arg)*))
        }
    };
}
#[macro_export]
macro_rules! error { ($($arg:tt)*) => { $crate::log_at!($crate::core::log::LEVEL_ERROR, $($arg)*) }; }
#[macro_export]
macro_rules! warn { ($($arg:tt)*) => { $crate::log_at!($crate::core::log::LEVEL_WARN, $($arg)*) }; }
#[macro_export]
macro_rules! diag { ($($arg:tt)*) => { $crate::log_at!($crate::core::log::LEVEL_DIAG, $($arg)*) }; }
#[macro_export]
macro_rules! debug { ($($arg:tt)*) => { $crate::log_at!($crate::core::log::LEVEL_DEBUG, $($arg)*) }; }
#[macro_export]
macro_rules! trace { ($($arg:tt)*) => { $crate::log_at!($crate::core::log::LEVEL_TRACE, $($arg)*) }; }

/// Name of a status, as UCX prints it.
pub fn status_str(status: crate::abi::ucs_status_t) -> String {
    // SAFETY: ucs_status_string returns a pointer to a static string for any
    // value (unknown codes map to a generic text).
    unsafe {
        let p = ucs::ucs_status_string(status);
        if p.is_null() {
            format!("status {status}")
        } else {
            std::ffi::CStr::from_ptr(p).to_string_lossy().into_owned()
        }
    }
}
