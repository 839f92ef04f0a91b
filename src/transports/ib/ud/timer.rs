//! Time-driven work: the retransmission timers of the endpoints, swept
//! from progress and from a libucs async timer on the worker's async
//! context (so that a peer is acknowledged, asked for acks, and timed out
//! even while the user does not progress).
//!
//! Locking: the async timer runs with the worker's async context blocked
//! by libucs (a handler that cannot take it is deferred); every entry
//! point of the transport holds the same block ([`Guard`]), so the
//! interface state is never touched by two threads at once. The timer
//! only posts packets and marks endpoints; user callbacks (completions,
//! error handlers, AM handlers) run from progress only.

use super::iface::UdIface;
use super::proto;
use super::xfer;
use crate::abi::*;
use crate::core::iface::Iface;
use crate::ucs::async_block::{mode_of, AsyncBlock};
use libc::{c_int, c_uint, c_void};

/// The worker's async context blocked for the duration of an entry point.
pub struct Guard(#[allow(dead_code)] Option<AsyncBlock>);

pub fn guard(iface: &Iface<UdIface>) -> Guard {
    Guard(AsyncBlock::new(iface.hdr.worker().async_ctx))
}

/// # Safety
/// `arg` is the interface the timer was added for; the timer is removed
/// (synchronously) before the interface is freed.
unsafe extern "C" fn on_timer(_id: c_int, _events: c_uint, arg: *mut c_void) {
    // SAFETY: see the function contract.
    let iface = unsafe { &*(arg as *const Iface<UdIface>) };
    async_progress(iface);
}

/// The async side's share of progress, while the user may not progress:
/// receive (acknowledging the peer and keeping active messages for the
/// user's next progress), reap send completions, run the timers.
fn async_progress(iface: &Iface<UdIface>) {
    let s = &iface.tl;
    s.in_async.set(true);
    super::iface::rx_progress(iface, s.rx_async_max_poll as usize);
    super::iface::tx_progress(iface);
    s.in_async.set(false);
    sweep(iface, proto::now());
    send_owed_all(iface);
}

/// The completion channel became readable (a solicited packet arrived
/// while the user may not progress): acknowledge the events, re-arm, and
/// tell the user through its async event callback.
///
/// # Safety
/// As [`on_timer`].
unsafe extern "C" fn on_event(_id: c_int, _events: c_uint, arg: *mut c_void) {
    // SAFETY: see the function contract.
    let iface = unsafe { &*(arg as *const Iface<UdIface>) };
    let s = &iface.tl;
    // A failure is logged there; the user is told either way.
    let _ = crate::transports::ib::device::drain_cq_events(&s.channel, &s.tx_cq, &s.rx_cq, "ud_verbs");
    let _ = s.rx_cq.req_notify(true);
    if let (Some(cb), arg) = s.async_cb {
        // SAFETY: the user's callback with the argument it gave at open.
        unsafe { cb(arg, 0) };
    }
}

/// At open: the completion channel's handler (a solicited packet wakes a
/// user waiting in the async event callback). The timer follows progress
/// ([`progress_changed`]).
pub fn start(iface: &Iface<UdIface>) {
    let ctx = iface.hdr.worker().async_ctx;
    if let (Some(mode), Some(_)) = (mode_of(ctx), iface.tl.async_cb.0) {
        let fd = iface.tl.channel.fd();
        // SAFETY: the interface outlives the handler (removed in `stop`);
        // the descriptor is the interface's completion channel.
        let status = unsafe {
            crate::ucs::set_event_handler(mode, fd, crate::ucs::EVENT_READ, on_event, iface as *const _ as *mut c_void, ctx)
        };
        if status == UCS_OK {
            iface.tl.async_fd.set(Some(fd));
            let _ = iface.tl.rx_cq.req_notify(true);
        } else {
            crate::debug!("ud_verbs: ucs_async_set_event_handler failed ({})", status);
        }
    }
}

/// The async timer runs while progress is enabled, as the original's: an
/// interface libucp keeps only for wireup then costs the worker's async
/// thread nothing (libucs wakes for a timer, and spins through the last
/// millisecond before it is due, on the CPU the user's thread polls on).
pub fn progress_changed(iface: &Iface<UdIface>) {
    if iface.hdr.progress_flags() != 0 {
        if iface.tl.async_timer.get().is_none() {
            start_timer(iface);
        }
    } else if let Some(id) = iface.tl.async_timer.take() {
        // sync: waits for a running timer callback
        crate::ucs::remove_handler(id, true);
    }
}

fn start_timer(iface: &Iface<UdIface>) {
    let ctx = iface.hdr.worker().async_ctx;
    let Some(mode) = mode_of(ctx) else {
        crate::debug!("ud_verbs: no usable async context: timers run from progress only");
        return;
    };
    let ticks = (iface.tl.p.async_tick * crate::ucs::clocks_per_sec()) as u64;
    // SAFETY: the interface outlives the timer (removed in `stop`).
    match unsafe { crate::ucs::add_timer(mode, ticks.max(1), on_timer, iface as *const _ as *mut c_void, ctx) } {
        Ok(id) => iface.tl.async_timer.set(Some(id)),
        Err(status) => {
            crate::debug!("ud_verbs: ucs_async_add_timer failed ({}): timers run from progress only", status)
        }
    }
}

pub fn stop(iface: &Iface<UdIface>) {
    // Our handler and timer; sync waits for a running callback.
    if let Some(fd) = iface.tl.async_fd.take() {
        crate::ucs::remove_handler(fd, true);
    }
    if let Some(id) = iface.tl.async_timer.take() {
        crate::ucs::remove_handler(id, true);
    }
}

/// Run every endpoint's retransmission timer; drop closed endpoints whose
/// linger time is over.
pub fn sweep(iface: &Iface<UdIface>, t: f64) {
    let s = &iface.tl;
    let eps: Vec<_> = s.eps.borrow().iter().flatten().cloned().collect();
    for ep in eps {
        let mut st = ep.borrow_mut();
        proto::check_timer(iface, &mut st, t);
        if let Some(c) = st.closed_at {
            if st.window.is_empty() && t - c > s.p.linger_timeout {
                let id = st.id;
                drop(st);
                forget(s, id);
            }
        }
    }
}

/// Remove an endpoint from the table and from connection matching.
pub fn forget(s: &UdIface, id: u32) {
    s.remove_ep(id);
    for e in s.conn.borrow_mut().values_mut() {
        e.eps.retain(|_, v| *v != id);
    }
}

/// Send the control packets endpoints owe (requests, replies, acks).
pub fn send_owed_all(iface: &Iface<UdIface>) {
    let s = &iface.tl;
    let n = s.owed.borrow().len();
    for _ in 0..n {
        let Some(id) = s.owed.borrow_mut().pop_front() else { break };
        let Some(ep) = s.ep(id) else { continue };
        let mut st = ep.borrow_mut();
        st.owed_queued = false;
        let mut ok = true;
        if st.owed.creq && !st.connected() {
            ok &= super::conn::send_creq(s, &mut st).is_ok();
        }
        if ok && st.owed.crep {
            ok &= super::conn::send_crep(s, &mut st).is_ok();
        }
        if ok {
            ok &= proto::send_owed(s, &mut st);
        }
        if !ok {
            s.queue_owed(&mut st);
        }
    }
}

/// Report the endpoints whose peer timed out (from progress).
pub fn report_timeouts(iface: &Iface<UdIface>) {
    let s = &iface.tl;
    let ids: Vec<u32> = std::mem::take(&mut *s.timeouts.borrow_mut());
    for id in ids {
        let Some(ep) = s.ep(id) else { continue };
        let (handle, private, closed) = {
            let st = ep.borrow();
            (st.ep, st.private, st.closed_at.is_some())
        };
        if closed || (private && handle.is_null()) {
            crate::debug!("ud_verbs: ep {} timed out after close", id);
            continue;
        }
        if handle.is_null() {
            continue;
        }
        if iface.hdr.err_handler.is_none() {
            crate::error!("ud_verbs: ep {:p}: the peer did not acknowledge for {:.1} s; no error handler, \
                           the endpoint fails", handle, s.p.peer_timeout);
            continue;
        }
        crate::debug!("ud_verbs: ep {:p}: timeout of {:.1} s", handle, s.p.peer_timeout);
        iface.hdr.schedule_ep_err_status(handle, UCS_ERR_ENDPOINT_TIMEOUT);
    }
}

/// `iface_progress`.
pub fn progress(iface: &Iface<UdIface>) -> u32 {
    let s = &iface.tl;
    let mut count = if s.rx_queued.borrow().is_empty() {
        super::iface::rx_progress(iface, s.rx_max_poll as usize)
    } else {
        super::iface::rx_queued_progress(iface, s.rx_max_poll as usize)
    };
    if count == 0 {
        count += super::iface::tx_progress(iface);
    }
    // The bookkeeping below is skipped when its queues are empty: an empty
    // pass must stay short, it delays the next packet.
    if !s.owed.borrow().is_empty() {
        send_owed_all(iface);
    }
    // The timers have a resolution of a quarter tick: look at the clock
    // every 64th progress, sweep when a quarter tick has passed (an empty
    // poll must stay cheap, it is the latency of the next packet).
    let polls = s.polls.get().wrapping_add(1);
    s.polls.set(polls);
    if polls % 64 == 0 {
        let t = proto::now();
        if t >= s.next_sweep.get() {
            s.next_sweep.set(t + s.p.timer_tick / 4.0);
            sweep(iface, t);
            if !s.owed.borrow().is_empty() {
                send_owed_all(iface);
            }
        }
    }
    if !s.timeouts.borrow().is_empty() {
        report_timeouts(iface);
    }
    if !s.arb.borrow().is_empty() {
        xfer::dispatch_pending(iface);
    }
    if !s.done.borrow().is_empty() {
        proto::run_done(s);
    }
    count
}
