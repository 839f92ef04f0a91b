//! Network devices, socket addresses and the thin socket and epoll layer of
//! the tcp transport. Every system call of the transport is here.

use crate::abi::*;
use std::ffi::CString;

pub const AF_INET: u16 = libc::AF_INET as u16;
pub const AF_INET6: u16 = libc::AF_INET6 as u16;

/// An IPv4 or IPv6 address with a port: what UCX compares, matches and
/// sends in a connection request (`sockaddr_in`/`sockaddr_in6`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SockAddr {
    pub family: u16,
    /// IPv4 uses the first 4 bytes.
    pub ip: [u8; 16],
    pub port: u16,
    pub flowinfo: u32,
    pub scope_id: u32,
}

impl SockAddr {
    pub fn v4(ip: [u8; 4], port: u16) -> SockAddr {
        let mut a = [0u8; 16];
        a[..4].copy_from_slice(&ip);
        SockAddr { family: AF_INET, ip: a, port, flowinfo: 0, scope_id: 0 }
    }

    pub fn v6(ip: [u8; 16], port: u16) -> SockAddr {
        SockAddr { family: AF_INET6, ip, port, flowinfo: 0, scope_id: 0 }
    }

    pub fn ip_bytes(&self) -> &[u8] {
        if self.family == AF_INET { &self.ip[..4] } else { &self.ip[..] }
    }

    /// Length of the C socket address of this family.
    pub fn raw_len(&self) -> usize {
        if self.family == AF_INET { 16 } else { 28 }
    }

    pub fn is_loopback(&self) -> bool {
        if self.family == AF_INET {
            self.ip[..4] == [127, 0, 0, 1]
        } else {
            let mut lo = [0u8; 16];
            lo[15] = 1;
            self.ip == lo
        }
    }

    /// The address as a C `sockaddr_in`/`sockaddr_in6`, appended to `out`.
    pub fn encode_raw(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.family.to_ne_bytes());
        out.extend_from_slice(&self.port.to_be_bytes());
        if self.family == AF_INET {
            out.extend_from_slice(&self.ip[..4]);
            out.extend_from_slice(&[0u8; 8]);
        } else {
            out.extend_from_slice(&self.flowinfo.to_ne_bytes());
            out.extend_from_slice(&self.ip);
            out.extend_from_slice(&self.scope_id.to_ne_bytes());
        }
    }

    /// Parse a C socket address of a known family.
    pub fn decode_raw(b: &[u8]) -> Option<SockAddr> {
        if b.len() < 16 {
            return None;
        }
        let family = u16::from_ne_bytes([b[0], b[1]]);
        let port = u16::from_be_bytes([b[2], b[3]]);
        match family {
            AF_INET => {
                let mut ip = [0u8; 4];
                ip.copy_from_slice(&b[4..8]);
                Some(SockAddr::v4(ip, port))
            }
            AF_INET6 if b.len() >= 28 => {
                let mut ip = [0u8; 16];
                ip.copy_from_slice(&b[8..24]);
                let mut a = SockAddr::v6(ip, port);
                a.flowinfo = u32::from_ne_bytes([b[4], b[5], b[6], b[7]]);
                a.scope_id = u32::from_ne_bytes([b[24], b[25], b[26], b[27]]);
                Some(a)
            }
            _ => None,
        }
    }

    /// UCX's ordering of addresses (family, then address bytes, then port);
    /// it decides who accepts in a simultaneous connection.
    pub fn ucx_cmp(&self, other: &SockAddr) -> std::cmp::Ordering {
        self.family.cmp(&other.family)
            .then_with(|| self.ip_bytes().cmp(other.ip_bytes()))
            .then_with(|| self.port.cmp(&other.port))
    }

    /// Same peer for matching purposes (family, address, port).
    pub fn same(&self, other: &SockAddr) -> bool {
        self.ucx_cmp(other) == std::cmp::Ordering::Equal
    }

    fn to_storage(self) -> (libc::sockaddr_storage, libc::socklen_t) {
        let mut v = Vec::with_capacity(28);
        self.encode_raw(&mut v);
        // SAFETY: all-zero is a valid sockaddr_storage.
        let mut ss: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
        // SAFETY: sockaddr_storage is 128 bytes, more than the 28 we copy.
        unsafe { std::ptr::copy_nonoverlapping(v.as_ptr(), &mut ss as *mut _ as *mut u8, v.len()) };
        (ss, v.len() as libc::socklen_t)
    }

    /// # Safety
    /// `sa` must be null or point to a socket address of its family's size.
    unsafe fn from_raw_ptr(sa: *const libc::sockaddr) -> Option<SockAddr> {
        if sa.is_null() {
            return None;
        }
        let len = match (*sa).sa_family as i32 {
            libc::AF_INET => 16,
            libc::AF_INET6 => 28,
            _ => return None,
        };
        SockAddr::decode_raw(std::slice::from_raw_parts(sa as *const u8, len))
    }
}

impl std::fmt::Display for SockAddr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.family == AF_INET {
            write!(f, "{}:{}", std::net::Ipv4Addr::new(self.ip[0], self.ip[1], self.ip[2], self.ip[3]), self.port)
        } else {
            write!(f, "[{}]:{}", std::net::Ipv6Addr::from(self.ip), self.port)
        }
    }
}

/// The first address of family `af` of an active (up and running)
/// interface, skipping IPv6 loopback and link-local addresses, as UCX's
/// `ucs_netif_get_addr` picks it.
pub fn netif_addr(if_name: &str, af: u16) -> Option<SockAddr> {
    let mut ifap: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs fills a list we free below.
    if unsafe { libc::getifaddrs(&mut ifap) } != 0 {
        crate::warn!("getifaddrs error: {}", std::io::Error::last_os_error());
        return None;
    }
    let mut found = None;
    let mut p = ifap;
    while !p.is_null() {
        // SAFETY: p is an element of the list getifaddrs returned.
        let ifa = unsafe { &*p };
        p = ifa.ifa_next;
        // SAFETY: ifa_name is a C string of the list.
        let name = unsafe { std::ffi::CStr::from_ptr(ifa.ifa_name) };
        if name.to_bytes() != if_name.as_bytes() {
            continue;
        }
        let flags = ifa.ifa_flags;
        if flags & libc::IFF_UP as u32 == 0 || flags & libc::IFF_RUNNING as u32 == 0 {
            continue;
        }
        // SAFETY: ifa_addr is null or a socket address of its family.
        let Some(a) = (unsafe { SockAddr::from_raw_ptr(ifa.ifa_addr) }) else { continue };
        if a.family == AF_INET6 && (a.is_loopback() || (a.ip[0] == 0xfe && a.ip[1] & 0xc0 == 0x80)) {
            continue;
        }
        if a.family == af {
            found = Some(a);
            break;
        }
    }
    // SAFETY: the list came from getifaddrs.
    unsafe { libc::freeifaddrs(ifap) };
    found
}

/// The network devices, in `/sys/class/net` order, that have an address of
/// one of the families.
pub fn active_devices(afs: &[u16]) -> Result<Vec<String>, ucs_status_t> {
    let dir = match std::fs::read_dir("/sys/class/net") {
        Ok(d) => d,
        Err(e) => {
            crate::error!("opendir(/sys/class/net) failed: {}", e);
            return Err(UCS_ERR_IO_ERROR);
        }
    };
    let mut out = Vec::new();
    for entry in dir.flatten() {
        if !entry.file_type().is_ok_and(|t| t.is_symlink()) {
            continue;
        }
        let name = entry.file_name().to_string_lossy().into_owned();
        if afs.iter().any(|&af| netif_addr(&name, af).is_some()) {
            out.push(name);
        }
    }
    Ok(out)
}

fn ifreq_for(if_name: &str) -> libc::ifreq {
    // SAFETY: all-zero is a valid ifreq.
    let mut ifr: libc::ifreq = unsafe { std::mem::zeroed() };
    for (d, s) in ifr.ifr_name.iter_mut().zip(if_name.as_bytes().iter().take(libc::IFNAMSIZ - 1)) {
        *d = *s as libc::c_char;
    }
    ifr
}

fn netif_ioctl(if_name: &str, req: libc::c_ulong, ifr: &mut libc::ifreq) -> bool {
    // SAFETY: a plain datagram socket used for interface ioctls only.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_STREAM, 0) };
    if fd < 0 {
        return false;
    }
    let name = ifreq_for(if_name);
    ifr.ifr_name = name.ifr_name;
    // SAFETY: `ifr` is a live ifreq; the requests used here read or fill it
    // (SIOCETHTOOL through the ethtool buffer it points to).
    let r = unsafe { libc::ioctl(fd, req, ifr as *mut libc::ifreq) };
    // SAFETY: our own descriptor.
    unsafe { libc::close(fd) };
    r == 0
}

/// Latency (s) and bandwidth (B/s) of a network device, from its link
/// speed, MTU and link-layer framing, as UCX estimates them.
pub fn netif_caps(if_name: &str) -> (f64, f64) {
    const ETHTOOL_GSET: u32 = 1;
    #[repr(C)]
    struct EthtoolCmd {
        cmd: u32,
        supported: u32,
        advertising: u32,
        speed: u16,
        duplex: u8,
        port: u8,
        phy_address: u8,
        transceiver: u8,
        autoneg: u8,
        mdio_support: u8,
        maxtxpkt: u32,
        maxrxpkt: u32,
        speed_hi: u16,
        eth_tp_mdix: u8,
        eth_tp_mdix_ctrl: u8,
        lp_advertising: u32,
        reserved: [u32; 2],
    }
    // SAFETY: all-zero is a valid command block.
    let mut ecmd: EthtoolCmd = unsafe { std::mem::zeroed() };
    ecmd.cmd = ETHTOOL_GSET;
    let mut ifr = ifreq_for(if_name);
    ifr.ifr_ifru.ifru_data = &mut ecmd as *mut EthtoolCmd as *mut libc::c_char;
    let mut speed_mbps: u32 = 0;
    let mut known = false;
    if netif_ioctl(if_name, libc::SIOCETHTOOL, &mut ifr) {
        speed_mbps = ((ecmd.speed_hi as u32) << 16) | ecmd.speed as u32;
        known = speed_mbps != u32::MAX;
    }
    if !known {
        speed_mbps = 100;
        crate::debug!("speed of {} is UNKNOWN, assuming {} Mbps", if_name, speed_mbps);
    }
    let mut ifr = ifreq_for(if_name);
    let ether_type = if netif_ioctl(if_name, libc::SIOCGIFHWADDR, &mut ifr) {
        // SAFETY: SIOCGIFHWADDR filled the hardware address member.
        unsafe { ifr.ifr_ifru.ifru_hwaddr.sa_family }
    } else {
        libc::ARPHRD_ETHER
    };
    let mut ifr = ifreq_for(if_name);
    let mtu = if netif_ioctl(if_name, libc::SIOCGIFMTU, &mut ifr) {
        // SAFETY: SIOCGIFMTU filled the mtu member.
        unsafe { ifr.ifr_ifru.ifru_mtu as f64 }
    } else {
        1500.0
    };
    let ll_headers: f64 = match ether_type {
        // preamble, start of frame, MACs and ethertype, CRC, inter-packet gap
        libc::ARPHRD_ETHER => (7 + 1 + 14 + 4 + 12) as f64,
        // LRH, GRH, BTH, DETH, IPoIB, ICRC, VCRC, delimiter
        libc::ARPHRD_INFINIBAND => (8 + 40 + 12 + 8 + 4 + 20 + 4 + 2 + 2) as f64,
        _ => 0.0,
    };
    let speed = speed_mbps as f64 * 1e6;
    let latency = 576.0 / speed + 5.2e-6;
    let bandwidth = speed / 8.0 * (mtu - 40.0) / (mtu + ll_headers);
    (latency, bandwidth)
}

/// Whether the device carries the default route (`/proc/net/route`).
pub fn netif_is_default(if_name: &str) -> Result<bool, ucs_status_t> {
    let text = match std::fs::read_to_string("/proc/net/route") {
        Ok(t) => t,
        Err(e) => {
            crate::debug!("failed to open '/proc/net/route': {}", e);
            return Err(UCS_ERR_IO_ERROR);
        }
    };
    for line in text.lines() {
        let cols: Vec<&str> = line.split_whitespace().collect();
        if cols.len() >= 8 && cols[0] == if_name && u32::from_str_radix(cols[7], 16) == Ok(0) {
            return Ok(true);
        }
    }
    Ok(false)
}

// ---------------------------------------------------------------------------
// Sockets.

pub fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

pub fn close(fd: i32) {
    if fd >= 0 {
        // SAFETY: the caller owns the descriptor and forgets it.
        unsafe { libc::close(fd) };
    }
}

pub fn set_nonblock(fd: i32) -> bool {
    // SAFETY: fcntl on a descriptor we own.
    unsafe {
        let fl = libc::fcntl(fd, libc::F_GETFL);
        fl >= 0 && libc::fcntl(fd, libc::F_SETFL, fl | libc::O_NONBLOCK) == 0
    }
}

pub fn setopt_int(fd: i32, level: i32, name: i32, value: i32) -> bool {
    // SAFETY: an int option of a socket we own.
    let r = unsafe {
        libc::setsockopt(fd, level, name, &value as *const i32 as *const libc::c_void, 4)
    };
    if r != 0 {
        crate::error!("setsockopt(fd={} level={} optname={}) failed: {}", fd, level, name,
                      std::io::Error::last_os_error());
    }
    r == 0
}

pub fn socket(family: u16) -> Result<i32, ucs_status_t> {
    // SAFETY: plain socket creation.
    let fd = unsafe { libc::socket(family as i32, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        crate::error!("socket create failed: {}", std::io::Error::last_os_error());
        return Err(UCS_ERR_IO_ERROR);
    }
    Ok(fd)
}

/// Connect: Ok(true) connected, Ok(false) in progress.
pub fn connect(fd: i32, addr: &SockAddr) -> Result<bool, ucs_status_t> {
    let (ss, len) = addr.to_storage();
    loop {
        // SAFETY: `ss` holds a socket address of `len` bytes.
        let r = unsafe { libc::connect(fd, &ss as *const _ as *const libc::sockaddr, len) };
        if r == 0 {
            return Ok(true);
        }
        match errno() {
            libc::EINTR => continue,
            libc::EINPROGRESS => return Ok(false),
            libc::EISCONN => return Ok(true),
            e => {
                crate::diag!("connect(fd={}, dest_addr={}) failed: {}", fd, addr,
                             std::io::Error::from_raw_os_error(e));
                return Err(if e == libc::ECONNREFUSED { UCS_ERR_UNREACHABLE } else { UCS_ERR_IO_ERROR });
            }
        }
    }
}

pub fn is_connected(fd: i32) -> bool {
    let mut err: i32 = 0;
    let mut len = 4 as libc::socklen_t;
    // SAFETY: SO_ERROR is an int.
    let r = unsafe {
        libc::getsockopt(fd, libc::SOL_SOCKET, libc::SO_ERROR, &mut err as *mut i32 as *mut libc::c_void, &mut len)
    };
    if r != 0 || err != 0 {
        return false;
    }
    // SAFETY: all-zero is a valid storage; getpeername fills it.
    let mut ss: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let mut sl = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
    // SAFETY: as above.
    unsafe { libc::getpeername(fd, &mut ss as *mut _ as *mut libc::sockaddr, &mut sl) == 0 }
}

/// A listening socket bound to `addr` (port 0: any). Returns the socket and
/// the port it got.
pub fn listen(addr: &SockAddr, backlog: i32) -> Result<(i32, u16), ucs_status_t> {
    let fd = socket(addr.family)?;
    let (ss, len) = addr.to_storage();
    // SAFETY: `ss` holds a socket address of `len` bytes.
    if unsafe { libc::bind(fd, &ss as *const _ as *const libc::sockaddr, len) } != 0 {
        let e = errno();
        crate::log_at!(if e == libc::EADDRINUSE { crate::core::log::LEVEL_DEBUG } else { crate::core::log::LEVEL_ERROR },
                       "bind(fd={} addr={}) failed: {}", fd, addr, std::io::Error::from_raw_os_error(e));
        close(fd);
        return Err(if e == libc::EADDRINUSE { UCS_ERR_BUSY } else { UCS_ERR_IO_ERROR });
    }
    // SAFETY: listen on our socket.
    if unsafe { libc::listen(fd, backlog) } != 0 {
        crate::error!("listen(fd={} addr={} backlog={}) failed: {}", fd, addr, backlog,
                      std::io::Error::last_os_error());
        close(fd);
        return Err(UCS_ERR_IO_ERROR);
    }
    if !set_nonblock(fd) {
        close(fd);
        return Err(UCS_ERR_IO_ERROR);
    }
    // SAFETY: all-zero storage, filled by getsockname.
    let mut ss: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let mut sl = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
    // SAFETY: as above.
    if unsafe { libc::getsockname(fd, &mut ss as *mut _ as *mut libc::sockaddr, &mut sl) } != 0 {
        crate::error!("getsockname(fd={}) failed: {}", fd, std::io::Error::last_os_error());
        close(fd);
        return Err(UCS_ERR_IO_ERROR);
    }
    // SAFETY: getsockname wrote an address of our family.
    match unsafe { SockAddr::from_raw_ptr(&ss as *const _ as *const libc::sockaddr) } {
        Some(a) => Ok((fd, a.port)),
        None => {
            close(fd);
            Err(UCS_ERR_IO_ERROR)
        }
    }
}

/// Accept one connection: Ok(None) when none is waiting.
pub fn accept(listen_fd: i32) -> Result<Option<(i32, Option<SockAddr>)>, ucs_status_t> {
    loop {
        // SAFETY: all-zero storage, filled by accept4.
        let mut ss: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
        let mut sl = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
        // SAFETY: as above.
        let fd = unsafe {
            libc::accept4(listen_fd, &mut ss as *mut _ as *mut libc::sockaddr, &mut sl,
                          libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC)
        };
        if fd >= 0 {
            // SAFETY: accept4 wrote the peer's address.
            return Ok(Some((fd, unsafe { SockAddr::from_raw_ptr(&ss as *const _ as *const libc::sockaddr) })));
        }
        match errno() {
            libc::EINTR => continue,
            libc::EAGAIN | libc::ECONNABORTED => return Ok(None),
            e => {
                crate::error!("accept() failed: {}", std::io::Error::from_raw_os_error(e));
                return Err(UCS_ERR_IO_ERROR);
            }
        }
    }
}

/// What a non-blocking send or receive did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Io {
    /// This many bytes (never 0 for a receive: that is `Closed`).
    Done(usize),
    /// Nothing now (EAGAIN).
    Again,
    /// The peer closed the connection.
    Closed,
    /// An error, as UCX classifies it.
    Err(ucs_status_t),
}

fn io_error(e: i32) -> Io {
    Io::Err(match e {
        libc::ECONNRESET | libc::EPIPE => UCS_ERR_CONNECTION_RESET,
        libc::ECONNREFUSED => UCS_ERR_REJECTED,
        libc::ETIMEDOUT => UCS_ERR_TIMED_OUT,
        libc::ENOTCONN => UCS_ERR_NOT_CONNECTED,
        _ => UCS_ERR_IO_ERROR,
    })
}

#[inline]
pub fn sendv(fd: i32, iov: &[libc::iovec]) -> Io {
    loop {
        // SAFETY: all-zero msghdr, then the iov list we were handed.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_iov = iov.as_ptr() as *mut libc::iovec;
        msg.msg_iovlen = iov.len();
        // SAFETY: every iovec names memory its owner keeps alive for the call.
        let r = unsafe { libc::sendmsg(fd, &msg, libc::MSG_NOSIGNAL) };
        if r >= 0 {
            return Io::Done(r as usize);
        }
        match errno() {
            libc::EINTR => continue,
            libc::EAGAIN => return Io::Again,
            e => return io_error(e),
        }
    }
}

#[inline]
pub fn send(fd: i32, buf: &[u8]) -> Io {
    loop {
        // SAFETY: `buf` is a live slice.
        let r = unsafe { libc::send(fd, buf.as_ptr() as *const libc::c_void, buf.len(), libc::MSG_NOSIGNAL) };
        if r >= 0 {
            return Io::Done(r as usize);
        }
        match errno() {
            libc::EINTR => continue,
            libc::EAGAIN => return Io::Again,
            e => return io_error(e),
        }
    }
}

/// Receive into raw memory.
///
/// # Safety
/// `buf` must be writable for `len` bytes.
#[inline]
pub unsafe fn recv_raw(fd: i32, buf: *mut u8, len: usize) -> Io {
    loop {
        let r = libc::recv(fd, buf as *mut libc::c_void, len, 0);
        if r > 0 {
            return Io::Done(r as usize);
        }
        if r == 0 {
            return if len == 0 { Io::Done(0) } else { Io::Closed };
        }
        match errno() {
            libc::EINTR => continue,
            libc::EAGAIN => return Io::Again,
            e => return io_error(e),
        }
    }
}

#[inline]
pub fn recv(fd: i32, buf: &mut [u8]) -> Io {
    // SAFETY: `buf` is a live, writable slice.
    unsafe { recv_raw(fd, buf.as_mut_ptr(), buf.len()) }
}

// ---------------------------------------------------------------------------
// epoll.

pub const EV_READ: u32 = libc::EPOLLIN as u32;
pub const EV_WRITE: u32 = libc::EPOLLOUT as u32;

pub fn epoll_create() -> Result<i32, ucs_status_t> {
    // SAFETY: plain epoll creation.
    let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
    if fd < 0 {
        crate::error!("epoll_create1() failed: {}", std::io::Error::last_os_error());
        return Err(UCS_ERR_IO_ERROR);
    }
    Ok(fd)
}

/// Change the events of `fd` in the set from `old` to `new` (0: absent).
pub fn epoll_set(epfd: i32, fd: i32, old: u32, new: u32, data: u64) {
    if fd < 0 || old == new && new == 0 {
        return;
    }
    let op = if new == 0 {
        libc::EPOLL_CTL_DEL
    } else if old == 0 {
        libc::EPOLL_CTL_ADD
    } else {
        libc::EPOLL_CTL_MOD
    };
    let mut ev = libc::epoll_event { events: new, u64: data };
    // SAFETY: epoll_ctl on our set with a live event struct.
    let r = unsafe { libc::epoll_ctl(epfd, op, fd, &mut ev) };
    if r != 0 {
        crate::error!("epoll_ctl(epfd={}, op={}, fd={}) failed: {}", epfd, op, fd, std::io::Error::last_os_error());
    }
}

/// Poll the set without waiting.
pub fn epoll_poll(epfd: i32, out: &mut [libc::epoll_event]) -> usize {
    // SAFETY: `out` is a live array of its length.
    let n = unsafe { libc::epoll_wait(epfd, out.as_mut_ptr(), out.len() as i32, 0) };
    if n < 0 { 0 } else { n as usize }
}

pub fn iov_max() -> usize {
    // SAFETY: sysconf has no preconditions.
    let v = unsafe { libc::sysconf(libc::_SC_IOV_MAX) };
    if v > 0 { v as usize } else { 1024 }
}

pub fn somaxconn() -> i32 {
    std::fs::read_to_string("/proc/sys/net/core/somaxconn").ok()
        .and_then(|s| s.trim().parse().ok()).unwrap_or(libc::SOMAXCONN)
}

/// A C string of a device name (for logs and ioctls).
pub fn cname(s: &str) -> CString {
    CString::new(s).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordering_like_ucx() {
        let a = SockAddr::v4([10, 0, 0, 1], 5000);
        let b = SockAddr::v4([10, 0, 0, 2], 1);
        assert_eq!(a.ucx_cmp(&b), std::cmp::Ordering::Less);
        let c = SockAddr::v4([10, 0, 0, 1], 4000);
        assert_eq!(a.ucx_cmp(&c), std::cmp::Ordering::Greater);
        assert!(a.same(&SockAddr::v4([10, 0, 0, 1], 5000)));
    }

    #[test]
    fn raw_round_trip() {
        let a = SockAddr::v4([127, 0, 0, 1], 33000);
        let mut v = Vec::new();
        a.encode_raw(&mut v);
        assert_eq!(v.len(), 16);
        assert_eq!(SockAddr::decode_raw(&v), Some(a));
        assert!(a.is_loopback());
    }

    #[test]
    fn loopback_is_listed() {
        let devs = active_devices(&[AF_INET, AF_INET6]).unwrap();
        assert!(devs.iter().any(|d| d == "lo"));
        assert!(netif_addr("lo", AF_INET).is_some());
        assert!(!netif_is_default("lo").unwrap());
    }
}
