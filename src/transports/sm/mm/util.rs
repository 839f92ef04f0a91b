//! Small helpers both mappers (posix and sysv) use: the huge-page mode
//! setting, the page and huge-page sizes, rounding, and errno text.

use crate::abi::*;
use crate::sys::Errno;
use libc::c_int;
use std::ffi::CStr;
use std::sync::OnceLock;

/// Help text of the `HUGETLB_MODE` field shared by both mm memory domains.
pub(crate) const HUGETLB_MODE_DOC: &CStr = c"Whether shared-memory segments use huge pages:\n \
    y   - huge pages only; allocation fails without them.\n \
    n   - regular pages only.\n \
    try - huge pages when the system gives them, regular pages otherwise.\n";

/// `UCX_<TL>_HUGETLB_MODE`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HugetlbMode {
    /// Regular pages only.
    No,
    /// Huge pages only.
    Yes,
    /// Huge pages if possible, regular pages otherwise.
    Try,
}

impl HugetlbMode {
    pub fn from_config(value: c_int) -> Result<HugetlbMode, ucs_status_t> {
        match u32::try_from(value) {
            Ok(UCS_NO) => Ok(HugetlbMode::No),
            Ok(UCS_YES) => Ok(HugetlbMode::Yes),
            // The ternary reader never produces "auto"; treat it as "try".
            Ok(UCS_TRY) | Ok(UCS_AUTO) => Ok(HugetlbMode::Try),
            _ => {
                crate::error!("invalid huge-page mode {value}");
                Err(UCS_ERR_INVALID_PARAM)
            }
        }
    }
}

pub(crate) fn page_size() -> usize {
    static PAGE: OnceLock<usize> = OnceLock::new();
    *PAGE.get_or_init(crate::sys::page_size)
}

/// The default huge page size ("Hugepagesize" in /proc/meminfo), if any.
pub(crate) fn huge_page_size() -> Option<usize> {
    static HUGE: OnceLock<Option<usize>> = OnceLock::new();
    *HUGE.get_or_init(|| {
        let info = std::fs::read_to_string("/proc/meminfo").ok()?;
        let line = info.lines().find(|l| l.starts_with("Hugepagesize:"))?;
        let mut words = line.split_whitespace().skip(1);
        let value: usize = words.next()?.parse().ok()?;
        let unit = match words.next() {
            Some("kB") | Some("KB") => 1024,
            Some("mB") | Some("MB") => 1024 * 1024,
            _ => 1,
        };
        value.checked_mul(unit).filter(|&v| v > 0)
    })
}

/// `value` rounded up to a multiple of `align` (a power of two); `None` on overflow.
pub(crate) fn align_up(value: usize, align: usize) -> Option<usize> {
    debug_assert!(align.is_power_of_two());
    Some(value.checked_add(align - 1)? & !(align - 1))
}

/// The system's text for a failed call's errno, as the logs print it.
pub(crate) fn os_error_text(err: Errno) -> String {
    crate::sys::errno_str(err as i32)
}
