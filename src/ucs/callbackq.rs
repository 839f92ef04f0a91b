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

use super::optional as opt;
use super::release;
use crate::abi::*;
use libc::{c_int, c_uint, c_void};

/// Whether the running libucs has the 1.16 queue (no flags, keyed one-shot
/// callbacks).
fn rewritten() -> bool {
    release::running().since(16)
}

/// A libucs function this release must have; a missing one (a libucs that
/// is not the release it looks like) is logged once per call site.
fn need<T>(f: Option<T>, name: &str) -> Option<T> {
    if f.is_none() {
        crate::error!("libucs has no {name}, which UCX {} exports", release::running());
    }
    f
}

/// Add `cb(arg)` to the queue; `flags` are `UCS_CALLBACKQ_FLAG_*`. Returns
/// the id to pass to [`remove_safe`] (`UCS_CALLBACKQ_ID_NULL` when libucs
/// lacks the call).
///
/// # Safety
/// `q` is a live, initialised queue; `cb` may be called with `arg` from
/// any thread that progresses the queue until it is removed.
pub unsafe fn add_safe(q: *mut ucs_callbackq_t, cb: ucs_callback_t, arg: *mut c_void, flags: c_uint) -> c_int {
    if !rewritten() {
        let Some(f) = need(opt::callbackq_add_safe_v1_13(), "ucs_callbackq_add_safe") else {
            return UCS_CALLBACKQ_ID_NULL;
        };
        // SAFETY: see the function contract; libucs takes the flags as is.
        return unsafe { f(q.cast(), cb, arg, flags) };
    }
    if flags & UCS_CALLBACKQ_FLAG_ONESHOT != 0 {
        // SAFETY: see the function contract.
        return unsafe { oneshot::add(q, cb, arg) };
    }
    let Some(f) = need(opt::callbackq_add_safe(), "ucs_callbackq_add_safe") else {
        return UCS_CALLBACKQ_ID_NULL;
    };
    // SAFETY: see the function contract.
    unsafe { f(q.cast(), cb, arg) }
}

/// Remove a callback added by [`add_safe`].
///
/// # Safety
/// `q` is the live queue the id came from.
pub unsafe fn remove_safe(q: *mut ucs_callbackq_t, id: c_int) {
    if id == UCS_CALLBACKQ_ID_NULL {
        return;
    }
    if !rewritten() {
        if let Some(f) = need(opt::callbackq_remove_safe_v1_13(), "ucs_callbackq_remove_safe") {
            // SAFETY: see the function contract.
            unsafe { f(q.cast(), id) };
        }
    } else if id >= ONESHOT_ID_START {
        oneshot::remove(id);
    } else if let Some(f) = need(opt::callbackq_remove_safe(), "ucs_callbackq_remove_safe") {
        // SAFETY: see the function contract.
        unsafe { f(q.cast(), id) };
    }
}

/// [`add_safe`] for callers on the thread that progresses the queue.
///
/// # Safety
/// As for [`add_safe`], called from the progress thread only.
pub unsafe fn add(q: *mut ucs_callbackq_t, cb: ucs_callback_t, arg: *mut c_void, flags: c_uint) -> c_int {
    if !rewritten() {
        let Some(f) = need(opt::callbackq_add_v1_13(), "ucs_callbackq_add") else {
            return UCS_CALLBACKQ_ID_NULL;
        };
        // SAFETY: see the function contract.
        return unsafe { f(q.cast(), cb, arg, flags) };
    }
    if flags & UCS_CALLBACKQ_FLAG_ONESHOT != 0 {
        // SAFETY: see the function contract.
        return unsafe { oneshot::add(q, cb, arg) };
    }
    let Some(f) = need(opt::callbackq_add(), "ucs_callbackq_add") else {
        return UCS_CALLBACKQ_ID_NULL;
    };
    // SAFETY: see the function contract.
    unsafe { f(q.cast(), cb, arg) }
}

/// [`remove_safe`] for callers on the thread that progresses the queue.
///
/// # Safety
/// As for [`remove_safe`], called from the progress thread only.
pub unsafe fn remove(q: *mut ucs_callbackq_t, id: c_int) {
    if id == UCS_CALLBACKQ_ID_NULL {
        return;
    }
    if !rewritten() {
        if let Some(f) = need(opt::callbackq_remove_v1_13(), "ucs_callbackq_remove") {
            // SAFETY: see the function contract.
            unsafe { f(q.cast(), id) };
        }
    } else if id >= ONESHOT_ID_START {
        oneshot::remove(id);
    } else if let Some(f) = need(opt::callbackq_remove(), "ucs_callbackq_remove") {
        // SAFETY: see the function contract.
        unsafe { f(q.cast(), id) };
    }
}

/// Queue `cb(arg)` to run once on the next progress, filed under `key` so
/// that [`oneshot_cancel`] can find it. Thread-safe.
///
/// # Safety
/// As for [`add_safe`]; `key` is any address the caller uses to name its
/// callbacks (usually the object `arg` refers to).
pub unsafe fn oneshot_add(q: *mut ucs_callbackq_t, key: *mut c_void, cb: ucs_callback_t, arg: *mut c_void) {
    if !rewritten() {
        if let Some(f) = need(opt::callbackq_add_safe_v1_13(), "ucs_callbackq_add_safe") {
            // SAFETY: see the function contract.
            unsafe { f(q.cast(), cb, arg, UCS_CALLBACKQ_FLAG_ONESHOT) };
        }
    } else if let Some(f) = need(opt::callbackq_add_oneshot(), "ucs_callbackq_add_oneshot") {
        // SAFETY: see the function contract.
        unsafe { f(q.cast(), key, cb, arg) };
    }
}

/// Drop the not yet run one-shot callbacks filed under `key` for which
/// `pred(elem, arg)` is non-zero. Thread-safe.
///
/// # Safety
/// `q` is a live queue; `pred` is safe to call with any queue element.
pub unsafe fn oneshot_cancel(q: *mut ucs_callbackq_t, key: *mut c_void, pred: ucs_callbackq_predicate_t,
                             arg: *mut c_void) {
    if !rewritten() {
        if let Some(f) = need(opt::callbackq_remove_if_v1_13(), "ucs_callbackq_remove_if") {
            // SAFETY: see the function contract.
            unsafe { f(q.cast(), pred, arg) };
        }
    } else if let Some(f) = need(opt::callbackq_remove_oneshot(), "ucs_callbackq_remove_oneshot") {
        // SAFETY: see the function contract.
        unsafe { f(q.cast(), key, pred, arg) };
    }
}

/// First id of the one-shot callbacks we wrap (1.16+); ids of libucs's own
/// queue stay far below it.
pub const ONESHOT_ID_START: c_int = 1 << 30;

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
        let Some(add_safe) = need(opt::callbackq_add_safe(), "ucs_callbackq_add_safe") else {
            return UCS_CALLBACKQ_ID_NULL;
        };
        // SAFETY: see the function contract; the wrapper's argument is the
        // key, not a pointer, so nothing dangles once the entry is gone.
        // add_safe may be called with our mutex held: libucs does not call
        // back into us from it.
        let queue_id = unsafe { add_safe(q.cast(), Some(fire), key as usize as *mut c_void) };
        t.live.insert(key, Pending { q, queue_id, cb, arg });
        key + ONESHOT_ID_START
    }

    pub fn remove(id: c_int) {
        let mut t = table();
        if let Some(p) = t.live.remove(&(id - ONESHOT_ID_START)) {
            if let Some(remove_safe) = opt::callbackq_remove_safe() {
                // SAFETY: the wrapper is still queued under `queue_id` (it
                // removes its entry before it removes itself).
                unsafe { remove_safe(p.q.cast(), p.queue_id) };
            }
        }
    }

    /// The wrapper libucs calls: takes the entry (so it runs once), takes
    /// itself off the queue, then calls the user's function.
    unsafe extern "C" fn fire(key: *mut c_void) -> c_uint {
        let p = {
            let mut t = table();
            let Some(p) = t.live.remove(&(key as usize as c_int)) else { return 0 };
            if let Some(remove_safe) = opt::callbackq_remove_safe() {
                // SAFETY: removing the running callback is allowed (that is
                // what the _safe variant is for).
                unsafe { remove_safe(p.q.cast(), p.queue_id) };
            }
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
