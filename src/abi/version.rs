//! Version numbers of the UCT API we implement (`uct/api/version.h` of the
//! release the build serves: 1.13.1 by default, 1.18.1 with the `ucx-1-18`
//! feature). The numbers come from build.rs (`UCT_RS_UCX_RELEASE`), so a
//! new release needs no edit here. The C header spells them out per release
//! (cbindgen.toml, `after_includes`).

use ::core::ffi::{c_long, CStr};

/// The `index`-th dot-separated decimal number of `text` (const context).
const fn release_part(text: &str, index: usize) -> u32 {
    let b = text.as_bytes();
    let mut i = 0;
    let mut part = 0;
    let mut value = 0u32;
    while i < b.len() {
        let c = b[i];
        if c == b'.' {
            if part == index {
                return value;
            }
            part += 1;
            value = 0;
        } else if c.is_ascii_digit() {
            value = value * 10 + (c - b'0') as u32;
        } else {
            break;
        }
        i += 1;
    }
    assert!(part == index, "UCT_RS_UCX_RELEASE has too few parts");
    value
}

/// cbindgen:ignore
pub const UCT_VERNO_MAJOR: u32 = release_part(env!("UCT_RS_UCX_RELEASE"), 0);
/// cbindgen:ignore
pub const UCT_VERNO_MINOR: u32 = release_part(env!("UCT_RS_UCX_RELEASE"), 1);
/// cbindgen:ignore
pub const UCT_VERNO_PATCH: u32 = release_part(env!("UCT_RS_UCX_RELEASE"), 2);
/// Version suffix (empty for these releases).
/// cbindgen:ignore
pub const UCT_VERNO_EXTRA: &CStr = c"";
/// Full version string ("1.13.1" or "1.18.1").
/// cbindgen:ignore
pub const UCT_VERNO_STRING: &CStr =
    match CStr::from_bytes_with_nul(concat!(env!("UCT_RS_UCX_RELEASE"), "\0").as_bytes()) {
        Ok(s) => s,
        Err(_) => panic!("UCT_RS_UCX_RELEASE contains a NUL byte"),
    };
/// Source-control revision recorded by the reference build (Debian's
/// 1.13.1 package records none).
/// cbindgen:ignore
#[cfg(not(ucx_since_1_14))]
pub const UCT_SCM_VERSION: &CStr = c"0000000";
/// Source-control revision recorded by the reference build (the 1.18.1
/// release tag).
/// cbindgen:ignore
#[cfg(ucx_since_1_14)]
pub const UCT_SCM_VERSION: &CStr = c"d9aa565";
/// Source-control branch recorded by the reference build.
/// cbindgen:ignore
#[cfg(not(ucx_since_1_14))]
pub const UCT_SCM_BRANCH: &CStr = c"<unknown>";
/// Source-control branch recorded by the reference build (none for a
/// release tarball).
/// cbindgen:ignore
#[cfg(ucx_since_1_14)]
pub const UCT_SCM_BRANCH: &CStr = c"";

/// Bit position of the minor number inside an API version word.
pub const UCT_MINOR_BIT: u64 = 16;
/// Bit position of the major number inside an API version word.
pub const UCT_MAJOR_BIT: u64 = 24;
/// API version word of this release (1.13: 0x010d0000, 1.18: 0x01120000).
/// cbindgen:ignore
pub const UCT_API: c_long =
    ((UCT_VERNO_MAJOR as c_long) << UCT_MAJOR_BIT) | ((UCT_VERNO_MINOR as c_long) << UCT_MINOR_BIT);

/// Build an API version word from a major and a minor number.
#[inline]
pub const fn UCT_VERSION(major: c_long, minor: c_long) -> c_long {
    (major << UCT_MAJOR_BIT) | (minor << UCT_MINOR_BIT)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_agree_with_the_release_string() {
        let text = format!("{UCT_VERNO_MAJOR}.{UCT_VERNO_MINOR}.{UCT_VERNO_PATCH}");
        assert_eq!(UCT_VERNO_STRING.to_str().unwrap(), text);
        assert_eq!(text, env!("UCT_RS_UCX_RELEASE"));
        assert!(env!("UCT_RS_UCX_RELEASE").starts_with(env!("UCT_RS_UCX_ABI")));
        assert_eq!(UCT_API, UCT_VERSION(UCT_VERNO_MAJOR.into(), UCT_VERNO_MINOR.into()));
    }
}
