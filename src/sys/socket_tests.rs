//! Loopback tests of [`super::Socket`].

use super::*;
use crate::sys::addr::{AF_INET, AF_INET6};
use std::time::{Duration, Instant};

fn lo4() -> SockAddr {
    SockAddr::v4([127, 0, 0, 1], 0)
}

fn lo6() -> SockAddr {
    SockAddr::v6(std::net::Ipv6Addr::LOCALHOST.octets(), 0)
}

/// Wait (bounded) until `f` gives Some.
fn wait_for<T>(mut f: impl FnMut() -> Option<T>) -> T {
    let end = Instant::now() + Duration::from_secs(5);
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < end, "timed out");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// A connected (client, server) pair over loopback of `at`'s family.
fn pair(at: SockAddr) -> (Socket, Socket, SockAddr) {
    let (l, bound) = listener(&at, 16).expect("listener");
    assert_eq!(bound.family, at.family);
    assert_ne!(bound.port, 0);
    let c = Socket::stream(at.family, true).expect("socket");
    c.set_nodelay(true).unwrap();
    let done = c.connect(&bound).expect("connect");
    let (s, peer) = wait_for(|| l.accept().expect("accept"));
    if !done {
        wait_for(|| c.is_connected().then_some(()));
    }
    assert!(s.is_connected());
    assert_eq!(peer, Some(c.local_addr().unwrap()));
    assert_eq!(c.peer_addr().unwrap(), bound);
    (c, s, bound)
}

fn round_trip(at: SockAddr) {
    let (c, s, _) = pair(at);
    let mut buf = [0u8; 64];
    assert_eq!(s.recv(&mut buf, MsgFlags::empty()), Io::Again, "empty socket would block");
    assert_eq!(c.send(b"hello", MsgFlags::MSG_NOSIGNAL), Io::Done(5));
    let n = wait_for(|| match s.recv(&mut buf, MsgFlags::MSG_DONTWAIT) {
        Io::Done(n) => Some(n),
        Io::Again => None,
        other => panic!("{other:?}"),
    });
    assert_eq!(&buf[..n], b"hello");
    // Gather send, raw receive.
    let parts = [IoSlice::new(b"ab"), IoSlice::new(b""), IoSlice::new(b"cde")];
    assert_eq!(s.sendv(&parts, MsgFlags::MSG_NOSIGNAL), Io::Done(5));
    let raw = [libc::iovec { iov_base: b"xyz".as_ptr() as *mut _, iov_len: 3 }];
    // SAFETY: the entry names a live static string.
    assert_eq!(unsafe { s.sendv_raw(&raw, MsgFlags::MSG_NOSIGNAL) }, Io::Done(3));
    let mut got = Vec::new();
    wait_for(|| {
        // SAFETY: `buf` is a live local array.
        match unsafe { c.recv_raw(buf.as_mut_ptr(), buf.len(), MsgFlags::empty()) } {
            Io::Done(n) => got.extend_from_slice(&buf[..n]),
            Io::Again => {}
            other => panic!("{other:?}"),
        }
        (got.len() == 8).then_some(())
    });
    assert_eq!(got, b"abcdexyz");
    // An empty receive never reports end of stream.
    assert!(matches!(c.recv(&mut [], MsgFlags::empty()), Io::Done(0) | Io::Again));
    // Peer close: end of stream, then sends fail.
    drop(s);
    wait_for(|| match c.recv(&mut buf, MsgFlags::empty()) {
        Io::Closed => Some(()),
        Io::Again => None,
        other => panic!("{other:?}"),
    });
    let r = wait_for(|| match c.send(&[0u8; 1024], MsgFlags::MSG_NOSIGNAL) {
        Io::Err(e) => Some(e),
        _ => None,
    });
    assert!(matches!(r, Errno::EPIPE | Errno::ECONNRESET), "{r}");
    assert_eq!(crate::sys::io_errno_status(r), crate::abi::UCS_ERR_CONNECTION_RESET);
}

#[test]
fn loopback_ipv4() {
    round_trip(lo4());
}

#[test]
fn loopback_ipv6() {
    // Some sandboxes have no IPv6 at all: then there is nothing to test.
    if Socket::stream(AF_INET6, true).and_then(|s| s.bind(&lo6())).is_err() {
        eprintln!("no IPv6 loopback here; skipped");
        return;
    }
    round_trip(lo6());
}

#[test]
fn shutdown_write_is_seen_as_end_of_stream() {
    let (c, s, _) = pair(lo4());
    c.shutdown_write().unwrap();
    let mut buf = [0u8; 8];
    wait_for(|| match s.recv(&mut buf, MsgFlags::MSG_DONTWAIT) {
        Io::Closed => Some(()),
        Io::Again => None,
        other => panic!("{other:?}"),
    });
    // The other direction still works.
    assert_eq!(s.send(b"x", MsgFlags::MSG_NOSIGNAL | MsgFlags::MSG_DONTWAIT), Io::Done(1));
}

#[test]
fn options_and_errors() {
    let s = Socket::stream(AF_INET, false).unwrap();
    s.set_nonblock().unwrap();
    s.set_sndbuf(1 << 16).unwrap();
    s.set_rcvbuf(1 << 16).unwrap();
    s.set_syncnt(3).unwrap();
    s.set_keepidle(10).unwrap();
    s.set_keepcnt(3).unwrap();
    s.set_keepintvl(2).unwrap();
    s.set_keepalive(true).unwrap();
    s.set_reuseaddr(true).unwrap();
    assert_eq!(s.so_error(), Ok(0));
    assert!(!s.is_connected(), "no peer yet");
    assert_eq!(s.peer_addr(), Err(Errno::ENOTCONN));
    assert_eq!(s.accept().unwrap_err(), Errno::EINVAL, "not listening");
    assert_eq!(Socket::stream(12345, false).unwrap_err(), Errno::EAFNOSUPPORT);
    // A backlog above the C library's SOMAXCONN goes to the kernel as is
    // (the kernel caps it at net.core.somaxconn).
    let big = Socket::stream(AF_INET, false).unwrap();
    big.bind(&lo4()).unwrap();
    big.listen(libc::SOMAXCONN + 1000).unwrap();
    // A closed port: refused (now or once the connect resolves).
    let (l, bound) = listener(&lo4(), 1).unwrap();
    drop(l);
    let c = Socket::stream(AF_INET, true).unwrap();
    match c.connect(&bound) {
        Err(e) => assert_eq!(e, Errno::ECONNREFUSED),
        Ok(true) => panic!("connected to a closed port"),
        Ok(false) => {
            let e = wait_for(|| match c.so_error().unwrap() {
                0 => None,
                e => Some(e),
            });
            assert_eq!(e, libc::ECONNREFUSED);
        }
    }
}

#[test]
fn port_range_retries_a_taken_port() {
    let (_held, taken) = listener(&lo4(), 4).unwrap();
    // First draw the taken port, then the system's choice never comes: use
    // a range of two ports where one is taken.
    let p = taken.port as u32;
    // (after these two the draws alternate, in case p + 1 is taken by
    // another process too: the 1000 retries then end in EADDRINUSE)
    let mut draws = vec![0u32, 1];
    let mut n = 0u32;
    let mut errors = 0;
    let r = listen_in_range(&lo4(), p, p + 1, 4, || {
        n += 1;
        if draws.is_empty() { n % 2 } else { draws.remove(0) }
    }, |_, e| {
        assert_eq!((e.step, e.errno), (ListenStep::Bind, Errno::EADDRINUSE));
        errors += 1;
    });
    match r {
        Ok((_s, a)) => {
            assert_eq!(a.port as u32, p + 1);
            assert_eq!(errors, 1);
        }
        // p + 1 may be taken by someone else on this machine.
        Err(e) => assert_eq!(e.errno, Errno::EADDRINUSE),
    }
    // A single-port range that is taken is not retried.
    let r = listen_in_range(&lo4(), p, p, 4, || 0, |_, _| {});
    assert_eq!(r.unwrap_err().step, ListenStep::Bind);
}

#[test]
fn unix_datagram_signal_channel() {
    let a = Socket::unix_dgram().unwrap();
    let name = a.autobind().unwrap();
    assert!(name.as_abstract().is_some(), "autobind gives an abstract name");
    let (raw, len) = unix_addr_to_raw(&name);
    let back = unix_addr_from_raw(&raw, len).unwrap();
    assert_eq!(back, name);
    assert!(unix_addr_from_raw(&raw, 1000).is_none());
    let b = Socket::unix_dgram().unwrap();
    let mut buf = [0u8; 32];
    assert_eq!(a.recv(&mut buf, MsgFlags::empty()), Io::Again);
    assert_eq!(b.send_to_unix(&[7], &back, MsgFlags::empty()), Io::Done(1));
    assert_eq!(a.recv(&mut buf, MsgFlags::empty()), Io::Done(1));
    assert_eq!(buf[0], 7);
    drop(a);
    assert_eq!(b.send_to_unix(&[7], &back, MsgFlags::empty()), Io::Err(Errno::ECONNREFUSED));
}
