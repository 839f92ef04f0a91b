//! Cross-memory attach: copies between our memory and another process's
//! (`process_vm_readv`/`process_vm_writev`, through nix), and the ptrace
//! permission that allows them under Yama's restricted mode.

use super::Errno;
use nix::unistd::Pid;
use std::io::{IoSlice, IoSliceMut};

pub use nix::sys::uio::RemoteIoVec;

/// Copy from process `pid`'s `remote` ranges into our `local` pieces, in
/// order; returns the bytes copied (may be short).
///
/// # Safety
/// Each `local` entry must name `iov_len` writable bytes that nothing else
/// accesses during the call (when `pid` is our own process, the `remote`
/// ranges are read from our memory, which is always sound).
pub unsafe fn read_from(pid: i32, local: &mut [libc::iovec], remote: &[RemoteIoVec]) -> nix::Result<usize> {
    // SAFETY: `IoSliceMut` is guaranteed ABI-compatible with `iovec` on
    // Unix, and the caller vouches that each entry is a live, exclusive
    // byte range for this call.
    let local = unsafe { std::slice::from_raw_parts_mut(local.as_mut_ptr() as *mut IoSliceMut<'_>, local.len()) };
    nix::sys::uio::process_vm_readv(Pid::from_raw(pid), local, remote)
}

/// Copy our `local` pieces, in order, into process `pid`'s `remote`
/// ranges; returns the bytes copied (may be short).
///
/// # Safety
/// Each `local` entry must name `iov_len` readable bytes. When `pid` is our
/// own process, the `remote` ranges are written in our memory: they must
/// then be writable and not otherwise accessed during the call.
pub unsafe fn write_to(pid: i32, local: &[libc::iovec], remote: &[RemoteIoVec]) -> nix::Result<usize> {
    // SAFETY: `IoSlice` is guaranteed ABI-compatible with `iovec` on Unix,
    // and the caller vouches that each entry is a live byte range.
    let local = unsafe { std::slice::from_raw_parts(local.as_ptr() as *const IoSlice<'_>, local.len()) };
    nix::sys::uio::process_vm_writev(Pid::from_raw(pid), local, remote)
}

/// Copy `len` bytes between our contiguous range at `local` and process
/// `pid`'s at `remote`, resuming short copies: from the peer
/// ([`read_from`]) when `get`, else to it ([`write_to`]). False when a call
/// fails or moves nothing.
///
/// # Safety
/// As for [`read_from`] (`get`) or [`write_to`], for `[local, local + len)`.
pub unsafe fn copy_all(pid: i32, get: bool, local: usize, remote: usize, len: usize) -> bool {
    let mut done = 0;
    while done < len {
        let mut l = [libc::iovec { iov_base: local.wrapping_add(done) as *mut libc::c_void, iov_len: len - done }];
        let r = [RemoteIoVec { base: remote.wrapping_add(done), len: len - done }];
        // SAFETY: the rest of the caller's range (see the contract).
        let n = unsafe { if get { read_from(pid, &mut l, &r) } else { write_to(pid, &l, &r) } };
        match n {
            Ok(0) | Err(_) => return false,
            Ok(n) => done += n,
        }
    }
    true
}

/// Let any process of ours ptrace-attach to (and so copy memory of) this
/// one (`PR_SET_PTRACER_ANY`; nix has no wrapper for this prctl).
pub fn set_ptracer_any() -> nix::Result<()> {
    // SAFETY: prctl with integer arguments only; it changes who may attach.
    let r = unsafe { libc::prctl(libc::PR_SET_PTRACER, libc::PR_SET_PTRACER_ANY, 0, 0, 0) };
    Errno::result(r).map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::getpid;

    fn iov(buf: &mut [u8]) -> libc::iovec {
        libc::iovec { iov_base: buf.as_mut_ptr() as *mut _, iov_len: buf.len() }
    }

    #[test]
    fn read_and_write_own_process() {
        let src: Vec<u8> = (0..100u8).collect();
        let mut a = [0u8; 30];
        let mut b = [0u8; 70];
        let mut local = [iov(&mut a), iov(&mut b)];
        let remote = [RemoteIoVec { base: src.as_ptr() as usize, len: src.len() }];
        // SAFETY: `a` and `b` are live locals not touched during the call;
        // `src` is readable.
        assert_eq!(unsafe { read_from(getpid(), &mut local, &remote) }, Ok(100));
        assert_eq!(&a[..], &src[..30]);
        assert_eq!(&b[..], &src[30..]);

        let mut dst = vec![0u8; 100];
        let remote = [RemoteIoVec { base: dst.as_mut_ptr() as usize + 10, len: 50 }];
        let local = [iov(&mut a), iov(&mut b)];
        // SAFETY: `a`, `b` readable; `dst[10..60]` is ours, writable and not
        // accessed during the call.
        assert_eq!(unsafe { write_to(getpid(), &local, &remote) }, Ok(50));
        assert_eq!(&dst[10..60], &src[..50]);
        assert!(dst[..10].iter().chain(&dst[60..]).all(|&x| x == 0));
    }

    #[test]
    fn bad_remote_range_is_efault() {
        let mut a = [0u8; 8];
        let mut local = [iov(&mut a)];
        let remote = [RemoteIoVec { base: 8, len: 8 }];
        // SAFETY: `a` is a live local; the remote range is unmapped (EFAULT).
        assert_eq!(unsafe { read_from(getpid(), &mut local, &remote) }, Err(Errno::EFAULT));
        // SAFETY: as above; writing to an unmapped range of our own fails.
        assert_eq!(unsafe { write_to(getpid(), &local, &remote) }, Err(Errno::EFAULT));
    }

    #[test]
    fn ptracer_any() {
        // Without Yama the call fails with EINVAL; both are fine here.
        match set_ptracer_any() {
            Ok(()) | Err(Errno::EINVAL) => {}
            Err(e) => panic!("{e}"),
        }
    }
}
