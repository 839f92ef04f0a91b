//! The send path: the checks before a send, active messages (short,
//! short_iov, bcopy, zcopy) written into the connection's send buffer or
//! sent from the user's iovs, the coalescing of back-to-back messages,
//! partial sends finished on EPOLLOUT, and the pending requests run once
//! the send context is free again.

use super::conn::*;
use super::iface::{TcpIface, I, ZCOPY_SERVICE_IOV};
use super::codec;
use crate::abi::*;
use crate::core::iface::checks::{self, Op};
use crate::core::handles::*;
use crate::core::worker::Holder;
use crate::sys::epoll::EV_WRITE;
use crate::sys::io_errno_status;
use crate::sys::socket::Io;
use libc::c_void;
use std::rc::Rc;

/// Who holds messages back, for the worker's ordering rule: the endpoint
/// that owns the connection (its own later sends may join them), else the
/// connection itself (no endpoint operation matches it).
fn hold_token(conn: &Rc<Conn>) -> *const c_void {
    let ep = conn.owner.get();
    if ep.is_null() { Rc::as_ptr(conn) as *const c_void } else { ep as *const c_void }
}

/// The worker's call to send what a tcp interface holds back (another
/// endpoint or transport of the worker is about to send, or the safety
/// net's timer found it held too long).
///
/// The timer calls it from the async thread, with the worker's hold lock
/// taken: every entry point of an interface that may hold takes that lock
/// while something is held (`TcpIface::guard`), so the interface's state
/// (its connections, their counts and buffers) is never touched by two
/// threads at once. On that thread it only sends (`WorkerObj::in_tick`).
impl Holder for I {
    fn send_held(&self) {
        self.tl.release_all_held(self);
    }
}

/// Calls of a pending request that answers UCS_INPROGRESS, in one dispatch.
const PENDING_INPROGRESS_ROUNDS: u32 = 1024;
/// Coalescing and large messages: a zero-copy message above this size is
/// never copied to be held, nor is a put, except an active message on a
/// connection that stays on this host and got `UCX_TCP_LOCAL_CC`, which
/// is held up to the coalescing bound (`am_hold_max`). The message after
/// a larger one is not held either (it goes out on its own, as with the C
/// original), except on such a connection. Measured over loopback with
/// UCP streams of 32 and 64 KiB (`bench/ucp-compare.sh`, rows
/// `tcp:stream_bw:*`): under BBR, holding those (or the small fragment
/// that follows a 64 KiB one) halved the stream bandwidth; with reno,
/// holding the fragment after a 64 KiB one (so that it goes out with the
/// next message: one system call per message instead of two) is a quarter
/// faster, and holding the 32 and 64 KiB messages themselves, so that
/// they go out 256 KiB at a time, is worth another 1.1-1.2x once the
/// receiver takes two of them per receive (`rx::desc_rx`). Copying and
/// holding libucp's rendezvous puts of 31-32 KiB costs UCP tag_bw 64 KiB
/// 5 %: puts stay at this bound. Holding messages of 16 KiB (and their
/// headers) is what makes the smaller rows faster.
pub(super) const COPY_HOLD_MAX: usize = 17 << 10;
/// Free send buffers the interface keeps for reuse.
const TX_POOL_KEEP: usize = 16;

impl TcpIface {
    // -----------------------------------------------------------------------
    // Sending.

    /// UCX's `check_tx_res`: can a message be sent now?
    pub(super) fn check_tx(&self, conn: &Conn) -> ucs_status_t {
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
    pub(super) fn flush_tx(&self, iface: &I, conn: &Rc<Conn>, mut tx: std::cell::RefMut<'_, Tx>, keep_user: bool)
                           -> ucs_status_t {
        // One entry: send; more: sendmsg (one system call either way).
        let r = if tx.iov.len() - tx.idx == 1 {
            let e = tx.iov[tx.idx];
            // SAFETY: the entry names `tx.buf` or the caller's buffer, live
            // for this call.
            conn.sock.send(unsafe { std::slice::from_raw_parts(e.iov_base as *const u8, e.iov_len) })
        } else {
            // SAFETY: as above, for every entry.
            unsafe { conn.sock.sendv(&tx.iov[tx.idx..]) }
        };
        match r {
            Io::Done(n) => tx.advance(n),
            Io::Again => {}
            Io::Closed | Io::Err(_) if iface.hdr.worker().in_tick() => {
                // The safety net's timer, possibly on the async thread:
                // no error handling there (it calls the user). The send
                // stays queued and EPOLLOUT armed, so progress tries it
                // again and handles the error.
                drop(tx);
                self.mod_events(conn, EV_WRITE, 0);
                return UCS_OK;
            }
            Io::Closed => {
                tx.reset();
                drop(tx);
                return self.handle_send_err(iface, conn, UCS_ERR_NOT_CONNECTED);
            }
            Io::Err(e) => {
                tx.reset();
                drop(tx);
                return self.handle_send_err(iface, conn, io_errno_status(e));
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
            self.tx_release(&mut tx);
        }
        UCS_OK
    }

    /// At least `size` bytes of send buffer in `tx`: a buffer from the
    /// interface's pool when the connection has none (or only the small
    /// one of control frames) and holds nothing, else its own grown.
    /// Never while the send context is busy (entries point into the
    /// buffer): every caller checked `check_tx` or `busy` first.
    #[inline(always)]
    pub(super) fn tx_ensure(&self, tx: &mut Tx, size: usize) {
        if tx.buf.len() < size {
            self.tx_take(tx, size);
        }
    }

    #[inline]
    fn tx_take(&self, tx: &mut Tx, size: usize) {
        debug_assert!(!tx.busy());
        if tx.held == 0 {
            let mut pool = self.tx_pool.borrow_mut();
            if pool.last().is_some_and(|b| b.len() >= size) {
                tx.buf = pool.pop().unwrap_or_default();
                return;
            }
        }
        tx.ensure(size);
    }

    /// The send context went idle: its buffer goes back to the pool (as UCX
    /// takes its send buffers from a pool per message), so a connection
    /// that is not sending holds none. Buffers holding messages back, and
    /// the small ones of control frames, stay.
    #[inline]
    fn tx_release(&self, tx: &mut Tx) {
        if tx.held == 0 && tx.buf.len() >= self.cfg.tx_seg_size {
            let mut pool = self.tx_pool.borrow_mut();
            if pool.len() < TX_POOL_KEEP {
                pool.push(std::mem::take(&mut tx.buf));
            }
        }
    }

    /// The send context for a new active message `id` on `conn`, and the
    /// offset in its buffer where the body goes (after the held messages
    /// and the header slot); NO_RESOURCE while the connection cannot send.
    #[inline]
    fn begin_am<'c>(&self, conn: &'c Conn, id: u8) -> Result<(std::cell::RefMut<'c, Tx>, usize), ucs_status_t> {
        checks::am_id(id)?;
        let st = self.check_tx(conn);
        if st != UCS_OK {
            return Err(st);
        }
        let mut tx = conn.tx.try_borrow_mut().map_err(|_| UCS_ERR_NO_RESOURCE)?;
        self.tx_ensure(&mut tx, self.cfg.tx_seg_size);
        let at = tx.held + codec::HDR_LEN;
        Ok((tx, at))
    }

    /// Start a message of `len` body bytes already written after the
    /// header slot at `tx.held` in `tx.buf`; an active message (`hold`) may
    /// be held back to go out with the next one.
    #[inline]
    pub(super) fn send_buffered(&self, iface: &I, conn: &Rc<Conn>, tx: std::cell::RefMut<'_, Tx>, am_id: u8,
                                len: usize, hold: bool) -> ucs_status_t {
        self.send_buffered_frame(iface, conn, tx, am_id, len as u32, len, hold)
    }

    /// [`send_buffered`](Self::send_buffered) of a frame whose header
    /// gives `frame_len` bytes while `len` bytes follow it (a put: its
    /// request, then its data).
    #[allow(clippy::too_many_arguments)]
    #[inline]
    pub(super) fn send_buffered_frame(&self, iface: &I, conn: &Rc<Conn>, mut tx: std::cell::RefMut<'_, Tx>,
                                      am_id: u8, frame_len: u32, len: usize, hold: bool) -> ucs_status_t {
        let at = tx.held;
        codec::put_hdr(&mut tx.buf[at..], am_id, frame_len);
        let end = at + codec::HDR_LEN + len;
        conn.set(F_NEED_FLUSH);
        if hold && self.may_hold(conn, end) {
            // Room for one more message after the held ones (the buffer
            // grows on the first hold; nothing points into it now).
            let want = self.cfg.tx_seg_size + self.cfg.coalesce;
            if tx.buf.len() < want {
                tx.buf.resize(want, 0);
            }
            tx.held = end;
            if at != 0 {
                // Joined what the connection holds (this call runs with
                // the worker's hold lock taken: see `guard`).
                return UCS_OK;
            }
            // The first held message: the hold is the last step (the
            // safety net may send it from another thread once `hold`
            // returns).
            drop(tx);
            let worker = iface.hdr.worker();
            if self.in_progress.get() && !self.progress_locked.get() && worker.hold_lock_keep() {
                // From a handler of this interface's progress, which goes on
                // touching the connections: locked until it returns.
                self.progress_locked.set(true);
            }
            self.holding.borrow_mut().push(conn.clone());
            // SAFETY: the interface unregisters (`unhold`) whenever what it
            // holds goes out, and before it closes; nothing below touches
            // the connection once the hold is made.
            let held = unsafe { worker.hold(hold_token(conn), iface, self.cfg.hold_limit) };
            if !held {
                self.release_held(iface, conn);
            }
            return UCS_OK;
        }
        tx.push_head(end);
        conn.tx_epoch.set(self.epoch.get());
        self.flush_tx(iface, conn, tx, false)
    }

    /// Coalescing: a message is held back, while the held bytes stay within
    /// `UCX_TCP_TX_COALESCE`, when
    /// - another one already went out on this connection since the last
    ///   progress call (the application is sending back to back), or
    /// - it is sent from a handler of this interface's progress (an answer,
    ///   an acknowledgement, libucp's rendezvous steps): everything the
    ///   handlers of one progress call send goes out when that call
    ///   returns, one write per connection.
    ///
    /// Held messages go out with the next message that is not held, or at
    /// the end of a progress call, the next progress, flush, event arm or
    /// endpoint destruction: one system call for many messages. The first
    /// message the application sends after a progress call always goes
    /// out at once, so a lone message (or a ping-pong) is never delayed.
    #[inline]
    pub(super) fn may_hold(&self, conn: &Conn, end: usize) -> bool {
        end <= self.cfg.coalesce && (self.in_progress.get() || conn.tx_epoch.get() == self.epoch.get())
    }

    /// Send the messages `conn` holds back.
    pub(super) fn release_held(&self, iface: &I, conn: &Rc<Conn>) {
        iface.hdr.worker().unhold(hold_token(conn));
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
    pub(super) fn release_all_held(&self, iface: &I) {
        if self.holding.borrow().is_empty() {
            return;
        }
        let list = std::mem::take(&mut *self.holding.borrow_mut());
        for c in &list {
            self.release_held(iface, c);
        }
    }

    /// Run queued work once the send context is free.
    pub(super) fn dispatch_pending(&self, iface: &I, conn: &Rc<Conn>) {
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

    /// The connection's socket is writable: a connect finished, or the
    /// rest of a partial send can go out; then pending requests run.
    pub(super) fn tx_progress(&self, iface: &I, conn: &Rc<Conn>) -> u32 {
        match conn.state.get() {
            State::Closed => 0,
            State::Connecting => {
                if !conn.sock.with(|s| s.is_connected()).unwrap_or(false) {
                    crate::error!("tcp_ep {:p}: connection establishment for socket fd {} was unsuccessful",
                                  Rc::as_ptr(conn), conn.sock.fd());
                    self.set_failed(iface, conn, UCS_ERR_ENDPOINT_TIMEOUT);
                    return 0;
                }
                self.mod_events(conn, 0, EV_WRITE);
                self.conn_complete(iface, conn);
                1
            }
            _ => {
                let mut count = 0;
                if let Ok(mut tx) = conn.tx.try_borrow_mut() {
                    if tx.busy() {
                        let before: usize = tx.iov[tx.idx..].iter().map(|e| e.iov_len).sum();
                        // Taken for the send: a failed send drops it (the
                        // send context is reset), a partial one puts it back.
                        let comp = std::mem::take(&mut tx.comp);
                        let s = self.flush_tx(iface, conn, tx, true);
                        if s != UCS_OK {
                            // The send failed (its context was reset): the
                            // message that answered UCS_INPROGRESS completes
                            // with the error, as a purge would have done.
                            comp.complete(if s == UCS_ERR_NO_RESOURCE { UCS_ERR_CANCELED } else { s });
                            return 1;
                        }
                        let mut t = conn.tx.borrow_mut();
                        let after: usize = if t.busy() { t.iov[t.idx..].iter().map(|e| e.iov_len).sum() } else { 0 };
                        count = (after < before) as u32;
                        if after == 0 {
                            drop(t);
                            comp.complete(UCS_OK);
                        } else {
                            t.comp = comp;
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
    pub(super) fn send_zcopy(&self, iface: &I, conn: &Rc<Conn>, am_id: u8, hdr: &[u8], frame_len: Option<u32>,
                             iov: &[uct_iov_t], comp: Completion)
                             -> Result<(ucs_status_t, usize), ucs_status_t> {
        let s = self.check_tx(conn);
        if s != UCS_OK {
            return Err(s);
        }
        let Ok(mut tx) = conn.tx.try_borrow_mut() else { return Err(UCS_ERR_NO_RESOURCE) };
        self.tx_ensure(&mut tx, self.cfg.tx_seg_size);
        let at = tx.held;
        tx.buf[at + codec::HDR_LEN..at + codec::HDR_LEN + hdr.len()].copy_from_slice(hdr);
        tx.push_head(at + codec::HDR_LEN + hdr.len());
        let total = Self::push_iov(&mut tx.iov, iov);
        let flen = frame_len.unwrap_or((hdr.len() + total) as u32);
        codec::put_hdr(&mut tx.buf[at..], am_id, flen);
        conn.tx_epoch.set(self.epoch.get());
        tx.comp = comp;
        conn.set(F_NEED_FLUSH);
        let s = self.flush_tx(iface, conn, tx, true);
        if s != UCS_OK {
            return Err(s);
        }
        let busy = conn.tx_busy();
        if !busy {
            conn.tx.borrow_mut().comp = Completion::none();
        }
        Ok((if busy { UCS_INPROGRESS } else { UCS_OK }, total))
    }

    // -----------------------------------------------------------------------
    // Endpoint operations.

    /// `am_short`: header and payload copied into the send buffer; a
    /// payload above `UCX_TCP_SENDV_THRESH` that is not held back goes out
    /// from the user's buffer, after the header, in one vector send.
    #[inline]
    pub(super) fn send_am_short(&self, iface: &I, conn: &Rc<Conn>, id: u8, header: u64, payload: &[u8])
                                -> ucs_status_t {
        let max = self.cfg.tx_seg_size - codec::HDR_LEN;
        if let Err(e) = checks::length::<TcpIface>(Op::AmShort, payload.len() + 8, max) {
            return e;
        }
        let (mut tx, at) = match self.begin_am(conn, id) {
            Ok(v) => v,
            Err(e) => return e,
        };
        tx.buf[at..at + 8].copy_from_slice(&header.to_ne_bytes());
        if payload.len() <= self.cfg.sendv_thresh || self.may_hold(conn, at + 8 + payload.len()) {
            tx.buf[at + 8..at + 8 + payload.len()].copy_from_slice(payload);
            return self.send_buffered(iface, conn, tx, id, 8 + payload.len(), true);
        }
        codec::put_hdr(&mut tx.buf[at - codec::HDR_LEN..], id, (8 + payload.len()) as u32);
        tx.push_head(at + 8);
        tx.iov.push(libc::iovec { iov_base: payload.as_ptr() as *mut c_void, iov_len: payload.len() });
        conn.set(F_NEED_FLUSH);
        conn.tx_epoch.set(self.epoch.get());
        self.flush_tx(iface, conn, tx, false)
    }

    /// `am_short_iov`: the iovs gathered into the send buffer.
    #[inline]
    pub(super) fn send_am_short_iov(&self, iface: &I, conn: &Rc<Conn>, id: u8, iov: &[uct_iov_t]) -> ucs_status_t {
        if let Err(e) = checks::iov_count::<TcpIface>(Op::AmShortIov, iov.len(), self.cfg.max_iov) {
            return e;
        }
        let total = iov_total(iov);
        let max = self.cfg.tx_seg_size - codec::HDR_LEN;
        if let Err(e) = checks::length::<TcpIface>(Op::AmShortIov, total, max) {
            return e;
        }
        let (mut tx, at) = match self.begin_am(conn, id) {
            Ok(v) => v,
            Err(e) => return e,
        };
        let n = iov_gather(iov, &mut tx.buf[at..at + total]);
        self.send_buffered(iface, conn, tx, id, n, true)
    }

    /// `am_bcopy`: the user's pack callback writes into the send buffer.
    #[inline]
    pub(super) fn send_am_bcopy(&self, iface: &I, conn: &Rc<Conn>, id: u8, pack: Pack) -> isize {
        let (mut tx, at) = match self.begin_am(conn, id) {
            Ok(v) => v,
            Err(e) => return e as isize,
        };
        let max = self.cfg.tx_seg_size - codec::HDR_LEN;
        let n = pack.pack_into(&mut tx.buf[at..]);
        if let Err(e) = checks::length::<TcpIface>(Op::AmBcopy, n, max) {
            tx.reset();
            return e as isize;
        }
        match self.send_buffered(iface, conn, tx, id, n, true) {
            UCS_OK => n as isize,
            e => e as isize,
        }
    }

    /// `am_zcopy`: sent from the user's iovs (or copied and held back when
    /// coalescing).
    #[inline]
    pub(super) fn send_am_zcopy(&self, iface: &I, conn: &Rc<Conn>, id: u8, header: &[u8], iov: &[uct_iov_t],
                                comp: Completion) -> ucs_status_t {
        let max_iov = self.cfg.max_iov - ZCOPY_SERVICE_IOV;
        if let Err(e) = checks::iov_count::<TcpIface>(Op::AmZcopy, iov.len(), max_iov) {
            return e;
        }
        if let Err(e) = checks::length::<TcpIface>(Op::AmZcopyHeader, header.len(), self.cfg.max_hdr) {
            return e;
        }
        let total = header.len() + iov_total(iov);
        let max = self.cfg.rx_seg_size - codec::HDR_LEN;
        if let Err(e) = checks::length::<TcpIface>(Op::AmZcopy, total, max) {
            return e;
        }
        if let Err(e) = checks::am_id(id) {
            return e;
        }
        // Back to back with other messages and within the coalescing bound:
        // copied and held back with them, complete now.
        if let Some(st) = self.copy_hold(iface, conn, id, None, header, iov, total, self.am_hold_max(conn)) {
            return st;
        }
        let r = self.send_zcopy(iface, conn, id, header, None, iov, comp);
        if total > COPY_HOLD_MAX && !self.local_cc_conn(conn) {
            // A large message went out: the next one does not wait behind
            // it (see COPY_HOLD_MAX).
            conn.tx_epoch.set(self.epoch.get().wrapping_sub(1));
        }
        match r {
            Ok((st, _)) => st,
            Err(e) => e,
        }
    }

    /// The largest active message `send_am_zcopy` copies to hold it on
    /// `conn` (see COPY_HOLD_MAX).
    #[inline]
    fn am_hold_max(&self, conn: &Conn) -> usize {
        if self.local_cc_conn(conn) {
            self.cfg.coalesce.max(COPY_HOLD_MAX)
        } else {
            COPY_HOLD_MAX
        }
    }

    /// Coalescing by copy: a zero-copy send of `head` and `iov` (`body`
    /// bytes in all, at most `max`) that may be held (`may_hold`) is
    /// copied after the connection's held messages and held with
    /// them; a copy of up to `UCX_TCP_TX_COALESCE` bytes costs less than
    /// the system call it saves. Its header gives `frame_len` bytes (the
    /// whole body when None; a put's request only). None: not copied (the
    /// caller sends from the user's buffer); else the status of the
    /// buffered send, whose hold is its last step.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn copy_hold(&self, iface: &I, conn: &Rc<Conn>, id: u8, frame_len: Option<u32>, head: &[u8],
                            iov: &[uct_iov_t], body: usize, max: usize) -> Option<ucs_status_t> {
        if body > max || self.check_tx(conn) != UCS_OK {
            return None;
        }
        let mut tx = conn.tx.try_borrow_mut().ok()?;
        self.tx_ensure(&mut tx, self.cfg.tx_seg_size);
        let at = tx.held + codec::HDR_LEN;
        if !self.may_hold(conn, at + body) {
            return None;
        }
        // Room for the held messages and one more of the largest (see
        // send_buffered).
        self.tx_ensure(&mut tx, self.cfg.tx_seg_size + self.cfg.coalesce);
        tx.buf[at..at + head.len()].copy_from_slice(head);
        let n = iov_gather(iov, &mut tx.buf[at + head.len()..at + body]);
        debug_assert_eq!(head.len() + n, body);
        Some(self.send_buffered_frame(iface, conn, tx, id, frame_len.unwrap_or(body as u32), body, true))
    }

    /// `ep_check`: a keepalive frame when the connection can send now (a
    /// connection that cannot is busy, hence alive).
    pub(super) fn check_ep(&self, iface: &I, conn: &Rc<Conn>, flags: u32, comp: Completion)
                           -> ucs_status_t {
        if flags != 0 || !comp.is_none() {
            crate::error!("tcp ep_check: unsupported flags {:#x} or completion {:p}", flags, comp);
            return UCS_ERR_INVALID_PARAM;
        }
        match self.check_tx(conn) {
            UCS_OK => {}
            UCS_ERR_NO_RESOURCE => return UCS_OK,
            e => return e,
        }
        let Ok(mut tx) = conn.tx.try_borrow_mut() else { return UCS_OK };
        let at = tx.held;
        self.tx_ensure(&mut tx, at + CTRL_BUF_LEN);
        self.send_buffered(iface, conn, tx, codec::AM_ID_KEEPALIVE, 0, false)
    }
}
