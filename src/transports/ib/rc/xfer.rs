//! The data path of `rc_verbs`: active messages, put, get, atomics, flush
//! and ep_check, each one work request on the endpoint's QP.

use crate::transports::ib::bufs::Buf;
use super::ep::*;
use super::fc;
use super::iface::RcIface;
use crate::abi::*;
use crate::core::iface::checks::{self, Op};
use crate::core::iface::{Ep, Iface};
use crate::core::handles::*;
use crate::sys::verbs::raw;
use crate::transports::ib::md::{memh_lkey, rkey_atomic, rkey_direct};

type E = Ep<RcIface>;

/// Fill scatter/gather entries from a zero-copy iov (empty entries are
/// skipped); the count, or an error for an unregistered buffer.
fn fill_iov(sg: &mut [raw::ibv_sge], iov: &[uct_iov_t], what: &str) -> Result<usize, ucs_status_t> {
    let mut n = 0;
    for e in iov {
        let len = e.length * (e.count.max(1) as usize);
        if len == 0 {
            continue;
        }
        // SAFETY: per UCT, memh is NULL or a handle of this md's
        // registrations (checked by its magic number).
        let Some(lkey) = (unsafe { memh_lkey(e.memh) }) else {
            crate::error!("rc_verbs {}: iov buffer {:p} has no memory handle of an ib md", what, e.buffer);
            return Err(UCS_ERR_INVALID_PARAM);
        };
        if n == sg.len() || len > u32::MAX as usize {
            crate::error!("rc_verbs {}: too many or too long iov entries", what);
            return Err(UCS_ERR_INVALID_PARAM);
        }
        sg[n] = sge(e.buffer as *const u8, len, lkey);
        n += 1;
    }
    Ok(n)
}

/// The rkey of a put: after a fence the atomic key, else the direct one.
fn put_rkey(st: &mut EpState, iface: &RcIface, rkey: uct_rkey_t) -> u32 {
    if st.fence_mark(iface) { rkey_atomic(rkey) } else { rkey_direct(rkey) }
}

pub fn am_short(iface: &Iface<RcIface>, ep: &E, id: u8, header: u64, payload: &[u8]) -> ucs_status_t {
    let s = &iface.tl;
    if let Err(e) = checks::am_id(id) {
        return e;
    }
    if let Err(e) = checks::length::<RcIface>(Op::AmShort, 8 + payload.len(), s.am_max_short()) {
        return e;
    }
    let mut st = state(ep).borrow_mut();
    if let Err(e) = st.check_res(s) {
        return e;
    }
    let Some(bits) = st.fc.check(&s.fc) else { return UCS_ERR_NO_RESOURCE };
    let mut h = [0u8; 9];
    h[0] = id | bits;
    h[1..].copy_from_slice(&header.to_ne_bytes());
    let mut sg = [sge(h.as_ptr(), 9, 0), sge(payload.as_ptr(), payload.len(), 0)];
    let mut w = wr(WR_SEND, &mut sg);
    match st.post(s, &mut w, SEND_INLINE | SEND_SOLICITED) {
        Ok(_) => {
            st.fc.sent();
            UCS_OK
        }
        Err(e) => e,
    }
}

pub fn am_short_iov(iface: &Iface<RcIface>, ep: &E, id: u8, iov: &[uct_iov_t]) -> ucs_status_t {
    let s = &iface.tl;
    if let Err(e) = checks::am_id(id) {
        return e;
    }
    let total = iov_total(iov);
    if let Err(e) = checks::length::<RcIface>(Op::AmShortIov, total, s.am_max_short().min(256)) {
        return e;
    }
    let mut st = state(ep).borrow_mut();
    if let Err(e) = st.check_res(s) {
        return e;
    }
    let Some(bits) = st.fc.check(&s.fc) else { return UCS_ERR_NO_RESOURCE };
    // Gathered into one inline entry (the data is copied by the post).
    let mut buf = [0u8; 1 + 256];
    let n = 1 + iov_gather(iov, &mut buf[1..1 + total]);
    buf[0] = id | bits;
    let mut sg = [sge(buf.as_ptr(), n, 0)];
    let mut w = wr(WR_SEND, &mut sg);
    match st.post(s, &mut w, SEND_INLINE | SEND_SOLICITED) {
        Ok(_) => {
            st.fc.sent();
            UCS_OK
        }
        Err(e) => e,
    }
}

pub fn am_bcopy(iface: &Iface<RcIface>, ep: &E, id: u8, pack: Pack) -> isize {
    let s = &iface.tl;
    if let Err(e) = checks::am_id(id) {
        return e as isize;
    }
    {
        let mut st = state(ep).borrow_mut();
        if let Err(e) = st.check_res(s) {
            return e as isize;
        }
        if st.fc.check(&s.fc).is_none() {
            return UCS_ERR_NO_RESOURCE as isize;
        }
    }
    let Some(b) = s.tx_pool.get() else { return UCS_ERR_NO_RESOURCE as isize };
    let room = s.tx_pool.size() - 1;
    // SAFETY: the buffer holds seg_size bytes; the payload goes after the
    // header byte.
    let dst = unsafe { std::slice::from_raw_parts_mut(b.addr.add(1), room) };
    let len = pack.pack_into(dst);
    if let Err(e) = checks::length::<RcIface>(Op::AmBcopy, len, room) {
        s.tx_pool.put(b);
        return e as isize;
    }
    let mut st = state(ep).borrow_mut();
    let bits = match (st.check_res(s), st.fc.check(&s.fc)) {
        (Ok(()), Some(bits)) => bits,
        (Err(e), _) => {
            s.tx_pool.put(b);
            return e as isize;
        }
        _ => {
            s.tx_pool.put(b);
            return UCS_ERR_NO_RESOURCE as isize;
        }
    };
    // SAFETY: the first byte of our buffer.
    unsafe { *b.addr = id | bits };
    let mut sg = [sge(b.addr, 1 + len, b.lkey)];
    let mut w = wr(WR_SEND, &mut sg);
    match st.post(s, &mut w, SEND_SOLICITED) {
        Ok(sn) => {
            st.fc.sent();
            st.outstanding.push_back((sn, TxOp::Buf(b)));
            len as isize
        }
        Err(e) => {
            s.tx_pool.put(b);
            e as isize
        }
    }
}

#[allow(clippy::too_many_arguments)]
pub fn am_zcopy(iface: &Iface<RcIface>, ep: &E, id: u8, header: &[u8], iov: &[uct_iov_t], comp: Completion)
                -> ucs_status_t {
    let s = &iface.tl;
    if let Err(e) = checks::am_id(id) {
        return e;
    }
    let max_hdr = s.d.short_desc_size - 1;
    if let Err(e) = checks::length::<RcIface>(Op::AmZcopyHeader, header.len(), max_hdr) {
        return e;
    }
    if let Err(e) = checks::iov_count::<RcIface>(Op::AmZcopy, iov.len(), s.max_send_sge - 1) {
        return e;
    }
    let total = header.len() + iov_total(iov);
    if let Err(e) = checks::length::<RcIface>(Op::AmZcopy, total, s.p.seg_size - 1) {
        return e;
    }
    let mut sg = [sge(std::ptr::null(), 0, 0); 8];
    let n = match fill_iov(&mut sg[1..s.max_send_sge], iov, "am_zcopy") {
        Ok(n) => n,
        Err(e) => return e,
    };
    let mut st = state(ep).borrow_mut();
    if let Err(e) = st.check_res(s) {
        return e;
    }
    let Some(bits) = st.fc.check(&s.fc) else { return UCS_ERR_NO_RESOURCE };
    let Some(b) = s.tx_pool.get() else { return UCS_ERR_NO_RESOURCE };
    // SAFETY: header byte and the user's header fit the buffer (checked).
    unsafe {
        *b.addr = id | bits;
        std::ptr::copy_nonoverlapping(header.as_ptr(), b.addr.add(1), header.len());
    }
    sg[0] = sge(b.addr, 1 + header.len(), b.lkey);
    let mut w = wr(WR_SEND, &mut sg[..1 + n]);
    let flags = SEND_SOLICITED | if comp.is_none() { 0 } else { SEND_SIGNALED };
    match st.post(s, &mut w, flags) {
        Ok(sn) => {
            st.fc.sent();
            st.outstanding.push_back((sn, TxOp::BufComp(b, comp)));
            UCS_INPROGRESS
        }
        Err(e) => {
            s.tx_pool.put(b);
            e
        }
    }
}

pub fn put_short(iface: &Iface<RcIface>, ep: &E, data: &[u8], remote: Remote) -> ucs_status_t {
    let s = &iface.tl;
    if let Err(e) = checks::length::<RcIface>(Op::PutShort, data.len(), s.max_inline) {
        return e;
    }
    let mut st = state(ep).borrow_mut();
    if let Err(e) = st.check_res(s) {
        return e;
    }
    let rkey = put_rkey(&mut st, s, remote.rkey);
    let mut sg = [sge(data.as_ptr(), data.len(), 0)];
    let mut w = wr(WR_RDMA_WRITE, &mut sg);
    set_rdma(&mut w, remote.addr, rkey);
    match st.post(s, &mut w, SEND_INLINE | SEND_SIGNALED) {
        Ok(_) => UCS_OK,
        Err(e) => e,
    }
}

pub fn put_bcopy(iface: &Iface<RcIface>, ep: &E, pack: Pack, remote: Remote) -> isize {
    let s = &iface.tl;
    if let Err(e) = state(ep).borrow().check_res(s) {
        return e as isize;
    }
    let Some(b) = s.tx_pool.get() else { return UCS_ERR_NO_RESOURCE as isize };
    let room = s.tx_pool.size();
    // SAFETY: the buffer holds seg_size bytes.
    let len = pack.pack_into(unsafe { std::slice::from_raw_parts_mut(b.addr, room) });
    if let Err(e) = checks::length::<RcIface>(Op::PutBcopy, len, room) {
        s.tx_pool.put(b);
        return e as isize;
    }
    let mut st = state(ep).borrow_mut();
    if let Err(e) = st.check_res(s) {
        s.tx_pool.put(b);
        return e as isize;
    }
    let rkey = put_rkey(&mut st, s, remote.rkey);
    let mut sg = [sge(b.addr, len, b.lkey)];
    let mut w = wr(WR_RDMA_WRITE, &mut sg);
    set_rdma(&mut w, remote.addr, rkey);
    match st.post(s, &mut w, SEND_SIGNALED) {
        Ok(sn) => {
            st.outstanding.push_back((sn, TxOp::Buf(b)));
            len as isize
        }
        Err(e) => {
            s.tx_pool.put(b);
            e as isize
        }
    }
}

fn rdma_zcopy(iface: &Iface<RcIface>, ep: &E, opcode: u32, iov: &[uct_iov_t], remote: Remote, comp: Completion,
              what: Op) -> ucs_status_t {
    let s = &iface.tl;
    if let Err(e) = checks::iov_count::<RcIface>(what, iov.len(), s.max_send_sge) {
        return e;
    }
    if opcode == WR_RDMA_READ {
        if let Err(e) = checks::length_within::<RcIface>(what, iov_total(iov), s.get_min_zcopy(), s.max_get_zcopy) {
            return e;
        }
    }
    let mut sg = [sge(std::ptr::null(), 0, 0); 8];
    let n = match fill_iov(&mut sg[..s.max_send_sge], iov, what.name()) {
        Ok(n) => n,
        Err(e) => return e,
    };
    if n == 0 {
        return UCS_OK;
    }
    let mut st = state(ep).borrow_mut();
    if let Err(e) = st.check_res(s) {
        return e;
    }
    let rkey = if opcode == WR_RDMA_WRITE { put_rkey(&mut st, s, remote.rkey) } else { rkey_direct(remote.rkey) };
    let mut w = wr(opcode, &mut sg[..n]);
    set_rdma(&mut w, remote.addr, rkey);
    match st.post(s, &mut w, SEND_SIGNALED) {
        Ok(sn) => {
            st.outstanding.push_back((sn, TxOp::Comp(comp)));
            UCS_INPROGRESS
        }
        Err(e) => e,
    }
}

pub fn put_zcopy(iface: &Iface<RcIface>, ep: &E, iov: &[uct_iov_t], remote: Remote, comp: Completion) -> ucs_status_t {
    rdma_zcopy(iface, ep, WR_RDMA_WRITE, iov, remote, comp, Op::PutZcopy)
}

pub fn get_zcopy(iface: &Iface<RcIface>, ep: &E, iov: &[uct_iov_t], remote: Remote, comp: Completion) -> ucs_status_t {
    rdma_zcopy(iface, ep, WR_RDMA_READ, iov, remote, comp, Op::GetZcopy)
}

pub fn get_bcopy(iface: &Iface<RcIface>, ep: &E, unpack: Unpack, length: usize, remote: Remote, comp: Completion)
                 -> ucs_status_t {
    let s = &iface.tl;
    if let Err(e) = checks::length::<RcIface>(Op::GetBcopy, length, s.p.seg_size) {
        return e;
    }
    let mut st = state(ep).borrow_mut();
    if let Err(e) = st.check_res(s) {
        return e;
    }
    let Some(b) = s.tx_pool.get() else { return UCS_ERR_NO_RESOURCE };
    let mut sg = [sge(b.addr, length, b.lkey)];
    let mut w = wr(WR_RDMA_READ, &mut sg);
    set_rdma(&mut w, remote.addr, rkey_direct(remote.rkey));
    match st.post(s, &mut w, SEND_SIGNALED) {
        Ok(sn) => {
            st.outstanding.push_back((sn, TxOp::GetBcopy(b, unpack, length, comp)));
            UCS_INPROGRESS
        }
        Err(e) => {
            s.tx_pool.put(b);
            e
        }
    }
}

/// Post a 64-bit atomic; `done` makes the operation to record.
fn atomic(iface: &Iface<RcIface>, ep: &E, opcode: u32, compare_add: u64, swap: u64, remote: Remote,
          done: impl FnOnce(Buf) -> TxOp) -> ucs_status_t {
    let s = &iface.tl;
    let mut st = state(ep).borrow_mut();
    if let Err(e) = st.check_res(s) {
        return e;
    }
    let Some(b) = s.tx_pool.get() else { return UCS_ERR_NO_RESOURCE };
    let mut sg = [sge(b.addr, 8, b.lkey)];
    let mut w = wr(opcode, &mut sg);
    w.wr.atomic = raw::atomic_t { remote_addr: remote.addr, compare_add, swap, rkey: rkey_direct(remote.rkey) };
    let fence = if st.fence_mark(s) { SEND_FENCE } else { 0 };
    match st.post(s, &mut w, SEND_SIGNALED | fence) {
        Ok(sn) => {
            st.outstanding.push_back((sn, done(b)));
            UCS_OK
        }
        Err(e) => {
            s.tx_pool.put(b);
            e
        }
    }
}

pub fn atomic_post(iface: &Iface<RcIface>, ep: &E, op: AtomicOp, width: Width, value: u64, remote: Remote)
                   -> ucs_status_t {
    if op != AtomicOp::Add || width != Width::W64 || !iface.tl.atomics {
        return UCS_ERR_UNSUPPORTED;
    }
    atomic(iface, ep, WR_ATOMIC_FETCH_AND_ADD, value, 0, remote, TxOp::Buf)
}

#[allow(clippy::too_many_arguments)]
pub fn atomic_fetch(iface: &Iface<RcIface>, ep: &E, op: AtomicOp, width: Width, value: u64, compare: u64,
                    remote: Remote, result: FetchResult, comp: Completion) -> ucs_status_t {
    if width != Width::W64 || !iface.tl.atomics {
        return UCS_ERR_UNSUPPORTED;
    }
    let (opcode, ca, swap) = match op {
        AtomicOp::Add => (WR_ATOMIC_FETCH_AND_ADD, value, 0),
        AtomicOp::Cswap => (WR_ATOMIC_CMP_AND_SWP, compare, value),
        _ => return UCS_ERR_UNSUPPORTED,
    };
    match atomic(iface, ep, opcode, ca, swap, remote, |b| TxOp::Fetch(b, result, comp)) {
        UCS_OK => UCS_INPROGRESS,
        e => e,
    }
}

/// A zero-length RDMA WRITE (flush and ep_check).
fn post_write0(s: &RcIface, st: &mut EpState, flags: u32) -> Result<u16, ucs_status_t> {
    let mut w = wr(WR_RDMA_WRITE, &mut []);
    set_rdma(&mut w, 0, 0);
    st.post(s, &mut w, SEND_INLINE | flags)
}

pub fn ep_flush(iface: &Iface<RcIface>, ep: &E, flags: u32, comp: Completion) -> ucs_status_t {
    flush_ep(iface, state(ep), flags, comp)
}

/// Flush one endpoint for `uct_iface_flush`.
pub fn flush_state(iface: &Iface<RcIface>, st: &EpRef) -> ucs_status_t {
    flush_ep(iface, st, 0, Completion::none())
}

fn flush_ep(iface: &Iface<RcIface>, st: &EpRef, flags: u32, comp: Completion) -> ucs_status_t {
    let s = &iface.tl;
    let mut st = st.borrow_mut();
    if flags & UCT_FLUSH_FLAG_CANCEL != 0 && !st.flush_cancel {
        st.flush_cancel = true;
        if let Some(qp) = st.qp.as_ref() {
            if let Err(e) = super::iface::qp_to_err(qp) {
                crate::error!("rc_verbs: moving qp 0x{:x} to the error state failed: {}", st.qpn, e);
            }
        }
    }
    // As the original: no flush while a new send could not go out (send
    // queue, completion queue, flow-control window): requests may wait
    // on the pending queue, and NO_RESOURCE puts the flush behind them.
    if st.failed.is_none() && !st.flush_cancel && st.qp.is_some() && !st.has_tx_res(s) {
        return UCS_ERR_NO_RESOURCE;
    }
    if st.pi == st.ci {
        return UCS_OK;
    }
    if st.unsignaled > 0 && st.failed.is_none() && !st.flush_cancel {
        if st.available <= 0 || s.cq_available.get() <= 0 {
            return UCS_ERR_NO_RESOURCE;
        }
        if let Err(e) = post_write0(s, &mut st, SEND_SIGNALED) {
            return e;
        }
    }
    if !comp.is_none() {
        let sn = st.pi;
        st.outstanding.push_back((sn, TxOp::Flush(comp)));
    }
    UCS_INPROGRESS
}

pub fn ep_check(iface: &Iface<RcIface>, ep: &E, flags: u32, comp: Completion) -> ucs_status_t {
    if flags != 0 || !comp.is_none() {
        crate::error!("rc_verbs ep_check: unsupported flags {:#x} or completion {:p}", flags, comp);
        return UCS_ERR_INVALID_PARAM;
    }
    let s = &iface.tl;
    let mut st = state(ep).borrow_mut();
    if st.failed.is_some() || st.peer.is_none() {
        // The failure was reported already; or nothing to check yet.
        return UCS_OK;
    }
    if st.available <= 0 {
        // A full send queue holds a signalled request: its completion
        // tells how the peer is.
        return UCS_OK;
    }
    if s.cq_available.get() <= 0 {
        // Every completion credit of the interface is taken by signalled
        // requests still in flight, which will tell as well.
        crate::debug!("rc_verbs ep_check: no completion credit for a probe on qp 0x{:x}", st.qpn);
        return UCS_OK;
    }
    // An unsignalled zero-length RDMA WRITE: on a dead peer it fails, and
    // the failure completes (errors always do) into the error handler.
    match post_write0(s, &mut st, 0) {
        Ok(_) => UCS_OK,
        Err(e) => e,
    }
}

/// Whether a received header is a pure grant (not delivered).
#[inline(always)]
pub fn is_pure_grant(hdr: u8) -> bool {
    hdr & fc::FC_MASK == fc::PURE_GRANT
}
