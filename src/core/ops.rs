//! Safe handles for what the data path receives from C: payload slices, pack
//! and unpack callbacks, remote addresses, atomic operands, address buffers.
//! Each wraps the one unsafe step it needs, so transports stay in safe Rust.

use crate::abi::*;
use libc::c_void;

/// A borrowed payload: `len` bytes at `ptr` (NULL allowed when `len` is 0).
///
/// # Safety
/// The caller (C) promises `ptr` holds `len` readable bytes for the call.
#[inline(always)]
pub unsafe fn bytes<'a>(ptr: *const c_void, len: usize) -> &'a [u8] {
    if len == 0 || ptr.is_null() {
        &[]
    } else {
        // SAFETY: see the function contract.
        std::slice::from_raw_parts(ptr as *const u8, len)
    }
}

/// # Safety
/// `iov` must hold `cnt` readable entries (or `cnt` is 0).
#[inline(always)]
pub unsafe fn iov_slice<'a>(iov: *const uct_iov_t, cnt: usize) -> &'a [uct_iov_t] {
    if cnt == 0 || iov.is_null() {
        &[]
    } else {
        // SAFETY: see the function contract.
        std::slice::from_raw_parts(iov, cnt)
    }
}

/// Total payload of an iov list (`length * count` per entry; a count of 0
/// is taken as 1 element, stride is ignored for contiguous copies).
pub fn iov_total(iov: &[uct_iov_t]) -> usize {
    iov.iter().map(|e| e.length * (e.count.max(1) as usize)).sum()
}

/// Gather an iov list into `dst`; returns the bytes written.
pub fn iov_gather(iov: &[uct_iov_t], dst: &mut [u8]) -> usize {
    let mut off = 0;
    for e in iov {
        let count = e.count.max(1) as usize;
        let stride = if e.stride == 0 { e.length } else { e.stride };
        for k in 0..count {
            if off == dst.len() {
                return off;
            }
            // An empty entry (a zero-length payload between a header and a
            // footer, as libucp sends) contributes nothing; later ones still do.
            let n = e.length.min(dst.len() - off);
            if n == 0 {
                continue;
            }
            // SAFETY: the caller handed us this iov entry, which promises
            // `length` readable bytes at `buffer + k * stride`.
            let src = unsafe { bytes((e.buffer as *const u8).add(k * stride) as *const c_void, n) };
            dst[off..off + n].copy_from_slice(src);
            off += n;
        }
    }
    off
}

/// A user pack callback with its argument.
#[derive(Clone, Copy)]
pub struct Pack {
    cb: unsafe extern "C" fn(*mut c_void, *mut c_void) -> usize,
    arg: *mut c_void,
}

impl Pack {
    pub fn new(cb: uct_pack_callback_t, arg: *mut c_void) -> Option<Pack> {
        cb.map(|cb| Pack { cb, arg })
    }
    /// Let the callback pack into `dst`; returns what it reports to have
    /// written (callers check it against the buffer size).
    #[inline(always)]
    pub fn pack_into(&self, dst: &mut [u8]) -> usize {
        // SAFETY: the UCT contract lets the callback write up to the
        // transport's bcopy limit, which is the size of `dst`.
        unsafe { (self.cb)(dst.as_mut_ptr() as *mut c_void, self.arg) }
    }
    /// Pack straight into memory that is not a Rust slice (a remote window).
    ///
    /// # Safety
    /// `dst` must be writable for as much as the callback will write.
    #[inline(always)]
    pub unsafe fn pack_raw(&self, dst: *mut u8) -> usize {
        (self.cb)(dst as *mut c_void, self.arg)
    }
}

/// A user unpack callback with its argument.
#[derive(Clone, Copy)]
pub struct Unpack {
    cb: unsafe extern "C" fn(*mut c_void, *const c_void, usize),
    arg: *mut c_void,
}

impl Unpack {
    pub fn new(cb: uct_unpack_callback_t, arg: *mut c_void) -> Option<Unpack> {
        cb.map(|cb| Unpack { cb, arg })
    }
    /// # Safety
    /// `src` must hold `len` readable bytes.
    #[inline(always)]
    pub unsafe fn unpack_raw(&self, src: *const u8, len: usize) {
        (self.cb)(self.arg, src as *const c_void, len)
    }
}

/// A remote address with its key, as the data path receives them.
#[derive(Clone, Copy, Debug)]
pub struct Remote {
    pub addr: u64,
    pub rkey: uct_rkey_t,
}

impl Remote {
    #[inline(always)]
    pub fn new(addr: u64, rkey: uct_rkey_t) -> Remote {
        Remote { addr, rkey }
    }
    /// Local address of the target for mapped-memory transports, where an
    /// unpacked rkey is the offset between the owner's and our mapping.
    #[inline(always)]
    pub fn mapped(&self) -> *mut u8 {
        self.rkey.wrapping_add(self.addr as uct_rkey_t) as *mut u8
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AtomicOp {
    Add,
    And,
    Or,
    Xor,
    Swap,
    Cswap,
}

impl AtomicOp {
    pub fn post(op: u32) -> Option<AtomicOp> {
        match op {
            UCT_ATOMIC_OP_ADD => Some(AtomicOp::Add),
            UCT_ATOMIC_OP_AND => Some(AtomicOp::And),
            UCT_ATOMIC_OP_OR => Some(AtomicOp::Or),
            UCT_ATOMIC_OP_XOR => Some(AtomicOp::Xor),
            _ => None,
        }
    }
    pub fn fetch(op: u32) -> Option<AtomicOp> {
        match op {
            UCT_ATOMIC_OP_SWAP => Some(AtomicOp::Swap),
            UCT_ATOMIC_OP_CSWAP => Some(AtomicOp::Cswap),
            o => AtomicOp::post(o),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Width {
    W32,
    W64,
}

/// Where a fetching atomic stores the old value.
#[derive(Clone, Copy)]
pub enum FetchResult {
    U32(*mut u32),
    U64(*mut u64),
}

impl FetchResult {
    #[inline(always)]
    pub fn store(&self, v: u64) {
        // SAFETY: the caller of the fetching atomic supplies a writable
        // result location of the operation's width (null is tolerated).
        unsafe {
            match *self {
                FetchResult::U32(p) if !p.is_null() => *p = v as u32,
                FetchResult::U64(p) if !p.is_null() => *p = v,
                _ => {}
            }
        }
    }
}

/// CPU atomics on a mapped location, coherent with the owner's own atomics.
///
/// # Safety
/// `target` must be a mapped, suitably aligned location of `width` bytes.
#[inline(always)]
pub unsafe fn cpu_atomic(target: *mut u8, op: AtomicOp, width: Width, value: u64, compare: u64) -> u64 {
    use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::SeqCst};
    match width {
        Width::W64 => {
            let a = &*(target as *const AtomicU64);
            match op {
                AtomicOp::Add => a.fetch_add(value, SeqCst),
                AtomicOp::And => a.fetch_and(value, SeqCst),
                AtomicOp::Or => a.fetch_or(value, SeqCst),
                AtomicOp::Xor => a.fetch_xor(value, SeqCst),
                AtomicOp::Swap => a.swap(value, SeqCst),
                AtomicOp::Cswap => match a.compare_exchange(compare, value, SeqCst, SeqCst) {
                    Ok(v) | Err(v) => v,
                },
            }
        }
        Width::W32 => {
            let a = &*(target as *const AtomicU32);
            let v = value as u32;
            (match op {
                AtomicOp::Add => a.fetch_add(v, SeqCst),
                AtomicOp::And => a.fetch_and(v, SeqCst),
                AtomicOp::Or => a.fetch_or(v, SeqCst),
                AtomicOp::Xor => a.fetch_xor(v, SeqCst),
                AtomicOp::Swap => a.swap(v, SeqCst),
                AtomicOp::Cswap => match a.compare_exchange(compare as u32, v, SeqCst, SeqCst) {
                    Ok(v) | Err(v) => v,
                },
            }) as u64
        }
    }
}

/// A caller-provided buffer for an address of a length we reported.
pub struct AddrOut(*mut u8);

impl AddrOut {
    pub fn new(p: *mut u8) -> Option<AddrOut> {
        (!p.is_null()).then_some(AddrOut(p))
    }
    /// Write the address bytes (the caller sized its buffer from the
    /// `*_addr_len` we reported in `uct_iface_attr_t`).
    pub fn write(self, bytes: &[u8]) -> ucs_status_t {
        // SAFETY: see above: the buffer holds at least the reported length,
        // and every transport writes exactly the length it reports.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), self.0, bytes.len()) };
        UCS_OK
    }
}

/// Read `N` bytes of a peer address.
///
/// # Safety
/// `p` must be null or hold `N` readable bytes (addresses are passed with
/// the length the peer's iface reported, which is the same transport's).
pub unsafe fn read_addr<const N: usize>(p: *const c_void) -> Option<[u8; N]> {
    if p.is_null() {
        None
    } else {
        let mut out = [0u8; N];
        std::ptr::copy_nonoverlapping(p as *const u8, out.as_mut_ptr(), N);
        Some(out)
    }
}

/// Update a completion the way UCT's inline helpers do: the first error
/// wins, and the callback runs when the count drops to zero.
///
/// # Safety
/// `comp` must be null or a live completion owned by the caller.
pub unsafe fn complete(comp: *mut uct_completion_t, status: ucs_status_t) {
    if comp.is_null() {
        return;
    }
    let c = &mut *comp;
    if status != UCS_OK && c.status == UCS_OK {
        c.status = status;
    }
    c.count -= 1;
    if c.count == 0 {
        if let Some(f) = c.func {
            f(comp);
        }
    }
}

/// A pending-purge callback with its argument (`uct_ep_pending_purge`).
#[derive(Clone, Copy)]
pub struct PurgeCb {
    cb: uct_pending_purge_callback_t,
    arg: *mut c_void,
}

impl PurgeCb {
    pub fn new(cb: uct_pending_purge_callback_t, arg: *mut c_void) -> PurgeCb {
        PurgeCb { cb, arg }
    }
    /// Hand a request back to its owner; false when there is no callback.
    pub fn call(&self, req: PendingReq) -> bool {
        match self.cb {
            // SAFETY: the request was queued by this owner, and the callback
            // and argument are the ones it passed to pending_purge.
            Some(f) => {
                unsafe { f(req.0, self.arg) };
                true
            }
            None => false,
        }
    }
}

/// A queued `uct_pending_req_t`, owned by the transport until dispatched.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct PendingReq(pub *mut uct_pending_req_t);

impl PendingReq {
    /// Run the request's callback (it returns UCS_OK when done).
    pub fn dispatch(&self) -> ucs_status_t {
        // SAFETY: a queued request is live until its callback returns OK or
        // it is purged; its callback is set by its owner.
        unsafe {
            match (*self.0).func {
                Some(f) => f(self.0),
                None => UCS_OK,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(data: &[u8]) -> uct_iov_t {
        uct_iov_t { buffer: data.as_ptr() as *mut c_void, length: data.len(), memh: std::ptr::null_mut(),
                    stride: 0, count: 1 }
    }

    #[test]
    fn gather_keeps_entries_after_an_empty_one() {
        // libucp's reply AM: header, empty payload, user header, footer.
        let (hdr, empty, user, ftr) = ([1u8, 2], [0u8; 0], [3u8, 4, 5], [6u8; 8]);
        let iov = [entry(&hdr), entry(&empty), entry(&user), entry(&ftr)];
        assert_eq!(iov_total(&iov), 13);
        let mut dst = [0u8; 13];
        assert_eq!(iov_gather(&iov, &mut dst), 13);
        assert_eq!(dst, [1, 2, 3, 4, 5, 6, 6, 6, 6, 6, 6, 6, 6]);
    }

    #[test]
    fn gather_stops_at_the_end_of_the_destination() {
        let (a, b) = ([1u8; 4], [2u8; 4]);
        let iov = [entry(&a), entry(&b)];
        let mut dst = [0u8; 6];
        assert_eq!(iov_gather(&iov, &mut dst), 6);
        assert_eq!(dst, [1, 1, 1, 1, 2, 2]);
    }
}
