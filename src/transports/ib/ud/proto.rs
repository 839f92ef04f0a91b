//! The reliability protocol of an endpoint on top of [`super::window`]:
//! sending window packets, acknowledgement processing, explicit
//! ACK/ACK_REQ/NAK packets, retransmission rounds, the retransmission
//! timer with back-off, and peer timeout.
//!
//! Completions of user operations are not called here but queued on the
//! interface ([`UdIface::done`]) and run by [`run_done`] once no endpoint
//! state is borrowed, so that a callback may start new operations.

use super::ep::{EpState, Skb};
use super::iface::{sge, UdIface, SEND_INLINE, SEND_SOLICITED};
use super::neth::{self, psn_le, psn_lt, Neth};
use crate::abi::*;
use crate::core::iface::Iface;

/// Most packets retransmitted per round.
const RESEND_BATCH: usize = 128;

pub fn now() -> f64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: writes the current time into our struct.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// Run the user completions that became due.
pub fn run_done(s: &UdIface) {
    loop {
        let batch: Vec<_> = std::mem::take(&mut *s.done.borrow_mut());
        if batch.is_empty() {
            return;
        }
        for (c, status) in batch {
            c.complete(status);
        }
    }
}

/// Release acknowledged packets and flushes up to `ack`.
pub fn process_ack(iface: &Iface<UdIface>, st: &mut EpState, ack: u16) {
    let s = &iface.tl;
    if !st.tx.ack(ack) {
        return;
    }
    let mut done = s.done.borrow_mut();
    while st.window.front().is_some_and(|k| psn_le(k.psn, ack)) {
        if let Some(k) = st.window.pop_front() {
            s.tx_pool.put(k.buf);
            if let Some(zc) = k.zc {
                done.push((zc.comp, UCS_OK));
            }
        }
    }
    while st.flushes.front().is_some_and(|(p, _)| psn_le(*p, ack)) {
        if let Some((_, c)) = st.flushes.pop_front() {
            done.push((c, UCS_OK));
        }
    }
    drop(done);
    st.tick = s.p.timer_tick;
    if st.window.is_empty() {
        // Nothing to watch: the next send starts the clock again (a ping-pong
        // then reads it once per message, not twice).
        st.next_check = f64::INFINITY;
        st.resending = false;
    } else {
        let t = now();
        st.send_time = t;
        st.next_check = t + st.tick;
    }
    s.schedule(st);
    if st.resending && psn_le(st.resent_psn, st.tx.acked_psn) {
        resend_batch(iface, st);
    }
}

/// Post a packet of the window (its buffer holds the network header and
/// the inline part), with the current acknowledgement, and keep it.
pub fn send_skb(s: &UdIface, st: &mut EpState, mut skb: Skb, inline: bool) -> Result<(), ucs_status_t> {
    if st.peer.is_none() {
        s.tx_pool.put(skb.buf);
        return Err(UCS_ERR_NO_RESOURCE);
    }
    let ack = st.rx.take_ack();
    // SAFETY: the buffer holds at least the network header we wrote.
    unsafe { skb.buf.addr.add(6).cast::<[u8; 2]>().write_unaligned(ack.to_le_bytes()) };
    let mut sg = [sge(skb.buf.addr, skb.len, skb.buf.lkey); 9];
    let mut n = 1;
    if let Some(zc) = &skb.zc {
        for (i, (addr, len)) in zc.iov.iter().enumerate() {
            let lkey = zc_lkey(i, &skb);
            sg[n] = sge(*addr as *const u8, *len, lkey);
            n += 1;
        }
    }
    let flags = if inline { SEND_INLINE } else { 0 };
    let ptype = Neth::parse(
        // SAFETY: see above.
        unsafe { std::slice::from_raw_parts(skb.buf.addr, neth::NETH_LEN) }).map_or(0, |h| h.ptype);
    let flags = if ptype & neth::CTL != 0 { flags | SEND_SOLICITED } else { flags };
    let posted = match &st.peer {
        Some(peer) => s.post(peer, &mut sg[..n], flags, None),
        None => Err(UCS_ERR_NO_RESOURCE),
    };
    if let Err(e) = posted {
        s.tx_pool.put(skb.buf);
        return Err(e);
    }
    st.owed.ack = false;
    skb.psn = st.tx.advance();
    if st.window.is_empty() {
        let t = now();
        st.send_time = t;
        st.tick = s.p.timer_tick;
        st.next_check = t + st.tick;
    }
    st.window.push_back(skb);
    Ok(())
}

fn zc_lkey(i: usize, skb: &Skb) -> u32 {
    skb.zc.as_ref().and_then(|z| z.lkeys.get(i).copied()).unwrap_or(0)
}

/// The packet type bits for a new data packet of `st`: ACK_REQ when the
/// window asks for it.
pub fn ack_req_bit(st: &mut EpState) -> u32 {
    if st.tx.wants_ack_req() || st.owed.ack_req {
        st.owed.ack_req = false;
        neth::ACK_REQ
    } else {
        0
    }
}

/// Send the explicit control packets `st` owes: ACK, ACK_REQ, NAK.
pub fn send_owed(s: &UdIface, st: &mut EpState) -> bool {
    let Some(dest) = st.dest_id.filter(|_| st.peer.is_some()) else {
        return true;
    };
    let o = st.owed;
    if !(o.ack || o.ack_req || o.nak) {
        return true;
    }
    let mut ptype = dest;
    if o.ack_req {
        ptype |= neth::ACK_REQ;
    }
    if o.nak {
        ptype |= neth::NAK;
    }
    let hdr = Neth { ptype, psn: st.tx.psn, ack_psn: st.rx.take_ack() }.pack();
    let mut sg = [sge(hdr.as_ptr(), hdr.len(), 0)];
    let solicited = if o.ack_req && st.tick >= s.p.min_poke_time { SEND_SOLICITED } else { 0 };
    let Some(peer) = st.peer.as_ref() else { return true };
    if s.post(peer, &mut sg, SEND_INLINE | solicited, None).is_err() {
        return false;
    }
    st.owed.ack = false;
    st.owed.ack_req = false;
    st.owed.nak = false;
    true
}

/// Start a retransmission round (after a NAK or a timeout): packets from
/// the first unacknowledged one are sent again.
pub fn resend(iface: &Iface<UdIface>, st: &mut EpState) {
    if st.resending && psn_lt(st.tx.acked_psn, st.resent_psn) {
        // A round is under way; its acknowledgements continue it.
        return;
    }
    st.resending = true;
    st.resent_psn = st.tx.acked_psn;
    resend_batch(iface, st);
}

/// Send the next batch of the retransmission round.
fn resend_batch(iface: &Iface<UdIface>, st: &mut EpState) {
    let s = &iface.tl;
    // Not `dest_id`: a connection request is resent before the peer's id
    // is known (the copies carry the original headers).
    let Some(peer) = st.peer.clone() else { return };
    let from = if psn_lt(st.resent_psn, st.tx.acked_psn) { st.tx.acked_psn } else { st.resent_psn };
    let mut sent = 0;
    let total = st.window.len();
    let mut last = None;
    for i in 0..total {
        if sent >= RESEND_BATCH || s.tx_available.get() <= 1 {
            break;
        }
        let k = &st.window[i];
        if psn_le(k.psn, from) {
            continue;
        }
        let Some(b) = s.tx_pool.get() else { break };
        // SAFETY: the window buffer holds `k.len` bytes we wrote; the new
        // buffer is as large; zcopy data is the user's memory, valid until
        // the operation completes (it has not: it is in the window).
        let len = unsafe {
            std::ptr::copy_nonoverlapping(k.buf.addr, b.addr, k.len);
            let mut off = k.len;
            if let Some(zc) = &k.zc {
                for (addr, l) in &zc.iov {
                    if off + l > s.seg_size {
                        break;
                    }
                    std::ptr::copy_nonoverlapping(*addr as *const u8, b.addr.add(off), *l);
                    off += l;
                }
            }
            off
        };
        let psn = k.psn;
        let is_last = i + 1 == total || sent + 1 == RESEND_BATCH;
        // SAFETY: the copy starts with the network header.
        let hdr = unsafe { std::slice::from_raw_parts_mut(b.addr, neth::NETH_LEN) };
        let Some(mut h) = Neth::parse(hdr) else {
            s.tx_pool.put(b);
            break;
        };
        h.ack_psn = st.rx.take_ack();
        if psn % 4 == 0 || is_last || psn == st.tx.acked_psn.wrapping_add(1) {
            h.ptype |= neth::ACK_REQ;
        } else {
            h.ptype &= !neth::ACK_REQ;
        }
        hdr.copy_from_slice(&h.pack());
        let mut sg = [sge(b.addr, len, b.lkey)];
        if s.post(&peer, &mut sg, SEND_SOLICITED, Some(b)).is_err() {
            break;
        }
        last = Some(psn);
        sent += 1;
    }
    if let Some(p) = last {
        st.resent_psn = p;
        st.resend_time = now();
        st.owed.ack = false;
    } else if sent == 0 && st.window.back().is_some_and(|k| psn_le(k.psn, from)) {
        // Everything was sent again: wait for acknowledgements.
        st.resent_psn = st.tx.psn.wrapping_sub(1);
    }
}

/// Drop every window packet and flush with `status` (failure, close).
pub fn purge(s: &UdIface, st: &mut EpState, status: ucs_status_t) {
    let mut done = s.done.borrow_mut();
    for k in st.window.drain(..) {
        s.tx_pool.put(k.buf);
        if let Some(zc) = k.zc {
            done.push((zc.comp, status));
        }
    }
    for (_, c) in st.flushes.drain(..) {
        done.push((c, status));
    }
    st.resending = false;
    st.next_check = f64::INFINITY;
}

/// The retransmission timer of one endpoint at time `t`.
pub fn check_timer(iface: &Iface<UdIface>, st: &mut EpState, t: f64) {
    let s = &iface.tl;
    if st.window.is_empty() || t < st.next_check || st.failed.is_some() {
        return;
    }
    if t - st.send_time > s.p.peer_timeout {
        st.failed = Some(UCS_ERR_ENDPOINT_TIMEOUT);
        purge(s, st, UCS_ERR_ENDPOINT_TIMEOUT);
        s.timeouts.borrow_mut().push(st.id);
        return;
    }
    // Measured against the interface's tick, not the endpoint's (which
    // backs off): ask for an ack after one tick of silence, retransmit
    // after three.
    let tick = s.p.timer_tick;
    let diff = t - st.send_time.max(st.resend_time);
    if diff > tick {
        if diff > 3.0 * tick {
            st.tx.drop_window();
            st.resending = false;
            resend(iface, st);
        }
        if st.connected() {
            st.owed.ack_req = true;
            s.queue_owed(st);
        }
    }
    st.tick = (st.tick * s.p.timer_backoff).min(s.p.peer_timeout / 3.0);
    st.next_check = t + st.tick;
}
