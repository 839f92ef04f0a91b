//! The backing files of posix segments and the segment ids that name them:
//! creating, sizing and mapping a file, and opening a peer's file from its
//! id (through `/proc/<pid>/fd/<fd>`, `shm_open` or a path in the
//! configured directory), with the id layout of UCX 1.13.1's
//! `src/uct/sm/mm/posix/mm_posix.c`. The system calls are those of
//! [`crate::sys::shm`]; this file picks their flags and turns their errors
//! into the mapper's logs and statuses.

use super::super::mapper::RemoteSeg;
use super::super::util::{align_up, huge_page_size, os_error_text, page_size};
use crate::abi::*;
use crate::sys::{shm, Errno};
use crate::ucs;
use libc::c_void;
use std::ffi::{CStr, CString};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};

pub(super) const FLAG_PROCFS: u64 = 1 << 63;
pub(super) const FLAG_SHM_OPEN: u64 = 1 << 62;
pub(super) const FLAG_HUGETLB: u64 = 1 << 61;
pub(super) const FLAG_PID_NS: u64 = 1 << 60;
pub(super) const FLAGS_MASK: u64 = FLAG_PROCFS | FLAG_SHM_OPEN | FLAG_HUGETLB | FLAG_PID_NS;
pub(super) const MMID_MASK: u64 = !FLAGS_MASK;
/// In proc-link ids: the low 30 bits carry the pid, the next 30 the fd.
pub(super) const PROCFS_PID_BITS: u32 = 30;
pub(super) const PROCFS_FIELD_MASK: u64 = (1 << PROCFS_PID_BITS) - 1;

pub(super) const SHM_OPEN_DIR: &[u8] = b"/dev/shm";
pub(super) const FILE_PREFIX: &str = "ucx_shm_posix_";
/// `{seg_id, address, length}`, each 8 bytes, packed.
pub(super) const PACKED_RKEY_SIZE: usize = 24;
pub(super) const CREATE_MODE: libc::mode_t = 0o600;

pub(super) fn procfs_id(pid: u64, fd: u64) -> u64 {
    pid | (fd << PROCFS_PID_BITS)
}

pub(super) fn procfs_split(seg_id: u64) -> (u64, u64) {
    let mmid = seg_id & MMID_MASK;
    (mmid & PROCFS_FIELD_MASK, mmid >> PROCFS_PID_BITS)
}

/// The `shm_open` name of a segment: `/ucx_shm_posix_<hex>`.
pub(super) fn shm_name(mmid: u64) -> CString {
    CString::new(format!("/{FILE_PREFIX}{mmid:x}")).expect("no NUL in a formatted name")
}

/// The path of a segment's file in `dir`.
pub(super) fn file_path(dir: &[u8], mmid: u64) -> Option<CString> {
    let mut path = dir.to_vec();
    path.extend_from_slice(format!("/{FILE_PREFIX}{mmid:x}").as_bytes());
    CString::new(path).ok()
}

pub(super) fn shown(path: &CStr) -> std::borrow::Cow<'_, str> {
    path.to_string_lossy()
}

/// A fresh 32-bit candidate for a segment file name.
pub(super) fn random_mmid() -> u64 {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let seed = COUNTER.fetch_add(1, Ordering::Relaxed)
        ^ (std::process::id() as u64) << 32
        ^ std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
    let v = ucs::generate_uuid(seed);
    (v ^ (v >> 32)) & 0xffff_ffff
}

/// Open a segment file; `create` asks for a new one (`O_CREAT|O_EXCL`).
/// `Ok(None)` when the name is taken.
pub(super) fn open_file(path: &CStr, shm: bool, create: bool) -> Result<Option<OwnedFd>, ucs_status_t> {
    match shm::open_file(path, shm, create, CREATE_MODE) {
        Ok(fd) => Ok(Some(fd)),
        Err(Errno::EEXIST) if create => Ok(None),
        Err(err) => {
            crate::error!("{}({}, flags=0x{:x}) failed: {}", if shm { "shm_open" } else { "open" }, shown(path),
                          shm::open_flags(create), os_error_text(err));
            Err(UCS_ERR_SHMEM_SEGMENT)
        }
    }
}

/// Give the file `length` bytes of real backing store, so that a full tmpfs
/// shows up now (`UCS_ERR_NO_MEMORY`) rather than as SIGBUS on first touch.
pub(super) fn reserve(fd: &OwnedFd, length: usize) -> Result<(), ucs_status_t> {
    // A size past the file offset range fails quietly, before any call.
    libc::off_t::try_from(length).map_err(|_| UCS_ERR_NO_MEMORY)?;
    match shm::fallocate(fd, length) {
        Ok(()) => Ok(()),
        Err(err @ (Errno::ENOSPC | Errno::EFBIG)) => {
            crate::error!("not enough space for a shared memory segment of {length} bytes: {}; \
                           check the free space of /dev/shm or of UCX_POSIX_DIR", os_error_text(err));
            Err(UCS_ERR_NO_MEMORY)
        }
        Err(err) => {
            crate::error!("failed to reserve {length} bytes for a shared memory segment: {}", os_error_text(err));
            Err(UCS_ERR_IO_ERROR)
        }
    }
}

/// `mmap` a segment file: page-aligned, or huge-page aligned with `huge`
/// (never more than twice the page-aligned size). Returns the address and
/// the mapped length.
///
/// With `fixed` the mapping replaces whatever is at `at` (`MAP_FIXED`): the
/// caller of `uct_md_mem_alloc` gave that range up by asking for
/// `UCT_MD_MEM_FLAG_FIXED` there.
pub(super) fn map_file(fd: BorrowedFd<'_>, length: usize, at: *mut c_void, fixed: bool, huge: bool, quiet: bool)
            -> Result<(*mut c_void, usize), ucs_status_t> {
    let mut size = align_up(length, page_size()).ok_or(UCS_ERR_NO_MEMORY)?;
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
    }
    let (hint, mapped) = if fixed {
        // A fixed mapping at NULL is refused, as mmap refuses it.
        let r = match NonNull::new(at) {
            // SAFETY: the range at `at` is the caller's to replace (see above).
            Some(at) => unsafe { shm::map_shared_at(fd, size, at, huge) },
            None => Err(Errno::EINVAL),
        };
        (at, r)
    } else {
        (std::ptr::null_mut(), shm::map_shared(fd, size, huge))
    };
    match mapped {
        Ok(addr) => Ok((addr.as_ptr(), size)),
        Err(err) => {
            let text = format!("shared memory mmap(addr={hint:p}, length={size}, flags={}{}, fd={}) failed: {}",
                               if fixed { " FIXED" } else { "" }, if huge { " HUGETLB" } else { "" },
                               fd.as_raw_fd(), os_error_text(err));
            if quiet {
                crate::debug!("{text}");
            } else {
                crate::error!("{text}");
            }
            Err(UCS_ERR_SHMEM_SEGMENT)
        }
    }
}

/// Unmap a mapping of [`map_file`]. Callers pass one it returned, with its
/// length, and nothing of theirs refers to it afterwards.
pub(super) fn unmap(address: *mut c_void, length: usize) -> ucs_status_t {
    let r = match NonNull::new(address) {
        // SAFETY: a mapping of `map_file` with its length, no longer used
        // (see above).
        Some(a) => unsafe { shm::unmap(a, length) },
        None => Err(Errno::EINVAL),
    };
    if let Err(err) = r {
        crate::warn!("shared memory munmap(address={address:p}, length={length}) failed: {}", os_error_text(err));
        return UCS_ERR_SHMEM_SEGMENT;
    }
    UCS_OK
}

/// The bytes of a NUL-terminated string at the start of `bytes`, without the NUL.
pub(super) fn c_prefix(bytes: &[u8]) -> Option<&[u8]> {
    bytes.iter().position(|&b| b == 0).map(|n| &bytes[..n])
}

/// Open a peer's segment file, named by `seg_id` (and `dir` when the file
/// is reached by path), checked by [`super::rkey::peer_file`]: a regular
/// file, reached without following a symbolic link of the peer's making.
pub(super) fn open_peer(seg_id: u64, dir: Option<&[u8]>) -> Result<OwnedFd, ucs_status_t> {
    let (path, shm, follow) = super::rkey::peer_file(seg_id, dir).map_err(|why| {
        crate::error!("refusing shared memory segment 0x{seg_id:x}: {why}");
        UCS_ERR_SHMEM_SEGMENT
    })?;
    shm::open_peer_file(&path, shm, follow).map_err(|err| {
        crate::error!("{}({}) failed: {}", if shm { "shm_open" } else { "open" }, shown(&path), os_error_text(err));
        UCS_ERR_SHMEM_SEGMENT
    })
}

/// Map `length` bytes of a peer's segment.
pub(super) fn attach_segment(seg_id: u64, length: usize, dir: Option<&[u8]>) -> Result<RemoteSeg, ucs_status_t> {
    attach_identified(seg_id, length, dir).map(|(seg, _, _)| seg)
}

/// [`attach_segment`], also saying which file was mapped (device and inode
/// numbers), and handing back the descriptor it was opened through.
pub(super) fn attach_identified(seg_id: u64, length: usize, dir: Option<&[u8]>)
                                -> Result<(RemoteSeg, (u64, u64), OwnedFd), ucs_status_t> {
    if length == 0 {
        crate::error!("cannot attach shared memory segment 0x{seg_id:x} with length 0");
        return Err(UCS_ERR_INVALID_PARAM);
    }
    let fd = open_peer(seg_id, dir)?;
    let huge = seg_id & FLAG_HUGETLB != 0;
    // A mapping past the end of the file faults on access (SIGBUS): check
    // the size now, so a stale or forged id fails here instead. Only a
    // regular file is a segment (not a device or a pipe a peer points at).
    let (dev, ino, regular, file_size) = shm::file_identity(&fd).map_err(|err| {
        crate::error!("fstat of shared memory segment 0x{seg_id:x} failed: {}", os_error_text(err));
        UCS_ERR_SHMEM_SEGMENT
    })?;
    let identity = (dev, ino);
    if !regular {
        crate::error!("shared memory segment 0x{seg_id:x} is not a regular file");
        return Err(UCS_ERR_SHMEM_SEGMENT);
    }
    let file_pages = align_up(usize::try_from(file_size).unwrap_or(0), page_size()).unwrap_or(usize::MAX);
    if align_up(length, page_size()).is_none_or(|want| want > file_pages) {
        crate::error!("shared memory segment 0x{seg_id:x} has {file_size} bytes, {length} requested");
        return Err(UCS_ERR_SHMEM_SEGMENT);
    }
    let (address, length) = map_file(fd.as_fd(), length, std::ptr::null_mut(), false, huge, false)?;
    crate::trace!("attached posix segment 0x{seg_id:x} at {address:p} length {length}");
    Ok((RemoteSeg { address, length }, identity, fd))
}
