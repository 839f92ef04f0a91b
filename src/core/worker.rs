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
use crate::ucs::async_block::{mode_of, AsyncBlock};
use crate::ucs::callbackq as callbackq;
use libc::{c_int, c_uint, c_void};
use crate::sys::epoll::Timer;
use std::cell::{Cell, UnsafeCell};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// Workers of the process holding messages back: while none does (every
/// workload but a tcp stream), the data path's ordering check is one load
/// of this counter, without following the interface to its worker. Each
/// worker counts itself here while it holds (its own thread sees its own
/// increment; other workers' holds only send it to the exact check).
static HOLDING_WORKERS: AtomicUsize = AtomicUsize::new(0);

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

/// Ticks of the safety net's timer without any new hold after which the
/// timer removes itself (the next hold adds it again): a worker that
/// stopped holding costs its process no wake-ups.
const NET_IDLE_TICKS: u32 = 100;

/// The safety net of held messages: what the worker holds goes out even
/// if its thread never calls into UCT again (it may wait for the peer by
/// other means). A timer, added by the first hold, sends what has stayed
/// held over a whole tick; while the thread keeps calling, its own calls
/// send what it holds first and the timer finds nothing to do.
///
/// The timer is a timer descriptor ([`Timer`]) watched by libucs's async
/// thread (`ucs_async_set_event_handler`, in the thread mode of the
/// worker's async context), not a libucs timer (`ucs_async_add_timer`):
/// that thread waits for its timers in whole milliseconds, rounded down,
/// and polls without sleeping for the rest of each period. With a 5 ms
/// period that was about one millisecond in five of busy polling, on a
/// thread that shares its CPU with the worker's own (UCP tag_bw 64 KiB over
/// tcp lost 15-30 % in most runs). The descriptor wakes the thread once
/// per period and no earlier.
///
/// Locking: a lock of the worker's own (`lock`), which the worker's thread
/// takes around every access to what the timer touches and a tick only
/// tries, and only when it has something to do: when the hold it saw at
/// the last tick is still there (`holds`, `held_now`), or when it has seen
/// no hold for long and removes itself. A busy thread starts new holds
/// all the time, so the tick then leaves the lock alone (a tick that took
/// it and lost its CPU would stall the thread). What the lock covers:
/// - the worker's `held` and this structure: `hold`, the slow paths of
///   `order_before` / `order_all`, the tick;
/// - the holder's own state (what its release function touches): the
///   holder takes the lock around its entry points while it may hold
///   ([`WorkerObj::hold_lock`]), except a send that starts a hold, which
///   makes the hold its last step (see `hold`).
///
/// The worker's thread takes it recursively (`depth`: nested entry points,
/// a send from a callback of progress); one atomic exchange for the
/// outermost. Only a single-threaded worker holds, so `depth` has one
/// thread. `seen` and `idle` are the ticks' own (libucs's async thread
/// runs one handler at a time), set by `net_ready` only while no timer is
/// added (so no tick runs); the other fields are only touched with the
/// lock taken, and the atomics only written so.
struct Net {
    /// The async mode the timer runs in: a thread mode (spinlock or
    /// mutex) of the worker's context, else None and no net (a signal
    /// handler would interrupt the thread in the middle of a send; a
    /// polled context runs nothing by itself).
    mode: Option<u32>,
    /// The timer's handler id (its descriptor) while it is added.
    timer: Cell<Option<c_int>>,
    /// The timer's descriptor while the timer is added: made by the
    /// first hold, closed when the tick removes the timer for idleness or
    /// by `net_stop` (after the handler is gone). A mutex, as the tick
    /// reads and closes it on the async thread; never taken on the data
    /// path.
    clock: Mutex<Option<Timer>>,
    /// Holds started so far, and the count the last tick saw: a hold
    /// still there with the count unchanged has stayed over a whole tick.
    holds: AtomicU64,
    seen: Cell<u64>,
    /// The holding endpoint (`held`'s `ep`; null: nothing held), as the
    /// tick and the worker's own ordering checks may read it without the
    /// lock. Only the worker's thread makes it non-null; a tick may clear
    /// it at any time.
    held_ep: AtomicPtr<c_void>,
    /// Ticks in a row without a new hold.
    idle: Cell<u32>,
    /// Set while a tick sends what is held: the holder must not run user
    /// callbacks (it may be on the async thread) and the count of holding
    /// workers drops only once the tick is done (`owed`).
    in_tick: Cell<bool>,
    owed: Cell<bool>,
    /// Adding the timer failed once: the worker no longer holds.
    failed: Cell<bool>,
    /// Ticks that sent held messages (reported at destroy).
    sent: Cell<u64>,
    /// Taken: by the worker's thread (`depth` deep) or by a tick.
    lock: AtomicBool,
    /// How deep the worker's thread holds `lock` (only that thread
    /// touches it).
    depth: Cell<u32>,
}

/// The net's lock taken by the worker's thread (see [`Net`]), until
/// dropped.
pub struct HoldLock<'a>(&'a Net);

impl Drop for HoldLock<'_> {
    #[inline]
    fn drop(&mut self) {
        let n = self.0;
        let d = n.depth.get() - 1;
        n.depth.set(d);
        if d == 0 {
            n.lock.store(false, Ordering::Release);
        }
    }
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
    net: Net,
}

impl WorkerObj {
    pub fn create(async_ctx: *mut ucs_async_context_t, thread_mode: ucs_thread_mode_t) -> Result<uct_worker_h, ucs_status_t> {
        let mode = mode_of(async_ctx).filter(|m| matches!(*m, UCS_ASYNC_MODE_THREAD_SPINLOCK | UCS_ASYNC_MODE_THREAD_MUTEX));
        // Only a single-threaded worker holds (see `may_hold`): no net
        // (and no lock) for the others.
        let mode = mode.filter(|_| thread_mode == UCS_THREAD_MODE_SINGLE);
        let net = Net { mode, timer: Cell::new(None), clock: Mutex::new(None), holds: AtomicU64::new(0), seen: Cell::new(0),
                        held_ep: AtomicPtr::new(std::ptr::null_mut()), idle: Cell::new(0),
                        in_tick: Cell::new(false), owed: Cell::new(false), failed: Cell::new(false),
                        sent: Cell::new(0), lock: AtomicBool::new(false), depth: Cell::new(0) };
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
        // SAFETY: projecting a field of the cell's contents; nothing is read.
        unsafe { std::ptr::addr_of_mut!((*self.base.get()).progress_q) }
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

    /// Whether the safety net can run on this worker (single-threaded,
    /// its async context in a thread mode).
    pub fn has_net(&self) -> bool {
        self.net.mode.is_some()
    }

    /// The net's lock, taken by the worker's thread, where the net can
    /// run: what its timer touches may be touched while this is held (see
    /// [`Net`]). Recursive: nested entry points take it again for a
    /// counter's increment.
    #[inline]
    pub fn hold_lock(&self) -> Option<HoldLock<'_>> {
        let n = &self.net;
        n.mode?;
        let d = n.depth.get();
        if d == 0 {
            let mut spins = 0u32;
            while n.lock.swap(true, Ordering::Acquire) {
                // A tick has it (a system call at most), on another thread
                // that may have lost its CPU to this one: spin briefly,
                // then let it run.
                spins += 1;
                if spins < 64 {
                    std::hint::spin_loop();
                } else {
                    std::thread::yield_now();
                }
            }
        }
        n.depth.set(d + 1);
        Some(HoldLock(n))
    }

    /// Take the net's lock until [`hold_unlock`](Self::hold_unlock), for a
    /// holder whose locked stretch ends in another function than it starts
    /// (false: no net, nothing taken).
    pub fn hold_lock_keep(&self) -> bool {
        self.hold_lock().map(std::mem::forget).is_some()
    }

    /// Give back a lock taken by [`hold_lock_keep`](Self::hold_lock_keep).
    pub fn hold_unlock(&self) {
        debug_assert!(self.net.depth.get() > 0);
        drop(HoldLock(&self.net));
    }

    /// Whether the safety net's timer is sending what is held: the holder
    /// must then only send (no user callback, no error handling: a failed
    /// send is left for its next progress to find).
    pub fn in_tick(&self) -> bool {
        self.net.in_tick.get()
    }

    /// Set what the worker holds, keeping `HOLDING_WORKERS` and this
    /// thread's holder in step.
    fn set_held(&self, h: Option<Held>) -> Option<Held> {
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
    /// out now. With `limit`, the safety net
    /// sends them once they have stayed held that long (1-2 times it)
    /// while the thread made no call that sends them; without, they wait
    /// for such a call.
    ///
    /// False (nothing held) when the net was asked for and cannot run:
    /// the caller sends the messages now.
    ///
    /// # Safety
    /// `arg` stays valid for `release` until `unhold(ep)` is called. From
    /// its return on, the timer may call `release` from another thread
    /// (with the net's lock taken): the caller touches
    /// nothing `release` touches after this call, until its next entry
    /// point, which takes the net's lock ([`hold_lock`](Self::hold_lock))
    /// while something is held.
    pub unsafe fn hold(&self, ep: *const c_void, release: unsafe fn(*const c_void), arg: *const c_void,
                       limit: Option<Duration>) -> bool {
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
        self.set_held(Some(Held { ep, release, arg, thread }));
        true
    }

    /// The net's timer is added (once; `period` apart). Called with the
    /// net's lock taken.
    fn net_ready(&self, period: Duration) -> bool {
        let n = &self.net;
        let Some(mode) = n.mode else { return false };
        if n.timer.get().is_some() {
            return true;
        }
        if n.failed.get() {
            return false;
        }
        match self.start_clock(period) {
            Ok(fd) => {
                // SAFETY: the worker outlives the handler: the tick removes
                // it, or `net_stop` does (synchronously) before the worker
                // is freed; the descriptor stays open until then. No async
                // context (see `tick`); edge-triggered, as the tick reads
                // the descriptor only once per wake-up.
                let status = unsafe {
                    ucs::ucs_async_set_event_handler(mode, fd, ucs::EVENT_READ | ucs::EVENT_EDGE, Some(on_tick),
                                                     self as *const Self as *mut c_void, std::ptr::null_mut())
                };
                if status == UCS_OK {
                    n.timer.set(Some(fd));
                    n.idle.set(0);
                    n.seen.set(n.holds.load(Ordering::Relaxed));
                    return true;
                }
                crate::debug!("worker {:p}: no timer for held messages ({}): messages are no longer held", self,
                              status);
            }
            Err(e) => {
                crate::debug!("worker {:p}: no timer descriptor for held messages ({}): messages are no longer held",
                              self, e);
            }
        }
        n.failed.set(true);
        *self.clock() = None;
        false
    }

    /// The timer's descriptor, made if needed and started `period` apart.
    fn start_clock(&self, period: Duration) -> Result<c_int, crate::sys::Errno> {
        let mut clock = self.clock();
        let made = match clock.take() {
            Some(t) => t,
            None => Timer::new()?,
        };
        let t = clock.insert(made);
        t.start(period)?;
        Ok(t.as_raw_fd())
    }

    /// The timer's descriptor, locked (a poisoned lock is taken as it is:
    /// nothing panics while holding it).
    fn clock(&self) -> std::sync::MutexGuard<'_, Option<Timer>> {
        self.net.clock.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A tick of the net's timer, on libucs's async thread (one per
    /// process, which runs one handler at a time: two ticks never overlap).
    /// The handler is not tied to the worker's async context: libucs would
    /// otherwise defer a tick that finds the context blocked to the next
    /// progress call of the context's owner, which is the call that may
    /// never come, and the descriptor, not read, would not expire again.
    /// The net's own lock keeps the tick and the worker's thread apart.
    fn tick(&self, id: c_int) {
        let n = &self.net;
        if let Some(t) = self.clock().as_ref() {
            // Read, so that it expires again (a periodic timer descriptor
            // waits for its reader); a failure leaves it as it is.
            let _ = t.drain();
        }
        let holds = n.holds.load(Ordering::Relaxed);
        let fresh = holds != n.seen.get();
        n.seen.set(holds);
        if fresh {
            // A hold started since the last tick: the thread is calling,
            // and its calls send what it holds.
            n.idle.set(0);
            return;
        }
        if n.held_ep.load(Ordering::Relaxed).is_null() {
            n.idle.set(n.idle.get() + 1);
            if n.idle.get() < NET_IDLE_TICKS {
                return;
            }
        }
        if n.lock.compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed).is_err() {
            // The thread is inside UCT: it sends what it holds.
            return;
        }
        self.tick_locked(id, holds);
        n.lock.store(false, Ordering::Release);
    }

    /// The tick's work with the lock taken: send a hold that stayed over a
    /// whole tick, or remove the timer after `NET_IDLE_TICKS` without one.
    fn tick_locked(&self, id: c_int, holds: u64) {
        let n = &self.net;
        if n.timer.get() != Some(id) || n.holds.load(Ordering::Relaxed) != holds {
            return;
        }
        if self.held.get().is_some() {
            n.sent.set(n.sent.get() + 1);
            n.in_tick.set(true);
            self.release_held();
            n.in_tick.set(false);
            if n.owed.replace(false) {
                HOLDING_WORKERS.fetch_sub(1, Ordering::Release);
            }
        } else if n.idle.get() >= NET_IDLE_TICKS {
            n.timer.set(None);
            // SAFETY: our handler; libucs lets a handler remove itself (not
            // waiting for itself to return).
            unsafe { ucs::ucs_async_remove_handler(id, 0) };
            // No longer watched: the descriptor goes too (an idle worker
            // keeps no descriptor of the net; the next hold makes one).
            *self.clock() = None;
        }
    }

    /// Remove the net's timer, if it is added (waiting for a tick in
    /// progress to return; one that runs after this finds no timer and
    /// does nothing). A holder's interface calls this when it closes (the
    /// next hold adds the timer again): the async thread libucs started
    /// for it goes when nothing else uses it, as it came.
    pub fn net_stop(&self) {
        let timer = {
            let _locked = self.hold_lock();
            self.net.timer.take()
        };
        if let Some(id) = timer {
            // SAFETY: our handler, added by `net_ready`.
            unsafe { ucs::ucs_async_remove_handler(id, 1) };
        }
        // No tick runs any more: the descriptor goes.
        *self.clock() = None;
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

/// The net's timer.
///
/// # Safety
/// `arg` is the worker that added the timer, alive until the timer is
/// removed (see `net_ready`). Its thread uses it at the same time: the
/// tick touches only atomics, its own cells (`seen`, `idle`: one tick at a
/// time) and, with the net's lock taken, what the lock covers (see
/// [`Net`]).
unsafe extern "C" fn on_tick(id: c_int, _events: c_uint, arg: *mut c_void) {
    // SAFETY: see the function contract.
    let w = unsafe { &*(arg as *const WorkerObj) };
    w.tick(id);
}
