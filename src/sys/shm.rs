//! Shared memory: POSIX segment files (`shm_open` names or files in a
//! directory, through nix) with their shared mappings, and SysV segments
//! (`shmget`/`shmat`/`shmdt`/`shmctl`: nix has none of these, so the libc
//! calls are here with their safety arguments). Failures are reported as
//! [`Errno`]; the mappers keep their own logs and statuses.

use super::Errno;
use nix::fcntl::OFlag;
use nix::sys::mman::{MapFlags, ProtFlags};
use nix::sys::stat::Mode;
use std::ffi::{c_void, CStr};
use std::num::NonZeroUsize;
use std::os::fd::{AsFd, OwnedFd};
use std::ptr::NonNull;

// ---------------------------------------------------------------------------
// POSIX files and mappings.

/// The open flags of a segment file: read-write, close-on-exec, and with
/// `create` a new file only (`O_CREAT | O_EXCL`).
pub fn open_flags(create: bool) -> i32 {
    let mut f = OFlag::O_RDWR | OFlag::O_CLOEXEC;
    if create {
        f |= OFlag::O_CREAT | OFlag::O_EXCL;
    }
    f.bits()
}

/// Open a segment file: a `shm_open` name (`shm`) or a path, new with
/// `create` (EEXIST when the name is taken), with permission bits `mode`.
pub fn open_file(path: &CStr, shm: bool, create: bool, mode: u32) -> nix::Result<OwnedFd> {
    let flags = OFlag::from_bits_retain(open_flags(create));
    let mode = Mode::from_bits_truncate(mode as libc::mode_t);
    if shm {
        nix::sys::mman::shm_open(path, flags, mode)
    } else {
        nix::fcntl::open(path, flags, mode)
    }
}

/// Open another process's segment file read-write (never creating it);
/// unless `follow`, a symbolic link as the last component is refused
/// (ELOOP), as `shm_open` refuses one.
pub fn open_peer_file(path: &CStr, shm: bool, follow: bool) -> nix::Result<OwnedFd> {
    let mut flags = OFlag::from_bits_retain(open_flags(false));
    if !follow {
        flags |= OFlag::O_NOFOLLOW;
    }
    if shm {
        nix::sys::mman::shm_open(path, flags, Mode::empty())
    } else {
        nix::fcntl::open(path, flags, Mode::empty())
    }
}

/// Whether the file is a regular file, and its size (`fstat`).
pub fn regular_file_size(fd: impl AsFd) -> nix::Result<(bool, u64)> {
    file_identity(fd).map(|(_, _, regular, size)| (regular, size))
}

/// Which file an open descriptor is (`fstat`): device and inode numbers,
/// whether it is a regular file, and its size. A file keeps its numbers
/// while it exists, and one that is mapped or open somewhere exists, so
/// equal numbers mean the same file.
pub fn file_identity(fd: impl AsFd) -> nix::Result<(u64, u64, bool, u64)> {
    nix::sys::stat::fstat(fd).map(|st| identity_of(&st))
}

/// Device and inode numbers, whether it is a regular file, and its size.
fn identity_of(st: &libc::stat) -> (u64, u64, bool, u64) {
    (st.st_dev, st.st_ino, (st.st_mode & libc::S_IFMT) == libc::S_IFREG, u64::try_from(st.st_size).unwrap_or(0))
}

/// Remove a segment file's name (`shm_unlink` or `unlink`).
pub fn unlink_file(path: &CStr, shm: bool) -> nix::Result<()> {
    if shm {
        nix::sys::mman::shm_unlink(path)
    } else {
        nix::unistd::unlink(path)
    }
}

fn off(len: usize) -> nix::Result<libc::off_t> {
    libc::off_t::try_from(len).map_err(|_| Errno::EFBIG)
}

/// Set the file's size (`ftruncate`).
pub fn ftruncate(fd: impl AsFd, len: usize) -> nix::Result<()> {
    nix::unistd::ftruncate(fd, off(len)?)
}

/// Give the file `len` bytes of real backing store from offset 0
/// (`posix_fallocate`, EINTR retried): a full file system shows here
/// (ENOSPC/EFBIG) instead of as SIGBUS on first touch.
pub fn fallocate(fd: impl AsFd, len: usize) -> nix::Result<()> {
    let len = off(len)?;
    loop {
        match nix::fcntl::posix_fallocate(fd.as_fd(), 0, len) {
            Err(Errno::EINTR) => continue,
            r => return r,
        }
    }
}

/// The file's size in bytes (`fstat`).
pub fn file_size(fd: impl AsFd) -> nix::Result<u64> {
    nix::sys::stat::fstat(fd).map(|st| u64::try_from(st.st_size).unwrap_or(0))
}

/// Bytes available to us in the file system of `dir` (`statvfs`:
/// block size × available blocks, saturating).
pub fn fs_available(dir: &CStr) -> nix::Result<u64> {
    let st = nix::sys::statvfs::statvfs(dir)?;
    Ok((st.block_size() as u64).saturating_mul(st.blocks_available() as u64))
}

fn shared_flags(huge: bool) -> MapFlags {
    let mut f = MapFlags::MAP_SHARED;
    if huge {
        f |= MapFlags::MAP_HUGETLB;
    }
    f
}

fn nonzero(len: usize) -> nix::Result<NonZeroUsize> {
    NonZeroUsize::new(len).ok_or(Errno::EINVAL)
}

/// Map `len` bytes of the file read-write and shared, where the kernel
/// chooses, with huge pages when `huge` (`MAP_HUGETLB`; `len` must then be
/// a multiple of the huge page size).
pub fn map_shared(fd: impl AsFd, len: usize, huge: bool) -> nix::Result<NonNull<c_void>> {
    // SAFETY: without MAP_FIXED the kernel places the mapping in a free
    // range, so no existing memory is affected.
    unsafe { nix::sys::mman::mmap(None, nonzero(len)?, ProtFlags::PROT_READ | ProtFlags::PROT_WRITE,
                                  shared_flags(huge), fd, 0) }
}

/// [`map_shared`] at exactly `at` (`MAP_FIXED`), replacing whatever is
/// mapped there.
///
/// # Safety
/// `[at, at + len)` must be address space the caller owns and may replace
/// (e.g. its own reservation); nothing may use the old contents.
pub unsafe fn map_shared_at(fd: impl AsFd, len: usize, at: NonNull<c_void>, huge: bool)
                            -> nix::Result<NonNull<c_void>> {
    let addr = NonZeroUsize::new(at.as_ptr() as usize);
    // SAFETY: the caller gives up the range at `at` (see above).
    unsafe { nix::sys::mman::mmap(addr, nonzero(len)?, ProtFlags::PROT_READ | ProtFlags::PROT_WRITE,
                                  shared_flags(huge) | MapFlags::MAP_FIXED, fd, 0) }
}

/// Unmap `[addr, addr + len)`.
///
/// # Safety
/// The range must be a mapping the caller made (with its length) that
/// nothing refers to afterwards.
pub unsafe fn unmap(addr: NonNull<c_void>, len: usize) -> nix::Result<()> {
    // SAFETY: the caller owns the mapping and stops using it.
    unsafe { nix::sys::mman::munmap(addr, len) }
}

/// A private, inaccessible anonymous range of `len` bytes: address space to
/// place fixed mappings in later (release it with [`unmap`]).
pub fn reserve_address_space(len: usize) -> nix::Result<NonNull<c_void>> {
    // SAFETY: a new anonymous mapping where the kernel chooses touches no
    // existing memory.
    unsafe { nix::sys::mman::mmap_anonymous(None, nonzero(len)?, ProtFlags::PROT_NONE, MapFlags::MAP_PRIVATE) }
}

/// An anonymous memory file (`memfd_create`, close-on-exec) named `name`
/// (it shows as `/memfd:NAME (deleted)` in `/proc/PID/fd`). nix's wrapper
/// needs a feature this crate does not enable; the call is one line.
pub fn memfd(name: &CStr) -> nix::Result<OwnedFd> {
    // SAFETY: a NUL-terminated name and plain flags; the new descriptor is
    // ours alone.
    let fd = unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC) };
    Errno::result(fd).map(|fd| {
        // SAFETY: `fd` was just returned by the kernel and nothing else owns it.
        unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) }
    })
}

/// Open, read-write, each file among process `pid`'s descriptors whose link
/// reads `link` (`/proc/PID/fd/N`; needs ptrace read access to `pid`), and
/// give it to `f` until `f` takes one (returns Some).
pub fn find_peer_fd_named<T>(pid: i32, link: &[u8], mut f: impl FnMut(OwnedFd) -> Option<T>) -> Option<T> {
    use std::os::unix::ffi::OsStrExt;
    let dir = format!("/proc/{pid}/fd");
    for e in std::fs::read_dir(&dir).ok()?.flatten() {
        let Ok(target) = std::fs::read_link(e.path()) else { continue };
        if target.as_os_str().as_bytes() != link {
            continue;
        }
        let Ok(path) = std::ffi::CString::new(e.path().as_os_str().as_bytes()) else { continue };
        if let Ok(fd) = open_peer_file(&path, false, true) {
            if let Some(t) = f(fd) {
                return Some(t);
            }
        }
    }
    None
}

// ---------------------------------------------------------------------------
// SysV segments.

/// The `shmget` flags of a new private segment with permission bits `mode`
/// (`IPC_CREAT | IPC_EXCL`, `SHM_HUGETLB` with `huge`).
pub fn shmget_flags(mode: i32, huge: bool) -> i32 {
    libc::IPC_CREAT | libc::IPC_EXCL | mode | if huge { libc::SHM_HUGETLB } else { 0 }
}

/// Create a new private (`IPC_PRIVATE`) segment of `size` bytes; returns
/// its id. Remove it with [`shm_remove`].
pub fn shmget_private(size: usize, mode: i32, huge: bool) -> nix::Result<i32> {
    // SAFETY: shmget takes no pointers.
    let id = unsafe { libc::shmget(libc::IPC_PRIVATE, size, shmget_flags(mode, huge)) };
    Errno::result(id)
}

fn shmat_result(p: *mut c_void) -> nix::Result<NonNull<c_void>> {
    // shmat reports failure as (void *)-1.
    if p as isize == -1 {
        return Err(Errno::last());
    }
    NonNull::new(p).ok_or(Errno::EINVAL)
}

/// Attach segment `id` read-write where the kernel chooses.
pub fn shmat(id: i32) -> nix::Result<NonNull<c_void>> {
    // SAFETY: with a NULL address the kernel picks a free range; no
    // existing memory is affected.
    shmat_result(unsafe { libc::shmat(id, std::ptr::null(), 0) })
}

/// Attach segment `id` at exactly `at`, replacing what is mapped there
/// (`SHM_REMAP`).
///
/// # Safety
/// As for [`map_shared_at`]: the range at `at` (the segment's size) must be
/// the caller's to replace.
pub unsafe fn shmat_at(id: i32, at: NonNull<c_void>) -> nix::Result<NonNull<c_void>> {
    // SAFETY: the caller gives up the range at `at`.
    shmat_result(unsafe { libc::shmat(id, at.as_ptr(), libc::SHM_REMAP) })
}

/// Detach the attachment at `addr`.
///
/// # Safety
/// `addr` must be an address [`shmat`]/[`shmat_at`] returned, and nothing
/// may use the attachment afterwards.
pub unsafe fn shmdt(addr: NonNull<c_void>) -> nix::Result<()> {
    // SAFETY: the caller's attachment, no longer used.
    Errno::result(unsafe { libc::shmdt(addr.as_ptr()) }).map(drop)
}

/// Mark segment `id` for removal (`IPC_RMID`): Linux frees it at the last
/// detach and keeps it attachable by id until then.
pub fn shm_remove(id: i32) -> nix::Result<()> {
    // SAFETY: IPC_RMID takes no buffer.
    Errno::result(unsafe { libc::shmctl(id, libc::IPC_RMID, std::ptr::null_mut()) }).map(drop)
}

/// The kernel's record of segment `id` (`IPC_STAT`).
pub fn shm_stat(id: i32) -> nix::Result<libc::shmid_ds> {
    // SAFETY: all-zero is a valid shmid_ds.
    let mut ds: libc::shmid_ds = unsafe { std::mem::zeroed() };
    // SAFETY: `ds` is a live output buffer of the type IPC_STAT fills.
    Errno::result(unsafe { libc::shmctl(id, libc::IPC_STAT, &mut ds) })?;
    Ok(ds)
}

/// The size of segment `id` in bytes.
pub fn shm_size(id: i32) -> nix::Result<usize> {
    shm_stat(id).map(|ds| ds.shm_segsz)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::page_size;
    use std::ffi::CString;

    fn name(tag: &str) -> CString {
        CString::new(format!("/uct_sys_test_{}_{}", std::process::id(), tag)).unwrap()
    }

    fn fill(p: NonNull<c_void>, len: usize, v: u8) {
        // SAFETY: callers pass a live read-write mapping of `len` bytes.
        unsafe { std::ptr::write_bytes(p.as_ptr() as *mut u8, v, len) };
    }

    fn byte(p: NonNull<c_void>, i: usize) -> u8 {
        // SAFETY: callers pass a live mapping with `i` inside it.
        unsafe { *(p.as_ptr() as *const u8).add(i) }
    }

    #[test]
    fn posix_segment_create_map_share_unlink() {
        let n = name("posix");
        let len = 2 * page_size();
        let fd = open_file(&n, true, true, 0o600).unwrap();
        assert_eq!(open_file(&n, true, true, 0o600).unwrap_err(), Errno::EEXIST);
        ftruncate(&fd, len / 2).unwrap();
        assert_eq!(file_size(&fd).unwrap(), (len / 2) as u64);
        fallocate(&fd, len).unwrap();
        assert_eq!(file_size(&fd).unwrap(), len as u64);
        let a = map_shared(&fd, len, false).unwrap();
        fill(a, len, 5);
        // A second opener sees the same bytes.
        let fd2 = open_file(&n, true, false, 0).unwrap();
        let b = map_shared(&fd2, len, false).unwrap();
        assert_ne!(a, b);
        assert_eq!(byte(b, len - 1), 5);
        fill(b, 1, 6);
        assert_eq!(byte(a, 0), 6);
        // Fixed placement into our own reservation.
        let at = reserve_address_space(len).unwrap();
        // SAFETY: `at` is our reservation, given up to the mapping.
        let c = unsafe { map_shared_at(&fd, len, at, false) }.unwrap();
        assert_eq!(c, at);
        assert_eq!(byte(c, 0), 6);
        // SAFETY: our mappings, with their lengths, unused afterwards.
        unsafe {
            unmap(a, len).unwrap();
            unmap(b, len).unwrap();
            unmap(c, len).unwrap();
        }
        assert_eq!(map_shared(&fd, 0, false).unwrap_err(), Errno::EINVAL);
        unlink_file(&n, true).unwrap();
        assert_eq!(unlink_file(&n, true).unwrap_err(), Errno::ENOENT);
        assert_eq!(open_file(&n, true, false, 0).unwrap_err(), Errno::ENOENT);
        assert!(fs_available(c"/dev/shm").unwrap() > 0);
        assert_eq!(open_flags(false), libc::O_RDWR | libc::O_CLOEXEC);
    }

    #[test]
    fn posix_file_in_a_directory() {
        let path = CString::new(format!("/dev/shm/uct_sys_test_{}_file", std::process::id())).unwrap();
        let fd = open_file(&path, false, true, 0o600).unwrap();
        fallocate(&fd, page_size()).unwrap();
        let p = map_shared(&fd, page_size(), false).unwrap();
        fill(p, page_size(), 1);
        // SAFETY: our mapping.
        unsafe { unmap(p, page_size()).unwrap() };
        unlink_file(&path, false).unwrap();
        assert!(!std::path::Path::new(path.to_str().unwrap()).exists());
    }

    #[test]
    fn sysv_segment_create_attach_remove() {
        let len = page_size() + 1;
        let id = shmget_private(len, 0o660, false).unwrap();
        let a = shmat(id);
        let b = shmat(id);
        // Remove the id at once (as the mapper does): the attachments keep it.
        shm_remove(id).unwrap();
        let (a, b) = (a.unwrap(), b.unwrap());
        assert_eq!(shm_size(id).unwrap(), len);
        assert_eq!(shm_stat(id).unwrap().shm_nattch, 2);
        fill(a, len, 3);
        assert_eq!(byte(b, len - 1), 3);
        // Fixed placement.
        let resv = 2 * page_size();
        let at = reserve_address_space(resv).unwrap();
        // SAFETY: our reservation, given up to the attachment.
        let c = unsafe { shmat_at(id, at) }.unwrap();
        assert_eq!(c, at);
        assert_eq!(byte(c, 0), 3);
        // SAFETY: our attachments, unused afterwards.
        unsafe {
            shmdt(a).unwrap();
            shmdt(b).unwrap();
            shmdt(c).unwrap();
        }
        // The last detach freed the segment.
        assert!(shm_stat(id).is_err());
        assert!(shmat(id).is_err());
        assert_eq!(shmget_flags(0o600, true) & libc::SHM_HUGETLB, libc::SHM_HUGETLB);
    }
}
