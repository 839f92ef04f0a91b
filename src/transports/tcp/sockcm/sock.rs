//! Small socket helpers of the connection manager: non-blocking stream
//! sockets, addresses, and the network device that carries a connection.

use crate::abi::*;
use libc::{c_int, c_void, sockaddr, sockaddr_storage, socklen_t};
use std::io;
use std::os::fd::RawFd;

/// `UCS_MEMUNITS_AUTO` / `UCS_ULUNITS_AUTO`.
pub const UNITS_AUTO: u64 = u64::MAX - 1;

/// An owned socket descriptor, closed on drop.
pub struct Sock(pub RawFd);

impl Drop for Sock {
    fn drop(&mut self) {
        if self.0 >= 0 {
            // SAFETY: we own the descriptor and close it once.
            unsafe { libc::close(self.0) };
        }
    }
}

fn last_errno() -> c_int {
    io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO)
}

/// A socket address copied out of caller memory, checked for family and
/// length.
pub fn copy_sockaddr(addr: *const sockaddr, len: socklen_t) -> Result<(sockaddr_storage, socklen_t), ucs_status_t> {
    if addr.is_null() {
        crate::error!("tcp sockcm: NULL socket address");
        return Err(UCS_ERR_INVALID_PARAM);
    }
    // SAFETY: non-NULL; the family is the first field of every sockaddr.
    let family = unsafe { (*addr).sa_family } as c_int;
    let need = match family {
        libc::AF_INET => std::mem::size_of::<libc::sockaddr_in>(),
        libc::AF_INET6 => std::mem::size_of::<libc::sockaddr_in6>(),
        _ => {
            crate::error!("tcp sockcm: unsupported address family {}", family);
            return Err(UCS_ERR_INVALID_PARAM);
        }
    };
    if (len as usize) < need {
        crate::error!("tcp sockcm: socket address length {} is too short for family {}", len, family);
        return Err(UCS_ERR_INVALID_PARAM);
    }
    // SAFETY: all-zero is a valid sockaddr_storage.
    let mut ss: sockaddr_storage = unsafe { std::mem::zeroed() };
    // SAFETY: the caller's address holds at least `need` bytes (checked
    // above); the storage is larger than any inet address.
    unsafe { std::ptr::copy_nonoverlapping(addr as *const u8, &mut ss as *mut _ as *mut u8, need) };
    Ok((ss, need as socklen_t))
}

/// A non-blocking, close-on-exec stream socket.
pub fn stream_socket(family: c_int) -> Result<Sock, ucs_status_t> {
    // SAFETY: plain socket creation.
    let fd = unsafe { libc::socket(family, libc::SOCK_STREAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        crate::error!("tcp sockcm: socket(family {}) failed: {}", family, io::Error::last_os_error());
        return Err(UCS_ERR_IO_ERROR);
    }
    Ok(Sock(fd))
}

fn setopt_int(fd: RawFd, level: c_int, name: c_int, value: c_int) -> io::Result<()> {
    // SAFETY: `value` lives across the call; the length matches.
    let r = unsafe {
        libc::setsockopt(fd, level, name, &value as *const c_int as *const c_void,
                         std::mem::size_of::<c_int>() as socklen_t)
    };
    if r < 0 { Err(io::Error::last_os_error()) } else { Ok(()) }
}

/// SO_SNDBUF / SO_RCVBUF unless "auto"; TCP_SYNCNT (best effort) unless "auto".
pub fn apply_sockopts(fd: RawFd, sndbuf: u64, rcvbuf: u64, syn_cnt: u64) -> Result<(), ucs_status_t> {
    for (name, v, what) in [(libc::SO_SNDBUF, sndbuf, "SO_SNDBUF"), (libc::SO_RCVBUF, rcvbuf, "SO_RCVBUF")] {
        if v != UNITS_AUTO {
            let v = v.min(c_int::MAX as u64) as c_int;
            if let Err(e) = setopt_int(fd, libc::SOL_SOCKET, name, v) {
                crate::error!("tcp sockcm: setsockopt({}, {}) failed: {}", what, v, e);
                return Err(UCS_ERR_IO_ERROR);
            }
        }
    }
    if syn_cnt != UNITS_AUTO {
        if let Err(e) = setopt_int(fd, libc::IPPROTO_TCP, libc::TCP_SYNCNT, syn_cnt.min(255) as c_int) {
            crate::debug!("tcp sockcm: setsockopt(TCP_SYNCNT) failed: {}", e);
        }
    }
    Ok(())
}

pub fn set_reuseaddr(fd: RawFd) -> Result<(), ucs_status_t> {
    setopt_int(fd, libc::SOL_SOCKET, libc::SO_REUSEADDR, 1).map_err(|e| {
        crate::error!("tcp sockcm: setsockopt(SO_REUSEADDR) failed: {}", e);
        UCS_ERR_IO_ERROR
    })
}

pub fn bind(fd: RawFd, ss: &sockaddr_storage, len: socklen_t) -> io::Result<()> {
    // SAFETY: `ss` holds `len` valid bytes.
    let r = unsafe { libc::bind(fd, ss as *const _ as *const sockaddr, len) };
    if r < 0 { Err(io::Error::last_os_error()) } else { Ok(()) }
}

pub fn listen(fd: RawFd, backlog: c_int) -> io::Result<()> {
    // SAFETY: plain call on our descriptor.
    let r = unsafe { libc::listen(fd, backlog) };
    if r < 0 { Err(io::Error::last_os_error()) } else { Ok(()) }
}

/// Start a non-blocking connect: Ok(()) when connected or in progress.
pub fn connect(fd: RawFd, ss: &sockaddr_storage, len: socklen_t) -> Result<(), c_int> {
    loop {
        // SAFETY: `ss` holds `len` valid bytes.
        let r = unsafe { libc::connect(fd, ss as *const _ as *const sockaddr, len) };
        if r == 0 {
            return Ok(());
        }
        match last_errno() {
            libc::EINTR => continue,
            libc::EINPROGRESS => return Ok(()),
            e => return Err(e),
        }
    }
}

/// Accept one pending connection (non-blocking, close-on-exec);
/// Ok(None) when there is none.
pub fn accept(fd: RawFd) -> Result<Option<Sock>, c_int> {
    loop {
        // SAFETY: NULL address pointers are allowed by accept4.
        let r = unsafe {
            libc::accept4(fd, std::ptr::null_mut(), std::ptr::null_mut(), libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC)
        };
        if r >= 0 {
            return Ok(Some(Sock(r)));
        }
        match last_errno() {
            libc::EINTR => continue,
            libc::EAGAIN | libc::ECONNABORTED => return Ok(None),
            e => return Err(e),
        }
    }
}

fn name_of(fd: RawFd, peer: bool) -> io::Result<(sockaddr_storage, socklen_t)> {
    // SAFETY: all-zero is a valid sockaddr_storage.
    let mut ss: sockaddr_storage = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<sockaddr_storage>() as socklen_t;
    // SAFETY: `ss` has room for `len` bytes.
    let r = unsafe {
        if peer {
            libc::getpeername(fd, &mut ss as *mut _ as *mut sockaddr, &mut len)
        } else {
            libc::getsockname(fd, &mut ss as *mut _ as *mut sockaddr, &mut len)
        }
    };
    if r < 0 { Err(io::Error::last_os_error()) } else { Ok((ss, len)) }
}

pub fn local_addr(fd: RawFd) -> io::Result<(sockaddr_storage, socklen_t)> {
    name_of(fd, false)
}

pub fn peer_addr(fd: RawFd) -> io::Result<(sockaddr_storage, socklen_t)> {
    name_of(fd, true)
}

/// The raw IP address bytes (4 or 16) of an inet socket address.
pub fn ip_bytes(ss: &sockaddr_storage) -> Option<Vec<u8>> {
    match ss.ss_family as c_int {
        libc::AF_INET => {
            // SAFETY: the family says this storage holds a sockaddr_in.
            let sin = unsafe { &*(ss as *const _ as *const libc::sockaddr_in) };
            Some(sin.sin_addr.s_addr.to_ne_bytes().to_vec())
        }
        libc::AF_INET6 => {
            // SAFETY: the family says this storage holds a sockaddr_in6.
            let sin6 = unsafe { &*(ss as *const _ as *const libc::sockaddr_in6) };
            Some(sin6.sin6_addr.s6_addr.to_vec())
        }
        _ => None,
    }
}

/// The name of the network device whose address is the local address of
/// the connected socket `fd` (what UCX reports as the device name).
pub fn ifname_of(fd: RawFd) -> Result<String, ucs_status_t> {
    let (ss, _) = local_addr(fd).map_err(|e| {
        crate::warn!("tcp sockcm: getsockname(fd {}) failed: {}", fd, e);
        UCS_ERR_IO_ERROR
    })?;
    let Some(mine) = ip_bytes(&ss) else {
        return Err(UCS_ERR_INVALID_PARAM);
    };
    let mut list: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs fills a list we free below.
    if unsafe { libc::getifaddrs(&mut list) } != 0 {
        crate::warn!("tcp sockcm: getifaddrs failed: {}", io::Error::last_os_error());
        return Err(UCS_ERR_IO_ERROR);
    }
    let mut found = None;
    let mut cur = list;
    while !cur.is_null() {
        // SAFETY: a node of the list getifaddrs returned, alive until freeifaddrs.
        let ifa = unsafe { &*cur };
        cur = ifa.ifa_next;
        if ifa.ifa_addr.is_null() {
            continue;
        }
        // SAFETY: non-NULL interface address; its family says how long it is.
        let fam = unsafe { (*ifa.ifa_addr).sa_family };
        if fam != ss.ss_family {
            continue;
        }
        // SAFETY: all-zero is a valid sockaddr_storage.
        let mut tmp: sockaddr_storage = unsafe { std::mem::zeroed() };
        let n = if fam as c_int == libc::AF_INET {
            std::mem::size_of::<libc::sockaddr_in>()
        } else {
            std::mem::size_of::<libc::sockaddr_in6>()
        };
        // SAFETY: an address of family `fam` holds at least `n` bytes.
        unsafe { std::ptr::copy_nonoverlapping(ifa.ifa_addr as *const u8, &mut tmp as *mut _ as *mut u8, n) };
        if ip_bytes(&tmp).as_deref() == Some(&mine[..]) {
            // SAFETY: ifa_name is a NUL-terminated string of the list.
            found = Some(unsafe { std::ffi::CStr::from_ptr(ifa.ifa_name) }.to_string_lossy().into_owned());
            break;
        }
    }
    // SAFETY: the list came from getifaddrs and is freed once.
    unsafe { libc::freeifaddrs(list) };
    found.ok_or_else(|| {
        crate::debug!("tcp sockcm: no network device owns the local address of fd {}", fd);
        UCS_ERR_NO_DEVICE
    })
}

/// Pending socket error (SO_ERROR), 0 when none.
pub fn so_error(fd: RawFd) -> c_int {
    let mut v: c_int = 0;
    let mut len = std::mem::size_of::<c_int>() as socklen_t;
    // SAFETY: `v` has room for an int.
    let r = unsafe {
        libc::getsockopt(fd, libc::SOL_SOCKET, libc::SO_ERROR, &mut v as *mut c_int as *mut c_void, &mut len)
    };
    if r < 0 { last_errno() } else { v }
}

/// Non-blocking send without SIGPIPE: bytes sent (0 = would block).
pub fn send(fd: RawFd, buf: &[u8]) -> Result<usize, c_int> {
    loop {
        // SAFETY: `buf` is readable for its length.
        let r = unsafe { libc::send(fd, buf.as_ptr() as *const c_void, buf.len(), libc::MSG_NOSIGNAL | libc::MSG_DONTWAIT) };
        if r >= 0 {
            return Ok(r as usize);
        }
        match last_errno() {
            libc::EINTR => continue,
            libc::EAGAIN => return Ok(0),
            e => return Err(e),
        }
    }
}

/// Non-blocking receive: Ok(Some(n)) with n = 0 at end of stream,
/// Ok(None) when nothing is there.
pub fn recv(fd: RawFd, buf: &mut [u8]) -> Result<Option<usize>, c_int> {
    loop {
        // SAFETY: `buf` is writable for its length.
        let r = unsafe { libc::recv(fd, buf.as_mut_ptr() as *mut c_void, buf.len(), libc::MSG_DONTWAIT) };
        if r >= 0 {
            return Ok(Some(r as usize));
        }
        match last_errno() {
            libc::EINTR => continue,
            libc::EAGAIN => return Ok(None),
            e => return Err(e),
        }
    }
}

/// `net.core.somaxconn`, the most a listen backlog can be.
pub fn max_backlog() -> c_int {
    std::fs::read_to_string("/proc/sys/net/core/somaxconn")
        .ok()
        .and_then(|s| s.trim().parse::<c_int>().ok())
        .unwrap_or(libc::SOMAXCONN)
}

pub fn errno_str(e: c_int) -> String {
    io::Error::from_raw_os_error(e).to_string()
}
