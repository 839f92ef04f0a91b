//! The ordering rule of messages a transport holds back on a worker (a
//! tcp stream coalescing back-to-back sends): at most one endpoint of a
//! worker holds, and what it holds goes out before any other operation of
//! the worker, or of the same thread on another worker, that can send.
//! The holder is a [`Holder`] the transport hands to [`WorkerObj::hold`];
//! core knows it only through that trait.

use super::WorkerObj;
use crate::abi::*;
use libc::c_void;
use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// What holds messages back on a worker: the transport's object that can
/// send them.
pub trait Holder {
    /// Send everything held. Called on the worker's thread, before an
    /// operation the ordering rule puts after the held messages, or by the
    /// safety net's timer on libucs's async thread with the worker's hold
    /// lock taken ([`WorkerObj::in_tick`] is then true: only send, run no
    /// user callback). The holder calls [`WorkerObj::unhold`] for what went
    /// out.
    fn send_held(&self);
}

/// Workers of the process holding messages back: while none does (every
/// workload but a tcp stream), the data path's ordering check is one load
/// of this counter, without following the interface to its worker. Each
/// worker counts itself here while it holds (its own thread sees its own
/// increment; other workers' holds only send it to the exact check).
pub(super) static HOLDING_WORKERS: AtomicUsize = AtomicUsize::new(0);

/// Whether any worker of the process may hold messages back (the data
/// path's first check; `WorkerObj::order_before` is the exact one).
///
/// Acquire: a hold the safety net's timer sent (from the async thread) is
/// counted out only after the timer is done with the holder's state, so a
/// thread that reads zero here sees that state as the timer left it.
#[inline(always)]
pub fn any_holding() -> bool {
    HOLDING_WORKERS.load(Ordering::Acquire) != 0
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

/// Messages an endpoint of the worker holds back, and who sends them.
#[derive(Clone, Copy)]
pub(super) struct Held {
    /// The endpoint holding them: its own later sends may join them.
    ep: *const c_void,
    /// Sends what is held (on the worker's thread, or from the timer).
    holder: *const dyn Holder,
    /// The thread that made the hold (the worker's only thread).
    thread: libc::pthread_t,
}

impl WorkerObj {
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
        // Without the lock first: this endpoint's own hold (a stream of
        // sends) or nothing needs nothing (a tick only clears it).
        let h = self.net.held_ep.load(Ordering::Relaxed);
        if h.is_null() || std::ptr::eq(h, ep) {
            return;
        }
        let _locked = self.hold_lock();
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
        if self.net.held_ep.load(Ordering::Relaxed).is_null() {
            return;
        }
        let _locked = self.hold_lock();
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
            let _locked = w.hold_lock();
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
    pub(super) fn set_held(&self, h: Option<Held>) -> Option<Held> {
        let old = self.held.replace(h);
        self.net.held_ep.store(h.map_or(std::ptr::null_mut(), |h| h.ep as *mut c_void), Ordering::Relaxed);
        match (old.is_some(), h.is_some()) {
            (false, true) => {
                HOLDING_WORKERS.fetch_add(1, Ordering::Relaxed);
                THREAD_HOLDER.with(|t| t.set(self));
            }
            (true, false) if self.net.in_tick.get() => {
                // Counted out when the tick is done (see `any_holding`).
                self.net.owed.set(true);
            }
            (true, false) => {
                HOLDING_WORKERS.fetch_sub(1, Ordering::Release);
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
    pub(super) fn release_held(&self) {
        // Taken first: the release may run callbacks that come back here.
        if let Some(h) = self.set_held(None) {
            // SAFETY: the holder handed itself to `hold`, alive until it
            // calls `unhold` (its close does).
            unsafe { (*h.holder).send_held() };
        }
    }

    /// Endpoint `ep` starts holding messages back; `holder` sends them.
    /// The caller came through `order_before(ep)` and checked `may_hold`,
    /// so nothing else is held; should something be, it goes out now.
    /// With `limit`, the safety net sends them once they have stayed held
    /// that long (1-2 times it) while the thread made no call that sends
    /// them; without, they wait for such a call.
    ///
    /// False (nothing held) when the net was asked for and cannot run:
    /// the caller sends the messages now.
    ///
    /// # Safety
    /// `holder` stays alive until `unhold(ep)` is called. From this call's
    /// return on, the timer may call [`Holder::send_held`] from another
    /// thread (with the net's lock taken): the caller touches nothing
    /// `send_held` touches after this call, until its next entry point,
    /// which takes the net's lock ([`hold_lock`](Self::hold_lock)) while
    /// something is held.
    pub unsafe fn hold<H: Holder + 'static>(&self, ep: *const c_void, holder: &H, limit: Option<Duration>) -> bool {
        debug_assert!(self.may_hold());
        let _locked = self.hold_lock();
        self.release_other_workers();
        if self.held.get().is_some_and(|h| h.ep != ep) {
            self.release_held();
        }
        if let Some(period) = limit {
            if !self.net_ready(period) {
                return false;
            }
        }
        let n = &self.net;
        n.holds.store(n.holds.load(Ordering::Relaxed).wrapping_add(1), Ordering::Relaxed);
        // SAFETY: pthread_self has no preconditions.
        let thread = unsafe { libc::pthread_self() };
        let holder = holder as &dyn Holder as *const dyn Holder;
        self.set_held(Some(Held { ep, holder, thread }));
        true
    }

    /// What `ep` held went out (or was dropped with its connection).
    pub fn unhold(&self, ep: *const c_void) {
        if self.held.get().is_some_and(|h| h.ep == ep) {
            self.set_held(None);
        }
    }
}
