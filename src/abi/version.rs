//! Version numbers of the UCT API we implement (`uct/api/version.h` as
//! shipped with UCX 1.13.1).

use ::core::ffi::{c_long, CStr};

pub const UCT_VERNO_MAJOR: u32 = 1;
pub const UCT_VERNO_MINOR: u32 = 13;
pub const UCT_VERNO_PATCH: u32 = 1;
/// Version suffix (empty for this release).
/// cbindgen:ignore
pub const UCT_VERNO_EXTRA: &CStr = c"";
/// Full version string.
/// cbindgen:ignore
pub const UCT_VERNO_STRING: &CStr = c"1.13.1";
/// Source-control revision recorded by the Debian build.
/// cbindgen:ignore
pub const UCT_SCM_VERSION: &CStr = c"0000000";
/// Source-control branch recorded by the Debian build.
/// cbindgen:ignore
pub const UCT_SCM_BRANCH: &CStr = c"<unknown>";

/// Bit position of the minor number inside an API version word.
pub const UCT_MINOR_BIT: u64 = 16;
/// Bit position of the major number inside an API version word.
pub const UCT_MAJOR_BIT: u64 = 24;
/// API version word of this release: major 1, minor 13 (0x010d0000).
pub const UCT_API: c_long = ((1 as c_long) << 24) | ((13 as c_long) << 16);

/// Build an API version word from a major and a minor number.
#[inline]
pub const fn UCT_VERSION(major: c_long, minor: c_long) -> c_long {
    (major << UCT_MAJOR_BIT) | (minor << UCT_MINOR_BIT)
}
