//! Handlers of a libucs async context: an event on a descriptor or a
//! timer runs a callback from the async thread (or from the context's
//! progress in poll mode), until the handler is removed.

use super::{ucs_async_add_timer, ucs_async_remove_handler, ucs_async_set_event_handler};
use crate::abi::{ucs_async_context_t, ucs_status_t, UCS_OK};
use libc::{c_int, c_uint, c_void};

/// A handler's callback: its id (the descriptor or the timer id), the
/// events seen and the argument it was added with.
pub type AsyncCallback = unsafe extern "C" fn(id: c_int, events: c_uint, arg: *mut c_void);

/// Run `cb(fd, events, arg)` when `fd` has one of `events`
/// (`super::EVENT_*`); the handler's id is `fd`.
///
/// # Safety
/// `arg` stays valid for `cb` until [`remove_handler`] with `sync` returned
/// for `fd`; `ctx` is a live async context of mode `mode`, alive as long.
pub unsafe fn set_event_handler(mode: u32, fd: c_int, events: c_uint, cb: AsyncCallback, arg: *mut c_void,
                                ctx: *mut ucs_async_context_t) -> ucs_status_t {
    // SAFETY: the function's contract.
    unsafe { ucs_async_set_event_handler(mode, fd, events, Some(cb), arg, ctx) }
}

/// Run `cb(id, 0, arg)` every `interval` CPU clocks; the timer's id, or
/// why libucs refused.
///
/// # Safety
/// As [`set_event_handler`], for the returned id.
pub unsafe fn add_timer(mode: u32, interval: u64, cb: AsyncCallback, arg: *mut c_void, ctx: *mut ucs_async_context_t)
                        -> Result<c_int, ucs_status_t> {
    let mut id: c_int = -1;
    // SAFETY: the function's contract; `id` is a local libucs fills in.
    let status = unsafe { ucs_async_add_timer(mode, interval, Some(cb), arg, ctx, &mut id) };
    if status == UCS_OK { Ok(id) } else { Err(status) }
}

/// Remove the handler `id` (a descriptor or a timer id); with `sync`, wait
/// until a callback of it that is running has returned. An unknown id is
/// refused by libucs.
pub fn remove_handler(id: c_int, sync: bool) -> ucs_status_t {
    // SAFETY: libucs looks the id up in its own table.
    unsafe { ucs_async_remove_handler(id, sync as c_int) }
}
