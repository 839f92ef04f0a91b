//! The worker: libucs's callback queue at offset 0, so the inline
//! `uct_worker_progress` of the C headers walks our progress callbacks.
//!
//! C code (the inline progress, libucs's queue functions) writes the queue
//! behind our back and from other threads, so the queue lives in an
//! `UnsafeCell` and the worker is only ever handed out as a shared
//! reference: Rust never holds a `&mut` to memory C may be changing.

use crate::abi::*;
use crate::core::registry::{self, Kind};
use crate::ucs;
use std::cell::UnsafeCell;

#[repr(C)]
pub struct WorkerObj {
    base: UnsafeCell<uct_worker_t>,
    pub async_ctx: *mut ucs_async_context_t,
    pub thread_mode: ucs_thread_mode_t,
}

impl WorkerObj {
    pub fn create(async_ctx: *mut ucs_async_context_t, thread_mode: ucs_thread_mode_t) -> Result<uct_worker_h, ucs_status_t> {
        // SAFETY: all-zero is a valid (not yet initialised) callback queue;
        // ucs_callbackq_init sets it up in place, inside the box, which
        // never moves afterwards.
        let w = Box::new(WorkerObj { base: UnsafeCell::new(unsafe { std::mem::zeroed() }), 
                                     async_ctx, thread_mode });
        // SAFETY: see above; the box is ours alone until it is handed out.
        let status = unsafe { ucs::ucs_callbackq_init(w.progress_q()) };
        if status != UCS_OK {
            return Err(status);
        }
        let h = Box::into_raw(w) as uct_worker_h;
        registry::register(h, Kind::Worker);
        Ok(h)
    }

    /// The worker behind a handle, if it is a live worker of this library
    /// (looked up by address, nothing read through the pointer first).
    ///
    /// # Safety
    /// The worker must stay alive while the reference is used.
    pub unsafe fn from_handle<'a>(w: uct_worker_h) -> Option<&'a WorkerObj> {
        // SAFETY: a live worker is the box made by `create`; see the
        // function contract for the lifetime.
        registry::is(w, Kind::Worker).then(|| unsafe { &*(w as *const WorkerObj) })
    }

    /// The progress queue, for libucs's queue functions.
    pub fn progress_q(&self) -> *mut ucs_callbackq_t {
        // SAFETY: projecting a field of the cell's contents; nothing is read.
        unsafe { std::ptr::addr_of_mut!((*self.base.get()).progress_q) }
    }

    /// Destroy a handle: false (and nothing done) when it is not a live
    /// worker; of two threads destroying one worker, one gets true.
    ///
    /// # Safety
    /// Nothing uses the worker once this returned true.
    pub unsafe fn destroy(w: uct_worker_h) -> bool {
        if !registry::take(w, Kind::Worker) {
            return false;
        }
        // SAFETY: it was live, so it is our box, now owned by this call.
        let b = unsafe { Box::from_raw(w as *mut WorkerObj) };
        // SAFETY: the queue was initialised by `create`.
        unsafe { ucs::ucs_callbackq_cleanup(b.progress_q()) };
        true
    }
}
