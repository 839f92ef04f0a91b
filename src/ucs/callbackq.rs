//! The worker's progress queue, through one interface for every UCX release.
//!
//! libucs owns the queue (the inline `uct_worker_progress` of the C headers
//! walks its fast-path array), so we call libucs's functions on it. Their
//! signatures changed in 1.16, when the queue was rewritten:
//!
//! * up to 1.15, `add_safe` takes flags: `UCS_CALLBACKQ_FLAG_FAST` asks for
//!   the fast path, `UCS_CALLBACKQ_FLAG_ONESHOT` makes libucs drop the
//!   callback after its first call;
//! * from 1.16, `add_safe` takes no flags (libucs decides where a callback
//!   goes) and `remove_safe` returns the argument the callback was added
//!   with. A one-shot callback keeps a callback id only if we wrap it: the
//!   wrapper here removes itself before calling the user's function.
//!
//! Ids handed out for one-shot callbacks on 1.16+ are ours (from
//! [`ONESHOT_ID_START`] on) and refer to a table entry, never to a libucs id
//! that may already have been reused: removing a one-shot callback that has
//! already run, or twice, does nothing.

use crate::abi::*;
use libc::{c_int, c_uint, c_void};

/// Add `cb(arg)` to the queue; `flags` are `UCS_CALLBACKQ_FLAG_*`. Returns
/// the id to pass to [`remove_safe`].
///
/// # Safety
/// `q` is a live, initialised queue; `cb` may be called with `arg` from
/// any thread that progresses the queue until it is removed.
pub unsafe fn add_safe(q: *mut ucs_callbackq_t, cb: ucs_callback_t, arg: *mut c_void, flags: c_uint) -> c_int {
    #[cfg(not(ucx_since_1_16))]
    {
        // SAFETY: see the function contract; libucs takes the flags as is.
        unsafe { super::ucs_callbackq_add_safe(q, cb, arg, flags) }
    }
    #[cfg(ucx_since_1_16)]
    {
        if flags & UCS_CALLBACKQ_FLAG_ONESHOT != 0 {
            // SAFETY: see the function contract.
            unsafe { oneshot::add(q, cb, arg) }
        } else {
            // SAFETY: see the function contract.
            unsafe { super::ucs_callbackq_add_safe(q, cb, arg) }
        }
    }
}

/// Remove a callback added by [`add_safe`].
///
/// # Safety
/// `q` is the live queue the id came from.
pub unsafe fn remove_safe(q: *mut ucs_callbackq_t, id: c_int) {
    #[cfg(not(ucx_since_1_16))]
    {
        // SAFETY: see the function contract.
        unsafe { super::ucs_callbackq_remove_safe(q, id) }
    }
    #[cfg(ucx_since_1_16)]
    {
        if id >= ONESHOT_ID_START {
            oneshot::remove(id);
        } else {
            // SAFETY: see the function contract.
            unsafe { super::ucs_callbackq_remove_safe(q, id) };
        }
    }
}

/// [`add_safe`] for callers on the thread that progresses the queue.
///
/// # Safety
/// As for [`add_safe`], called from the progress thread only.
pub unsafe fn add(q: *mut ucs_callbackq_t, cb: ucs_callback_t, arg: *mut c_void, flags: c_uint) -> c_int {
    #[cfg(not(ucx_since_1_16))]
    {
        // SAFETY: see the function contract.
        unsafe { super::ucs_callbackq_add(q, cb, arg, flags) }
    }
    #[cfg(ucx_since_1_16)]
    {
        if flags & UCS_CALLBACKQ_FLAG_ONESHOT != 0 {
            // SAFETY: see the function contract.
            unsafe { oneshot::add(q, cb, arg) }
        } else {
            // SAFETY: see the function contract.
            unsafe { super::ucs_callbackq_add(q, cb, arg) }
        }
    }
}

/// [`remove_safe`] for callers on the thread that progresses the queue.
///
/// # Safety
/// As for [`remove_safe`], called from the progress thread only.
pub unsafe fn remove(q: *mut ucs_callbackq_t, id: c_int) {
    #[cfg(not(ucx_since_1_16))]
    {
        // SAFETY: see the function contract.
        unsafe { super::ucs_callbackq_remove(q, id) }
    }
    #[cfg(ucx_since_1_16)]
    {
        if id >= ONESHOT_ID_START {
            oneshot::remove(id);
        } else {
            // SAFETY: see the function contract.
            unsafe { super::ucs_callbackq_remove(q, id) };
        }
    }
}

/// Queue `cb(arg)` to run once on the next progress, filed under `key` so
/// that [`oneshot_cancel`] can find it. Thread-safe.
///
/// # Safety
/// As for [`add_safe`]; `key` is any address the caller uses to name its
/// callbacks (usually the object `arg` refers to).
pub unsafe fn oneshot_add(q: *mut ucs_callbackq_t, key: *mut c_void, cb: ucs_callback_t, arg: *mut c_void) {
    #[cfg(not(ucx_since_1_16))]
    {
        let _ = key;
        // SAFETY: see the function contract.
        unsafe { super::ucs_callbackq_add_safe(q, cb, arg, UCS_CALLBACKQ_FLAG_ONESHOT) };
    }
    #[cfg(ucx_since_1_16)]
    {
        // SAFETY: see the function contract.
        unsafe { super::ucs_callbackq_add_oneshot(q, key, cb, arg) };
    }
}

/// Drop the not yet run one-shot callbacks filed under `key` for which
/// `pred(elem, arg)` is non-zero. Thread-safe.
///
/// # Safety
/// `q` is a live queue; `pred` is safe to call with any queue element.
pub unsafe fn oneshot_cancel(q: *mut ucs_callbackq_t, key: *mut c_void, pred: ucs_callbackq_predicate_t,
                             arg: *mut c_void) {
    #[cfg(not(ucx_since_1_16))]
    {
        let _ = key;
        // SAFETY: see the function contract.
        unsafe { super::ucs_callbackq_remove_if(q, pred, arg) };
    }
    #[cfg(ucx_since_1_16)]
    {
        // SAFETY: see the function contract.
        unsafe { super::ucs_callbackq_remove_oneshot(q, key, pred, arg) };
    }
}

/// First id of the one-shot callbacks we wrap (1.16+); ids of libucs's own
/// queue stay far below it.
#[cfg(ucx_since_1_16)]
pub const ONESHOT_ID_START: c_int = 1 << 30;

#[cfg(ucx_since_1_16)]
mod oneshot {
    use super::*;
    use std::collections::BTreeMap;
    use std::sync::Mutex;

    struct Pending {
        q: *mut ucs_callbackq_t,
        queue_id: c_int,
        cb: ucs_callback_t,
        arg: *mut c_void,
    }

    struct Table {
        next: c_int,
        live: BTreeMap<c_int, Pending>,
    }
    // SAFETY: the raw pointers are only handed back to libucs and to the
    // user's callback, as the C API promises; the table itself is only
    // touched under its mutex.
    unsafe impl Send for Table {}

    static TABLE: Mutex<Table> = Mutex::new(Table { next: 0, live: BTreeMap::new() });

    fn table() -> std::sync::MutexGuard<'static, Table> {
        TABLE.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// # Safety
    /// As for [`super::add_safe`].
    pub unsafe fn add(q: *mut ucs_callbackq_t, cb: ucs_callback_t, arg: *mut c_void) -> c_int {
        let mut t = table();
        let mut key = t.next;
        while t.live.contains_key(&key) {
            key = (key + 1) % ONESHOT_ID_START;
        }
        t.next = (key + 1) % ONESHOT_ID_START;
        // SAFETY: see the function contract; the wrapper's argument is the
        // key, not a pointer, so nothing dangles once the entry is gone.
        // add_safe may be called with our mutex held: libucs does not call
        // back into us from it.
        let queue_id = unsafe { crate::ucs::ucs_callbackq_add_safe(q, Some(fire), key as usize as *mut c_void) };
        t.live.insert(key, Pending { q, queue_id, cb, arg });
        key + ONESHOT_ID_START
    }

    pub fn remove(id: c_int) {
        let mut t = table();
        if let Some(p) = t.live.remove(&(id - ONESHOT_ID_START)) {
            // SAFETY: the wrapper is still queued under `queue_id` (it
            // removes its entry before it removes itself).
            unsafe { crate::ucs::ucs_callbackq_remove_safe(p.q, p.queue_id) };
        }
    }

    /// The wrapper libucs calls: takes the entry (so it runs once), takes
    /// itself off the queue, then calls the user's function.
    unsafe extern "C" fn fire(key: *mut c_void) -> c_uint {
        let p = {
            let mut t = table();
            let Some(p) = t.live.remove(&(key as usize as c_int)) else { return 0 };
            // SAFETY: removing the running callback is allowed (that is
            // what the _safe variant is for).
            unsafe { crate::ucs::ucs_callbackq_remove_safe(p.q, p.queue_id) };
            p
        };
        match p.cb {
            // SAFETY: the user's progress function with the argument it was
            // registered with, called once, outside our lock (it may
            // register or remove callbacks itself).
            Some(f) => unsafe { f(p.arg) },
            None => 0,
        }
    }
}
