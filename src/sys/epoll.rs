//! Readiness: an [`Epoll`] set (nix's, close-on-exec) whose events carry
//! a caller's 64-bit tag, an [`EventFd`] (non-blocking, close-on-exec), a
//! [`Timer`] descriptor (periodic or once), and [`poll_now`] over a list
//! of descriptor numbers.

use super::Errno;
use nix::sys::epoll::{EpollCreateFlags, EpollEvent, EpollFlags, EpollTimeout};
use nix::sys::eventfd::EfdFlags;
use nix::sys::time::TimeSpec;
use nix::sys::timerfd::{ClockId, Expiration, TimerFd, TimerFlags, TimerSetTimeFlags};
use std::time::Duration;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};

/// Readable (`EPOLLIN`).
pub const EV_READ: u32 = libc::EPOLLIN as u32;
/// Writable (`EPOLLOUT`).
pub const EV_WRITE: u32 = libc::EPOLLOUT as u32;
/// Error or hang-up (`EPOLLERR | EPOLLHUP`), always reported.
pub const EV_ERR: u32 = (libc::EPOLLERR | libc::EPOLLHUP) as u32;

/// One ready descriptor: its events and the tag it was added with. The
/// layout is the kernel's `epoll_event`.
#[derive(Clone, Copy)]
#[repr(transparent)]
pub struct Event(EpollEvent);

impl Event {
    /// An empty slot, to size a buffer with.
    pub const EMPTY: Event = Event(EpollEvent::new(EpollFlags::empty(), 0));

    #[inline]
    pub fn events(&self) -> u32 {
        self.0.events().bits() as u32
    }

    #[inline]
    pub fn data(&self) -> u64 {
        self.0.data()
    }
}

impl std::fmt::Debug for Event {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Event({:#x}, {})", self.events(), self.data())
    }
}

/// What [`Epoll::update`] does for an (old, new) event pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    None,
    Add,
    Modify,
    Delete,
}

/// An epoll set.
#[derive(Debug)]
pub struct Epoll(nix::sys::epoll::Epoll);

impl AsFd for Epoll {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.0 .0.as_fd()
    }
}

impl AsRawFd for Epoll {
    fn as_raw_fd(&self) -> RawFd {
        self.0 .0.as_raw_fd()
    }
}

impl Epoll {
    /// `epoll_create1(EPOLL_CLOEXEC)`.
    pub fn new() -> nix::Result<Epoll> {
        nix::sys::epoll::Epoll::new(EpollCreateFlags::EPOLL_CLOEXEC).map(Epoll)
    }

    #[inline]
    fn event(events: u32, data: u64) -> EpollEvent {
        EpollEvent::new(EpollFlags::from_bits_retain(events as _), data)
    }

    pub fn add(&self, fd: impl AsFd, events: u32, data: u64) -> nix::Result<()> {
        self.0.add(fd, Self::event(events, data))
    }

    pub fn modify(&self, fd: impl AsFd, events: u32, data: u64) -> nix::Result<()> {
        self.0.modify(fd, &mut Self::event(events, data))
    }

    pub fn delete(&self, fd: impl AsFd) -> nix::Result<()> {
        self.0.delete(fd)
    }

    /// The operation that takes `fd` from events `old` to `new` (0: not in
    /// the set).
    pub fn op_for(old: u32, new: u32) -> Op {
        if old == new && new == 0 {
            Op::None
        } else if new == 0 {
            Op::Delete
        } else if old == 0 {
            Op::Add
        } else {
            Op::Modify
        }
    }

    /// `EPOLL_CTL_*` number of an operation (for logs).
    pub fn op_name(op: Op) -> i32 {
        match op {
            Op::None => 0,
            Op::Add => libc::EPOLL_CTL_ADD,
            Op::Modify => libc::EPOLL_CTL_MOD,
            Op::Delete => libc::EPOLL_CTL_DEL,
        }
    }

    /// Change the events of `fd` in the set from `old` to `new` (0: absent),
    /// tagging them with `data`. Err carries the operation tried.
    pub fn update(&self, fd: impl AsFd, old: u32, new: u32, data: u64) -> Result<(), (Op, Errno)> {
        let op = Self::op_for(old, new);
        let r = match op {
            Op::None => Ok(()),
            Op::Add => self.add(fd, new, data),
            Op::Modify => self.modify(fd, new, data),
            Op::Delete => self.delete(fd),
        };
        r.map_err(|e| (op, e))
    }

    /// Wait up to `timeout_ms` (-1: forever, 0: not at all) for events into
    /// `out`; returns how many were filled.
    pub fn wait(&self, out: &mut [Event], timeout_ms: i32) -> nix::Result<usize> {
        let timeout = if timeout_ms < 0 {
            EpollTimeout::NONE
        } else {
            EpollTimeout::try_from(timeout_ms).map_err(|_| Errno::EINVAL)?
        };
        // SAFETY: `Event` is a transparent wrapper of `EpollEvent`.
        let raw = unsafe { std::slice::from_raw_parts_mut(out.as_mut_ptr() as *mut EpollEvent, out.len()) };
        self.0.wait(raw, timeout)
    }

    /// Poll without waiting; an error counts as no event.
    #[inline]
    pub fn poll(&self, out: &mut [Event]) -> usize {
        self.wait(out, 0).unwrap_or(0)
    }
}

/// An eventfd: a kernel counter that is readable while non-zero.
#[derive(Debug)]
pub struct EventFd(nix::sys::eventfd::EventFd);

impl AsFd for EventFd {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.0.as_fd()
    }
}

impl AsRawFd for EventFd {
    fn as_raw_fd(&self) -> RawFd {
        self.0.as_raw_fd()
    }
}

impl EventFd {
    /// A non-blocking, close-on-exec eventfd starting at 0.
    pub fn new() -> nix::Result<EventFd> {
        nix::sys::eventfd::EventFd::from_value_and_flags(0, EfdFlags::EFD_NONBLOCK | EfdFlags::EFD_CLOEXEC)
            .map(EventFd)
    }

    /// Add one to the counter (wakes a waiter).
    pub fn signal(&self) -> nix::Result<()> {
        self.0.write(1).map(drop)
    }

    /// Read and reset the counter: Ok(None) when it was 0.
    pub fn drain(&self) -> nix::Result<Option<u64>> {
        match self.0.read() {
            Ok(v) => Ok(Some(v)),
            Err(Errno::EAGAIN) => Ok(None),
            Err(e) => Err(e),
        }
    }
}

/// A timer as a descriptor (a timerfd on the monotonic clock, periodic or
/// once, non-blocking, close-on-exec): readable from each expiry until read.
/// An event loop that watches it sleeps exactly until the next expiry.
#[derive(Debug)]
pub struct Timer(TimerFd);

impl AsFd for Timer {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.0.as_fd()
    }
}

impl AsRawFd for Timer {
    fn as_raw_fd(&self) -> RawFd {
        self.0.as_fd().as_raw_fd()
    }
}

impl Timer {
    /// A timer that is not running.
    pub fn new() -> nix::Result<Timer> {
        TimerFd::new(ClockId::CLOCK_MONOTONIC, TimerFlags::TFD_NONBLOCK | TimerFlags::TFD_CLOEXEC).map(Timer)
    }

    /// Expire every `period` from now on (replacing an earlier setting and
    /// its count of expirations); a zero period counts as 1 ns.
    pub fn start(&self, period: Duration) -> nix::Result<()> {
        let period = period.max(Duration::from_nanos(1));
        self.0.set(Expiration::Interval(TimeSpec::from_duration(period)), TimerSetTimeFlags::empty())
    }

    /// Expire once, `after` from now (replacing an earlier setting); a
    /// zero delay counts as 1 ns (a zero setting would stop the timer).
    pub fn start_once(&self, after: Duration) -> nix::Result<()> {
        let after = after.max(Duration::from_nanos(1));
        self.0.set(Expiration::OneShot(TimeSpec::from_duration(after)), TimerSetTimeFlags::empty())
    }

    /// Stop the timer (it expires no more until started again).
    pub fn stop(&self) -> nix::Result<()> {
        self.0.unset()
    }

    /// Read the expirations since the last read (0: none). A periodic
    /// timer expires again only once its expirations are read.
    pub fn drain(&self) -> nix::Result<u64> {
        let mut n = [0u8; 8];
        match nix::unistd::read(&self.0, &mut n) {
            Ok(8) => Ok(u64::from_ne_bytes(n)),
            Ok(_) => Err(Errno::EIO),
            Err(Errno::EAGAIN) => Ok(0),
            Err(e) => Err(e),
        }
    }
}

/// `poll` over `fds` without waiting; returns how many have events.
/// Descriptor numbers are plain integers to the kernel (a stale one reports
/// `POLLNVAL`), so the list may be built from sockets not borrowed here.
pub fn poll_now(fds: &mut [libc::pollfd]) -> nix::Result<usize> {
    // SAFETY: `fds` is a live, writable array of its length; timeout 0
    // never blocks (nix's poll needs borrowed descriptors, hence libc).
    let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, 0) };
    Errno::result(n).map(|n| n as usize)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::addr::SockAddr;
    use crate::sys::socket::{listener, MsgFlags, Socket};

    #[test]
    fn timer_expires_periodically() {
        let t = Timer::new().unwrap();
        let ep = Epoll::new().unwrap();
        ep.update(&t, 0, EV_READ, 3).unwrap();
        let mut out = [Event::EMPTY; 4];
        // Not running: never readable.
        assert_eq!(ep.wait(&mut out, 20).unwrap(), 0);
        assert_eq!(t.drain(), Ok(0));
        t.start(Duration::from_millis(2)).unwrap();
        for _ in 0..3 {
            assert_eq!(ep.wait(&mut out, 5000).unwrap(), 1);
            assert_eq!(out[0].data(), 3);
            assert!(t.drain().unwrap() >= 1);
        }
    }

    #[test]
    fn timer_expires_once_and_stops() {
        let t = Timer::new().unwrap();
        let ep = Epoll::new().unwrap();
        ep.update(&t, 0, EV_READ, 5).unwrap();
        let mut out = [Event::EMPTY; 2];
        t.start_once(Duration::from_millis(2)).unwrap();
        assert_eq!(ep.wait(&mut out, 5000).unwrap(), 1);
        assert_eq!(t.drain(), Ok(1));
        // Once: nothing more after it was read.
        assert_eq!(ep.wait(&mut out, 20).unwrap(), 0);
        // Stopped before it expires: never readable.
        t.start_once(Duration::from_millis(10)).unwrap();
        t.stop().unwrap();
        assert_eq!(ep.wait(&mut out, 40).unwrap(), 0);
        assert_eq!(t.drain(), Ok(0));
    }

    #[test]
    fn epoll_reports_readiness_with_tags() {
        let ep = Epoll::new().unwrap();
        let (l, bound) = listener(&SockAddr::v4([127, 0, 0, 1], 0), 4).unwrap();
        ep.update(&l, 0, EV_READ, 7).unwrap();
        let mut out = [Event::EMPTY; 8];
        assert_eq!(ep.poll(&mut out), 0);
        let c = Socket::stream(bound.family, true).unwrap();
        let _ = c.connect(&bound).unwrap();
        assert_eq!(ep.wait(&mut out, 5000).unwrap(), 1);
        assert_eq!(out[0].data(), 7);
        assert_ne!(out[0].events() & EV_READ, 0);
        let (s, _) = l.accept().unwrap().unwrap();
        // Writable at once; readable once data comes.
        ep.update(&s, 0, EV_WRITE, 9).unwrap();
        ep.update(&l, EV_READ, 0, 7).unwrap();
        assert_eq!(ep.wait(&mut out, 5000).unwrap(), 1);
        assert_eq!((out[0].data(), out[0].events() & EV_WRITE), (9, EV_WRITE));
        ep.update(&s, EV_WRITE, EV_READ, 10).unwrap();
        assert_eq!(ep.poll(&mut out), 0);
        assert_eq!(c.send(b"z", MsgFlags::MSG_NOSIGNAL), crate::sys::socket::Io::Done(1));
        assert_eq!(ep.wait(&mut out, 5000).unwrap(), 1);
        assert_eq!(out[0].data(), 10);
        // Peer gone: error/hang-up or readable end of stream.
        drop(c);
        assert_eq!(ep.wait(&mut out, 5000).unwrap(), 1);
        assert_ne!(out[0].events() & (EV_READ | EV_ERR), 0);
        // Deleting twice fails with ENOENT and names the operation.
        ep.update(&s, EV_READ, 0, 10).unwrap();
        let e = ep.update(&s, EV_READ, 0, 10).unwrap_err();
        assert_eq!(e, (Op::Delete, Errno::ENOENT));
        assert_eq!(Epoll::op_name(e.0), libc::EPOLL_CTL_DEL);
        assert_eq!(Epoll::op_for(0, 0), Op::None);
        assert_eq!(Epoll::op_for(EV_READ, EV_READ | EV_WRITE), Op::Modify);
    }

    #[test]
    fn eventfd_counts_and_wakes_epoll() {
        let ev = EventFd::new().unwrap();
        assert_eq!(ev.drain().unwrap(), None);
        let ep = Epoll::new().unwrap();
        ep.add(&ev, EV_READ, 1).unwrap();
        let mut out = [Event::EMPTY; 2];
        assert_eq!(ep.poll(&mut out), 0);
        ev.signal().unwrap();
        ev.signal().unwrap();
        assert_eq!(ep.wait(&mut out, 5000).unwrap(), 1);
        assert_eq!(out[0].data(), 1);
        assert_eq!(ev.drain().unwrap(), Some(2));
        assert_eq!(ep.poll(&mut out), 0);
    }

    #[test]
    fn poll_now_over_raw_numbers() {
        let ev = EventFd::new().unwrap();
        let mut fds = [libc::pollfd { fd: ev.as_raw_fd(), events: libc::POLLIN, revents: 0 }];
        assert_eq!(poll_now(&mut fds).unwrap(), 0);
        ev.signal().unwrap();
        assert_eq!(poll_now(&mut fds).unwrap(), 1);
        assert_ne!(fds[0].revents & libc::POLLIN, 0);
    }
}
