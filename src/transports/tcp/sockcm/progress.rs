//! Event handling: the CM's progress callback on the worker polls every
//! listener and endpoint socket without blocking, turns what it sees into
//! state changes under the lock, and then runs the user callbacks those
//! changes call for with no lock held.

use super::state::{pending, st, Call, CmIface, SockCmTl};
use crate::core::cm;
use crate::abi::*;
use crate::sys::epoll::poll_now;
use libc::{c_uint, c_void};
use std::sync::atomic::Ordering;
use std::time::Instant;

impl SockCmTl {
    /// Run a deferred call with no lock held.
    pub(super) fn run(&self, call: Call) {
        match call {
            Call::None => {}
            Call::Resolve { handle, cbs, dev, status, id } => {
                if cbs.resolve.is_none() {
                    return;
                }
                crate::debug!("tcp sockcm: client ep {:p} resolved on {} ({})", handle, dev,
                              crate::core::log::status_str(status));
                let r = cm::invoke_resolve(&cbs, &dev, status);
                if r != UCS_OK {
                    crate::diag!("tcp sockcm: resolve callback failed: {}", crate::core::log::status_str(r));
                    let mut s = self.lock();
                    if let Some(ep) = s.eps.get_mut(&id) {
                        ep.flags |= st::UPPER_CB_FAILED | st::FAILED;
                        ep.polled = false;
                    }
                }
            }
            Call::PackAndSend { handle, cbs, dev, id } => {
                let r = self.invoke_pack(cbs, &dev);
                let call = {
                    let mut s = self.lock();
                    match r {
                        Ok(data) => match self.queue_msg(&mut s, id, &data, UCS_OK) {
                            Ok(()) => {
                                if let Some(ep) = s.eps.get_mut(&id) {
                                    ep.flags |= st::PACKED;
                                }
                                Call::None
                            }
                            Err(st) => self.fail(&mut s, id, st),
                        },
                        Err(_) => {
                            if let Some(ep) = s.eps.get_mut(&id) {
                                ep.flags |= st::UPPER_CB_FAILED | st::FAILED;
                                ep.polled = false;
                            }
                            Call::None
                        }
                    }
                };
                let _ = handle;
                self.run(call);
            }
            Call::ClientConnect { handle, cbs, remote, status } => {
                let remote = remote.as_ref().map(|(a, d)| (a.as_slice(), d.data()));
                // SAFETY: a live endpoint of this CM with its user's callbacks.
                unsafe { cm::invoke_client_connect(handle, &cbs, remote, status) };
            }
            // SAFETY: a live endpoint of this CM with its user's callbacks.
            Call::ServerNotify { handle, cbs, status } => unsafe { cm::invoke_server_notify(handle, &cbs, status) },
            // SAFETY: a live endpoint of this CM with its user's callbacks.
            Call::Disconnect { handle, cbs } => unsafe { cm::invoke_disconnect(handle, &cbs) },
            Call::ConnRequest { listener, cb, user_data, handle, dev, dev_addr, data, peer } => {
                // SAFETY: the ep's iface is this CM's; remember the request
                // so that uct_ep_create/uct_listener_reject can check it.
                let iface = unsafe { (*handle).iface } as usize;
                pending().insert(handle as usize, iface);
                crate::debug!("tcp sockcm: connection request {:p} on {} with {} bytes of private data",
                              handle, dev, data.data().len());
                let req = cm::ConnRequest { dev: &dev, request: handle as uct_conn_request_h, dev_addr: &dev_addr,
                                            data: data.data(), client: peer };
                // SAFETY: a live listener of this CM with its user's callback;
                // the request is pending for uct_ep_create/uct_listener_reject.
                unsafe { cm::invoke_conn_request(listener, cb, user_data, &req) };
            }
        }
    }

    /// Whether the CM may have an endpoint or a listener: while it has
    /// none, the worker's progress returns at once (no lock taken, and not
    /// the stack frame of `progress`).
    #[inline]
    pub(super) fn is_busy(&self) -> bool {
        self.busy.load(Ordering::Acquire)
    }

    /// One round of socket polling. Events are handled, and the user's
    /// callbacks called, with the worker's async context blocked by this
    /// thread, as UCX's CM does from its async handlers (libucp asserts it).
    #[inline(never)]
    pub(super) fn progress(&self, async_ctx: *mut ucs_async_context_t) -> u32 {
        let mut fds: Vec<libc::pollfd> = Vec::new();
        let mut keys: Vec<(bool, u64)> = Vec::new();
        {
            let mut s = self.lock();
            if s.eps.is_empty() && s.listeners.is_empty() {
                self.busy.store(false, Ordering::Release);
                return 0;
            }
            let mut now = None;
            if !s.handshake_deadlines.is_empty() {
                let t = *now.get_or_insert_with(Instant::now);
                self.expire_handshakes(&mut s, t);
            }
            for (&id, l) in s.listeners.iter_mut() {
                if let Some(until) = l.paused_until {
                    if *now.get_or_insert_with(Instant::now) < until {
                        continue;
                    }
                    l.paused_until = None;
                }
                fds.push(libc::pollfd { fd: l.sock.fd(), events: libc::POLLIN, revents: 0 });
                keys.push((true, id));
            }
            for (&id, ep) in &s.eps {
                if !ep.polled {
                    continue;
                }
                let mut ev = 0;
                if ep.connecting() {
                    ev |= libc::POLLOUT;
                } else {
                    ev |= libc::POLLIN;
                    if ep.tx_pending() {
                        ev |= libc::POLLOUT;
                    }
                }
                fds.push(libc::pollfd { fd: ep.fd(), events: ev, revents: 0 });
                keys.push((false, id));
            }
        }
        if fds.is_empty() {
            return 0;
        }
        // The descriptor numbers were copied under the lock: a socket
        // closed since then shows as POLLNVAL, and its state is gone when
        // the event is looked up.
        match poll_now(&mut fds) {
            Ok(n) if n > 0 => {}
            _ => return 0,
        }
        let _blocked = crate::ucs::async_block::AsyncBlock::new(async_ctx);
        let mut count = 0;
        for (pfd, &(is_listener, id)) in fds.iter().zip(keys.iter()) {
            if pfd.revents == 0 {
                continue;
            }
            count += 1;
            if is_listener {
                self.accept_all(id);
            } else {
                self.ep_event(id, pfd.revents);
            }
        }
        count
    }

    /// Handle what polling saw on endpoint `id`.
    pub(super) fn ep_event(&self, id: u64, revents: libc::c_short) {
        let call = {
            let mut s = self.lock();
            let Some(ep) = s.eps.get(&id) else { return };
            if !ep.polled {
                return;
            }
            if ep.connecting() {
                self.on_connected(&mut s, id)
            } else if revents & (libc::POLLIN | libc::POLLERR | libc::POLLHUP) != 0 {
                self.on_readable(&mut s, id)
            } else if revents & libc::POLLOUT != 0 {
                match self.flush_tx(&mut s, id) {
                    Ok(()) => Call::None,
                    Err(st) => self.fail(&mut s, id, st),
                }
            } else {
                Call::None
            }
        };
        self.run(call);
    }
}

/// The CM's callback on the worker's progress queue (registered by `open`).
///
/// # Safety
///
/// `arg` must be the CM's iface (a boxed `Iface<SockCmTl>`) that is still
/// alive, on a worker that is still alive; `open` registers it so and the
/// CM removes the callback before the iface goes.
pub(super) unsafe extern "C" fn progress_cb(arg: *mut c_void) -> c_uint {
    let r = std::panic::catch_unwind(|| {
        // SAFETY: `arg` is the CM's iface, alive until the callback is
        // removed (when the CM closes).
        let iface = unsafe { &*(arg as *const CmIface) };
        if !iface.tl.is_busy() {
            return 0;
        }
        // SAFETY: the worker outlives the CMs opened on it.
        let async_ctx = unsafe { (*iface.hdr.worker).async_ctx };
        iface.tl.progress(async_ctx)
    });
    r.unwrap_or(0)
}
