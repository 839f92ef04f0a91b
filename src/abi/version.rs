//! Version numbers of the UCT API (`uct/api/version.h`). Every served
//! release has its own; the library reports the running one
//! (`crate::ucs::release`), so nothing here is fixed at build time. The C
//! header spells each release's numbers out (cbindgen.toml,
//! `after_includes`).

use super::release::Release;
use ::core::ffi::c_long;

/// Bit position of the minor number inside an API version word.
pub const UCT_MINOR_BIT: u64 = 16;
/// Bit position of the major number inside an API version word.
pub const UCT_MAJOR_BIT: u64 = 24;

/// Build an API version word from a major and a minor number.
#[inline]
pub const fn UCT_VERSION(major: c_long, minor: c_long) -> c_long {
    (major << UCT_MAJOR_BIT) | (minor << UCT_MINOR_BIT)
}

/// The API version word of a release (`UCT_API` of its headers).
pub const fn uct_api(release: Release) -> c_long {
    UCT_VERSION(1, release.minor as c_long)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_words() {
        assert_eq!(uct_api(Release::new(13, 1)), 0x010d0000);
        assert_eq!(uct_api(Release::new(18, 1)), 0x01120000);
    }
}
