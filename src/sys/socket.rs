//! [`Socket`]: an owned socket descriptor (closed on drop) with the calls
//! the tcp transport, the tcp sockcm and the mm signal channel make on it.
//! Calls retry on EINTR and report failures as [`Errno`]; the non-blocking
//! data calls return an [`Io`] (done / would block / peer closed / error)
//! and cost one system call, no allocation.

use super::addr::SockAddr;
use super::Errno;
use nix::sys::socket::{self as nsock, sockopt, AddressFamily, SockFlag, SockType, SockaddrLike, SockaddrStorage};
use std::io::{IoSlice, IoSliceMut};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};

pub use nix::sys::socket::{MsgFlags, UnixAddr};

/// `TCP_SYNCNT`, which nix does not name.
mod extra {
    use nix::{getsockopt_impl, setsockopt_impl, sockopt_impl};
    sockopt_impl!(TcpSynCnt, Both, libc::IPPROTO_TCP, libc::TCP_SYNCNT, i32);
}

/// What a non-blocking send or receive did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Io {
    /// This many bytes (0 only for an empty buffer: a receive of 0 bytes
    /// into a non-empty buffer is `Closed`).
    Done(usize),
    /// Nothing now (EAGAIN).
    Again,
    /// The peer closed the connection (end of stream).
    Closed,
    /// The call failed.
    Err(Errno),
}

#[inline]
fn io_of(r: nix::Result<usize>) -> Option<Io> {
    match r {
        Ok(n) => Some(Io::Done(n)),
        Err(Errno::EINTR) => None,
        Err(Errno::EAGAIN) => Some(Io::Again),
        Err(e) => Some(Io::Err(e)),
    }
}

fn family_of(family: u16) -> nix::Result<AddressFamily> {
    AddressFamily::from_i32(family as i32).ok_or(Errno::EAFNOSUPPORT)
}

/// An owned socket descriptor, closed on drop.
#[derive(Debug)]
pub struct Socket(OwnedFd);

impl AsFd for Socket {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.0.as_fd()
    }
}

impl AsRawFd for Socket {
    fn as_raw_fd(&self) -> RawFd {
        self.0.as_raw_fd()
    }
}

impl From<OwnedFd> for Socket {
    fn from(fd: OwnedFd) -> Socket {
        Socket(fd)
    }
}

impl From<Socket> for OwnedFd {
    fn from(s: Socket) -> OwnedFd {
        s.0
    }
}

impl Socket {
    /// A close-on-exec stream socket of `family` (`AF_INET`/`AF_INET6`),
    /// non-blocking from the start with `nonblock`.
    pub fn stream(family: u16, nonblock: bool) -> nix::Result<Socket> {
        let mut flags = SockFlag::SOCK_CLOEXEC;
        if nonblock {
            flags |= SockFlag::SOCK_NONBLOCK;
        }
        nsock::socket(family_of(family)?, SockType::Stream, flags, None).map(Socket)
    }

    /// A non-blocking, close-on-exec unix datagram socket.
    pub fn unix_dgram() -> nix::Result<Socket> {
        nsock::socket(AddressFamily::Unix, SockType::Datagram, SockFlag::SOCK_NONBLOCK | SockFlag::SOCK_CLOEXEC,
                      None).map(Socket)
    }

    /// The descriptor number (for logs and as a key).
    #[inline]
    pub fn fd(&self) -> RawFd {
        self.0.as_raw_fd()
    }

    /// Set `O_NONBLOCK`, keeping the other status flags.
    pub fn set_nonblock(&self) -> nix::Result<()> {
        use nix::fcntl::{fcntl, FcntlArg, OFlag};
        let fl = fcntl(self, FcntlArg::F_GETFL)?;
        fcntl(self, FcntlArg::F_SETFL(OFlag::from_bits_retain(fl) | OFlag::O_NONBLOCK)).map(drop)
    }

    /// Start connecting: Ok(true) connected (also when already connected,
    /// EISCONN), Ok(false) in progress (EINPROGRESS).
    pub fn connect(&self, addr: &SockAddr) -> nix::Result<bool> {
        loop {
            match addr.with_nix(|sa| nsock::connect(self.fd(), sa)) {
                Ok(()) | Err(Errno::EISCONN) => return Ok(true),
                Err(Errno::EINTR) => continue,
                Err(Errno::EINPROGRESS) => return Ok(false),
                Err(e) => return Err(e),
            }
        }
    }

    pub fn bind(&self, addr: &SockAddr) -> nix::Result<()> {
        addr.with_nix(|sa| nsock::bind(self.fd(), sa))
    }

    /// `listen` with the backlog as given (the kernel caps it at
    /// `net.core.somaxconn`). nix's `Backlog` refuses values above the C
    /// library's `SOMAXCONN` constant, less than the sysctl may allow (the
    /// transports pass the sysctl's value), hence libc here.
    pub fn listen(&self, backlog: i32) -> nix::Result<()> {
        // SAFETY: a plain call on a descriptor we own; no memory is passed.
        let r = unsafe { libc::listen(self.fd(), backlog) };
        Errno::result(r).map(drop)
    }

    /// Accept one pending connection as a non-blocking, close-on-exec
    /// socket, with the peer's address when it is an inet one. Ok(None)
    /// when none is waiting (EAGAIN) or it was aborted (ECONNABORTED).
    pub fn accept(&self) -> nix::Result<Option<(Socket, Option<SockAddr>)>> {
        loop {
            // SAFETY: all-zero is a valid sockaddr_storage.
            let mut ss: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
            let mut sl = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
            // SAFETY: `ss` and `sl` are live outputs of the sizes given (nix's
            // accept4 does not return the peer address, hence libc here).
            let fd = unsafe {
                libc::accept4(self.fd(), &mut ss as *mut _ as *mut libc::sockaddr, &mut sl,
                              libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC)
            };
            if fd >= 0 {
                // SAFETY: accept4 just returned this descriptor; nobody else owns it.
                let sock = Socket(unsafe { OwnedFd::from_raw_fd(fd) });
                return Ok(Some((sock, SockAddr::from_storage(&ss))));
            }
            match Errno::last() {
                Errno::EINTR => continue,
                Errno::EAGAIN | Errno::ECONNABORTED => return Ok(None),
                e => return Err(e),
            }
        }
    }

    /// `getsockname` of an inet socket.
    pub fn local_addr(&self) -> nix::Result<SockAddr> {
        let s: SockaddrStorage = nsock::getsockname(self.fd())?;
        SockAddr::from_nix(&s).ok_or(Errno::EAFNOSUPPORT)
    }

    /// `getpeername` of an inet socket.
    pub fn peer_addr(&self) -> nix::Result<SockAddr> {
        let s: SockaddrStorage = nsock::getpeername(self.fd())?;
        SockAddr::from_nix(&s).ok_or(Errno::EAFNOSUPPORT)
    }

    /// The pending socket error (`SO_ERROR`), 0 when none.
    pub fn so_error(&self) -> nix::Result<i32> {
        nsock::getsockopt(self, sockopt::SocketError)
    }

    /// Connected without a pending error: `SO_ERROR` is 0 and there is a peer.
    pub fn is_connected(&self) -> bool {
        self.so_error() == Ok(0) && nsock::getpeername::<SockaddrStorage>(self.fd()).is_ok()
    }

    pub fn set_nodelay(&self, on: bool) -> nix::Result<()> {
        nsock::setsockopt(self, sockopt::TcpNoDelay, &on)
    }

    /// `SO_SNDBUF`: the value goes to the kernel as a C int (`as` cast).
    pub fn set_sndbuf(&self, bytes: usize) -> nix::Result<()> {
        nsock::setsockopt(self, sockopt::SndBuf, &bytes)
    }

    /// `SO_RCVBUF`: the value goes to the kernel as a C int (`as` cast).
    pub fn set_rcvbuf(&self, bytes: usize) -> nix::Result<()> {
        nsock::setsockopt(self, sockopt::RcvBuf, &bytes)
    }

    /// `TCP_CONGESTION`: the congestion control algorithm of this socket.
    pub fn set_congestion(&self, name: &str) -> nix::Result<()> {
        nsock::setsockopt(self, sockopt::TcpCongestion, &std::ffi::OsString::from(name))
    }

    /// `TCP_SYNCNT`: SYN retransmissions before a connect gives up.
    pub fn set_syncnt(&self, count: i32) -> nix::Result<()> {
        nsock::setsockopt(self, extra::TcpSynCnt, &count)
    }

    /// `TCP_USER_TIMEOUT`: milliseconds data may stay unacknowledged
    /// before the kernel closes the connection (0: the system default).
    pub fn set_user_timeout(&self, ms: u32) -> nix::Result<()> {
        nsock::setsockopt(self, sockopt::TcpUserTimeout, &ms)
    }

    pub fn set_keepalive(&self, on: bool) -> nix::Result<()> {
        nsock::setsockopt(self, sockopt::KeepAlive, &on)
    }

    /// `TCP_KEEPIDLE`, seconds.
    pub fn set_keepidle(&self, secs: u32) -> nix::Result<()> {
        nsock::setsockopt(self, sockopt::TcpKeepIdle, &secs)
    }

    /// `TCP_KEEPCNT`.
    pub fn set_keepcnt(&self, count: u32) -> nix::Result<()> {
        nsock::setsockopt(self, sockopt::TcpKeepCount, &count)
    }

    /// `TCP_KEEPINTVL`, seconds.
    pub fn set_keepintvl(&self, secs: u32) -> nix::Result<()> {
        nsock::setsockopt(self, sockopt::TcpKeepInterval, &secs)
    }

    pub fn set_reuseaddr(&self, on: bool) -> nix::Result<()> {
        nsock::setsockopt(self, sockopt::ReuseAddr, &on)
    }

    /// `shutdown(SHUT_WR)`: no more sends; the peer sees end of stream.
    pub fn shutdown_write(&self) -> nix::Result<()> {
        nsock::shutdown(self.fd(), nsock::Shutdown::Write)
    }

    /// Send `buf` (one `send` call; EINTR retried).
    #[inline]
    pub fn send(&self, buf: &[u8], flags: MsgFlags) -> Io {
        loop {
            if let Some(io) = io_of(nsock::send(self.fd(), buf, flags)) {
                return io;
            }
        }
    }

    /// Gather-send `iov` (one `sendmsg` call, no control data; EINTR retried).
    #[inline]
    pub fn sendv(&self, iov: &[IoSlice<'_>], flags: MsgFlags) -> Io {
        loop {
            if let Some(io) = io_of(nsock::sendmsg::<()>(self.fd(), iov, &[], flags, None)) {
                return io;
            }
        }
    }

    /// [`Socket::sendv`] over C iovecs that name memory by raw pointer.
    ///
    /// # Safety
    /// Every entry must name `iov_len` readable bytes at `iov_base`, alive
    /// for the call.
    #[inline]
    pub unsafe fn sendv_raw(&self, iov: &[libc::iovec], flags: MsgFlags) -> Io {
        // SAFETY: `IoSlice` is guaranteed ABI-compatible with `iovec` on
        // Unix; the caller vouches that each entry is a live byte slice, so
        // the entries are valid `IoSlice`s for the duration of this call.
        let slices = unsafe { std::slice::from_raw_parts(iov.as_ptr() as *const IoSlice<'_>, iov.len()) };
        self.sendv(slices, flags)
    }

    /// Receive into `buf` (one `recv` call; EINTR retried).
    #[inline]
    pub fn recv(&self, buf: &mut [u8], flags: MsgFlags) -> Io {
        let want = buf.len();
        loop {
            match io_of(nsock::recv(self.fd(), buf, flags)) {
                Some(Io::Done(0)) if want != 0 => return Io::Closed,
                Some(io) => return io,
                None => {}
            }
        }
    }

    /// [`Socket::recv`] into raw memory.
    ///
    /// # Safety
    /// `buf` must be writable for `len` bytes and not otherwise accessed
    /// during the call.
    #[inline]
    pub unsafe fn recv_raw(&self, buf: *mut u8, len: usize, flags: MsgFlags) -> Io {
        if len == 0 {
            return self.recv(&mut [], flags);
        }
        // SAFETY: the caller vouches for `len` writable, unaliased bytes.
        let slice = unsafe { std::slice::from_raw_parts_mut(buf, len) };
        self.recv(slice, flags)
    }

    /// Scatter-receive into C iovecs that name memory by raw pointer (one
    /// `recvmsg` call, no control data; EINTR retried).
    ///
    /// # Safety
    /// Every entry must name `iov_len` writable bytes at `iov_base`, not
    /// otherwise accessed during the call.
    #[inline]
    pub unsafe fn recvv_raw(&self, iov: &mut [libc::iovec], flags: MsgFlags) -> Io {
        let want: usize = iov.iter().map(|e| e.iov_len).sum();
        // SAFETY: `IoSliceMut` is guaranteed ABI-compatible with `iovec` on
        // Unix; the caller vouches that each entry is a writable, unaliased
        // byte slice for the duration of this call.
        let slices = unsafe { std::slice::from_raw_parts_mut(iov.as_mut_ptr() as *mut IoSliceMut<'_>, iov.len()) };
        loop {
            let r = nsock::recvmsg::<()>(self.fd(), slices, None, flags).map(|m| m.bytes);
            match io_of(r) {
                Some(Io::Done(0)) if want != 0 => return Io::Closed,
                Some(io) => return io,
                None => {}
            }
        }
    }

    /// Bind a unix socket to a fresh abstract name chosen by the kernel
    /// (autobind: only the family is given) and return that name.
    pub fn autobind(&self) -> nix::Result<UnixAddr> {
        nsock::bind(self.fd(), &UnixAddr::new_unnamed())?;
        nsock::getsockname(self.fd())
    }

    /// Send a datagram to a unix address (EINTR retried).
    #[inline]
    pub fn send_to_unix(&self, buf: &[u8], to: &UnixAddr, flags: MsgFlags) -> Io {
        loop {
            if let Some(io) = io_of(nsock::sendto(self.fd(), buf, to, flags)) {
                return io;
            }
        }
    }
}

/// A unix address as the C `sockaddr_un` and its length (for shared memory).
pub fn unix_addr_to_raw(a: &UnixAddr) -> (libc::sockaddr_un, libc::socklen_t) {
    (*a.as_ref(), a.len())
}

/// A unix address back from a `sockaddr_un` and its length; None when the
/// family is not `AF_UNIX` or the length does not fit (where the kernel
/// would have answered EINVAL).
pub fn unix_addr_from_raw(sa: &libc::sockaddr_un, len: libc::socklen_t) -> Option<UnixAddr> {
    if len as usize > std::mem::size_of::<libc::sockaddr_un>() {
        return None;
    }
    // SAFETY: `sa` is a whole sockaddr_un, so `len` (at most its size)
    // bytes are readable.
    unsafe { UnixAddr::from_raw(sa as *const _ as *const libc::sockaddr, Some(len)) }
}

/// Which step of [`listener`] failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListenStep {
    Socket,
    Bind,
    Listen,
    Nonblock,
    Name,
}

/// A failed [`listener`] step; `fd` is the (now closed) socket's number,
/// -1 when there was none, for the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListenError {
    pub step: ListenStep,
    pub errno: Errno,
    pub fd: RawFd,
}

/// A listening stream socket bound to `addr` (port 0: any), made as the
/// tcp transport makes it: a blocking close-on-exec socket, bind, listen,
/// then non-blocking. Returns it with its bound address (the port it got).
pub fn listener(addr: &SockAddr, backlog: i32) -> Result<(Socket, SockAddr), ListenError> {
    let fail = |step, fd| move |errno| ListenError { step, errno, fd };
    let s = Socket::stream(addr.family, false).map_err(fail(ListenStep::Socket, -1))?;
    let fd = s.fd();
    s.bind(addr).map_err(fail(ListenStep::Bind, fd))?;
    s.listen(backlog).map_err(fail(ListenStep::Listen, fd))?;
    s.set_nonblock().map_err(fail(ListenStep::Nonblock, fd))?;
    let bound = s.local_addr().map_err(fail(ListenStep::Name, fd))?;
    Ok((s, bound))
}

/// The tcp transport's port choice: a [`listener`] on `addr` with a port
/// drawn from `first..=last` by `rand` (`last` 0: the system picks), drawn
/// again while the bind finds the port taken (EADDRINUSE), up to 1000 more
/// times, when the range has more than one port or `first` is 0.
/// `on_error` sees every failed attempt (to log it) before the next one.
pub fn listen_in_range(addr: &SockAddr, first: u32, last: u32, backlog: i32, mut rand: impl FnMut() -> u32,
                       mut on_error: impl FnMut(&SockAddr, &ListenError))
                       -> Result<(Socket, SockAddr), ListenError> {
    let retry = first == 0 || first < last;
    let mut attempt = 0;
    loop {
        let port = if last != 0 { (first + rand() % (last - first + 1)) as u16 } else { 0 };
        let bind = SockAddr { port, ..*addr };
        match listener(&bind, backlog) {
            Ok(v) => return Ok(v),
            Err(e) => {
                on_error(&bind, &e);
                let busy = e.step == ListenStep::Bind && e.errno == Errno::EADDRINUSE;
                if !(busy && retry && attempt < 1000) {
                    return Err(e);
                }
                attempt += 1;
            }
        }
    }
}

#[cfg(test)]
#[path = "socket_tests.rs"]
mod tests;
