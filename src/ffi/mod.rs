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
pub mod since_1_14;
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

/// Return `$ret` (with a log line) when the running release's API does not
/// have this export: it came with release 1.`$minor` (its libucp never
/// calls it; another caller gets a clear answer).
macro_rules! since_release {
    ($minor:expr, $ret:expr) => {
        let release = crate::ucs::release::running();
        if !release.since($minor) {
            crate::error!("{}: not in the API of UCX {} (new in 1.{})", FN, release, $minor);
            return $ret;
        }
    };
}
pub(crate) use since_release;

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

/// The object behind a handle, or `$ret` with a log line saying what the
/// pointer is instead (NULL, released, another kind of object, unknown):
/// `$lookup` is a registry-backed `from_handle` that reads nothing through
/// a pointer that is not a live object of `$kind`.
macro_rules! live_or {
    ($lookup:expr, $h:expr, $kind:expr, $what:expr, $ret:expr) => {
        match $lookup {
            Some(x) => x,
            None => {
                crate::error!("{}: {} {:p} {}", FN, $what, $h, crate::core::registry::why_not($h, $kind));
                return $ret;
            }
        }
    };
    // for functions that return nothing
    ($lookup:expr, $h:expr, $kind:expr, $what:expr) => {
        match $lookup {
            Some(x) => x,
            None => {
                crate::error!("{}: {} {:p} {}", FN, $what, $h, crate::core::registry::why_not($h, $kind));
                return;
            }
        }
    };
}
pub(crate) use live_or;

/// The live md behind a handle, or `UCS_ERR_INVALID_PARAM` with a log line.
macro_rules! md_or_fail {
    ($md:expr) => {
        crate::ffi::md_or_fail!($md, UCS_ERR_INVALID_PARAM)
    };
    ($md:expr, $ret:expr) => {
        // SAFETY: looked up in the registry; the caller keeps the md open
        // during the call.
        crate::ffi::live_or!(unsafe { crate::core::md::MdObj::from_handle($md) }, $md,
                             crate::core::registry::Kind::Md, "md", $ret)
    };
}
pub(crate) use md_or_fail;

/// The live worker behind a handle, or `UCS_ERR_INVALID_PARAM` with a log
/// line.
macro_rules! worker_or_fail {
    ($w:expr) => {
        crate::ffi::worker_or_fail!($w, UCS_ERR_INVALID_PARAM)
    };
    ($w:expr, ()) => {
        // SAFETY: looked up in the registry; the caller keeps the worker
        // alive during the call.
        crate::ffi::live_or!(unsafe { crate::core::worker::WorkerObj::from_handle($w) }, $w,
                             crate::core::registry::Kind::Worker, "worker")
    };
    ($w:expr, $ret:expr) => {
        // SAFETY: looked up in the registry; the caller keeps the worker
        // alive during the call.
        crate::ffi::live_or!(unsafe { crate::core::worker::WorkerObj::from_handle($w) }, $w,
                             crate::core::registry::Kind::Worker, "worker", $ret)
    };
}
pub(crate) use worker_or_fail;

/// The header of a live interface, or `$ret` (default
/// `UCS_ERR_INVALID_PARAM`) with a log line.
macro_rules! iface_or_fail {
    ($iface:expr) => {
        crate::ffi::iface_or_fail!($iface, UCS_ERR_INVALID_PARAM)
    };
    ($iface:expr, $ret:expr) => {
        // SAFETY: looked up in the registry; the caller keeps the interface
        // open during the call.
        crate::ffi::live_or!(unsafe { crate::core::iface::IfaceHeader::from_handle($iface) }, $iface,
                             crate::core::registry::Kind::Iface, "iface", $ret)
    };
}
pub(crate) use iface_or_fail;

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
