//! The receive path and the interface's progress: polling the epoll set
//! (or, with few connections that only read small messages, receiving on
//! them directly), reading frames into the connection's receive buffer and
//! handing them to active-message handlers, the put protocol or the
//! connection protocol.

use super::conn::*;
use super::connect::{phase_of, Next};
use super::iface::{TcpIface, I, LISTEN_TAG, MAX_EVENTS};
use super::proto::{self, Frame, RxCtx, Scan};
use super::desc::DescBuf;
use super::release;
use super::codec;
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
/// After a wrong guess of the message that follows a descriptor's, the
/// most messages received without guessing before the next try: a wrong
/// guess costs a copy of what it received into the wrong place, so a
/// connection whose large messages are not followed by equal ones guesses
/// at most once in this many.
const GUESS_BACKOFF_MAX: u8 = 64;
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
            let need = match codec::get_hdr(&rx.buf[rx.off..rx.len]) {
                Some((_, l)) => codec::HDR_LEN + l as usize,
                None => codec::HDR_LEN,
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
    /// descriptor and what follows it: when the receive buffer has room
    /// for it, the next frame's header and, guessed to be a message of the
    /// same length, its body straight into a second descriptor (a stream of
    /// equal messages then takes one receive for two, without a copy);
    /// then up to `DESC_TAIL` bytes into the receive buffer. Whole messages
    /// go to their handler, then the frames after them are handled.
    fn desc_rx(&self, iface: &I, conn: &Rc<Conn>) -> u32 {
        const H: usize = codec::HDR_LEN;
        let Some(mut rx) = self.take_rx(conn) else { return 0 };
        let Some(mut d) = conn.rx_desc.borrow_mut().take() else {
            self.put_rx_back(conn, rx);
            return 0;
        };
        let seg = self.cfg.rx_seg_size;
        debug_assert!(rx.off == rx.len && d.got < d.len);
        // The guess needs room in the receive buffer for all it may
        // receive (header, body, tail): the bytes go back there when the
        // next frame is something else. After a wrong guess, the next
        // few messages are received without one (GUESS_BACKOFF_MAX).
        let skip = conn.guess_skip.get();
        let guess = match &self.descs {
            Some(pool) if skip == 0 && H + d.len + DESC_TAIL <= seg => Some(pool.take()),
            _ => None,
        };
        // SAFETY: `got < len <= cap`: inside the descriptor's payload.
        let rest = unsafe { d.buf.payload().add(d.got) };
        let base = rx.buf.as_mut_ptr();
        let entry = |p: *mut u8, len: usize| libc::iovec { iov_base: p as *mut libc::c_void, iov_len: len };
        let mut iov = [entry(rest, d.len - d.got), entry(base, DESC_TAIL.min(seg)), entry(base, 0), entry(base, 0)];
        let entries = match &guess {
            Some(g) => {
                iov[1] = entry(base, H);
                iov[2] = entry(g.payload(), d.len);
                // SAFETY: H + DESC_TAIL <= seg, the receive buffer's length.
                iov[3] = entry(unsafe { base.add(H) }, DESC_TAIL);
                4
            }
            None => 2,
        };
        // SAFETY: the entries are the rest of the descriptor's payload,
        // parts of the receive buffer that do not overlap, and the guessed
        // descriptor's payload (`len <= cap`); all are owned here and
        // nothing else touches them during the call.
        let n = match unsafe { conn.sock.recvv(&mut iov[..entries]) } {
            Io::Done(n) => n,
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
        };
        self.last_rx.set(n);
        let body = n.min(d.len - d.got);
        d.got += body;
        let after = n - body;
        rx.off = 0;
        rx.len = after;
        let next = match guess {
            Some(g) => {
                let hb = after.min(H);
                let sb = (after - hb).min(d.len);
                self.place_guess(conn, &mut rx, g, d.len, hb, sb, after - hb - sb)
            }
            None => None,
        };
        if d.got < d.len {
            // (Nothing came after it, so no guess was kept.)
            *conn.rx_desc.borrow_mut() = Some(d);
            self.put_rx_back(conn, rx);
            return 1;
        }
        if skip > 0 {
            conn.guess_skip.set(skip - 1);
        }
        self.deliver_desc(iface, d);
        let Some(cur) = Self::after_handler(conn) else { return 1 };
        let Some(nd) = next else { return self.handle_frames(iface, cur, rx, 1) };
        // The handler may have changed the connection (closed it, or
        // another one took its socket over): the next message is checked
        // again against what follows now, or goes back to the receive
        // buffer for handle_frames.
        let mut hdr = [0u8; H];
        codec::put_hdr(&mut hdr, nd.id, nd.len as u32);
        if !Rc::ptr_eq(&cur, conn) || self.desc_hdr(&cur, &hdr).is_none() {
            Self::unguess(&mut rx, nd);
            return self.handle_frames(iface, cur, rx, 1);
        }
        if nd.got < nd.len {
            debug_assert!(rx.off == rx.len);
            *cur.rx_desc.borrow_mut() = Some(nd);
            self.put_rx_back(&cur, rx);
            return 1;
        }
        self.deliver_desc(iface, nd);
        match Self::after_handler(&cur) {
            Some(c) => self.handle_frames(iface, c, rx, 2),
            None => 2,
        }
    }

    /// After a receive that guessed the next message (`desc_rx`): `hb`
    /// bytes of the next frame's header are at the start of `rx`, `sb`
    /// bytes in `buf` (received as `guess` bytes of its body) and `tb`
    /// bytes after the header in `rx`. When the header is that of an active
    /// message a descriptor takes (checked as `handle_frames` does), the
    /// message is returned in `buf` with what of it was received, and `rx`
    /// holds the bytes after it; otherwise every byte goes back to `rx`, in
    /// the order received, and `buf` to the pool.
    #[allow(clippy::too_many_arguments)]
    fn place_guess(&self, conn: &Conn, rx: &mut Rx, buf: DescBuf, guess: usize, hb: usize, sb: usize, tb: usize)
                   -> Option<RxDesc> {
        const H: usize = codec::HDR_LEN;
        debug_assert!((hb == H || sb + tb == 0) && (sb == guess || tb == 0) && H + guess + tb <= rx.buf.len());
        let found = if hb == H { self.desc_hdr(conn, &rx.buf[..H]) } else { None };
        if hb == H {
            // A header to judge the guess by: a wrong one backs off.
            let b = if found.is_some() { 0 } else { (conn.guess_backoff.get().max(1) * 2).min(GUESS_BACKOFF_MAX) };
            conn.guess_backoff.set(b);
            conn.guess_skip.set(b);
        }
        let Some((id, len)) = found else {
            rx.buf.copy_within(H..H + tb, H + sb);
            // SAFETY: `sb <= guess` bytes of the descriptor's payload, into
            // the receive buffer at `H` (`H + sb + tb <= len`).
            unsafe { std::ptr::copy_nonoverlapping(buf.payload(), rx.buf.as_mut_ptr().add(hb), sb) };
            rx.off = 0;
            rx.len = hb + sb + tb;
            return None;
        };
        if len < sb {
            // The message ended inside the descriptor: what follows it
            // goes back to the receive buffer, then the tail.
            let k = sb - len;
            rx.buf.copy_within(H..H + tb, k);
            // SAFETY: bytes `len..sb` of the descriptor's payload (`sb <=
            // guess <= cap`), into the start of the receive buffer, before
            // the tail moved to `k`.
            unsafe { std::ptr::copy_nonoverlapping(buf.payload().add(len), rx.buf.as_mut_ptr(), k) };
            rx.off = 0;
            rx.len = k + tb;
            return Some(RxDesc { buf, id, len, got: len });
        }
        // The descriptor holds the start of the message; when it is longer
        // than guessed, the tail continues it.
        let extra = if sb == guess { tb.min(len - guess) } else { 0 };
        // SAFETY: `guess + extra <= len <= cap` bytes of the payload, from
        // the tail in the receive buffer (another allocation).
        unsafe { std::ptr::copy_nonoverlapping(rx.buf.as_ptr().add(H), buf.payload().add(guess), extra) };
        rx.off = H + extra;
        rx.len = H + tb;
        Some(RxDesc { buf, id, len, got: sb + extra })
    }

    /// Undo a guess: the message in `d` (its header and what was received
    /// of it) goes back to `rx`, before the bytes `rx` holds.
    fn unguess(rx: &mut Rx, d: RxDesc) {
        const H: usize = codec::HDR_LEN;
        let rest = rx.len - rx.off;
        debug_assert!(H + d.got + rest <= rx.buf.len());
        rx.buf.copy_within(rx.off..rx.len, H + d.got);
        codec::put_hdr(&mut rx.buf[..H], d.id, d.len as u32);
        // SAFETY: `got <= len <= cap` bytes of the payload, into the receive
        // buffer at `H`, before the bytes just moved.
        unsafe { std::ptr::copy_nonoverlapping(d.buf.payload(), rx.buf.as_mut_ptr().add(H), d.got) };
        rx.off = 0;
        rx.len = H + d.got + rest;
    }

    /// The id and length of the active message whose header is `hdr` when
    /// it passes `handle_frames`'s checks on `conn` and a descriptor takes
    /// it (`desc_takes`).
    fn desc_hdr(&self, conn: &Conn, hdr: &[u8]) -> Option<(u8, usize)> {
        let ctx = RxCtx {
            phase: phase_of(conn.state.get()),
            rx_cap: conn.caps.get() & CAP_RX != 0,
            max_len: self.cfg.rx_seg_size - codec::HDR_LEN,
        };
        if !matches!(proto::classify(hdr, &ctx), Ok(Scan::Partial)) {
            return None;
        }
        let (id, len) = codec::get_hdr(hdr)?;
        self.desc_takes(id, len as usize).then_some((id, len as usize))
    }

    /// Whether a partly received active message of `len` bytes continues
    /// in a descriptor.
    fn desc_takes(&self, id: u8, len: usize) -> bool {
        self.descs.as_ref().is_some_and(|pool| id < codec::AM_ID_MAX && len >= self.cfg.rx_desc_min && len <= pool.cap())
    }

    /// A whole message in a descriptor goes to its handler, which may keep
    /// the descriptor.
    fn deliver_desc(&self, iface: &I, d: RxDesc) {
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
        let max_len = self.cfg.rx_seg_size - codec::HDR_LEN;
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
            let body = rx.off + codec::HDR_LEN;
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
        let Some((id, len)) = codec::get_hdr(&rx.buf[rx.off..rx.len]) else { return };
        let len = len as usize;
        // (The header was checked; `cap` bounds the copy below all the same.)
        if !self.desc_takes(id, len) {
            return;
        }
        let body = rx.off + codec::HDR_LEN;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transports::tcp::desc::DescPoolHandle;

    /// A guessed message taken back (the connection changed under it): its
    /// header and received bytes come first again, then what followed it.
    #[test]
    fn unguess_restores_stream_order() {
        let pool = DescPoolHandle::new(16, 1000).expect("pool");
        let buf = pool.take();
        let body: Vec<u8> = (0..300u32).map(|i| (i * 7) as u8).collect();
        // SAFETY: 300 bytes into a payload of 1000.
        unsafe { std::ptr::copy_nonoverlapping(body.as_ptr(), buf.payload(), body.len()) };
        let d = RxDesc { buf, id: 5, len: 900, got: 300 };
        // What followed sits after some consumed bytes of the buffer.
        let mut rx = Rx { buf: vec![0xaa; 2000], off: 8, len: 8 + 40 };
        for (i, b) in rx.buf[8..48].iter_mut().enumerate() {
            *b = i as u8 + 100;
        }
        TcpIface::unguess(&mut rx, d);
        assert_eq!((rx.off, rx.len), (0, codec::HDR_LEN + 300 + 40));
        assert_eq!(codec::get_hdr(&rx.buf[..codec::HDR_LEN]), Some((5, 900)));
        assert_eq!(&rx.buf[codec::HDR_LEN..codec::HDR_LEN + 300], &body[..]);
        let rest: Vec<u8> = (0..40u8).map(|i| i + 100).collect();
        assert_eq!(&rx.buf[codec::HDR_LEN + 300..rx.len], &rest[..]);
    }
}
