//! Connection establishment: creating, connecting and accepting sockets,
//! the connection protocol (the magic number a connecting side sends first,
//! connection requests, acknowledgements and FIN), the matching of
//! simultaneous connections, and the endpoint operations built on them
//! (creation, CONNECT_TO_EP, destruction).

use super::conn::*;
use super::iface::{TcpEp, TcpIface, I};
use super::proto::{self, CmCtx, CmEvent, Phase, Violation};
use super::codec;
use crate::abi::*;
use crate::core::iface::EpParams;
use crate::core::handles::*;
use crate::sys::addr::{SockAddr, AF_INET, AF_INET6};
use crate::sys::epoll::{EV_READ, EV_WRITE};
use crate::sys::{errno_str, Errno};
use crate::sys::socket::{Io, Socket};
use std::rc::Rc;
use std::time::{Duration, Instant};

/// What a connection packet did to the connection being read.
pub(super) enum Next {
    /// Keep reading on this connection (possibly another one than before:
    /// the socket moved to it).
    Continue(Rc<Conn>),
    /// The connection is gone.
    Stop,
}

impl TcpIface {
    // -----------------------------------------------------------------------
    // Sockets and connecting.

    pub(super) fn create_socket_and_connect(&self, iface: &I, conn: &Rc<Conn>) -> Result<(), ucs_status_t> {
        let r = self.socket_and_connect(iface, conn);
        if r.is_err() && conn.retries.get() > 1 {
            self.set_failed(iface, conn, UCS_ERR_ENDPOINT_TIMEOUT);
        }
        r
    }

    fn socket_and_connect(&self, iface: &I, conn: &Rc<Conn>) -> Result<(), ucs_status_t> {
        let Some(peer) = conn.peer.get() else { return Err(UCS_ERR_INVALID_PARAM) };
        let sock = Socket::stream(peer.family, false).map_err(|e| {
            crate::error!("socket create failed: {}", errno_str(e as i32));
            UCS_ERR_IO_ERROR
        })?;
        let setup = self.bind_source(conn, &sock)
            .and_then(|()| self.set_sockopt(&sock, self.cfg.conn_nb, Some(&peer)))
            .and_then(|()| self.keepalive_enable(&sock));
        // The connection keeps the socket also when setting it up failed
        // (it closes with the connection). It had none before: a failed
        // one was closed.
        drop(conn.sock.replace(Some(sock)));
        setup?;
        conn.retries.set(conn.retries.get() + 1);
        if conn.retries.get() > self.cfg.max_conn_retries {
            crate::error!("tcp_ep {:p}: reached maximum number of connection retries ({})", Rc::as_ptr(conn),
                          self.cfg.max_conn_retries);
            return Err(UCS_ERR_TIMED_OUT);
        }
        self.set_state(conn, State::Connecting);
        let connected = conn.sock.with(|s| connect(s, &peer)).unwrap_or(Err(UCS_ERR_IO_ERROR))?;
        if !connected {
            self.mod_events(conn, EV_WRITE, 0);
            return Ok(());
        }
        if !self.cfg.conn_nb && conn.sock.with(|s| s.set_nonblock().is_err()).unwrap_or(true) {
            return Err(UCS_ERR_IO_ERROR);
        }
        self.conn_complete(iface, conn);
        Ok(())
    }

    /// The socket is connected: introduce ourselves.
    pub(super) fn conn_complete(&self, iface: &I, conn: &Rc<Conn>) {
        if self.send_event(iface, conn, codec::EV_CONN_REQ) != UCS_OK {
            return;
        }
        if conn.has(F_CONNECT_TO_EP) {
            self.set_connected(iface, conn);
        } else {
            self.set_state(conn, State::WaitingAck);
        }
        self.mod_events(conn, EV_READ, 0);
    }

    /// Connect a user endpoint (CONNECT_TO_IFACE, or the connecting side
    /// of CONNECT_TO_EP).
    fn ep_connect(&self, iface: &I, conn: &Rc<Conn>) -> Result<(), ucs_status_t> {
        self.set_state(conn, State::Connecting);
        let self_conn = self.is_self(conn);
        if self_conn || conn.has(F_CONNECT_TO_EP) {
            self.create_socket_and_connect(iface, conn)?;
        } else {
            let peer = conn.peer.get();
            let sn = conn.cm_id.get();
            let found = self.find_conn(|c| {
                c.queue.get() == Some(Queue::Unexp) && c.cm_id.get() == sn
                    && c.peer.get().zip(peer).is_some_and(|(a, b)| a.same(&b))
            });
            match found {
                None => self.create_socket_and_connect(iface, conn)?,
                Some(rx_conn) => {
                    // The peer connected to us first: take its socket.
                    rx_conn.queue.set(None);
                    rx_conn.remove_cap(CAP_RX);
                    conn.add_cap(CAP_RX);
                    self.replace(iface, conn, &rx_conn);
                    self.set_state(conn, State::WaitingAck);
                    self.send_event(iface, conn, codec::EV_CONN_REQ);
                }
            }
        }
        conn.add_cap(CAP_TX);
        if !self_conn && !conn.has(F_CONNECT_TO_EP) {
            conn.queue.set(Some(Queue::Exp));
        }
        if conn.state.get() == State::Connected {
            self.dispatch_pending(iface, conn);
        }
        Ok(())
    }

    /// Move the socket (and what was received or is being sent on it) from
    /// `from` to `to`; `from` goes away.
    fn replace(&self, iface: &I, to: &Rc<Conn>, from: &Rc<Conn>) {
        let events = from.events.get();
        self.mod_events(from, 0, events);
        self.mod_events(to, 0, to.events.get());
        drop(to.sock.replace(from.sock.take()));
        self.mod_events(to, events, 0);
        to.retries.set(to.retries.get() + 1);
        if let (Ok(mut f), Ok(mut t)) = (from.rx.try_borrow_mut(), to.rx.try_borrow_mut()) {
            if f.off < f.len {
                std::mem::swap(&mut *f, &mut *t);
            }
        }
        if let (Ok(mut f), Ok(mut t)) = (from.tx.try_borrow_mut(), to.tx.try_borrow_mut()) {
            if f.busy() {
                std::mem::swap(&mut *f, &mut *t);
            }
        }
        let moved: Vec<_> = from.pending.borrow_mut().drain(..).collect();
        to.pending.borrow_mut().extend(moved);
        let moved: Vec<_> = from.put_comps.borrow_mut().drain(..).collect();
        to.put_comps.borrow_mut().extend(moved);
        to.set(from.flags.get() & (F_PUT_TX_WAITING_ACK | F_PUT_RX_SENDING_ACK | F_NEED_FLUSH));
        if let Some(d) = from.rx_desc.borrow_mut().take() {
            *to.rx_desc.borrow_mut() = Some(d);
        }
        if let Some(p) = from.put_rx.take() {
            to.put_rx.set(Some(p));
            to.put_gen.set(from.put_gen.get());
        }
        to.rx_put_sn.set(from.rx_put_sn.get());
        from.caps.set(0);
        from.successor.set(Rc::downgrade(to));
        self.set_failed(iface, from, UCS_ERR_ENDPOINT_TIMEOUT);
    }

    /// The listening socket is readable: accept what is pending (at most
    /// `ACCEPT_BUDGET` per call). Running out of descriptors or memory
    /// pauses accepting for a while (the socket keeps listening); errors
    /// of one pending connection skip it.
    pub(super) fn accept_all(&self) {
        self.run_timers(true);
        if self.listen_paused.get().is_some() {
            return;
        }
        for _ in 0..ACCEPT_BUDGET {
            let Some(r) = self.listener.borrow().as_ref().map(Socket::accept) else { return };
            match r {
                Ok(Some((sock, peer))) => {
                    self.accept_backoff.set(ACCEPT_BACKOFF_MIN);
                    let fd = sock.fd();
                    if !sock.is_connected() {
                        crate::warn!("tcp_iface {}: connection establishment for socket fd {} from {} was \
                                      unsuccessful", self.if_name, fd, peer.map(|p| p.to_string()).unwrap_or_default());
                        continue;
                    }
                    if self.set_sockopt(&sock, false, peer.as_ref()).is_err() {
                        continue;
                    }
                    let conn = self.new_conn(Some(sock), None, false);
                    self.set_state(&conn, State::RecvMagic);
                    self.mod_events(&conn, EV_READ, 0);
                    if let Some(t) = self.cfg.handshake_timeout {
                        self.hs_queue.borrow_mut().push_back((Instant::now() + t, conn.tag()));
                        self.timers_on.set(true);
                    }
                    crate::debug!("tcp_iface {}: accepted connection from {} on {} to tcp_ep {:p} (fd {})",
                                  self.if_name, peer.map(|p| p.to_string()).unwrap_or_default(), self.ifaddr,
                                  Rc::as_ptr(&conn), fd);
                }
                Ok(None) => return,
                Err(e @ (Errno::EMFILE | Errno::ENFILE | Errno::ENOBUFS | Errno::ENOMEM)) => {
                    self.pause_listener(e);
                    return;
                }
                Err(e @ (Errno::EBADF | Errno::EINVAL | Errno::ENOTSOCK | Errno::EOPNOTSUPP | Errno::EFAULT)) => {
                    crate::error!("accept() failed: {}", errno_str(e as i32));
                    self.close_listener();
                    return;
                }
                Err(e) => {
                    // An error of that one connection (EPROTO, ENETDOWN,
                    // EPERM...): the next one may be fine.
                    crate::debug!("tcp_iface {}: accept() failed: {}", self.if_name, errno_str(e as i32));
                }
            }
        }
    }

    /// Out of descriptors or memory: stop accepting for a while (doubling
    /// up to `ACCEPT_BACKOFF_MAX` while it lasts). The listening socket
    /// stays in the epoll set edge-triggered, so that the pending
    /// connection does not wake every poll, and a new one still wakes a
    /// sleeping process, which then accepts once the pause is over.
    fn pause_listener(&self, e: Errno) {
        let now = Instant::now();
        let back = self.accept_backoff.get();
        self.accept_backoff.set((back * 2).min(ACCEPT_BACKOFF_MAX));
        let quiet = self.accept_logged.get().is_some_and(|t| now.duration_since(t) < ACCEPT_LOG_EVERY);
        if !quiet {
            self.accept_logged.set(Some(now));
            crate::error!("tcp_iface {}: accept() failed: {}; not accepting connections for {} ms", self.if_name,
                          errno_str(e as i32), back.as_millis());
        }
        if let Some(l) = self.listener.borrow().as_ref() {
            super::iface::epoll_set(&self.epoll, l, EV_READ, EV_READ | EV_EDGE, super::iface::LISTEN_TAG);
        }
        self.listen_paused.set(Some(now + back));
        self.timers_on.set(true);
    }

    fn resume_listener(&self) {
        self.listen_paused.set(None);
        if let Some(l) = self.listener.borrow().as_ref() {
            super::iface::epoll_set(&self.epoll, l, EV_READ | EV_EDGE, EV_READ, super::iface::LISTEN_TAG);
        }
    }

    /// The coarse timers (handshake deadlines, the accept pause): the clock
    /// is read every `TIMER_POLLS` calls, or at once with `force`.
    pub(super) fn run_timers(&self, force: bool) {
        if !self.timers_on.get() {
            return;
        }
        let k = self.timer_polls.get() + 1;
        if !force && k < TIMER_POLLS {
            self.timer_polls.set(k);
            return;
        }
        self.timer_polls.set(0);
        let now = Instant::now();
        loop {
            let tag = {
                let mut q = self.hs_queue.borrow_mut();
                match q.front() {
                    Some(&(t, tag)) if t <= now => {
                        q.pop_front();
                        tag
                    }
                    _ => break,
                }
            };
            let Some(c) = self.lookup(tag) else { continue };
            if matches!(c.state.get(), State::RecvMagic | State::Accepting) && c.caps.get() & CAP_TX == 0
                && c.sock.is_open()
            {
                crate::error!("tcp_iface {}: the peer of tcp_ep {:p} (fd {}) did not complete the handshake in \
                               time (UCX_TCP_HANDSHAKE_TIMEOUT); closing the connection", self.if_name,
                              Rc::as_ptr(&c), c.sock.fd());
                self.destroy_conn(&c);
            }
        }
        if self.listen_paused.get().is_some_and(|t| t <= now) {
            self.resume_listener();
        }
        self.timers_on.set(!self.hs_queue.borrow().is_empty() || self.listen_paused.get().is_some());
    }

    // -----------------------------------------------------------------------
    // The connection protocol.

    /// Send a connection event (with the magic number first when this is
    /// the request of a fresh socket).
    pub(super) fn send_event(&self, iface: &I, conn: &Rc<Conn>, event: u32) -> ucs_status_t {
        let Ok(mut tx) = conn.tx.try_borrow_mut() else { return UCS_ERR_NO_RESOURCE };
        if event & codec::EV_CONN_REQ != 0 {
            conn.set(F_REQ_SENT);
        }
        if tx.busy() {
            conn.cm_pending.set(conn.cm_pending.get() | event);
            return UCS_OK;
        }
        // Connection events are small: a connection that only ever sends
        // them (an accepted one the peer sends on) keeps a small buffer.
        let at = tx.held;
        self.tx_ensure(&mut tx, at + CTRL_BUF_LEN);
        let mut pkt = Vec::with_capacity(CTRL_BUF_LEN);
        if event == codec::EV_CONN_REQ {
            if conn.state.get() == State::Connecting {
                pkt.extend_from_slice(&codec::MAGIC.to_ne_bytes());
            }
            let flags = if conn.has(F_CONNECT_TO_EP) { codec::REQ_FLAG_CONNECT_TO_EP } else { 0 };
            let at = pkt.len();
            pkt.extend_from_slice(&[0u8; codec::HDR_LEN]);
            codec::encode_conn_req(&mut pkt, flags, conn.cm_id.get(), &self.ifaddr);
            let body = (pkt.len() - at - codec::HDR_LEN) as u32;
            codec::put_hdr(&mut pkt[at..], codec::AM_ID_CM, body);
        } else {
            pkt.extend_from_slice(&[0u8; codec::HDR_LEN]);
            codec::put_hdr(&mut pkt, codec::AM_ID_CM, codec::EVENT_LEN as u32);
            pkt.extend_from_slice(&event.to_ne_bytes());
        }
        tx.buf[at..at + pkt.len()].copy_from_slice(&pkt);
        tx.push_head(at + pkt.len());
        let s = self.flush_tx(iface, conn, tx, false);
        if s != UCS_OK {
            crate::diag!("tcp_ep {:p}: unable to send connection event {} to {}", Rc::as_ptr(conn), event,
                         conn.peer.get().map(|p| p.to_string()).unwrap_or_default());
        }
        s
    }

    /// An accepted connection is readable: the magic number, then the
    /// frame of the connection request, read exactly (nothing after it:
    /// that is for the receive path once the handshake is done) into the
    /// connection's small handshake buffer.
    pub(super) fn handshake_rx(&self, iface: &I, conn: &Rc<Conn>) -> u32 {
        let mut count = 0;
        loop {
            let st = conn.state.get();
            let Ok(mut hs) = conn.hs.try_borrow_mut() else { return count };
            let want = match st {
                State::RecvMagic => codec::MAGIC_LEN,
                State::Accepting if hs.len < codec::HDR_LEN => codec::HDR_LEN,
                State::Accepting => match proto::handshake_frame_len(&hs.buf[..codec::HDR_LEN]) {
                    Ok(l) => codec::HDR_LEN + l,
                    Err(v) => {
                        drop(hs);
                        self.violation(iface, conn, v);
                        return count;
                    }
                },
                _ => return count,
            };
            let have = hs.len;
            if have < want {
                match conn.sock.recv(&mut hs.buf[have..want]) {
                    Io::Done(n) => hs.len += n,
                    Io::Again => return count,
                    Io::Closed | Io::Err(_) => {
                        drop(hs);
                        crate::debug!("tcp_ep {:p}: connection dropped by the peer during the handshake ({:?})",
                                      Rc::as_ptr(conn), st);
                        self.destroy_conn(conn);
                        return count;
                    }
                }
                if hs.len < want {
                    return count;
                }
            }
            count = 1;
            if st == State::RecvMagic {
                let mut m = [0u8; codec::MAGIC_LEN];
                m.copy_from_slice(&hs.buf[..codec::MAGIC_LEN]);
                hs.len = 0;
                drop(hs);
                if let Err(v) = proto::check_magic(&m) {
                    self.violation(iface, conn, v);
                    return count;
                }
                self.set_state(conn, State::Accepting);
                continue;
            }
            if want == codec::HDR_LEN {
                continue;
            }
            let mut body = [0u8; HS_BUF_LEN];
            let n = want - codec::HDR_LEN;
            body[..n].copy_from_slice(&hs.buf[codec::HDR_LEN..want]);
            hs.len = 0;
            drop(hs);
            let r = proto::decode_cm(&body[..n]).and_then(|ev| proto::check_cm(&ev, &self.cm_ctx(conn)).map(|()| ev));
            match r {
                Ok(CmEvent::Req(req)) => {
                    self.handle_conn_req(iface, conn, &req);
                }
                Ok(_) => self.violation(iface, conn, Violation::BeforeHandshake(codec::AM_ID_CM)),
                Err(v) => self.violation(iface, conn, v),
            }
            return count;
        }
    }

    /// The facts about `conn` its connection events are checked against.
    pub(super) fn cm_ctx(&self, conn: &Conn) -> CmCtx {
        CmCtx {
            phase: phase_of(conn.state.get()),
            rx_cap: conn.caps.get() & CAP_RX != 0,
            req_sent: conn.has(F_REQ_SENT),
            cm_id: conn.cm_id.get(),
            peer: conn.peer.get(),
        }
    }

    /// A connection event the state machine expects (see `proto::check_cm`).
    pub(super) fn handle_cm(&self, iface: &I, conn: &Rc<Conn>, ev: CmEvent) -> Next {
        match ev {
            CmEvent::Req(req) => self.handle_conn_req(iface, conn, &req),
            CmEvent::Ack | CmEvent::AckWithReq => {
                if ev == CmEvent::AckWithReq {
                    conn.add_cap(CAP_RX);
                }
                drop(conn.stale.take());
                if conn.state.get() != State::Connected {
                    self.set_connected(iface, conn);
                }
                if conn.alive.get() { Next::Continue(conn.clone()) } else { Next::Stop }
            }
            CmEvent::Fin => {
                if conn.caps.get() == CAP_RX {
                    self.destroy_conn(conn);
                    Next::Stop
                } else {
                    conn.remove_cap(CAP_RX);
                    Next::Continue(conn.clone())
                }
            }
        }
    }

    /// The peer broke the protocol: one log line, and the connection is
    /// closed (a user endpoint hears of it through its error handler).
    pub(super) fn violation(&self, iface: &I, conn: &Rc<Conn>, v: Violation) {
        crate::error!("tcp_iface {}: tcp_ep {:p} (fd {}, {:?}, peer {}): {}; closing the connection", self.if_name,
                      Rc::as_ptr(conn), conn.sock.fd(), conn.state.get(),
                      conn.peer.get().map(|p| p.to_string()).unwrap_or_else(|| "-".into()), v);
        conn.put_rx.set(None);
        drop(conn.rx_desc.borrow_mut().take());
        self.handle_disconnected(iface, conn, UCS_ERR_IO_ERROR);
    }

    fn handle_conn_req(&self, iface: &I, conn: &Rc<Conn>, req: &codec::ConnReq) -> Next {
        let to_ep = req.flags & codec::REQ_FLAG_CONNECT_TO_EP != 0;
        if conn.state.get() == State::Accepting {
            conn.peer.set(Some(req.addr));
            conn.cm_id.set(req.cm_id);
            if to_ep {
                conn.set(F_CONNECT_TO_EP);
            }
        }
        crate::trace!("tcp_ep {:p}: CONN_REQ received from {}:{}", Rc::as_ptr(conn), req.addr, req.cm_id);
        conn.add_cap(CAP_RX);
        if conn.state.get() == State::Connected {
            // The peer opens its direction on our connection.
            if !to_ep && self.send_event(iface, conn, codec::EV_CONN_ACK) != UCS_OK {
                return self.drop_internal(conn);
            }
            return Next::Continue(conn.clone());
        }
        let connect_to_self = self.is_self(conn);
        if !connect_to_self {
            if !to_ep {
                let sn = req.cm_id;
                let addr = req.addr;
                let peer_conn = self.find_conn(|c| {
                    !std::ptr::eq(c, &**conn) && c.caps.get() & CAP_TX != 0 && c.queue.get() == Some(Queue::Exp)
                        && c.cm_id.get() == sn && c.peer.get().is_some_and(|p| p.same(&addr))
                });
                if let Some(peer_conn) = peer_conn {
                    return self.handle_simult_conn(iface, conn, &peer_conn);
                }
            } else {
                let key = req.cm_id;
                let Some(user) = self.find_conn(|c| c.on_ptr_map.get() && c.cm_id.get() == key) else {
                    crate::debug!("tcp_ep {:p}: no endpoint with key {:#x} (destroyed?), dropping the connection",
                                  Rc::as_ptr(conn), key);
                    return self.drop_internal(conn);
                };
                user.on_ptr_map.set(false);
                user.peer.set(conn.peer.get());
                user.retries.set(user.retries.get() + 1);
                user.add_cap(CAP_TX | CAP_RX);
                conn.remove_cap(CAP_RX);
                self.replace(iface, &user, conn);
                self.set_connected(iface, &user);
                return if user.alive.get() { Next::Continue(user) } else { Next::Stop };
            }
            conn.queue.set(Some(Queue::Unexp));
        }
        self.set_connected(iface, conn);
        if !to_ep && self.send_event(iface, conn, codec::EV_CONN_ACK) != UCS_OK {
            return self.drop_internal(conn);
        }
        Next::Continue(conn.clone())
    }

    fn drop_internal(&self, conn: &Rc<Conn>) -> Next {
        if conn.caps.get() & CAP_TX == 0 {
            self.destroy_conn(conn);
            return Next::Stop;
        }
        if conn.alive.get() { Next::Continue(conn.clone()) } else { Next::Stop }
    }

    /// Both sides connected at once: the side with the greater address
    /// takes the peer's socket, the other keeps its own (UCX's rule).
    fn handle_simult_conn(&self, iface: &I, accepted: &Rc<Conn>, mine: &Rc<Conn>) -> Next {
        if !self.accept_conn(mine) {
            accepted.remove_cap(CAP_RX);
            mine.add_cap(CAP_RX);
            self.mod_events(mine, EV_READ, 0);
            if mine.state.get() != State::Connected {
                self.mod_events(accepted, 0, accepted.events.get());
                drop(mine.stale.replace(accepted.sock.take()));
            }
            self.destroy_conn(accepted);
            return Next::Stop;
        }
        // Take the accepted socket and drop ours.
        self.mod_events(mine, 0, mine.events.get());
        self.mod_events(accepted, 0, accepted.events.get());
        drop(mine.sock.replace(accepted.sock.take()));
        mine.tx.borrow_mut().reset();
        accepted.remove_cap(CAP_RX);
        mine.add_cap(CAP_RX);
        let rx = std::mem::take(&mut *accepted.rx.borrow_mut());
        drop(rx);
        self.destroy_conn(accepted);
        let mut ev = codec::EV_CONN_ACK;
        if matches!(mine.state.get(), State::Connecting | State::WaitingAck) {
            ev |= codec::EV_CONN_REQ;
        }
        // The request on a fresh socket carries the magic number only in
        // state CONNECTING; ACK|REQ never does.
        if self.send_event(iface, mine, ev) != UCS_OK {
            return if mine.alive.get() { Next::Continue(mine.clone()) } else { Next::Stop };
        }
        self.mod_events(mine, EV_READ, 0);
        self.set_connected(iface, mine);
        if mine.alive.get() { Next::Continue(mine.clone()) } else { Next::Stop }
    }

    // -----------------------------------------------------------------------
    // Endpoint operations.

    /// A new user endpoint: connected to the peer's interface, or (without
    /// an interface address) waiting for `connect_to_ep`.
    pub(super) fn create_ep(&self, iface: &I, params: &EpParams<'_>) -> Result<TcpEp, ucs_status_t> {
        if let (Some(dev), Some(iface_addr)) = (params.dev_addr, params.iface_addr) {
            let dest = dest_addr(dev, iface_addr)?;
            let conn = self.new_conn(None, Some(dest), true);
            conn.cm_id.set(self.next_conn_sn(&dest));
            if let Err(e) = self.ep_connect(iface, &conn) {
                self.destroy_conn(&conn);
                return Err(e);
            }
            Ok(TcpEp { conn })
        } else {
            let conn = self.new_conn(None, None, true);
            conn.set(F_CONNECT_TO_EP);
            let key = self.next_key.get();
            self.next_key.set(key + 2);
            conn.cm_id.set(key);
            conn.on_ptr_map.set(true);
            Ok(TcpEp { conn })
        }
    }

    /// The user endpoint goes away. A connection the peer also sends on
    /// stays, RX only, until the peer closes its direction.
    pub(super) fn destroy_ep(&self, iface: &I, conn: &Rc<Conn>) {
        let conn = conn.clone();
        self.release_held(iface, &conn);
        conn.owner.set(std::ptr::null_mut());
        conn.pending.borrow_mut().clear();
        if !conn.alive.get() {
            return;
        }
        if !conn.has(F_CONNECT_TO_EP) && conn.state.get() == State::Connected && conn.caps.get() == CAP_TX | CAP_RX {
            // Keep receiving: the peer may still send on this connection.
            conn.remove_cap(CAP_TX);
            self.purge(&conn, UCS_ERR_CANCELED);
            conn.queue.set(Some(Queue::Unexp));
            if self.send_event(iface, &conn, codec::EV_CONN_FIN) == UCS_OK && conn.alive.get() {
                return;
            }
        }
        self.destroy_conn(&conn);
    }

    /// CONNECT_TO_EP: the side with the lower address connects, the other
    /// waits for the connection request that names its endpoint key.
    pub(super) fn connect_to_ep(&self, iface: &I, conn: &Rc<Conn>, dev: Option<PeerAddr<'_>>,
                                ep_addr: Option<PeerAddr<'_>>) -> ucs_status_t {
        if conn.state.get() == State::Connected {
            return UCS_OK;
        }
        if !conn.on_ptr_map.get() {
            return UCS_ERR_CONNECTION_RESET;
        }
        let (Some(dev), Some(ep_addr)) = (dev, ep_addr) else { return UCS_ERR_INVALID_PARAM };
        // A tcp endpoint address is 10 bytes long.
        let Some(a) = ep_addr.read::<{ codec::EP_ADDR_LEN }>() else {
            return UCS_ERR_INVALID_PARAM;
        };
        let Some((_, key)) = codec::decode_ep_addr(&a) else { return UCS_ERR_INVALID_PARAM };
        let dest = match dest_addr(dev, ep_addr) {
            Ok(d) => d,
            Err(e) => return e,
        };
        conn.peer.set(Some(dest));
        if !self.accept_conn(conn) {
            conn.add_cap(CAP_RX);
            conn.on_ptr_map.set(false);
            conn.cm_id.set(key);
            return match self.ep_connect(iface, conn) {
                Ok(()) => UCS_OK,
                Err(e) => e,
            };
        }
        self.set_state(conn, State::Accepting);
        UCS_OK
    }
}

/// The phase of the handshake a connection state is in.
pub(super) fn phase_of(st: State) -> Phase {
    match st {
        State::Accepting => Phase::Handshake,
        State::WaitingAck => Phase::WaitingAck,
        State::Connected => Phase::Connected,
        _ => Phase::Other,
    }
}

/// Most connections accepted per readable event of the listening socket.
const ACCEPT_BUDGET: usize = 256;
/// The pause of accepting after running out of descriptors or memory.
pub(super) const ACCEPT_BACKOFF_MIN: Duration = Duration::from_millis(50);
const ACCEPT_BACKOFF_MAX: Duration = Duration::from_secs(1);
/// At most one log line per this much time about failing accepts.
const ACCEPT_LOG_EVERY: Duration = Duration::from_secs(10);
/// Progress calls between two looks at the clock for the coarse timers.
const TIMER_POLLS: u32 = 64;
/// Edge-triggered epoll (the paused listening socket).
const EV_EDGE: u32 = libc::EPOLLET as u32;

/// Whether `conn` leads to the peer at these addresses (1.16+
/// `uct_ep_is_connected`): both addresses are needed, and the peer's socket
/// address must be the one the connection was made to.
pub(super) fn conn_leads_to(conn: &Conn, dev: Option<PeerAddr<'_>>, addr: Option<PeerAddr<'_>>) -> bool {
    let (Some(dev), Some(addr)) = (dev, addr) else { return false };
    match (dest_addr(dev, addr), conn.peer.get()) {
        (Ok(want), Some(have)) => want == have,
        _ => false,
    }
}

/// The peer's socket address from its device address and the port at the
/// start of its iface or endpoint address.
fn dest_addr(dev: PeerAddr<'_>, port_addr: PeerAddr<'_>) -> Result<SockAddr, ucs_status_t> {
    // tcp device addresses start with their 2-byte head, iface and ep
    // addresses with the 2-byte port.
    let head = dev.read::<2>().ok_or(UCS_ERR_INVALID_PARAM)?;
    let pa = port_addr.read::<2>().ok_or(UCS_ERR_INVALID_PARAM)?;
    let port = codec::decode_iface_addr(&pa).ok_or(UCS_ERR_INVALID_PARAM)?;
    let (flags, family) = (head[0], head[1] as u16);
    let loopback = flags & codec::DEV_FLAG_LOOPBACK != 0;
    match family {
        AF_INET => {
            let ip = if loopback {
                [127, 0, 0, 1]
            } else {
                // An IPv4 device address is 6 bytes long.
                let a = dev.read::<6>().ok_or(UCS_ERR_INVALID_PARAM)?;
                [a[2], a[3], a[4], a[5]]
            };
            Ok(SockAddr::v4(ip, port))
        }
        AF_INET6 => {
            let mut ip = [0u8; 16];
            if loopback {
                ip[15] = 1;
            } else {
                // An IPv6 device address is 18 bytes long.
                let a = dev.read::<18>().ok_or(UCS_ERR_INVALID_PARAM)?;
                ip.copy_from_slice(&a[2..]);
            }
            Ok(SockAddr::v6(ip, port))
        }
        f => {
            crate::error!("tcp: device address of unknown family {}", f);
            Err(UCS_ERR_INVALID_PARAM)
        }
    }
}

/// Start connecting `s` to `peer`: Ok(true) connected, Ok(false) in
/// progress. A refused connection is `UCS_ERR_UNREACHABLE` (the peer's
/// interface is gone), any other failure `UCS_ERR_IO_ERROR`.
fn connect(s: &Socket, peer: &SockAddr) -> Result<bool, ucs_status_t> {
    s.connect(peer).map_err(|e| {
        crate::diag!("connect(fd={}, dest_addr={}) failed: {}", s.fd(), peer, errno_str(e as i32));
        if e == Errno::ECONNREFUSED { UCS_ERR_UNREACHABLE } else { UCS_ERR_IO_ERROR }
    })
}
