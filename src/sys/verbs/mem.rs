//! Protection domains and memory regions.

use super::{check_rc, last_errno, raw, Context, Errno};
use libc::c_void;

/// A protection domain (`ibv_alloc_pd`).
pub struct Pd {
    pd: *mut raw::ibv_pd,
}

// SAFETY: libibverbs objects are thread-safe; the pointer is owned.
unsafe impl Send for Pd {}
// SAFETY: as above.
unsafe impl Sync for Pd {}

impl Pd {
    pub fn alloc(ctx: &Context) -> Result<Pd, Errno> {
        // SAFETY: live context.
        let pd = unsafe { raw::ibv_alloc_pd(ctx.raw()) };
        if pd.is_null() {
            return Err(last_errno());
        }
        Ok(Pd { pd })
    }

    pub(super) fn raw(&self) -> *mut raw::ibv_pd {
        self.pd
    }
}

impl Drop for Pd {
    fn drop(&mut self) {
        // SAFETY: owned; its MRs, QPs, SRQs and AHs are gone (module rule).
        let rc = unsafe { raw::ibv_dealloc_pd(self.pd) };
        if rc != 0 {
            crate::warn!("ibv_dealloc_pd failed: {}", Errno::from_raw(rc.abs()));
        }
    }
}

/// A memory region (`ibv_reg_mr`): the device may access
/// `[addr, addr + len)` with the keys below until it is deregistered.
pub struct Mr {
    mr: *mut raw::ibv_mr,
}

// SAFETY: libibverbs objects are thread-safe; the pointer is owned.
unsafe impl Send for Mr {}
// SAFETY: as above.
unsafe impl Sync for Mr {}

impl Mr {
    /// Register `len` bytes at address `addr` with `access`
    /// (`super::access`). The memory is not touched here: registering
    /// memory the process cannot access fails in the kernel (or provider).
    pub fn reg(pd: &Pd, addr: usize, len: usize, access: u32) -> Result<Mr, Errno> {
        // SAFETY: live PD; the range is only described to libibverbs, which
        // validates it itself.
        let mr = unsafe { raw::ibv_reg_mr(pd.raw(), addr as *mut c_void, len, access as libc::c_int) };
        if mr.is_null() {
            return Err(last_errno());
        }
        Ok(Mr { mr })
    }

    fn get(&self) -> &raw::ibv_mr {
        // SAFETY: the MR is live while self is.
        unsafe { &*self.mr }
    }

    pub fn lkey(&self) -> u32 {
        self.get().lkey
    }
    pub fn rkey(&self) -> u32 {
        self.get().rkey
    }
    pub fn addr(&self) -> *mut c_void {
        self.get().addr
    }
    pub fn len(&self) -> usize {
        self.get().length
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Deregister, reporting failure (dropping deregisters too, with a log
    /// line on failure).
    pub fn dereg(self) -> Result<(), Errno> {
        let mr = self.mr;
        std::mem::forget(self);
        // SAFETY: owned MR, deregistered once (Drop will not run).
        check_rc(unsafe { raw::ibv_dereg_mr(mr) })
    }
}

impl Drop for Mr {
    fn drop(&mut self) {
        // SAFETY: owned MR, deregistered once.
        let rc = unsafe { raw::ibv_dereg_mr(self.mr) };
        if rc != 0 {
            crate::warn!("ibv_dereg_mr failed: {}", Errno::from_raw(rc.abs()));
        }
    }
}
