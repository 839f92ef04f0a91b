//! The `ib` memory domain: one per RDMA device, holding the opened device,
//! its protection domain and the memory regions registered on it.
//!
//! Registration (`ibv_reg_mr`) always asks for local write, remote write,
//! remote read and remote atomic access, whatever the caller's access
//! flags, as UCX 1.13.1 does: a peer may therefore do anything the device
//! allows on registered memory, and nothing outside it.
//!
//! How memory is registered is chosen at open from [`MdParams::reg_methods`],
//! the first method that works winning (UCX's `UCX_IB_REG_METHODS`):
//!
//! * `rcache`: through libucs's registration cache ([`crate::ucs::rcache`]).
//!   A registration looks the range up in the cache, widened to
//!   [`RcacheParams::alignment`]; a range a cached region covers gets that
//!   region's keys again, without a call to the device. Deregistration only
//!   gives the reference back: the memory region stays registered until the
//!   memory is unmapped (libucm's events), the cache is over its limits,
//!   `fork()` purges it, or the md is closed. The md reports the cache's
//!   lookup cost as its registration cost (180 ns for `auto` on x86).
//!   Creating the cache fails when libucm cannot watch unmaps (e.g.
//!   `UCX_MEM_EVENTS=no`); the next method is then tried, as in UCX.
//! * `odp` (one on-demand-paging key for all memory) needs implicit ODP,
//!   which only mlx5 devices offer: never available here.
//! * `direct`: one `ibv_reg_mr` per registration and `ibv_dereg_mr` per
//!   deregistration, reported as 16 us + 0.06 ns/B (`UCX_IB_MEM_REG_*`).
//!
//! UCX 1.13.1 defaults to `rcache,odp,direct`. From 1.16 on (the release
//! whose md table lost `REG_METHODS` and the `RCACHE_*` rows), UCX's `ib` md
//! registers directly (the cache moved out of the md, libucp caches the
//! registrations of every md reporting host memory in `cache_mem_types`),
//! so [`MdParams::default`] there is `direct` alone; the cache still works
//! when asked for.
//!
//! A memory handle is the address of an [`IbMemh`]: a box of ours
//! (direct), or the part of a cache region descriptor that follows libucs's
//! header (rcache). Either way the md keeps the handles it gave out and
//! not yet took back, with how many times each was given, and checks every
//! handle it is passed against that set before using it.
//!
//! The packed remote key is 8 bytes, one host-order 64-bit value: the
//! region's rkey in the low half, the "atomic" rkey in the high half, which
//! is `0xffffffff` (none: atomics use the low key) for every region of
//! this md up to 1.15, as on a UCX 1.13.1 peer without relaxed ordering
//! (from 1.16 the same rkey goes in both halves, as UCX's verbs md packs
//! its atomic MR's key; either form reads the same).
//! Unpacking takes the 8 bytes as the `uct_rkey_t` unchanged.

use crate::abi::*;
use crate::core::md::MdImpl;
use super::release;
use crate::core::handles::Completion;
use crate::sys::verbs::{self, access, Context, Mr, Pd, PortInfo};
pub use crate::ucs::rcache::RcacheParams;
use crate::ucs::rcache::{self as rc, ucs_rcache_region_t, ucs_rcache_t, Rcache};
use libc::{c_char, c_void};
use std::collections::HashMap;
use std::mem::{offset_of, ManuallyDrop};
use std::sync::Mutex;

/// Bytes of a packed remote key.
pub const RKEY_PACKED_SIZE: usize = 8;
/// The key value meaning "no key" in either half of a packed key.
pub const INVALID_KEY: u32 = 0xffff_ffff;
/// Registration cost of a direct `ibv_reg_mr` as UCX 1.13.1 models it
/// (`UCX_IB_MEM_REG_OVERHEAD` / `_GROWTH` defaults): fixed part in seconds,
/// per-byte part in seconds.
pub const DIRECT_REG_COST: (f64, f64) = (16e-6, 0.06e-9);
/// Access rights of every registration.
const REG_ACCESS: u32 = access::LOCAL_WRITE | access::REMOTE_WRITE | access::REMOTE_READ | access::REMOTE_ATOMIC;
const MEMH_MAGIC: u64 = 0x6962_6d65_6d68_2121;

/// A way of registering memory (an item of `UCX_IB_REG_METHODS`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RegMethod {
    Rcache,
    Odp,
    Direct,
}

impl RegMethod {
    /// The method an item of `UCX_IB_REG_METHODS` names, as UCX 1.13.1
    /// reads them (`rcache` and `odp` in any case, `direct` exactly);
    /// `None` for anything else (UCX skips such items).
    pub fn parse(s: &str) -> Option<RegMethod> {
        if s.eq_ignore_ascii_case("rcache") {
            Some(RegMethod::Rcache)
        } else if s.eq_ignore_ascii_case("odp") {
            Some(RegMethod::Odp)
        } else if s == "direct" {
            Some(RegMethod::Direct)
        } else {
            None
        }
    }
}

/// The md settings that decide how memory is registered. The md config
/// maps onto it as:
///
/// | field | 1.13.1 setting |
/// |---|---|
/// | `reg_methods` | `UCX_IB_REG_METHODS` (items through [`RegMethod::parse`], unknown ones dropped) |
/// | `rcache.event_prio` | `UCX_IB_RCACHE_MEM_PRIO` |
/// | `rcache.overhead` | `UCX_IB_RCACHE_OVERHEAD` (`auto` = `None`, else seconds) |
/// | `rcache.alignment` | `UCX_IB_RCACHE_ADDR_ALIGN` |
/// | `rcache.max_regions` | `UCX_IB_RCACHE_MAX_REGIONS` (`inf` = `u64::MAX`) |
/// | `rcache.max_size` | `UCX_IB_RCACHE_MAX_SIZE` (`inf` = `usize::MAX`) |
/// | `rcache.max_unreleased` | `UCX_IB_RCACHE_MAX_UNRELEASED` |
/// | `rcache.purge_on_fork` | `UCX_IB_RCACHE_PURGE_ON_FORK` |
/// | `direct_cost` | `UCX_IB_MEM_REG_OVERHEAD`, `UCX_IB_MEM_REG_GROWTH` (seconds, seconds/byte) |
///
/// 1.16+ has no `REG_METHODS`/`RCACHE_*` settings for this md: keep the
/// default `reg_methods` (direct) and map the `MEM_REG_*` pair.
#[derive(Clone, Debug, PartialEq)]
pub struct MdParams {
    pub reg_methods: Vec<RegMethod>,
    pub rcache: RcacheParams,
    pub direct_cost: (f64, f64),
    /// `GID_INDEX`: None for auto.
    pub gid_index: Option<u32>,
}

impl Default for MdParams {
    /// The release's defaults (see the module notes).
    fn default() -> MdParams {
        let reg_methods = if release::md_table_has_reg_methods() {
            vec![RegMethod::Rcache, RegMethod::Odp, RegMethod::Direct]
        } else {
            vec![RegMethod::Direct]
        };
        MdParams { reg_methods, rcache: RcacheParams::default(), direct_cost: DIRECT_REG_COST, gid_index: None }
    }
}

/// What `uct_mem_h` points to for this md: the keys the transports read on
/// their data path, and the region.
#[repr(C)]
pub struct IbMemh {
    magic: u64,
    pub lkey: u32,
    pub rkey: u32,
    pub address: usize,
    pub length: usize,
    mr: Option<Mr>,
}

/// A region descriptor of the cache: libucs's header, then our handle.
#[repr(C)]
struct IbRegion {
    hdr: ucs_rcache_region_t,
    memh: IbMemh,
}

/// The handle inside a cache region.
fn region_memh(region: *mut ucs_rcache_region_t) -> *mut IbMemh {
    (region as usize + offset_of!(IbRegion, memh)) as *mut IbMemh
}

/// The cache region a handle of the cache is part of.
fn memh_region(memh: uct_mem_h) -> *mut ucs_rcache_region_t {
    (memh as usize - offset_of!(IbRegion, memh)) as *mut ucs_rcache_region_t
}

/// The keys of a memory handle of an `ib` md, for the data path: `None`
/// for NULL or for something that is not such a handle (checked by a magic
/// number, as the handle is read on every zero-copy operation).
///
/// # Safety
/// `memh` is NULL or points to readable memory of at least the size of
/// [`IbMemh`] (UCT's contract: a handle the caller got from a
/// registration).
#[inline]
pub unsafe fn memh_lkey(memh: uct_mem_h) -> Option<u32> {
    if memh.is_null() {
        return None;
    }
    // SAFETY: readable per the function contract.
    let m = unsafe { &*(memh as *const IbMemh) };
    (m.magic == MEMH_MAGIC).then_some(m.lkey)
}

/// The direct rkey of an unpacked remote key (its low half).
#[inline]
pub fn rkey_direct(rkey: uct_rkey_t) -> u32 {
    rkey as u32
}

/// The rkey atomics use: the high half when it names a key, else the low
/// half.
#[inline]
pub fn rkey_atomic(rkey: uct_rkey_t) -> u32 {
    let hi = (rkey >> 32) as u32;
    if hi != INVALID_KEY {
        hi
    } else {
        rkey as u32
    }
}

/// Register `[address, address + length)` on `pd`, logging a failure
/// (at debug level when `silent`).
fn reg_mr(pd: &Pd, name: &str, address: *mut c_void, length: usize, silent: bool) -> Result<Mr, ucs_status_t> {
    Mr::reg(pd, address as usize, length, REG_ACCESS).map_err(|e| {
        let msg = format!("{}: ibv_reg_mr(address={:p}, length={}, access=0x{:x}) failed: {}{}", name, address, length,
                          REG_ACCESS, e,
                          if e == verbs::Errno::ENOMEM { " (check the locked memory limit, ulimit -l)" } else { "" });
        if silent {
            crate::debug!("{}", msg);
        } else {
            crate::error!("{}", msg);
        }
        UCS_ERR_IO_ERROR
    })
}

/// Deregister the region of a handle, logging a failure.
fn dereg_memh(name: &str, m: &mut IbMemh) -> ucs_status_t {
    m.magic = 0;
    match m.mr.take().map(Mr::dereg) {
        Some(Err(e)) => {
            crate::error!("{}: ibv_dereg_mr(address=0x{:x}, length={}) failed: {}", name, m.address, m.length, e);
            UCS_ERR_IO_ERROR
        }
        _ => UCS_OK,
    }
}

/// What the cache's callbacks need, at an address that does not move with
/// the md.
struct CacheCtx {
    /// The md's PD, shared: a copy of the handle that is never dropped
    /// (the md's own `pd` frees it, after the cache is gone).
    pd: ManuallyDrop<Pd>,
    name: String,
}

/// `mem_reg` of the cache: register the region's (aligned) range; `arg`
/// points to the caller's `UCT_MD_MEM_FLAG_*`.
unsafe extern "C" fn cache_mem_reg(context: *mut c_void, _rcache: *mut ucs_rcache_t, arg: *mut c_void,
                                   region: *mut ucs_rcache_region_t, rflags: u16) -> ucs_status_t {
    let run = || {
        // SAFETY: the context is the md's CacheCtx, alive as long as the
        // cache; arg is NULL or the flags word mem_reg passed to get.
        let (ctx, flags) = unsafe { (&*(context as *const CacheCtx), if arg.is_null() { 0 } else { *(arg as *const u32) }) };
        let silent = rflags & UCS_RCACHE_MEM_REG_HIDE_ERRORS != 0 || flags & UCT_MD_MEM_FLAG_HIDE_ERRORS != 0;
        // SAFETY: libucs passes the region it allocated with our size.
        let (start, end) = unsafe { ((*region).super_.start as usize, (*region).super_.end as usize) };
        let mr = reg_mr(&ctx.pd, &ctx.name, start as *mut c_void, end - start, silent)?;
        let m = IbMemh { magic: MEMH_MAGIC, lkey: mr.lkey(), rkey: mr.rkey(), address: start, length: end - start,
                         mr: Some(mr) };
        // SAFETY: our part of the descriptor (zeroed by libucs, never
        // holding a live handle before a successful registration).
        unsafe { std::ptr::write(region_memh(region), m) };
        Ok(())
    };
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(run)) {
        Ok(Ok(())) => UCS_OK,
        Ok(Err(s)) => s,
        Err(_) => UCS_ERR_IO_ERROR,
    }
}

/// `mem_dereg` of the cache (a region it registered is going away).
unsafe extern "C" fn cache_mem_dereg(context: *mut c_void, _rcache: *mut ucs_rcache_t,
                                     region: *mut ucs_rcache_region_t) {
    let run = || {
        // SAFETY: as in cache_mem_reg; libucs calls this once for a
        // region our mem_reg registered, so our part holds a live handle.
        let (ctx, m) = unsafe { (&*(context as *const CacheCtx), &mut *region_memh(region)) };
        dereg_memh(&ctx.name, m);
    };
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(run));
}

/// `dump_region` of the cache: our keys, for libucs's log lines.
unsafe extern "C" fn cache_dump_region(_context: *mut c_void, _rcache: *mut ucs_rcache_t,
                                       region: *mut ucs_rcache_region_t, buf: *mut c_char, max: usize) {
    // SAFETY: called for registered regions only: our part is written.
    let m = unsafe { &*region_memh(region) };
    let text = format!("lkey 0x{:x} rkey 0x{:x} atomic_rkey 0x{:x}", m.lkey, m.rkey, pack_rkey(m.rkey) >> 32);
    // SAFETY: libucs's buffer of max bytes.
    unsafe { rc::write_c_text(buf, max, &text) };
}

/// The device attributes the transports use.
#[derive(Clone, Debug)]
pub struct DeviceCaps {
    pub phys_port_cnt: u8,
    pub max_qp_wr: i32,
    pub max_sge: i32,
    pub max_cqe: i32,
    pub max_srq_wr: i32,
    pub max_qp_rd_atom: i32,
    pub max_mr_size: u64,
    /// `atomic_cap == IBV_ATOMIC_HCA`: 64-bit atomics are offered.
    pub atomic_hca: bool,
    pub vendor_id: u32,
    pub vendor_part_id: u32,
}

/// An opened `ib` memory domain. Fields drop in order after `drop` (which
/// destroys the cache and frees the direct registrations): the cache's
/// context, the PD, then the device.
pub struct IbMd {
    /// Handles given out and not yet taken back -> how many times.
    memhs: Mutex<HashMap<usize, u32>>,
    /// The registration cache, when the `rcache` method is in use.
    cache: Option<Rcache>,
    cache_ctx: Option<Box<CacheCtx>>,
    /// Reported registration cost (fixed s, s/byte).
    reg_cost: (f64, f64),
    pub pd: Pd,
    pub ctx: Context,
    pub name: String,
    pub caps: DeviceCaps,
    /// The ports as queried when the md was opened (number, state).
    pub ports: Vec<(u8, PortInfo)>,
    /// `GID_INDEX` (None: auto).
    pub gid_index: Option<u32>,
}

/// `IBV_ATOMIC_HCA`.
const ATOMIC_HCA: u32 = 1;

impl IbMd {
    /// Open device `name`: the device, its attributes and ports, a PD, and
    /// the registration method `params` chooses. `fork_init`: `Some(true)`
    /// for `UCX_IB_FORK_INIT=yes` (failure is an error), `Some(false)` for
    /// `try`, `None` for `no`.
    pub fn open(name: &str, fork_init: Option<bool>, params: &MdParams) -> Result<IbMd, ucs_status_t> {
        if let Some(required) = fork_init {
            if let Err(e) = verbs::device::fork_init() {
                if required {
                    crate::error!("ibv_fork_init() failed: {}", e);
                    return Err(UCS_ERR_IO_ERROR);
                }
                crate::debug!("ibv_fork_init() failed: {}, continuing without it", e);
            }
        }
        let ctx = super::device::open(name).map_err(|e| {
            if e == verbs::Errno::ENODEV {
                crate::debug!("ib: no device named {}", name);
                UCS_ERR_NO_DEVICE
            } else {
                crate::error!("ibv_open_device({}) failed: {}", name, e);
                UCS_ERR_IO_ERROR
            }
        })?;
        let a = ctx.query_device().map_err(|e| {
            crate::error!("ibv_query_device({}) failed: {}", name, e);
            UCS_ERR_IO_ERROR
        })?;
        let caps = DeviceCaps {
            phys_port_cnt: a.phys_port_cnt,
            max_qp_wr: a.max_qp_wr,
            max_sge: a.max_sge,
            max_cqe: a.max_cqe,
            max_srq_wr: a.max_srq_wr,
            max_qp_rd_atom: a.max_qp_rd_atom,
            max_mr_size: a.max_mr_size,
            atomic_hca: a.atomic_cap == ATOMIC_HCA,
            vendor_id: a.vendor_id,
            vendor_part_id: a.vendor_part_id,
        };
        let ports = super::device::ports(&ctx, caps.phys_port_cnt);
        let pd = Pd::alloc(&ctx).map_err(|e| {
            crate::error!("ibv_alloc_pd({}) failed: {}", name, e);
            UCS_ERR_IO_ERROR
        })?;
        let mut md = IbMd { memhs: Mutex::new(HashMap::new()), cache: None, cache_ctx: None, reg_cost: (0.0, 0.0), pd,
                            ctx, name: name.to_string(), caps, ports, gid_index: params.gid_index };
        md.choose_reg_method(params)?;
        Ok(md)
    }

    /// The first method of `params.reg_methods` that works.
    fn choose_reg_method(&mut self, params: &MdParams) -> Result<(), ucs_status_t> {
        for m in &params.reg_methods {
            match m {
                RegMethod::Rcache => match self.create_cache(&params.rcache) {
                    Ok(()) => {
                        self.reg_cost = (params.rcache.overhead_secs(), 0.0);
                        crate::debug!("{}: using registration cache", self.name);
                        return Ok(());
                    }
                    Err(s) => crate::debug!("{}: failed to create registration cache: {}", self.name,
                                            crate::core::log::status_str(s)),
                },
                RegMethod::Odp => {
                    crate::debug!("{}: on-demand-paging with global memory region is not supported", self.name)
                }
                RegMethod::Direct => {
                    self.reg_cost = params.direct_cost;
                    crate::debug!("{}: using direct registration", self.name);
                    return Ok(());
                }
            }
        }
        crate::error!("{}: none of the registration methods can be used", self.name);
        Err(UCS_ERR_INVALID_PARAM)
    }

    fn create_cache(&mut self, p: &RcacheParams) -> Result<(), ucs_status_t> {
        // SAFETY: a bitwise copy of the PD handle, never dropped (see
        // CacheCtx); the cache using it is destroyed before self.pd.
        let pd = ManuallyDrop::new(unsafe { std::ptr::read(&self.pd) });
        let ctx = Box::new(CacheCtx { pd, name: self.name.clone() });
        let ops = rc::Ops { mem_reg: cache_mem_reg, mem_dereg: cache_mem_dereg, dump_region: cache_dump_region };
        let context = &*ctx as *const CacheCtx as *mut c_void;
        // SAFETY: the context box is kept next to the cache and dropped
        // after it; the callbacks are thread-safe (verbs calls and reads of
        // the context only).
        let cache = unsafe { Rcache::create(&self.name, std::mem::size_of::<IbRegion>(), p, ops, context)? };
        self.cache = Some(cache);
        self.cache_ctx = Some(ctx);
        Ok(())
    }

    /// The `ib` md behind a generic md object, if it is one.
    pub fn of(imp: &dyn MdImpl) -> Option<&IbMd> {
        (imp as &dyn std::any::Any).downcast_ref::<IbMd>()
    }

    /// Whether registrations go through the cache.
    pub fn uses_cache(&self) -> bool {
        self.cache.is_some()
    }

    fn memhs(&self) -> std::sync::MutexGuard<'_, HashMap<usize, u32>> {
        self.memhs.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Take back one use of a handle given out: false if it is not one.
    fn release_memh(&self, memh: uct_mem_h) -> bool {
        let mut set = self.memhs();
        match set.get_mut(&(memh as usize)) {
            None => false,
            Some(n) if *n > 1 => {
                *n -= 1;
                true
            }
            Some(_) => {
                set.remove(&(memh as usize));
                true
            }
        }
    }

    fn is_memh(&self, memh: uct_mem_h) -> bool {
        self.memhs().contains_key(&(memh as usize))
    }
}

impl Drop for IbMd {
    fn drop(&mut self) {
        let left: Vec<(usize, u32)> = self.memhs.get_mut().unwrap_or_else(|p| p.into_inner()).drain().collect();
        if !left.is_empty() {
            crate::warn!("{}: {} memory region(s) still registered at close, deregistering them", self.name,
                         left.iter().map(|&(_, n)| n as usize).sum::<usize>());
        }
        if let Some(cache) = self.cache.take() {
            // Give back the references still held (libucs refuses to
            // destroy a region in use), then destroying the cache
            // deregisters every region.
            for (h, n) in left {
                for _ in 0..n {
                    // SAFETY: a handle the cache gave out n more times than
                    // it was given back.
                    unsafe { cache.put(memh_region(h as uct_mem_h)) };
                }
            }
            drop(cache);
        } else {
            for (h, _) in left {
                // SAFETY: direct handles in the set are live boxes made by
                // mem_reg, each given out once.
                let mut m = unsafe { Box::from_raw(h as *mut IbMemh) };
                dereg_memh(&self.name, &mut m);
            }
        }
    }
}

impl MdImpl for IbMd {
    fn query(&self, attr: &mut uct_md_attr_t) {
        attr.cap.flags = UCT_MD_FLAG_REG | UCT_MD_FLAG_NEED_MEMH | UCT_MD_FLAG_NEED_RKEY | UCT_MD_FLAG_ADVISE;
        attr.cap.max_alloc = 0;
        attr.cap.max_reg = libc::c_ulong::MAX as _;
        attr.cap.reg_mem_types = 1 << UCS_MEMORY_TYPE_HOST;
        attr.cap.alloc_mem_types = 0;
        attr.cap.access_mem_types = 1 << UCS_MEMORY_TYPE_HOST;
        attr.cap.detect_mem_types = 0;
        attr.rkey_packed_size = RKEY_PACKED_SIZE as _;
        attr.reg_cost.c = self.reg_cost.0;
        attr.reg_cost.m = self.reg_cost.1;
        attr.local_cpus = crate::core::md::all_cpus();
    }

    fn required_mem_flags(&self) -> u8 {
        super::release::md_required_mem_flags()
    }

    // The trait's contract: the caller's pointers are valid (UCT's API).
    #[allow(clippy::not_unsafe_ptr_arg_deref)]
    fn mem_reg(&self, address: *mut c_void, length: usize, flags: u32) -> Result<uct_mem_h, ucs_status_t> {
        let h = match &self.cache {
            Some(cache) => {
                let mut arg = flags;
                // SAFETY: the argument is the flags word cache_mem_reg reads.
                let region = unsafe {
                    cache.get(address, length, libc::PROT_READ | libc::PROT_WRITE, &mut arg as *mut u32 as *mut c_void)?
                };
                region_memh(region) as uct_mem_h
            }
            None => {
                let silent = flags & UCT_MD_MEM_FLAG_HIDE_ERRORS != 0;
                let mr = reg_mr(&self.pd, &self.name, address, length, silent)?;
                let memh = Box::new(IbMemh { magic: MEMH_MAGIC, lkey: mr.lkey(), rkey: mr.rkey(),
                                             address: address as usize, length, mr: Some(mr) });
                Box::into_raw(memh) as uct_mem_h
            }
        };
        *self.memhs().entry(h as usize).or_insert(0) += 1;
        Ok(h)
    }

    fn mem_dereg(&self, memh: uct_mem_h, _flags: u32, _comp: Completion) -> ucs_status_t {
        if !self.release_memh(memh) {
            crate::error!("{}: {:p} is not a memory handle of this memory domain", self.name, memh);
            return UCS_ERR_INVALID_PARAM;
        }
        match &self.cache {
            Some(cache) => {
                // SAFETY: a handle the cache gave out and we had not taken
                // back: its region holds the reference given back here.
                unsafe { cache.put(memh_region(memh)) };
                UCS_OK
            }
            None => {
                // SAFETY: a direct handle is a box made by mem_reg, given
                // out once; removing it from the set made us its owner.
                let mut m = unsafe { Box::from_raw(memh as *mut IbMemh) };
                dereg_memh(&self.name, &mut m)
            }
        }
    }

    fn mem_advise(&self, memh: uct_mem_h, _address: *mut c_void, _length: usize, _advice: u32) -> ucs_status_t {
        // Registered memory is pinned: there is nothing to prefetch.
        if !self.is_memh(memh) {
            crate::error!("{}: {:p} is not a memory handle of this memory domain", self.name, memh);
            return UCS_ERR_INVALID_PARAM;
        }
        UCS_OK
    }

    // The trait's contract: the caller's pointers are valid (UCT's API).
    #[allow(clippy::not_unsafe_ptr_arg_deref)]
    fn mkey_pack(&self, memh: uct_mem_h, flags: u32, buf: *mut u8) -> ucs_status_t {
        if flags & release::unsupported_pack_flags() != 0 {
            crate::debug!("{}: keys that can be invalidated or exported are not supported", self.name);
            return UCS_ERR_UNSUPPORTED;
        }
        if !self.is_memh(memh) {
            crate::error!("{}: {:p} is not a memory handle of this memory domain", self.name, memh);
            return UCS_ERR_INVALID_PARAM;
        }
        // SAFETY: a live handle of ours (checked just above).
        let rkey = unsafe { (*(memh as *const IbMemh)).rkey };
        let packed = pack_rkey(rkey);
        // SAFETY: the caller's buffer holds rkey_packed_size (8) bytes.
        unsafe { std::ptr::copy_nonoverlapping(packed.to_ne_bytes().as_ptr(), buf, RKEY_PACKED_SIZE) };
        UCS_OK
    }
}

/// The packed key of a region whose rkey is `rkey`: the atomic half is
/// "none" up to 1.15; later releases pack the key of the MR atomics use,
/// here the same MR (see [`release::packs_atomic_key`]).
fn pack_rkey(rkey: u32) -> u64 {
    let atomic = if release::packs_atomic_key() { rkey } else { INVALID_KEY };
    ((atomic as u64) << 32) | rkey as u64
}

/// `uct_rkey_unpack` of the component: the 8 bytes as they are.
// The component's contract: `buf` holds the packed key (UCT's API).
#[allow(clippy::not_unsafe_ptr_arg_deref)]
pub fn rkey_unpack(buf: *const u8) -> Result<(uct_rkey_t, *mut c_void), ucs_status_t> {
    if buf.is_null() {
        crate::error!("ib: NULL remote key buffer");
        return Err(UCS_ERR_INVALID_PARAM);
    }
    let mut b = [0u8; RKEY_PACKED_SIZE];
    // SAFETY: the caller's packed key has rkey_packed_size (8) bytes.
    unsafe { std::ptr::copy_nonoverlapping(buf, b.as_mut_ptr(), RKEY_PACKED_SIZE) };
    Ok((u64::from_ne_bytes(b) as uct_rkey_t, std::ptr::null_mut()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_key_choice() {
        assert_eq!(rkey_atomic(0xffff_ffff_0000_1234), 0x1234);
        assert_eq!(rkey_atomic(0x0000_0042_0000_1234), 0x42);
        assert_eq!(rkey_direct(0x0000_0042_0000_1234), 0x1234);
    }

    #[test]
    fn unpack_is_verbatim() {
        let v: u64 = 0xffff_ffff_0102_0304;
        let (k, h) = rkey_unpack(v.to_ne_bytes().as_ptr()).unwrap();
        assert_eq!(k as u64, v);
        assert!(h.is_null());
        assert!(rkey_unpack(std::ptr::null()).is_err());
    }

    #[test]
    fn lkey_of_garbage_is_none() {
        let junk = [0u64; 8];
        // SAFETY: a readable local of more than IbMemh's size.
        assert_eq!(unsafe { memh_lkey(junk.as_ptr() as uct_mem_h) }, None);
        // SAFETY: NULL is allowed.
        assert_eq!(unsafe { memh_lkey(std::ptr::null_mut()) }, None);
    }
}
