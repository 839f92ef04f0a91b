//! Every exported `uct_*` symbol. Each export is written with [`entry!`],
//! which makes it `#[no_mangle] extern "C"`, runs the body under
//! `catch_unwind` (a panic becomes a logged error status, never an unwind
//! into C), and gives the body the function's name for log lines. Bodies
//! only check arguments, convert, and call into `core`.

use crate::abi::*;
use std::ffi::{c_char, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};

pub mod cm;
pub mod component;
pub mod config;
pub mod data;
pub mod ep;
pub mod iface;
pub mod load;
pub mod md;
pub mod mem;
pub mod worker;

/// The value an export returns when its body failed unexpectedly.
pub trait Failure {
    fn failure() -> Self;
}
impl Failure for ucs_status_t {
    fn failure() -> Self {
        UCS_ERR_IO_ERROR
    }
}
impl Failure for i32 {
    fn failure() -> Self {
        0
    }
}
impl Failure for isize {
    fn failure() -> Self {
        UCS_ERR_IO_ERROR as isize
    }
}
impl Failure for () {
    fn failure() -> Self {}
}

/// Run an export's body; a panic is logged and turned into a failure value.
#[inline(always)]
pub fn run<R: Failure>(name: &'static str, body: impl FnOnce() -> R) -> R {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(r) => r,
        Err(_) => {
            crate::error!("{}: internal error", name);
            R::failure()
        }
    }
}

/// Define an exported function.
macro_rules! entry {
    ($(#[$m:meta])* fn $name:ident($($a:ident : $t:ty),* $(,)?) -> $ret:ty $body:block) => {
        $(#[$m])*
        ///
        /// # Safety
        /// Called from C with the arguments UCT's API documents for this
        /// function (the body checks what the C original checks, and more).
        #[no_mangle]
        pub unsafe extern "C" fn $name($($a: $t),*) -> $ret {
            #[allow(unused)]
            const FN: &str = stringify!($name);
            $crate::ffi::run(FN, move || -> $ret { $body })
        }
    };
    ($(#[$m:meta])* fn $name:ident($($a:ident : $t:ty),* $(,)?) $body:block) => {
        $(#[$m])*
        ///
        /// # Safety
        /// Called from C with the arguments UCT's API documents for this
        /// function (the body checks what the C original checks, and more).
        #[no_mangle]
        pub unsafe extern "C" fn $name($($a: $t),*) {
            #[allow(unused)]
            const FN: &str = stringify!($name);
            $crate::ffi::run(FN, move || $body)
        }
    };
}
pub(crate) use entry;

/// Return `UCS_ERR_INVALID_PARAM` (with a log line) when a pointer is NULL.
macro_rules! need {
    ($p:expr, $what:expr) => {
        if $p.is_null() {
            crate::error!("{}: {} must not be NULL", FN, $what);
            return UCS_ERR_INVALID_PARAM;
        }
    };
}
pub(crate) use need;

/// The component behind a handle, or return `UCS_ERR_INVALID_PARAM` with a
/// log line when the handle is not one of ours.
macro_rules! component_or_fail {
    ($h:expr) => {
        match crate::core::component::find(crate::transports::COMPONENTS, $h) {
            Some(c) => c,
            None => {
                crate::error!("{}: invalid component handle {:p}", FN, $h);
                return UCS_ERR_INVALID_PARAM;
            }
        }
    };
}
pub(crate) use component_or_fail;

/// Return `UCS_ERR_INVALID_PARAM` when a field mask has bits beyond `known`.
macro_rules! known_fields {
    ($mask:expr, $known:expr, $what:expr) => {
        if ($mask as u64) & !($known as u64) != 0 {
            crate::error!("{}: {} field_mask {:#x} has unknown bits {:#x}", FN, $what, $mask as u64,
                          ($mask as u64) & !($known as u64));
            return UCS_ERR_INVALID_PARAM;
        }
    };
}
pub(crate) use known_fields;

/// A C string argument as `&str` (None for NULL or non-UTF-8).
///
/// # Safety
/// `p` must be null or a NUL-terminated string.
pub unsafe fn opt_str<'a>(p: *const c_char) -> Option<&'a str> {
    if p.is_null() {
        None
    } else {
        // SAFETY: see the function contract.
        unsafe { CStr::from_ptr(p) }.to_str().ok()
    }
}

/// A fixed-size C char array as `&str` (up to the first NUL).
pub fn array_str(a: &[c_char]) -> String {
    let bytes: Vec<u8> = a.iter().take_while(|&&c| c != 0).map(|&c| c as u8).collect();
    String::from_utf8_lossy(&bytes).into_owned()
}
