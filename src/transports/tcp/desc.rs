//! Receive descriptors of a tcp interface: a large active message that is
//! still arriving is received into a buffer of its own, and its handler
//! gets it with `UCT_CB_PARAM_FLAG_DESC`. A handler that keeps it (libucp
//! does, for data no receive was posted for yet) saves the copy it would
//! otherwise make into a buffer of its own; it gives the buffer back
//! through `uct_iface_release_desc`.
//!
//! One buffer: `[lead][uct_recv_desc_t* 8][rx_headroom][payload]`, the
//! payload 64-byte aligned and as large as the largest frame body. The
//! pool outlives its interface while buffers are out (in a connection or
//! kept by a handler): a release after the interface closed frees the
//! buffer, and the last one the pool.

use crate::abi::*;
use libc::c_void;
use std::alloc::{self, Layout};
use std::cell::{Cell, RefCell};
use std::ptr::NonNull;

/// Alignment of the payload (and of the allocation).
const ALIGN: usize = 64;
/// The release pointer slot in front of the user's headroom.
const SLOT: usize = std::mem::size_of::<*const uct_recv_desc_t>();
/// Free buffers the pool keeps.
const KEEP: usize = 16;

/// The pool; `release` first, so that the `uct_recv_desc_t*` stored in
/// front of every buffer is also the pool's address.
#[repr(C)]
pub(super) struct DescPool {
    release: uct_recv_desc_t,
    headroom: usize,
    /// Offset of the payload from the start of the allocation.
    lead: usize,
    layout: Layout,
    cap: usize,
    free: RefCell<Vec<NonNull<u8>>>,
    /// Buffers not in `free`.
    out: Cell<usize>,
    closed: Cell<bool>,
    /// Messages handed to handlers in a buffer, and how many of them the
    /// handler kept.
    delivered: Cell<u64>,
    kept: Cell<u64>,
}

/// The interface's handle on its pool: closing it frees what is free, and
/// the pool once nothing is out.
pub(super) struct DescPoolHandle(NonNull<DescPool>);

/// A buffer taken from the pool; dropped, it goes back.
pub(super) struct DescBuf {
    pool: NonNull<DescPool>,
    start: NonNull<u8>,
}

impl DescPoolHandle {
    /// Buffers for frame bodies of up to `cap` bytes, with `headroom`
    /// bytes for the user in front; None when the sizes do not make a
    /// layout.
    pub(super) fn new(headroom: usize, cap: usize) -> Option<DescPoolHandle> {
        let lead = (SLOT + headroom).div_ceil(ALIGN) * ALIGN;
        let layout = Layout::from_size_align(lead.checked_add(cap)?, ALIGN).ok()?;
        let pool = Box::new(DescPool {
            release: uct_recv_desc_t { cb: Some(release_cb) },
            headroom,
            lead,
            layout,
            cap,
            free: RefCell::new(Vec::new()),
            out: Cell::new(0),
            closed: Cell::new(false),
            delivered: Cell::new(0),
            kept: Cell::new(0),
        });
        Some(DescPoolHandle(NonNull::from(Box::leak(pool))))
    }

    fn pool(&self) -> &DescPool {
        // SAFETY: the pool lives at least as long as this handle (it is
        // freed here on drop, or by the last buffer after that).
        unsafe { self.0.as_ref() }
    }

    /// The largest body a buffer holds.
    pub(super) fn cap(&self) -> usize {
        self.pool().cap
    }

    /// Count a message handed to its handler in a buffer (`kept`: and the
    /// handler kept it).
    pub(super) fn count(&self, kept: bool) {
        let p = self.pool();
        p.delivered.set(p.delivered.get() + 1);
        p.kept.set(p.kept.get() + kept as u64);
    }

    /// Messages handed over in buffers so far, and how many were kept.
    pub(super) fn counts(&self) -> (u64, u64) {
        (self.pool().delivered.get(), self.pool().kept.get())
    }

    /// A buffer (a new one when none is free).
    pub(super) fn take(&self) -> DescBuf {
        let p = self.pool();
        let start = match p.free.borrow_mut().pop() {
            Some(s) => s,
            None => {
                // SAFETY: the layout has a non-zero size (the lead is at
                // least one alignment unit).
                let raw = unsafe { alloc::alloc(p.layout) };
                let Some(start) = NonNull::new(raw) else { alloc::handle_alloc_error(p.layout) };
                // SAFETY: the slot lies inside the allocation, before the
                // headroom (lead >= SLOT + headroom).
                unsafe {
                    (start.as_ptr().add(p.lead - p.headroom - SLOT) as *mut *const uct_recv_desc_t)
                        .write_unaligned(&p.release)
                };
                start
            }
        };
        p.out.set(p.out.get() + 1);
        DescBuf { pool: self.0, start }
    }
}

impl Drop for DescPoolHandle {
    fn drop(&mut self) {
        let p = self.pool();
        p.closed.set(true);
        for s in p.free.borrow_mut().drain(..) {
            // SAFETY: every free buffer was allocated with the pool's layout.
            unsafe { alloc::dealloc(s.as_ptr(), p.layout) };
        }
        let out = p.out.get();
        if out == 0 {
            // SAFETY: nothing refers to the pool any more (no buffer is out
            // and this handle goes away).
            drop(unsafe { Box::from_raw(self.0.as_ptr()) });
        } else {
            crate::diag!("tcp: {} receive descriptors still held when the interface closed", out);
        }
    }
}

impl DescPool {
    /// A buffer comes back (from a connection or through a release).
    ///
    /// # Safety
    /// `pool` is live and `start` one of its buffers that is out.
    unsafe fn put(pool: NonNull<DescPool>, start: NonNull<u8>) {
        // SAFETY: see the function contract.
        let p = unsafe { pool.as_ref() };
        p.out.set(p.out.get() - 1);
        if !p.closed.get() {
            let mut free = p.free.borrow_mut();
            if free.len() < KEEP {
                free.push(start);
                return;
            }
        }
        // SAFETY: the buffer was allocated with the pool's layout.
        unsafe { alloc::dealloc(start.as_ptr(), p.layout) };
        if p.closed.get() && p.out.get() == 0 {
            // SAFETY: the interface closed and this was the last buffer out.
            drop(unsafe { Box::from_raw(pool.as_ptr()) });
        }
    }
}

impl DescBuf {
    /// The payload: the pool's capacity of bytes.
    pub(super) fn payload(&self) -> *mut u8 {
        // SAFETY: the pool is live while a buffer is out; the payload lies
        // inside the allocation.
        unsafe { self.start.as_ptr().add(self.pool.as_ref().lead) }
    }

    /// A handler kept the buffer: it comes back through `release_cb`.
    pub(super) fn give_away(self) {
        std::mem::forget(self);
    }
}

impl Drop for DescBuf {
    fn drop(&mut self) {
        // SAFETY: the pool is live while this buffer is out.
        unsafe { DescPool::put(self.pool, self.start) };
    }
}

/// `uct_iface_release_desc` of a buffer a handler kept: `desc` is the
/// payload less the headroom.
///
/// # Safety
/// `self_` is the `release` of a live pool (the pointer stored in front of
/// `desc`), and `desc` the user part of one of its buffers that a handler
/// kept and has not released yet.
unsafe extern "C" fn release_cb(self_: *mut uct_recv_desc_t, desc: *mut c_void) {
    let Some(pool) = NonNull::new(self_ as *mut DescPool) else { return };
    // SAFETY: see the function contract: the pool is live (a buffer is
    // out), and the buffer starts `lead - headroom` bytes before `desc`.
    unsafe {
        let p = pool.as_ref();
        let Some(start) = NonNull::new((desc as *mut u8).sub(p.lead - p.headroom)) else { return };
        DescPool::put(pool, start);
    }
}
