//! The `posix` mapper: every segment is a file in a tmpfs directory
//! (`UCX_POSIX_DIR`, `/dev/shm` by default, created with `shm_open` there).
//!
//! Peers find a segment through its 64-bit `seg_id` (contract §5.1):
//! - bits 60..63 are flags: PROCFS (63), SHM_OPEN (62), HUGETLB (61), PID_NS (60);
//! - the rest identifies the file. With `UCX_POSIX_USE_PROC_LINK=y` (the
//!   default) the file is unlinked as soon as it is sized, the creator keeps
//!   its descriptor open, and the id is `pid | fd << 30`: peers open
//!   `/proc/<pid>/fd/<fd>`. Without proc links the id is the random number in
//!   the file name `ucx_shm_posix_<hex>`, and the name lives until `free`.
//!
//! The packed rkey is `{seg_id u64, owner address u64, length u64}` (packed,
//! native byte order), followed by the directory and its NUL when the file is
//! reached by path in a directory other than `/dev/shm`.

use super::mapper::{Mapper, RemoteSeg, RkeyOps, Segment};
use crate::abi::*;
use crate::core::config::{self, embed, embed_prefixed, field, parser, BaseMdConfig, Table};
use crate::ucs;
use libc::{c_char, c_int, c_void};
use once_cell::sync::Lazy;
use std::ffi::{CStr, CString};
use std::mem::offset_of;
use std::os::fd::{AsRawFd, FromRawFd, IntoRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

// ---------------------------------------------------------------------------
// Configuration: `UCX_POSIX_HUGETLB_MODE`, `UCX_POSIX_DIR`, `UCX_POSIX_USE_PROC_LINK`.

/// The parsed `posix` memory-domain options (our own layout).
#[repr(C)]
pub struct PosixMdConfig {
    pub base: BaseMdConfig,
    /// `ucs_ternary_auto_value_t`: `UCS_NO`, `UCS_YES` or `UCS_TRY`.
    pub hugetlb_mode: c_int,
    pub dir: *mut c_char,
    pub use_proc_link: c_int,
}

/// Help text of the `HUGETLB_MODE` field shared by both mm memory domains.
pub(crate) const HUGETLB_MODE_DOC: &CStr = c"Whether shared-memory segments use huge pages:\n \
    y   - huge pages only; allocation fails without them.\n \
    n   - regular pages only.\n \
    try - huge pages when the system gives them, regular pages otherwise.\n";

/// The `MM_` sub-table: the common md settings and the huge-page mode. It is
/// embedded at offset 0, so its offsets are those of `PosixMdConfig`.
static MM_MD_TABLE: Lazy<Table> = Lazy::new(|| {
    Table::new(vec![
        embed(&config::BASE_MD_TABLE, offset_of!(PosixMdConfig, base)),
        field(c"HUGETLB_MODE", c"try", HUGETLB_MODE_DOC, offset_of!(PosixMdConfig, hugetlb_mode),
              parser::ternary()),
    ])
});

/// The table of the `posix` component's md config (prefix `POSIX_`).
pub static POSIX_MD_TABLE: Lazy<Table> = Lazy::new(|| {
    Table::new(vec![
        embed_prefixed(c"MM_", &MM_MD_TABLE, 0),
        field(c"DIR", c"/dev/shm",
              c"Directory holding the backing files of the segments. With /dev/shm the files\n\
                are made with shm_open(), elsewhere with open().",
              offset_of!(PosixMdConfig, dir), parser::string()),
        field(c"USE_PROC_LINK", c"y",
              c"How peers open a segment's backing file:\n \
                y   - through the creator's /proc/<pid>/fd/<fd> link; the file is unlinked at once.\n \
                n   - through its path, which exists until the segment is freed.\n",
              offset_of!(PosixMdConfig, use_proc_link), parser::boolean()),
    ])
});

// ---------------------------------------------------------------------------
// Helpers shared with the sysv mapper.

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
    *PAGE.get_or_init(|| {
        // SAFETY: sysconf has no memory-safety preconditions.
        let v = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        if v > 0 { v as usize } else { 4096 }
    })
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

pub(crate) fn errno() -> c_int {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

pub(crate) fn os_error_text(err: c_int) -> String {
    std::io::Error::from_raw_os_error(err).to_string()
}

// ---------------------------------------------------------------------------
// Segment ids.

const FLAG_PROCFS: u64 = 1 << 63;
const FLAG_SHM_OPEN: u64 = 1 << 62;
const FLAG_HUGETLB: u64 = 1 << 61;
const FLAG_PID_NS: u64 = 1 << 60;
const FLAGS_MASK: u64 = FLAG_PROCFS | FLAG_SHM_OPEN | FLAG_HUGETLB | FLAG_PID_NS;
const MMID_MASK: u64 = !FLAGS_MASK;
/// In proc-link ids: the low 30 bits carry the pid, the next 30 the fd.
const PROCFS_PID_BITS: u32 = 30;
const PROCFS_FIELD_MASK: u64 = (1 << PROCFS_PID_BITS) - 1;

const SHM_OPEN_DIR: &[u8] = b"/dev/shm";
const FILE_PREFIX: &str = "ucx_shm_posix_";
/// `{seg_id, address, length}`, each 8 bytes, packed.
const PACKED_RKEY_SIZE: usize = 24;
const CREATE_MODE: libc::mode_t = 0o600;

fn procfs_id(pid: u64, fd: u64) -> u64 {
    pid | (fd << PROCFS_PID_BITS)
}

fn procfs_split(seg_id: u64) -> (u64, u64) {
    let mmid = seg_id & MMID_MASK;
    (mmid & PROCFS_FIELD_MASK, mmid >> PROCFS_PID_BITS)
}

/// The `shm_open` name of a segment: `/ucx_shm_posix_<hex>`.
fn shm_name(mmid: u64) -> CString {
    CString::new(format!("/{FILE_PREFIX}{mmid:x}")).expect("no NUL in a formatted name")
}

/// The path of a segment's file in `dir`.
fn file_path(dir: &[u8], mmid: u64) -> Option<CString> {
    let mut path = dir.to_vec();
    path.extend_from_slice(format!("/{FILE_PREFIX}{mmid:x}").as_bytes());
    CString::new(path).ok()
}

fn shown(path: &CStr) -> std::borrow::Cow<'_, str> {
    path.to_string_lossy()
}

/// A fresh 32-bit candidate for a segment file name.
fn random_mmid() -> u64 {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let seed = COUNTER.fetch_add(1, Ordering::Relaxed)
        ^ (std::process::id() as u64) << 32
        ^ std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
    // SAFETY: plain call into libucs, no pointers involved.
    let v = unsafe { ucs::ucs_generate_uuid(seed) };
    (v ^ (v >> 32)) & 0xffff_ffff
}

/// Open a segment file; `create` asks for a new one (`O_CREAT|O_EXCL`).
/// `Ok(None)` when the name is taken.
fn open_file(path: &CStr, shm: bool, create: bool) -> Result<Option<OwnedFd>, ucs_status_t> {
    let flags = libc::O_RDWR | libc::O_CLOEXEC | if create { libc::O_CREAT | libc::O_EXCL } else { 0 };
    // SAFETY: `path` is a NUL-terminated string that outlives the call.
    let fd = unsafe {
        if shm {
            libc::shm_open(path.as_ptr(), flags, CREATE_MODE)
        } else {
            libc::open(path.as_ptr(), flags, CREATE_MODE as libc::c_uint)
        }
    };
    if fd >= 0 {
        // SAFETY: `fd` was just returned by the kernel and is owned by nobody else.
        return Ok(Some(unsafe { OwnedFd::from_raw_fd(fd) }));
    }
    let err = errno();
    if create && err == libc::EEXIST {
        return Ok(None);
    }
    crate::error!("{}({}, flags=0x{:x}) failed: {}", if shm { "shm_open" } else { "open" }, shown(path), flags,
                  os_error_text(err));
    Err(UCS_ERR_SHMEM_SEGMENT)
}

/// Give the file `length` bytes of real backing store, so that a full tmpfs
/// shows up now (`UCS_ERR_NO_MEMORY`) rather than as SIGBUS on first touch.
fn reserve(fd: &OwnedFd, length: usize) -> Result<(), ucs_status_t> {
    let len = libc::off_t::try_from(length).map_err(|_| UCS_ERR_NO_MEMORY)?;
    loop {
        // SAFETY: `fd` is an open descriptor we own.
        let ret = unsafe { libc::posix_fallocate(fd.as_raw_fd(), 0, len) };
        match ret {
            0 => return Ok(()),
            libc::EINTR => continue,
            libc::ENOSPC | libc::EFBIG => {
                crate::error!("not enough space for a shared memory segment of {length} bytes: {}; \
                               check the free space of /dev/shm or of UCX_POSIX_DIR", os_error_text(ret));
                return Err(UCS_ERR_NO_MEMORY);
            }
            err => {
                crate::error!("failed to reserve {length} bytes for a shared memory segment: {}",
                              os_error_text(err));
                return Err(UCS_ERR_IO_ERROR);
            }
        }
    }
}

/// `mmap` a segment file: page-aligned, or huge-page aligned with `huge`
/// (never more than twice the page-aligned size). Returns the address and
/// the mapped length.
fn map_file(fd: RawFd, length: usize, at: *mut c_void, fixed: bool, huge: bool, quiet: bool)
            -> Result<(*mut c_void, usize), ucs_status_t> {
    let mut size = align_up(length, page_size()).ok_or(UCS_ERR_NO_MEMORY)?;
    let mut flags = libc::MAP_SHARED;
    if huge {
        let Some(huge_page) = huge_page_size() else {
            crate::debug!("the system has no huge pages");
            return Err(UCS_ERR_NO_MEMORY);
        };
        let huge_size = align_up(size, huge_page).ok_or(UCS_ERR_NO_MEMORY)?;
        if huge_size / 2 > size {
            return Err(UCS_ERR_EXCEEDS_LIMIT);
        }
        size = huge_size;
        flags |= libc::MAP_HUGETLB;
    }
    let hint = if fixed {
        flags |= libc::MAP_FIXED;
        at
    } else {
        std::ptr::null_mut()
    };
    // SAFETY: a shared file mapping; MAP_FIXED is only used when the caller
    // asked to place the segment at `at`, which then is theirs to replace.
    let addr = unsafe { libc::mmap(hint, size, libc::PROT_READ | libc::PROT_WRITE, flags, fd, 0) };
    if addr == libc::MAP_FAILED {
        let err = errno();
        let text = format!("shared memory mmap(addr={hint:p}, length={size}, flags={}{}, fd={fd}) failed: {}",
                           if fixed { " FIXED" } else { "" }, if huge { " HUGETLB" } else { "" },
                           os_error_text(err));
        if quiet {
            crate::debug!("{text}");
        } else {
            crate::error!("{text}");
        }
        return Err(UCS_ERR_SHMEM_SEGMENT);
    }
    Ok((addr, size))
}

fn unmap(address: *mut c_void, length: usize) -> ucs_status_t {
    // SAFETY: callers pass a mapping made by `map_file` with its length;
    // nothing of ours refers to it afterwards.
    if unsafe { libc::munmap(address, length) } != 0 {
        crate::warn!("shared memory munmap(address={address:p}, length={length}) failed: {}",
                     os_error_text(errno()));
        return UCS_ERR_SHMEM_SEGMENT;
    }
    UCS_OK
}

/// The bytes of a NUL-terminated string at the start of `bytes`, without the NUL.
fn c_prefix(bytes: &[u8]) -> Option<&[u8]> {
    bytes.iter().position(|&b| b == 0).map(|n| &bytes[..n])
}

/// Open a peer's segment file, named by `seg_id` (and `dir` when the file
/// is reached by path).
fn open_peer(seg_id: u64, dir: Option<&[u8]>) -> Result<OwnedFd, ucs_status_t> {
    let mmid = seg_id & MMID_MASK;
    let (path, shm) = if seg_id & FLAG_PROCFS != 0 {
        let (pid, fd) = procfs_split(seg_id);
        (CString::new(format!("/proc/{pid}/fd/{fd}")).expect("no NUL"), false)
    } else if seg_id & FLAG_SHM_OPEN != 0 {
        (shm_name(mmid), true)
    } else {
        let Some(path) = dir.and_then(|d| file_path(d, mmid)) else {
            crate::error!("no directory for shared memory segment 0x{seg_id:x}");
            return Err(UCS_ERR_SHMEM_SEGMENT);
        };
        (path, false)
    };
    open_file(&path, shm, false)?.ok_or(UCS_ERR_SHMEM_SEGMENT)
}

/// Map `length` bytes of a peer's segment.
fn attach_segment(seg_id: u64, length: usize, dir: Option<&[u8]>) -> Result<RemoteSeg, ucs_status_t> {
    if length == 0 {
        crate::error!("cannot attach shared memory segment 0x{seg_id:x} with length 0");
        return Err(UCS_ERR_INVALID_PARAM);
    }
    let fd = open_peer(seg_id, dir)?;
    let huge = seg_id & FLAG_HUGETLB != 0;
    if !huge {
        // A mapping past the end of the file faults on access (SIGBUS): check
        // the size now, so a stale or forged id fails here instead.
        // SAFETY: `st` is a plain output buffer for fstat on an open fd.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: see above.
        if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } != 0 {
            crate::error!("fstat of shared memory segment 0x{seg_id:x} failed: {}", os_error_text(errno()));
            return Err(UCS_ERR_SHMEM_SEGMENT);
        }
        let file_pages = align_up(usize::try_from(st.st_size).unwrap_or(0), page_size()).unwrap_or(usize::MAX);
        if align_up(length, page_size()).is_none_or(|want| want > file_pages) {
            crate::error!("shared memory segment 0x{seg_id:x} has {} bytes, {length} requested", st.st_size);
            return Err(UCS_ERR_SHMEM_SEGMENT);
        }
    }
    let (address, length) = map_file(fd.as_raw_fd(), length, std::ptr::null_mut(), false, huge, false)?;
    crate::trace!("attached posix segment 0x{seg_id:x} at {address:p} length {length}");
    Ok(RemoteSeg { address, length })
}

// ---------------------------------------------------------------------------
// The mapper.

pub struct Posix {
    /// `UCX_POSIX_DIR`, exact bytes.
    dir: CString,
    use_shm_open: bool,
    use_proc_link: bool,
    hugetlb_mode: HugetlbMode,
    pid_ns_default: bool,
    pid_ns: u64,
}

impl Posix {
    pub fn from_config(cfg: &PosixMdConfig) -> Result<Posix, ucs_status_t> {
        if cfg.dir.is_null() {
            crate::error!("posix md configuration without a directory");
            return Err(UCS_ERR_INVALID_PARAM);
        }
        // SAFETY: libucs's string parser stores a NUL-terminated heap string
        // that lives as long as the config.
        let dir = unsafe { CStr::from_ptr(cfg.dir) }.to_owned();
        let hugetlb_mode = HugetlbMode::from_config(cfg.hugetlb_mode)?;
        // SAFETY: libucs namespace queries take a plain enum value.
        let (pid_ns, pid_ns_default) = unsafe {
            (ucs::ucs_sys_get_ns(ucs::UCS_SYS_NS_TYPE_PID), ucs::ucs_sys_ns_is_default(ucs::UCS_SYS_NS_TYPE_PID) != 0)
        };
        Ok(Posix {
            use_shm_open: dir.as_bytes() == SHM_OPEN_DIR,
            dir,
            use_proc_link: cfg.use_proc_link != 0,
            hugetlb_mode,
            pid_ns_default,
            pid_ns,
        })
    }

    /// The name a freshly created file is known by (before a proc-link switch).
    fn path_of(&self, mmid: u64) -> Option<CString> {
        if self.use_shm_open { Some(shm_name(mmid)) } else { file_path(self.dir.as_bytes(), mmid) }
    }

    /// Create a new, empty segment file under a random name.
    fn create_file(&self) -> Result<(OwnedFd, u64), ucs_status_t> {
        let flag = if self.use_shm_open { FLAG_SHM_OPEN } else { 0 };
        // Collisions are rare; the bound only guards against a directory
        // that answers EEXIST for everything.
        for _ in 0..1_000_000 {
            let mmid = random_mmid();
            let Some(path) = self.path_of(mmid) else {
                crate::error!("invalid shared memory directory {}", shown(&self.dir));
                return Err(UCS_ERR_INVALID_PARAM);
            };
            if let Some(fd) = open_file(&path, self.use_shm_open, true)? {
                return Ok((fd, mmid | flag));
            }
        }
        crate::error!("no free shared memory file name in {}", shown(&self.dir));
        Err(UCS_ERR_SHMEM_SEGMENT)
    }

    /// Remove the file name of a segment reached by name.
    fn unlink(&self, seg_id: u64) -> ucs_status_t {
        let mmid = seg_id & MMID_MASK;
        let shm = seg_id & FLAG_SHM_OPEN != 0;
        let path = if shm { Some(shm_name(mmid)) } else { file_path(self.dir.as_bytes(), mmid) };
        let Some(path) = path else { return UCS_ERR_SHMEM_SEGMENT };
        // SAFETY: `path` is NUL-terminated and outlives the call.
        let ret = unsafe { if shm { libc::shm_unlink(path.as_ptr()) } else { libc::unlink(path.as_ptr()) } };
        if ret != 0 {
            crate::error!("{}({}) failed: {}", if shm { "shm_unlink" } else { "unlink" }, shown(&path),
                          os_error_text(errno()));
            return UCS_ERR_SHMEM_SEGMENT;
        }
        UCS_OK
    }

    /// Map the new file, with huge pages as `UCX_POSIX_HUGETLB_MODE` asks.
    /// Returns (address, mapped length, whether huge pages are used).
    fn map_new(&self, fd: RawFd, length: usize, at: *mut c_void, fixed: bool)
               -> Result<(*mut c_void, usize, bool), ucs_status_t> {
        if self.hugetlb_mode != HugetlbMode::No {
            let only_huge = self.hugetlb_mode == HugetlbMode::Yes;
            match map_file(fd, length, at, fixed, true, !only_huge) {
                Ok((addr, len)) => return Ok((addr, len, true)),
                Err(status) if only_huge => {
                    crate::error!("huge-page shared memory of {length} bytes is not available \
                                   (UCX_POSIX_HUGETLB_MODE=y)");
                    return Err(status);
                }
                Err(_) => {}
            }
        }
        map_file(fd, length, at, fixed, false, false).map(|(addr, len)| (addr, len, false))
    }
}

impl Mapper for Posix {
    fn max_alloc(&self) -> u64 {
        let mut st = std::mem::MaybeUninit::<libc::statvfs>::zeroed();
        // SAFETY: `dir` is NUL-terminated; `st` is a writable statvfs buffer.
        if unsafe { libc::statvfs(self.dir.as_ptr(), st.as_mut_ptr()) } != 0 {
            crate::error!("could not stat shared memory directory {}: {}", shown(&self.dir), os_error_text(errno()));
            return 0;
        }
        // SAFETY: statvfs succeeded and filled the buffer (it was zeroed anyway).
        let st = unsafe { st.assume_init() };
        st.f_bsize.saturating_mul(st.f_bavail)
    }

    fn rkey_packed_size(&self) -> usize {
        PACKED_RKEY_SIZE + self.iface_addr_extra_len()
    }

    fn alloc(&self, length: usize, address: *mut c_void, fixed: bool, name: &str) -> Result<Segment, ucs_status_t> {
        if length == 0 {
            return Err(UCS_ERR_INVALID_PARAM);
        }
        let file_len = align_up(length, page_size()).ok_or(UCS_ERR_NO_MEMORY)?;
        let (fd, named_id) = self.create_file()?;

        let undo_name = |status: ucs_status_t| {
            self.unlink(named_id);
            status
        };
        reserve(&fd, file_len).map_err(undo_name)?;

        let mut seg_id = named_id;
        if self.use_proc_link {
            let status = self.unlink(named_id);
            if status != UCS_OK {
                return Err(status);
            }
            let pid = std::process::id() as u64;
            let raw = fd.as_raw_fd() as u64;
            if pid > PROCFS_FIELD_MASK || raw > PROCFS_FIELD_MASK {
                crate::error!("pid {pid} or fd {raw} too large for a posix segment id");
                return Err(UCS_ERR_SHMEM_SEGMENT);
            }
            seg_id = procfs_id(pid, raw) | (named_id & FLAG_SHM_OPEN) | FLAG_PROCFS
                | if self.pid_ns_default { 0 } else { FLAG_PID_NS };
        }

        let (addr, mapped, huge) = match self.map_new(fd.as_raw_fd(), length, address, fixed) {
            Ok(m) => m,
            Err(status) if self.use_proc_link => return Err(status),
            Err(status) => return Err(undo_name(status)),
        };
        if huge {
            seg_id |= FLAG_HUGETLB;
        }
        if self.use_proc_link {
            // The open descriptor is the segment's name from now on: `free`
            // closes it (its number is inside `seg_id`).
            let _ = fd.into_raw_fd();
        }
        crate::debug!("allocated posix shared memory {name} at {addr:p} length {mapped} id 0x{seg_id:x}");
        Ok(Segment { seg_id, address: addr, length: mapped })
    }

    fn free(&self, seg: &Segment) -> ucs_status_t {
        let status = unmap(seg.address, seg.length);
        if status != UCS_OK {
            return status;
        }
        if seg.seg_id & FLAG_PROCFS != 0 {
            let (_, fd) = procfs_split(seg.seg_id);
            // SAFETY: `alloc` left this descriptor open for the segment and
            // nothing else owns it; the segment is going away.
            drop(unsafe { OwnedFd::from_raw_fd(fd as RawFd) });
            UCS_OK
        } else {
            self.unlink(seg.seg_id)
        }
    }

    fn iface_addr_extra(&self) -> Vec<u8> {
        if self.use_proc_link {
            if self.pid_ns_default { Vec::new() } else { self.pid_ns.to_ne_bytes().to_vec() }
        } else if self.use_shm_open {
            Vec::new()
        } else {
            self.dir.as_bytes_with_nul().to_vec()
        }
    }

    fn iface_addr_extra_len(&self) -> usize {
        if self.use_proc_link {
            if self.pid_ns_default { 0 } else { std::mem::size_of::<u64>() }
        } else if self.use_shm_open {
            0
        } else {
            self.dir.as_bytes_with_nul().len()
        }
    }

    fn is_reachable(&self, seg_id: u64, extra: &[u8]) -> bool {
        if seg_id & FLAG_PID_NS != 0 {
            return match extra.get(..8) {
                Some(ns) => u64::from_ne_bytes(ns.try_into().expect("8 bytes")) == self.pid_ns,
                None => false,
            };
        }
        self.pid_ns_default
    }

    fn attach(&self, seg_id: u64, length: usize, extra: &[u8]) -> Result<RemoteSeg, ucs_status_t> {
        attach_segment(seg_id, length, c_prefix(extra))
    }

    fn detach(&self, seg: &RemoteSeg) {
        unmap(seg.address, seg.length);
    }

    // The trait's contract: `buf` holds `rkey_packed_size()` writable bytes.
    #[allow(clippy::not_unsafe_ptr_arg_deref)]
    fn mkey_pack(&self, seg: &Segment, buf: *mut u8) {
        let mut packed = Vec::with_capacity(self.rkey_packed_size());
        packed.extend_from_slice(&seg.seg_id.to_ne_bytes());
        packed.extend_from_slice(&(seg.address as u64).to_ne_bytes());
        packed.extend_from_slice(&(seg.length as u64).to_ne_bytes());
        if seg.seg_id & (FLAG_SHM_OPEN | FLAG_PROCFS) == 0 {
            packed.extend_from_slice(self.dir.as_bytes_with_nul());
        }
        // SAFETY: the caller provides `rkey_packed_size()` bytes at `buf`,
        // which is at least what was packed (the directory is only added when
        // it is part of that size).
        unsafe { std::ptr::copy_nonoverlapping(packed.as_ptr(), buf, packed.len()) };
    }
}

/// The longest directory accepted from a packed rkey (PATH_MAX).
const MAX_RKEY_DIR: usize = libc::PATH_MAX as usize;

impl RkeyOps for Posix {
    unsafe fn unpack(buf: *const u8) -> Result<(uct_rkey_t, *mut c_void), ucs_status_t> {
        if buf.is_null() {
            return Err(UCS_ERR_INVALID_PARAM);
        }
        // SAFETY: the caller guarantees a packed posix rkey at `buf`, which
        // starts with three unaligned 64-bit words.
        let (seg_id, owner, length) = unsafe {
            let word = |i: usize| (buf.add(8 * i) as *const u64).read_unaligned();
            (word(0), word(1), word(2))
        };
        let length = usize::try_from(length).map_err(|_| UCS_ERR_INVALID_PARAM)?;
        let dir = if seg_id & (FLAG_SHM_OPEN | FLAG_PROCFS) == 0 {
            // SAFETY: such an rkey continues with a NUL-terminated directory;
            // read byte by byte and stop at the NUL or at PATH_MAX.
            let tail = buf.add(PACKED_RKEY_SIZE);
            let n = (0..MAX_RKEY_DIR).find(|&i| unsafe { *tail.add(i) } == 0).ok_or_else(|| {
                crate::error!("posix rkey 0x{seg_id:x}: directory name too long");
                UCS_ERR_INVALID_PARAM
            })?;
            // SAFETY: the `n` bytes before the NUL were just read.
            Some(unsafe { std::slice::from_raw_parts(tail, n) })
        } else {
            None
        };
        let rseg = attach_segment(seg_id, length, dir)?;
        let rkey = (rseg.address as u64).wrapping_sub(owner) as uct_rkey_t;
        Ok((rkey, Box::into_raw(Box::new(rseg)) as *mut c_void))
    }

    fn release(_rkey: uct_rkey_t, handle: *mut c_void) -> ucs_status_t {
        if handle.is_null() {
            return UCS_ERR_INVALID_PARAM;
        }
        // SAFETY: a non-NULL handle of this component is the box made by
        // `unpack`, released once.
        let rseg = unsafe { Box::from_raw(handle as *mut RemoteSeg) };
        unmap(rseg.address, rseg.length)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::core::config::ConfigDesc;
    use std::process::Command;

    // ---- helpers shared with the sysv tests -------------------------------

    /// Environment variable that turns a `peer_*` test into the peer process.
    pub(crate) const PEER_ENV: &str = "UCT_RS_MM_TEST_PEER";

    pub(crate) fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    pub(crate) fn unhex(s: &str) -> Vec<u8> {
        (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex")).collect()
    }

    pub(crate) fn fill(p: *mut u8, len: usize, seed: u8) {
        // SAFETY: tests pass mappings of at least `len` bytes.
        let s = unsafe { std::slice::from_raw_parts_mut(p, len) };
        for (i, b) in s.iter_mut().enumerate() {
            *b = (i as u8).wrapping_mul(7).wrapping_add(seed).wrapping_add((i >> 8) as u8);
        }
    }

    pub(crate) fn check(p: *const u8, len: usize, seed: u8) -> bool {
        // SAFETY: tests pass mappings of at least `len` bytes.
        let s = unsafe { std::slice::from_raw_parts(p, len) };
        s.iter().enumerate().all(|(i, &b)| b == (i as u8).wrapping_mul(7).wrapping_add(seed).wrapping_add((i >> 8) as u8))
    }

    /// Run the test `name` of this binary as a peer process with `env`.
    pub(crate) fn run_peer(name: &str, env: &[(&str, String)]) {
        let exe = std::env::current_exe().expect("test binary");
        let mut cmd = Command::new(exe);
        cmd.args([name, "--exact", "--nocapture", "--test-threads=1"]);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let out = cmd.output().expect("spawn peer");
        let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "peer {name} failed: {}\n{text}", out.status);
        assert!(text.contains("1 passed"), "peer {name} did not run:\n{text}");
    }

    pub(crate) struct Cfg {
        opts: *mut c_void,
    }

    impl Cfg {
        pub(crate) fn read(desc: &ConfigDesc, settings: &[(&CStr, &CStr)]) -> Cfg {
            let opts = config::read(desc, None).expect("config read");
            for (k, v) in settings {
                // SAFETY: `opts` came from config::read; strings are NUL-terminated.
                assert_eq!(unsafe { config::modify(opts, k.as_ptr(), v.as_ptr()) }, UCS_OK, "set {k:?}");
            }
            Cfg { opts }
        }
        pub(crate) fn get<T>(&self) -> &T {
            // SAFETY: the options block was parsed from T's table.
            unsafe { &*(self.opts as *const T) }
        }
        /// The options as `ucx_info -c` prints them (`UCX_<prefix>NAME=value` lines).
        pub(crate) fn print(&self, table: &Lazy<Table>, prefix: &CStr) -> String {
            extern "C" {
                fn ucs_config_parser_print_opts(stream: *mut libc::FILE, title: *const c_char, opts: *const c_void,
                                                fields: *mut ucs_config_field_t, table_prefix: *const c_char,
                                                prefix: *const c_char, flags: c_int);
            }
            let mut buf: *mut c_char = std::ptr::null_mut();
            let mut size = 0usize;
            // SAFETY: open_memstream/fclose manage `buf`, which we free after copying.
            unsafe {
                let f = libc::open_memstream(&mut buf, &mut size);
                assert!(!f.is_null());
                ucs_config_parser_print_opts(f, c"test".as_ptr(), self.opts, Lazy::force(table).as_ptr(),
                                             prefix.as_ptr(), c"UCX_".as_ptr(), 1 /* CONFIG */);
                libc::fclose(f);
                let text = CStr::from_ptr(buf).to_string_lossy().into_owned();
                libc::free(buf as *mut c_void);
                text
            }
        }
    }

    impl Drop for Cfg {
        fn drop(&mut self) {
            // SAFETY: `opts` came from config::read and is released once.
            unsafe { config::release(self.opts) };
        }
    }

    // ---- posix -------------------------------------------------------------

    static DESC: ConfigDesc = ConfigDesc {
        name: c"posix memory domain",
        prefix: c"POSIX_",
        table: &POSIX_MD_TABLE,
        size: std::mem::size_of::<PosixMdConfig>(),
    };

    fn posix(settings: &[(&CStr, &CStr)]) -> Posix {
        let cfg = Cfg::read(&DESC, settings);
        Posix::from_config(cfg.get::<PosixMdConfig>()).expect("posix mapper")
    }

    fn pack(m: &Posix, seg: &Segment) -> Vec<u8> {
        let mut buf = vec![0xa5u8; m.rkey_packed_size() + 16];
        m.mkey_pack(seg, buf.as_mut_ptr());
        assert!(buf[m.rkey_packed_size()..].iter().all(|&b| b == 0xa5), "mkey_pack wrote past its size");
        buf.truncate(m.rkey_packed_size());
        buf
    }

    fn shm_files() -> Vec<String> {
        std::fs::read_dir("/dev/shm").map_or_else(|_| Vec::new(), |d| {
            d.filter_map(|e| e.ok()).map(|e| e.file_name().to_string_lossy().into_owned())
             .filter(|n| n.starts_with(FILE_PREFIX)).collect()
        })
    }

    /// A private directory for the name-mode tests (removed on drop).
    struct TempDir(std::path::PathBuf);
    impl TempDir {
        fn new(base: &str, tag: &str) -> TempDir {
            let p = std::path::PathBuf::from(format!("{base}/uct-rs-test-{tag}-{}", std::process::id()));
            std::fs::create_dir_all(&p).expect("mkdir");
            TempDir(p)
        }
        fn cstr(&self) -> CString {
            CString::new(self.0.to_str().expect("utf8")).expect("cstr")
        }
        fn entries(&self) -> usize {
            std::fs::read_dir(&self.0).map_or(0, |d| d.count())
        }
    }
    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn config_names_and_defaults() {
        let cfg = Cfg::read(&DESC, &[]);
        let c = cfg.get::<PosixMdConfig>();
        assert_eq!(c.hugetlb_mode as u32, UCS_TRY);
        assert_eq!(c.use_proc_link, 1);
        // SAFETY: parsed string.
        assert_eq!(unsafe { CStr::from_ptr(c.dir) }, c"/dev/shm");
        let text = cfg.print(&POSIX_MD_TABLE, c"POSIX_");
        let lines: Vec<&str> = text.lines().filter(|l| l.starts_with("UCX_")).collect();
        assert_eq!(lines, ["UCX_POSIX_HUGETLB_MODE=try", "UCX_POSIX_DIR=/dev/shm", "UCX_POSIX_USE_PROC_LINK=y"],
                   "{text}");
        // Sub-table fields answer with and without their prefix; ternary rejects "auto".
        let cfg = Cfg::read(&DESC, &[(c"MM_HUGETLB_MODE", c"n"), (c"USE_PROC_LINK", c"n")]);
        assert_eq!(cfg.get::<PosixMdConfig>().hugetlb_mode as u32, UCS_NO);
        assert_eq!(cfg.get::<PosixMdConfig>().use_proc_link, 0);
        let cfg = Cfg::read(&DESC, &[(c"MM_HUGETLB_MODE", c"y")]);
        assert_eq!(cfg.get::<PosixMdConfig>().hugetlb_mode as u32, UCS_YES);
        // SAFETY: valid config, NUL-terminated strings.
        let status = unsafe { config::modify(cfg.opts, c"MM_HUGETLB_MODE".as_ptr(), c"auto".as_ptr()) };
        assert_ne!(status, UCS_OK);
    }

    #[test]
    fn attributes() {
        let m = posix(&[]);
        let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
        // SAFETY: valid path and buffer.
        assert_eq!(unsafe { libc::statvfs(c"/dev/shm".as_ptr(), &mut st) }, 0);
        let expect = st.f_bsize as u64 * st.f_bavail as u64;
        let got = m.max_alloc();
        assert!(got.abs_diff(expect) <= 64 << 20, "max_alloc {got} vs statvfs {expect}");
        if m.pid_ns_default {
            assert_eq!(m.rkey_packed_size(), 24);
            assert!(m.iface_addr_extra().is_empty());
        }
        let m = posix(&[(c"USE_PROC_LINK", c"n")]);
        assert_eq!(m.rkey_packed_size(), 24);
        assert!(m.iface_addr_extra().is_empty());
        let m = posix(&[(c"USE_PROC_LINK", c"n"), (c"DIR", c"/tmp")]);
        assert_eq!(m.rkey_packed_size(), 24 + 5);
        assert_eq!(m.iface_addr_extra(), b"/tmp\0");
        assert_eq!(m.iface_addr_extra_len(), 5);
        let m = posix(&[(c"DIR", c"/nonexistent-uct-rs")]);
        assert_eq!(m.max_alloc(), 0);
    }

    #[test]
    fn reachability() {
        let m = posix(&[]);
        let own = m.pid_ns.to_ne_bytes();
        assert_eq!(m.is_reachable(FLAG_PROCFS | 1234, &[]), m.pid_ns_default);
        assert!(m.is_reachable(FLAG_PROCFS | FLAG_PID_NS | 1234, &own));
        assert!(!m.is_reachable(FLAG_PROCFS | FLAG_PID_NS | 1234, &(m.pid_ns ^ 1).to_ne_bytes()));
        assert!(!m.is_reachable(FLAG_PROCFS | FLAG_PID_NS | 1234, &own[..4]));
    }

    /// The peer side: unpack the rkey (and attach by id), check the owner's
    /// pattern, answer with our own.
    #[test]
    fn peer_posix() {
        let Ok(mode) = std::env::var(PEER_ENV) else { return };
        if mode != "posix" {
            return;
        }
        let rkey_buf = unhex(&std::env::var("RKEY").expect("RKEY"));
        let extra = unhex(&std::env::var("EXTRA").expect("EXTRA"));
        let len: usize = std::env::var("LEN").expect("LEN").parse().expect("len");
        let seg_id = u64::from_ne_bytes(rkey_buf[..8].try_into().expect("8"));
        let owner = u64::from_ne_bytes(rkey_buf[8..16].try_into().expect("8"));

        // SAFETY: a posix rkey packed by the parent.
        let (rkey, handle) = unsafe { Posix::unpack(rkey_buf.as_ptr()) }.expect("unpack");
        let local = owner.wrapping_add(rkey as u64) as *mut u8;
        assert!(check(local, len, 1), "owner's pattern not visible through the rkey");

        // Attach by segment id, as the FIFO code does, with the peer's config.
        let m = posix(&[]);
        assert!(m.is_reachable(seg_id, &extra));
        let rseg = m.attach(seg_id, len, &extra).expect("attach");
        assert!(check(rseg.address as *const u8, len, 1));
        fill(rseg.address as *mut u8, len / 2, 2);
        m.detach(&rseg);
        // What was written through one mapping shows through the other.
        assert!(check(local, len / 2, 2));
        fill(local.wrapping_add(len / 2), len - len / 2, 3);
        assert_eq!(Posix::release(rkey, handle), UCS_OK);
    }

    fn roundtrip(m: &Posix, len: usize) -> Segment {
        let seg = m.alloc(len, std::ptr::null_mut(), false, "test").expect("alloc");
        assert!(seg.length >= len && seg.length % page_size() == 0);
        fill(seg.address as *mut u8, len, 1);
        let rkey = pack(m, &seg);
        assert_eq!(u64::from_ne_bytes(rkey[..8].try_into().unwrap()), seg.seg_id);
        assert_eq!(u64::from_ne_bytes(rkey[8..16].try_into().unwrap()), seg.address as u64);
        assert_eq!(u64::from_ne_bytes(rkey[16..24].try_into().unwrap()), seg.length as u64);
        run_peer("transports::sm::mm::posix::tests::peer_posix",
                 &[(PEER_ENV, "posix".into()), ("RKEY", hex(&rkey)), ("EXTRA", hex(&m.iface_addr_extra())),
                   ("LEN", len.to_string())]);
        assert!(check(seg.address as *const u8, len / 2, 2), "peer's writes (attach) not visible");
        assert!(check((seg.address as *const u8).wrapping_add(len / 2), len - len / 2, 3),
                "peer's writes (rkey) not visible");
        seg
    }

    #[test]
    fn proc_link_segment_shared_with_peer() {
        let m = posix(&[]);
        let len = 3 * page_size() + 100;
        let seg = roundtrip(&m, len);
        assert_ne!(seg.seg_id & FLAG_PROCFS, 0);
        assert_ne!(seg.seg_id & FLAG_SHM_OPEN, 0);
        assert_eq!(seg.seg_id & FLAG_HUGETLB, 0, "tmpfs cannot give huge pages");
        assert_eq!(seg.seg_id & FLAG_PID_NS != 0, !m.pid_ns_default);
        let (pid, fd) = procfs_split(seg.seg_id);
        assert_eq!(pid, std::process::id() as u64);
        // The name is gone already; only the descriptor keeps the file.
        let link = std::fs::read_link(format!("/proc/self/fd/{fd}")).expect("fd link");
        let link = link.to_string_lossy().into_owned();
        assert!(link.contains(FILE_PREFIX) && link.ends_with("(deleted)"), "{link}");
        // SAFETY: plain fstat on the segment's descriptor.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        assert_eq!(unsafe { libc::fstat(fd as c_int, &mut st) }, 0);
        assert_eq!(st.st_nlink, 0);
        assert_eq!(st.st_size as usize, seg.length);
        assert_eq!(m.free(&seg), UCS_OK);
        // Closed (the number may have been reused by another test, but not for this file).
        let after = std::fs::read_link(format!("/proc/self/fd/{fd}")).map(|p| p.to_string_lossy().into_owned());
        assert_ne!(after.ok().as_deref(), Some(link.as_str()));
    }

    #[test]
    fn shm_open_name_segment_shared_with_peer() {
        let m = posix(&[(c"USE_PROC_LINK", c"n")]);
        let seg = roundtrip(&m, 10000);
        assert_eq!(seg.seg_id & FLAGS_MASK, FLAG_SHM_OPEN);
        let name = format!("{FILE_PREFIX}{:x}", seg.seg_id & MMID_MASK);
        assert!(shm_files().contains(&name));
        assert_eq!(m.free(&seg), UCS_OK);
        assert!(!shm_files().contains(&name), "{name} left in /dev/shm");
    }

    #[test]
    fn directory_segment_shared_with_peer() {
        let dir = TempDir::new("/dev/shm", "dir");
        let d = dir.cstr();
        let m = posix(&[(c"USE_PROC_LINK", c"n"), (c"DIR", &d)]);
        assert!(!m.use_shm_open);
        let seg = roundtrip(&m, 5000);
        assert_eq!(seg.seg_id & FLAGS_MASK, 0);
        let rkey = pack(&m, &seg);
        assert_eq!(&rkey[24..], d.as_bytes_with_nul());
        assert_eq!(dir.entries(), 1);
        assert_eq!(m.free(&seg), UCS_OK);
        assert_eq!(dir.entries(), 0);
    }

    #[test]
    fn same_process_attach_and_fixed_address() {
        let m = posix(&[]);
        // Reserve a range, then place a segment there.
        let len = 4 * page_size();
        // SAFETY: an anonymous reservation, replaced by the fixed mapping below.
        let at = unsafe {
            libc::mmap(std::ptr::null_mut(), len, libc::PROT_NONE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1, 0)
        };
        assert_ne!(at, libc::MAP_FAILED);
        let seg = m.alloc(len, at, true, "fixed").expect("fixed alloc");
        assert_eq!(seg.address, at);
        fill(seg.address as *mut u8, len, 9);
        let rseg = m.attach(seg.seg_id, len, &m.iface_addr_extra()).expect("attach own");
        assert_ne!(rseg.address, seg.address);
        assert!(check(rseg.address as *const u8, len, 9));
        fill(rseg.address as *mut u8, 100, 4);
        assert!(check(seg.address as *const u8, 100, 4));
        m.detach(&rseg);
        assert_eq!(m.free(&seg), UCS_OK);
    }

    #[test]
    fn bad_rkeys_and_ids() {
        let m = posix(&[]);
        let mut rkey = [0u8; 24 + 8];
        let put = |rkey: &mut [u8], seg_id: u64, addr: u64, len: u64| {
            rkey[..8].copy_from_slice(&seg_id.to_ne_bytes());
            rkey[8..16].copy_from_slice(&addr.to_ne_bytes());
            rkey[16..24].copy_from_slice(&len.to_ne_bytes());
        };
        // A proc link to a process/fd that does not exist.
        put(&mut rkey, FLAG_PROCFS | procfs_id(PROCFS_FIELD_MASK, 999_999), 0x1000, 4096);
        // SAFETY: a 32-byte buffer holding a forged rkey.
        assert_eq!(unsafe { Posix::unpack(rkey.as_ptr()) }.unwrap_err(), UCS_ERR_SHMEM_SEGMENT);
        // An shm name that does not exist.
        put(&mut rkey, FLAG_SHM_OPEN | 0x0dea_dbee, 0x1000, 4096);
        assert_eq!(unsafe { Posix::unpack(rkey.as_ptr()) }.unwrap_err(), UCS_ERR_SHMEM_SEGMENT);
        // A directory file that does not exist (rkey ends with "" dir).
        put(&mut rkey, 0x1234, 0x1000, 4096);
        assert_eq!(unsafe { Posix::unpack(rkey.as_ptr()) }.unwrap_err(), UCS_ERR_SHMEM_SEGMENT);
        // Zero length.
        put(&mut rkey, FLAG_SHM_OPEN | 0x1234, 0x1000, 0);
        assert_eq!(unsafe { Posix::unpack(rkey.as_ptr()) }.unwrap_err(), UCS_ERR_INVALID_PARAM);
        assert_eq!(Posix::release(0, std::ptr::null_mut()), UCS_ERR_INVALID_PARAM);
        assert_eq!(m.attach(FLAG_SHM_OPEN | 0x77, 4096, &[]).unwrap_err(), UCS_ERR_SHMEM_SEGMENT);
        assert_eq!(m.attach(0x77, 4096, &[]).unwrap_err(), UCS_ERR_SHMEM_SEGMENT);
        assert_eq!(m.attach(FLAG_PROCFS | procfs_id(1, 0), 0, &[]).unwrap_err(), UCS_ERR_INVALID_PARAM);

        // A real segment, but a length beyond its end: refused instead of a
        // mapping that would fault.
        let seg = m.alloc(8192, std::ptr::null_mut(), false, "short").expect("alloc");
        let mut good = pack(&m, &seg);
        good[16..24].copy_from_slice(&(1u64 << 30).to_ne_bytes());
        assert_eq!(unsafe { Posix::unpack(good.as_ptr()) }.unwrap_err(), UCS_ERR_SHMEM_SEGMENT);
        assert_eq!(m.attach(seg.seg_id, 1 << 30, &[]).unwrap_err(), UCS_ERR_SHMEM_SEGMENT);
        good[16..24].copy_from_slice(&u64::MAX.to_ne_bytes());
        assert_eq!(unsafe { Posix::unpack(good.as_ptr()) }.unwrap_err(), UCS_ERR_SHMEM_SEGMENT);
        assert_eq!(m.free(&seg), UCS_OK);
    }

    #[test]
    fn full_directory_is_no_memory() {
        // A private directory on the same tmpfs: its size limit applies, and
        // a leftover file would be easy to see.
        let dir = TempDir::new("/dev/shm", "full");
        let d = dir.cstr();
        for proc_link in [c"y", c"n"] {
            let m = posix(&[(c"DIR", &d), (c"USE_PROC_LINK", proc_link)]);
            let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
            // SAFETY: valid path and buffer.
            assert_eq!(unsafe { libc::statvfs(d.as_ptr(), &mut st) }, 0);
            if st.f_blocks == 0 {
                return; // an unlimited tmpfs: nothing to fill
            }
            let too_big = (st.f_blocks as usize).saturating_mul(st.f_bsize as usize).saturating_add(1 << 30);
            assert_eq!(m.alloc(too_big, std::ptr::null_mut(), false, "huge").unwrap_err(), UCS_ERR_NO_MEMORY);
            assert_eq!(dir.entries(), 0, "file left behind");
        }
    }

    #[test]
    fn hugetlb_modes() {
        // tmpfs files cannot be mapped with MAP_HUGETLB: "try" falls back,
        // "y" fails and leaves nothing behind.
        let dir = TempDir::new("/dev/shm", "huge");
        let d = dir.cstr();
        for proc_link in [c"y", c"n"] {
            let m = posix(&[(c"DIR", &d), (c"USE_PROC_LINK", proc_link), (c"MM_HUGETLB_MODE", c"try")]);
            let seg = m.alloc(4 << 20, std::ptr::null_mut(), false, "try").expect("try");
            assert_eq!(seg.seg_id & FLAG_HUGETLB, 0);
            assert_eq!(m.free(&seg), UCS_OK);
            let m = posix(&[(c"DIR", &d), (c"USE_PROC_LINK", proc_link), (c"MM_HUGETLB_MODE", c"y")]);
            assert!(m.alloc(4 << 20, std::ptr::null_mut(), false, "yes").is_err());
            assert_eq!(dir.entries(), 0);
        }
        let m = posix(&[(c"MM_HUGETLB_MODE", c"n")]);
        let seg = m.alloc(4096, std::ptr::null_mut(), false, "no").expect("n");
        assert_eq!(m.free(&seg), UCS_OK);
    }
}
