//! Which UCX release this process runs, found once when the library loads.
//!
//! The release is the one of the libucs (and libucp, when present) we are
//! loaded with. In order:
//! 1. `UCT_RS_UCX_RELEASE=1.N[.P]` in the environment, for installs whose
//!    libraries cannot be told apart (a release not in our table is an
//!    error, not a guess);
//! 2. libucp's own `ucp_get_version`, when libucp is in the process (it is
//!    mapped before our constructor runs whenever it is what needs us);
//! 3. libucs's exports: the newest release whose marker function (a
//!    function libucs gained in that release, `ucx-releases.txt`) libucs
//!    exports.
//!
//! A release older or newer than the table is refused: [`current`] then
//! answers `None`, the library logs why once, and every entry point that
//! needs a release fails with `UCS_ERR_UNSUPPORTED` rather than guess
//! layouts.

use crate::abi::release::{Release, KNOWN};
use libc::{c_uint, c_void};
use once_cell::sync::OnceCell;
use std::ffi::CStr;

/// The environment variable that names the release outright.
pub const OVERRIDE_VAR: &str = "UCT_RS_UCX_RELEASE";

/// How the release was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    Override,
    Libucp,
    Libucs,
}

/// The outcome of detection: the release, or why there is none.
#[derive(Clone, Debug)]
pub struct Detected {
    pub release: Result<Release, String>,
    pub source: Source,
}

static DETECTED: OnceCell<Detected> = OnceCell::new();

/// The detection result (detecting on first use).
pub fn detected() -> &'static Detected {
    DETECTED.get_or_init(detect)
}

/// The release this process runs, or None when it is not one we serve.
#[inline]
pub fn current() -> Option<Release> {
    detected().release.as_ref().ok().copied()
}

/// Like [`current`], for code that only runs once a release was accepted
/// (objects exist only then): the oldest release stands in otherwise.
#[inline]
pub fn running() -> Release {
    current().unwrap_or_else(Release::oldest)
}

fn served(release: Release, how: &str) -> Result<Release, String> {
    match release.info() {
        Some(_) => Ok(release),
        None => Err(format!(
            "UCX {release} ({how}) is not a release this libuct serves ({} to {})",
            Release::oldest(),
            Release::newest()
        )),
    }
}

fn detect() -> Detected {
    if let Ok(text) = std::env::var(OVERRIDE_VAR) {
        let release = match Release::parse(&text) {
            Some(r) => served(r, &format!("{OVERRIDE_VAR}={text}")),
            None => Err(format!("{OVERRIDE_VAR}='{text}' is not a UCX release (1.N or 1.N.P)")),
        };
        return Detected { release, source: Source::Override };
    }
    if let Some(r) = libucp_version() {
        return Detected { release: served(r, "libucp's version"), source: Source::Libucp };
    }
    Detected { release: Ok(from_libucs_exports()), source: Source::Libucs }
}

/// A handle of an already loaded library, by its SONAME; never loads one.
/// The handle is kept, not closed: it counts one more user of a library
/// that is loaded for as long as we are (and closing handles while the
/// loader runs our constructor is not safe).
#[derive(Clone, Copy)]
struct Loaded(*mut c_void);

impl Loaded {
    fn find(soname: &CStr) -> Option<Loaded> {
        // SAFETY: RTLD_NOLOAD only looks the name up among the objects
        // already mapped (matching their SONAME too); nothing is loaded and
        // no constructor runs.
        let h = unsafe { libc::dlopen(soname.as_ptr(), libc::RTLD_LAZY | libc::RTLD_NOLOAD) };
        (!h.is_null()).then_some(Loaded(h))
    }

    /// The process's libucs (looked up once).
    fn libucs() -> Option<Loaded> {
        static UCS: OnceCell<usize> = OnceCell::new();
        let h = *UCS.get_or_init(|| Loaded::find(c"libucs.so.0").map_or(0, |l| l.0 as usize));
        (h != 0).then_some(Loaded(h as *mut c_void))
    }

    fn symbol(&self, name: &CStr) -> *mut c_void {
        // SAFETY: the handle is a live dlopen handle; dlsym only reads the
        // object's symbol tables.
        unsafe { libc::dlsym(self.0, name.as_ptr()) }
    }
}

/// libucp's `ucp_get_version(&major, &minor, &release)`, when libucp is
/// loaded. The function only stores three constants, so calling it before
/// libucp's own constructors have run is fine.
fn libucp_version() -> Option<Release> {
    let ucp = Loaded::find(c"libucp.so.0")?;
    let f = ucp.symbol(c"ucp_get_version");
    if f.is_null() {
        return None;
    }
    type GetVersion = unsafe extern "C" fn(*mut c_uint, *mut c_uint, *mut c_uint);
    // SAFETY: ucp_get_version has had this signature in every release.
    let f: GetVersion = unsafe { std::mem::transmute::<*mut c_void, GetVersion>(f) };
    let (mut major, mut minor, mut patch) = (0, 0, 0);
    // SAFETY: three valid out-pointers.
    unsafe { f(&mut major, &mut minor, &mut patch) };
    if major != 1 {
        return Some(Release::new(u8::MAX, 0));
    }
    Some(Release::new(minor.min(u8::MAX as c_uint) as u8, patch.min(u8::MAX as c_uint) as u8))
}

/// The newest release whose marker the process's libucs exports.
fn from_libucs_exports() -> Release {
    let ucs = Loaded::libucs();
    let has = |name: &CStr| match &ucs {
        Some(l) => !l.symbol(name).is_null(),
        None => {
            // libucs not found by SONAME (statically linked or renamed):
            // look in the global scope.
            // SAFETY: dlsym with RTLD_DEFAULT only reads symbol tables.
            !unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) }.is_null()
        }
    };
    // A series without a marker is told apart only by libucp's version.
    KNOWN
        .iter()
        .rev()
        .find(|r| r.marker.is_some_and(has))
        .map_or_else(Release::oldest, |r| r.release)
}

/// A function of the process's libucs that not every served release has,
/// looked up by name (None when this libucs lacks it).
pub fn optional_symbol(name: &CStr) -> Option<*mut c_void> {
    let p = match Loaded::libucs() {
        Some(l) => l.symbol(name),
        // SAFETY: dlsym with RTLD_DEFAULT only reads symbol tables.
        None => unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) },
    };
    (!p.is_null()).then_some(p)
}

/// For log lines: "UCX 1.18.1 (from libucp)".
pub fn describe() -> String {
    let d = detected();
    let how = match d.source {
        Source::Override => OVERRIDE_VAR,
        Source::Libucp => "libucp's version",
        Source::Libucs => "libucs's exports",
    };
    match &d.release {
        Ok(r) => format!("UCX {r} (from {how})"),
        Err(e) => e.clone(),
    }
}
