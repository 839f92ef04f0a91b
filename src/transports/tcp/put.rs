//! Put zero-copy over the stream, both sides: the initiator sends a
//! PUT_REQ frame (remote address, length, sequence number) followed by the
//! data; the target receives the data straight into the named address and
//! answers with a PUT_ACK carrying the sequence number, which completes the
//! initiator's flushes. An endpoint flush that has sent anything since the
//! last one posts an empty put to learn when the peer has received it all.
//!
//! A put is honoured only inside memory registered with the interface's
//! memory domain (and not deregistered since): the target range is checked
//! against the md's registrations when the request arrives, and again
//! before each further receive of its data if any registration went away
//! in between (the registrations' generation changed). A put that falls
//! outside closes the connection before anything is written.
//!
//! From UCX 1.19 on the tcp memory domain reports no registration, so
//! libucp registers nothing with it and names raw addresses, as it does
//! with the C original. There the check applies once the process has
//! registered something with the md itself (a UCT application still may);
//! until then a put may target any memory the process can write, and the
//! data is written by the kernel (`process_vm_writev` to ourselves, `recv`
//! straight into the target), so a bad address fails the connection with
//! `EFAULT` instead of crashing the process.

use super::conn::*;
use super::iface::{TcpIface, I, ZCOPY_SERVICE_IOV};
use super::proto::Violation;
use super::tx::COPY_HOLD_MAX;
use super::codec::{self, PutReq};
use crate::abi::*;
use crate::core::iface::checks::{self, Op};
use crate::core::handles::*;
use crate::sys::io_errno_status;
use crate::sys::socket::Io;
use std::rc::Rc;

impl TcpIface {
    // -----------------------------------------------------------------------
    // Target side.

    /// A PUT_REQ frame `p` was read from `rx`: the data that came with it
    /// in the buffer goes to the target now. Ok(true) when more data is
    /// still to come on the socket (the rest of the buffer must wait until
    /// the put is received); Err when the target is not registered memory.
    #[inline]
    pub(super) fn put_req_rx(&self, iface: &I, conn: &Rc<Conn>, rx: &mut Rx, mut p: PutReq)
                             -> Result<bool, Violation> {
        let gen = self.regs.generation();
        let checked = self.puts_checked();
        if checked && !self.regs.contains(p.addr, p.length) {
            return Err(Violation::PutOutside { addr: p.addr, length: p.length });
        }
        let extra = (rx.len - rx.off).min(p.length as usize);
        if extra > 0 && checked {
            // SAFETY: `[p.addr, p.addr + p.length)` lies inside memory the
            // process registered with this md (checked just above), and
            // `extra` is at most `p.length` bytes of the receive buffer.
            unsafe {
                std::ptr::copy_nonoverlapping(rx.buf.as_ptr().add(rx.off), p.addr as usize as *mut u8, extra)
            };
        } else if extra > 0 {
            // SAFETY: the source is `extra` bytes of the receive buffer; the
            // target is the raw address libucp named (see the module doc),
            // written by the kernel, which refuses memory we cannot write.
            let ok = unsafe {
                crate::sys::vm::copy_all(crate::sys::getpid(), false, rx.buf.as_ptr().add(rx.off) as usize,
                                         p.addr as usize, extra)
            };
            if !ok {
                return Err(Violation::PutFault { addr: p.addr, length: p.length });
            }
        }
        rx.off += extra;
        p.addr += extra as u64;
        p.length -= extra as u64;
        conn.rx_put_sn.set(p.sn);
        conn.clear(F_PUT_RX_SENDING_ACK);
        if p.length == 0 {
            self.post_put_ack(iface, conn);
            Ok(false)
        } else {
            conn.put_gen.set(gen);
            conn.put_rx.set(Some(p));
            Ok(true)
        }
    }

    /// Receive the rest of a put's data straight into its target; the
    /// acknowledgement goes out once all of it is there.
    pub(super) fn put_rx(&self, iface: &I, conn: &Rc<Conn>, mut p: PutReq) -> u32 {
        let gen = self.regs.generation();
        if gen != conn.put_gen.get() && self.puts_checked() {
            // A registration went away since the target was checked.
            if !self.regs.contains(p.addr, p.length) {
                self.violation(iface, conn, Violation::PutOutside { addr: p.addr, length: p.length });
                return 0;
            }
            conn.put_gen.set(gen);
        }
        // SAFETY: the rest of the put's target, `length` bytes at `addr`,
        // lies inside memory registered with this md (checked when the
        // request came and again after any deregistration since), or is
        // the raw address a 1.19+ libucp named (module doc): `recv` writes
        // it or fails with EFAULT.
        let r = unsafe { conn.sock.recv_raw(p.addr as usize as *mut u8, p.length as usize) };
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
            Io::Err(e) => {
                self.handle_recv_err(iface, conn, io_errno_status(e));
                0
            }
        }
    }

    /// Whether put targets are checked against the md's registrations:
    /// always while the md reports registration (up to 1.18), else once
    /// anything was registered with it.
    fn puts_checked(&self) -> bool {
        super::release::md_registers() || self.regs.ever_used()
    }

    /// Acknowledge the last put received, now or once the send context is
    /// free.
    pub(super) fn post_put_ack(&self, iface: &I, conn: &Rc<Conn>) {
        if self.check_tx(conn) != UCS_OK {
            conn.set(F_PUT_RX_SENDING_ACK);
            return;
        }
        let Ok(mut tx) = conn.tx.try_borrow_mut() else {
            conn.set(F_PUT_RX_SENDING_ACK);
            return;
        };
        let sn = conn.rx_put_sn.get();
        let at = tx.held + codec::HDR_LEN;
        self.tx_ensure(&mut tx, at + CTRL_BUF_LEN);
        tx.buf[at..at + 4].copy_from_slice(&sn.to_ne_bytes());
        conn.clear(F_PUT_RX_SENDING_ACK);
        // Held from progress, like the handlers' messages (see `may_hold`).
        let hold = self.in_progress.get();
        self.send_buffered(iface, conn, tx, codec::AM_ID_PUT_ACK, codec::PUT_ACK_LEN, hold);
    }

    // -----------------------------------------------------------------------
    // Initiator side.

    /// The peer acknowledged put `sn`: complete the flushes waiting for it
    /// (and for the puts before it).
    pub(super) fn handle_put_ack(&self, conn: &Conn, sn: u32) {
        if sn == conn.tx_put_sn.get() {
            conn.clear(F_PUT_TX_WAITING_ACK);
        }
        loop {
            let next = {
                let mut q = conn.put_comps.borrow_mut();
                match q.front() {
                    Some(&(wait, _)) if codec::sn_le(wait, sn) => q.pop_front(),
                    _ => None,
                }
            };
            let Some((_, comp)) = next else { break };
            comp.complete(UCS_OK);
        }
    }

    /// `put_zcopy`: a PUT_REQ frame followed by the user's data; complete
    /// when the acknowledgement comes back. A put of up to `COPY_HOLD_MAX`
    /// bytes that may be held (`may_hold`: back to back with other sends,
    /// or from a handler of progress) is copied and held with the
    /// connection's other messages, as an active message is: libucp's
    /// rendezvous splits 64 KiB over two tcp lanes into 32 KiB, 31 KiB and a
    /// last put of a few KiB, which then goes out with what follows it
    /// (UCP tag_bw 64 KiB 1.12x). An empty put (a flush) is never held.
    pub(super) fn send_put_zcopy(&self, iface: &I, conn: &Rc<Conn>, iov: &[uct_iov_t], remote: Remote,
                                 comp: Completion) -> ucs_status_t {
        let max_iov = self.cfg.max_iov - ZCOPY_SERVICE_IOV;
        if let Err(e) = checks::iov_count::<TcpIface>(Op::PutZcopy, iov.len(), max_iov) {
            return e;
        }
        let total = iov_total(iov);
        let req = PutReq { addr: remote.addr, length: total as u64, sn: conn.tx_put_sn.get().wrapping_add(1) };
        let mut hdr = [0u8; codec::PUT_REQ_LEN];
        codec::encode_put_req(&mut hdr, &req);
        // Held from a small put: copied, its request and data held with the
        // connection's other messages. The put's own state is recorded
        // after the hold: the safety net's release touches only the send
        // buffer.
        if total > 0 {
            let body = codec::PUT_REQ_LEN + total;
            match self.copy_hold(iface, conn, codec::AM_ID_PUT_REQ, Some(codec::PUT_REQ_LEN as u32), &hdr, iov, body,
                                 COPY_HOLD_MAX) {
                None => {}
                Some(UCS_OK | UCS_INPROGRESS) => {
                    self.put_sent(conn, req.sn, comp);
                    return UCS_INPROGRESS;
                }
                Some(e) => return e,
            }
        }
        if let Err(e) = self.send_zcopy(iface, conn, codec::AM_ID_PUT_REQ, &hdr, Some(codec::PUT_REQ_LEN as u32), iov,
                                        Completion::none()) {
            return e;
        }
        self.put_sent(conn, req.sn, comp);
        UCS_INPROGRESS
    }

    /// Put `sn` is on its way: it completes `comp` once acknowledged.
    fn put_sent(&self, conn: &Conn, sn: u32, comp: Completion) {
        conn.tx_put_sn.set(sn);
        conn.set(F_PUT_TX_WAITING_ACK);
        if !comp.is_none() {
            conn.put_comps.borrow_mut().push_back((sn, comp));
        }
    }

    /// `ep_flush`: complete once the peer acknowledged a put sent after
    /// everything else.
    pub(super) fn flush_ep(&self, iface: &I, conn: &Rc<Conn>, flags: u32, comp: Completion)
                           -> ucs_status_t {
        // Messages held back were completed for the user: they go out
        // (also before a cancel, which only drops what is not sent yet).
        self.release_held(iface, conn);
        if flags & UCT_FLUSH_FLAG_CANCEL != 0 {
            self.purge(conn, UCS_ERR_CANCELED);
            return UCS_OK;
        }
        let st = self.check_tx(conn);
        if st != UCS_OK {
            return st;
        }
        if conn.has(F_NEED_FLUSH) {
            let st = self.send_put_zcopy(iface, conn, &[], Remote::new(0, 0), Completion::none());
            if st != UCS_OK && st != UCS_INPROGRESS {
                return st;
            }
            conn.clear(F_NEED_FLUSH);
        }
        if conn.has(F_PUT_TX_WAITING_ACK) {
            if !comp.is_none() {
                conn.put_comps.borrow_mut().push_back((conn.tx_put_sn.get(), comp));
            }
            return UCS_INPROGRESS;
        }
        UCS_OK
    }
}
