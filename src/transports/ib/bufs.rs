//! Registered buffer pools: receive buffers for the shared receive queue,
//! send buffers for bcopy, atomics results and am_zcopy headers.
//!
//! A pool grows by chunks; each chunk is one allocation registered as one
//! memory region, made by the interface's allocation methods (`ALLOC`): with
//! `thp` first, a large chunk is aligned to the huge page size and advised
//! to use transparent huge pages, so a receive queue of thousands of
//! buffers stays within a few TLB entries for the device and for us. A
//! buffer is `lead` bytes of room (the receive side keeps
//! the user's headroom and the release pointer there) followed by `size`
//! bytes the device reads or writes. Buffers are handed out as the address
//! of that device part plus its lkey. A pool is used by one interface, from
//! the thread that progresses it (UCX refuses multi-threaded workers for
//! IB interfaces), hence no locking.

use crate::abi::{uct_alloc_method_t, uct_allocated_memory_t, UCS_MEMORY_TYPE_HOST, UCT_ALLOC_METHOD_HEAP,
                 UCT_ALLOC_METHOD_MD};
use crate::core::mem;
use crate::sys::verbs::{access, raw, Errno, Mr, Pd};
use std::cell::RefCell;

const ALIGN: usize = 64;
const PAGE: usize = 4096;

struct Chunk {
    /// Declared before the memory's release in Drop: deregistered first.
    mr: Option<Mr>,
    /// Bytes of buffers (the allocation may be longer).
    len: usize,
    /// The allocation, as `mem::free` takes it back.
    block: uct_allocated_memory_t,
}

impl Drop for Chunk {
    fn drop(&mut self) {
        drop(self.mr.take());
        // Freed once, after its registration is gone; a failure was
        // already impossible for a block `mem::alloc` made.
        let _ = mem::free(&self.block);
    }
}

/// A buffer of a pool: the device part's address and its local key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Buf {
    pub addr: *mut u8,
    pub lkey: u32,
}

struct Inner {
    chunks: Vec<Chunk>,
    free: Vec<Buf>,
    total: usize,
}

pub struct BufPool {
    pd: *const Pd,
    /// The interface's allocation methods, in order (`md` left out: a
    /// pool registers its own memory).
    methods: Vec<uct_alloc_method_t>,
    lead: usize,
    size: usize,
    stride: usize,
    per_chunk: usize,
    name: &'static str,
    inner: RefCell<Inner>,
}

impl BufPool {
    /// A pool of buffers of `size` device bytes after `lead` bytes of room,
    /// growing `per_chunk` buffers at a time, allocated by `methods` (heap
    /// when none of them can). `pd` must outlive the pool.
    pub fn new(pd: &Pd, methods: &[uct_alloc_method_t], lead: usize, size: usize, per_chunk: usize,
               name: &'static str) -> BufPool {
        let lead = lead.div_ceil(8) * 8;
        let stride = stride_of(lead + size);
        let mut methods: Vec<_> = methods.iter().copied().filter(|&m| m != UCT_ALLOC_METHOD_MD).collect();
        methods.push(UCT_ALLOC_METHOD_HEAP);
        BufPool { pd, methods, lead, size, stride, per_chunk: per_chunk.max(1), name,
                  inner: RefCell::new(Inner { chunks: Vec::new(), free: Vec::new(), total: 0 }) }
    }

    pub fn size(&self) -> usize {
        self.size
    }

    /// Bytes of room in front of each buffer.
    pub fn lead(&self) -> usize {
        self.lead
    }

    fn grow(&self, inner: &mut Inner) -> bool {
        let bytes = self.stride * self.per_chunk;
        let req = mem::AllocRequest { length: bytes, flags: 0, address: std::ptr::null_mut(),
                                      mem_type: UCS_MEMORY_TYPE_HOST, mds: &[], name: self.name };
        let block = match mem::alloc(&self.methods, &req) {
            Ok(a) => a.record(),
            Err(_) => {
                crate::error!("failed to allocate {} bytes of {}", bytes, self.name);
                return false;
            }
        };
        let mem = block.address as *mut u8;
        // Zeroed, and faulted in now rather than on the data path.
        // SAFETY: the block holds at least `bytes` bytes, ours alone.
        unsafe { std::ptr::write_bytes(mem, 0, bytes) };
        // SAFETY: the PD outlives the pool (constructor contract).
        let pd = unsafe { &*self.pd };
        let access = access::LOCAL_WRITE | access::REMOTE_WRITE | access::REMOTE_READ | access::REMOTE_ATOMIC;
        let mr = match Mr::reg(pd, mem as usize, bytes, access) {
            Ok(m) => m,
            Err(e) => {
                crate::error!("ibv_reg_mr of {} ({} bytes) failed: {}", self.name, bytes, e);
                let _ = mem::free(&block);
                return false;
            }
        };
        let lkey = mr.lkey();
        for i in (0..self.per_chunk).rev() {
            // SAFETY: inside the chunk just allocated.
            let addr = unsafe { mem.add(i * self.stride + self.lead) };
            inner.free.push(Buf { addr, lkey });
        }
        inner.total += self.per_chunk;
        inner.chunks.push(Chunk { mr: Some(mr), len: bytes, block });
        true
    }

    /// A free buffer, growing the pool when it is empty.
    #[inline]
    pub fn get(&self) -> Option<Buf> {
        let mut inner = self.inner.borrow_mut();
        if let Some(b) = inner.free.pop() {
            return Some(b);
        }
        if !self.grow(&mut inner) {
            return None;
        }
        inner.free.pop()
    }

    #[inline]
    pub fn put(&self, b: Buf) {
        self.inner.borrow_mut().free.push(b);
    }

    /// The buffer whose device part starts at `addr`, if it is one of ours.
    pub fn find(&self, addr: *mut u8) -> Option<Buf> {
        let inner = self.inner.borrow();
        let a = addr as usize;
        inner.chunks.iter().find_map(|c| {
            let start = c.block.address as usize;
            let end = start + c.len;
            let ok = a >= start + self.lead && a < end && (a - start - self.lead) % self.stride == 0;
            ok.then(|| Buf { addr, lkey: c.mr.as_ref().map_or(0, |m| m.lkey()) })
        })
    }

    /// Buffers made so far, and free now.
    pub fn counts(&self) -> (usize, usize) {
        let inner = self.inner.borrow();
        (inner.total, inner.free.len())
    }
}

/// The distance between two buffers of `bytes` bytes: cache-line aligned,
/// and never a whole number of pages. Buffers a whole number of pages apart
/// all start at one page offset: every copy into them then competes for the
/// same cache sets, and a source at that offset too (a user's page-aligned
/// buffer) makes the CPU's string copy stall on 4 KiB aliasing (measured: a
/// 4000-byte bcopy took 20 times longer).
fn stride_of(bytes: usize) -> usize {
    let stride = bytes.max(1).div_ceil(ALIGN) * ALIGN;
    if stride % PAGE == 0 { stride + ALIGN } else { stride }
}

/// Post up to `n` free buffers of `pool` as receives of `len` bytes each,
/// in one chain of at most 16, through `post` (a QP's or an SRQ's
/// `post_recv`), each with `mark` written into its first byte if given.
/// Returns how many were posted; on a failed post the
/// buffers go back to the pool and 0 is returned (logged as `what`).
pub fn post_recv_batch(pool: &BufPool, n: usize, len: usize, mark: Option<u8>, what: &str,
                       post: impl FnOnce(*mut raw::ibv_recv_wr) -> Result<(), Errno>) -> usize {
    let n = n.min(16);
    // SAFETY: all-zero is valid for these plain structs.
    let mut wrs: [raw::ibv_recv_wr; 16] = unsafe { std::mem::zeroed() };
    let mut sgs = [raw::ibv_sge { addr: 0, length: 0, lkey: 0 }; 16];
    let mut got = 0;
    while got < n {
        let Some(b) = pool.get() else { break };
        if let Some(m) = mark {
            // SAFETY: a buffer of the pool, `len` >= 1 bytes, ours until
            // its completion.
            unsafe { b.addr.write(m) };
        }
        sgs[got] = raw::ibv_sge { addr: b.addr as u64, length: len as u32, lkey: b.lkey };
        wrs[got].wr_id = b.addr as u64;
        wrs[got].num_sge = 1;
        got += 1;
    }
    if got == 0 {
        return 0;
    }
    for i in 0..got {
        wrs[i].sg_list = &mut sgs[i];
        wrs[i].next = if i + 1 < got { &mut wrs[i + 1] } else { std::ptr::null_mut() };
    }
    if let Err(e) = post(wrs.as_mut_ptr()) {
        crate::error!("{} failed: {}", what, e);
        for sg in &sgs[..got] {
            pool.put(Buf { addr: sg.addr as *mut u8, lkey: sg.lkey });
        }
        return 0;
    }
    got
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strides_are_lines_and_never_whole_pages() {
        for bytes in [1, 63, 64, 100, 4000, 4096, 4097, 8192, 8256, 4096 * 3, 65536] {
            let s = stride_of(bytes);
            assert!(s >= bytes, "{bytes}: {s}");
            assert_eq!(s % ALIGN, 0, "{bytes}: {s}");
            assert_ne!(s % PAGE, 0, "{bytes}: {s}");
            assert!(s < bytes + 2 * ALIGN, "{bytes}: {s}");
        }
        assert_eq!(stride_of(4096), 4096 + 64);
        assert_eq!(stride_of(4000), 4032);
    }
}
