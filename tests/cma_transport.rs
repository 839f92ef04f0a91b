//! The `cma` transport driven through the exported API: the md and iface
//! capabilities of UCX 1.13.1, put and get zcopy to ourselves and to a
//! forked child that exposes a buffer, the segment/quota scheduling, flush
//! and event arming while work is queued, a peer that dies (completion
//! status, error handler, ep_check), and configuration errors.
//!
//! When CMA is not usable on the host (seccomp, Yama), the md is not
//! listed and the tests that need it only check that.

use std::cell::UnsafeCell;
use std::ffi::{c_uint, c_void, CStr};
use std::ptr::{null, null_mut};
use std::sync::atomic::{AtomicU32, Ordering};
use ::uct::abi::*;
use ::uct::ffi::component::*;
use ::uct::ffi::config::*;
use ::uct::ffi::ep::*;
use ::uct::ffi::iface::*;
use ::uct::ffi::md::*;
use ::uct::ffi::worker::*;

mod common;
use common::*;

const STUB_RKEY: uct_rkey_t = 0xdead_beef;

/// The cma component, and whether its md is offered here.
fn component() -> (uct_component_h, bool) {
    let mut list: *mut uct_component_h = null_mut();
    let mut n: c_uint = 0;
    // SAFETY: both out-pointers are locals.
    assert_eq!(unsafe { uct_query_components(&mut list, &mut n) }, UCS_OK);
    let mut found = None;
    for i in 0..n as usize {
        // SAFETY: the list just returned holds `n` handles.
        let c = unsafe { *list.add(i) };
        // SAFETY: plain data; all-zero is valid.
        let mut attr: uct_component_attr_t = unsafe { std::mem::zeroed() };
        attr.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME | UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT
            | UCT_COMPONENT_ATTR_FIELD_FLAGS;
        // SAFETY: a handle from the list; `attr` is a local and asks for no
        // md resource array.
        assert_eq!(unsafe { uct_component_query(c, &mut attr) }, UCS_OK);
        // SAFETY: the query wrote a NUL-terminated name.
        if unsafe { CStr::from_ptr(attr.name.as_ptr()) }.to_str().unwrap() == "cma" {
            assert_eq!(attr.flags, 0);
            assert!(attr.md_resource_count <= 1);
            found = Some((c, attr.md_resource_count == 1));
        }
    }
    // cma is the last of UCX's components, as in Debian's UCX; only
    // posix_get (ours alone) follows it.
    let mut last = (n as usize).checked_sub(1).expect("components are registered");
    // SAFETY: `last` indexes the list.
    if component_name(unsafe { *list.add(last) }) == "posix_get" {
        last = last.checked_sub(1).expect("posix_get is not alone");
    }
    // SAFETY: `last` indexes the list.
    assert_eq!(component_name(unsafe { *list.add(last) }), "cma");
    // SAFETY: the list came from uct_query_components and is not used again.
    unsafe { uct_release_component_list(list) };
    found.expect("the cma component is registered")
}

static LAST_ERROR: AtomicU32 = AtomicU32::new(0);

/// Error handler: `arg` is the Cma's error counter.
unsafe extern "C" fn on_error(arg: *mut c_void, _ep: uct_ep_h, status: ucs_status_t) -> ucs_status_t {
    // SAFETY: registered with the Cma's boxed counter, which lives as long
    // as the interface that calls this.
    unsafe { (*(arg as *const AtomicU32)).fetch_add(1, Ordering::SeqCst) };
    LAST_ERROR.store(status as u8 as u32, Ordering::SeqCst);
    UCS_OK
}

/// A completion the library may update while the test holds a shared
/// reference to it (hence the UnsafeCell); starts with count 1.
struct Comp(UnsafeCell<uct_completion_t>);

impl Comp {
    fn new() -> Comp {
        Comp(UnsafeCell::new(uct_completion_t { func: None, count: 1, status: UCS_OK }))
    }

    /// The pointer to hand to the library.
    fn ptr(&self) -> *mut uct_completion_t {
        self.0.get()
    }

    /// The count, which the library updates behind our back.
    fn count(&self) -> i32 {
        // SAFETY: the cell's pointer is valid for as long as `self`; read
        // volatile since the library writes it.
        unsafe { std::ptr::read_volatile(std::ptr::addr_of!((*self.ptr()).count)) }
    }

    fn status(&self) -> ucs_status_t {
        // SAFETY: as in count.
        unsafe { std::ptr::read_volatile(std::ptr::addr_of!((*self.ptr()).status)) }
    }
}

struct Cma {
    async_: *mut ucs_async_context_t,
    worker: uct_worker_h,
    md: uct_md_h,
    config: *mut uct_iface_config_t,
    iface: uct_iface_h,
    errors: Box<AtomicU32>,
}

impl Cma {
    /// Open md and iface with `settings` applied; None when CMA is not
    /// usable here.
    fn open(settings: &[(&CStr, &CStr)]) -> Option<Cma> {
        Self::try_open(settings).map(|r| r.expect("iface opens"))
    }

    fn try_open(settings: &[(&CStr, &CStr)]) -> Option<Result<Cma, ucs_status_t>> {
        let (_, usable) = component();
        if !usable {
            eprintln!("cma is not usable on this host; skipping");
            return None;
        }
        let (async_, worker) = new_worker();
        let md = open_md(c"cma", &[]);
        // SAFETY: the md was just opened.
        let config = unsafe { iface_config(md, c"cma", settings) };
        let errors = Box::new(AtomicU32::new(0));
        let mut p = device_params(c"cma", c"memory");
        p.field_mask |= UCT_IFACE_PARAM_FIELD_ERR_HANDLER | UCT_IFACE_PARAM_FIELD_ERR_HANDLER_ARG
            | UCT_IFACE_PARAM_FIELD_ERR_HANDLER_FLAGS;
        p.err_handler = Some(on_error);
        p.err_handler_arg = &*errors as *const AtomicU32 as *mut c_void;
        p.err_handler_flags = UCT_CB_FLAG_ASYNC;
        let mut iface = null_mut();
        // SAFETY: md, worker and configuration were just made; the names are
        // static; the handler's argument is the boxed counter, which does not
        // move and is freed only after the interface closes (the Cma's last
        // field); the out-pointer is a local.
        let status = unsafe { uct_iface_open(md, worker, &p, config, &mut iface) };
        if status != UCS_OK {
            // SAFETY: all made above, used by nothing else, each released once
            // before the one it was made from.
            unsafe {
                uct_config_release(config as *mut c_void);
                uct_md_close(md);
                uct_worker_destroy(worker);
                ucs_async_context_destroy(async_);
            }
            return Some(Err(status));
        }
        Some(Ok(Cma { async_, worker, md, config, iface, errors }))
    }

    fn attr(&self) -> uct_iface_attr_t {
        // SAFETY: the Cma's interface is open until it drops.
        unsafe { iface_attr(self.iface) }
    }

    fn addresses(&self) -> (Vec<u8>, Vec<u8>) {
        // SAFETY: the Cma's interface is open until it drops.
        unsafe { iface_addresses(self.iface) }
    }

    /// An endpoint to `pid` (our own address with the pid replaced).
    fn ep_to(&self, pid: i32) -> Result<uct_ep_h, ucs_status_t> {
        let (dev, mut addr) = self.addresses();
        let flag = u32::from_ne_bytes(addr[..4].try_into().unwrap()) & (1 << 31);
        addr[..4].copy_from_slice(&(pid as u32 | flag).to_ne_bytes());
        // SAFETY: the interface is open; the addresses are as long as it
        // declared (its own, with the pid changed).
        unsafe { connect_to_iface(self.iface, &dev, &addr) }
    }

    fn ops(&self) -> &uct_iface_ops_t {
        // SAFETY: the Cma's interface is open until it drops, and starts
        // with its operations table.
        unsafe { &(*self.iface).ops }
    }

    /// `ep_put_zcopy` from the `iov` buffers to `remote` in the peer.
    ///
    /// # Safety
    ///
    /// `ep` is a live endpoint of this interface. Until the operation is
    /// over (it returned something other than UCS_INPROGRESS, `comp`
    /// completed, or `ep` was destroyed) the `iov` buffers and `comp` stay
    /// valid, and nothing else accesses `remote` in the peer, which is
    /// either memory of that length or not mapped (then it fails).
    unsafe fn put(&self, ep: uct_ep_h, iov: &[uct_iov_t], remote: u64, comp: *mut uct_completion_t) -> ucs_status_t {
        // SAFETY: forwarded from the caller.
        unsafe { self.ops().ep_put_zcopy.unwrap()(ep, iov.as_ptr(), iov.len(), remote, STUB_RKEY, comp) }
    }

    /// `ep_get_zcopy` from `remote` in the peer into the `iov` buffers.
    ///
    /// # Safety
    ///
    /// As for [`Cma::put`], with the `iov` buffers written (nothing else
    /// touches them until the operation is over).
    unsafe fn get(&self, ep: uct_ep_h, iov: &[uct_iov_t], remote: u64, comp: *mut uct_completion_t) -> ucs_status_t {
        // SAFETY: forwarded from the caller.
        unsafe { self.ops().ep_get_zcopy.unwrap()(ep, iov.as_ptr(), iov.len(), remote, STUB_RKEY, comp) }
    }

    fn iface_progress(&self) -> u32 {
        // SAFETY: the interface is open; used from this thread.
        unsafe { self.ops().iface_progress.unwrap()(self.iface) }
    }

    /// What the inline `uct_worker_progress` does: walk the fast callbacks.
    fn worker_progress(&self) -> u32 {
        // SAFETY: the Cma's worker is live until it drops; used from this
        // thread.
        unsafe { worker_progress(self.worker) }
    }

    fn wait(&self, comp: &Comp) {
        for _ in 0..1_000_000 {
            if comp.count() == 0 {
                return;
            }
            self.worker_progress();
        }
        panic!("operation did not complete");
    }

    fn flush(&self) {
        for _ in 0..1_000_000 {
            // SAFETY: the interface is open; no completion is passed.
            let s = unsafe { self.ops().iface_flush.unwrap()(self.iface, 0, null_mut()) };
            if s == UCS_OK {
                return;
            }
            assert_eq!(s, UCS_INPROGRESS);
            self.worker_progress();
        }
        panic!("flush did not finish");
    }
}

impl Drop for Cma {
    fn drop(&mut self) {
        // SAFETY: everything was opened in try_open and is closed only here,
        // each object before the one it was made from.
        unsafe {
            uct_iface_close(self.iface);
            uct_config_release(self.config as *mut c_void);
            uct_md_close(self.md);
            uct_worker_destroy(self.worker);
            ucs_async_context_destroy(self.async_);
        }
    }
}

fn iov(buf: &[u8]) -> uct_iov_t {
    uct_iov_t { buffer: buf.as_ptr() as *mut c_void, length: buf.len(), memh: null_mut(), stride: 0, count: 1 }
}

/// An iov the kernel writes into (get destinations).
fn iov_mut(buf: &mut [u8]) -> uct_iov_t {
    uct_iov_t { buffer: buf.as_mut_ptr() as *mut c_void, length: buf.len(), memh: null_mut(), stride: 0, count: 1 }
}

fn me() -> i32 {
    std::process::id() as i32
}

/// Whether the cma md of the running release reports registration (up to
/// UCX 1.18).
fn registers() -> bool {
    !::uct::ucs::release::running().since(19)
}

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed)).collect()
}

#[test]
fn md_and_iface_report_the_original_capabilities() {
    let Some(t) = Cma::open(&[]) else { return };
    // SAFETY: the md is the Cma's, open; attribute and bundle structs are
    // plain data (all-zero valid) and locals; `buf` (64 bytes) is registered
    // and outlives the registration, and has room for the packed key (cma's
    // is empty: rkey_packed_size is 0); the key is released and the memory
    // deregistered once; the bogus handle is refused without being used.
    unsafe {
        let mut m: uct_md_attr_t = std::mem::zeroed();
        assert_eq!(uct_md_query(t.md, &mut m), UCS_OK);
        // (from UCX 1.19 the cma md reports no registration; registering
        // still works and hands out the dummy handle)
        let reg = if registers() { UCT_MD_FLAG_REG } else { 0 };
        assert_eq!(m.cap.flags, reg);
        assert_eq!(m.rkey_packed_size, 0);
        assert_eq!(m.cap.reg_mem_types, if reg != 0 { 1 << UCS_MEMORY_TYPE_HOST } else { 0 });
        assert_eq!(m.cap.access_mem_types, 1 << UCS_MEMORY_TYPE_HOST);
        assert_eq!(m.reg_cost.c, if reg != 0 { 9e-9 } else { 0.0 });
        assert_eq!(CStr::from_ptr(m.component_name.as_ptr()).to_str().unwrap(), "cma");

        let mut buf = [0u8; 64];
        let mut memh = null_mut();
        assert_eq!(uct_md_mem_reg(t.md, buf.as_mut_ptr() as *mut c_void, buf.len(), UCT_MD_MEM_ACCESS_ALL, &mut memh),
                   UCS_OK);
        assert!(!memh.is_null());
        assert_eq!(uct_md_mkey_pack(t.md, memh, buf.as_mut_ptr() as *mut c_void), UCS_OK);
        let (c, _) = component();
        let mut rkey: uct_rkey_bundle_t = std::mem::zeroed();
        assert_eq!(uct_rkey_unpack(c, buf.as_ptr() as *const c_void, &mut rkey), UCS_OK);
        assert_eq!(rkey.rkey, STUB_RKEY);
        assert_eq!(uct_rkey_release(c, &rkey), UCS_OK);
        assert_eq!(uct_md_mem_dereg(t.md, memh), UCS_OK);
        assert_eq!(uct_md_mem_dereg(t.md, 0x1234 as uct_mem_h), UCS_ERR_INVALID_PARAM);
    }
    let a = t.attr();
    assert_eq!(a.cap.flags, 0x1c000000448);
    assert_eq!(a.cap.event_flags, 0x13);
    assert_eq!((a.cap.put.max_iov, a.cap.get.max_iov), (16, 16));
    assert_eq!((a.cap.put.max_zcopy, a.cap.get.max_zcopy), (usize::MAX, usize::MAX));
    assert_eq!((a.cap.put.max_short, a.cap.put.max_bcopy, a.cap.am.max_short), (0, 0, 0));
    assert_eq!(a.overhead, 2e-6);
    assert_eq!(a.latency.c, 80e-9);
    assert_eq!(a.bandwidth.dedicated, 11145.0 * 1024.0 * 1024.0);
    assert!(a.iface_addr_len == 4 || a.iface_addr_len == 16);
    assert!(a.device_addr_len == 8 || a.device_addr_len == 16);
    assert_eq!(a.ep_addr_len, 0);
    assert_eq!(a.max_num_eps, usize::MAX);
    let (_, addr) = t.addresses();
    assert_eq!(u32::from_ne_bytes(addr[..4].try_into().unwrap()) & !(1 << 31), me() as u32);
}

#[test]
fn config_names_and_limits() {
    let Some(t) = Cma::open(&[(c"SCOPY_MAX_IOV", c"4"), (c"SCOPY_SEG_SIZE", c"1k"), (c"SCOPY_BW", c"100MBs")]) else { return };
    let a = t.attr();
    assert_eq!(a.cap.put.max_iov, 4);
    assert_eq!(a.bandwidth.dedicated, 100.0 * 1024.0 * 1024.0);
    let ep = t.ep_to(me()).unwrap();
    let bufs: Vec<Vec<u8>> = (0..5).map(|i| vec![i; 8]).collect();
    let list: Vec<uct_iov_t> = bufs.iter().map(|b| iov(b)).collect();
    let c = Comp::new();
    // SAFETY: a live endpoint; five entries exceed MAX_IOV, so the put is
    // refused before anything is read or written.
    assert_eq!(unsafe { t.put(ep, &list, 0x1000, c.ptr()) }, UCS_ERR_INVALID_PARAM);
    // SAFETY: destroyed once, not used after.
    unsafe { uct_ep_destroy(ep) };
    drop(t);
    for bad in [(c"SCOPY_SEG_SIZE", c"0"), (c"SCOPY_TX_QUOTA", c"0"), (c"SCOPY_TX_BUFS_GROW", c"0"),
                (c"SCOPY_TX_MAX_BUFS", c"4")] {
        match Cma::try_open(&[bad]) {
            Some(Err(s)) => assert_eq!(s, UCS_ERR_INVALID_PARAM, "{bad:?}"),
            Some(Ok(_)) => panic!("{bad:?} accepted"),
            None => return,
        }
    }
}

#[test]
fn put_and_get_to_ourselves() {
    // Segments smaller than the transfer: the operations are queued.
    let Some(t) = Cma::open(&[(c"SCOPY_SEG_SIZE", c"1k")]) else { return };
    let ep = t.ep_to(me()).unwrap();
    let src = pattern(5000, 7);
    let mut dst = vec![0u8; 5000];
    // Two iov entries, one with count 2 (4 + 2*2498 bytes = 5000).
    let list = [iov(&src[..4]), uct_iov_t { count: 2, length: 2498, ..iov(&src[4..]) }];
    let c = Comp::new();
    // SAFETY: a live endpoint to ourselves; `dst` (5000 bytes, the total
    // length) is not touched until the wait, and `src` and `c` outlive it.
    assert_eq!(unsafe { t.put(ep, &list, dst.as_mut_ptr() as u64, c.ptr()) }, UCS_INPROGRESS);
    assert_eq!(c.count(), 1, "queued, not done");
    t.wait(&c);
    assert_eq!(c.status(), UCS_OK);
    assert_eq!(dst, src);

    let mut back = vec![0u8; 5000];
    let c = Comp::new();
    let (head, tail) = back.split_at_mut(1000);
    // SAFETY: as above, with `back` written and `dst` only read.
    assert_eq!(unsafe { t.get(ep, &[iov_mut(head), iov_mut(tail)], dst.as_ptr() as u64, c.ptr()) }, UCS_INPROGRESS);
    t.wait(&c);
    assert_eq!(c.status(), UCS_OK);
    assert_eq!(back, src);

    // Nothing to move: done at once, without the completion.
    let c = Comp::new();
    // SAFETY: a live endpoint; an empty transfer touches no memory.
    assert_eq!(unsafe { t.put(ep, &[iov(&src[..0])], dst.as_mut_ptr() as u64, c.ptr()) }, UCS_OK);
    assert_eq!(c.count(), 1);
    // SAFETY: destroyed once, not used after.
    unsafe { uct_ep_destroy(ep) };
}

#[test]
fn segments_quota_flush_and_arm() {
    let Some(t) = Cma::open(&[(c"SCOPY_SEG_SIZE", c"1k"), (c"SCOPY_TX_QUOTA", c"2")]) else { return };
    let eps = [t.ep_to(me()).unwrap(), t.ep_to(me()).unwrap(), t.ep_to(me()).unwrap()];
    let src = pattern(10 * 1024, 3);
    let mut dst = [vec![0u8; src.len()], vec![0u8; src.len()], vec![0u8; src.len()]];
    let c = [Comp::new(), Comp::new(), Comp::new()];
    for i in 0..3 {
        // SAFETY: live endpoints to ourselves; each `dst[i]` has the length
        // of `src` and is not touched until all completions are in (the
        // loop below); `src` and `c` outlive that.
        assert_eq!(unsafe { t.put(eps[i], &[iov(&src)], dst[i].as_mut_ptr() as u64, c[i].ptr()) }, UCS_INPROGRESS);
    }
    // SAFETY: interface and endpoints are live; the refused flush keeps no
    // pointer to `fc`, and `req` is refused (UCS_ERR_BUSY) so not queued.
    unsafe {
        assert_eq!(t.ops().iface_flush.unwrap()(t.iface, 0, null_mut()), UCS_INPROGRESS);
        let fc = Comp::new();
        assert_eq!(t.ops().iface_flush.unwrap()(t.iface, 0, fc.ptr()), UCS_ERR_UNSUPPORTED);
        assert_eq!(t.ops().iface_event_arm.unwrap()(t.iface, UCT_EVENT_SEND_COMP), UCS_ERR_BUSY);
        assert_eq!(t.ops().iface_event_arm.unwrap()(t.iface, UCT_EVENT_RECV), UCS_OK);
        let mut req: uct_pending_req_t = std::mem::zeroed();
        assert_eq!(t.ops().ep_pending_add.unwrap()(eps[0], &mut req, 0), UCS_ERR_BUSY);
    }
    // An ep flush completion comes after the put queued before it.
    let fc = Comp::new();
    // SAFETY: a live endpoint; `fc` outlives the flush (waited for below).
    assert_eq!(unsafe { t.ops().ep_flush.unwrap()(eps[0], 0, fc.ptr()) }, UCS_INPROGRESS);
    // 30 segments of 1k, at most 2 per progress call (TX_QUOTA), and at
    // most one per endpoint and call.
    let mut segments = 0;
    let mut calls = 0;
    while c.iter().any(|c| c.count() != 0) {
        let n = t.iface_progress();
        assert!(n == 2 || (n == 1 && segments >= 28), "TX_QUOTA=2, got {n} after {segments} segments");
        segments += n;
        calls += 1;
        if c[0].count() != 0 {
            assert_eq!(fc.count(), 1);
        }
    }
    assert_eq!((segments, calls), (30, 15));
    for d in &dst {
        assert_eq!(d, &src);
    }
    t.flush();
    assert_eq!(fc.count(), 0);
    assert_eq!(fc.status(), UCS_OK);
    // SAFETY: interface and endpoints are live; no completion is passed;
    // each endpoint is destroyed once and not used after.
    unsafe {
        assert_eq!(t.ops().ep_flush.unwrap()(eps[0], 0, null_mut()), UCS_OK);
        assert_eq!(t.ops().iface_event_arm.unwrap()(t.iface, UCT_EVENT_SEND_COMP), UCS_OK);
        for ep in eps {
            uct_ep_destroy(ep);
        }
    }
}

#[test]
fn round_robin_over_endpoints_and_destroy_with_work_queued() {
    let Some(t) = Cma::open(&[(c"SCOPY_SEG_SIZE", c"256")]) else { return };
    let eps = [t.ep_to(me()).unwrap(), t.ep_to(me()).unwrap()];
    let src = pattern(1024, 9);
    let mut dst = [vec![0u8; 1024], vec![0u8; 1024]];
    let comps = [Comp::new(), Comp::new()];
    for i in 0..2 {
        // SAFETY: live endpoints to ourselves; `dst[i]` (1024 bytes, as
        // `src`) is only read between progress calls, when no segment is
        // being copied; `src` and `comps` outlive the transfers (the second
        // is waited for, the first dropped with its endpoint).
        assert_eq!(unsafe { t.put(eps[i], &[iov(&src)], dst[i].as_mut_ptr() as u64, comps[i].ptr()) },
                   UCS_INPROGRESS);
    }
    // One segment per progress call, alternating between the endpoints.
    assert_eq!(t.iface_progress(), 1);
    assert_eq!(t.iface_progress(), 1);
    assert!(dst[0][..256] == src[..256] && dst[1][..256] == src[..256]);
    assert!(dst[0][256..].iter().all(|&b| b == 0) && dst[1][256..].iter().all(|&b| b == 0));
    // Destroying an endpoint drops its work; the other one finishes.
    // SAFETY: destroyed once, not used after.
    unsafe { uct_ep_destroy(eps[0]) };
    t.wait(&comps[1]);
    assert_eq!(dst[1], src);
    assert_eq!(comps[0].count(), 1);
    t.flush();
    // SAFETY: destroyed once, not used after.
    unsafe { uct_ep_destroy(eps[1]) };
}

#[test]
fn descriptor_limit_gives_no_memory() {
    let Some(t) = Cma::open(&[(c"SCOPY_TX_MAX_BUFS", c"2"), (c"SCOPY_TX_BUFS_GROW", c"1"), (c"SCOPY_SEG_SIZE", c"16")])
    else {
        return;
    };
    let ep = t.ep_to(me()).unwrap();
    let src = pattern(64, 1);
    let mut dst = vec![0u8; 64];
    let c = [Comp::new(), Comp::new(), Comp::new()];
    // SAFETY: a live endpoint to ourselves; the puts all write the same
    // bytes of `dst` (64, the length of `src`), which the test does not
    // touch; `src` and `c` outlive the flushes that end the transfers; the
    // refused put keeps nothing.
    unsafe {
        assert_eq!(t.put(ep, &[iov(&src)], dst.as_mut_ptr() as u64, c[0].ptr()), UCS_INPROGRESS);
        assert_eq!(t.put(ep, &[iov(&src)], dst.as_mut_ptr() as u64, c[1].ptr()), UCS_INPROGRESS);
        assert_eq!(t.put(ep, &[iov(&src)], dst.as_mut_ptr() as u64, c[2].ptr()), UCS_ERR_NO_MEMORY);
    }
    t.flush();
    // SAFETY: as above.
    assert_eq!(unsafe { t.put(ep, &[iov(&src)], dst.as_mut_ptr() as u64, c[2].ptr()) }, UCS_INPROGRESS);
    t.flush();
    assert_eq!(c.iter().map(|c| c.count()).sum::<i32>(), 0);
    // SAFETY: destroyed once, not used after.
    unsafe { uct_ep_destroy(ep) };
}

#[test]
fn bad_remote_address_fails_the_operation() {
    let Some(t) = Cma::open(&[]) else { return };
    let ep = t.ep_to(me()).unwrap();
    let src = pattern(64, 1);
    let c = Comp::new();
    // SAFETY: a live endpoint; address 8 is not mapped, so the kernel
    // refuses the copy; `src` and `c` outlive the wait.
    assert_eq!(unsafe { t.put(ep, &[iov(&src)], 8, c.ptr()) }, UCS_INPROGRESS);
    t.wait(&c);
    assert_eq!(c.status(), UCS_ERR_IO_ERROR);
    // Reported to the error handler (once), from the worker's progress.
    for _ in 0..10 {
        t.worker_progress();
    }
    assert_eq!(t.errors.load(Ordering::SeqCst), 1);
    // SAFETY: destroyed once, not used after.
    unsafe { uct_ep_destroy(ep) };
}

/// A forked child holding `remote` (same address as in the parent). It
/// answers 'C' with 'Y' when its copy of `remote` equals `expect`, and
/// exits on 'Q' or when the command pipe closes.
struct Child {
    pid: i32,
    cmd: i32,
    res: i32,
}

impl Child {
    fn spawn(remote: &[u8], expect: &[u8]) -> Child {
        let mut cmd = [0; 2];
        let mut res = [0; 2];
        // SAFETY: pipe() fills the two-int locals. After fork() the child
        // only makes async-signal-safe calls (read, write, _exit) and reads
        // `remote` and `expect`, which its copy of the address space holds
        // at the same addresses for `len` bytes each; the parent closes the
        // ends it does not use, once.
        unsafe {
            assert_eq!(libc::pipe(cmd.as_mut_ptr()), 0);
            assert_eq!(libc::pipe(res.as_mut_ptr()), 0);
            let pid = libc::fork();
            assert!(pid >= 0);
            if pid == 0 {
                // Child: only async-signal-safe calls from here on. The
                // parent changes `remote` behind the compiler's back, hence
                // the volatile reads.
                let (rp, ep, len) = (remote.as_ptr(), expect.as_ptr(), remote.len().min(expect.len()));
                let mut b = 0u8;
                while libc::read(cmd[0], &mut b as *mut u8 as *mut c_void, 1) == 1 {
                    match b {
                        b'C' => {
                            let same = (0..len).all(|i| std::ptr::read_volatile(rp.add(i)) == *ep.add(i));
                            let ok = if same && remote.len() == expect.len() { b'Y' } else { b'N' };
                            libc::write(res[1], &ok as *const u8 as *const c_void, 1);
                        }
                        _ => break,
                    }
                }
                libc::_exit(0);
            }
            libc::close(cmd[0]);
            libc::close(res[1]);
            Child { pid, cmd: cmd[1], res: res[0] }
        }
    }

    fn check(&self) -> bool {
        let mut b = b'C';
        // SAFETY: the pipe ends are the Child's, open until it drops; `b` is
        // a one-byte local.
        unsafe {
            assert_eq!(libc::write(self.cmd, &b as *const u8 as *const c_void, 1), 1);
            assert_eq!(libc::read(self.res, &mut b as *mut u8 as *mut c_void, 1), 1);
        }
        b == b'Y'
    }

    fn kill(&self) {
        // SAFETY: plain system calls on our child's pid; `st` is a local.
        unsafe {
            if libc::kill(self.pid, libc::SIGKILL) == 0 {
                let mut st = 0;
                libc::waitpid(self.pid, &mut st, 0);
            }
        }
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        // Killed rather than told to quit: children forked by tests running
        // in parallel inherit each other's pipe ends, so EOF is not reliable.
        self.kill();
        // SAFETY: the Child's own pipe ends, closed once, here.
        unsafe {
            libc::close(self.cmd);
            libc::close(self.res);
        }
    }
}

#[test]
fn put_and_get_with_a_child_process() {
    let Some(t) = Cma::open(&[(c"SCOPY_SEG_SIZE", c"4k")]) else { return };
    let before = pattern(20000, 5);
    let after = pattern(20000, 77);
    let mut remote = before.clone();
    let child = Child::spawn(&remote, &after);
    // Our own copy changes; the child's keeps `before`.
    remote.fill(0);
    let ep = t.ep_to(child.pid).unwrap();

    let mut got = vec![0u8; 20000];
    let c = Comp::new();
    // SAFETY: a live endpoint to the child, which holds 20000 bytes at
    // `remote` (its copy) and only reads them; `got` (20000 bytes) and `c`
    // are not touched until the wait.
    assert_eq!(unsafe { t.get(ep, &[iov_mut(&mut got)], remote.as_ptr() as u64, c.ptr()) }, UCS_INPROGRESS);
    t.wait(&c);
    assert_eq!(c.status(), UCS_OK);
    assert_eq!(got, before);
    assert!(!child.check());

    let c = Comp::new();
    // SAFETY: as above, now writing the child's 20000 bytes (it reads them
    // only when asked, after the wait); `after` and `c` outlive the wait.
    let s = unsafe { t.put(ep, &[iov(&after[..7]), iov(&after[7..])], remote.as_ptr() as u64, c.ptr()) };
    assert_eq!(s, UCS_INPROGRESS);
    t.wait(&c);
    assert_eq!(c.status(), UCS_OK);
    assert!(child.check(), "the child sees the data");
    assert!(remote.iter().all(|&b| b == 0), "our own copy is untouched");

    // ep_check on a live peer: no error.
    // SAFETY: a live endpoint; the call with a completion is refused
    // without keeping it.
    unsafe {
        assert_eq!(uct_ep_check(ep, 0, null_mut()), UCS_OK);
        let cc = Comp::new();
        assert_eq!(uct_ep_check(ep, 0, cc.ptr()), UCS_ERR_INVALID_PARAM);
        assert_eq!(uct_ep_check(ep, 1, null_mut()), UCS_ERR_INVALID_PARAM);
    }
    for _ in 0..10 {
        t.worker_progress();
    }
    assert_eq!(t.errors.load(Ordering::SeqCst), 0);
    // SAFETY: destroyed once, not used after.
    unsafe { uct_ep_destroy(ep) };
}

#[test]
fn dead_peer_fails_operations_and_is_reported() {
    let Some(t) = Cma::open(&[]) else { return };
    let buf = pattern(256, 2);
    let child = Child::spawn(&buf, &buf);
    let ep = t.ep_to(child.pid).unwrap();
    let ep2 = t.ep_to(child.pid).unwrap();
    child.kill();

    // Two operations fail; the handler hears of the endpoint once.
    let c = [Comp::new(), Comp::new()];
    let mut sink = vec![0u8; 256];
    // SAFETY: a live endpoint to a dead peer: both copies fail without
    // touching memory; `buf`, `sink` and `c` outlive the waits.
    unsafe {
        assert_eq!(t.put(ep, &[iov(&buf)], buf.as_ptr() as u64, c[0].ptr()), UCS_INPROGRESS);
        assert_eq!(t.get(ep, &[iov_mut(&mut sink)], buf.as_ptr() as u64, c[1].ptr()), UCS_INPROGRESS);
    }
    t.wait(&c[0]);
    t.wait(&c[1]);
    assert_eq!((c[0].status(), c[1].status()), (UCS_ERR_IO_ERROR, UCS_ERR_IO_ERROR));
    for _ in 0..10 {
        t.worker_progress();
    }
    assert_eq!(t.errors.load(Ordering::SeqCst), 1);
    assert_eq!(LAST_ERROR.load(Ordering::SeqCst), UCS_ERR_CONNECTION_RESET as u8 as u32);

    // ep_check finds the peer gone and reports it asynchronously.
    // SAFETY: a live endpoint; no completion is passed.
    unsafe { assert_eq!(uct_ep_check(ep2, 0, null_mut()), UCS_OK) };
    for _ in 0..10 {
        t.worker_progress();
    }
    assert_eq!(t.errors.load(Ordering::SeqCst), 2);

    // A new endpoint to the dead pid is refused.
    assert_eq!(t.ep_to(child.pid).err(), Some(UCS_ERR_ENDPOINT_TIMEOUT));
    // SAFETY: each destroyed once, not used after.
    unsafe {
        uct_ep_destroy(ep);
        uct_ep_destroy(ep2);
    }
}

#[test]
fn unreachable_addresses() {
    let Some(t) = Cma::open(&[]) else { return };
    let (mut dev, addr) = t.addresses();
    // SAFETY: the interface is the Cma's, open; every address buffer is at
    // least as long as the interface declared (or NULL, which it checks);
    // the parameter struct is plain data (all-zero valid) and the creation
    // is refused.
    unsafe {
        assert_ne!(uct_iface_is_reachable(t.iface, dev.as_ptr() as *const _, addr.as_ptr() as *const _), 0);
        assert_eq!(uct_iface_is_reachable(t.iface, null(), addr.as_ptr() as *const _), 0);
        dev[0] ^= 1;
        assert_eq!(uct_iface_is_reachable(t.iface, dev.as_ptr() as *const _, addr.as_ptr() as *const _), 0);
        dev[0] ^= 1;
        // A peer in another pid namespace.
        let mut other = [0u8; 16];
        other[..4].copy_from_slice(&(me() as u32 | 1 << 31).to_ne_bytes());
        other[8..].copy_from_slice(&u64::MAX.to_ne_bytes());
        assert_eq!(uct_iface_is_reachable(t.iface, dev.as_ptr() as *const _, other.as_ptr() as *const _), 0);
        // Endpoint creation needs both addresses.
        let mut p: uct_ep_params_t = std::mem::zeroed();
        p.field_mask = UCT_EP_PARAM_FIELD_IFACE | UCT_EP_PARAM_FIELD_IFACE_ADDR;
        p.iface = t.iface;
        p.iface_addr = addr.as_ptr() as *const _;
        let mut ep = null_mut();
        assert_eq!(uct_ep_create(&p, &mut ep), UCS_ERR_INVALID_PARAM);
    }
}

#[test]
fn memory_invalidate_is_reported_only_on_request() {
    let (_, usable) = component();
    if !usable {
        return;
    }
    for (value, expect) in [(c"n", 0), (c"y", UCT_MD_FLAG_INVALIDATE)] {
        let md = open_md(c"cma", &[(c"MEMORY_INVALIDATE", value)]);
        // SAFETY: `md` was just opened and is closed once, at the end; the
        // attribute struct is plain data (all-zero valid) and a local; `buf`
        // outlives its registration; the invalidating deregistration either
        // is refused (then the plain one follows) or completes `cc` before
        // returning.
        unsafe {
            let mut m: uct_md_attr_t = std::mem::zeroed();
            assert_eq!(uct_md_query(md, &mut m), UCS_OK);
            assert_eq!(m.cap.flags, if registers() { UCT_MD_FLAG_REG } else { 0 } | expect);
            let mut buf = [0u8; 16];
            let mut memh = null_mut();
            assert_eq!(uct_md_mem_reg(md, buf.as_mut_ptr() as *mut c_void, 16, UCT_MD_MEM_ACCESS_ALL, &mut memh), UCS_OK);
            let cc = Comp::new();
            let p = uct_md_mem_dereg_params_t {
                field_mask: UCT_MD_MEM_DEREG_FIELD_MEMH | UCT_MD_MEM_DEREG_FIELD_FLAGS
                    | UCT_MD_MEM_DEREG_FIELD_COMPLETION,
                flags: UCT_MD_MEM_DEREG_FLAG_INVALIDATE,
                memh,
                comp: cc.ptr(),
            };
            if expect == 0 {
                assert_eq!(uct_md_mem_dereg_v2(md, &p), UCS_ERR_UNSUPPORTED);
                assert_eq!(uct_md_mem_dereg(md, memh), UCS_OK);
            } else {
                assert_eq!(uct_md_mem_dereg_v2(md, &p), UCS_OK);
                assert_eq!(cc.count(), 0);
            }
            uct_md_close(md);
        }
    }
}

#[test]
fn progress_is_on_the_worker_only_while_work_is_queued() {
    let Some(t) = Cma::open(&[(c"SCOPY_SEG_SIZE", c"1k")]) else { return };
    // SAFETY: the Cma's worker is live; its fast array has more than
    // UCS_CALLBACKQ_FAST_COUNT slots; taking a field's address reads nothing.
    let ours = |t: &Cma| unsafe {
        let elems = std::ptr::addr_of!((*t.worker).progress_q.fast_elems) as *const ucs_callbackq_elem_t;
        (0..UCS_CALLBACKQ_FAST_COUNT).any(|i| std::ptr::read_volatile(elems.add(i)).arg == t.iface as *mut c_void)
    };
    // SAFETY: the Cma's interface is open; the flags are valid.
    unsafe { t.ops().iface_progress_enable.unwrap()(t.iface, UCT_PROGRESS_SEND | UCT_PROGRESS_RECV) };
    t.worker_progress();
    assert!(!ours(&t), "enabling progress registers nothing");
    let ep = t.ep_to(me()).unwrap();
    let src = pattern(4096, 4);
    let mut dst = vec![0u8; 4096];
    let c = Comp::new();
    // SAFETY: a live endpoint to ourselves; `dst` (4096 bytes, as `src`) is
    // not touched until the wait; `src` and `c` outlive it.
    assert_eq!(unsafe { t.put(ep, &[iov(&src)], dst.as_mut_ptr() as u64, c.ptr()) }, UCS_INPROGRESS);
    t.wait(&c);
    assert_eq!(dst, src);
    for _ in 0..3 {
        t.worker_progress();
    }
    assert!(!ours(&t), "an idle interface leaves the worker");
    // SAFETY: interface and endpoint are live; the endpoint is destroyed
    // once and not used after.
    unsafe {
        t.ops().iface_progress_disable.unwrap()(t.iface, UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
        uct_ep_destroy(ep);
    }
}

#[test]
fn one_segment_transfers_complete_at_once() {
    let Some(t) = Cma::open(&[]) else { return };
    let ep = t.ep_to(me()).unwrap();
    let src = pattern(4096, 9);
    let mut dst = vec![0u8; 4096];
    let c = Comp::new();
    // Nothing queued ahead and one segment's worth: done before returning,
    // the completion untouched.
    // SAFETY: a live endpoint to ourselves; `dst` (4096 bytes, as `src`)
    // and `c` outlive the put, which (asserted) finishes before returning.
    assert_eq!(unsafe { t.put(ep, &[iov(&src)], dst.as_mut_ptr() as u64, c.ptr()) }, UCS_OK);
    assert_eq!(dst, src);
    assert_eq!(c.count(), 1);
    t.flush();
}

#[test]
fn peer_addresses_naming_no_process_are_refused() {
    let Some(c) = Cma::open(&[]) else { return };
    let (dev, addr) = c.addresses();
    // pid 0 (with or without the namespace flag kept) names no process.
    let mut bad = addr.clone();
    let flag = u32::from_ne_bytes(addr[..4].try_into().unwrap()) & (1 << 31);
    bad[..4].copy_from_slice(&flag.to_ne_bytes());
    // SAFETY: the interface is open; the addresses are as long as it declared.
    assert_eq!(unsafe { uct_iface_is_reachable(c.iface, dev.as_ptr() as *const _, bad.as_ptr() as *const _) }, 0);
    // SAFETY: plain data; all-zero means "no field set".
    let mut p: uct_ep_params_t = unsafe { std::mem::zeroed() };
    p.field_mask = UCT_EP_PARAM_FIELD_IFACE | UCT_EP_PARAM_FIELD_DEV_ADDR | UCT_EP_PARAM_FIELD_IFACE_ADDR;
    p.iface = c.iface;
    p.dev_addr = dev.as_ptr() as *const uct_device_addr_t;
    p.iface_addr = bad.as_ptr() as *const uct_iface_addr_t;
    let mut ep = std::ptr::null_mut();
    // SAFETY: as above; the out-pointer is a local.
    assert_eq!(unsafe { uct_ep_create(&p, &mut ep) }, UCS_ERR_INVALID_PARAM);
    // Our own pid still works.
    let ep = c.ep_to(me()).expect("ep to ourselves");
    // SAFETY: just created, destroyed once.
    unsafe { uct_ep_destroy(ep) };
}
