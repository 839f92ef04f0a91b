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
        unsafe { std::slice::from_raw_parts(ptr as *const u8, len) }
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
        unsafe { std::slice::from_raw_parts(iov, cnt) }
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
        // SAFETY: the user's callback with its own argument, into memory
        // the function contract makes writable.
        unsafe { (self.cb)(dst as *mut c_void, self.arg) }
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
        // SAFETY: the user's callback with its own argument, from memory
        // the function contract makes readable.
        unsafe { (self.cb)(self.arg, src as *const c_void, len) }
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
            // SAFETY: see the function contract (aligned, mapped, shared
            // only through atomic operations).
            let a = unsafe { &*(target as *const AtomicU64) };
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
            // SAFETY: as above.
            let a = unsafe { &*(target as *const AtomicU32) };
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

/// A caller-provided buffer for an address, as long as the length this
/// interface reported for that kind of address in `uct_iface_attr_t`.
pub struct AddrOut {
    ptr: *mut u8,
    len: usize,
}

impl AddrOut {
    /// # Safety
    /// `p` is null or holds `len` writable bytes (the caller sized its
    /// buffer from the `*_addr_len` we reported).
    pub unsafe fn new(p: *mut u8, len: usize) -> Option<AddrOut> {
        (!p.is_null()).then_some(AddrOut { ptr: p, len })
    }

    /// Write the address bytes; an address longer than the reported length
    /// is refused (a transport bug), never written past the buffer.
    pub fn write(self, bytes: &[u8]) -> ucs_status_t {
        if bytes.len() > self.len {
            crate::error!("address of {} bytes does not fit the {} reported", bytes.len(), self.len);
            return UCS_ERR_BUFFER_TOO_SMALL;
        }
        // SAFETY: the buffer holds `len` writable bytes (see `new`), and
        // `bytes` is no longer.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), self.ptr, bytes.len()) };
        UCS_OK
    }
}

/// A peer's address (device, interface or endpoint address) as C passed it,
/// bounded by the length this interface declared for that kind of address:
/// reads never go past it. Transports whose addresses have one fixed length
/// take it whole ([`bytes`](Self::bytes)); one whose addresses describe
/// their own length (tcp: IPv4, IPv6, loopback) reads the part its format
/// says is there ([`read`](Self::read), [`prefix`](Self::prefix)).
#[derive(Clone, Copy)]
pub struct PeerAddr<'a> {
    ptr: *const u8,
    len: usize,
    _life: std::marker::PhantomData<&'a [u8]>,
}

impl<'a> PeerAddr<'a> {
    /// # Safety
    /// `p` is null or an address of this transport, valid for `'a`, of at
    /// most `len` bytes, whose first bytes tell how long it is (for a
    /// fixed-length address: exactly `len` bytes).
    pub unsafe fn new(p: *const c_void, len: usize) -> Option<PeerAddr<'a>> {
        (!p.is_null()).then_some(PeerAddr { ptr: p as *const u8, len, _life: std::marker::PhantomData })
    }

    /// The declared length.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The first `n` bytes (None beyond the declared length).
    pub fn prefix(&self, n: usize) -> Option<&'a [u8]> {
        // SAFETY: within the declared length, which the address holds as
        // far as its own format says (see `new`); callers ask only for what
        // the format promises.
        (n <= self.len).then(|| unsafe { std::slice::from_raw_parts(self.ptr, n) })
    }

    /// The first `N` bytes, copied.
    pub fn read<const N: usize>(&self) -> Option<[u8; N]> {
        self.read_at::<N>(0)
    }

    /// `N` bytes at `offset`, copied (None beyond the declared length).
    pub fn read_at<const N: usize>(&self, offset: usize) -> Option<[u8; N]> {
        let end = offset.checked_add(N)?;
        self.prefix(end).map(|b| {
            let mut out = [0u8; N];
            out.copy_from_slice(&b[offset..]);
            out
        })
    }

    /// The whole address, for fixed-length addresses.
    pub fn bytes(&self) -> &'a [u8] {
        self.prefix(self.len).unwrap_or(&[])
    }

    /// The first `n` bytes (at most the declared length), copied only if
    /// that memory is readable: for addresses whose flags say how long they
    /// are, where a short or forged address would otherwise send the read
    /// past its end. The copy goes through the kernel (a cross-memory read
    /// from our own process), which reports unmapped memory instead of
    /// faulting; where that call is not allowed, only our own address
    /// length (`own_len`) is read directly.
    pub fn copy_checked(&self, n: usize, own_len: usize) -> Option<Vec<u8>> {
        if n > self.len {
            return None;
        }
        let mut out = vec![0u8; n];
        let mut local = [libc::iovec { iov_base: out.as_mut_ptr() as *mut c_void, iov_len: n }];
        let remote = [crate::sys::vm::RemoteIoVec { base: self.ptr as usize, len: n }];
        // SAFETY: `out` is ours and exclusive for the call; the remote range
        // is read from our own memory, which the kernel checks.
        match unsafe { crate::sys::vm::read_from(crate::sys::getpid(), &mut local, &remote) } {
            Ok(got) if got == n => Some(out),
            Ok(_) | Err(crate::sys::Errno::EFAULT) => None,
            Err(_) => (n <= own_len).then(|| self.prefix(n).map(|b| b.to_vec())).flatten(),
        }
    }
}

/// The completion a caller passed with an operation that may finish later
/// (the operation returned `UCS_INPROGRESS`), or none when it passed NULL.
/// [`complete`](Self::complete) consumes it, so an operation is reported
/// once.
#[repr(transparent)]
#[derive(Debug, PartialEq, Eq)]
pub struct Completion(*mut uct_completion_t);

impl std::fmt::Pointer for Completion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Pointer::fmt(&self.0, f)
    }
}

impl Default for Completion {
    fn default() -> Completion {
        Completion::none()
    }
}

impl Completion {
    /// # Safety
    /// `comp` is null or a completion the caller keeps alive until it is
    /// completed (UCT's contract for every call that takes one).
    #[inline(always)]
    pub unsafe fn from_raw(comp: *mut uct_completion_t) -> Completion {
        Completion(comp)
    }

    /// No completion: nothing is reported.
    pub const fn none() -> Completion {
        Completion(std::ptr::null_mut())
    }

    pub fn is_none(&self) -> bool {
        self.0.is_null()
    }

    /// The pointer, for identity checks and log lines.
    pub fn as_ptr(&self) -> *mut uct_completion_t {
        self.0
    }

    /// Report the operation's end the way UCT's inline helpers do: the first
    /// error wins, and the callback runs when the count drops to zero.
    pub fn complete(self, status: ucs_status_t) {
        if self.0.is_null() {
            return;
        }
        // SAFETY: a live completion owned by the caller (see `from_raw`),
        // which we hold the only Rust handle to.
        let c = unsafe { &mut *self.0 };
        if status != UCS_OK && c.status == UCS_OK {
            c.status = status;
        }
        c.count -= 1;
        if c.count == 0 {
            if let Some(f) = c.func {
                // SAFETY: the caller's callback, given its own completion.
                unsafe { f(self.0) };
            }
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
            Some(f) => {
                // SAFETY: the request was queued by this owner, and the
                // callback and argument are the ones it passed to
                // pending_purge.
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
