//! The worker: libucs's callback queue at offset 0, so the inline
//! `uct_worker_progress` of the C headers walks our progress callbacks.
//!
//! C code (the inline progress, libucs's queue functions) writes the queue
//! behind our back and from other threads, so the queue lives in an
//! `UnsafeCell` and the worker is only ever handed out as a shared
//! reference: Rust never holds a `&mut` to memory C may be changing.

use crate::abi::*;
use crate::ucs;
use std::cell::UnsafeCell;

pub const WORKER_MAGIC: u64 = 0x7563_742d_776b_7221;

#[repr(C)]
pub struct WorkerObj {
    base: UnsafeCell<uct_worker_t>,
    magic: u64,
    pub async_ctx: *mut ucs_async_context_t,
    pub thread_mode: ucs_thread_mode_t,
}

impl WorkerObj {
    pub fn create(async_ctx: *mut ucs_async_context_t, thread_mode: ucs_thread_mode_t) -> Result<uct_worker_h, ucs_status_t> {
        // SAFETY: all-zero is a valid (not yet initialised) callback queue;
        // ucs_callbackq_init sets it up in place, inside the box, which
        // never moves afterwards.
        let w = Box::new(WorkerObj { base: UnsafeCell::new(unsafe { std::mem::zeroed() }), magic: WORKER_MAGIC,
                                     async_ctx, thread_mode });
        // SAFETY: see above; the box is ours alone until it is handed out.
        let status = unsafe { ucs::ucs_callbackq_init(w.progress_q()) };
        if status != UCS_OK {
            return Err(status);
        }
        Ok(Box::into_raw(w) as uct_worker_h)
    }

    /// The worker behind a handle, if this library made it.
    ///
    /// # Safety
    /// `w` must be null or point to at least a readable `uct_worker_t`, and
    /// stay alive while the reference is used.
    pub unsafe fn from_handle<'a>(w: uct_worker_h) -> Option<&'a WorkerObj> {
        if w.is_null() {
            return None;
        }
        // SAFETY: see the function contract; a foreign object fails the
        // magic test (the magic lies right after the `uct_worker_t` C
        // callers know, which every worker handle is at least as large as).
        let o = unsafe { &*(w as *const WorkerObj) };
        (o.magic == WORKER_MAGIC).then_some(o)
    }

    /// The progress queue, for libucs's queue functions.
    pub fn progress_q(&self) -> *mut ucs_callbackq_t {
        // SAFETY: projecting a field of the cell's contents; nothing is read.
        unsafe { std::ptr::addr_of_mut!((*self.base.get()).progress_q) }
    }

    /// # Safety
    /// `w` came from [`WorkerObj::create`] and nothing uses it afterwards.
    pub unsafe fn destroy(w: uct_worker_h) {
        // SAFETY: see the function contract: we own the box again.
        let mut b = unsafe { Box::from_raw(w as *mut WorkerObj) };
        // SAFETY: the queue was initialised by `create`.
        unsafe { ucs::ucs_callbackq_cleanup(b.progress_q()) };
        b.magic = 0;
    }
}
