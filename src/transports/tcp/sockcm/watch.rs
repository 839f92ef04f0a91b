//! Event-driven operation: the CM's sockets in an epoll set of its own,
//! which libucs's async thread watches for the worker's async context (in
//! its thread modes), as UCX's CM registers its sockets there. A process
//! that sleeps on the worker's event descriptor is then woken by what
//! happens on its connections: the events are handled, and the user's
//! callbacks run, on the async thread with the context blocked, and libucp
//! signals the worker from its callbacks.
//!
//! What each socket waits for follows its state ([`SockCmTl::sync`]): a
//! listener is readable (none while paused), a client connecting is
//! writable, every other endpoint still watched is readable, and writable
//! while it has bytes to send; an endpoint no longer watched leaves the
//! set. A one-shot timer in the set wakes the thread for the earliest
//! handshake deadline or paused listener.
//!
//! A worker whose async context is polled or signal-driven keeps the
//! progress callback of `progress` instead (a signal handler must not run
//! the CM's callbacks, and a polled context runs nothing by itself).

use super::state::{CmIface, CmState, SockCmTl};
use crate::abi::*;
use crate::sys::epoll::{Epoll, Event, Timer, EV_READ, EV_WRITE};
use crate::sys::errno_str;
use libc::{c_int, c_uint, c_void};
use std::os::fd::AsRawFd;
use std::time::Instant;

/// The tag of the timer in the set (sockets are tagged with their ids,
/// which start at 1).
const CLOCK_TAG: u64 = 0;

/// The CM's epoll set, its timer, and when the timer is set to expire.
pub(in super::super) struct Watch {
    set: Epoll,
    clock: Timer,
}

impl Watch {
    /// A new, empty set with its timer in it.
    pub(super) fn new() -> Result<Watch, crate::sys::Errno> {
        let set = Epoll::new()?;
        let clock = Timer::new()?;
        set.add(&clock, EV_READ, CLOCK_TAG)?;
        Ok(Watch { set, clock })
    }

    pub(super) fn fd(&self) -> c_int {
        self.set.as_raw_fd()
    }
}

impl SockCmTl {
    /// Make the epoll set follow the state of socket `id` (an endpoint or a
    /// listener; one gone needs nothing: closing its socket took it out).
    /// Nothing without a set (the progress callback polls instead).
    pub(super) fn sync(&self, s: &mut CmState, id: u64) {
        let Some(w) = &self.watch else { return };
        let (sock, armed, want, what) = if let Some(ep) = s.eps.get_mut(&id) {
            let want = if !ep.polled {
                0
            } else if ep.connecting() {
                EV_WRITE
            } else if ep.tx_pending() {
                EV_READ | EV_WRITE
            } else {
                EV_READ
            };
            (&ep.sock, &mut ep.armed, want, "endpoint")
        } else if let Some(l) = s.listeners.get_mut(&id) {
            let want = if l.paused_until.is_some() { 0 } else { EV_READ };
            (&l.sock, &mut l.armed, want, "listener")
        } else {
            return;
        };
        if *armed == want {
            return;
        }
        match w.set.update(sock, *armed, want, id) {
            Ok(()) => *armed = want,
            Err((op, e)) => {
                // Only a broken descriptor gets here: the socket is then
                // reported by the next event on it, or never (it is closed
                // with its owner).
                crate::error!("tcp sockcm: epoll_ctl({}) on the {} socket fd {} failed: {}",
                              Epoll::op_name(op), what, sock.fd(), errno_str(e as i32));
            }
        }
    }

    /// Take endpoint `id` out of this CM's set (it moves to another CM).
    pub(super) fn unwatch(&self, s: &mut CmState, id: u64) {
        let Some(ep) = s.eps.get_mut(&id) else { return };
        if let Some(w) = &self.watch {
            if ep.armed != 0 {
                let _ = w.set.delete(&ep.sock);
            }
        }
        ep.armed = 0;
    }

    /// Set the timer to the earliest handshake deadline or end of a
    /// listener's pause (stopped when there is none).
    pub(super) fn arm_clock(&self, s: &mut CmState) {
        let Some(w) = &self.watch else { return };
        let paused = s.listeners.values().filter_map(|l| l.paused_until).min();
        let next = match (s.handshake_deadlines.front().map(|&(t, _)| t), paused) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        if next == s.clock_at {
            return;
        }
        let r = match next {
            Some(t) => w.clock.start_once(t.saturating_duration_since(Instant::now())),
            None => w.clock.stop(),
        };
        match r {
            Ok(()) => s.clock_at = next,
            Err(e) => crate::error!("tcp sockcm: setting the CM's timer failed: {}", errno_str(e as i32)),
        }
    }

    /// The timer expired: expire handshakes, end the listeners' pauses
    /// that are over, and set it again.
    fn on_clock(&self) {
        let Some(w) = &self.watch else { return };
        let _ = w.clock.drain();
        let now = Instant::now();
        let mut s = self.lock();
        s.clock_at = None;
        self.expire_handshakes(&mut s, now);
        let resumed: Vec<u64> = s.listeners.iter_mut()
            .filter(|(_, l)| l.paused_until.is_some_and(|t| t <= now))
            .map(|(&id, l)| {
                l.paused_until = None;
                id
            })
            .collect();
        for id in resumed {
            self.sync(&mut s, id);
        }
        self.arm_clock(&mut s);
    }

    /// Handle what the set reports, until it reports nothing. Runs on the
    /// async thread with the worker's async context blocked (or from the
    /// context's owner, for an event libucs found it blocked for).
    fn handle_events(&self) -> u32 {
        let Some(w) = &self.watch else { return 0 };
        let mut out = [Event::EMPTY; 16];
        let mut count = 0;
        loop {
            let n = w.set.poll(&mut out);
            for ev in &out[..n] {
                count += 1;
                let id = ev.data();
                if id == CLOCK_TAG {
                    self.on_clock();
                    continue;
                }
                let is_listener = self.lock().listeners.contains_key(&id);
                if is_listener {
                    self.accept_all(id);
                } else {
                    // epoll's event bits are poll's.
                    self.ep_event(id, ev.events() as libc::c_short);
                }
                let mut s = self.lock();
                self.sync(&mut s, id);
            }
            if n < out.len() {
                return count;
            }
        }
    }
}

/// Start watching: the set goes to libucs's async thread for the worker's
/// context. False (nothing added) when the context is not in a thread
/// mode, or libucs refused.
///
/// # Safety
/// `iface` is the CM's boxed iface, alive until [`stop`] returned; the
/// worker's async context outlives the CM.
pub(super) unsafe fn start(iface: *const CmIface, async_ctx: *mut ucs_async_context_t) -> bool {
    // SAFETY: see the function contract.
    let Some(w) = (unsafe { &(*iface).tl.watch }) else { return false };
    let Some(mode) = crate::ucs::async_block::mode_of(async_ctx)
        .filter(|m| matches!(*m, UCS_ASYNC_MODE_THREAD_SPINLOCK | UCS_ASYNC_MODE_THREAD_MUTEX))
    else {
        return false;
    };
    // SAFETY: the handler's argument is the iface, alive until `stop`
    // removes the handler (synchronously); the set stays open as long.
    let status = unsafe {
        crate::ucs::set_event_handler(mode, w.fd(), crate::ucs::EVENT_READ, on_events, iface as *mut c_void, async_ctx)
    };
    if status != UCS_OK {
        crate::diag!("tcp sockcm: the async thread does not watch the CM ({}); it runs from progress",
                     crate::core::log::status_str(status));
        return false;
    }
    true
}

/// Stop watching (waits for a handler that is running to return).
pub(super) fn stop(iface: &CmIface) {
    if let Some(w) = &iface.tl.watch {
        // Our handler, added by `start`; sync: it does not run after this
        // returns.
        crate::ucs::remove_handler(w.fd(), true);
    }
}

/// The async thread's handler of the CM's set.
///
/// # Safety
/// `arg` is the CM's iface, alive while the handler is added (see `start`).
unsafe extern "C" fn on_events(_id: c_int, _events: c_uint, arg: *mut c_void) {
    let _ = std::panic::catch_unwind(|| {
        // SAFETY: see the function contract.
        let iface = unsafe { &*(arg as *const CmIface) };
        iface.tl.handle_events()
    });
}
