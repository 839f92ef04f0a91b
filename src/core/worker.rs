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
use libc::c_void;
use std::cell::{Cell, UnsafeCell};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Workers of the process holding messages back: while none does (every
/// workload but a tcp stream), the data path's ordering check is one load
/// of this counter, without following the interface to its worker. Each
/// worker counts itself here while it holds (its own thread sees its own
/// increment; other workers' holds only send it to the exact check).
static HOLDING_WORKERS: AtomicUsize = AtomicUsize::new(0);

/// Whether any worker of the process may hold messages back (the data
/// path's first check; `WorkerObj::order_before` is the exact one).
#[inline(always)]
pub fn any_holding() -> bool {
    HOLDING_WORKERS.load(Ordering::Relaxed) != 0
}

thread_local! {
    /// The worker whose held messages this thread made, if any. A worker
    /// holds only in `UCS_THREAD_MODE_SINGLE`, where its creating thread is
    /// the only one calling it, so this thread may release that worker's
    /// messages before it drives any other worker: the rule then spans
    /// workers (Open MPI drives a pml and an osc worker from one thread).
    /// A thread holds on one worker at a time, since an operation on
    /// another worker releases the first one's hold before its own starts.
    static THREAD_HOLDER: Cell<*const WorkerObj> = const { Cell::new(std::ptr::null()) };
}

/// Messages an endpoint of the worker holds back (a transport coalescing
/// back-to-back sends), and how to send them.
#[derive(Clone, Copy)]
struct Held {
    /// The endpoint holding them: its own later sends may join them.
    ep: *const c_void,
    /// Sends what is held (called with `arg`, on the worker's thread).
    release: unsafe fn(*const c_void),
    arg: *const c_void,
    /// The thread that made the hold (the worker's only thread).
    thread: libc::pthread_t,
}

#[repr(C)]
pub struct WorkerObj {
    base: UnsafeCell<uct_worker_t>,
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
}

impl WorkerObj {
    pub fn create(async_ctx: *mut ucs_async_context_t, thread_mode: ucs_thread_mode_t) -> Result<uct_worker_h, ucs_status_t> {
        // SAFETY: all-zero is a valid (not yet initialised) callback queue;
        // ucs_callbackq_init sets it up in place, inside the box, which
        // never moves afterwards.
        let w = Box::new(WorkerObj { base: UnsafeCell::new(unsafe { std::mem::zeroed() }),
                                     async_ctx, thread_mode, held: Cell::new(None) });
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

    /// An operation of endpoint `ep` (any transport) is about to run: what
    /// another endpoint holds back goes out first.
    #[inline(always)]
    pub fn order_before(&self, ep: *const c_void) {
        if any_holding() {
            self.order_before_slow(ep);
        }
    }

    #[cold]
    #[inline(never)]
    fn order_before_slow(&self, ep: *const c_void) {
        self.release_other_workers();
        if self.held.get().is_some_and(|h| h.ep != ep) {
            self.release_held();
        }
    }

    /// An operation not tied to one endpoint (progress, flush, event arm,
    /// close, a connection manager's) is about to run: everything held goes
    /// out first.
    #[inline(always)]
    pub fn order_all(&self) {
        if any_holding() {
            self.order_all_slow();
        }
    }

    #[cold]
    #[inline(never)]
    fn order_all_slow(&self) {
        self.release_other_workers();
        if self.held.get().is_some() {
            self.release_held();
        }
    }

    /// What this thread holds on another worker goes out before it works
    /// on this one.
    fn release_other_workers(&self) {
        let other = THREAD_HOLDER.with(|t| t.get());
        if other.is_null() || std::ptr::eq(other, self) {
            return;
        }
        THREAD_HOLDER.with(|t| t.set(std::ptr::null()));
        // SAFETY: looked up by address first: a worker destroyed since
        // then is not followed. One still live is alive for this call: it
        // is single-threaded and this thread is the one using it (checked
        // on the hold below).
        if let Some(w) = unsafe { Self::from_handle(other as uct_worker_h) } {
            // SAFETY: pthread_self has no preconditions.
            let me = unsafe { libc::pthread_self() };
            // SAFETY: as above (pthread_equal only compares).
            if w.held.get().is_some_and(|h| unsafe { libc::pthread_equal(h.thread, me) } != 0) {
                w.release_held();
            }
        }
    }

    /// Whether endpoints of this worker may hold messages back at all:
    /// only a single-threaded worker (`UCS_THREAD_MODE_SINGLE`) may, so
    /// that its thread can release them before working on another worker.
    pub fn may_hold(&self) -> bool {
        self.thread_mode == UCS_THREAD_MODE_SINGLE
    }

    /// Set what the worker holds, keeping `HOLDING_WORKERS` and this
    /// thread's holder in step.
    fn set_held(&self, h: Option<Held>) -> Option<Held> {
        let old = self.held.replace(h);
        match (old.is_some(), h.is_some()) {
            (false, true) => {
                HOLDING_WORKERS.fetch_add(1, Ordering::Relaxed);
                THREAD_HOLDER.with(|t| t.set(self));
            }
            (true, false) => {
                HOLDING_WORKERS.fetch_sub(1, Ordering::Relaxed);
                THREAD_HOLDER.with(|t| {
                    if std::ptr::eq(t.get(), self) {
                        t.set(std::ptr::null());
                    }
                });
            }
            _ => {}
        }
        old
    }

    #[cold]
    #[inline(never)]
    fn release_held(&self) {
        // Taken first: the release may run callbacks that come back here.
        if let Some(h) = self.set_held(None) {
            // SAFETY: the holder registered this function with this
            // argument, alive until it calls `unhold` (its close does).
            unsafe { (h.release)(h.arg) };
        }
    }

    /// Endpoint `ep` starts holding messages back; `release(arg)` sends
    /// them. The caller came through `order_before(ep)` and checked
    /// `may_hold`, so nothing else is held; should something be, it goes
    /// out now.
    ///
    /// # Safety
    /// `arg` stays valid for `release` until `unhold(ep)` is called.
    pub unsafe fn hold(&self, ep: *const c_void, release: unsafe fn(*const c_void), arg: *const c_void) {
        debug_assert!(self.may_hold());
        self.release_other_workers();
        if self.held.get().is_some_and(|h| h.ep != ep) {
            self.release_held();
        }
        // SAFETY: pthread_self has no preconditions.
        let thread = unsafe { libc::pthread_self() };
        self.set_held(Some(Held { ep, release, arg, thread }));
    }

    /// What `ep` held went out (or was dropped with its connection).
    pub fn unhold(&self, ep: *const c_void) {
        if self.held.get().is_some_and(|h| h.ep == ep) {
            self.set_held(None);
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
        // SAFETY: it was live, so it is our box, now owned by this call.
        let b = unsafe { Box::from_raw(w as *mut WorkerObj) };
        // Its interfaces are closed (each sent or dropped what it held).
        b.set_held(None);
        // SAFETY: the queue was initialised by `create`.
        unsafe { ucs::ucs_callbackq_cleanup(b.progress_q()) };
        true
    }
}
