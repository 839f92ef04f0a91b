//! The tcp interface, its connections and their state machine.
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
//! Everything runs on the worker's thread (UCX refuses multi-threaded
//! workers for tcp, and so do we); the state uses `Cell`/`RefCell`, and no
//! borrow is held while user callbacks (active-message handlers, pending
//! requests, completions) run, since they may send or destroy endpoints.
//! One epoll set holds the listening socket and every connection's socket;
//! the interface progress polls it without waiting.

use super::net::{self, Io, SockAddr, EV_READ, EV_WRITE};
use super::wire::{self, PutReq};
use super::{TcpIfaceConfig, TIME_AUTO, TIME_INF, UNITS_AUTO, UNITS_INF};
use crate::abi::*;
use crate::core::iface::{op, slot, Ep, EpParams, Iface, IfaceHeader, IfaceParams, Internal, InternalOps, Transport};
use crate::core::md::MdObj;
use crate::core::ops::*;
use crate::core::worker::WorkerObj;
use crate::ucs;
use libc::{c_int, c_void};
use std::cell::{Cell, RefCell};
use std::collections::{HashMap, VecDeque};
use std::rc::Rc;

/// Iovs for the transport header and the user's (or put) header.
const ZCOPY_SERVICE_IOV: usize = 2;
/// Events handled per epoll call.
const MAX_EVENTS: usize = 16;
/// Most reading connections for which progress receives directly.
const FAST_MAX_CONNS: usize = 4;
/// Receives of at least this many bytes (a stream of large messages) make
/// progress use epoll.
const FAST_BULK_BYTES: usize = 2048;
/// Progress calls between polls of the epoll set on the direct path.
const FAST_POLL_EVERY: u32 = 32;
/// Calls of a pending request that answers UCS_INPROGRESS, in one dispatch.
const PENDING_INPROGRESS_ROUNDS: u32 = 1024;
/// Epoll tag of the listening socket.
const LISTEN_TAG: u64 = u64::MAX;
/// Default keepalive times (seconds) when the settings are "auto".
const KEEPALIVE_IDLE_DEFAULT: i32 = 10;
const KEEPALIVE_INTVL_DEFAULT: i32 = 2;
/// Size of UCX's zero-copy send context that precedes its iov array in the
/// send buffer: it limits the zcopy header (`max_hdr`).
const ZCOPY_CTX_LEN: usize = 32;

const CAP_TX: u8 = 1;
const CAP_RX: u8 = 2;

const F_CONNECT_TO_EP: u16 = 1 << 0;
const F_PUT_TX_WAITING_ACK: u16 = 1 << 1;
const F_PUT_RX_SENDING_ACK: u16 = 1 << 2;
const F_NEED_FLUSH: u16 = 1 << 3;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum State {
    Closed,
    Connecting,
    RecvMagic,
    Accepting,
    WaitingAck,
    Connected,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Queue {
    /// Connections with TX capability (made by the user).
    Exp,
    /// Accepted, RX-only connections waiting for a user endpoint.
    Unexp,
}

/// The send context: bytes to send, as an iov list whose first entry is
/// (a part of) `buf`; zero-copy sends add the user's buffers.
struct Tx {
    buf: Vec<u8>,
    iov: Vec<libc::iovec>,
    idx: usize,
    /// `buf[..held]`: whole active messages held back to go out with the
    /// next send (coalescing, see `TcpIface::may_hold`); only while the
    /// iov list is empty.
    held: usize,
    /// Completion of a zero-copy active message sent in part.
    comp: *mut uct_completion_t,
}

impl Tx {
    fn busy(&self) -> bool {
        self.idx < self.iov.len()
    }
    fn reset(&mut self) {
        self.iov.clear();
        self.idx = 0;
        self.comp = std::ptr::null_mut();
    }
    /// Queue `buf[..end]` (the held messages and the one written after
    /// them) as the first iov entry.
    fn push_head(&mut self, end: usize) {
        let p = self.buf.as_mut_ptr() as *mut c_void;
        self.iov.push(libc::iovec { iov_base: p, iov_len: end });
        self.held = 0;
    }
    /// Drop `n` sent bytes from the front of the iov list.
    fn advance(&mut self, mut n: usize) {
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
    fn linearize(&mut self) {
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
struct Rx {
    buf: Vec<u8>,
    off: usize,
    len: usize,
}

/// One connection (UCX's tcp endpoint).
pub struct Conn {
    slot: usize,
    gen: u32,
    alive: Cell<bool>,
    fd: Cell<i32>,
    /// The socket of a simultaneous connection we did not take; closed
    /// once our own connection is acknowledged.
    stale_fd: Cell<i32>,
    state: Cell<State>,
    caps: Cell<u8>,
    flags: Cell<u16>,
    events: Cell<u32>,
    peer: Cell<Option<SockAddr>>,
    /// Connection sequence number (to iface) or endpoint key (to ep).
    cm_id: Cell<u64>,
    queue: Cell<Option<Queue>>,
    on_ptr_map: Cell<bool>,
    retries: Cell<u32>,
    /// The user endpoint, or null for internal connections.
    owner: Cell<uct_ep_h>,
    tx: RefCell<Tx>,
    /// The progress epoch of the last message sent straight away.
    tx_epoch: Cell<u32>,
    rx: RefCell<Rx>,
    tx_put_sn: Cell<u32>,
    rx_put_sn: Cell<u32>,
    /// A put whose data is being received straight into its target.
    put_rx: Cell<Option<PutReq>>,
    /// Connection event waiting for the send context.
    cm_pending: Cell<u32>,
    pending: RefCell<VecDeque<PendingReq>>,
    /// Flush completions waiting for the acknowledgement of a put.
    put_comps: RefCell<VecDeque<(u32, *mut uct_completion_t)>>,
}

impl Conn {
    fn tag(&self) -> u64 {
        ((self.gen as u64) << 32) | self.slot as u64
    }
    fn has(&self, f: u16) -> bool {
        self.flags.get() & f != 0
    }
    fn set(&self, f: u16) {
        self.flags.set(self.flags.get() | f);
    }
    fn clear(&self, f: u16) {
        self.flags.set(self.flags.get() & !f);
    }
    fn add_cap(&self, c: u8) {
        self.caps.set(self.caps.get() | c);
    }
    fn remove_cap(&self, c: u8) {
        self.caps.set(self.caps.get() & !c);
    }
    fn tx_busy(&self) -> bool {
        self.tx.try_borrow().map(|t| t.busy()).unwrap_or(true)
    }
}

/// Settings fixed when the interface opens.
struct Cfg {
    tx_seg_size: usize,
    rx_seg_size: usize,
    sendv_thresh: usize,
    max_iov: usize,
    max_hdr: usize,
    prefer_default: bool,
    put_enable: bool,
    conn_nb: bool,
    max_poll: usize,
    max_conn_retries: u32,
    syn_cnt: u64,
    nodelay: bool,
    sndbuf: u64,
    rcvbuf: u64,
    keepalive: Option<(i32, Option<i32>, i32)>,
    /// Most bytes of active messages held back for coalescing (0: off).
    coalesce: usize,
}

pub struct TcpIface {
    cfg: Cfg,
    if_name: String,
    /// Our address with the listening port.
    ifaddr: SockAddr,
    epfd: i32,
    listen_fd: Cell<i32>,
    conns: RefCell<Vec<Option<Rc<Conn>>>>,
    free_slots: RefCell<Vec<usize>>,
    gen: Cell<u32>,
    next_sn: RefCell<HashMap<SockAddr, u64>>,
    next_key: Cell<u64>,
    in_progress: Cell<bool>,
    /// Connections whose socket is in the epoll set for reading only, and
    /// for anything else (writing, connecting).
    n_read: Cell<usize>,
    n_other: Cell<usize>,
    /// Progress calls since the epoll set was last polled.
    fast_polls: Cell<u32>,
    /// Bytes the last receive of a message returned.
    last_rx: Cell<usize>,
    /// Filled by the user endpoint's `ep_init`.
    events: RefCell<Vec<libc::epoll_event>>,
    /// Progress calls so far (wrapping): sends of one epoch may coalesce.
    epoch: Cell<u32>,
    /// Connections holding messages back.
    holding: RefCell<Vec<Rc<Conn>>>,
}

/// A user endpoint: its connection.
pub struct TcpEp {
    conn: Rc<Conn>,
}

type I = Iface<TcpIface>;

/// What a connection packet did to the connection being read.
enum Next {
    /// Keep reading on this connection (possibly another one than before:
    /// the socket moved to it).
    Continue(Rc<Conn>),
    /// The connection is gone.
    Stop,
}

impl TcpIface {
    // -----------------------------------------------------------------------
    // Connections: creation, lookup, destruction.

    fn new_conn(&self, fd: i32, peer: Option<SockAddr>) -> Rc<Conn> {
        let slot = self.free_slots.borrow_mut().pop().unwrap_or_else(|| {
            let mut c = self.conns.borrow_mut();
            c.push(None);
            c.len() - 1
        });
        let gen = self.gen.get().wrapping_add(1);
        self.gen.set(gen);
        let conn = Rc::new(Conn {
            slot,
            gen,
            alive: Cell::new(true),
            fd: Cell::new(fd),
            stale_fd: Cell::new(-1),
            state: Cell::new(State::Closed),
            caps: Cell::new(0),
            flags: Cell::new(0),
            events: Cell::new(0),
            peer: Cell::new(peer),
            cm_id: Cell::new(u64::MAX),
            queue: Cell::new(None),
            on_ptr_map: Cell::new(false),
            retries: Cell::new(if fd >= 0 { 1 } else { 0 }),
            owner: Cell::new(std::ptr::null_mut()),
            tx: RefCell::new(Tx {
                buf: vec![0u8; self.cfg.tx_seg_size],
                iov: Vec::with_capacity(self.cfg.max_iov + 1),
                idx: 0,
                held: 0,
                comp: std::ptr::null_mut(),
            }),
            tx_epoch: Cell::new(u32::MAX),
            rx: RefCell::new(Rx::default()),
            tx_put_sn: Cell::new(u32::MAX),
            rx_put_sn: Cell::new(u32::MAX),
            put_rx: Cell::new(None),
            cm_pending: Cell::new(0),
            pending: RefCell::new(VecDeque::new()),
            put_comps: RefCell::new(VecDeque::new()),
        });
        self.conns.borrow_mut()[slot] = Some(conn.clone());
        crate::debug!("tcp_ep {:p}: created on iface {} (fd {})", Rc::as_ptr(&conn), self.if_name, fd);
        conn
    }

    fn lookup(&self, tag: u64) -> Option<Rc<Conn>> {
        let slot = (tag & 0xffff_ffff) as usize;
        let c = self.conns.borrow();
        match c.get(slot) {
            Some(Some(conn)) if conn.tag() == tag => Some(conn.clone()),
            _ => None,
        }
    }

    fn mod_events(&self, conn: &Conn, add: u32, rem: u32) {
        let old = conn.events.get();
        let new = (old | add) & !rem;
        if new != old {
            conn.events.set(new);
            let (rd, wr) = (self.n_read.get(), self.n_other.get());
            self.n_read.set(rd + (new == EV_READ) as usize - (old == EV_READ) as usize);
            self.n_other.set(wr + (new != 0 && new != EV_READ) as usize - (old != 0 && old != EV_READ) as usize);
            net::epoll_set(self.epfd, conn.fd.get(), old, new, conn.tag());
        }
    }

    fn close_fds(&self, conn: &Conn) {
        self.mod_events(conn, 0, conn.events.get());
        net::close(conn.fd.replace(-1));
        net::close(conn.stale_fd.replace(-1));
    }

    /// Complete what the connection still owes its user with `status`.
    fn purge(&self, conn: &Conn, status: ucs_status_t) {
        let comp = {
            let mut tx = conn.tx.borrow_mut();
            let c = tx.comp;
            tx.reset();
            tx.held = 0;
            c
        };
        // SAFETY: completions are owned by their user until completed.
        unsafe { complete(comp, status) };
        loop {
            let Some((_, c)) = conn.put_comps.borrow_mut().pop_front() else { break };
            // SAFETY: as above.
            unsafe { complete(c, status) };
        }
    }

    fn destroy_conn(&self, conn: &Rc<Conn>) {
        if !conn.alive.replace(false) {
            return;
        }
        crate::debug!("tcp_ep {:p}: destroyed ({:?})", Rc::as_ptr(conn), conn.state.get());
        conn.queue.set(None);
        conn.on_ptr_map.set(false);
        conn.caps.set(0);
        self.purge(conn, UCS_ERR_CANCELED);
        self.close_fds(conn);
        conn.state.set(State::Closed);
        conn.pending.borrow_mut().clear();
        self.conns.borrow_mut()[conn.slot] = None;
        self.free_slots.borrow_mut().push(conn.slot);
    }

    fn next_conn_sn(&self, peer: &SockAddr) -> u64 {
        let mut m = self.next_sn.borrow_mut();
        let e = m.entry(*peer).or_insert(0);
        let sn = *e;
        if sn != u64::MAX {
            *e += 1;
        }
        sn
    }

    fn find_conn(&self, pred: impl Fn(&Conn) -> bool) -> Option<Rc<Conn>> {
        self.conns.borrow().iter().flatten().find(|c| c.alive.get() && pred(c)).cloned()
    }

    fn is_self(&self, conn: &Conn) -> bool {
        conn.peer.get().is_some_and(|p| p.same(&self.ifaddr))
    }

    /// Whether we accept the peer's connection rather than use ours: the
    /// peer's address is lower than ours (UCX's rule).
    fn accept_conn(&self, conn: &Conn) -> bool {
        if conn.state.get() == State::Connected {
            return false;
        }
        conn.peer.get().is_some_and(|p| p.ucx_cmp(&self.ifaddr) == std::cmp::Ordering::Less)
    }

    // -----------------------------------------------------------------------
    // Connection state.

    fn set_state(&self, conn: &Conn, st: State) {
        let old = conn.state.replace(st);
        if old != st {
            crate::debug!("tcp_ep {:p}: {:?} -> {:?} peer {} caps [{}:{}]", conn as *const Conn, old, st,
                          conn.peer.get().map(|p| p.to_string()).unwrap_or_else(|| "-".into()),
                          if conn.caps.get() & CAP_TX != 0 { "Tx" } else { "-" },
                          if conn.caps.get() & CAP_RX != 0 { "Rx" } else { "-" });
        }
    }

    fn set_connected(&self, iface: &I, conn: &Rc<Conn>) {
        self.set_state(conn, State::Connected);
        if conn.caps.get() & CAP_TX != 0 {
            self.dispatch_pending(iface, conn);
        }
    }

    /// A failed connection: the user's endpoint hears of it through the
    /// error handler; an internal connection goes away.
    fn set_failed(&self, iface: &I, conn: &Rc<Conn>) {
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
                net::close(conn.fd.replace(-1));
                net::close(conn.stale_fd.replace(-1));
                iface.hdr.schedule_ep_err_status(owner, UCS_ERR_ENDPOINT_TIMEOUT);
            }
        } else {
            self.destroy_conn(conn);
        }
    }

    fn handle_disconnected(&self, iface: &I, conn: &Rc<Conn>, status: ucs_status_t) {
        crate::debug!("tcp_ep {:p}: remote disconnected", Rc::as_ptr(conn));
        if conn.caps.get() & CAP_TX != 0 {
            conn.remove_cap(CAP_RX);
            conn.clear(F_PUT_RX_SENDING_ACK | F_PUT_TX_WAITING_ACK);
            self.purge(conn, status);
        }
        self.set_failed(iface, conn);
    }

    /// UCX's triage of an I/O error. `Ok(())`: recovered (reconnecting);
    /// `Err(status)`: the connection is lost.
    fn handle_io_err(&self, iface: &I, conn: &Rc<Conn>, what: &str, status: ucs_status_t) -> Result<(), ucs_status_t> {
        let closed_by_peer = matches!(status, UCS_ERR_REJECTED | UCS_ERR_CONNECTION_RESET | UCS_ERR_NOT_CONNECTED
                                              | UCS_ERR_TIMED_OUT);
        let st = conn.state.get();
        if !closed_by_peer {
            crate::error!("tcp_ep {:p} (state={:?}): {}({}) failed: {}", Rc::as_ptr(conn), st, what, conn.fd.get(),
                          crate::core::log::status_str(status));
            return Err(status);
        }
        match st {
            State::Connecting | State::WaitingAck => {
                self.mod_events(conn, 0, conn.events.get());
                net::close(conn.fd.replace(-1));
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
    fn handle_send_err(&self, iface: &I, conn: &Rc<Conn>, status: ucs_status_t) -> ucs_status_t {
        match self.handle_io_err(iface, conn, "send", status) {
            Ok(()) => UCS_ERR_NO_RESOURCE,
            Err(s) => {
                self.handle_disconnected(iface, conn, s);
                if iface.hdr.err_handler.is_some() { UCS_ERR_ENDPOINT_TIMEOUT } else { s }
            }
        }
    }

    fn handle_recv_err(&self, iface: &I, conn: &Rc<Conn>, status: ucs_status_t) {
        if let Err(s) = self.handle_io_err(iface, conn, "recv", status) {
            self.handle_disconnected(iface, conn, s);
        }
    }

    // -----------------------------------------------------------------------
    // Sockets and connecting.

    fn set_sockopt(&self, fd: i32, set_nb: bool) -> Result<(), ucs_status_t> {
        if set_nb && !net::set_nonblock(fd) {
            return Err(UCS_ERR_IO_ERROR);
        }
        if !net::setopt_int(fd, libc::IPPROTO_TCP, libc::TCP_NODELAY, self.cfg.nodelay as i32) {
            return Err(UCS_ERR_IO_ERROR);
        }
        if self.cfg.sndbuf != UNITS_AUTO && !net::setopt_int(fd, libc::SOL_SOCKET, libc::SO_SNDBUF, self.cfg.sndbuf as i32) {
            return Err(UCS_ERR_IO_ERROR);
        }
        if self.cfg.rcvbuf != UNITS_AUTO && !net::setopt_int(fd, libc::SOL_SOCKET, libc::SO_RCVBUF, self.cfg.rcvbuf as i32) {
            return Err(UCS_ERR_IO_ERROR);
        }
        if self.cfg.syn_cnt != UNITS_AUTO {
            // Best effort, as in UCX.
            net::setopt_int(fd, libc::IPPROTO_TCP, libc::TCP_SYNCNT, self.cfg.syn_cnt as i32);
        }
        Ok(())
    }

    fn keepalive_enable(&self, fd: i32) -> Result<(), ucs_status_t> {
        let Some((idle, cnt, intvl)) = self.cfg.keepalive else { return Ok(()) };
        let ok = net::setopt_int(fd, libc::IPPROTO_TCP, libc::TCP_KEEPINTVL, intvl)
            && cnt.is_none_or(|c| net::setopt_int(fd, libc::IPPROTO_TCP, libc::TCP_KEEPCNT, c))
            && net::setopt_int(fd, libc::IPPROTO_TCP, libc::TCP_KEEPIDLE, idle)
            && net::setopt_int(fd, libc::SOL_SOCKET, libc::SO_KEEPALIVE, 1);
        if ok { Ok(()) } else { Err(UCS_ERR_IO_ERROR) }
    }

    fn create_socket_and_connect(&self, iface: &I, conn: &Rc<Conn>) -> Result<(), ucs_status_t> {
        let r = self.socket_and_connect(iface, conn);
        if r.is_err() && conn.retries.get() > 1 {
            self.set_failed(iface, conn);
        }
        r
    }

    fn socket_and_connect(&self, iface: &I, conn: &Rc<Conn>) -> Result<(), ucs_status_t> {
        let Some(peer) = conn.peer.get() else { return Err(UCS_ERR_INVALID_PARAM) };
        let fd = net::socket(peer.family)?;
        conn.fd.set(fd);
        self.set_sockopt(fd, self.cfg.conn_nb)?;
        self.keepalive_enable(fd)?;
        conn.retries.set(conn.retries.get() + 1);
        if conn.retries.get() > self.cfg.max_conn_retries {
            crate::error!("tcp_ep {:p}: reached maximum number of connection retries ({})", Rc::as_ptr(conn),
                          self.cfg.max_conn_retries);
            return Err(UCS_ERR_TIMED_OUT);
        }
        self.set_state(conn, State::Connecting);
        if !net::connect(fd, &peer)? {
            self.mod_events(conn, EV_WRITE, 0);
            return Ok(());
        }
        if !self.cfg.conn_nb && !net::set_nonblock(fd) {
            return Err(UCS_ERR_IO_ERROR);
        }
        self.conn_complete(iface, conn);
        Ok(())
    }

    /// The socket is connected: introduce ourselves.
    fn conn_complete(&self, iface: &I, conn: &Rc<Conn>) {
        if self.send_event(iface, conn, wire::EV_CONN_REQ) != UCS_OK {
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
                    self.send_event(iface, conn, wire::EV_CONN_REQ);
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
        net::close(to.fd.replace(from.fd.replace(-1)));
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
        if let Some(p) = from.put_rx.take() {
            to.put_rx.set(Some(p));
        }
        to.rx_put_sn.set(from.rx_put_sn.get());
        from.caps.set(0);
        self.set_failed(iface, from);
    }

    // -----------------------------------------------------------------------
    // Sending.

    /// UCX's `check_tx_res`: can a message be sent now?
    fn check_tx(&self, conn: &Conn) -> ucs_status_t {
        let st = conn.state.get();
        if st == State::Connected && !conn.tx_busy() {
            return UCS_OK;
        }
        match st {
            State::Closed => UCS_ERR_CONNECTION_RESET,
            State::Accepting => UCS_ERR_NO_RESOURCE,
            _ => {
                if st == State::Connected {
                    self.mod_events(conn, EV_WRITE, 0);
                }
                UCS_ERR_NO_RESOURCE
            }
        }
    }

    /// Send what `tx` holds: sent completely, or the rest waits for the
    /// socket (EPOLLOUT). Returns the send call's status.
    fn flush_tx(&self, iface: &I, conn: &Rc<Conn>, mut tx: std::cell::RefMut<'_, Tx>, keep_user: bool)
                -> ucs_status_t {
        let r = if tx.iov.len() - tx.idx == 1 {
            let e = tx.iov[tx.idx];
            // SAFETY: the entry names `tx.buf` or the caller's buffer, live
            // for this call.
            net::send(conn.fd.get(), unsafe { std::slice::from_raw_parts(e.iov_base as *const u8, e.iov_len) })
        } else {
            net::sendv(conn.fd.get(), &tx.iov[tx.idx..])
        };
        match r {
            Io::Done(n) => tx.advance(n),
            Io::Again => {}
            Io::Closed => {
                tx.reset();
                drop(tx);
                return self.handle_send_err(iface, conn, UCS_ERR_NOT_CONNECTED);
            }
            Io::Err(s) => {
                tx.reset();
                drop(tx);
                return self.handle_send_err(iface, conn, s);
            }
        }
        if tx.busy() {
            if !keep_user {
                tx.linearize();
            }
            drop(tx);
            self.mod_events(conn, EV_WRITE, 0);
        } else {
            tx.reset();
        }
        UCS_OK
    }

    /// Send a connection event (with the magic number first when this is
    /// the request of a fresh socket).
    fn send_event(&self, iface: &I, conn: &Rc<Conn>, event: u32) -> ucs_status_t {
        let Ok(mut tx) = conn.tx.try_borrow_mut() else { return UCS_ERR_NO_RESOURCE };
        if tx.busy() {
            conn.cm_pending.set(conn.cm_pending.get() | event);
            return UCS_OK;
        }
        let mut pkt = Vec::with_capacity(64);
        if event == wire::EV_CONN_REQ {
            if conn.state.get() == State::Connecting {
                pkt.extend_from_slice(&wire::MAGIC.to_ne_bytes());
            }
            let flags = if conn.has(F_CONNECT_TO_EP) { wire::REQ_FLAG_CONNECT_TO_EP } else { 0 };
            let at = pkt.len();
            pkt.extend_from_slice(&[0u8; wire::HDR_LEN]);
            wire::encode_conn_req(&mut pkt, flags, conn.cm_id.get(), &self.ifaddr);
            let body = (pkt.len() - at - wire::HDR_LEN) as u32;
            wire::put_hdr(&mut pkt[at..], wire::AM_ID_CM, body);
        } else {
            pkt.extend_from_slice(&[0u8; wire::HDR_LEN]);
            wire::put_hdr(&mut pkt, wire::AM_ID_CM, wire::EVENT_LEN as u32);
            pkt.extend_from_slice(&event.to_ne_bytes());
        }
        let at = tx.held;
        tx.buf[at..at + pkt.len()].copy_from_slice(&pkt);
        tx.push_head(at + pkt.len());
        let s = self.flush_tx(iface, conn, tx, false);
        if s != UCS_OK {
            crate::diag!("tcp_ep {:p}: unable to send connection event {} to {}", Rc::as_ptr(conn), event,
                         conn.peer.get().map(|p| p.to_string()).unwrap_or_default());
        }
        s
    }

    /// The send context for a new active message `id` on `conn`, and the
    /// offset in its buffer where the body goes (after the held messages
    /// and the header slot); NO_RESOURCE while the connection cannot send.
    #[inline]
    fn begin_am<'c>(&self, conn: &'c Conn, id: u8) -> Result<(std::cell::RefMut<'c, Tx>, usize), ucs_status_t> {
        if id >= wire::AM_ID_MAX {
            return Err(am_id_error(id));
        }
        let st = self.check_tx(conn);
        if st != UCS_OK {
            return Err(st);
        }
        let tx = conn.tx.try_borrow_mut().map_err(|_| UCS_ERR_NO_RESOURCE)?;
        let at = tx.held + wire::HDR_LEN;
        Ok((tx, at))
    }

    /// Start a message of `len` body bytes already written after the
    /// header slot at `tx.held` in `tx.buf`; an active message (`hold`) may
    /// be held back to go out with the next one.
    #[inline]
    fn send_buffered(&self, iface: &I, conn: &Rc<Conn>, mut tx: std::cell::RefMut<'_, Tx>, am_id: u8, len: usize,
                     hold: bool) -> ucs_status_t {
        let at = tx.held;
        wire::put_hdr(&mut tx.buf[at..], am_id, len as u32);
        let end = at + wire::HDR_LEN + len;
        conn.set(F_NEED_FLUSH);
        if hold && self.may_hold(conn, end) {
            // Room for one more message after the held ones (the buffer
            // grows on the first hold; nothing points into it now).
            let want = self.cfg.tx_seg_size + self.cfg.coalesce;
            if tx.buf.len() < want {
                tx.buf.resize(want, 0);
            }
            tx.held = end;
            if at == 0 {
                self.holding.borrow_mut().push(conn.clone());
            }
            return UCS_OK;
        }
        tx.push_head(end);
        conn.tx_epoch.set(self.epoch.get());
        self.flush_tx(iface, conn, tx, false)
    }

    /// Coalescing: an active message is held back when another one already
    /// went out on this connection since the last progress call (the
    /// application is sending back to back) and the held bytes stay within
    /// `UCX_TCP_TX_COALESCE`. Held messages go out with the next message
    /// that is not held, or at the next progress, flush, event arm or
    /// endpoint destruction: one system call for many messages. The first
    /// message after a progress call always goes out at once, so a lone
    /// message (or a ping-pong) is never delayed.
    #[inline]
    fn may_hold(&self, conn: &Conn, end: usize) -> bool {
        end <= self.cfg.coalesce && conn.tx_epoch.get() == self.epoch.get()
    }

    /// Send the messages `conn` holds back.
    fn release_held(&self, iface: &I, conn: &Rc<Conn>) {
        if !conn.alive.get() {
            return;
        }
        let Ok(mut tx) = conn.tx.try_borrow_mut() else { return };
        if tx.held == 0 || tx.busy() {
            return;
        }
        let end = tx.held;
        tx.push_head(end);
        conn.tx_epoch.set(self.epoch.get());
        self.flush_tx(iface, conn, tx, false);
    }

    /// Send what every connection holds back.
    fn release_all_held(&self, iface: &I) {
        if self.holding.borrow().is_empty() {
            return;
        }
        let list = std::mem::take(&mut *self.holding.borrow_mut());
        for c in &list {
            self.release_held(iface, c);
        }
    }

    fn post_put_ack(&self, iface: &I, conn: &Rc<Conn>) {
        if self.check_tx(conn) != UCS_OK {
            conn.set(F_PUT_RX_SENDING_ACK);
            return;
        }
        let Ok(mut tx) = conn.tx.try_borrow_mut() else {
            conn.set(F_PUT_RX_SENDING_ACK);
            return;
        };
        let sn = conn.rx_put_sn.get();
        let at = tx.held + wire::HDR_LEN;
        tx.buf[at..at + 4].copy_from_slice(&sn.to_ne_bytes());
        conn.clear(F_PUT_RX_SENDING_ACK);
        self.send_buffered(iface, conn, tx, wire::AM_ID_PUT_ACK, wire::PUT_ACK_LEN, false);
    }

    /// Run queued work once the send context is free.
    fn dispatch_pending(&self, iface: &I, conn: &Rc<Conn>) {
        if conn.has(F_PUT_RX_SENDING_ACK) && !conn.tx_busy() {
            self.post_put_ack(iface, conn);
        }
        let ev = conn.cm_pending.get();
        if ev != 0 && !conn.tx_busy() {
            conn.cm_pending.set(0);
            self.send_event(iface, conn, ev);
        }
        // UCS_OK: done; UCS_INPROGRESS: it sent a part (a multi-fragment
        // rendezvous, for example) and is called again while the send
        // context is free; an error (NO_RESOURCE): it waits for the next
        // turn. A request left behind while the socket could take more keeps
        // EPOLLOUT armed, so progress comes back to it.
        let mut again = PENDING_INPROGRESS_ROUNDS;
        while conn.alive.get() && !conn.tx_busy() && conn.state.get() == State::Connected {
            let Some(req) = conn.pending.borrow_mut().pop_front() else { break };
            let status = req.dispatch();
            if status == UCS_OK {
                continue;
            }
            conn.pending.borrow_mut().push_front(req);
            if status < 0 || again == 0 {
                break;
            }
            again -= 1;
        }
        if conn.alive.get() && !conn.tx_busy() {
            if conn.pending.borrow().is_empty() {
                self.mod_events(conn, 0, EV_WRITE);
            } else if conn.state.get() == State::Connected {
                self.mod_events(conn, EV_WRITE, 0);
            }
        }
    }

    // -----------------------------------------------------------------------
    // Progress.

    fn tx_progress(&self, iface: &I, conn: &Rc<Conn>) -> u32 {
        match conn.state.get() {
            State::Closed => 0,
            State::Connecting => {
                if !net::is_connected(conn.fd.get()) {
                    crate::error!("tcp_ep {:p}: connection establishment for socket fd {} was unsuccessful",
                                  Rc::as_ptr(conn), conn.fd.get());
                    self.set_failed(iface, conn);
                    return 0;
                }
                self.mod_events(conn, 0, EV_WRITE);
                self.conn_complete(iface, conn);
                1
            }
            _ => {
                let mut count = 0;
                if let Ok(tx) = conn.tx.try_borrow_mut() {
                    if tx.busy() {
                        let before: usize = tx.iov[tx.idx..].iter().map(|e| e.iov_len).sum();
                        let comp = tx.comp;
                        let s = self.flush_tx(iface, conn, tx, true);
                        if s != UCS_OK {
                            return 1;
                        }
                        let t = conn.tx.borrow();
                        let after: usize = if t.busy() { t.iov[t.idx..].iter().map(|e| e.iov_len).sum() } else { 0 };
                        drop(t);
                        count = (after < before) as u32;
                        if after == 0 {
                            // SAFETY: the zcopy completion is the user's.
                            unsafe { complete(comp, UCS_OK) };
                        }
                    }
                }
                if conn.alive.get() {
                    self.dispatch_pending(iface, conn);
                }
                count
            }
        }
    }

    fn rx_progress(&self, iface: &I, conn: &Rc<Conn>) -> u32 {
        match conn.state.get() {
            State::Closed => 0,
            State::RecvMagic => self.magic_rx(conn),
            _ => match conn.put_rx.get() {
                Some(p) => self.put_rx(iface, conn, p),
                None => self.am_rx(iface, conn),
            },
        }
    }

    fn magic_rx(&self, conn: &Rc<Conn>) -> u32 {
        let mut rx = conn.rx.borrow_mut();
        if rx.buf.len() < wire::MAGIC_LEN {
            rx.buf = vec![0u8; self.cfg.rx_seg_size];
        }
        let have = rx.len;
        match net::recv(conn.fd.get(), &mut rx.buf[have..wire::MAGIC_LEN]) {
            Io::Done(n) => rx.len += n,
            Io::Again => return 0,
            Io::Closed | Io::Err(_) => {
                drop(rx);
                crate::debug!("tcp_ep {:p}: connection dropped by the peer before the magic number",
                              Rc::as_ptr(conn));
                self.destroy_conn(conn);
                return 0;
            }
        }
        if rx.len < wire::MAGIC_LEN {
            return 1;
        }
        let mut m = [0u8; 8];
        m.copy_from_slice(&rx.buf[..8]);
        rx.len = 0;
        rx.off = 0;
        drop(rx);
        if u64::from_ne_bytes(m) != wire::MAGIC {
            crate::debug!("tcp_iface {}: received wrong magic number {:#x} on fd {}", self.if_name,
                          u64::from_ne_bytes(m), conn.fd.get());
            self.destroy_conn(conn);
            return 0;
        }
        self.set_state(conn, State::Accepting);
        1
    }

    fn put_rx(&self, iface: &I, conn: &Rc<Conn>, mut p: PutReq) -> u32 {
        // SAFETY: the peer named this target of `length` bytes through the
        // put protocol; as in UCX, the remote address is trusted (the rkey
        // of the tcp md carries no access control).
        let r = unsafe { net::recv_raw(conn.fd.get(), p.addr as usize as *mut u8, p.length as usize) };
        match r {
            Io::Done(n) => {
                self.last_rx.set(n);
                p.addr += n as u64;
                p.length -= n as u64;
                if p.length == 0 {
                    conn.put_rx.set(None);
                    self.post_put_ack(iface, conn);
                } else {
                    conn.put_rx.set(Some(p));
                }
                1
            }
            Io::Again => 0,
            Io::Closed => {
                self.handle_recv_err(iface, conn, UCS_ERR_NOT_CONNECTED);
                0
            }
            Io::Err(s) => {
                self.handle_recv_err(iface, conn, s);
                0
            }
        }
    }

    fn am_rx(&self, iface: &I, conn: &Rc<Conn>) -> u32 {
        let seg = self.cfg.rx_seg_size;
        let mut rx = match conn.rx.try_borrow_mut() {
            Ok(mut r) => std::mem::take(&mut *r),
            Err(_) => return 0,
        };
        if rx.buf.len() < seg {
            rx.buf = vec![0u8; seg];
        }
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
        match net::recv(conn.fd.get(), &mut rx.buf[len..seg]) {
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
            Io::Err(s) => {
                self.handle_recv_err(iface, conn, s);
                return 0;
            }
        }
        let mut cur = conn.clone();
        let mut handled = 0u32;
        while let Some((id, l)) = wire::get_hdr(&rx.buf[rx.off..rx.len]) {
            let l = l as usize;
            if l > seg - wire::HDR_LEN {
                crate::error!("tcp_ep {:p}: received a message of {} bytes, more than the {} of the receive \
                               buffer; dropping the connection", Rc::as_ptr(&cur), l, seg - wire::HDR_LEN);
                self.handle_disconnected(iface, &cur, UCS_ERR_IO_ERROR);
                return handled;
            }
            if rx.len - rx.off < wire::HDR_LEN + l {
                break;
            }
            let body = rx.off + wire::HDR_LEN;
            rx.off = body + l;
            handled += 1;
            if id < wire::AM_ID_MAX {
                if cur.caps.get() & CAP_RX == 0 && cur.state.get() != State::Connected {
                    crate::debug!("tcp_ep {:p}: active message {} before the connection request", Rc::as_ptr(&cur), id);
                }
                iface.hdr.invoke_am(id, &mut rx.buf[body..body + l], 0);
                if !cur.alive.get() {
                    return handled;
                }
            } else if id == wire::AM_ID_PUT_REQ {
                let Some(mut p) = wire::decode_put_req(&rx.buf[body..body + l]) else { continue };
                let extra = (rx.len - rx.off).min(p.length as usize);
                if extra > 0 {
                    // SAFETY: the target of the put, as in `put_rx`.
                    unsafe {
                        std::ptr::copy_nonoverlapping(rx.buf.as_ptr().add(rx.off), p.addr as usize as *mut u8, extra)
                    };
                }
                rx.off += extra;
                p.addr += extra as u64;
                p.length -= extra as u64;
                cur.rx_put_sn.set(p.sn);
                cur.clear(F_PUT_RX_SENDING_ACK);
                if p.length == 0 {
                    self.post_put_ack(iface, &cur);
                } else {
                    cur.put_rx.set(Some(p));
                    break;
                }
            } else if id == wire::AM_ID_PUT_ACK {
                if let Some(sn) = wire::decode_put_ack(&rx.buf[body..body + l]) {
                    self.handle_put_ack(&cur, sn);
                }
            } else if id == wire::AM_ID_KEEPALIVE {
                // Nothing to do: the peer checks that we are alive.
            } else if id == wire::AM_ID_CM {
                let pkt = rx.buf[body..body + l].to_vec();
                match self.handle_conn_pkt(iface, &cur, &pkt) {
                    Next::Continue(c) => cur = c,
                    Next::Stop => return handled,
                }
            } else {
                crate::error!("tcp_ep {:p}: unknown message id {} ({} bytes) dropped", Rc::as_ptr(&cur), id, l);
            }
        }
        if rx.off == rx.len {
            rx.off = 0;
            rx.len = 0;
        }
        self.put_rx_back(&cur, rx);
        handled
    }

    fn put_rx_back(&self, conn: &Conn, rx: Rx) {
        if conn.alive.get() {
            if let Ok(mut r) = conn.rx.try_borrow_mut() {
                *r = rx;
            }
        }
    }

    fn handle_put_ack(&self, conn: &Conn, sn: u32) {
        if sn == conn.tx_put_sn.get() {
            conn.clear(F_PUT_TX_WAITING_ACK);
        }
        loop {
            let next = {
                let mut q = conn.put_comps.borrow_mut();
                match q.front() {
                    Some(&(wait, _)) if wire::sn_le(wait, sn) => q.pop_front(),
                    _ => None,
                }
            };
            let Some((_, comp)) = next else { break };
            // SAFETY: flush completions are the user's until completed.
            unsafe { complete(comp, UCS_OK) };
        }
    }

    fn handle_conn_pkt(&self, iface: &I, conn: &Rc<Conn>, body: &[u8]) -> Next {
        match wire::conn_event(body) {
            Some(wire::EV_CONN_REQ) => match wire::decode_conn_req(body) {
                Some(req) => self.handle_conn_req(iface, conn, &req),
                None => {
                    crate::error!("tcp_ep {:p}: malformed connection request ({} bytes)", Rc::as_ptr(conn), body.len());
                    Next::Continue(conn.clone())
                }
            },
            Some(ev @ (wire::EV_CONN_ACK | wire::EV_CONN_ACK_WITH_REQ)) => {
                if ev == wire::EV_CONN_ACK_WITH_REQ {
                    conn.add_cap(CAP_RX);
                }
                net::close(conn.stale_fd.replace(-1));
                if conn.state.get() != State::Connected {
                    self.set_connected(iface, conn);
                }
                Next::Continue(conn.clone())
            }
            Some(wire::EV_CONN_FIN) => {
                if conn.caps.get() == CAP_RX {
                    self.destroy_conn(conn);
                    Next::Stop
                } else {
                    conn.remove_cap(CAP_RX);
                    Next::Continue(conn.clone())
                }
            }
            ev => {
                crate::error!("tcp_ep {:p}: unknown CM event received {:?}", Rc::as_ptr(conn), ev);
                Next::Continue(conn.clone())
            }
        }
    }

    fn handle_conn_req(&self, iface: &I, conn: &Rc<Conn>, req: &wire::ConnReq) -> Next {
        let to_ep = req.flags & wire::REQ_FLAG_CONNECT_TO_EP != 0;
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
            if !to_ep && self.send_event(iface, conn, wire::EV_CONN_ACK) != UCS_OK {
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
        if !to_ep && self.send_event(iface, conn, wire::EV_CONN_ACK) != UCS_OK {
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
                net::close(mine.stale_fd.replace(accepted.fd.replace(-1)));
            }
            self.destroy_conn(accepted);
            return Next::Stop;
        }
        // Take the accepted socket and drop ours.
        self.mod_events(mine, 0, mine.events.get());
        self.mod_events(accepted, 0, accepted.events.get());
        net::close(mine.fd.replace(accepted.fd.replace(-1)));
        mine.tx.borrow_mut().reset();
        accepted.remove_cap(CAP_RX);
        mine.add_cap(CAP_RX);
        let rx = std::mem::take(&mut *accepted.rx.borrow_mut());
        drop(rx);
        self.destroy_conn(accepted);
        let mut ev = wire::EV_CONN_ACK;
        if matches!(mine.state.get(), State::Connecting | State::WaitingAck) {
            ev |= wire::EV_CONN_REQ;
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

    fn accept_all(&self) {
        loop {
            let lfd = self.listen_fd.get();
            if lfd < 0 {
                return;
            }
            match net::accept(lfd) {
                Ok(Some((fd, peer))) => {
                    if !net::is_connected(fd) {
                        crate::warn!("tcp_iface {}: connection establishment for socket fd {} from {} was \
                                      unsuccessful", self.if_name, fd, peer.map(|p| p.to_string()).unwrap_or_default());
                        net::close(fd);
                        continue;
                    }
                    if self.set_sockopt(fd, false).is_err() {
                        net::close(fd);
                        continue;
                    }
                    let conn = self.new_conn(fd, None);
                    self.set_state(&conn, State::RecvMagic);
                    self.mod_events(&conn, EV_READ, 0);
                    crate::debug!("tcp_iface {}: accepted connection from {} on {} to tcp_ep {:p} (fd {})",
                                  self.if_name, peer.map(|p| p.to_string()).unwrap_or_default(), self.ifaddr,
                                  Rc::as_ptr(&conn), fd);
                }
                Ok(None) => return,
                Err(_) => {
                    net::epoll_set(self.epfd, lfd, EV_READ, 0, LISTEN_TAG);
                    net::close(self.listen_fd.replace(-1));
                    return;
                }
            }
        }
    }

    /// Receive on every reading connection without asking epoll.
    fn fast_progress(&self, iface: &I) -> u32 {
        let mut list: [Option<Rc<Conn>>; FAST_MAX_CONNS] = Default::default();
        let mut n = 0;
        for c in self.conns.borrow().iter().flatten() {
            if c.events.get() == EV_READ && c.fd.get() >= 0 && n < FAST_MAX_CONNS {
                list[n] = Some(c.clone());
                n += 1;
            }
        }
        let mut count = 0;
        for c in list.iter().take(n).flatten() {
            if c.alive.get() && c.events.get() == EV_READ && c.fd.get() >= 0 {
                count += self.rx_progress(iface, c);
            }
        }
        count
    }

    fn outstanding(&self) -> bool {
        self.conns.borrow().iter().flatten().any(|c| {
            c.alive.get()
                && (c.tx_busy() || c.has(F_PUT_TX_WAITING_ACK)
                    || matches!(c.state.get(), State::Connecting | State::WaitingAck | State::Accepting))
        })
    }

    fn conn_of(ep: &Ep<Self>) -> &Rc<Conn> {
        &ep.tl.conn
    }

    /// A user iov list as system iovs, appended to `out` (strided entries
    /// are expanded).
    fn push_iov(out: &mut Vec<libc::iovec>, iov: &[uct_iov_t]) -> usize {
        let mut total = 0;
        for e in iov {
            let count = e.count.max(1) as usize;
            if count == 1 || e.stride == 0 || e.stride == e.length {
                let n = e.length * count;
                if n > 0 {
                    out.push(libc::iovec { iov_base: e.buffer, iov_len: n });
                }
                total += n;
            } else {
                for k in 0..count {
                    out.push(libc::iovec {
                        iov_base: (e.buffer as *mut u8).wrapping_add(k * e.stride) as *mut c_void,
                        iov_len: e.length,
                    });
                    total += e.length;
                }
            }
        }
        total
    }

    /// A zero-copy send: the transport header and `hdr` (copied) in the
    /// send buffer, then the user's iovs.
    #[allow(clippy::too_many_arguments)]
    fn send_zcopy(&self, iface: &I, conn: &Rc<Conn>, am_id: u8, hdr: &[u8], frame_len: Option<u32>, iov: &[uct_iov_t],
                  comp: *mut uct_completion_t) -> Result<(ucs_status_t, usize), ucs_status_t> {
        let s = self.check_tx(conn);
        if s != UCS_OK {
            return Err(s);
        }
        let Ok(mut tx) = conn.tx.try_borrow_mut() else { return Err(UCS_ERR_NO_RESOURCE) };
        let at = tx.held;
        tx.buf[at + wire::HDR_LEN..at + wire::HDR_LEN + hdr.len()].copy_from_slice(hdr);
        tx.push_head(at + wire::HDR_LEN + hdr.len());
        let total = Self::push_iov(&mut tx.iov, iov);
        let flen = frame_len.unwrap_or((hdr.len() + total) as u32);
        wire::put_hdr(&mut tx.buf[at..], am_id, flen);
        conn.tx_epoch.set(self.epoch.get());
        tx.comp = comp;
        conn.set(F_NEED_FLUSH);
        let s = self.flush_tx(iface, conn, tx, true);
        if s != UCS_OK {
            return Err(s);
        }
        let busy = conn.tx_busy();
        if !busy {
            conn.tx.borrow_mut().comp = std::ptr::null_mut();
        }
        Ok((if busy { UCS_INPROGRESS } else { UCS_OK }, total))
    }
}

#[cold]
#[inline(never)]
fn length_error(what: &str, len: usize, max: usize) -> ucs_status_t {
    crate::error!("tcp {}: length {} exceeds the maximum {}", what, len, max);
    UCS_ERR_INVALID_PARAM
}

#[cold]
#[inline(never)]
fn iov_error(what: &str, cnt: usize, max: usize) -> ucs_status_t {
    crate::error!("tcp {}: iovcnt {} exceeds the maximum {}", what, cnt, max);
    UCS_ERR_INVALID_PARAM
}

#[cold]
#[inline(never)]
fn am_id_error(id: u8) -> ucs_status_t {
    crate::error!("tcp: invalid active message id {} (valid: 0..{})", id, wire::AM_ID_MAX - 1);
    UCS_ERR_INVALID_PARAM
}

fn ep_handle(ep: &Ep<TcpIface>) -> uct_ep_h {
    ep as *const Ep<TcpIface> as uct_ep_h
}

impl Transport for TcpIface {
    type Ep = TcpEp;
    const OPS: u64 = op(slot::EP_AM_SHORT) | op(slot::EP_AM_SHORT_IOV) | op(slot::EP_AM_BCOPY) | op(slot::EP_AM_ZCOPY)
        | op(slot::EP_PUT_ZCOPY) | op(slot::EP_PENDING_ADD) | op(slot::EP_PENDING_PURGE) | op(slot::EP_CHECK)
        | op(slot::EP_GET_ADDRESS) | op(slot::EP_CONNECT_TO_EP) | op(slot::IFACE_EVENT_FD_GET)
        | op(slot::IFACE_EVENT_ARM);

    fn query(iface: &I, attr: &mut uct_iface_attr_t) {
        let s = &iface.tl;
        let c = &s.cfg;
        let (latency, bandwidth) = net::netif_caps(&s.if_name);
        let am_buf = c.tx_seg_size - wire::HDR_LEN;
        attr.ep_addr_len = wire::EP_ADDR_LEN;
        attr.iface_addr_len = wire::IFACE_ADDR_LEN;
        attr.device_addr_len = if s.ifaddr.is_loopback() {
            wire::DEV_ADDR_LOOPBACK_LEN
        } else {
            2 + s.ifaddr.ip_bytes().len()
        };
        attr.cap.flags = UCT_IFACE_FLAG_CONNECT_TO_IFACE | UCT_IFACE_FLAG_CONNECT_TO_EP | UCT_IFACE_FLAG_AM_SHORT
            | UCT_IFACE_FLAG_AM_BCOPY | UCT_IFACE_FLAG_PENDING | UCT_IFACE_FLAG_CB_SYNC | UCT_IFACE_FLAG_EP_CHECK
            | UCT_IFACE_FLAG_ERRHANDLE_PEER_FAILURE;
        attr.cap.event_flags = UCT_IFACE_FLAG_EVENT_SEND_COMP | UCT_IFACE_FLAG_EVENT_RECV | UCT_IFACE_FLAG_EVENT_FD;
        attr.cap.am.max_short = am_buf;
        attr.cap.am.max_bcopy = am_buf;
        if c.keepalive.is_some() {
            attr.cap.flags |= UCT_IFACE_FLAG_EP_KEEPALIVE;
        }
        if c.max_iov > ZCOPY_SERVICE_IOV {
            attr.cap.am.max_iov = c.max_iov - ZCOPY_SERVICE_IOV;
            attr.cap.am.max_zcopy = c.rx_seg_size - wire::HDR_LEN;
            attr.cap.am.max_hdr = c.max_hdr;
            attr.cap.am.opt_zcopy_align = 1;
            attr.cap.flags |= UCT_IFACE_FLAG_AM_ZCOPY;
            if c.put_enable {
                attr.cap.put.max_iov = c.max_iov - ZCOPY_SERVICE_IOV;
                attr.cap.put.max_zcopy = usize::MAX - (wire::HDR_LEN + wire::PUT_REQ_LEN);
                attr.cap.put.opt_zcopy_align = 1;
                attr.cap.flags |= UCT_IFACE_FLAG_PUT_ZCOPY;
            }
        }
        attr.bandwidth.dedicated = 0.0;
        attr.bandwidth.shared = bandwidth;
        attr.latency.c = latency;
        attr.latency.m = 0.0;
        attr.overhead = 50e-6;
        attr.priority = if c.prefer_default {
            match net::netif_is_default(&s.if_name) {
                Ok(true) => 0,
                _ => 1,
            }
        } else {
            0
        };
    }

    fn ep_create(iface: &I, params: &EpParams<'_>) -> Result<TcpEp, ucs_status_t> {
        let s = &iface.tl;
        if !params.dev_addr.is_null() && !params.iface_addr.is_null() {
            let dest = dest_addr(params.dev_addr as *const u8, params.iface_addr as *const u8)?;
            let conn = s.new_conn(-1, Some(dest));
            conn.cm_id.set(s.next_conn_sn(&dest));
            if let Err(e) = s.ep_connect(iface, &conn) {
                s.destroy_conn(&conn);
                return Err(e);
            }
            Ok(TcpEp { conn })
        } else {
            let conn = s.new_conn(-1, None);
            conn.set(F_CONNECT_TO_EP);
            let key = s.next_key.get();
            s.next_key.set(key + 2);
            conn.cm_id.set(key);
            conn.on_ptr_map.set(true);
            Ok(TcpEp { conn })
        }
    }

    fn ep_init(_iface: &I, ep: &Ep<Self>) {
        ep.tl.conn.owner.set(ep_handle(ep));
    }

    fn ep_destroy(iface: &I, ep: &mut Ep<Self>) {
        let s = &iface.tl;
        let conn = ep.tl.conn.clone();
        s.release_held(iface, &conn);
        conn.owner.set(std::ptr::null_mut());
        conn.pending.borrow_mut().clear();
        if !conn.alive.get() {
            return;
        }
        if !conn.has(F_CONNECT_TO_EP) && conn.state.get() == State::Connected && conn.caps.get() == CAP_TX | CAP_RX {
            // Keep receiving: the peer may still send on this connection.
            conn.remove_cap(CAP_TX);
            s.purge(&conn, UCS_ERR_CANCELED);
            conn.queue.set(Some(Queue::Unexp));
            if s.send_event(iface, &conn, wire::EV_CONN_FIN) == UCS_OK && conn.alive.get() {
                return;
            }
        }
        s.destroy_conn(&conn);
    }

    fn close(iface: &mut I) {
        let s = &iface.tl;
        crate::debug!("tcp_iface {}: destroying", s.if_name);
        s.release_all_held(iface);
        let all: Vec<Rc<Conn>> = s.conns.borrow().iter().flatten().cloned().collect();
        for c in all {
            s.destroy_conn(&c);
        }
        let lfd = s.listen_fd.replace(-1);
        net::close(lfd);
        net::close(s.epfd);
    }

    fn get_device_address(iface: &I, out: AddrOut) -> ucs_status_t {
        let a = &iface.tl.ifaddr;
        let mut v = Vec::with_capacity(wire::DEV_ADDR_LOOPBACK_LEN);
        if a.is_loopback() {
            // SAFETY: plain libucs queries.
            let (id, ns) = unsafe {
                let id = ucs::ucs_get_system_id();
                let ns = (ucs::ucs_sys_ns_is_default(ucs::UCS_SYS_NS_TYPE_NET) == 0)
                    .then(|| ucs::ucs_sys_get_ns(ucs::UCS_SYS_NS_TYPE_NET));
                (id, ns)
            };
            wire::encode_dev_addr_loopback(&mut v, a.family, id, ns);
        } else {
            wire::encode_dev_addr_ip(&mut v, a);
        }
        out.write(&v)
    }

    fn get_address(iface: &I, out: AddrOut) -> ucs_status_t {
        out.write(&wire::encode_iface_addr(iface.tl.ifaddr.port))
    }

    fn is_reachable(iface: &I, dev: *const uct_device_addr_t, _addr: *const uct_iface_addr_t) -> bool {
        // SAFETY: a tcp device address holds at least its 2-byte head.
        let Some(head) = (unsafe { read_addr::<2>(dev as *const c_void) }) else { return false };
        let Some((flags, family)) = wire::dev_addr_head(&head) else { return false };
        let me = &iface.tl.ifaddr;
        if family != me.family {
            return false;
        }
        let loopback = flags & wire::DEV_FLAG_LOOPBACK != 0;
        if loopback != me.is_loopback() {
            return false;
        }
        if !loopback {
            return true;
        }
        // SAFETY: a loopback device address is 18 bytes long.
        let Some(full) = (unsafe { read_addr::<{ wire::DEV_ADDR_LOOPBACK_LEN }>(dev as *const c_void) }) else {
            return false;
        };
        let Some((id, ns)) = wire::dev_addr_local(&full) else { return false };
        // SAFETY: plain libucs queries.
        let (my_id, my_ns) = unsafe {
            let default = ucs::ucs_sys_ns_is_default(ucs::UCS_SYS_NS_TYPE_NET) != 0;
            let id = ucs::ucs_get_system_id() & !wire::LOCAL_FLAG_NS;
            if default { (id, 0) } else { (id | wire::LOCAL_FLAG_NS, ucs::ucs_sys_get_ns(ucs::UCS_SYS_NS_TYPE_NET)) }
        };
        if id != my_id {
            return false;
        }
        id & wire::LOCAL_FLAG_NS == 0 || ns == my_ns
    }

    fn progress(iface: &I) -> u32 {
        let s = &iface.tl;
        if s.in_progress.replace(true) {
            return 0;
        }
        s.epoch.set(s.epoch.get().wrapping_add(1));
        s.release_all_held(iface);
        // Few connections, all only reading, small messages: receive on
        // them directly (one system call per message instead of epoll_wait
        // + recv); the epoll set (listening socket) is still polled every
        // FAST_POLL_EVERY calls. A stream of large messages stays with
        // epoll: receiving all the time contends with the sender for the
        // socket lock and costs bandwidth.
        let nr = s.n_read.get();
        if s.n_other.get() == 0 && nr > 0 && nr <= FAST_MAX_CONNS && s.last_rx.get() < FAST_BULK_BYTES {
            let k = s.fast_polls.get();
            if k < FAST_POLL_EVERY {
                s.fast_polls.set(k + 1);
                let count = s.fast_progress(iface);
                s.in_progress.set(false);
                return count;
            }
            s.fast_polls.set(0);
        }
        let mut count = 0u32;
        let mut budget = s.cfg.max_poll;
        let mut events = std::mem::take(&mut *s.events.borrow_mut());
        loop {
            let want = budget.min(MAX_EVENTS);
            if want == 0 {
                break;
            }
            let n = net::epoll_poll(s.epfd, &mut events[..want]);
            for ev in &events[..n] {
                let (flags, tag) = (ev.events, ev.u64);
                if tag == LISTEN_TAG {
                    s.accept_all();
                    continue;
                }
                let err = flags & (libc::EPOLLERR | libc::EPOLLHUP) as u32 != 0;
                if flags & EV_READ != 0 || err {
                    if let Some(c) = s.lookup(tag) {
                        if c.events.get() & EV_READ != 0 {
                            count += s.rx_progress(iface, &c);
                        }
                    }
                }
                if flags & EV_WRITE != 0 || err {
                    if let Some(c) = s.lookup(tag) {
                        if c.events.get() & EV_WRITE != 0 {
                            count += s.tx_progress(iface, &c);
                        }
                    }
                }
            }
            budget -= n;
            if n < MAX_EVENTS {
                break;
            }
        }
        *s.events.borrow_mut() = events;
        s.in_progress.set(false);
        count
    }

    fn iface_flush(iface: &I, _flags: u32, comp: *mut uct_completion_t) -> ucs_status_t {
        if !comp.is_null() {
            return UCS_ERR_UNSUPPORTED;
        }
        iface.tl.release_all_held(iface);
        if iface.tl.outstanding() { UCS_INPROGRESS } else { UCS_OK }
    }

    fn event_fd_get(iface: &I) -> Result<c_int, ucs_status_t> {
        Ok(iface.tl.epfd)
    }

    fn event_arm(iface: &I, _events: u32) -> ucs_status_t {
        // The epoll descriptor is readable whenever a socket has an event:
        // it is always armed (as in UCX). Held messages go out before the
        // caller sleeps.
        iface.tl.release_all_held(iface);
        UCS_OK
    }

    #[inline]
    fn am_short(iface: &I, ep: &Ep<Self>, id: u8, header: u64, payload: &[u8]) -> ucs_status_t {
        let s = &iface.tl;
        let conn = Self::conn_of(ep);
        let max = s.cfg.tx_seg_size - wire::HDR_LEN;
        if payload.len() + 8 > max {
            return length_error("am_short", payload.len() + 8, max);
        }
        let (mut tx, at) = match s.begin_am(conn, id) {
            Ok(v) => v,
            Err(e) => return e,
        };
        tx.buf[at..at + 8].copy_from_slice(&header.to_ne_bytes());
        if payload.len() <= s.cfg.sendv_thresh || s.may_hold(conn, at + 8 + payload.len()) {
            tx.buf[at + 8..at + 8 + payload.len()].copy_from_slice(payload);
            return s.send_buffered(iface, conn, tx, id, 8 + payload.len(), true);
        }
        wire::put_hdr(&mut tx.buf[at - wire::HDR_LEN..], id, (8 + payload.len()) as u32);
        tx.push_head(at + 8);
        tx.iov.push(libc::iovec { iov_base: payload.as_ptr() as *mut c_void, iov_len: payload.len() });
        conn.set(F_NEED_FLUSH);
        conn.tx_epoch.set(s.epoch.get());
        s.flush_tx(iface, conn, tx, false)
    }

    fn am_short_iov(iface: &I, ep: &Ep<Self>, id: u8, iov: &[uct_iov_t]) -> ucs_status_t {
        let s = &iface.tl;
        let conn = Self::conn_of(ep);
        if iov.len() > s.cfg.max_iov {
            return iov_error("am_short_iov", iov.len(), s.cfg.max_iov);
        }
        let total = iov_total(iov);
        let max = s.cfg.tx_seg_size - wire::HDR_LEN;
        if total > max {
            return length_error("am_short_iov", total, max);
        }
        let (mut tx, at) = match s.begin_am(conn, id) {
            Ok(v) => v,
            Err(e) => return e,
        };
        let n = iov_gather(iov, &mut tx.buf[at..at + total]);
        s.send_buffered(iface, conn, tx, id, n, true)
    }

    fn am_bcopy(iface: &I, ep: &Ep<Self>, id: u8, pack: Pack, _flags: u32) -> isize {
        let s = &iface.tl;
        let conn = Self::conn_of(ep);
        let (mut tx, at) = match s.begin_am(conn, id) {
            Ok(v) => v,
            Err(e) => return e as isize,
        };
        let max = s.cfg.tx_seg_size - wire::HDR_LEN;
        let n = pack.pack_into(&mut tx.buf[at..]);
        if n > max {
            tx.reset();
            return length_error("am_bcopy", n, max) as isize;
        }
        match s.send_buffered(iface, conn, tx, id, n, true) {
            UCS_OK => n as isize,
            e => e as isize,
        }
    }

    fn am_zcopy(iface: &I, ep: &Ep<Self>, id: u8, header: &[u8], iov: &[uct_iov_t], _flags: u32,
                comp: *mut uct_completion_t) -> ucs_status_t {
        let s = &iface.tl;
        let conn = Self::conn_of(ep);
        let max_iov = s.cfg.max_iov - ZCOPY_SERVICE_IOV;
        if iov.len() > max_iov {
            return iov_error("am_zcopy", iov.len(), max_iov);
        }
        if header.len() > s.cfg.max_hdr {
            return length_error("am_zcopy header", header.len(), s.cfg.max_hdr);
        }
        let total = header.len() + iov_total(iov);
        let max = s.cfg.rx_seg_size - wire::HDR_LEN;
        if total > max {
            return length_error("am_zcopy", total, max);
        }
        if id >= wire::AM_ID_MAX {
            return am_id_error(id);
        }
        // Back to back with other messages and small enough for the send
        // buffer: copied and held back with them (coalescing), complete now.
        if s.cfg.coalesce > 0 && total <= s.cfg.tx_seg_size - wire::HDR_LEN && s.check_tx(conn) == UCS_OK {
            if let Ok(mut tx) = conn.tx.try_borrow_mut() {
                let at = tx.held + wire::HDR_LEN;
                if s.may_hold(conn, at + total) {
                    tx.buf[at..at + header.len()].copy_from_slice(header);
                    let n = iov_gather(iov, &mut tx.buf[at + header.len()..at + total]);
                    debug_assert_eq!(header.len() + n, total);
                    return s.send_buffered(iface, conn, tx, id, total, true);
                }
            }
        }
        match s.send_zcopy(iface, conn, id, header, None, iov, comp) {
            Ok((st, _)) => st,
            Err(e) => e,
        }
    }

    fn put_zcopy(iface: &I, ep: &Ep<Self>, iov: &[uct_iov_t], remote: Remote,
                 comp: *mut uct_completion_t) -> ucs_status_t {
        let s = &iface.tl;
        let conn = Self::conn_of(ep);
        let max_iov = s.cfg.max_iov - ZCOPY_SERVICE_IOV;
        if iov.len() > max_iov {
            return iov_error("put_zcopy", iov.len(), max_iov);
        }
        let req = PutReq { addr: remote.addr, length: iov_total(iov) as u64, sn: conn.tx_put_sn.get().wrapping_add(1) };
        let mut hdr = [0u8; wire::PUT_REQ_LEN];
        wire::encode_put_req(&mut hdr, &req);
        if let Err(e) = s.send_zcopy(iface, conn, wire::AM_ID_PUT_REQ, &hdr, Some(wire::PUT_REQ_LEN as u32), iov,
                                     std::ptr::null_mut()) {
            return e;
        }
        conn.tx_put_sn.set(req.sn);
        conn.set(F_PUT_TX_WAITING_ACK);
        if !comp.is_null() {
            conn.put_comps.borrow_mut().push_back((req.sn, comp));
        }
        UCS_INPROGRESS
    }

    fn pending_add(iface: &I, ep: &Ep<Self>, req: PendingReq, _flags: u32) -> ucs_status_t {
        let conn = Self::conn_of(ep);
        if iface.tl.check_tx(conn) == UCS_OK {
            return UCS_ERR_BUSY;
        }
        conn.pending.borrow_mut().push_back(req);
        UCS_OK
    }

    fn pending_purge(_iface: &I, ep: &Ep<Self>, cb: PurgeCb) {
        let conn = Self::conn_of(ep);
        loop {
            let Some(req) = conn.pending.borrow_mut().pop_front() else { break };
            cb.call(req);
        }
    }

    fn ep_flush(iface: &I, ep: &Ep<Self>, flags: u32, comp: *mut uct_completion_t) -> ucs_status_t {
        let s = &iface.tl;
        let conn = Self::conn_of(ep);
        // Messages held back were completed for the user: they go out
        // (also before a cancel, which only drops what is not sent yet).
        s.release_held(iface, conn);
        if flags & UCT_FLUSH_FLAG_CANCEL != 0 {
            s.purge(conn, UCS_ERR_CANCELED);
            return UCS_OK;
        }
        let st = s.check_tx(conn);
        if st != UCS_OK {
            return st;
        }
        if conn.has(F_NEED_FLUSH) {
            let st = Self::put_zcopy(iface, ep, &[], Remote::new(0, 0), std::ptr::null_mut());
            if st != UCS_OK && st != UCS_INPROGRESS {
                return st;
            }
            conn.clear(F_NEED_FLUSH);
        }
        if conn.has(F_PUT_TX_WAITING_ACK) {
            if !comp.is_null() {
                conn.put_comps.borrow_mut().push_back((conn.tx_put_sn.get(), comp));
            }
            return UCS_INPROGRESS;
        }
        UCS_OK
    }

    fn ep_check(iface: &I, ep: &Ep<Self>, flags: u32, comp: *mut uct_completion_t) -> ucs_status_t {
        if flags != 0 || !comp.is_null() {
            crate::error!("tcp ep_check: unsupported flags {:#x} or completion {:p}", flags, comp);
            return UCS_ERR_INVALID_PARAM;
        }
        let s = &iface.tl;
        let conn = Self::conn_of(ep);
        match s.check_tx(conn) {
            UCS_OK => {}
            UCS_ERR_NO_RESOURCE => return UCS_OK,
            e => return e,
        }
        let Ok(tx) = conn.tx.try_borrow_mut() else { return UCS_OK };
        s.send_buffered(iface, conn, tx, wire::AM_ID_KEEPALIVE, 0, false)
    }

    fn ep_get_address(iface: &I, ep: &Ep<Self>, out: AddrOut) -> ucs_status_t {
        out.write(&wire::encode_ep_addr(iface.tl.ifaddr.port, ep.tl.conn.cm_id.get()))
    }

    fn ep_connect_to_ep(iface: &I, ep: &Ep<Self>, dev: *const uct_device_addr_t,
                        ep_addr: *const uct_ep_addr_t) -> ucs_status_t {
        let s = &iface.tl;
        let conn = Self::conn_of(ep);
        if conn.state.get() == State::Connected {
            return UCS_OK;
        }
        if !conn.on_ptr_map.get() {
            return UCS_ERR_CONNECTION_RESET;
        }
        // SAFETY: a tcp endpoint address is 10 bytes long.
        let Some(a) = (unsafe { read_addr::<{ wire::EP_ADDR_LEN }>(ep_addr as *const c_void) }) else {
            return UCS_ERR_INVALID_PARAM;
        };
        let Some((_, key)) = wire::decode_ep_addr(&a) else { return UCS_ERR_INVALID_PARAM };
        let dest = match dest_addr(dev as *const u8, ep_addr as *const u8) {
            Ok(d) => d,
            Err(e) => return e,
        };
        conn.peer.set(Some(dest));
        if !s.accept_conn(conn) {
            conn.add_cap(CAP_RX);
            conn.on_ptr_map.set(false);
            conn.cm_id.set(key);
            return match s.ep_connect(iface, conn) {
                Ok(()) => UCS_OK,
                Err(e) => e,
            };
        }
        s.set_state(conn, State::Accepting);
        UCS_OK
    }

    fn ep_query(_iface: &I, _ep: &Ep<Self>, _attr: &mut uct_ep_attr_t) -> ucs_status_t {
        UCS_ERR_UNSUPPORTED
    }
}

/// The peer's socket address from its device address and the port at the
/// start of its iface or endpoint address.
fn dest_addr(dev: *const u8, port_addr: *const u8) -> Result<SockAddr, ucs_status_t> {
    // SAFETY: tcp device addresses start with their 2-byte head.
    let head = unsafe { read_addr::<2>(dev as *const c_void) }.ok_or(UCS_ERR_INVALID_PARAM)?;
    // SAFETY: tcp iface and ep addresses start with the 2-byte port.
    let pa = unsafe { read_addr::<2>(port_addr as *const c_void) }.ok_or(UCS_ERR_INVALID_PARAM)?;
    let port = wire::decode_iface_addr(&pa).ok_or(UCS_ERR_INVALID_PARAM)?;
    let (flags, family) = (head[0], head[1] as u16);
    let loopback = flags & wire::DEV_FLAG_LOOPBACK != 0;
    match family {
        net::AF_INET => {
            let ip = if loopback {
                [127, 0, 0, 1]
            } else {
                // SAFETY: an IPv4 device address is 6 bytes long.
                let a = unsafe { read_addr::<6>(dev as *const c_void) }.ok_or(UCS_ERR_INVALID_PARAM)?;
                [a[2], a[3], a[4], a[5]]
            };
            Ok(SockAddr::v4(ip, port))
        }
        net::AF_INET6 => {
            let mut ip = [0u8; 16];
            if loopback {
                ip[15] = 1;
            } else {
                // SAFETY: an IPv6 device address is 18 bytes long.
                let a = unsafe { read_addr::<18>(dev as *const c_void) }.ok_or(UCS_ERR_INVALID_PARAM)?;
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

static INTERNAL: InternalOps = Internal::<TcpIface>::OPS;

fn time_seconds(t: u64, auto: i32, max: i32) -> i32 {
    if t == TIME_AUTO {
        return auto;
    }
    if t == TIME_INF {
        return max;
    }
    // SAFETY: plain libucs query.
    let per_sec = unsafe { ucs::ucs_get_cpu_clocks_per_sec() };
    let secs = (t as f64 / per_sec) as i64;
    secs.clamp(1, max as i64) as i32
}

/// Open a tcp interface on a network device.
pub fn open(md: &MdObj, worker: &WorkerObj, params: &IfaceParams, c: &TcpIfaceConfig, af_prio: &[u16])
            -> Result<uct_iface_h, ucs_status_t> {
    if params.open_mode & UCT_IFACE_OPEN_MODE_DEVICE == 0 {
        crate::error!("only UCT_IFACE_OPEN_MODE_DEVICE is supported");
        return Err(UCS_ERR_UNSUPPORTED);
    }
    if worker.thread_mode == UCS_THREAD_MODE_MULTI {
        crate::error!("TCP transport does not support multi-threaded worker");
        return Err(UCS_ERR_INVALID_PARAM);
    }
    // Buffers here belong to endpoints, not to shared pools, so these limits
    // bound nothing; the values are still checked as UCX checks its pools
    // (a grow of 0 means 32 there).
    let or_32 = |g: libc::c_uint| if g == 0 { 32 } else { g };
    crate::core::config::check_pool_limits("tcp tx buffers", or_32(c.tx_bufs_grow), c.tx_max_bufs)?;
    crate::core::config::check_pool_limits("tcp rx buffers", or_32(c.rx_bufs_grow), c.rx_max_bufs)?;
    let tx_seg_size = c.tx_seg_size.saturating_add(wire::HDR_LEN);
    let rx_seg_size = c.rx_seg_size.saturating_add(wire::HDR_LEN);
    let max_iov = (c.max_iov as usize).saturating_add(ZCOPY_SERVICE_IOV).min(net::iov_max());
    let hdr_offset = ZCOPY_CTX_LEN + std::mem::size_of::<libc::iovec>() * max_iov;
    if hdr_offset > tx_seg_size && max_iov > ZCOPY_SERVICE_IOV {
        crate::error!("AM Zcopy context ({}) must be <= TX segment size ({}). It can be adjusted by decreasing \
                       maximum IOV count ({})", hdr_offset, tx_seg_size, max_iov);
        return Err(UCS_ERR_INVALID_PARAM);
    }
    if c.max_conn_retries > u8::MAX as u32 {
        crate::error!("unsupported value was specified ({}) for the maximal connection retries, expected lower \
                       than {}", c.max_conn_retries, u8::MAX);
        return Err(UCS_ERR_INVALID_PARAM);
    }
    if tx_seg_size > rx_seg_size {
        crate::error!("RX segment size ({}) must be >= TX segment size ({})", rx_seg_size, tx_seg_size);
        return Err(UCS_ERR_INVALID_PARAM);
    }
    if rx_seg_size > u32::MAX as usize || tx_seg_size > (1 << 30) {
        crate::error!("tcp: segment sizes too large (TX {} RX {})", tx_seg_size, rx_seg_size);
        return Err(UCS_ERR_INVALID_PARAM);
    }
    let keepidle = if c.keepidle != UNITS_AUTO {
        c.keepidle
    } else if params.keepalive_interval != 0 {
        params.keepalive_interval
    } else {
        TIME_AUTO
    };
    let keepalive = (keepidle != TIME_INF && c.keepcnt != UNITS_INF && c.keepintvl != TIME_INF).then(|| {
        (time_seconds(keepidle, KEEPALIVE_IDLE_DEFAULT, i16::MAX as i32),
         (c.keepcnt != UNITS_AUTO).then(|| c.keepcnt.min(i8::MAX as u64) as i32),
         time_seconds(c.keepintvl, KEEPALIVE_INTVL_DEFAULT, i16::MAX as i32))
    });
    let Some(mut ifaddr) = af_prio.iter().find_map(|&af| net::netif_addr(&params.dev_name, af)) else {
        crate::error!("tcp: no usable address on device '{}'", params.dev_name);
        return Err(UCS_ERR_NO_DEVICE);
    };
    let epfd = net::epoll_create()?;
    // Listen on the device's address: a random port of PORT_RANGE, or one
    // the system picks.
    let (first, last) = (c.port_range.first, c.port_range.last);
    let retry = first == 0 || first < last;
    let mut attempt = 0;
    let (lfd, port) = loop {
        let port = if last != 0 {
            // SAFETY: rand has no preconditions (libucs uses it too).
            let r = unsafe { libc::rand() } as u32;
            (first + r % (last - first + 1)) as u16
        } else {
            0
        };
        let mut bind = ifaddr;
        bind.port = port;
        match net::listen(&bind, net::somaxconn()) {
            Ok(v) => break v,
            Err(UCS_ERR_BUSY) if retry && attempt < 1000 => attempt += 1,
            Err(e) => {
                net::close(epfd);
                return Err(e);
            }
        }
    };
    ifaddr.port = port;
    net::epoll_set(epfd, lfd, 0, EV_READ, LISTEN_TAG);
    let cfg = Cfg {
        tx_seg_size,
        rx_seg_size,
        sendv_thresh: if net::iov_max() >= 3 { c.sendv_thresh } else { usize::MAX },
        max_iov,
        max_hdr: tx_seg_size - hdr_offset,
        prefer_default: c.prefer_default != 0,
        put_enable: c.put_enable != 0,
        conn_nb: c.conn_nb != 0,
        max_poll: c.max_poll as usize,
        max_conn_retries: c.max_conn_retries,
        syn_cnt: c.syn_cnt,
        nodelay: c.nodelay != 0,
        sndbuf: c.sndbuf as u64,
        rcvbuf: c.rcvbuf as u64,
        keepalive,
        coalesce: c.tx_coalesce.min(1 << 24),
    };
    let hdr = IfaceHeader::new(md, worker, params, &c.base, &INTERNAL);
    let tl = TcpIface {
        cfg,
        if_name: params.dev_name.clone(),
        ifaddr,
        epfd,
        listen_fd: Cell::new(lfd),
        conns: RefCell::new(Vec::new()),
        free_slots: RefCell::new(Vec::new()),
        gen: Cell::new(0),
        next_sn: RefCell::new(HashMap::new()),
        next_key: Cell::new(2),
        in_progress: Cell::new(false),
        n_read: Cell::new(0),
        n_other: Cell::new(0),
        fast_polls: Cell::new(0),
        last_rx: Cell::new(0),
        events: RefCell::new(vec![libc::epoll_event { events: 0, u64: 0 }; MAX_EVENTS]),
        epoch: Cell::new(0),
        holding: RefCell::new(Vec::new()),
    };
    crate::debug!("tcp_iface {}: listening for connections (fd={}) on {}", tl.if_name, lfd, ifaddr);
    Ok(Iface::into_handle(hdr, tl))
}
