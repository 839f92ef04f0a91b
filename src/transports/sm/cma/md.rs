//! The `cma` memory domain. Peers reach our memory by pid and address, so
//! registration only hands out a dummy handle, and the packed key is empty.
//!
//! The md is offered (`uct_component_query` lists it) only when cross-memory
//! attach works here, decided as UCX 1.13.1 built for Debian decides it: a
//! `process_vm_writev` to ourselves must succeed, and the Yama ptrace policy
//! (`/proc/sys/kernel/yama/ptrace_scope`) must let peers attach to us:
//! - file unreadable (no Yama): usable;
//! - `0` (classic ptrace): usable;
//! - `1` (restricted): usable once `prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY)`
//!   lets any process of ours attach (this call is made, as UCX makes it);
//! - `2` (admin only): not usable (Debian's UCX is built without libcap, so
//!   it never looks at `CAP_SYS_PTRACE`);
//! - `3` or anything else: not usable.

use crate::abi::*;
use crate::core::md::{all_cpus, FixedMemh, MdImpl};
use crate::core::handles::Completion;
use crate::transports::sm::release;
use crate::sys::{errno_str, vm};
use libc::c_void;

/// The memory handle of every registration.
pub const CMA_MEMH: FixedMemh = FixedMemh { value: 0xdead_beef, md: "cma" };

/// Registration cost reported by UCX 1.13.1 (seconds, fixed part).
const REG_COST: f64 = 9e-9;

const PTRACE_SCOPE_FILE: &str = "/proc/sys/kernel/yama/ptrace_scope";

pub struct CmaMd {
    extra_caps: u64,
}

impl CmaMd {
    pub fn new(mem_invalidate: bool) -> CmaMd {
        CmaMd { extra_caps: if mem_invalidate { UCT_MD_FLAG_INVALIDATE } else { 0 } }
    }
}

impl MdImpl for CmaMd {
    fn reg_nonblock_mem_types(&self) -> u64 {
        // Registration records the range only: never blocks.
        if release::cma_md_registers() { 1u64 << UCS_MEMORY_TYPE_HOST } else { 0 }
    }

    fn cache_mem_types(&self) -> u64 {
        if release::cma_md_registers() { 1u64 << UCS_MEMORY_TYPE_HOST } else { 0 }
    }

    fn query(&self, attr: &mut uct_md_attr_t) {
        let registers = release::cma_md_registers();
        attr.rkey_packed_size = 0;
        attr.cap.flags = if registers { UCT_MD_FLAG_REG } else { 0 } | self.extra_caps;
        attr.cap.reg_mem_types = if registers { 1 << UCS_MEMORY_TYPE_HOST } else { 0 };
        attr.cap.alloc_mem_types = 0;
        attr.cap.access_mem_types = 1 << UCS_MEMORY_TYPE_HOST;
        attr.cap.detect_mem_types = 0;
        attr.cap.max_alloc = 0;
        attr.cap.max_reg = libc::c_ulong::MAX as _;
        attr.reg_cost.c = if registers { REG_COST } else { 0.0 };
        attr.reg_cost.m = 0.0;
        attr.local_cpus = all_cpus();
    }

    fn mem_reg(&self, _address: *mut c_void, _length: usize, _flags: u32) -> Result<uct_mem_h, ucs_status_t> {
        Ok(CMA_MEMH.handle())
    }

    fn mem_dereg(&self, memh: uct_mem_h, flags: u32, comp: Completion) -> ucs_status_t {
        if let Err(e) = CMA_MEMH.check(memh) {
            return e;
        }
        if flags & UCT_MD_MEM_DEREG_FLAG_INVALIDATE != 0 {
            // Only reachable with UCX_CMA_MEMORY_INVALIDATE=y (the generic
            // layer checks the capability and the completion): nothing was
            // registered, so there is nothing to wait for.
            crate::debug!("cma md: invalidation of {:p} completes at once (not enforced)", memh);
            comp.complete(UCS_OK);
        }
        UCS_OK
    }
}

/// Whether `process_vm_writev` to ourselves works (seccomp or a kernel
/// without CMA make it fail).
fn writev_works() -> bool {
    let src: u64 = 0x5eed;
    let mut dst: u64 = 0;
    let local = [libc::iovec { iov_base: &src as *const u64 as *mut c_void, iov_len: 8 }];
    let remote = [vm::RemoteIoVec { base: &mut dst as *mut u64 as usize, len: 8 }];
    // SAFETY: both ranges are our own live locals of 8 bytes, `dst` not
    // otherwise accessed during the call.
    match unsafe { vm::write_to(crate::sys::getpid(), &local, &remote) } {
        Ok(8) => true,
        Ok(n) => {
            crate::debug!("cma: unusable, a process_vm_writev of 8 bytes to ourselves gave {}", n);
            false
        }
        Err(err) => {
            crate::debug!("cma: unusable, a process_vm_writev of 8 bytes to ourselves gave -1: {}",
                          errno_str(err as i32));
            false
        }
    }
}

/// The Yama verdict for the value read from the ptrace scope file.
fn ptrace_scope_allows(value: &str) -> bool {
    let (ok, extra) = match value {
        "0" => (true, ""),
        "1" => {
            // Who may attach to this process is what CMA peers need.
            if vm::set_ptracer_any().is_ok() {
                (true, " (any process may attach to us now)")
            } else {
                (false, " (PR_SET_PTRACER_ANY refused)")
            }
        }
        "2" => (false, " (attaching needs CAP_SYS_PTRACE)"),
        _ => (false, ""),
    };
    if ok {
        crate::trace!("cma: Yama ptrace scope {}{}: usable", value, extra);
    } else {
        crate::debug!("cma: Yama ptrace scope {}{}: not usable", value, extra);
    }
    ok
}

fn ptrace_scope_ok() -> bool {
    use std::io::Read;
    let mut buf = [0u8; 31];
    let n = match std::fs::File::open(PTRACE_SCOPE_FILE).and_then(|mut f| f.read(&mut buf)) {
        Ok(n) => n,
        Err(_) => {
            crate::debug!("cma: no readable {}, so Yama does not restrict ptrace", PTRACE_SCOPE_FILE);
            return true;
        }
    };
    let value = String::from_utf8_lossy(&buf[..n]);
    ptrace_scope_allows(value.trim())
}

/// Whether this process can use CMA (and be reached through it).
pub fn cma_usable() -> bool {
    writev_works() && ptrace_scope_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scope_values() {
        assert!(ptrace_scope_allows("0"));
        assert!(!ptrace_scope_allows("2"));
        assert!(!ptrace_scope_allows("3"));
        assert!(!ptrace_scope_allows("garbage"));
    }

    #[test]
    fn registration_is_a_dummy_handle() {
        let md = CmaMd::new(false);
        let h = md.mem_reg(std::ptr::null_mut(), 0, 0).unwrap();
        assert_eq!(h as usize, CMA_MEMH.value);
        assert_eq!(md.mem_dereg(h, 0, Completion::none()), UCS_OK);
        assert_eq!(md.mem_dereg(1usize as uct_mem_h, 0, Completion::none()), UCS_ERR_INVALID_PARAM);
    }

    #[test]
    fn query_matches_ucx() {
        // SAFETY: all-zero is a valid uct_md_attr_t.
        let mut a: uct_md_attr_t = unsafe { std::mem::zeroed() };
        // registration is reported up to 1.18 (the running release's rule)
        let reg = if release::cma_md_registers() { UCT_MD_FLAG_REG } else { 0 };
        CmaMd::new(false).query(&mut a);
        assert_eq!(a.cap.flags, reg);
        assert_eq!(a.rkey_packed_size, 0);
        assert_eq!(a.reg_cost.c, if reg != 0 { 9e-9 } else { 0.0 });
        CmaMd::new(true).query(&mut a);
        assert_eq!(a.cap.flags, reg | UCT_MD_FLAG_INVALIDATE);
    }
}
