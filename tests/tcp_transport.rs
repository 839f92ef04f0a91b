//! The tcp transport driven through the exported API: two interfaces on
//! `lo` in one process, one worker. Covers what the two-process tests do
//! not: CONNECT_TO_IFACE in both directions at once (the simultaneous
//! connection rule), CONNECT_TO_EP, every send flavour with put zcopy and
//! flush, the pending queue when the socket is full, and peer failure.

use std::ffi::{c_uint, c_void};
use std::ptr::{null, null_mut};
use ::uct::abi::*;
use ::uct::ffi::component::*;
use ::uct::ffi::config::*;
use ::uct::ffi::ep::*;
use ::uct::ffi::iface::*;
use ::uct::ffi::worker::*;

mod common;
use common::*;

struct World {
    async_: *mut ucs_async_context_t,
    worker: uct_worker_h,
    md: uct_md_h,
    ifaces: Vec<(uct_iface_h, *mut uct_iface_config_t)>,
}

impl World {
    fn new(n: usize) -> World {
        unsafe {
            let mut async_ = null_mut();
            assert_eq!(ucs_async_context_create(ASYNC_MODE_THREAD_SPINLOCK, &mut async_), UCS_OK);
            let mut worker = null_mut();
            assert_eq!(uct_worker_create(async_, UCS_THREAD_MODE_SINGLE, &mut worker), UCS_OK);
            let c = component("tcp");
            let mut mdc = null_mut();
            assert_eq!(uct_md_config_read(c, null(), null(), &mut mdc), UCS_OK);
            let mut md = null_mut();
            assert_eq!(uct_md_open(c, c"tcp".as_ptr(), mdc, &mut md), UCS_OK);
            uct_config_release(mdc as *mut c_void);
            let mut w = World { async_, worker, md, ifaces: Vec::new() };
            for _ in 0..n {
                w.open();
            }
            w
        }
    }

    fn open(&mut self) -> uct_iface_h {
        self.open_with(&[])
    }

    /// An interface with some `UCX_TCP_*` settings changed.
    fn open_with(&mut self, settings: &[(&std::ffi::CStr, &std::ffi::CStr)]) -> uct_iface_h {
        unsafe {
            let mut config = null_mut();
            assert_eq!(uct_md_iface_config_read(self.md, c"tcp".as_ptr(), null(), null(), &mut config), UCS_OK);
            for (k, v) in settings {
                assert_eq!(uct_config_modify(config as *mut c_void, k.as_ptr(), v.as_ptr()), UCS_OK);
            }
            let mut p: uct_iface_params_t = std::mem::zeroed();
            p.field_mask = UCT_IFACE_PARAM_FIELD_OPEN_MODE | UCT_IFACE_PARAM_FIELD_DEVICE
                | UCT_IFACE_PARAM_FIELD_ERR_HANDLER | UCT_IFACE_PARAM_FIELD_ERR_HANDLER_ARG;
            p.open_mode = UCT_IFACE_OPEN_MODE_DEVICE;
            p.mode.device.tl_name = c"tcp".as_ptr();
            p.mode.device.dev_name = c"lo".as_ptr();
            p.err_handler = Some(on_error);
            p.err_handler_arg = null_mut();
            let mut iface = null_mut();
            assert_eq!(uct_iface_open(self.md, self.worker, &p, config, &mut iface), UCS_OK);
            (*iface).ops.iface_progress_enable.unwrap()(iface, UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
            self.ifaces.push((iface, config));
            iface
        }
    }

    fn iface(&self, i: usize) -> uct_iface_h {
        self.ifaces[i].0
    }

    fn progress(&self) {
        unsafe { uct_worker_progress_c(self.worker) };
    }

    #[track_caller]
    fn progress_until(&self, mut f: impl FnMut() -> bool) {
        let start = std::time::Instant::now();
        while !f() {
            self.progress();
            assert!(start.elapsed().as_secs() < 10, "timed out (called from line {})", std::panic::Location::caller());
        }
    }

    fn addrs(&self, i: usize) -> (Vec<u8>, Vec<u8>) {
        unsafe {
            let mut attr: uct_iface_attr_t = std::mem::zeroed();
            assert_eq!(uct_iface_query(self.iface(i), &mut attr), UCS_OK);
            let mut dev = vec![0u8; attr.device_addr_len];
            let mut addr = vec![0u8; attr.iface_addr_len];
            assert_eq!(uct_iface_get_device_address(self.iface(i), dev.as_mut_ptr() as *mut _), UCS_OK);
            assert_eq!(uct_iface_get_address(self.iface(i), addr.as_mut_ptr() as *mut _), UCS_OK);
            (dev, addr)
        }
    }

    /// An endpoint from iface `from` to iface `to` (CONNECT_TO_IFACE).
    fn ep_to_iface(&self, from: usize, to: usize) -> uct_ep_h {
        let (dev, addr) = self.addrs(to);
        unsafe {
            assert_ne!(uct_iface_is_reachable(self.iface(from), dev.as_ptr() as *const _, addr.as_ptr() as *const _), 0);
            let mut p: uct_ep_params_t = std::mem::zeroed();
            p.field_mask = UCT_EP_PARAM_FIELD_IFACE | UCT_EP_PARAM_FIELD_DEV_ADDR | UCT_EP_PARAM_FIELD_IFACE_ADDR;
            p.iface = self.iface(from);
            p.dev_addr = dev.as_ptr() as *const _;
            p.iface_addr = addr.as_ptr() as *const _;
            let mut ep = null_mut();
            assert_eq!(uct_ep_create(&p, &mut ep), UCS_OK);
            ep
        }
    }

    /// A connected pair of endpoints between ifaces `a` and `b` (CONNECT_TO_EP).
    fn ep_pair(&self, a: usize, b: usize) -> (uct_ep_h, uct_ep_h) {
        unsafe {
            let mk = |i: usize| {
                let mut p: uct_ep_params_t = std::mem::zeroed();
                p.field_mask = UCT_EP_PARAM_FIELD_IFACE;
                p.iface = self.iface(i);
                let mut ep = null_mut();
                assert_eq!(uct_ep_create(&p, &mut ep), UCS_OK);
                ep
            };
            let (ea, eb) = (mk(a), mk(b));
            let mut aa = [0u8; 10];
            let mut ab = [0u8; 10];
            assert_eq!(uct_ep_get_address(ea, aa.as_mut_ptr() as *mut _), UCS_OK);
            assert_eq!(uct_ep_get_address(eb, ab.as_mut_ptr() as *mut _), UCS_OK);
            let (da, _) = self.addrs(a);
            let (db, _) = self.addrs(b);
            assert_eq!(uct_ep_connect_to_ep(ea, db.as_ptr() as *const _, ab.as_ptr() as *const _), UCS_OK);
            assert_eq!(uct_ep_connect_to_ep(eb, da.as_ptr() as *const _, aa.as_ptr() as *const _), UCS_OK);
            (ea, eb)
        }
    }

    fn flush(&self, ep: uct_ep_h) {
        self.progress_until(|| unsafe { ops(ep).ep_flush.unwrap()(ep, 0, null_mut()) } == UCS_OK);
    }
}

impl Drop for World {
    fn drop(&mut self) {
        unsafe {
            for &(i, c) in &self.ifaces {
                uct_iface_close(i);
                uct_config_release(c as *mut c_void);
            }
            uct_md_close(self.md);
            uct_worker_destroy(self.worker);
            ucs_async_context_destroy(self.async_);
        }
    }
}

/// What the inline `uct_worker_progress` of the C headers does: walk the
/// fast callbacks (slow and one-shot ones run through a proxy among them).
unsafe fn uct_worker_progress_c(w: uct_worker_h) -> u32 {
    let mut n = 0;
    let elems = std::ptr::addr_of!((*w).progress_q.fast_elems) as *const ucs_callbackq_elem_t;
    for i in 0..UCS_CALLBACKQ_FAST_COUNT + 1 {
        let e = std::ptr::read_volatile(elems.add(i));
        match e.cb {
            Some(cb) => n += cb(e.arg),
            None => break,
        }
    }
    n
}

unsafe fn ops<'a>(ep: uct_ep_h) -> &'a uct_iface_ops_t {
    &(*(*ep).iface).ops
}

/// Endpoints reported to the error handler (shared by the tests, which
/// run in parallel threads).
static ERRORS: std::sync::Mutex<Vec<(usize, ucs_status_t)>> = std::sync::Mutex::new(Vec::new());

fn failed(ep: uct_ep_h) -> bool {
    ERRORS.lock().unwrap().iter().any(|&(e, _)| e == ep as usize)
}

unsafe extern "C" fn on_error(_arg: *mut c_void, ep: uct_ep_h, status: ucs_status_t) -> ucs_status_t {
    ERRORS.lock().unwrap().push((ep as usize, status));
    UCS_OK
}

/// Messages received by a handler (interior mutability: the handler writes
/// through a raw pointer while the test reads).
#[derive(Default)]
struct Got(std::cell::RefCell<Vec<Vec<u8>>>);

impl Got {
    fn len(&self) -> usize {
        self.0.borrow().len()
    }
    fn get(&self, i: usize) -> Vec<u8> {
        self.0.borrow()[i].clone()
    }
}

unsafe extern "C" fn on_am(arg: *mut c_void, data: *mut c_void, len: usize, _flags: c_uint) -> ucs_status_t {
    (*(arg as *const Got)).0.borrow_mut().push(std::slice::from_raw_parts(data as *const u8, len).to_vec());
    UCS_OK
}

fn count(c: &uct_completion_t) -> i32 {
    // SAFETY: a live completion, written by the transport through a pointer.
    unsafe { std::ptr::read_volatile(&c.count) }
}

fn am_short(ep: uct_ep_h, id: u8, header: u64, payload: &[u8]) -> ucs_status_t {
    unsafe { ops(ep).ep_am_short.unwrap()(ep, id, header, payload.as_ptr() as *const c_void, payload.len() as c_uint) }
}

struct Fill(u8, usize);

unsafe extern "C" fn pack_fill(dest: *mut c_void, arg: *mut c_void) -> usize {
    let f = &*(arg as *const Fill);
    std::ptr::write_bytes(dest as *mut u8, f.0, f.1);
    f.1
}

fn am_bcopy(ep: uct_ep_h, id: u8, f: &Fill) -> isize {
    unsafe { ops(ep).ep_am_bcopy.unwrap()(ep, id, Some(pack_fill), f as *const Fill as *mut c_void, 0) }
}

#[test]
fn connect_to_iface_simultaneous_both_ways() {
    let w = World::new(2);
    let got = [Got::default(), Got::default()];
    unsafe {
        for (i, g) in got.iter().enumerate() {
            assert_eq!(uct_iface_set_am_handler(w.iface(i), 5, Some(on_am), g as *const Got as *mut c_void, 0),
                       UCS_OK);
        }
    }
    // Both sides connect before either progresses: simultaneous connection.
    let ab = w.ep_to_iface(0, 1);
    let ba = w.ep_to_iface(1, 0);
    w.progress_until(|| am_short(ab, 5, 1, b"from a") == UCS_OK);
    w.progress_until(|| am_short(ba, 5, 2, b"from b") == UCS_OK);
    w.progress_until(|| got[0].len() > 0 && got[1].len() > 0);
    assert_eq!(&got[1].get(0)[8..], b"from a");
    assert_eq!(&got[0].get(0)[8..], b"from b");
    assert_eq!(u64::from_ne_bytes(got[1].get(0)[..8].try_into().unwrap()), 1);
    w.flush(ab);
    w.flush(ba);
    // A second endpoint to the same peer gets its own connection.
    let ab2 = w.ep_to_iface(0, 1);
    w.progress_until(|| am_short(ab2, 5, 3, b"again") == UCS_OK);
    w.progress_until(|| got[1].len() == 2);
    // An endpoint to our own interface.
    let aa = w.ep_to_iface(0, 0);
    w.progress_until(|| am_short(aa, 5, 4, b"self") == UCS_OK);
    w.progress_until(|| got[0].len() == 2);
    w.flush(aa);
    unsafe {
        for ep in [ab, ba, ab2, aa] {
            uct_ep_destroy(ep);
        }
    }
    for _ in 0..100 {
        w.progress();
    }
    assert!([ab, ba, ab2, aa].iter().all(|&e| !failed(e)));
}

#[test]
fn connect_to_ep_all_operations() {
    let w = World::new(2);
    let got = Got::default();
    unsafe {
        assert_eq!(uct_iface_set_am_handler(w.iface(1), 7, Some(on_am), &got as *const Got as *mut Got as *mut c_void, 0),
                   UCS_OK);
    }
    let (ea, eb) = w.ep_pair(0, 1);
    w.progress_until(|| am_short(ea, 7, 9, &[1, 2, 3]) == UCS_OK);
    // bcopy of the largest size
    let big = Fill(0xab, 8192);
    w.progress_until(|| am_bcopy(ea, 7, &big) == 8192);
    // short_iov and zcopy with a header
    let part1 = [1u8; 100];
    let part2 = [2u8; 3000];
    let iov = [
        uct_iov_t { buffer: part1.as_ptr() as *mut c_void, length: 100, memh: null_mut(), stride: 0, count: 1 },
        uct_iov_t { buffer: part2.as_ptr() as *mut c_void, length: 3000, memh: null_mut(), stride: 0, count: 1 },
    ];
    w.progress_until(|| unsafe { ops(ea).ep_am_short_iov.unwrap()(ea, 7, iov.as_ptr(), 2) } == UCS_OK);
    let mut comp = uct_completion_t { func: None, count: 1, status: UCS_OK };
    let hdr = [0x5au8; 16];
    let st = loop {
        let s = unsafe {
            ops(ea).ep_am_zcopy.unwrap()(ea, 7, hdr.as_ptr() as *const c_void, 16, iov.as_ptr(), 2, 0, &mut comp)
        };
        if s != UCS_ERR_NO_RESOURCE {
            break s;
        }
        w.progress();
    };
    assert!(st == UCS_OK || st == UCS_INPROGRESS);
    w.progress_until(|| got.len() == 4);
    assert_eq!(got.get(0), [9u64.to_ne_bytes().as_slice(), &[1, 2, 3]].concat());
    assert_eq!(got.get(1), vec![0xab; 8192]);
    assert_eq!(got.get(2).len(), 3100);
    assert_eq!(got.get(3).len(), 3116);
    assert_eq!(&got.get(3)[..16], &hdr);
    if st == UCS_INPROGRESS {
        w.progress_until(|| count(&comp) == 0);
    }
    // put zcopy into a buffer "of the peer", then flush: the flush ends
    // when the peer acknowledged the put
    let src: Vec<u8> = (0..100_000u32).map(|i| i as u8).collect();
    let mut dst = vec![0u8; 100_000];
    let piov = [uct_iov_t { buffer: src.as_ptr() as *mut c_void, length: src.len(), memh: null_mut(), stride: 0,
                            count: 1 }];
    let mut pcomp = uct_completion_t { func: None, count: 1, status: UCS_OK };
    w.progress_until(|| {
        let s = unsafe { ops(eb).ep_put_zcopy.unwrap()(eb, piov.as_ptr(), 1, dst.as_mut_ptr() as u64, 0, null_mut()) };
        s == UCS_INPROGRESS
    });
    assert_eq!(unsafe { ops(eb).ep_flush.unwrap()(eb, 0, &mut pcomp) }, UCS_INPROGRESS);
    w.progress_until(|| count(&pcomp) == 0);
    assert_eq!(pcomp.status, UCS_OK);
    assert_eq!(dst, src);
    w.flush(ea);
    unsafe {
        assert_eq!((*w.iface(0)).ops.iface_flush.unwrap()(w.iface(0), 0, null_mut()), UCS_OK);
        uct_ep_destroy(ea);
        uct_ep_destroy(eb);
    }
}

static mut PENDING_RAN: u32 = 0;

unsafe extern "C" fn pending_cb(_req: *mut uct_pending_req_t) -> ucs_status_t {
    PENDING_RAN += 1;
    UCS_OK
}

#[test]
fn pending_queue_and_peer_failure() {
    let mut w = World::new(1);
    let i2 = w.open();
    let got = Got::default();
    unsafe {
        assert_eq!(uct_iface_set_am_handler(i2, 1, Some(on_am), &got as *const Got as *mut Got as *mut c_void, 0), UCS_OK);
    }
    let ab = w.ep_to_iface(0, 1);
    w.progress_until(|| am_short(ab, 1, 0, b"hi") == UCS_OK);
    // Fill the socket without letting the receiver read: only our own
    // interface makes progress (the receiver's progress is disabled).
    unsafe { (*i2).ops.iface_progress_disable.unwrap()(i2, UCT_PROGRESS_SEND | UCT_PROGRESS_RECV) };
    let f = Fill(1, 8192);
    let mut sent = 0;
    loop {
        let r = am_bcopy(ab, 1, &f);
        if r == UCS_ERR_NO_RESOURCE as isize {
            break;
        }
        assert_eq!(r, 8192);
        sent += 1;
        assert!(sent < 100_000);
        w.progress();
    }
    // SAFETY: all-zero is a valid request; the callback is set below.
    let mut req: uct_pending_req_t = unsafe { std::mem::zeroed() };
    req.func = Some(pending_cb);
    assert_eq!(unsafe { ops(ab).ep_pending_add.unwrap()(ab, &mut req, 0) }, UCS_OK);
    unsafe { (*i2).ops.iface_progress_enable.unwrap()(i2, UCT_PROGRESS_SEND | UCT_PROGRESS_RECV) };
    w.progress_until(|| unsafe { std::ptr::read_volatile(std::ptr::addr_of!(PENDING_RAN)) } == 1);
    w.progress_until(|| got.len() == sent + 1);
    // The peer goes away: the error handler hears of it.
    unsafe {
        let (i, c) = w.ifaces.pop().unwrap();
        // Off the worker first: uct_iface_close removes the callback with
        // the thread-safe (deferred) call, which a later progress of the
        // same worker may still reach.
        (*i).ops.iface_progress_disable.unwrap()(i, UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
        uct_iface_close(i);
        uct_config_release(c as *mut c_void);
    }
    w.progress_until(|| {
        let _ = am_short(ab, 1, 0, b"x");
        failed(ab)
    });
    assert_ne!(am_short(ab, 1, 0, b"x"), UCS_OK);
    unsafe { uct_ep_destroy(ab) };
}

/// Active messages sent back to back (no progress call in between) are held
/// back and go out together (`UCX_TCP_TX_COALESCE`): the first one at once,
/// the others (small zero-copy ones copied in) at the next flush, event arm,
/// progress, large zero-copy send or endpoint destruction, in order and
/// intact.
#[test]
fn back_to_back_messages_coalesce_in_order() {
    let mut w = World::new(0);
    for _ in 0..2 {
        w.open_with(&[(c"TX_COALESCE", c"64k")]);
    }
    let got = Got::default();
    let (i0, i1) = (w.iface(0), w.iface(1));
    unsafe {
        assert_eq!(uct_iface_set_am_handler(i1, 3, Some(on_am), &got as *const Got as *mut Got as *mut c_void, 0),
                   UCS_OK);
    }
    let (ea, eb) = w.ep_pair(0, 1);
    w.progress_until(|| am_short(ea, 3, 0, b"warm-up") == UCS_OK);
    w.progress_until(|| got.len() == 1);
    let sender_progress = |on: bool| unsafe {
        let f = if on { (*i0).ops.iface_progress_enable } else { (*i0).ops.iface_progress_disable };
        f.unwrap()(i0, UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
    };
    let part1 = [0x11u8; 300];
    let part2 = [0x22u8; 700];
    let iov = [
        uct_iov_t { buffer: part1.as_ptr() as *mut c_void, length: 300, memh: null_mut(), stride: 0, count: 1 },
        uct_iov_t { buffer: part2.as_ptr() as *mut c_void, length: 700, memh: null_mut(), stride: 0, count: 1 },
    ];
    let big: Vec<u8> = (0..20_000u32).map(|k| (k % 251) as u8).collect();
    let big_iov = [uct_iov_t { buffer: big.as_ptr() as *mut c_void, length: big.len(), memh: null_mut(), stride: 0,
                               count: 1 }];
    for release in ["flush", "arm", "progress", "zcopy", "destroy"] {
        // A new progress epoch: the first message of the burst goes out.
        w.progress();
        sender_progress(false);
        let base = got.len();
        let mut want: Vec<Vec<u8>> = Vec::new();
        let mut sn = 0u64;
        for size in [0usize, 10, 3000, 100] {
            sn += 1;
            let payload: Vec<u8> = (0..size).map(|k| (k as u64 * 7 + sn) as u8).collect();
            assert_eq!(am_short(ea, 3, sn, &payload), UCS_OK, "{release}: am_short {size}");
            want.push([sn.to_ne_bytes().as_slice(), &payload].concat());
        }
        for (k, size) in [1usize, 5000, 8192].into_iter().enumerate() {
            let f = Fill(0x30 + k as u8, size);
            assert_eq!(am_bcopy(ea, 3, &f), size as isize, "{release}: am_bcopy {size}");
            want.push(vec![0x30 + k as u8; size]);
        }
        assert_eq!(unsafe { ops(ea).ep_am_short_iov.unwrap()(ea, 3, iov.as_ptr(), 2) }, UCS_OK);
        want.push([part1.as_slice(), &part2].concat());
        // a small zero-copy message is copied in with the others: done now
        let small_hdr = [0x77u8; 4];
        let s = unsafe {
            ops(ea).ep_am_zcopy.unwrap()(ea, 3, small_hdr.as_ptr() as *const c_void, 4, iov.as_ptr(), 2, 0, null_mut())
        };
        assert_eq!(s, UCS_OK, "{release}: small am_zcopy");
        want.push([small_hdr.as_slice(), &part1, &part2].concat());
        // Only the first message is on the wire: the receiver (progressing
        // alone) gets it and nothing more.
        w.progress_until(|| got.len() > base);
        for _ in 0..300 {
            w.progress();
        }
        assert_eq!(got.len(), base + 1, "{release}: messages after the first were not held back");
        let mut comp = uct_completion_t { func: None, count: 1, status: UCS_OK };
        let mut zst = UCS_OK;
        let zhdr = [0x5au8; 8];
        match release {
            "flush" => {
                let s = unsafe { ops(ea).ep_flush.unwrap()(ea, 0, null_mut()) };
                assert!(s == UCS_OK || s == UCS_INPROGRESS, "{release}: flush {s}");
            }
            "arm" => assert_eq!(unsafe { (*i0).ops.iface_event_arm.unwrap()(i0, UCT_EVENT_RECV) }, UCS_OK),
            "progress" => sender_progress(true),
            "zcopy" => {
                // larger than the send buffer: a real zero-copy send, which
                // takes the held messages along ahead of it
                let s = unsafe {
                    ops(ea).ep_am_zcopy.unwrap()(ea, 3, zhdr.as_ptr() as *const c_void, 8, big_iov.as_ptr(), 1, 0,
                                                 &mut comp)
                };
                assert!(s == UCS_OK || s == UCS_INPROGRESS, "{release}: am_zcopy {s}");
                zst = s;
                want.push([zhdr.as_slice(), &big].concat());
            }
            _ => unsafe { uct_ep_destroy(ea) },
        }
        w.progress_until(|| got.len() >= base + want.len());
        assert_eq!(got.len(), base + want.len(), "{release}");
        for (k, m) in want.iter().enumerate() {
            assert_eq!(&got.get(base + k), m, "{release}: message {k}");
        }
        sender_progress(true);
        if zst == UCS_INPROGRESS {
            w.progress_until(|| count(&comp) == 0);
        }
        if release != "destroy" {
            w.flush(ea);
        }
    }
    unsafe { uct_ep_destroy(eb) };
    for _ in 0..100 {
        w.progress();
    }
}

/// A pending request that sends one fragment per call and answers
/// UCS_INPROGRESS until its last one (what libucp's multi-fragment
/// rendezvous does) is called again while the socket takes more, until it
/// answers UCS_OK: nothing is left behind in the pending queue.
#[repr(C)]
struct Fragments {
    req: uct_pending_req_t,
    ep: uct_ep_h,
    sent: u32,
    total: u32,
}

unsafe extern "C" fn send_fragment(req: *mut uct_pending_req_t) -> ucs_status_t {
    // SAFETY: `req` is the first field of a live Fragments.
    let f = &mut *(req as *mut Fragments);
    let s = am_short(f.ep, 2, f.sent as u64, &[0x42; 64]);
    if s != UCS_OK {
        return s;
    }
    f.sent += 1;
    if f.sent < f.total { UCS_INPROGRESS } else { UCS_OK }
}

#[test]
fn pending_request_in_progress_is_called_again() {
    let w = World::new(2);
    let got = Got::default();
    let fills = Got::default();
    let i1 = w.iface(1);
    unsafe {
        assert_eq!(uct_iface_set_am_handler(i1, 2, Some(on_am), &got as *const Got as *mut Got as *mut c_void, 0),
                   UCS_OK);
        assert_eq!(uct_iface_set_am_handler(i1, 3, Some(on_am), &fills as *const Got as *mut Got as *mut c_void, 0),
                   UCS_OK);
    }
    let (ea, _eb) = w.ep_pair(0, 1);
    w.progress_until(|| am_short(ea, 2, u64::MAX, b"first") == UCS_OK);
    w.progress_until(|| got.len() == 1);
    // Fill the socket while the receiver does not read.
    unsafe { (*i1).ops.iface_progress_disable.unwrap()(i1, UCT_PROGRESS_SEND | UCT_PROGRESS_RECV) };
    let fill = Fill(7, 8192);
    let mut filled = 0;
    while am_bcopy(ea, 3, &fill) == 8192 {
        filled += 1;
        assert!(filled < 100_000);
        w.progress();
    }
    // SAFETY: all-zero is a valid request; the callback is set below.
    let mut f = Fragments { req: unsafe { std::mem::zeroed() }, ep: ea, sent: 0, total: 40 };
    f.req.func = Some(send_fragment);
    assert_eq!(unsafe { ops(ea).ep_pending_add.unwrap()(ea, &mut f.req, 0) }, UCS_OK);
    unsafe { (*i1).ops.iface_progress_enable.unwrap()(i1, UCT_PROGRESS_SEND | UCT_PROGRESS_RECV) };
    w.progress_until(|| unsafe { std::ptr::read_volatile(&f.sent) } == 40);
    w.progress_until(|| got.len() == 41 && fills.len() == filled);
    for k in 0..40u64 {
        assert_eq!(got.get(1 + k as usize)[..8], k.to_ne_bytes(), "fragment {k} out of order");
    }
    w.flush(ea);
}

static COMP_CALLS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

unsafe extern "C" fn count_completion(comp: *mut uct_completion_t) {
    let _ = comp;
    COMP_CALLS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
}

/// uct_ep_destroy while a zero-copy send is half on the wire and a flush is
/// waiting (what libucp does when it closes an endpoint in a hurry): the
/// send's completion runs once, with UCS_ERR_CANCELED, nothing crashes, and
/// the interface goes on working.
#[test]
fn destroy_with_a_zcopy_send_in_flight() {
    let w = World::new(2);
    let got = Got::default();
    let i1 = w.iface(1);
    unsafe {
        assert_eq!(uct_iface_set_am_handler(i1, 4, Some(on_am), &got as *const Got as *mut Got as *mut c_void, 0),
                   UCS_OK);
    }
    let (ea, eb) = w.ep_pair(0, 1);
    w.progress_until(|| am_short(ea, 4, 0, b"hello") == UCS_OK);
    w.progress_until(|| got.len() == 1);
    unsafe { (*i1).ops.iface_progress_disable.unwrap()(i1, UCT_PROGRESS_SEND | UCT_PROGRESS_RECV) };
    let payload = vec![0x5au8; 60_000];
    let piov = [uct_iov_t { buffer: payload.as_ptr() as *mut c_void, length: payload.len(), memh: null_mut(),
                            stride: 0, count: 1 }];
    let mut comp = uct_completion_t { func: Some(count_completion), count: 1, status: UCS_OK };
    let hdr = [0u8; 8];
    let mut tries = 0;
    loop {
        let s = unsafe {
            ops(ea).ep_am_zcopy.unwrap()(ea, 4, hdr.as_ptr() as *const c_void, 8, piov.as_ptr(), 1, 0, &mut comp)
        };
        if s == UCS_INPROGRESS {
            break;
        }
        assert!(s == UCS_OK || s == UCS_ERR_NO_RESOURCE, "am_zcopy: {s}");
        tries += 1;
        assert!(tries < 100_000, "the socket never filled");
        w.progress();
    }
    let before = COMP_CALLS.load(std::sync::atomic::Ordering::SeqCst);
    let f = unsafe { ops(ea).ep_flush.unwrap()(ea, 0, null_mut()) };
    assert!(f == UCS_INPROGRESS || f == UCS_ERR_NO_RESOURCE, "flush with a send in flight: {f}");
    unsafe { uct_ep_destroy(ea) };
    assert_eq!(COMP_CALLS.load(std::sync::atomic::Ordering::SeqCst), before + 1, "completion not run once");
    assert_eq!(comp.status, UCS_ERR_CANCELED);
    assert_eq!(comp.count, 0);
    unsafe { (*i1).ops.iface_progress_enable.unwrap()(i1, UCT_PROGRESS_SEND | UCT_PROGRESS_RECV) };
    for _ in 0..1000 {
        w.progress();
    }
    assert_eq!(COMP_CALLS.load(std::sync::atomic::Ordering::SeqCst), before + 1, "completion run again");
    // The interfaces still work: a new pair of endpoints carries a message.
    let n = got.len();
    let (ea2, eb2) = w.ep_pair(0, 1);
    w.progress_until(|| am_short(ea2, 4, 7, b"after") == UCS_OK);
    w.progress_until(|| got.len() > n && got.get(got.len() - 1).ends_with(b"after"));
    unsafe {
        uct_ep_destroy(ea2);
        uct_ep_destroy(eb2);
        uct_ep_destroy(eb);
    }
}
