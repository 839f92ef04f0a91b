//! Connections and the interface's table of them.
//!
//! A [`Conn`] is what UCX calls a tcp endpoint: one socket (which may move
//! from one `Conn` to another while connections are matched), a send and a
//! receive context, and "capabilities": TX when a user endpoint sends on it,
//! RX when the peer sends on it. A user endpoint owns one `Conn` for its
//! whole life; the interface also creates RX-only `Conn`s for accepted
//! sockets, which are matched with user endpoints by (peer address,
//! connection sequence number) for CONNECT_TO_IFACE, or by the endpoint key
//! carried in the connection request for CONNECT_TO_EP.
//!
//! This file holds the connection's types (state, queue, socket slot, send
//! and receive contexts), the table of connections (slots tagged with a
//! generation number; the tag is what the epoll set reports), the lookups
//! used for matching, and the state changes of a connection, including how
//! it fails.
//!
//! Sockets are owned values ([`Socket`]): a connection's socket closes when
//! it is taken out of its [`SockCell`] and dropped, and every such place
//! first takes it out of the epoll set (`mod_events(conn, 0, events)`), as
//! UCX does before closing.

use super::iface::{epoll_set, TcpIface, I};
use super::codec::{self, PutReq};
use crate::abi::*;
use crate::core::handles::*;
use crate::sys::addr::SockAddr;
use crate::sys::epoll::EV_READ;
use crate::sys::socket::{Io, MsgFlags, Socket};
use crate::sys::Errno;
use libc::c_void;
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::os::fd::RawFd;
use std::rc::{Rc, Weak};

/// Send-buffer room for one control frame (a connection event with the
/// magic number and the largest request, a put acknowledgement, a
/// keepalive): connections that send only these never get a full segment.
pub(super) const CTRL_BUF_LEN: usize = 64;
const _: () = assert!(codec::MAGIC_LEN + codec::HDR_LEN + codec::CONN_REQ_LEN + 28 <= CTRL_BUF_LEN);

pub(super) const CAP_TX: u8 = 1;
pub(super) const CAP_RX: u8 = 2;

pub(super) const F_CONNECT_TO_EP: u16 = 1 << 0;
pub(super) const F_PUT_TX_WAITING_ACK: u16 = 1 << 1;
pub(super) const F_PUT_RX_SENDING_ACK: u16 = 1 << 2;
pub(super) const F_NEED_FLUSH: u16 = 1 << 3;
/// We sent (or queued) a connection request on this connection: an
/// acknowledgement may come.
pub(super) const F_REQ_SENT: u16 = 1 << 4;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum State {
    Closed,
    Connecting,
    RecvMagic,
    Accepting,
    WaitingAck,
    Connected,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Queue {
    /// Connections with TX capability (made by the user).
    Exp,
    /// Accepted, RX-only connections waiting for a user endpoint.
    Unexp,
}

/// The socket of a connection, when it has one. A connection starts
/// without one (until it connects, or gets one moved to it by matching),
/// and loses it when it fails or goes away. The data calls are the
/// transport's hot path: one system call each, with the flags of UCX's
/// socket layer (`MSG_NOSIGNAL` on sends, none on receives); without a
/// socket they fail as a call on a closed descriptor would (EBADF).
#[derive(Default)]
pub(super) struct SockCell(RefCell<Option<Socket>>);

impl SockCell {
    pub(super) fn new(sock: Option<Socket>) -> SockCell {
        SockCell(RefCell::new(sock))
    }

    /// The descriptor number, -1 without a socket (for logs).
    pub(super) fn fd(&self) -> RawFd {
        self.0.borrow().as_ref().map_or(-1, Socket::fd)
    }

    pub(super) fn is_open(&self) -> bool {
        self.0.borrow().is_some()
    }

    /// Take the socket out (it closes when the caller drops it).
    pub(super) fn take(&self) -> Option<Socket> {
        self.0.borrow_mut().take()
    }

    /// Put `sock` in; returns the socket it replaces.
    pub(super) fn replace(&self, sock: Option<Socket>) -> Option<Socket> {
        std::mem::replace(&mut *self.0.borrow_mut(), sock)
    }

    /// `f` on the socket, None without one.
    #[inline]
    pub(super) fn with<R>(&self, f: impl FnOnce(&Socket) -> R) -> Option<R> {
        self.0.borrow().as_ref().map(f)
    }

    #[inline]
    pub(super) fn send(&self, buf: &[u8]) -> Io {
        self.with(|s| s.send(buf, MsgFlags::MSG_NOSIGNAL)).unwrap_or(Io::Err(Errno::EBADF))
    }

    /// Gather-send the entries of `iov` in one `sendmsg`.
    ///
    /// # Safety
    /// Every entry must name `iov_len` readable bytes at `iov_base`, alive
    /// for the call.
    #[inline]
    pub(super) unsafe fn sendv(&self, iov: &[libc::iovec]) -> Io {
        // SAFETY: the caller vouches for the entries.
        self.with(|s| unsafe { s.sendv_raw(iov, MsgFlags::MSG_NOSIGNAL) }).unwrap_or(Io::Err(Errno::EBADF))
    }

    #[inline]
    pub(super) fn recv(&self, buf: &mut [u8]) -> Io {
        self.with(|s| s.recv(buf, MsgFlags::empty())).unwrap_or(Io::Err(Errno::EBADF))
    }

    /// Scatter-receive into the entries of `iov` in one `recvmsg`.
    ///
    /// # Safety
    /// Every entry must name `iov_len` writable bytes at `iov_base`, not
    /// otherwise accessed during the call.
    #[inline]
    pub(super) unsafe fn recvv(&self, iov: &mut [libc::iovec]) -> Io {
        // SAFETY: the caller vouches for the entries.
        self.with(|s| unsafe { s.recvv_raw(iov, MsgFlags::empty()) }).unwrap_or(Io::Err(Errno::EBADF))
    }

    /// Receive into raw memory.
    ///
    /// # Safety
    /// `buf` must be writable for `len` bytes and not otherwise accessed
    /// during the call.
    #[inline]
    pub(super) unsafe fn recv_raw(&self, buf: *mut u8, len: usize) -> Io {
        // SAFETY: the caller vouches for the memory.
        self.with(|s| unsafe { s.recv_raw(buf, len, MsgFlags::empty()) }).unwrap_or(Io::Err(Errno::EBADF))
    }
}

/// The send context: bytes to send, as an iov list whose first entry is
/// (a part of) `buf`; zero-copy sends add the user's buffers.
pub(super) struct Tx {
    pub(super) buf: Vec<u8>,
    pub(super) iov: Vec<libc::iovec>,
    pub(super) idx: usize,
    /// `buf[..held]`: whole active messages held back to go out with the
    /// next send (coalescing, see `TcpIface::may_hold`); only while the
    /// iov list is empty.
    pub(super) held: usize,
    /// Completion of a zero-copy active message sent in part.
    pub(super) comp: Completion,
}

impl Tx {
    /// The send buffer, allocated on first need (an accepted connection
    /// has none until it answers the peer's connection request).
    #[inline(always)]
    pub(super) fn ensure(&mut self, size: usize) {
        if self.buf.len() < size {
            self.grow(size);
        }
    }
    #[cold]
    fn grow(&mut self, size: usize) {
        self.buf.resize(size, 0);
    }
    pub(super) fn busy(&self) -> bool {
        self.idx < self.iov.len()
    }
    pub(super) fn reset(&mut self) {
        self.iov.clear();
        self.idx = 0;
        self.comp = Completion::none();
    }
    /// Queue `buf[..end]` (the held messages and the one written after
    /// them) as the first iov entry.
    pub(super) fn push_head(&mut self, end: usize) {
        let p = self.buf.as_mut_ptr() as *mut c_void;
        self.iov.push(libc::iovec { iov_base: p, iov_len: end });
        self.held = 0;
    }
    /// Drop `n` sent bytes from the front of the iov list.
    pub(super) fn advance(&mut self, mut n: usize) {
        while n > 0 && self.idx < self.iov.len() {
            let e = &mut self.iov[self.idx];
            if n >= e.iov_len {
                n -= e.iov_len;
                self.idx += 1;
            } else {
                e.iov_base = (e.iov_base as *mut u8).wrapping_add(n) as *mut c_void;
                e.iov_len -= n;
                n = 0;
            }
        }
        while self.idx < self.iov.len() && self.iov[self.idx].iov_len == 0 {
            self.idx += 1;
        }
    }
    /// Copy what is left to send into `buf` (for sends whose user data
    /// must not be referenced after the call returns).
    pub(super) fn linearize(&mut self) {
        let mut out = 0usize;
        for k in self.idx..self.iov.len() {
            let e = self.iov[k];
            if k == self.idx && e.iov_base as *const u8 >= self.buf.as_ptr()
                && (e.iov_base as *const u8) < self.buf.as_ptr().wrapping_add(self.buf.len())
            {
                let start = e.iov_base as usize - self.buf.as_ptr() as usize;
                self.buf.copy_within(start..start + e.iov_len, 0);
            } else {
                // SAFETY: the entry names the caller's live buffer (we are
                // still inside the send call) and fits: the total length of
                // a buffered send is within the buffer size.
                let src = unsafe { std::slice::from_raw_parts(e.iov_base as *const u8, e.iov_len) };
                self.buf[out..out + e.iov_len].copy_from_slice(src);
            }
            out += e.iov_len;
        }
        self.iov.clear();
        self.iov.push(libc::iovec { iov_base: self.buf.as_mut_ptr() as *mut c_void, iov_len: out });
        self.idx = 0;
    }
}

/// The receive context: `buf[off..len]` is received and not handled yet.
#[derive(Default)]
pub(super) struct Rx {
    pub(super) buf: Vec<u8>,
    pub(super) off: usize,
    pub(super) len: usize,
}

/// A large active message being received into a descriptor of its own
/// (desc.rs): `got` of its `len` body bytes are there.
pub(super) struct RxDesc {
    pub(super) buf: super::desc::DescBuf,
    pub(super) id: u8,
    pub(super) len: usize,
    pub(super) got: usize,
}

/// What an accepted connection received of the handshake: the magic
/// number, then the frame of the connection request (small and of known
/// size, so no receive buffer is allocated before the handshake).
pub(super) struct HsBuf {
    pub(super) buf: [u8; HS_BUF_LEN],
    pub(super) len: usize,
}

pub(super) const HS_BUF_LEN: usize = super::proto::HANDSHAKE_MAX;

/// One connection (UCX's tcp endpoint).
pub(super) struct Conn {
    slot: usize,
    gen: u32,
    pub(super) alive: Cell<bool>,
    pub(super) sock: SockCell,
    /// The socket of a simultaneous connection we did not take (out of the
    /// epoll set); closed once our own connection is acknowledged.
    pub(super) stale: Cell<Option<Socket>>,
    pub(super) state: Cell<State>,
    pub(super) caps: Cell<u8>,
    pub(super) flags: Cell<u16>,
    pub(super) events: Cell<u32>,
    pub(super) peer: Cell<Option<SockAddr>>,
    /// Connection sequence number (to iface) or endpoint key (to ep).
    pub(super) cm_id: Cell<u64>,
    pub(super) queue: Cell<Option<Queue>>,
    pub(super) on_ptr_map: Cell<bool>,
    pub(super) retries: Cell<u32>,
    /// The user endpoint, or null for internal connections.
    pub(super) owner: Cell<uct_ep_h>,
    pub(super) tx: RefCell<Tx>,
    /// The progress epoch of the last message sent straight away.
    pub(super) tx_epoch: Cell<u32>,
    pub(super) rx: RefCell<Rx>,
    pub(super) tx_put_sn: Cell<u32>,
    pub(super) rx_put_sn: Cell<u32>,
    /// A put whose data is being received straight into its target.
    pub(super) put_rx: Cell<Option<PutReq>>,
    /// An active message being received into a descriptor; while there is
    /// one, `rx` holds nothing.
    pub(super) rx_desc: RefCell<Option<RxDesc>>,
    /// Guessing the message after a descriptor's (rx.rs `desc_rx`): the
    /// messages to receive without a guess, and how many the last wrong
    /// guess made it skip (doubled at each wrong guess, up to
    /// `GUESS_BACKOFF_MAX`, cleared by a right one).
    pub(super) guess_skip: Cell<u8>,
    pub(super) guess_backoff: Cell<u8>,
    /// The generation of the md's registrations when the target of
    /// `put_rx` was last checked.
    pub(super) put_gen: Cell<u64>,
    /// The handshake of an accepted connection.
    pub(super) hs: RefCell<HsBuf>,
    /// Connection event waiting for the send context.
    pub(super) cm_pending: Cell<u32>,
    pub(super) pending: RefCell<VecDeque<PendingReq>>,
    /// Flush completions waiting for the acknowledgement of a put.
    pub(super) put_comps: RefCell<VecDeque<(u32, Completion)>>,
    /// The connection that took this one's socket over (matching).
    pub(super) successor: Cell<Weak<Conn>>,
}

impl Conn {
    pub(super) fn tag(&self) -> u64 {
        ((self.gen as u64) << 32) | self.slot as u64
    }
    pub(super) fn has(&self, f: u16) -> bool {
        self.flags.get() & f != 0
    }
    pub(super) fn set(&self, f: u16) {
        self.flags.set(self.flags.get() | f);
    }
    pub(super) fn clear(&self, f: u16) {
        self.flags.set(self.flags.get() & !f);
    }
    pub(super) fn add_cap(&self, c: u8) {
        self.caps.set(self.caps.get() | c);
    }
    pub(super) fn remove_cap(&self, c: u8) {
        self.caps.set(self.caps.get() & !c);
    }
    pub(super) fn tx_busy(&self) -> bool {
        self.tx.try_borrow().map(|t| t.busy()).unwrap_or(true)
    }
}


impl TcpIface {
    // -----------------------------------------------------------------------
    // The table: creation, lookup, destruction.

    /// A new connection; `user`: of a user endpoint (its send buffer now;
    /// an accepted connection gets one when it first sends).
    pub(super) fn new_conn(&self, sock: Option<Socket>, peer: Option<SockAddr>, user: bool) -> Rc<Conn> {
        let slot = self.free_slots.borrow_mut().pop().unwrap_or_else(|| {
            let mut c = self.conns.borrow_mut();
            c.push(None);
            c.len() - 1
        });
        let gen = self.gen.get().wrapping_add(1);
        self.gen.set(gen);
        let fd = sock.as_ref().map_or(-1, Socket::fd);
        let conn = Rc::new(Conn {
            slot,
            gen,
            alive: Cell::new(true),
            retries: Cell::new(sock.is_some() as u32),
            sock: SockCell::new(sock),
            stale: Cell::new(None),
            state: Cell::new(State::Closed),
            caps: Cell::new(0),
            flags: Cell::new(0),
            events: Cell::new(0),
            peer: Cell::new(peer),
            cm_id: Cell::new(u64::MAX),
            queue: Cell::new(None),
            on_ptr_map: Cell::new(false),
            owner: Cell::new(std::ptr::null_mut()),
            tx: RefCell::new(Tx {
                // Lent from the interface's pool for each send (tx.rs).
                buf: Vec::new(),
                iov: if user { Vec::with_capacity(self.cfg.max_iov + 1) } else { Vec::new() },
                idx: 0,
                held: 0,
                comp: Completion::none(),
            }),
            tx_epoch: Cell::new(u32::MAX),
            rx: RefCell::new(Rx::default()),
            tx_put_sn: Cell::new(u32::MAX),
            rx_put_sn: Cell::new(u32::MAX),
            put_rx: Cell::new(None),
            rx_desc: RefCell::new(None),
            guess_skip: Cell::new(0),
            guess_backoff: Cell::new(0),
            put_gen: Cell::new(0),
            hs: RefCell::new(HsBuf { buf: [0; HS_BUF_LEN], len: 0 }),
            cm_pending: Cell::new(0),
            pending: RefCell::new(VecDeque::new()),
            put_comps: RefCell::new(VecDeque::new()),
            successor: Cell::new(Weak::new()),
        });
        self.conns.borrow_mut()[slot] = Some(conn.clone());
        crate::debug!("tcp_ep {:p}: created on iface {} (fd {})", Rc::as_ptr(&conn), self.if_name, fd);
        conn
    }

    pub(super) fn lookup(&self, tag: u64) -> Option<Rc<Conn>> {
        let slot = (tag & 0xffff_ffff) as usize;
        let c = self.conns.borrow();
        match c.get(slot) {
            Some(Some(conn)) if conn.tag() == tag => Some(conn.clone()),
            _ => None,
        }
    }

    pub(super) fn mod_events(&self, conn: &Conn, add: u32, rem: u32) {
        let old = conn.events.get();
        let new = (old | add) & !rem;
        if new != old {
            conn.events.set(new);
            let (rd, wr) = (self.n_read.get(), self.n_other.get());
            self.n_read.set(rd + (new == EV_READ) as usize - (old == EV_READ) as usize);
            self.n_other.set(wr + (new != 0 && new != EV_READ) as usize - (old != 0 && old != EV_READ) as usize);
            conn.sock.with(|s| epoll_set(&self.epoll, s, old, new, conn.tag()));
        }
    }

    /// Out of the epoll set, then both sockets closed.
    fn close_socks(&self, conn: &Conn) {
        self.mod_events(conn, 0, conn.events.get());
        drop(conn.sock.take());
        drop(conn.stale.take());
    }

    /// Complete what the connection still owes its user with `status`.
    pub(super) fn purge(&self, conn: &Conn, status: ucs_status_t) {
        let comp = {
            let mut tx = conn.tx.borrow_mut();
            let c = std::mem::take(&mut tx.comp);
            tx.reset();
            tx.held = 0;
            c
        };
        comp.complete(status);
        loop {
            let Some((_, c)) = conn.put_comps.borrow_mut().pop_front() else { break };
            c.complete(status);
        }
    }

    pub(super) fn destroy_conn(&self, conn: &Rc<Conn>) {
        if !conn.alive.replace(false) {
            return;
        }
        crate::debug!("tcp_ep {:p}: destroyed ({:?})", Rc::as_ptr(conn), conn.state.get());
        conn.queue.set(None);
        conn.on_ptr_map.set(false);
        conn.caps.set(0);
        self.purge(conn, UCS_ERR_CANCELED);
        self.close_socks(conn);
        conn.state.set(State::Closed);
        conn.pending.borrow_mut().clear();
        if let Ok(mut d) = conn.rx_desc.try_borrow_mut() {
            drop(d.take());
        }
        self.conns.borrow_mut()[conn.slot] = None;
        self.free_slots.borrow_mut().push(conn.slot);
    }

    pub(super) fn next_conn_sn(&self, peer: &SockAddr) -> u64 {
        let mut m = self.next_sn.borrow_mut();
        let e = m.entry(*peer).or_insert(0);
        let sn = *e;
        if sn != u64::MAX {
            *e += 1;
        }
        sn
    }

    pub(super) fn find_conn(&self, pred: impl Fn(&Conn) -> bool) -> Option<Rc<Conn>> {
        self.conns.borrow().iter().flatten().find(|c| c.alive.get() && pred(c)).cloned()
    }

    pub(super) fn outstanding(&self) -> bool {
        self.conns.borrow().iter().flatten().any(|c| {
            c.alive.get()
                && (c.tx_busy() || c.has(F_PUT_TX_WAITING_ACK)
                    || matches!(c.state.get(), State::Connecting | State::WaitingAck | State::Accepting))
        })
    }

    // -----------------------------------------------------------------------
    // Matching.

    pub(super) fn is_self(&self, conn: &Conn) -> bool {
        conn.peer.get().is_some_and(|p| p.same(&self.ifaddr))
    }

    /// Whether we accept the peer's connection rather than use ours: the
    /// peer's address is lower than ours (UCX's rule).
    pub(super) fn accept_conn(&self, conn: &Conn) -> bool {
        if conn.state.get() == State::Connected {
            return false;
        }
        conn.peer.get().is_some_and(|p| p.ucx_cmp(&self.ifaddr) == std::cmp::Ordering::Less)
    }

    // -----------------------------------------------------------------------
    // Connection state.

    pub(super) fn set_state(&self, conn: &Conn, st: State) {
        let old = conn.state.replace(st);
        if old != st {
            crate::debug!("tcp_ep {:p}: {:?} -> {:?} peer {} caps [{}:{}]", conn as *const Conn, old, st,
                          conn.peer.get().map(|p| p.to_string()).unwrap_or_else(|| "-".into()),
                          if conn.caps.get() & CAP_TX != 0 { "Tx" } else { "-" },
                          if conn.caps.get() & CAP_RX != 0 { "Rx" } else { "-" });
        }
    }

    pub(super) fn set_connected(&self, iface: &I, conn: &Rc<Conn>) {
        self.set_state(conn, State::Connected);
        if conn.caps.get() & CAP_TX != 0 {
            self.dispatch_pending(iface, conn);
        }
    }

    /// A failed connection: the user's endpoint hears of it through the
    /// error handler (with `status`); an internal connection goes away.
    pub(super) fn set_failed(&self, iface: &I, conn: &Rc<Conn>, status: ucs_status_t) {
        if !conn.alive.get() {
            return;
        }
        conn.queue.set(None);
        self.mod_events(conn, 0, conn.events.get());
        let owner = conn.owner.get();
        if conn.caps.get() & CAP_TX != 0 && !owner.is_null() {
            if conn.state.get() != State::Closed {
                crate::debug!("tcp_ep {:p}: calling error handler", Rc::as_ptr(conn));
                self.set_state(conn, State::Closed);
                drop(conn.sock.take());
                drop(conn.stale.take());
                iface.hdr.schedule_ep_err_status(owner, status);
            }
        } else {
            self.destroy_conn(conn);
        }
    }

    pub(super) fn handle_disconnected(&self, iface: &I, conn: &Rc<Conn>, status: ucs_status_t) {
        crate::debug!("tcp_ep {:p}: remote disconnected", Rc::as_ptr(conn));
        if conn.caps.get() & CAP_TX != 0 {
            conn.remove_cap(CAP_RX);
            conn.clear(F_PUT_RX_SENDING_ACK | F_PUT_TX_WAITING_ACK);
            self.purge(conn, status);
        }
        self.set_failed(iface, conn, super::release::peer_closed_status());
    }

    /// UCX's triage of an I/O error. `Ok(())`: recovered (reconnecting);
    /// `Err(status)`: the connection is lost.
    fn handle_io_err(&self, iface: &I, conn: &Rc<Conn>, what: &str, status: ucs_status_t) -> Result<(), ucs_status_t> {
        let closed_by_peer = matches!(status, UCS_ERR_REJECTED | UCS_ERR_CONNECTION_RESET | UCS_ERR_NOT_CONNECTED
                                              | UCS_ERR_TIMED_OUT);
        let st = conn.state.get();
        if !closed_by_peer {
            crate::error!("tcp_ep {:p} (state={:?}): {}({}) failed: {}", Rc::as_ptr(conn), st, what, conn.sock.fd(),
                          crate::core::log::status_str(status));
            return Err(status);
        }
        match st {
            State::Connecting | State::WaitingAck => {
                self.mod_events(conn, 0, conn.events.get());
                drop(conn.sock.take());
                self.set_state(conn, State::Closed);
                if self.create_socket_and_connect(iface, conn).is_ok() {
                    return Ok(());
                }
                crate::error!("try to increase \"net.core.somaxconn\", \"net.core.netdev_max_backlog\", \
                               \"net.ipv4.tcp_max_syn_backlog\" to the maximum value on the remote node or \
                               increase UCX_TCP_MAX_CONN_RETRIES (={})", self.cfg.max_conn_retries);
            }
            _ => crate::debug!("tcp_ep {:p} (state={:?}): connection closed by the peer ({})", Rc::as_ptr(conn), st,
                               crate::core::log::status_str(status)),
        }
        Err(status)
    }

    /// A send failed: returns the status the send call reports.
    pub(super) fn handle_send_err(&self, iface: &I, conn: &Rc<Conn>, status: ucs_status_t) -> ucs_status_t {
        match self.handle_io_err(iface, conn, "send", status) {
            Ok(()) => UCS_ERR_NO_RESOURCE,
            Err(s) => {
                self.handle_disconnected(iface, conn, s);
                if iface.hdr.err_handler.is_some() { UCS_ERR_ENDPOINT_TIMEOUT } else { s }
            }
        }
    }

    pub(super) fn handle_recv_err(&self, iface: &I, conn: &Rc<Conn>, status: ucs_status_t) {
        if let Err(s) = self.handle_io_err(iface, conn, "recv", status) {
            self.handle_disconnected(iface, conn, s);
        }
    }
}
