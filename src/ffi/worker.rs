//! Worker creation and the thread-safe progress registration.

use super::{entry, need, worker_or_fail};
use crate::abi::*;
use crate::core::registry::{self, Kind};
use crate::core::worker::WorkerObj;
use libc::{c_uint, c_void};

entry! {
    fn uct_worker_create(async_ctx: *mut ucs_async_context_t, thread_mode: ucs_thread_mode_t,
                         worker_p: *mut uct_worker_h) -> ucs_status_t {
        need!(worker_p, "worker_p");
        need!(async_ctx, "async context");
        if thread_mode >= UCS_THREAD_MODE_LAST {
            crate::error!("{}: invalid thread mode {}", FN, thread_mode);
            return UCS_ERR_INVALID_PARAM;
        }
        match WorkerObj::create(async_ctx, thread_mode) {
            Ok(w) => {
                // SAFETY: out-pointer checked above.
                unsafe { *worker_p = w };
                UCS_OK
            }
            Err(s) => s,
        }
    }
}

entry! {
    fn uct_worker_destroy(worker: uct_worker_h) {
        // SAFETY: `destroy` frees only a live worker, once; destroying
        // ends its life.
        if !unsafe { WorkerObj::destroy(worker) } {
            crate::error!("{}: worker {:p} {}", FN, worker, registry::why_not(worker, Kind::Worker));
        }
    }
}

entry! {
    fn uct_worker_progress_register_safe(worker: uct_worker_h, func: ucs_callback_t, arg: *mut c_void,
                                         flags: c_uint, id_p: *mut uct_worker_cb_id_t) {
        if id_p.is_null() || func.is_none() {
            crate::error!("{}: NULL callback or id pointer", FN);
            return;
        }
        let w = worker_or_fail!(worker, ());
        // SAFETY: id_p checked above; the callback and its argument are the
        // caller's, as UCT's API documents them.
        unsafe { w.progress_register_safe(func, arg, flags, &mut *id_p) };
    }
}

entry! {
    fn uct_worker_progress_unregister_safe(worker: uct_worker_h, id_p: *mut uct_worker_cb_id_t) {
        if id_p.is_null() {
            crate::error!("{}: NULL id pointer", FN);
            return;
        }
        let w = worker_or_fail!(worker, ());
        // SAFETY: id_p checked above.
        w.progress_unregister_safe(unsafe { &mut *id_p });
    }
}
