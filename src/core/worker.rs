//! The worker: libucs's callback queue at offset 0, so the inline
//! `uct_worker_progress` of the C headers walks our progress callbacks.

use crate::abi::*;
use crate::ucs;

pub const WORKER_MAGIC: u64 = 0x7563_742d_776b_7221;

#[repr(C)]
pub struct WorkerObj {
    pub base: uct_worker_t,
    magic: u64,
    pub async_ctx: *mut ucs_async_context_t,
    pub thread_mode: ucs_thread_mode_t,
}

impl WorkerObj {
    pub fn create(async_ctx: *mut ucs_async_context_t, thread_mode: ucs_thread_mode_t) -> Result<uct_worker_h, ucs_status_t> {
        // SAFETY: all-zero is a valid (not yet initialised) callback queue;
        // ucs_callbackq_init sets it up in place, inside the box, which
        // never moves afterwards.
        let mut w = Box::new(WorkerObj { base: unsafe { std::mem::zeroed() }, magic: WORKER_MAGIC, async_ctx, thread_mode });
        // SAFETY: see above.
        let status = unsafe { ucs::ucs_callbackq_init(&mut w.base.progress_q) };
        if status != UCS_OK {
            return Err(status);
        }
        Ok(Box::into_raw(w) as uct_worker_h)
    }

    /// # Safety
    /// `w` must be null or point to at least a readable `uct_worker_t`.
    pub unsafe fn from_handle<'a>(w: uct_worker_h) -> Option<&'a mut WorkerObj> {
        if w.is_null() {
            return None;
        }
        let o = &mut *(w as *mut WorkerObj);
        (o.magic == WORKER_MAGIC).then_some(o)
    }

    /// # Safety
    /// `w` came from [`WorkerObj::create`] and is not used afterwards.
    pub unsafe fn destroy(w: &mut WorkerObj) {
        ucs::ucs_callbackq_cleanup(&mut w.base.progress_q);
        w.magic = 0;
        drop(Box::from_raw(w as *mut WorkerObj));
    }
}
