//! The receive path and the interface's progress: polling the epoll set
//! (or, with few connections that only read small messages, receiving on
//! them directly), reading frames into the connection's receive buffer and
//! handing them to active-message handlers, the put protocol or the
//! connection protocol.

use super::conn::*;
use super::connect::{phase_of, Next};
use super::iface::{TcpIface, I, LISTEN_TAG, MAX_EVENTS};
use super::proto::{self, Frame, RxCtx, Scan};
use super::release;
use super::wire;
use crate::abi::*;
use crate::sys::epoll::{EV_ERR, EV_READ, EV_WRITE};
use crate::sys::io_errno_status;
use crate::sys::socket::Io;
use std::rc::Rc;

/// Most reading connections for which progress receives directly.
const FAST_MAX_CONNS: usize = 4;
/// Receives of at least this many bytes (a stream of large messages) make
/// progress use epoll.
const FAST_BULK_BYTES: usize = 2048;
/// Free receive buffers the interface keeps for reuse.
const RX_POOL_KEEP: usize = 16;
/// Progress calls between polls of the epoll set on the direct path.
const FAST_POLL_EVERY: u32 = 32;
/// Bytes received after a descriptor's message in the same call: the
/// small messages and the next header that follow it (a large message
/// whose first bytes arrive here has them copied into its descriptor).
const DESC_TAIL: usize = 256;

impl TcpIface {
    /// The interface's progress: held messages go out, then socket events
    /// are handled (accepting, receiving, sending the rest of partial
    /// sends, finishing connects), at most `UCX_TCP_MAX_POLL` of them.
    pub(super) fn progress_iface(&self, iface: &I) -> u32 {
        if self.in_progress.replace(true) {
            return 0;
        }
        self.epoch.set(self.epoch.get().wrapping_add(1));
        self.run_timers(false);
        self.release_all_held(iface);
        // Few connections, all only reading, small messages: receive on
        // them directly (one system call per message instead of epoll_wait
        // + recv); the epoll set (listening socket) is still polled every
        // FAST_POLL_EVERY calls. A stream of large messages stays with
        // epoll: receiving all the time contends with the sender for the
        // socket lock and costs bandwidth.
        let nr = self.n_read.get();
        if self.n_other.get() == 0 && nr > 0 && nr <= FAST_MAX_CONNS && self.last_rx.get() < FAST_BULK_BYTES {
            let k = self.fast_polls.get();
            if k < FAST_POLL_EVERY {
                self.fast_polls.set(k + 1);
                let count = self.fast_progress(iface);
                self.in_progress.set(false);
                return count;
            }
            self.fast_polls.set(0);
        }
        let mut count = 0u32;
        let mut budget = self.cfg.max_poll;
        let mut events = std::mem::take(&mut *self.events.borrow_mut());
        loop {
            let want = budget.min(MAX_EVENTS);
            if want == 0 {
                break;
            }
            let n = self.epoll.poll(&mut events[..want]);
            for ev in &events[..n] {
                let (flags, tag) = (ev.events(), ev.data());
                if tag == LISTEN_TAG {
                    self.accept_all();
                    continue;
                }
                let err = flags & EV_ERR != 0;
                if flags & EV_READ != 0 || err {
                    if let Some(c) = self.lookup(tag) {
                        if c.events.get() & EV_READ != 0 {
                            count += self.rx_progress(iface, &c);
                        }
                    }
                }
                if flags & EV_WRITE != 0 || err {
                    if let Some(c) = self.lookup(tag) {
                        if c.events.get() & EV_WRITE != 0 {
                            count += self.tx_progress(iface, &c);
                        }
                    }
                }
            }
            budget -= n;
            if n < MAX_EVENTS {
                break;
            }
        }
        *self.events.borrow_mut() = events;
        self.in_progress.set(false);
        count
    }

    /// Receive on every reading connection without asking epoll.
    fn fast_progress(&self, iface: &I) -> u32 {
        let mut list: [Option<Rc<Conn>>; FAST_MAX_CONNS] = Default::default();
        let mut n = 0;
        for c in self.conns.borrow().iter().flatten() {
            if c.events.get() == EV_READ && c.sock.is_open() && n < FAST_MAX_CONNS {
                list[n] = Some(c.clone());
                n += 1;
            }
        }
        let mut count = 0;
        for c in list.iter().take(n).flatten() {
            if c.alive.get() && c.events.get() == EV_READ && c.sock.is_open() {
                count += self.rx_progress(iface, c);
            }
        }
        count
    }

    /// The connection's socket is readable: the handshake of an accepted
    /// connection, the data of a put, or frames.
    fn rx_progress(&self, iface: &I, conn: &Rc<Conn>) -> u32 {
        match conn.state.get() {
            State::Closed => 0,
            State::RecvMagic | State::Accepting => self.handshake_rx(iface, conn),
            _ => match conn.put_rx.get() {
                Some(p) => self.put_rx(iface, conn, p),
                None if conn.rx_desc.borrow().is_some() => self.desc_rx(iface, conn),
                None => self.am_rx(iface, conn),
            },
        }
    }

    /// Receive what the socket holds and handle every whole frame in the
    /// buffer; a partial frame stays for the next call.
    fn am_rx(&self, iface: &I, conn: &Rc<Conn>) -> u32 {
        let seg = self.cfg.rx_seg_size;
        let Some(mut rx) = self.take_rx(conn) else { return 0 };
        // Make room for the message being received.
        if rx.off > 0 {
            let need = match wire::get_hdr(&rx.buf[rx.off..rx.len]) {
                Some((_, l)) => wire::HDR_LEN + l as usize,
                None => wire::HDR_LEN,
            };
            if rx.off + need > seg || rx.off == rx.len {
                let (o, l) = (rx.off, rx.len);
                rx.buf.copy_within(o..l, 0);
                rx.len = l - o;
                rx.off = 0;
            }
        }
        let len = rx.len;
        match conn.sock.recv(&mut rx.buf[len..seg]) {
            Io::Done(n) => {
                rx.len += n;
                self.last_rx.set(n);
            }
            Io::Again => {
                self.put_rx_back(conn, rx);
                return 0;
            }
            Io::Closed => {
                self.handle_recv_err(iface, conn, UCS_ERR_NOT_CONNECTED);
                return 0;
            }
            Io::Err(e) => {
                self.handle_recv_err(iface, conn, io_errno_status(e));
                return 0;
            }
        }
        self.handle_frames(iface, conn.clone(), rx, 0)
    }

    /// Receive the rest of the active message in the connection's
    /// descriptor, and with it up to `DESC_TAIL` bytes of what follows
    /// (into the receive buffer); a whole message goes to its handler,
    /// then the frames after it are handled.
    fn desc_rx(&self, iface: &I, conn: &Rc<Conn>) -> u32 {
        let Some(mut rx) = self.take_rx(conn) else { return 0 };
        let Some(mut d) = conn.rx_desc.borrow_mut().take() else {
            self.put_rx_back(conn, rx);
            return 0;
        };
        let seg = self.cfg.rx_seg_size;
        debug_assert!(rx.off == rx.len && d.got < d.len);
        // SAFETY: `got < len <= cap`: inside the descriptor's payload.
        let rest = unsafe { d.buf.payload().add(d.got) };
        let mut iov = [
            libc::iovec { iov_base: rest as *mut libc::c_void, iov_len: d.len - d.got },
            libc::iovec { iov_base: rx.buf.as_mut_ptr() as *mut libc::c_void, iov_len: DESC_TAIL.min(seg) },
        ];
        // SAFETY: the first entry is the rest of the descriptor's payload,
        // the second the start of the receive buffer; both are owned here
        // and nothing else touches them during the call.
        match unsafe { conn.sock.recvv(&mut iov) } {
            Io::Done(n) => {
                let body = n.min(d.len - d.got);
                d.got += body;
                rx.off = 0;
                rx.len = n - body;
                self.last_rx.set(n);
            }
            Io::Again => {
                *conn.rx_desc.borrow_mut() = Some(d);
                self.put_rx_back(conn, rx);
                return 0;
            }
            Io::Closed => {
                self.put_rx_back(conn, rx);
                self.handle_recv_err(iface, conn, UCS_ERR_NOT_CONNECTED);
                return 0;
            }
            Io::Err(e) => {
                self.put_rx_back(conn, rx);
                self.handle_recv_err(iface, conn, io_errno_status(e));
                return 0;
            }
        }
        if d.got < d.len {
            *conn.rx_desc.borrow_mut() = Some(d);
            self.put_rx_back(conn, rx);
            return 1;
        }
        // SAFETY: the descriptor holds the whole message, `len` bytes at
        // its payload, and stays valid until its handler releases it (or,
        // when the handler does not keep it, until it is dropped below).
        let status = unsafe {
            iface.hdr.invoke_am_raw(d.id, d.buf.payload() as *mut libc::c_void, d.len, UCT_CB_PARAM_FLAG_DESC)
        };
        if let Some(pool) = &self.descs {
            pool.count(status == UCS_INPROGRESS);
        }
        if status == UCS_INPROGRESS {
            d.buf.give_away();
        }
        match Self::after_handler(conn) {
            Some(cur) => self.handle_frames(iface, cur, rx, 1),
            None => 1,
        }
    }

    /// The receive context of `conn`, taken out with a receive buffer
    /// (None while it is in use).
    fn take_rx(&self, conn: &Conn) -> Option<Rx> {
        let seg = self.cfg.rx_seg_size;
        let mut rx = std::mem::take(&mut *conn.rx.try_borrow_mut().ok()?);
        if rx.buf.len() < seg {
            rx.buf = self.rx_pool.borrow_mut().pop().unwrap_or_else(|| vec![0u8; seg]);
        }
        Some(rx)
    }

    /// The connection whose frames follow the one a handler just got on
    /// `conn`: `conn` itself, or, when the handler made an endpoint that
    /// took its socket over, that endpoint's connection (the frames after
    /// this one are its); None when they go with `conn`.
    fn after_handler(conn: &Rc<Conn>) -> Option<Rc<Conn>> {
        if conn.alive.get() {
            return Some(conn.clone());
        }
        match conn.successor.take().upgrade() {
            Some(next) if release::RX_FOLLOWS_SOCKET && next.alive.get() => Some(next),
            _ => None,
        }
    }

    /// Handle every whole frame in `rx` (received on `conn`'s socket); a
    /// large active message that is only partly there continues in a
    /// descriptor, any other partial frame stays in the buffer for the
    /// next receive. `handled`: frames handled before.
    fn handle_frames(&self, iface: &I, conn: Rc<Conn>, mut rx: Rx, mut handled: u32) -> u32 {
        let mut cur = conn;
        let max_len = self.cfg.rx_seg_size - wire::HDR_LEN;
        loop {
            if cur.state.get() == State::Closed {
                // Handling the last frame closed the connection (the peer
                // went away while we answered it, or a handler destroyed
                // the endpoint): what is left of its bytes goes with it.
                return handled;
            }
            let ctx = RxCtx { phase: phase_of(cur.state.get()), rx_cap: cur.caps.get() & CAP_RX != 0, max_len };
            let (frame, l) = match proto::classify(&rx.buf[rx.off..rx.len], &ctx) {
                Ok(Scan::Partial) => {
                    self.start_desc(&cur, &mut rx);
                    break;
                }
                Ok(Scan::Frame { frame, len }) => (frame, len),
                Err(v) => {
                    self.violation(iface, &cur, v);
                    return handled;
                }
            };
            let body = rx.off + wire::HDR_LEN;
            rx.off = body + l;
            handled += 1;
            match frame {
                Frame::Am(id) => {
                    iface.hdr.invoke_am(id, &mut rx.buf[body..body + l], 0);
                    if !cur.alive.get() {
                        match Self::after_handler(&cur) {
                            Some(next) => cur = next,
                            None => return handled,
                        }
                    }
                }
                Frame::PutReq(p) => match self.put_req_rx(iface, &cur, &mut rx, p) {
                    Ok(true) => break,
                    Ok(false) => {}
                    Err(v) => {
                        self.violation(iface, &cur, v);
                        return handled;
                    }
                },
                Frame::PutAck(sn) => {
                    if let Err(v) = proto::check_put_ack(sn, cur.has(F_PUT_TX_WAITING_ACK), cur.tx_put_sn.get()) {
                        self.violation(iface, &cur, v);
                        return handled;
                    }
                    self.handle_put_ack(&cur, sn)
                }
                Frame::Keepalive => {
                    // Nothing to do: the peer checks that we are alive.
                }
                Frame::Cm => {
                    let r = proto::decode_cm(&rx.buf[body..body + l])
                        .and_then(|ev| proto::check_cm(&ev, &self.cm_ctx(&cur)).map(|()| ev));
                    let ev = match r {
                        Ok(ev) => ev,
                        Err(v) => {
                            self.violation(iface, &cur, v);
                            return handled;
                        }
                    };
                    match self.handle_cm(iface, &cur, ev) {
                        Next::Continue(c) => cur = c,
                        Next::Stop => return handled,
                    }
                }
            }
        }
        if rx.off == rx.len {
            rx.off = 0;
            rx.len = 0;
        }
        self.put_rx_back(&cur, rx);
        handled
    }

    /// The frame at `rx.off` is an active message only partly received
    /// (its header checked): when it is large, what is there moves into a
    /// descriptor and the rest will be received straight into it.
    fn start_desc(&self, conn: &Conn, rx: &mut Rx) {
        let Some(pool) = &self.descs else { return };
        let Some((id, len)) = wire::get_hdr(&rx.buf[rx.off..rx.len]) else { return };
        let len = len as usize;
        // (The header was checked; `cap` bounds the copy below all the same.)
        if id >= wire::AM_ID_MAX || len < self.cfg.rx_desc_min || len > pool.cap() {
            return;
        }
        let body = rx.off + wire::HDR_LEN;
        let got = rx.len - body;
        debug_assert!(got < len);
        let buf = pool.take();
        // SAFETY: `got < len <= cap` bytes into the descriptor's payload,
        // from the receive buffer (a different allocation).
        unsafe { std::ptr::copy_nonoverlapping(rx.buf.as_ptr().add(body), buf.payload(), got) };
        *conn.rx_desc.borrow_mut() = Some(RxDesc { buf, id, len, got });
        rx.off = rx.len;
    }

    /// Give the receive context back to the connection (unless it went
    /// away while its frames were handled).
    ///
    /// A connection keeps its receive buffer only while part of a message
    /// waits in it; an emptied buffer goes back to the interface's pool
    /// (as UCX takes its receive buffers from a pool), so an idle connection
    /// holds none, and the buffers in use are as many as the connections
    /// with a message under way.
    fn put_rx_back(&self, conn: &Conn, mut rx: Rx) {
        if rx.off == rx.len && !rx.buf.is_empty() {
            let mut pool = self.rx_pool.borrow_mut();
            if pool.len() < RX_POOL_KEEP {
                pool.push(std::mem::take(&mut rx.buf));
            } else {
                rx.buf = Vec::new();
            }
            rx.off = 0;
            rx.len = 0;
        }
        if conn.alive.get() {
            if let Ok(mut r) = conn.rx.try_borrow_mut() {
                *r = rx;
            }
        }
    }
}
