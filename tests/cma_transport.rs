//! The `cma` transport driven through the exported API: the md and iface
//! capabilities of UCX 1.13.1, put and get zcopy to ourselves and to a
//! forked child that exposes a buffer, the segment/quota scheduling, flush
//! and event arming while work is queued, a peer that dies (completion
//! status, error handler, ep_check), and configuration errors.
//!
//! When CMA is not usable on the host (seccomp, Yama), the md is not
//! listed and the tests that need it only check that.

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

extern "C" {
    fn ucs_async_context_create(mode: u32, async_p: *mut *mut ucs_async_context_t) -> ucs_status_t;
    fn ucs_async_context_destroy(async_: *mut ucs_async_context_t);
}

const STUB_RKEY: uct_rkey_t = 0xdead_beef;

/// The cma component, and whether its md is offered here.
fn component() -> (uct_component_h, bool) {
    let mut list: *mut uct_component_h = null_mut();
    let mut n: c_uint = 0;
    unsafe {
        assert_eq!(uct_query_components(&mut list, &mut n), UCS_OK);
        let mut found = None;
        for i in 0..n as usize {
            let c = *list.add(i);
            let mut attr: uct_component_attr_t = std::mem::zeroed();
            attr.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME | UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT
                | UCT_COMPONENT_ATTR_FIELD_FLAGS;
            assert_eq!(uct_component_query(c, &mut attr), UCS_OK);
            if CStr::from_ptr(attr.name.as_ptr()).to_str().unwrap() == "cma" {
                assert_eq!(attr.flags, 0);
                assert!(attr.md_resource_count <= 1);
                found = Some((c, attr.md_resource_count == 1));
            }
        }
        // cma is the last component, as in Debian's UCX.
        let mut last: uct_component_attr_t = std::mem::zeroed();
        last.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME;
        assert_eq!(uct_component_query(*list.add(n as usize - 1), &mut last), UCS_OK);
        assert_eq!(CStr::from_ptr(last.name.as_ptr()).to_str().unwrap(), "cma");
        uct_release_component_list(list);
        found.expect("the cma component is registered")
    }
}

static LAST_ERROR: AtomicU32 = AtomicU32::new(0);

unsafe extern "C" fn on_error(arg: *mut c_void, _ep: uct_ep_h, status: ucs_status_t) -> ucs_status_t {
    (*(arg as *const AtomicU32)).fetch_add(1, Ordering::SeqCst);
    LAST_ERROR.store(status as u8 as u32, Ordering::SeqCst);
    UCS_OK
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
        let (c, usable) = component();
        if !usable {
            eprintln!("cma is not usable on this host; skipping");
            return None;
        }
        unsafe {
            let mut async_ = null_mut();
            assert_eq!(ucs_async_context_create(1, &mut async_), UCS_OK);
            let mut worker = null_mut();
            assert_eq!(uct_worker_create(async_, UCS_THREAD_MODE_SINGLE, &mut worker), UCS_OK);
            let mut mdc = null_mut();
            assert_eq!(uct_md_config_read(c, null(), null(), &mut mdc), UCS_OK);
            let mut md = null_mut();
            assert_eq!(uct_md_open(c, c"cma".as_ptr(), mdc, &mut md), UCS_OK);
            uct_config_release(mdc as *mut c_void);
            let mut config = null_mut();
            assert_eq!(uct_md_iface_config_read(md, c"cma".as_ptr(), null(), null(), &mut config), UCS_OK);
            for (k, v) in settings {
                assert_eq!(uct_config_modify(config as *mut c_void, k.as_ptr(), v.as_ptr()), UCS_OK, "{k:?}={v:?}");
            }
            let errors = Box::new(AtomicU32::new(0));
            let mut p: uct_iface_params_t = std::mem::zeroed();
            p.field_mask = UCT_IFACE_PARAM_FIELD_OPEN_MODE | UCT_IFACE_PARAM_FIELD_DEVICE
                | UCT_IFACE_PARAM_FIELD_ERR_HANDLER | UCT_IFACE_PARAM_FIELD_ERR_HANDLER_ARG
                | UCT_IFACE_PARAM_FIELD_ERR_HANDLER_FLAGS;
            p.open_mode = UCT_IFACE_OPEN_MODE_DEVICE;
            p.mode.device.tl_name = c"cma".as_ptr();
            p.mode.device.dev_name = c"memory".as_ptr();
            p.err_handler = Some(on_error);
            p.err_handler_arg = &*errors as *const AtomicU32 as *mut c_void;
            p.err_handler_flags = UCT_CB_FLAG_ASYNC;
            let mut iface = null_mut();
            let status = uct_iface_open(md, worker, &p, config, &mut iface);
            if status != UCS_OK {
                uct_config_release(config as *mut c_void);
                uct_md_close(md);
                uct_worker_destroy(worker);
                ucs_async_context_destroy(async_);
                return Some(Err(status));
            }
            Some(Ok(Cma { async_, worker, md, config, iface, errors }))
        }
    }

    fn attr(&self) -> uct_iface_attr_t {
        unsafe {
            let mut a: uct_iface_attr_t = std::mem::zeroed();
            assert_eq!(uct_iface_query(self.iface, &mut a), UCS_OK);
            a
        }
    }

    fn addresses(&self) -> (Vec<u8>, Vec<u8>) {
        let a = self.attr();
        let mut dev = vec![0u8; a.device_addr_len];
        let mut addr = vec![0u8; a.iface_addr_len];
        unsafe {
            assert_eq!(uct_iface_get_device_address(self.iface, dev.as_mut_ptr() as *mut _), UCS_OK);
            assert_eq!(uct_iface_get_address(self.iface, addr.as_mut_ptr() as *mut _), UCS_OK);
        }
        (dev, addr)
    }

    /// An endpoint to `pid` (our own address with the pid replaced).
    fn ep_to(&self, pid: i32) -> Result<uct_ep_h, ucs_status_t> {
        let (dev, mut addr) = self.addresses();
        let flag = u32::from_ne_bytes(addr[..4].try_into().unwrap()) & (1 << 31);
        addr[..4].copy_from_slice(&(pid as u32 | flag).to_ne_bytes());
        unsafe {
            assert_ne!(uct_iface_is_reachable(self.iface, dev.as_ptr() as *const _, addr.as_ptr() as *const _), 0);
            let mut p: uct_ep_params_t = std::mem::zeroed();
            p.field_mask = UCT_EP_PARAM_FIELD_IFACE | UCT_EP_PARAM_FIELD_DEV_ADDR | UCT_EP_PARAM_FIELD_IFACE_ADDR;
            p.iface = self.iface;
            p.dev_addr = dev.as_ptr() as *const _;
            p.iface_addr = addr.as_ptr() as *const _;
            let mut ep = null_mut();
            let s = uct_ep_create(&p, &mut ep);
            if s == UCS_OK { Ok(ep) } else { Err(s) }
        }
    }

    fn ops(&self) -> &uct_iface_ops_t {
        unsafe { &(*self.iface).ops }
    }

    fn put(&self, ep: uct_ep_h, iov: &[uct_iov_t], remote: u64, comp: *mut uct_completion_t) -> ucs_status_t {
        unsafe { self.ops().ep_put_zcopy.unwrap()(ep, iov.as_ptr(), iov.len(), remote, STUB_RKEY, comp) }
    }

    fn get(&self, ep: uct_ep_h, iov: &[uct_iov_t], remote: u64, comp: *mut uct_completion_t) -> ucs_status_t {
        unsafe { self.ops().ep_get_zcopy.unwrap()(ep, iov.as_ptr(), iov.len(), remote, STUB_RKEY, comp) }
    }

    fn iface_progress(&self) -> u32 {
        unsafe { self.ops().iface_progress.unwrap()(self.iface) }
    }

    /// What the inline `uct_worker_progress` does: walk the fast callbacks.
    fn worker_progress(&self) -> u32 {
        let mut n = 0;
        unsafe {
            let elems = std::ptr::addr_of!((*self.worker).progress_q.fast_elems) as *const ucs_callbackq_elem_t;
            for i in 0..UCS_CALLBACKQ_FAST_COUNT + 1 {
                let e = std::ptr::read_volatile(elems.add(i));
                match e.cb {
                    Some(cb) => n += cb(e.arg),
                    None => break,
                }
            }
        }
        n
    }

    fn wait(&self, comp: *const uct_completion_t) {
        for _ in 0..1_000_000 {
            if pending(comp) == 0 {
                return;
            }
            self.worker_progress();
        }
        panic!("operation did not complete");
    }

    fn flush(&self) {
        for _ in 0..1_000_000 {
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

/// The count of a completion the library updates behind our back.
fn pending(comp: *const uct_completion_t) -> i32 {
    unsafe { std::ptr::read_volatile(std::ptr::addr_of!((*comp).count)) }
}

fn comp() -> uct_completion_t {
    uct_completion_t { func: None, count: 1, status: UCS_OK }
}

fn me() -> i32 {
    std::process::id() as i32
}

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed)).collect()
}

#[test]
fn md_and_iface_report_the_1_13_1_capabilities() {
    let Some(t) = Cma::open(&[]) else { return };
    unsafe {
        let mut m: uct_md_attr_t = std::mem::zeroed();
        assert_eq!(uct_md_query(t.md, &mut m), UCS_OK);
        assert_eq!(m.cap.flags, UCT_MD_FLAG_REG);
        assert_eq!(m.rkey_packed_size, 0);
        assert_eq!(m.cap.reg_mem_types, 1 << UCS_MEMORY_TYPE_HOST);
        assert_eq!(m.cap.access_mem_types, 1 << UCS_MEMORY_TYPE_HOST);
        assert_eq!(m.reg_cost.c, 9e-9);
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
    let mut c = comp();
    assert_eq!(t.put(ep, &list, 0x1000, &mut c), UCS_ERR_INVALID_PARAM);
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
    let mut c = comp();
    assert_eq!(t.put(ep, &list, dst.as_mut_ptr() as u64, &mut c), UCS_INPROGRESS);
    assert_eq!(pending(&c), 1, "queued, not done");
    t.wait(&c as *const _);
    assert_eq!(c.status, UCS_OK);
    assert_eq!(dst, src);

    let mut back = vec![0u8; 5000];
    let mut c = comp();
    let (head, tail) = back.split_at_mut(1000);
    assert_eq!(t.get(ep, &[iov_mut(head), iov_mut(tail)], dst.as_ptr() as u64, &mut c), UCS_INPROGRESS);
    t.wait(&c as *const _);
    assert_eq!(c.status, UCS_OK);
    assert_eq!(back, src);

    // Nothing to move: done at once, without the completion.
    let mut c = comp();
    assert_eq!(t.put(ep, &[iov(&src[..0])], dst.as_mut_ptr() as u64, &mut c), UCS_OK);
    assert_eq!(pending(&c), 1);
    unsafe { uct_ep_destroy(ep) };
}

#[test]
fn segments_quota_flush_and_arm() {
    let Some(t) = Cma::open(&[(c"SCOPY_SEG_SIZE", c"1k"), (c"SCOPY_TX_QUOTA", c"2")]) else { return };
    let eps = [t.ep_to(me()).unwrap(), t.ep_to(me()).unwrap(), t.ep_to(me()).unwrap()];
    let src = pattern(10 * 1024, 3);
    let mut dst = [vec![0u8; src.len()], vec![0u8; src.len()], vec![0u8; src.len()]];
    let mut c = [comp(), comp(), comp()];
    for i in 0..3 {
        assert_eq!(t.put(eps[i], &[iov(&src)], dst[i].as_mut_ptr() as u64, &mut c[i]), UCS_INPROGRESS);
    }
    unsafe {
        assert_eq!(t.ops().iface_flush.unwrap()(t.iface, 0, null_mut()), UCS_INPROGRESS);
        let mut fc = comp();
        assert_eq!(t.ops().iface_flush.unwrap()(t.iface, 0, &mut fc), UCS_ERR_UNSUPPORTED);
        assert_eq!(t.ops().iface_event_arm.unwrap()(t.iface, UCT_EVENT_SEND_COMP), UCS_ERR_BUSY);
        assert_eq!(t.ops().iface_event_arm.unwrap()(t.iface, UCT_EVENT_RECV), UCS_OK);
        let mut req: uct_pending_req_t = std::mem::zeroed();
        assert_eq!(t.ops().ep_pending_add.unwrap()(eps[0], &mut req, 0), UCS_ERR_BUSY);
    }
    // An ep flush completion comes after the put queued before it.
    let mut fc = comp();
    assert_eq!(unsafe { t.ops().ep_flush.unwrap()(eps[0], 0, &mut fc) }, UCS_INPROGRESS);
    // 30 segments of 1k, at most 2 per progress call (TX_QUOTA), and at
    // most one per endpoint and call.
    let mut segments = 0;
    let mut calls = 0;
    while c.iter().any(|c| pending(c) != 0) {
        let n = t.iface_progress();
        assert!(n == 2 || (n == 1 && segments >= 28), "TX_QUOTA=2, got {n} after {segments} segments");
        segments += n;
        calls += 1;
        if pending(&c[0]) != 0 {
            assert_eq!(pending(&fc), 1);
        }
    }
    assert_eq!((segments, calls), (30, 15));
    for d in &dst {
        assert_eq!(d, &src);
    }
    t.flush();
    assert_eq!(pending(&fc), 0);
    assert_eq!(fc.status, UCS_OK);
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
    let mut comps = [comp(), comp()];
    for i in 0..2 {
        assert_eq!(t.put(eps[i], &[iov(&src)], dst[i].as_mut_ptr() as u64, &mut comps[i]), UCS_INPROGRESS);
    }
    // One segment per progress call, alternating between the endpoints.
    assert_eq!(t.iface_progress(), 1);
    assert_eq!(t.iface_progress(), 1);
    assert!(dst[0][..256] == src[..256] && dst[1][..256] == src[..256]);
    assert!(dst[0][256..].iter().all(|&b| b == 0) && dst[1][256..].iter().all(|&b| b == 0));
    // Destroying an endpoint drops its work; the other one finishes.
    unsafe { uct_ep_destroy(eps[0]) };
    t.wait(&comps[1] as *const _);
    assert_eq!(dst[1], src);
    assert_eq!(pending(&comps[0]), 1);
    t.flush();
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
    let mut c = [comp(), comp(), comp()];
    assert_eq!(t.put(ep, &[iov(&src)], dst.as_mut_ptr() as u64, &mut c[0]), UCS_INPROGRESS);
    assert_eq!(t.put(ep, &[iov(&src)], dst.as_mut_ptr() as u64, &mut c[1]), UCS_INPROGRESS);
    assert_eq!(t.put(ep, &[iov(&src)], dst.as_mut_ptr() as u64, &mut c[2]), UCS_ERR_NO_MEMORY);
    t.flush();
    assert_eq!(t.put(ep, &[iov(&src)], dst.as_mut_ptr() as u64, &mut c[2]), UCS_INPROGRESS);
    t.flush();
    assert_eq!(c.iter().map(|c| pending(c)).sum::<i32>(), 0);
    unsafe { uct_ep_destroy(ep) };
}

#[test]
fn bad_remote_address_fails_the_operation() {
    let Some(t) = Cma::open(&[]) else { return };
    let ep = t.ep_to(me()).unwrap();
    let src = pattern(64, 1);
    let mut c = comp();
    assert_eq!(t.put(ep, &[iov(&src)], 8, &mut c), UCS_INPROGRESS);
    t.wait(&c as *const _);
    assert_eq!(c.status, UCS_ERR_IO_ERROR);
    // Reported to the error handler (once), from the worker's progress.
    for _ in 0..10 {
        t.worker_progress();
    }
    assert_eq!(t.errors.load(Ordering::SeqCst), 1);
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
        unsafe {
            assert_eq!(libc::write(self.cmd, &b as *const u8 as *const c_void, 1), 1);
            assert_eq!(libc::read(self.res, &mut b as *mut u8 as *mut c_void, 1), 1);
        }
        b == b'Y'
    }

    fn kill(&self) {
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
    let mut c = comp();
    assert_eq!(t.get(ep, &[iov_mut(&mut got)], remote.as_ptr() as u64, &mut c), UCS_INPROGRESS);
    t.wait(&c as *const _);
    assert_eq!(c.status, UCS_OK);
    assert_eq!(got, before);
    assert!(!child.check());

    let mut c = comp();
    assert_eq!(t.put(ep, &[iov(&after[..7]), iov(&after[7..])], remote.as_ptr() as u64, &mut c), UCS_INPROGRESS);
    t.wait(&c as *const _);
    assert_eq!(c.status, UCS_OK);
    assert!(child.check(), "the child sees the data");
    assert!(remote.iter().all(|&b| b == 0), "our own copy is untouched");

    // ep_check on a live peer: no error.
    unsafe {
        assert_eq!(uct_ep_check(ep, 0, null_mut()), UCS_OK);
        let mut cc = comp();
        assert_eq!(uct_ep_check(ep, 0, &mut cc), UCS_ERR_INVALID_PARAM);
        assert_eq!(uct_ep_check(ep, 1, null_mut()), UCS_ERR_INVALID_PARAM);
    }
    for _ in 0..10 {
        t.worker_progress();
    }
    assert_eq!(t.errors.load(Ordering::SeqCst), 0);
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
    let mut c = [comp(), comp()];
    let mut sink = vec![0u8; 256];
    assert_eq!(t.put(ep, &[iov(&buf)], buf.as_ptr() as u64, &mut c[0]), UCS_INPROGRESS);
    assert_eq!(t.get(ep, &[iov_mut(&mut sink)], buf.as_ptr() as u64, &mut c[1]), UCS_INPROGRESS);
    t.wait(&c[0] as *const _);
    t.wait(&c[1] as *const _);
    assert_eq!((c[0].status, c[1].status), (UCS_ERR_IO_ERROR, UCS_ERR_IO_ERROR));
    for _ in 0..10 {
        t.worker_progress();
    }
    assert_eq!(t.errors.load(Ordering::SeqCst), 1);
    assert_eq!(LAST_ERROR.load(Ordering::SeqCst), UCS_ERR_CONNECTION_RESET as u8 as u32);

    // ep_check finds the peer gone and reports it asynchronously.
    unsafe { assert_eq!(uct_ep_check(ep2, 0, null_mut()), UCS_OK) };
    for _ in 0..10 {
        t.worker_progress();
    }
    assert_eq!(t.errors.load(Ordering::SeqCst), 2);

    // A new endpoint to the dead pid is refused.
    assert_eq!(t.ep_to(child.pid).err(), Some(UCS_ERR_ENDPOINT_TIMEOUT));
    unsafe {
        uct_ep_destroy(ep);
        uct_ep_destroy(ep2);
    }
}

#[test]
fn unreachable_addresses() {
    let Some(t) = Cma::open(&[]) else { return };
    let (mut dev, addr) = t.addresses();
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
    let (c, usable) = component();
    if !usable {
        return;
    }
    unsafe {
        for (value, expect) in [(c"n", 0), (c"y", UCT_MD_FLAG_INVALIDATE)] {
            let mut mdc = null_mut();
            assert_eq!(uct_md_config_read(c, null(), null(), &mut mdc), UCS_OK);
            assert_eq!(uct_config_modify(mdc as *mut c_void, c"MEMORY_INVALIDATE".as_ptr(), value.as_ptr()), UCS_OK);
            let mut md = null_mut();
            assert_eq!(uct_md_open(c, c"cma".as_ptr(), mdc, &mut md), UCS_OK);
            uct_config_release(mdc as *mut c_void);
            let mut m: uct_md_attr_t = std::mem::zeroed();
            assert_eq!(uct_md_query(md, &mut m), UCS_OK);
            assert_eq!(m.cap.flags, UCT_MD_FLAG_REG | expect);
            let mut buf = [0u8; 16];
            let mut memh = null_mut();
            assert_eq!(uct_md_mem_reg(md, buf.as_mut_ptr() as *mut c_void, 16, UCT_MD_MEM_ACCESS_ALL, &mut memh), UCS_OK);
            let mut cc = comp();
            let p = uct_md_mem_dereg_params_t {
                field_mask: UCT_MD_MEM_DEREG_FIELD_MEMH | UCT_MD_MEM_DEREG_FIELD_FLAGS
                    | UCT_MD_MEM_DEREG_FIELD_COMPLETION,
                flags: UCT_MD_MEM_DEREG_FLAG_INVALIDATE,
                memh,
                comp: &mut cc,
            };
            if expect == 0 {
                assert_eq!(uct_md_mem_dereg_v2(md, &p), UCS_ERR_UNSUPPORTED);
                assert_eq!(uct_md_mem_dereg(md, memh), UCS_OK);
            } else {
                assert_eq!(uct_md_mem_dereg_v2(md, &p), UCS_OK);
                assert_eq!(pending(&cc), 0);
            }
            uct_md_close(md);
        }
    }
}

#[test]
fn progress_is_on_the_worker_only_while_work_is_queued() {
    let Some(t) = Cma::open(&[(c"SCOPY_SEG_SIZE", c"1k")]) else { return };
    let ours = |t: &Cma| unsafe {
        let elems = std::ptr::addr_of!((*t.worker).progress_q.fast_elems) as *const ucs_callbackq_elem_t;
        (0..UCS_CALLBACKQ_FAST_COUNT).any(|i| std::ptr::read_volatile(elems.add(i)).arg == t.iface as *mut c_void)
    };
    unsafe { t.ops().iface_progress_enable.unwrap()(t.iface, UCT_PROGRESS_SEND | UCT_PROGRESS_RECV) };
    t.worker_progress();
    assert!(!ours(&t), "enabling progress registers nothing");
    let ep = t.ep_to(me()).unwrap();
    let src = pattern(4096, 4);
    let mut dst = vec![0u8; 4096];
    let mut c = comp();
    assert_eq!(t.put(ep, &[iov(&src)], dst.as_mut_ptr() as u64, &mut c), UCS_INPROGRESS);
    t.wait(&c as *const _);
    assert_eq!(dst, src);
    for _ in 0..3 {
        t.worker_progress();
    }
    assert!(!ours(&t), "an idle interface leaves the worker");
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
    let mut c = comp();
    // Nothing queued ahead and one segment's worth: done before returning,
    // the completion untouched.
    assert_eq!(t.put(ep, &[iov(&src)], dst.as_mut_ptr() as u64, &mut c), UCS_OK);
    assert_eq!(dst, src);
    assert_eq!(pending(&c), 1);
    t.flush();
}
