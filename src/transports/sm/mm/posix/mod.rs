//! The `posix` mapper: every segment is a file in a tmpfs directory
//! (`UCX_POSIX_DIR`, `/dev/shm` by default, created with `shm_open` there).
//!
//! Peers find a segment through its 64-bit `seg_id`, laid out as in UCX
//! 1.13.1's `src/uct/sm/mm/posix/mm_posix.c`:
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
//!
//! The mapper's part of the iface address: with proc links, the PID
//! namespace id when not the default one (as wide as the release's
//! `ucs_sys_ns_t`: 8 bytes up to 1.21, 4 from 1.22); by path outside
//! `/dev/shm`, the directory and its NUL; nothing otherwise. The size
//! reported for a packed rkey adds that length, as UCX does.
//!
//! This file holds the md configuration and the [`Posix`] mapper (with its
//! rkey packing); the segment ids and backing files are in `file.rs`. The
//! system calls behind both are in [`crate::sys::shm`].

mod file;
pub mod owned;
pub mod rkey;

use super::mapper::{Mapper, RemoteSeg, RkeyOps, Segment};
use super::util::{align_up, os_error_text, page_size, HugetlbMode, HUGETLB_MODE_DOC};
use file::{attach_segment, c_prefix, file_path, map_file, open_file, procfs_id, random_mmid, reserve,
           shm_name, shown, unmap, FLAG_HUGETLB, FLAG_PID_NS, FLAG_PROCFS, FLAG_SHM_OPEN, MMID_MASK,
           PACKED_RKEY_SIZE, PROCFS_FIELD_MASK, SHM_OPEN_DIR};
use crate::abi::*;
use crate::core::config::{self, embed, embed_prefixed, field, parser, BaseMdConfig, Table};
use crate::sys::shm;
use crate::transports::sm::release;
use crate::ucs;
use libc::{c_char, c_int, c_void};
use once_cell::sync::Lazy;
use std::ffi::{CStr, CString};
use std::mem::offset_of;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};

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
    /// `SHM_MIN_SIZE` (where the release has it; see
    /// [`release::posix_max_alloc`]).
    pub shm_min_size: usize,
}


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
    let mut rows = vec![
        embed_prefixed(c"MM_", &MM_MD_TABLE, 0),
        field(c"DIR", c"/dev/shm",
              c"Directory holding the backing files of the segments. With /dev/shm the files\n\
                are made with shm_open(), elsewhere with open().",
              offset_of!(PosixMdConfig, dir), parser::string()),
    ];
    rows.extend(release::posix_shm_min_size_fields(offset_of!(PosixMdConfig, shm_min_size)));
    rows.push(
        field(c"USE_PROC_LINK", c"y",
              c"How peers open a segment's backing file:\n \
                y   - through the creator's /proc/<pid>/fd/<fd> link; the file is unlinked at once.\n \
                n   - through its path, which exists until the segment is freed.\n",
              offset_of!(PosixMdConfig, use_proc_link), parser::boolean()));
    Table::new(rows)
});

// ---------------------------------------------------------------------------
// The mapper.

pub struct Posix {
    /// `UCX_POSIX_DIR`, exact bytes.
    dir: CString,
    use_shm_open: bool,
    use_proc_link: bool,
    hugetlb_mode: HugetlbMode,
    shm_min_size: usize,
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
        let (pid_ns, pid_ns_default) =
            (ucs::ns_id(ucs::UCS_SYS_NS_TYPE_PID), ucs::ns_is_default(ucs::UCS_SYS_NS_TYPE_PID));
        Ok(Posix {
            use_shm_open: dir.as_bytes() == SHM_OPEN_DIR,
            dir,
            use_proc_link: cfg.use_proc_link != 0,
            hugetlb_mode,
            shm_min_size: cfg.shm_min_size,
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
        if let Err(err) = shm::unlink_file(&path, shm) {
            crate::error!("{}({}) failed: {}", if shm { "shm_unlink" } else { "unlink" }, shown(&path),
                          os_error_text(err));
            return UCS_ERR_SHMEM_SEGMENT;
        }
        UCS_OK
    }

    /// Map the new file, with huge pages as `UCX_POSIX_HUGETLB_MODE` asks.
    /// Returns (address, mapped length, whether huge pages are used).
    fn map_new(&self, fd: BorrowedFd<'_>, length: usize, at: *mut c_void, fixed: bool)
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
    type MdConfig = PosixMdConfig;
    fn from_md_config(cfg: &PosixMdConfig) -> Result<Posix, ucs_status_t> {
        Posix::from_config(cfg)
    }

    fn max_alloc(&self) -> u64 {
        let available = shm::fs_available(&self.dir).unwrap_or_else(|err| {
            crate::error!("could not stat shared memory directory {}: {}", shown(&self.dir), os_error_text(err));
            0
        });
        release::posix_max_alloc(available, self.shm_min_size)
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
        let identity = shm::file_identity(&fd).ok().map(|(dev, ino, _, _)| (dev, ino));

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

        let (addr, mapped, huge) = match self.map_new(fd.as_fd(), length, address, fixed) {
            Ok(m) => m,
            Err(status) if self.use_proc_link => return Err(status),
            Err(status) => return Err(undo_name(status)),
        };
        if huge {
            seg_id |= FLAG_HUGETLB;
        }
        // With proc links the open descriptor is the segment's name from now
        // on (its number is inside `seg_id`): the segment keeps it, and it
        // closes when the segment is freed.
        let fd = self.use_proc_link.then_some(fd);
        crate::debug!("allocated posix shared memory {name} at {addr:p} length {mapped} id 0x{seg_id:x}");
        if !rkey::needs_dir(seg_id) {
            // (a huge-page mapping may reach past the file's end: only
            // the file's bytes can be mapped by a peer)
            // (and only with the file's identity, which its keys carry)
            if let Some(identity) = identity {
                owned::remember(owned::OwnedSeg { seg_id, address: addr as usize, length: mapped.min(file_len),
                                                  identity });
            }
        }
        Ok(Segment { seg_id, address: addr, length: mapped, fd })
    }

    fn free(&self, seg: Segment) -> ucs_status_t {
        owned::forget(seg.address as usize);
        let status = unmap(seg.address, seg.length);
        if status != UCS_OK {
            return status;
        }
        if seg.seg_id & FLAG_PROCFS != 0 {
            // Closing the descriptor (dropping `seg`) releases the file.
            UCS_OK
        } else {
            self.unlink(seg.seg_id)
        }
    }

    fn iface_addr_extra(&self) -> Vec<u8> {
        if self.use_proc_link {
            let mut v = Vec::new();
            if !self.pid_ns_default {
                ucs::ns_encode(&mut v, self.pid_ns, ucs::ns_len());
            }
            v
        } else if self.use_shm_open {
            Vec::new()
        } else {
            self.dir.as_bytes_with_nul().to_vec()
        }
    }

    fn iface_addr_extra_len(&self) -> usize {
        if self.use_proc_link {
            if self.pid_ns_default { 0 } else { ucs::ns_len() }
        } else if self.use_shm_open {
            0
        } else {
            self.dir.as_bytes_with_nul().len()
        }
    }

    fn is_reachable(&self, seg_id: u64, extra: &[u8]) -> bool {
        let same_ns = if seg_id & FLAG_PID_NS != 0 {
            ucs::ns_decode(extra, ucs::ns_len()) == Some(self.pid_ns)
        } else {
            self.pid_ns_default
        };
        // Where the release says so, the peer's FIFO file must open too
        // (it is closed again at once).
        same_ns && (!release::posix_reach_opens_segment() || file::open_peer(seg_id, c_prefix(extra)).is_ok())
    }

    fn attach(&self, seg_id: u64, length: usize, extra: &[u8]) -> Result<RemoteSeg, ucs_status_t> {
        attach_segment(seg_id, length, c_prefix(extra))
    }

    fn creator(&self, seg_id: u64) -> Option<i64> {
        rkey::procfs_pid(seg_id).map(|pid| pid as i64)
    }

    fn owns_fifo(&self, seg_id: u64, fifo_pid: i32) -> bool {
        rkey::procfs_pid(seg_id).is_none_or(|pid| u64::try_from(fifo_pid) == Ok(pid))
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

/// For transports that read a peer's posix segments by their id alone
/// (`posix_get`): ids that need no directory, that is, proc links and
/// `shm_open` names.
pub mod by_id {
    use super::file::{attach_identified, unmap};
    use super::rkey::{check_seg_id, needs_dir};
    use crate::abi::*;
    use crate::transports::sm::mm::mapper::RemoteSeg;
    use std::os::fd::OwnedFd;

    /// Whether a peer's segment id is one these functions take.
    pub fn usable(seg_id: u64) -> bool {
        !needs_dir(seg_id) && check_seg_id(seg_id).is_ok()
    }

    /// Map `length` bytes of the segment, and say which file was mapped
    /// (with the descriptor it was opened through).
    pub fn attach_id(seg_id: u64, length: usize) -> Result<(RemoteSeg, (u64, u64), OwnedFd), ucs_status_t> {
        if !usable(seg_id) {
            return Err(UCS_ERR_SHMEM_SEGMENT);
        }
        attach_identified(seg_id, length, None)
    }

    /// The size of the file open as `fd` now (None when it cannot be told).
    pub fn size_of(fd: &OwnedFd) -> Option<u64> {
        crate::sys::shm::regular_file_size(fd).ok().map(|(_, size)| size)
    }

    /// The process whose descriptor a proc-link id names (None for
    /// `shm_open` names, which name no process).
    pub fn creator(seg_id: u64) -> Option<u64> {
        super::rkey::procfs_pid(seg_id)
    }

    /// Unmap what [`attach_id`] mapped.
    pub fn detach(seg: &RemoteSeg) {
        unmap(seg.address, seg.length);
    }
}

impl RkeyOps for Posix {
    unsafe fn unpack(buf: *const u8) -> Result<(uct_rkey_t, *mut c_void), ucs_status_t> {
        if buf.is_null() {
            return Err(UCS_ERR_INVALID_PARAM);
        }
        // SAFETY: the caller guarantees a packed posix rkey at `buf`: three
        // 8-byte words, then (for a file reached by path) a NUL-terminated
        // directory. Bytes are read up to that NUL, at most PATH_MAX of them.
        let packed = unsafe {
            let dir_len = if rkey::needs_dir((buf as *const u64).read_unaligned()) {
                let tail = buf.add(PACKED_RKEY_SIZE);
                // SAFETY: bytes up to the directory's NUL belong to the rkey,
                // and the search stops there.
                (0..rkey::MAX_DIR).find(|&i| *tail.add(i) == 0).map_or(rkey::MAX_DIR, |n| n + 1)
            } else {
                0
            };
            std::slice::from_raw_parts(buf, PACKED_RKEY_SIZE + dir_len)
        };
        let r = rkey::parse_rkey(packed).map_err(|why| {
            crate::error!("posix: bad rkey: {why}");
            if matches!(why, rkey::BadName::Length(_)) { UCS_ERR_INVALID_PARAM } else { UCS_ERR_SHMEM_SEGMENT }
        })?;
        let (seg_id, owner, length, dir) = (r.seg_id, r.owner, r.length as usize, r.dir);
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
mod tests;
