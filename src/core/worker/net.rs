//! The safety net of held messages: a timer on libucs's async thread that
//! sends what a worker has held over a whole period, and the lock that
//! keeps the timer and the worker's thread apart.

use super::WorkerObj;
use crate::abi::*;
use crate::sys::epoll::Timer;
use crate::ucs;
use libc::{c_int, c_uint, c_void};
use std::cell::Cell;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

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
/// - the holder's own state (what its `Holder::send_held` touches): the
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
pub(super) struct Net {
    /// The async mode the timer runs in: a thread mode (spinlock or
    /// mutex) of the worker's context, else None and no net (a signal
    /// handler would interrupt the thread in the middle of a send; a
    /// polled context runs nothing by itself).
    pub(super) mode: Option<u32>,
    /// The timer's handler id (its descriptor) while it is added.
    pub(super) timer: Cell<Option<c_int>>,
    /// The timer's descriptor while the timer is added: made by the
    /// first hold, closed when the tick removes the timer for idleness or
    /// by `net_stop` (after the handler is gone). A mutex, as the tick
    /// reads and closes it on the async thread; never taken on the data
    /// path.
    pub(super) clock: Mutex<Option<Timer>>,
    /// Holds started so far, and the count the last tick saw: a hold
    /// still there with the count unchanged has stayed over a whole tick.
    pub(super) holds: AtomicU64,
    pub(super) seen: Cell<u64>,
    /// The holding endpoint (`held`'s `ep`; null: nothing held), as the
    /// tick and the worker's own ordering checks may read it without the
    /// lock. Only the worker's thread makes it non-null; a tick may clear
    /// it at any time.
    pub(super) held_ep: AtomicPtr<c_void>,
    /// Ticks in a row without a new hold.
    pub(super) idle: Cell<u32>,
    /// Set while a tick sends what is held: the holder must not run user
    /// callbacks (it may be on the async thread) and the count of holding
    /// workers drops only once the tick is done (`owed`).
    pub(super) in_tick: Cell<bool>,
    pub(super) owed: Cell<bool>,
    /// Adding the timer failed once: the worker no longer holds.
    pub(super) failed: Cell<bool>,
    /// Ticks that sent held messages (reported at destroy).
    pub(super) sent: Cell<u64>,
    /// Taken: by the worker's thread (`depth` deep) or by a tick.
    pub(super) lock: AtomicBool,
    /// How deep the worker's thread holds `lock` (only that thread
    /// touches it).
    pub(super) depth: Cell<u32>,
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

impl Net {
    /// A net whose timer runs in async `mode` (None: no net).
    pub(super) fn new(mode: Option<u32>) -> Net {
        Net { mode, timer: Cell::new(None), clock: Mutex::new(None), holds: AtomicU64::new(0), seen: Cell::new(0),
              held_ep: AtomicPtr::new(std::ptr::null_mut()), idle: Cell::new(0), in_tick: Cell::new(false),
              owed: Cell::new(false), failed: Cell::new(false), sent: Cell::new(0), lock: AtomicBool::new(false),
              depth: Cell::new(0) }
    }
}

impl WorkerObj {
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

    /// The net's timer is added (once; `period` apart). Called with the
    /// net's lock taken.
    pub(super) fn net_ready(&self, period: Duration) -> bool {
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
                super::hold::HOLDING_WORKERS.fetch_sub(1, Ordering::Release);
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
