//! The UCX releases the library serves, as data.
//!
//! One build serves every release listed in `ucx-releases.txt` (at the root
//! of the source tree; build.rs turns its rows into [`KNOWN`]). Which one a
//! process runs is found when the library loads (`crate::ucs::release`),
//! and every part of the library that differs between releases asks it
//! through [`Release::since`]: "does the running release have what 1.N
//! introduced?".

use ::core::ffi::CStr;
use ::core::fmt;

/// A UCX release: 1.`minor`.`patch` (every served release has major 1).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Release {
    pub minor: u8,
    pub patch: u8,
}

impl Release {
    pub const fn new(minor: u8, patch: u8) -> Release {
        Release { minor, patch }
    }

    /// Whether this release has what release 1.`minor` introduced.
    #[inline]
    pub const fn since(self, minor: u8) -> bool {
        self.minor >= minor
    }

    /// The row of [`KNOWN`] of this release's series, if it is served.
    pub fn info(self) -> Option<&'static ReleaseInfo> {
        KNOWN.iter().find(|r| r.release.minor == self.minor)
    }

    /// The oldest and the newest release served.
    pub fn oldest() -> Release {
        KNOWN[0].release
    }
    pub fn newest() -> Release {
        KNOWN[KNOWN.len() - 1].release
    }

    /// Parse "1.N" or "1.N.P" (P defaults to the reference release's patch
    /// when the series is known, else 0).
    pub fn parse(text: &str) -> Option<Release> {
        let mut parts = text.trim().split('.');
        let major: u32 = parts.next()?.parse().ok()?;
        let minor: u8 = parts.next()?.parse().ok()?;
        let patch: Option<u8> = match parts.next() {
            Some(p) => Some(p.parse().ok()?),
            None => None,
        };
        if major != 1 || parts.next().is_some() {
            return None;
        }
        let dflt = Release::new(minor, 0).info().map_or(0, |i| i.release.patch);
        Some(Release::new(minor, patch.unwrap_or(dflt)))
    }
}

impl fmt::Display for Release {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "1.{}.{}", self.minor, self.patch)
    }
}

impl fmt::Debug for Release {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// One served release series.
#[derive(Clone, Copy, Debug)]
pub struct ReleaseInfo {
    /// The reference release of the series (the one the tests use).
    pub release: Release,
    /// A function libucs exports from this series on, and not before.
    pub marker: Option<&'static CStr>,
}

include!(concat!(env!("OUT_DIR"), "/releases.rs"));

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_ordered_and_starts_at_1_13() {
        assert_eq!(Release::oldest().minor, 13);
        assert!(KNOWN.windows(2).all(|w| w[0].release < w[1].release));
        assert_eq!(KNOWN[0].marker, None);
    }

    #[test]
    fn parses_series_and_releases() {
        assert_eq!(Release::parse("1.18.1"), Some(Release::new(18, 1)));
        assert_eq!(Release::parse("1.13"), Some(Release::new(13, 1)));
        assert_eq!(Release::parse("1.99"), Some(Release::new(99, 0)));
        assert_eq!(Release::parse("2.0"), None);
        assert_eq!(Release::parse("1.x"), None);
        assert_eq!(Release::parse("1.18.1.2"), None);
        assert!(Release::new(18, 1).since(16) && !Release::new(18, 1).since(19));
        assert_eq!(Release::new(20, 1).to_string(), "1.20.1");
    }
}
