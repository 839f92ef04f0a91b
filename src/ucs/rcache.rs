//! libucs's memory registration cache (`ucs/memory/rcache.h`), through one
//! interface for every UCX release.
//!
//! The cache keeps registrations of address ranges in a page table: a
//! lookup of a range that a registered region covers returns that region
//! (one more reference), otherwise a new region is made over the range
//! widened to the cache's alignment and merged with the regions it
//! overlaps, and the owner's `mem_reg` callback registers it. Putting the
//! last user reference leaves the region in the table; it goes away (the
//! owner's `mem_dereg` callback runs) when libucm reports the memory as
//! unmapped, when the cache is over its limits (least recently used
//! first), on fork when asked to purge, or when the cache is destroyed.
//! The region descriptor is allocated by libucs with the size the owner
//! asks for: the header below, followed by the owner's part.
//!
//! What changed between releases:
//!
//! * 1.17: the address alignment moved from the cache parameters
//!   (`alignment`, `max_alignment`) to each lookup (`ucs_rcache_get` takes
//!   it), and every region records the alignment it was made with (a new
//!   member before `refcount`). libucs no longer checks the alignment, so
//!   [`Rcache::create`] does, as 1.13 did at creation.
//! * 1.18: the callback table gained `merge` (called, unconditionally, for
//!   each region a new one absorbs), between `mem_dereg` and `dump_region`.

use super::optional as opt;
use super::release;
use crate::abi::*;
use libc::{c_char, c_int, c_ulong, c_void};
use std::mem::size_of;

pub use crate::abi::{ucs_rcache_region_t, ucs_rcache_t};
pub type MemRegFn = ucs_rcache_mem_reg_fn;
pub type MemDeregFn = ucs_rcache_mem_dereg_fn;
pub type DumpRegionFn = ucs_rcache_dump_region_fn;

#[link(name = "ucs")]
extern "C" {
    fn ucs_rcache_create(params: *const c_void, name: *const c_char, stats_parent: *mut ucs_stats_node_t,
                         rcache_p: *mut *mut ucs_rcache_t) -> ucs_status_t;
    fn ucs_rcache_destroy(rcache: *mut ucs_rcache_t);
    fn ucs_rcache_region_put(rcache: *mut ucs_rcache_t, region: *mut ucs_rcache_region_t);
}

/// The callback table in the running release's layout (libucs keeps a
/// pointer to it).
enum OpsTable {
    V1_13(ucs_rcache_ops_t_v1_13),
    Current(ucs_rcache_ops_t),
}

impl OpsTable {
    fn as_ptr(&self) -> *const c_void {
        match self {
            OpsTable::V1_13(t) => t as *const ucs_rcache_ops_t_v1_13 as *const c_void,
            OpsTable::Current(t) => t as *const ucs_rcache_ops_t as *const c_void,
        }
    }
}

/// The settings of a cache, as UCX's md settings `*_RCACHE_*` give them.
#[derive(Clone, Debug, PartialEq)]
pub struct RcacheParams {
    /// `RCACHE_MEM_PRIO`: priority of the cache's libucm event handler.
    pub event_prio: u32,
    /// `RCACHE_OVERHEAD`: lookup cost in seconds; `None` = `auto`.
    pub overhead: Option<f64>,
    /// `RCACHE_ADDR_ALIGN`: regions start and end on this (a power of two
    /// from 16 to the page size).
    pub alignment: usize,
    /// `RCACHE_MAX_REGIONS` (`u64::MAX` = `inf`).
    pub max_regions: u64,
    /// `RCACHE_MAX_SIZE` in bytes (`usize::MAX` = `inf`).
    pub max_size: usize,
    /// `RCACHE_MAX_UNRELEASED` in bytes: invalidated or unused memory
    /// after which libucs cleans up.
    pub max_unreleased: usize,
    /// `RCACHE_PURGE_ON_FORK`.
    pub purge_on_fork: bool,
}

impl Default for RcacheParams {
    /// UCX 1.13.1's defaults as the `ib` md has them (`UCX_IB_RCACHE_*`:
    /// the address alignment is 16 there; UCX's generic md default would be
    /// the cache line).
    fn default() -> RcacheParams {
        RcacheParams {
            event_prio: 1000,
            overhead: None,
            alignment: 16,
            max_regions: u64::MAX,
            max_size: usize::MAX,
            max_unreleased: 512 << 20,
            purge_on_fork: true,
        }
    }
}

impl RcacheParams {
    /// The lookup cost to report as the md's registration cost: the
    /// setting, or for `auto` what UCX assumes (360 ns on Fujitsu ARM CPUs,
    /// 180 ns elsewhere).
    pub fn overhead_secs(&self) -> f64 {
        match self.overhead {
            Some(s) => s,
            None if fujitsu_arm() => 360e-9,
            None => 180e-9,
        }
    }
}

/// Whether this is an ARM CPU made by Fujitsu (implementer code 0x46).
fn fujitsu_arm() -> bool {
    if !cfg!(target_arch = "aarch64") {
        return false;
    }
    std::fs::read_to_string("/proc/cpuinfo")
        .map(|s| s.lines().any(|l| l.starts_with("CPU implementer") && l.trim_end().ends_with("0x46")))
        .unwrap_or(false)
}

/// The owner's callbacks (the releases' tables are filled from these).
pub struct Ops {
    pub mem_reg: MemRegFn,
    pub mem_dereg: MemDeregFn,
    pub dump_region: DumpRegionFn,
}

/// An owned cache; destroying it (drop) deregisters every region left,
/// in use or not (libucs warns about those in use).
pub struct Rcache {
    rc: *mut ucs_rcache_t,
    /// The alignment given to each lookup (1.17+).
    alignment: usize,
    /// The callback table libucs keeps a pointer to.
    _ops: Box<OpsTable>,
}

// SAFETY: libucs's cache takes its own locks on every call.
unsafe impl Send for Rcache {}
// SAFETY: as above.
unsafe impl Sync for Rcache {}

/// The 1.18 `merge` callback: nothing to do for our regions.
unsafe extern "C" fn merge_nop(_c: *mut c_void, _r: *mut ucs_rcache_t, _a: *mut c_void, _g: *mut ucs_rcache_region_t) {}

impl Rcache {
    /// Make a cache whose regions are `region_size` bytes (at least the
    /// header), watching unmapped memory. `context` is passed to the
    /// callbacks.
    ///
    /// # Safety
    /// `context` stays valid, and the callbacks may be called with it from
    /// any thread (libucm's events come from whichever thread unmaps), until
    /// the cache is dropped.
    pub unsafe fn create(name: &str, region_size: usize, p: &RcacheParams, ops: Ops, context: *mut c_void)
                         -> Result<Rcache, ucs_status_t> {
        let page = page_size();
        if !p.alignment.is_power_of_two() || p.alignment < UCS_RCACHE_MIN_ALIGNMENT || p.alignment > page {
            crate::error!("invalid registration cache alignment ({}): must be a power of 2 between {} and {}",
                          p.alignment, UCS_RCACHE_MIN_ALIGNMENT, page);
            return Err(UCS_ERR_INVALID_PARAM);
        }
        if region_size < size_of::<ucs_rcache_region_t>() {
            return Err(UCS_ERR_INVALID_PARAM);
        }
        let rel = release::running();
        let ops = Box::new(if rel.since(18) {
            OpsTable::Current(ucs_rcache_ops_t {
                mem_reg: Some(ops.mem_reg),
                mem_dereg: Some(ops.mem_dereg),
                merge: Some(merge_nop),
                dump_region: Some(ops.dump_region),
            })
        } else {
            OpsTable::V1_13(ucs_rcache_ops_t_v1_13 {
                mem_reg: Some(ops.mem_reg),
                mem_dereg: Some(ops.mem_dereg),
                dump_region: Some(ops.dump_region),
            })
        });
        let events = UCM_EVENT_VM_UNMAPPED;
        let prio = p.event_prio.min(c_int::MAX as u32) as c_int;
        let flags = if p.purge_on_fork { UCS_RCACHE_FLAG_PURGE_ON_FORK } else { 0 };
        let max_regions = c_ulong::try_from(p.max_regions).unwrap_or(c_ulong::MAX);
        let params_now;
        let params_v1_13;
        let params: *const c_void = if rel.since(17) {
            params_now = ucs_rcache_params_t {
                region_struct_size: region_size,
                ucm_events: events,
                ucm_event_priority: prio,
                ops: ops.as_ptr(),
                context,
                flags,
                max_regions,
                max_size: p.max_size,
                max_unreleased: p.max_unreleased,
            };
            &params_now as *const ucs_rcache_params_t as *const c_void
        } else {
            params_v1_13 = ucs_rcache_params_t_v1_13 {
                region_struct_size: region_size,
                alignment: p.alignment,
                max_alignment: page,
                ucm_events: events,
                ucm_event_priority: prio,
                ops: ops.as_ptr(),
                context,
                flags,
                max_regions,
                max_size: p.max_size,
                max_unreleased: p.max_unreleased,
            };
            &params_v1_13 as *const ucs_rcache_params_t_v1_13 as *const c_void
        };
        let cname = std::ffi::CString::new(name.replace('\0', "")).unwrap_or_default();
        let mut rc = std::ptr::null_mut();
        // SAFETY: params and the name are read during the call; libucs
        // copies the params (the ops table is kept alive by the box we
        // keep); context per the function contract. NULL stats parent:
        // no statistics node.
        let status = unsafe { ucs_rcache_create(params, cname.as_ptr(), std::ptr::null_mut(), &mut rc) };
        if status != UCS_OK || rc.is_null() {
            return Err(if status != UCS_OK { status } else { UCS_ERR_NO_MEMORY });
        }
        Ok(Rcache { rc, alignment: p.alignment, _ops: ops })
    }

    /// Look up (or register) `[address, address + length)` for `prot`
    /// (`PROT_*`); `arg` reaches `mem_reg`. The region comes back with one
    /// reference for the caller, to give back with [`Rcache::put`].
    ///
    /// # Safety
    /// `arg` is what the owner's `mem_reg` expects.
    pub unsafe fn get(&self, address: *mut c_void, length: usize, prot: c_int, arg: *mut c_void)
                      -> Result<*mut ucs_rcache_region_t, ucs_status_t> {
        let mut region = std::ptr::null_mut();
        let status = if release::running().since(17) {
            let Some(get) = opt::rcache_get() else { return Err(UCS_ERR_UNSUPPORTED) };
            // SAFETY: live cache; see the function contract.
            unsafe { get(self.rc, address, length, self.alignment, prot, arg, &mut region) }
        } else {
            let Some(get) = opt::rcache_get_v1_13() else { return Err(UCS_ERR_UNSUPPORTED) };
            // SAFETY: live cache; see the function contract.
            unsafe { get(self.rc, address, length, prot, arg, &mut region) }
        };
        if status != UCS_OK {
            return Err(status);
        }
        if region.is_null() {
            return Err(UCS_ERR_NO_MEMORY);
        }
        Ok(region)
    }

    /// Give back one reference taken by [`Rcache::get`].
    ///
    /// # Safety
    /// `region` came from `get` on this cache and the reference is given
    /// back once.
    pub unsafe fn put(&self, region: *mut ucs_rcache_region_t) {
        // SAFETY: see the function contract.
        unsafe { ucs_rcache_region_put(self.rc, region) }
    }
}

impl Drop for Rcache {
    fn drop(&mut self) {
        // SAFETY: owned cache, destroyed once; its callbacks' context is
        // still valid (the owner drops the cache first).
        unsafe { ucs_rcache_destroy(self.rc) }
    }
}

/// The system page size.
pub fn page_size() -> usize {
    // SAFETY: sysconf has no memory effects.
    let v = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if v > 0 {
        v as usize
    } else {
        4096
    }
}

/// Copy `text` to a C buffer of `max` bytes, truncated, NUL-terminated
/// (for `dump_region`).
///
/// # Safety
/// `buf` is NULL or writable for `max` bytes.
pub unsafe fn write_c_text(buf: *mut c_char, max: usize, text: &str) {
    if buf.is_null() || max == 0 {
        return;
    }
    let n = text.len().min(max - 1);
    // SAFETY: n + 1 <= max bytes of the caller's buffer.
    unsafe {
        std::ptr::copy_nonoverlapping(text.as_ptr() as *const c_char, buf, n);
        *buf.add(n) = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use libc::size_t;

    #[test]
    fn defaults_are_the_ib_md_ones() {
        let p = RcacheParams::default();
        assert_eq!(p.event_prio, 1000);
        assert_eq!(p.alignment, 16);
        assert_eq!(p.max_unreleased, 512 * 1024 * 1024);
        assert!(p.purge_on_fork);
        assert_eq!(p.overhead, None);
        if !fujitsu_arm() {
            assert_eq!(p.overhead_secs(), 180e-9);
        }
        assert_eq!(RcacheParams { overhead: Some(1e-6), ..p }.overhead_secs(), 1e-6);
    }

    #[test]
    fn bad_alignment_is_refused() {
        unsafe extern "C" fn reg(_: *mut c_void, _: *mut ucs_rcache_t, _: *mut c_void, _: *mut ucs_rcache_region_t,
                                 _: u16) -> ucs_status_t {
            UCS_ERR_UNSUPPORTED
        }
        unsafe extern "C" fn dereg(_: *mut c_void, _: *mut ucs_rcache_t, _: *mut ucs_rcache_region_t) {}
        unsafe extern "C" fn dump(_: *mut c_void, _: *mut ucs_rcache_t, _: *mut ucs_rcache_region_t, _: *mut c_char,
                                  _: size_t) {
        }
        for a in [0usize, 8, 24, page_size() * 2] {
            let p = RcacheParams { alignment: a, ..RcacheParams::default() };
            let ops = Ops { mem_reg: reg, mem_dereg: dereg, dump_region: dump };
            // SAFETY: refused before libucs is called.
            let r = unsafe { Rcache::create("t", 256, &p, ops, std::ptr::null_mut()) };
            assert_eq!(r.err(), Some(UCS_ERR_INVALID_PARAM), "alignment {a}");
        }
    }

    /// A cache over a fake registration that counts calls, with libucs's
    /// real page table and libucm's unmap events.
    mod live {
        use super::*;
        use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};

        #[repr(C)]
        struct Region {
            hdr: ucs_rcache_region_t,
            key: u64,
        }

        #[derive(Default)]
        struct Counts {
            regs: AtomicUsize,
            deregs: AtomicUsize,
            fail: AtomicUsize,
        }

        unsafe extern "C" fn reg(c: *mut c_void, _: *mut ucs_rcache_t, _: *mut c_void, r: *mut ucs_rcache_region_t,
                                 _: u16) -> ucs_status_t {
            // SAFETY: the context is the test's Counts; the region has our size.
            let c = unsafe { &*(c as *const Counts) };
            if c.fail.load(SeqCst) != 0 {
                return UCS_ERR_IO_ERROR;
            }
            let n = c.regs.fetch_add(1, SeqCst) + 1;
            // SAFETY: as above.
            unsafe { (*(r as *mut Region)).key = n as u64 };
            UCS_OK
        }
        unsafe extern "C" fn dereg(c: *mut c_void, _: *mut ucs_rcache_t, _: *mut ucs_rcache_region_t) {
            // SAFETY: the context is the test's Counts.
            unsafe { &*(c as *const Counts) }.deregs.fetch_add(1, SeqCst);
        }
        unsafe extern "C" fn dump(_: *mut c_void, _: *mut ucs_rcache_t, r: *mut ucs_rcache_region_t, b: *mut c_char,
                                  m: size_t) {
            // SAFETY: a registered region of ours; libucs's buffer.
            unsafe { write_c_text(b, m, &format!("key {}", (*(r as *mut Region)).key)) };
        }

        fn map(at: *mut c_void, len: usize) -> *mut c_void {
            let flags = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | if at.is_null() { 0 } else { libc::MAP_FIXED };
            // SAFETY: an anonymous mapping (at a place the test unmapped).
            let p = unsafe { libc::mmap(at, len, libc::PROT_READ | libc::PROT_WRITE, flags, -1, 0) };
            assert_ne!(p, libc::MAP_FAILED);
            p
        }

        #[test]
        fn same_range_same_region_until_unmapped() {
            let counts = Box::new(Counts::default());
            let ctx = &*counts as *const Counts as *mut c_void;
            let ops = Ops { mem_reg: reg, mem_dereg: dereg, dump_region: dump };
            // SAFETY: counts outlives the cache (dropped at the end).
            let cache = match unsafe { Rcache::create("test", size_of::<Region>(), &RcacheParams::default(), ops, ctx) } {
                Ok(c) => c,
                Err(s) => {
                    // No libucm events here (e.g. UCX_MEM_EVENTS=no): nothing to test.
                    eprintln!("registration cache unavailable: {s}");
                    return;
                }
            };
            let len = 3 * page_size();
            let buf = map(std::ptr::null_mut(), len);
            let prot = libc::PROT_READ | libc::PROT_WRITE;
            let at = (buf as usize + 40) as *mut c_void;
            // SAFETY: (all gets and puts) regions of this cache, each put once.
            unsafe {
                let r1 = cache.get(at, 100, prot, std::ptr::null_mut()).unwrap();
                let r2 = cache.get(at, 100, prot, std::ptr::null_mut()).unwrap();
                assert_eq!(r1, r2);
                assert_eq!(counts.regs.load(SeqCst), 1);
                // Widened to the alignment (16).
                assert_eq!((*r1).super_.start as usize, buf as usize + 32);
                assert_eq!((*r1).super_.end as usize, buf as usize + 144);
                cache.put(r1);
                cache.put(r2);
                // Still cached after the last put.
                let r3 = cache.get(at, 64, prot, std::ptr::null_mut()).unwrap();
                assert_eq!(r3, r1);
                assert_eq!(counts.regs.load(SeqCst), 1);
                assert_eq!(counts.deregs.load(SeqCst), 0);
                cache.put(r3);

                // Unmapped and mapped again at the same place: a new registration.
                assert_eq!(libc::munmap(buf, len), 0);
                let again = map(buf, len);
                assert_eq!(again, buf);
                let r4 = cache.get(at, 100, prot, std::ptr::null_mut()).unwrap();
                assert_eq!(counts.regs.load(SeqCst), 2);
                assert_eq!(counts.deregs.load(SeqCst), 1);
                assert_eq!((*(r4 as *mut Region)).key, 2);
                cache.put(r4);

                // A failing registration is an error status, nothing held.
                counts.fail.store(1, SeqCst);
                let other = (buf as usize + 2 * page_size()) as *mut c_void;
                assert_eq!(cache.get(other, 100, prot, std::ptr::null_mut()).err(), Some(UCS_ERR_IO_ERROR));
                counts.fail.store(0, SeqCst);
            }
            drop(cache);
            // The cached region is deregistered with the cache.
            assert_eq!(counts.deregs.load(SeqCst), 2);
            // SAFETY: the test's mapping.
            unsafe { libc::munmap(buf, len) };
        }
    }

    #[test]
    fn c_text_is_truncated() {
        let mut b = [1 as c_char; 4];
        // SAFETY: a local buffer of 4 bytes.
        unsafe { write_c_text(b.as_mut_ptr(), 4, "abcdef") };
        assert_eq!(b, [b'a' as c_char, b'b' as c_char, b'c' as c_char, 0]);
    }
}
