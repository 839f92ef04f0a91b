//! The data-path operations of a ud endpoint: active messages (short,
//! bcopy, zcopy), pending requests, flush and ep_check.

use super::ep::{EpRef, EpState, Skb, Zc};
use super::iface::UdIface;
use super::neth::{self, Neth};
use super::proto;
use crate::abi::*;
use crate::core::iface::checks::{self, Op};
use crate::core::iface::{Ep, Iface};
use crate::core::handles::*;
use crate::transports::ib::md::memh_lkey;

type E = Ep<UdIface>;

fn state(ep: &E) -> &EpRef {
    &ep.tl.st
}

/// Whether a new window packet may go out now.
pub fn check_tx(s: &UdIface, st: &EpState) -> Result<(), ucs_status_t> {
    if let Some(e) = st.failed {
        // the peer timed out: every later operation reports it
        return Err(e);
    }
    if st.closed_at.is_some() {
        return Err(UCS_ERR_NO_RESOURCE);
    }
    if !st.connected() || (!st.pending.is_empty() && !st.in_pending) || !st.tx.can_send() || !s.has_tx() {
        return Err(UCS_ERR_NO_RESOURCE);
    }
    Ok(())
}

/// A send buffer with the network header of an AM written; the caller
/// writes the rest.
fn am_skb(s: &UdIface, st: &mut EpState, id: u8, extra: u32) -> Result<Skb, ucs_status_t> {
    check_tx(s, st)?;
    let Some(b) = s.tx_pool.get() else { return Err(UCS_ERR_NO_RESOURCE) };
    let dest = st.dest_id.unwrap_or(neth::EP_NULL_ID);
    let ptype = neth::am_type(dest, id) | proto::ack_req_bit(st) | extra;
    let h = Neth { ptype, psn: st.tx.psn, ack_psn: 0 }.pack();
    // SAFETY: the buffer holds seg_size (> 8) bytes.
    unsafe { std::ptr::copy_nonoverlapping(h.as_ptr(), b.addr, h.len()) };
    Ok(Skb { psn: st.tx.psn, buf: b, len: neth::NETH_LEN, zc: None })
}

fn finish(iface: &Iface<UdIface>) {
    proto::run_done(&iface.tl);
}

pub fn am_short(iface: &Iface<UdIface>, ep: &E, id: u8, header: u64, payload: &[u8]) -> ucs_status_t {
    let s = &iface.tl;
    if let Err(e) = checks::am_id(id) {
        return e;
    }
    if let Err(e) = checks::length::<UdIface>(Op::AmShort, 16 + payload.len(), s.max_inline) {
        return e;
    }
    let mut st = state(ep).borrow_mut();
    let mut skb = match am_skb(s, &mut st, id, 0) {
        Ok(k) => k,
        Err(e) => return e,
    };
    // SAFETY: 16 + payload fits the buffer (inline size < seg size).
    unsafe {
        skb.buf.addr.add(8).cast::<[u8; 8]>().write_unaligned(header.to_ne_bytes());
        std::ptr::copy_nonoverlapping(payload.as_ptr(), skb.buf.addr.add(16), payload.len());
    }
    skb.len = 16 + payload.len();
    match proto::send_skb(s, &mut st, skb, true) {
        Ok(()) => UCS_OK,
        Err(e) => e,
    }
}

pub fn am_short_iov(iface: &Iface<UdIface>, ep: &E, id: u8, iov: &[uct_iov_t]) -> ucs_status_t {
    let s = &iface.tl;
    if let Err(e) = checks::am_id(id) {
        return e;
    }
    let total = iov_total(iov);
    if let Err(e) = checks::length::<UdIface>(Op::AmShortIov, 8 + total, s.max_inline) {
        return e;
    }
    let mut st = state(ep).borrow_mut();
    let mut skb = match am_skb(s, &mut st, id, 0) {
        Ok(k) => k,
        Err(e) => return e,
    };
    // SAFETY: `total` bytes fit after the header (checked above).
    let dst = unsafe { std::slice::from_raw_parts_mut(skb.buf.addr.add(8), total) };
    iov_gather(iov, dst);
    skb.len = 8 + total;
    match proto::send_skb(s, &mut st, skb, true) {
        Ok(()) => UCS_OK,
        Err(e) => e,
    }
}

pub fn am_bcopy(iface: &Iface<UdIface>, ep: &E, id: u8, pack: Pack) -> isize {
    let s = &iface.tl;
    if let Err(e) = checks::am_id(id) {
        return e as isize;
    }
    let mut st = state(ep).borrow_mut();
    let mut skb = match am_skb(s, &mut st, id, 0) {
        Ok(k) => k,
        Err(e) => return e as isize,
    };
    let room = s.seg_size - neth::NETH_LEN;
    drop(st);
    // SAFETY: the buffer holds seg_size bytes; the payload follows the
    // network header. The pack callback runs with no state borrowed.
    let dst = unsafe { std::slice::from_raw_parts_mut(skb.buf.addr.add(8), room) };
    let len = pack.pack_into(dst);
    if let Err(e) = checks::length::<UdIface>(Op::AmBcopy, len, room) {
        s.tx_pool.put(skb.buf);
        return e as isize;
    }
    skb.len = 8 + len;
    let mut st = state(ep).borrow_mut();
    match proto::send_skb(s, &mut st, skb, false) {
        Ok(()) => len as isize,
        Err(e) => e as isize,
    }
}

pub fn am_zcopy(iface: &Iface<UdIface>, ep: &E, id: u8, header: &[u8], iov: &[uct_iov_t], comp: Completion)
                -> ucs_status_t {
    let s = &iface.tl;
    if let Err(e) = checks::am_id(id) {
        return e;
    }
    let max_hdr = super::release::max_hdr(s.seg_size);
    // The header goes in the first segment after the 8-byte network header.
    let max_hdr = max_hdr.min(s.seg_size.saturating_sub(8));
    if let Err(e) = checks::length::<UdIface>(Op::AmZcopyHeader, header.len(), max_hdr) {
        return e;
    }
    let mut list = Vec::with_capacity(iov.len());
    let mut lkeys = Vec::with_capacity(iov.len());
    let mut total = header.len();
    for e in iov {
        let len = e.length * (e.count.max(1) as usize);
        if len == 0 {
            continue;
        }
        // SAFETY: per UCT, memh is NULL or a handle of this md's
        // registrations (checked by its magic number).
        let Some(lkey) = (unsafe { memh_lkey(e.memh) }) else {
            crate::error!("ud_verbs am_zcopy: iov buffer {:p} has no memory handle of an ib md", e.buffer);
            return UCS_ERR_INVALID_PARAM;
        };
        list.push((e.buffer as u64, len));
        lkeys.push(lkey);
        total += len;
    }
    if let Err(e) = checks::iov_count::<UdIface>(Op::AmZcopy, list.len(), s.zcopy_sge) {
        return e;
    }
    if let Err(e) = checks::length::<UdIface>(Op::AmZcopy, 8 + total, s.seg_size) {
        return e;
    }
    let mut st = state(ep).borrow_mut();
    let mut skb = match am_skb(s, &mut st, id, neth::ACK_REQ) {
        Ok(k) => k,
        Err(e) => return e,
    };
    // SAFETY: header + 8 fits the buffer (checked above).
    unsafe { std::ptr::copy_nonoverlapping(header.as_ptr(), skb.buf.addr.add(8), header.len()) };
    skb.len = 8 + header.len();
    skb.zc = Some(Zc { iov: list, lkeys, comp });
    match proto::send_skb(s, &mut st, skb, false) {
        Ok(()) => UCS_INPROGRESS,
        Err(e) => e,
    }
}

/// ep_check: an empty put when nothing is unacknowledged (the protocol
/// itself watches a peer while data is in flight).
pub fn ep_check(iface: &Iface<UdIface>, ep: &E) -> ucs_status_t {
    let s = &iface.tl;
    let mut st = state(ep).borrow_mut();
    if let Some(e) = st.failed {
        return e;
    }
    if !st.connected() || !st.window.is_empty() || check_tx(s, &st).is_err() {
        return UCS_OK;
    }
    let Some(b) = s.tx_pool.get() else { return UCS_OK };
    let dest = st.dest_id.unwrap_or(neth::EP_NULL_ID);
    let h = Neth { ptype: dest | neth::PUT | proto::ack_req_bit(&mut st), psn: st.tx.psn, ack_psn: 0 }.pack();
    // SAFETY: 16 bytes fit the buffer: the header and a zero address.
    unsafe {
        std::ptr::copy_nonoverlapping(h.as_ptr(), b.addr, h.len());
        b.addr.add(8).cast::<[u8; 8]>().write_unaligned([0; 8]);
    }
    let skb = Skb { psn: st.tx.psn, buf: b, len: 16, zc: None };
    let _ = proto::send_skb(s, &mut st, skb, true);
    UCS_OK
}

/// The flush state of an endpoint: OK, NO_RESOURCE or INPROGRESS.
pub fn flush_state(s: &UdIface, st: &mut EpState, cancel: bool) -> ucs_status_t {
    if let Some(e) = st.failed {
        return if cancel { UCS_OK } else { e };
    }
    if !st.connected() {
        return if st.owed.creq || !st.window.is_empty() { UCS_ERR_NO_RESOURCE } else { UCS_OK };
    }
    if cancel {
        let last = st.tx.psn.wrapping_sub(1);
        st.tx.ack_all();
        st.tx.acked_psn = last;
        let mut done = s.done.borrow_mut();
        for k in st.window.drain(..) {
            s.tx_pool.put(k.buf);
            if let Some(zc) = k.zc {
                done.push((zc.comp, UCS_ERR_CANCELED));
            }
        }
        for (_, c) in st.flushes.drain(..) {
            done.push((c, UCS_ERR_CANCELED));
        }
        return UCS_OK;
    }
    // Not while a new packet could not go out (send queue, window, or
    // requests waiting on the pending queue, unless this is the head of
    // that queue flushing): the flush would overtake operations the user
    // issued that are not sent yet. NO_RESOURCE makes the caller queue
    // its flush behind them (libucp counts an emulated remote operation
    // only once its message is out).
    if check_tx(s, st).is_err() {
        return UCS_ERR_NO_RESOURCE;
    }
    if st.window.is_empty() {
        return UCS_OK;
    }
    // Make sure the last packet is acknowledged soon.
    st.owed.ack_req = true;
    s.queue_owed(st);
    UCS_INPROGRESS
}

pub fn ep_flush(iface: &Iface<UdIface>, ep: &E, flags: u32, comp: Completion) -> ucs_status_t {
    let s = &iface.tl;
    let status = {
        let mut st = state(ep).borrow_mut();
        let status = flush_state(s, &mut st, flags & UCT_FLUSH_FLAG_CANCEL != 0);
        if status == UCS_INPROGRESS && !comp.is_none() {
            let last = st.tx.psn.wrapping_sub(1);
            st.flushes.push_back((last, comp));
        }
        if status == UCS_INPROGRESS {
            proto::send_owed(s, &mut st);
        }
        status
    };
    finish(iface);
    status
}

pub fn iface_flush(iface: &Iface<UdIface>) -> ucs_status_t {
    let s = &iface.tl;
    let eps: Vec<EpRef> = s.eps.borrow().iter().flatten().cloned().collect();
    let mut result = UCS_OK;
    for ep in eps {
        let mut st = ep.borrow_mut();
        if st.closed_at.is_some() || st.failed.is_some() {
            continue;
        }
        match flush_state(s, &mut st, false) {
            UCS_INPROGRESS => {
                proto::send_owed(s, &mut st);
                result = UCS_INPROGRESS;
            }
            // An endpoint still connecting, or out of send resources, is
            // not flushed yet: the interface is in progress, not failed.
            UCS_ERR_NO_RESOURCE => result = UCS_INPROGRESS,
            _ => {}
        }
    }
    result
}

pub fn pending_add(iface: &Iface<UdIface>, ep: &E, req: PendingReq, flags: u32) -> ucs_status_t {
    let s = &iface.tl;
    let mut st = state(ep).borrow_mut();
    if let Some(e) = st.failed {
        return e;
    }
    if st.pending.is_empty() && check_tx(s, &st).is_ok() {
        return UCS_ERR_BUSY;
    }
    let _ = flags;
    st.pending.push_back(req);
    if st.can_send() {
        s.schedule(&mut st);
    }
    UCS_OK
}

pub fn pending_purge(ep: &E, cb: PurgeCb) {
    let reqs: Vec<PendingReq> = state(ep).borrow_mut().pending.drain(..).collect();
    for r in reqs {
        cb.call(r);
    }
}

/// Run pending requests of scheduled endpoints while they can send.
pub fn dispatch_pending(iface: &Iface<UdIface>) {
    let s = &iface.tl;
    let rounds = s.arb.borrow().len();
    for _ in 0..rounds {
        let Some(id) = s.arb.borrow_mut().pop_front() else { break };
        let Some(ep) = s.ep(id) else { continue };
        loop {
            let req = {
                let mut st = ep.borrow_mut();
                if st.pending.is_empty() {
                    st.scheduled = false;
                    break;
                }
                if !st.can_send() || !s.has_tx() {
                    // Rescheduled by the next acknowledgement (window) or
                    // send completion (queue).
                    st.scheduled = false;
                    if !s.has_tx() && st.can_send() {
                        st.scheduled = true;
                        s.arb.borrow_mut().push_back(id);
                    }
                    break;
                }
                st.in_pending = true;
                st.pending.pop_front()
            };
            let Some(req) = req else { break };
            let status = req.dispatch();
            let mut st = ep.borrow_mut();
            st.in_pending = false;
            if status != UCS_OK {
                st.pending.push_front(req);
                st.scheduled = true;
                s.arb.borrow_mut().push_back(id);
                break;
            }
        }
    }
}
