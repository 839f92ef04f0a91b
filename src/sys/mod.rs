//! The library's one operating-system layer. Every system call the
//! transports make goes through here, built on the `nix` crate wherever nix
//! offers the call, on owned descriptors (`OwnedFd`/`BorrowedFd`): nothing
//! outside this module closes a raw descriptor by hand or writes `unsafe`
//! for a syscall. Where nix has no wrapper (SysV shared memory, the network
//! device ioctls, `accept4` with the peer address, `poll` over plain
//! descriptor numbers, `PR_SET_PTRACER`) the `libc` call lives here, in an
//! `unsafe` block that says why it is sound.
//!
//! What lives where:
//! - [`addr`]: [`addr::SockAddr`], the IPv4/IPv6 address-and-port value,
//!   and its conversions to and from C `sockaddr` memory.
//! - [`socket`]: [`socket::Socket`] (an owned socket: stream and unix
//!   datagram), connect/bind/listen/accept, socket options, the
//!   non-blocking send/receive calls with their [`socket::Io`] outcome, and
//!   `poll` over a descriptor list.
//! - [`netif`]: network devices: their addresses (`getifaddrs`), link speed,
//!   MTU and link type (ioctls), the default route, `somaxconn`.
//! - [`epoll`]: an epoll set and an eventfd.
//! - [`shm`]: POSIX shared memory files and mappings, and SysV segments.
//! - [`vm`]: cross-process memory copies (`process_vm_readv`/`writev`).
//!
//! The tcp transport, its connection manager and the shared-memory
//! transports make their system calls through this layer only.
//!
//! Calls report failures as [`Errno`]; the transports decide how a failure
//! is logged and which `ucs_status_t` it becomes, helped by the mappings
//! below.

pub mod addr;
pub mod epoll;
pub mod netif;
pub mod shm;
pub mod socket;
pub mod vm;
#[cfg(feature = "verbs")]
pub mod verbs;

use crate::abi::*;

pub use nix::errno::Errno;

/// `errno` of the calling thread.
#[inline]
pub fn errno() -> i32 {
    Errno::last_raw()
}

/// Set `O_NONBLOCK` on a descriptor another library owns (librdmacm's
/// event channel), keeping its other status flags.
pub fn set_nonblocking(fd: std::os::fd::RawFd) -> Result<(), Errno> {
    use nix::fcntl::{fcntl, FcntlArg, OFlag};
    // SAFETY: the caller's descriptor is open for the duration of the call.
    let fd = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) };
    let fl = fcntl(fd, FcntlArg::F_GETFL)?;
    fcntl(fd, FcntlArg::F_SETFL(OFlag::from_bits_retain(fl) | OFlag::O_NONBLOCK)).map(drop)
}

/// The system's text for an errno value.
pub fn errno_str(e: i32) -> String {
    std::io::Error::from_raw_os_error(e).to_string()
}

/// The status of a failed send or receive on a connected stream socket, as
/// UCX's socket layer classifies it (`src/ucs/sys/sock.c` in UCX 1.13.1).
#[inline]
pub fn io_errno_status(e: Errno) -> ucs_status_t {
    match e {
        Errno::ECONNRESET | Errno::EPIPE => UCS_ERR_CONNECTION_RESET,
        Errno::ECONNREFUSED => UCS_ERR_REJECTED,
        Errno::ETIMEDOUT => UCS_ERR_TIMED_OUT,
        Errno::ENOTCONN => UCS_ERR_NOT_CONNECTED,
        _ => UCS_ERR_IO_ERROR,
    }
}

/// The status of a failed connection attempt (a `connect` error or a
/// pending `SO_ERROR`) as the tcp sockcm reports it to its user
/// (`src/uct/tcp/tcp_sockcm_ep.c` in UCX 1.13.1); one mapping serves both
/// (`connect` itself never reports EPIPE/ECONNRESET).
pub fn connect_errno_status(e: i32) -> ucs_status_t {
    match e {
        libc::ECONNREFUSED => UCS_ERR_NOT_CONNECTED,
        libc::EPIPE | libc::ECONNRESET => UCS_ERR_CONNECTION_RESET,
        libc::ENETUNREACH | libc::EHOSTUNREACH | libc::ETIMEDOUT => UCS_ERR_UNREACHABLE,
        _ => UCS_ERR_IO_ERROR,
    }
}

/// The status of a failed `bind`: the address is taken (EADDRINUSE) →
/// `UCS_ERR_BUSY` (the tcp transport then tries another port), anything
/// else → `UCS_ERR_IO_ERROR`; as both the tcp transport's listener and the
/// sockcm's `listener_create` map it.
pub fn bind_errno_status(e: Errno) -> ucs_status_t {
    if e == Errno::EADDRINUSE { UCS_ERR_BUSY } else { UCS_ERR_IO_ERROR }
}

/// `sysconf(_SC_IOV_MAX)`, or Linux's 1024 when unknown.
pub fn iov_max() -> usize {
    match nix::unistd::sysconf(nix::unistd::SysconfVar::IOV_MAX) {
        Ok(Some(v)) if v > 0 => v as usize,
        _ => 1024,
    }
}

/// `sysconf(_SC_PAGESIZE)`, or 4096 when unknown.
pub fn page_size() -> usize {
    match nix::unistd::sysconf(nix::unistd::SysconfVar::PAGE_SIZE) {
        Ok(Some(v)) if v > 0 => v as usize,
        _ => 4096,
    }
}

/// The C library's `rand()` (the generator libucs seeds and uses too), for
/// the tcp interface's port choice.
#[inline]
pub fn rand() -> u32 {
    // SAFETY: rand has no preconditions.
    unsafe { libc::rand() as u32 }
}

/// `buf.len()` random bytes from the kernel (`getrandom`, retried on
/// EINTR); false when the kernel could not give them.
pub fn random_bytes(buf: &mut [u8]) -> bool {
    let mut got = 0;
    while got < buf.len() {
        // SAFETY: the pointer and length name the unfilled part of `buf`.
        let n = unsafe { libc::getrandom(buf[got..].as_mut_ptr() as *mut libc::c_void, buf.len() - got, 0) };
        if n > 0 {
            got += n as usize;
        } else if n < 0 && errno() == libc::EINTR {
            continue;
        } else {
            return false;
        }
    }
    true
}

/// CLOCK_MONOTONIC in nanoseconds: the same clock in every process of the
/// machine (so one process can tell the age of a time another wrote).
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid timespec to write; CLOCK_MONOTONIC exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    (ts.tv_sec as u64).wrapping_mul(1_000_000_000).wrapping_add(ts.tv_nsec as u64)
}

/// The calling process's id.
#[inline]
pub fn getpid() -> i32 {
    nix::unistd::getpid().as_raw()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errno_mappings() {
        assert_eq!(io_errno_status(Errno::EPIPE), UCS_ERR_CONNECTION_RESET);
        assert_eq!(io_errno_status(Errno::ECONNREFUSED), UCS_ERR_REJECTED);
        assert_eq!(io_errno_status(Errno::EBADF), UCS_ERR_IO_ERROR);
        assert_eq!(connect_errno_status(libc::ECONNREFUSED), UCS_ERR_NOT_CONNECTED);
        assert_eq!(connect_errno_status(libc::EHOSTUNREACH), UCS_ERR_UNREACHABLE);
        assert_eq!(connect_errno_status(libc::EINVAL), UCS_ERR_IO_ERROR);
        assert_eq!(bind_errno_status(Errno::EADDRINUSE), UCS_ERR_BUSY);
        assert_eq!(bind_errno_status(Errno::EACCES), UCS_ERR_IO_ERROR);
        assert!(!errno_str(libc::ENOENT).is_empty());
    }

    #[test]
    fn system_values() {
        assert!(iov_max() >= 16);
        assert!(page_size() >= 4096 && page_size().is_power_of_two());
        assert_eq!(getpid() as u32, std::process::id());
    }
}
