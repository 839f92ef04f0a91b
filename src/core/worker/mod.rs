//! The worker: libucs's callback queue at offset 0, so the inline
//! `uct_worker_progress` of the C headers walks our progress callbacks.
//!
//! C code (the inline progress, libucs's queue functions) writes the queue
//! behind our back and from other threads, so the queue lives in an
//! `UnsafeCell` and the worker is only ever handed out as a shared
//! reference: Rust never holds a `&mut` to memory C may be changing.
//!
//! The worker also carries the ordering rule of messages a transport holds
//! back ([`hold`]) and the timer that sends what stays held too long
//! ([`net`]); each lives in its own file.

mod hold;
mod net;

pub use hold::{any_holding, Holder};
pub use net::HoldLock;

use crate::abi::*;
use crate::core::registry::{self, Kind};
use crate::ucs;
use crate::ucs::async_block::{mode_of, AsyncBlock};
use crate::ucs::callbackq;
use hold::Held;
use libc::{c_uint, c_void};
use net::Net;
use std::cell::{Cell, UnsafeCell};
use std::sync::atomic::Ordering;

/// The public head of a worker in every release's layout: the callback
/// queue at offset 0, as large as the largest release's (1.13-1.15 keep
/// libucs's private part inline). libucs initialises the one of its
/// release in place.
#[repr(C)]
union WorkerHead {
    current: uct_worker_t,
    v1_13: uct_worker_t_v1_13,
}

#[repr(C)]
pub struct WorkerObj {
    base: UnsafeCell<WorkerHead>,
    pub async_ctx: *mut ucs_async_context_t,
    pub thread_mode: ucs_thread_mode_t,
    /// The ordering rule of held messages: at most one endpoint of the
    /// worker holds messages back, and they are on the wire before any
    /// other operation of the worker that can send (another endpoint, any
    /// transport, a connection manager, a flush, progress, event arm, a
    /// close) does its work, and before the same thread's operations on
    /// any other worker. The vtable trampolines and the CM entry points
    /// check it first (`order_before` / `order_all`).
    held: Cell<Option<Held>>,
    net: Net,
}

impl WorkerObj {
    pub fn create(async_ctx: *mut ucs_async_context_t, thread_mode: ucs_thread_mode_t) -> Result<uct_worker_h, ucs_status_t> {
        let mode = mode_of(async_ctx).filter(|m| matches!(*m, UCS_ASYNC_MODE_THREAD_SPINLOCK | UCS_ASYNC_MODE_THREAD_MUTEX));
        // Only a single-threaded worker holds (see `may_hold`): no net
        // (and no lock) for the others.
        let mode = mode.filter(|_| thread_mode == UCS_THREAD_MODE_SINGLE);
        let net = Net::new(mode);
        // SAFETY: all-zero is a valid (not yet initialised) callback queue;
        // ucs_callbackq_init sets it up in place, inside the box, which
        // never moves afterwards.
        let w = Box::new(WorkerObj { base: UnsafeCell::new(unsafe { std::mem::zeroed() }),
                                     async_ctx, thread_mode, held: Cell::new(None), net });
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
        // The queue is at offset 0 in every layout of the head.
        self.base.get() as *mut ucs_callbackq_t
    }

    /// `uct_worker_progress_register_safe`: add `func(arg)` to the progress
    /// queue unless `*id` already names a callback; `*id` gets its id.
    /// Callable from any thread and from inside progress callbacks (the
    /// queue has its own lock). As in UCX, the worker's async context is
    /// blocked around the change, so it is serialised with the async
    /// handlers and with code that holds the block.
    ///
    /// # Safety
    /// `func` may be called with `arg` from any thread that progresses the
    /// worker, until it is removed.
    pub unsafe fn progress_register_safe(&self, func: ucs_callback_t, arg: *mut c_void, flags: c_uint,
                                         id: &mut uct_worker_cb_id_t) {
        if *id == UCS_CALLBACKQ_ID_NULL {
            let _blocked = AsyncBlock::new(self.async_ctx);
            // SAFETY: our live queue; the callback's contract is the
            // caller's.
            *id = unsafe { callbackq::add_safe(self.progress_q(), func, arg, flags) };
        }
    }

    /// `uct_worker_progress_unregister_safe`: remove the callback `*id`
    /// names (none: nothing to do) and reset `*id`. Thread-safe as
    /// [`progress_register_safe`](Self::progress_register_safe).
    pub fn progress_unregister_safe(&self, id: &mut uct_worker_cb_id_t) {
        if *id != UCS_CALLBACKQ_ID_NULL {
            {
                let _blocked = AsyncBlock::new(self.async_ctx);
                // SAFETY: our live queue; an id not from it is the
                // caller's error, which libucs tolerates as UCX does.
                unsafe { callbackq::remove_safe(self.progress_q(), *id) };
            }
            *id = UCS_CALLBACKQ_ID_NULL;
        }
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
        // SAFETY: it was live, so it is our box; shared with a tick that
        // may run until the timer is removed here.
        unsafe { &*(w as *const WorkerObj) }.net_stop();
        // SAFETY: it was live, so it is our box, now owned by this call
        // (no tick runs any more).
        let b = unsafe { Box::from_raw(w as *mut WorkerObj) };
        let holds = b.net.holds.load(Ordering::Relaxed);
        if holds != 0 {
            crate::debug!("worker {:p}: {} holds, {} sent by the timer", w, holds, b.net.sent.get());
        }
        // Its interfaces are closed (each sent or dropped what it held).
        b.set_held(None);
        // SAFETY: the queue was initialised by `create`.
        unsafe { ucs::ucs_callbackq_cleanup(b.progress_q()) };
        true
    }
}
