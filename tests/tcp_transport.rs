//! The tcp transport driven through the exported API: two interfaces on
//! `lo` in one process, one worker. Covers what the two-process tests do
//! not: CONNECT_TO_IFACE in both directions at once (the simultaneous
//! connection rule), CONNECT_TO_EP, every send flavour with put zcopy and
//! flush, the pending queue when the socket is full, and peer failure.

use std::ffi::{c_uint, c_void};
use std::ptr::null_mut;
use ::uct::abi::*;
use ::uct::ffi::component::*;
use ::uct::ffi::config::*;
use ::uct::ffi::ep::*;
use ::uct::ffi::iface::*;
use ::uct::ffi::md::*;
use ::uct::ffi::worker::*;

mod common;
use common::*;

/// Whether an interface on `lo` reaches another one on `lo`: not in UCX
/// 1.20, whose tcp finds no route in a loopback device address (as the C
/// original of 1.20 does); the tests that connect interfaces on `lo` have
/// nothing to test there.
fn lo_reachable() -> bool {
    let unreachable = ::uct::ucs::release::running().minor == 20;
    if unreachable {
        eprintln!("UCX 1.20: tcp interfaces on lo do not reach each other; test skipped");
    }
    !unreachable
}

struct World {
    async_: *mut ucs_async_context_t,
    worker: uct_worker_h,
    md: uct_md_h,
    ifaces: Vec<(uct_iface_h, *mut uct_iface_config_t)>,
    /// A second worker (a peer that is not held up by the first worker's
    /// ordering rule), made by `open_peer_with`.
    peer: Option<(*mut ucs_async_context_t, uct_worker_h)>,
}

impl World {
    fn new(n: usize) -> World {
        let (async_, worker) = new_worker();
        let md = open_md(c"tcp", &[]);
        let mut w = World { async_, worker, md, ifaces: Vec::new(), peer: None };
        for _ in 0..n {
            w.open();
        }
        w
    }

    fn open(&mut self) -> uct_iface_h {
        self.open_with(&[])
    }

    /// An interface with some `UCX_TCP_*` settings changed.
    fn open_with(&mut self, settings: &[(&std::ffi::CStr, &std::ffi::CStr)]) -> uct_iface_h {
        self.open_on(self.worker, settings)
    }

    /// As `open_with`, on the World's second worker.
    fn open_peer_with(&mut self, settings: &[(&std::ffi::CStr, &std::ffi::CStr)]) -> uct_iface_h {
        let worker = self.peer.get_or_insert_with(new_worker).1;
        self.open_on(worker, settings)
    }

    fn open_on(&mut self, worker: uct_worker_h, settings: &[(&std::ffi::CStr, &std::ffi::CStr)]) -> uct_iface_h {
        // SAFETY: the World's md is open until it drops.
        let config = unsafe { iface_config(self.md, c"tcp", settings) };
        let mut p = device_params(c"tcp", c"lo");
        p.field_mask |= UCT_IFACE_PARAM_FIELD_ERR_HANDLER | UCT_IFACE_PARAM_FIELD_ERR_HANDLER_ARG;
        p.err_handler = Some(on_error);
        p.err_handler_arg = null_mut();
        let mut iface = null_mut();
        // SAFETY: md and worker are the World's, open; the configuration was
        // just read; the parameters point at static names and a handler that
        // ignores its (NULL) argument; the out-pointer is a local.
        assert_eq!(unsafe { uct_iface_open(self.md, worker, &p, config, &mut iface) }, UCS_OK);
        self.ifaces.push((iface, config));
        self.set_progress(self.ifaces.len() - 1, true);
        iface
    }

    fn iface(&self, i: usize) -> uct_iface_h {
        self.ifaces[i].0
    }

    /// The operations table of interface `i`.
    fn iface_ops(&self, i: usize) -> &uct_iface_ops_t {
        // SAFETY: the interfaces in `ifaces` are open (they are closed only
        // after leaving the list), and an interface starts with its table.
        unsafe { &(*self.iface(i)).ops }
    }

    /// Puts interface `i` on the worker's progress (send and receive), or
    /// takes it off.
    fn set_progress(&self, i: usize, on: bool) {
        let ops = self.iface_ops(i);
        let f = if on { ops.iface_progress_enable } else { ops.iface_progress_disable };
        // SAFETY: interface `i` is open (see iface_ops); the flags are valid.
        unsafe { f.unwrap()(self.iface(i), UCT_PROGRESS_SEND | UCT_PROGRESS_RECV) };
    }

    /// Registers `on_am` for `id` on interface `i`, writing into `got`.
    ///
    /// # Safety
    ///
    /// `got` outlives every progress call of the World after this one.
    unsafe fn listen(&self, i: usize, id: u8, got: &Got) {
        let arg = got as *const Got as *mut c_void;
        // SAFETY: interface `i` is open; `got` outlives the progress calls
        // where the handler runs (the caller's promise), and the handler
        // only reads through the pointer (Got mutates inside a RefCell).
        assert_eq!(unsafe { uct_iface_set_am_handler(self.iface(i), id, Some(on_am), arg, 0) }, UCS_OK);
    }

    fn progress(&self) {
        // SAFETY: the World's worker is live until it drops; the tests use
        // it from one thread.
        unsafe { worker_progress(self.worker) };
        if let Some((_, w)) = self.peer {
            // SAFETY: as above, for the second worker.
            unsafe { worker_progress(w) };
        }
    }

    /// Progress the second worker alone, on another thread, until `done`
    /// and then `more` times: this thread's held messages stay held (the
    /// ordering rule sends them before this thread works on any other
    /// worker). The worker is handed over and back: this thread does not
    /// touch it meanwhile.
    #[track_caller]
    fn progress_peer_elsewhere(&self, done: impl Fn() -> bool + Sync, more: usize) {
        struct Handle(uct_worker_h);
        // SAFETY: the worker is used by one thread at a time (the scope
        // below joins before this thread goes on).
        unsafe impl Send for Handle {}
        let peer = Handle(self.peer.expect("a second worker").1);
        let line = std::panic::Location::caller().line();
        std::thread::scope(|sc| {
            let done = &done;
            sc.spawn(move || {
                let peer = peer;
                let start = std::time::Instant::now();
                while !done() {
                    // SAFETY: the second worker is live until the World
                    // drops, and only this thread uses it now.
                    unsafe { worker_progress(peer.0) };
                    assert!(start.elapsed().as_secs() < 10, "timed out (called from line {line})");
                }
                for _ in 0..more {
                    // SAFETY: as above.
                    unsafe { worker_progress(peer.0) };
                }
            });
        });
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
        // SAFETY: interface `i` is open (see iface_ops).
        unsafe { iface_addresses(self.iface(i)) }
    }

    /// An endpoint from iface `from` to iface `to` (CONNECT_TO_IFACE).
    fn ep_to_iface(&self, from: usize, to: usize) -> Ep {
        let (dev, addr) = self.addrs(to);
        // SAFETY: `from` is open; the addresses are `to`'s own, as long as
        // a tcp interface declares them.
        let ep = unsafe { connect_to_iface(self.iface(from), &dev, &addr) }
            .unwrap_or_else(|s| panic!("uct_ep_create: {s}"));
        // SAFETY: just created; its interface stays open while the tests
        // use the endpoint, and they end it only with Ep::destroy (or leave
        // it to the interface's close).
        unsafe { Ep::from_raw(ep) }
    }

    /// A connected pair of endpoints between ifaces `a` and `b` (CONNECT_TO_EP).
    fn ep_pair(&self, a: usize, b: usize) -> (Ep, Ep) {
        let mk = |i: usize| {
            // SAFETY: plain data; all-zero means "no field set".
            let mut p: uct_ep_params_t = unsafe { std::mem::zeroed() };
            p.field_mask = UCT_EP_PARAM_FIELD_IFACE;
            p.iface = self.iface(i);
            let mut ep = null_mut();
            // SAFETY: interface `i` is open; the out-pointer is a local.
            assert_eq!(unsafe { uct_ep_create(&p, &mut ep) }, UCS_OK);
            // SAFETY: just created; as for ep_to_iface.
            unsafe { Ep::from_raw(ep) }
        };
        let (ea, eb) = (mk(a), mk(b));
        let mut aa = [0u8; 10];
        let mut ab = [0u8; 10];
        // SAFETY: both endpoints are live; the buffers are 10 bytes, a tcp
        // endpoint address (ep_addr_len).
        unsafe {
            assert_eq!(uct_ep_get_address(ea.raw(), aa.as_mut_ptr() as *mut _), UCS_OK);
            assert_eq!(uct_ep_get_address(eb.raw(), ab.as_mut_ptr() as *mut _), UCS_OK);
        }
        let (da, _) = self.addrs(a);
        let (db, _) = self.addrs(b);
        // SAFETY: both endpoints are live; the peers' device and endpoint
        // addresses are complete (as long as declared) and outlive the calls.
        unsafe {
            assert_eq!(uct_ep_connect_to_ep(ea.raw(), db.as_ptr() as *const _, ab.as_ptr() as *const _), UCS_OK);
            assert_eq!(uct_ep_connect_to_ep(eb.raw(), da.as_ptr() as *const _, aa.as_ptr() as *const _), UCS_OK);
        }
        (ea, eb)
    }

    fn flush(&self, ep: Ep) {
        self.progress_until(|| flush_now(ep) == UCS_OK);
    }

    /// Registers `buf` with the World's md.
    fn reg(&self, buf: &mut [u8]) -> uct_mem_h {
        let mut memh = null_mut();
        // SAFETY: the md is open; `buf` is live memory of the caller, who
        // deregisters it before it goes away; the out-pointer is a local.
        let st = unsafe {
            uct_md_mem_reg(self.md, buf.as_mut_ptr() as *mut c_void, buf.len(), UCT_MD_MEM_ACCESS_ALL, &mut memh)
        };
        assert_eq!(st, UCS_OK);
        memh
    }

    fn dereg(&self, memh: uct_mem_h) {
        // SAFETY: the md is open; `memh` came from `reg`.
        assert_eq!(unsafe { uct_md_mem_dereg(self.md, memh) }, UCS_OK);
    }
}

impl Drop for World {
    fn drop(&mut self) {
        // SAFETY: everything was opened by the World and is closed only
        // here (interfaces popped by a test were closed by it), each object
        // before the one it was made from.
        unsafe {
            for &(i, c) in &self.ifaces {
                uct_iface_close(i);
                uct_config_release(c as *mut c_void);
            }
            uct_md_close(self.md);
            uct_worker_destroy(self.worker);
            ucs_async_context_destroy(self.async_);
            if let Some((a, w)) = self.peer {
                uct_worker_destroy(w);
                ucs_async_context_destroy(a);
            }
        }
    }
}

/// Endpoints reported to the error handler (shared by the tests, which
/// run in parallel threads).
static ERRORS: std::sync::Mutex<Vec<(usize, ucs_status_t)>> = std::sync::Mutex::new(Vec::new());

fn failed(ep: Ep) -> bool {
    ERRORS.lock().unwrap().iter().any(|&(e, _)| e == ep.raw() as usize)
}

unsafe extern "C" fn on_error(_arg: *mut c_void, ep: uct_ep_h, status: ucs_status_t) -> ucs_status_t {
    ERRORS.lock().unwrap().push((ep as usize, status));
    UCS_OK
}

/// Messages received by a handler (interior mutability: the handler writes
/// through a raw pointer while the test reads).
#[derive(Default)]
struct Got(std::sync::Mutex<Vec<Vec<u8>>>);

impl Got {
    fn len(&self) -> usize {
        self.0.lock().unwrap().len()
    }
    fn get(&self, i: usize) -> Vec<u8> {
        self.0.lock().unwrap()[i].clone()
    }
}

/// Active-message handler: `arg` is a `Got` (see World::listen).
unsafe extern "C" fn on_am(arg: *mut c_void, data: *mut c_void, len: usize, _flags: c_uint) -> ucs_status_t {
    // SAFETY: the transport passes `len` readable bytes at `data`.
    let msg = unsafe { std::slice::from_raw_parts(data as *const u8, len) }.to_vec();
    // SAFETY: registered with a `*const Got` that outlives the progress
    // calls.
    unsafe { (*(arg as *const Got)).0.lock().unwrap().push(msg) };
    UCS_OK
}

fn count(c: &uct_completion_t) -> i32 {
    // SAFETY: a live completion, written by the transport through a pointer.
    unsafe { std::ptr::read_volatile(&c.count) }
}

fn am_short(ep: Ep, id: u8, header: u64, payload: &[u8]) -> ucs_status_t {
    // SAFETY: a live endpoint (Ep); the payload outlives the call, which
    // copies it (or keeps nothing when it refuses).
    unsafe {
        ep.ops().ep_am_short.unwrap()(ep.raw(), id, header, payload.as_ptr() as *const c_void, payload.len() as c_uint)
    }
}

struct Fill(u8, usize);

/// Pack callback: `arg` is the `Fill` to write.
unsafe extern "C" fn pack_fill(dest: *mut c_void, arg: *mut c_void) -> usize {
    // SAFETY: am_bcopy passes a live Fill.
    let f = unsafe { &*(arg as *const Fill) };
    // SAFETY: the transport's buffer holds a segment (8 KiB), and the tests
    // ask for at most that.
    unsafe { std::ptr::write_bytes(dest as *mut u8, f.0, f.1) };
    f.1
}

fn am_bcopy(ep: Ep, id: u8, f: &Fill) -> isize {
    // SAFETY: a live endpoint (Ep); `f` is what pack_fill expects and
    // outlives the call.
    unsafe { ep.ops().ep_am_bcopy.unwrap()(ep.raw(), id, Some(pack_fill), f as *const Fill as *mut c_void, 0) }
}

/// `ep_flush` without a completion: UCS_OK once everything is out.
fn flush_now(ep: Ep) -> ucs_status_t {
    // SAFETY: a live endpoint (Ep); no completion is passed.
    unsafe { ep.ops().ep_flush.unwrap()(ep.raw(), 0, null_mut()) }
}

#[test]
fn connect_to_iface_simultaneous_both_ways() {
    if !lo_reachable() {
        return;
    }
    let w = World::new(2);
    let got = [Got::default(), Got::default()];
    for (i, g) in got.iter().enumerate() {
        // SAFETY: `got` lives to the end of the test, past the last
        // progress call of `w`.
        unsafe { w.listen(i, 5, g) };
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
    for ep in [ab, ba, ab2, aa] {
        // SAFETY: each is destroyed once; afterwards only `failed` looks at
        // the handle's value.
        unsafe { ep.destroy() };
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
    // SAFETY: `got` lives to the end of the test, past the last progress
    // call of `w`.
    unsafe { w.listen(1, 7, &got) };
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
    // SAFETY: a live endpoint; the iov's buffers outlive the call, which
    // copies them.
    w.progress_until(|| unsafe { ea.ops().ep_am_short_iov.unwrap()(ea.raw(), 7, iov.as_ptr(), 2) } == UCS_OK);
    let mut comp = uct_completion_t { func: None, count: 1, status: UCS_OK };
    let hdr = [0x5au8; 16];
    let st = loop {
        // SAFETY: a live endpoint; header, iov buffers and `comp` live to the
        // end of the test, past the completion (waited for below).
        let s = unsafe {
            ea.ops().ep_am_zcopy.unwrap()(ea.raw(), 7, hdr.as_ptr() as *const c_void, 16, iov.as_ptr(), 2, 0, &mut comp)
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
    // puts land only in memory registered with the md
    let memh = w.reg(&mut dst);
    let piov = [uct_iov_t { buffer: src.as_ptr() as *mut c_void, length: src.len(), memh: null_mut(), stride: 0,
                            count: 1 }];
    let mut pcomp = uct_completion_t { func: None, count: 1, status: UCS_OK };
    w.progress_until(|| {
        // SAFETY: a live endpoint; `src` and `dst` (100000 bytes each, the
        // length put) live past the flush that waits for the put; tcp
        // ignores the rkey.
        let s = unsafe {
            eb.ops().ep_put_zcopy.unwrap()(eb.raw(), piov.as_ptr(), 1, dst.as_mut_ptr() as u64, 0, null_mut())
        };
        s == UCS_INPROGRESS
    });
    // SAFETY: a live endpoint; `pcomp` outlives the flush (waited for below).
    assert_eq!(unsafe { eb.ops().ep_flush.unwrap()(eb.raw(), 0, &mut pcomp) }, UCS_INPROGRESS);
    w.progress_until(|| count(&pcomp) == 0);
    assert_eq!(pcomp.status, UCS_OK);
    assert_eq!(dst, src);
    w.dereg(memh);
    w.flush(ea);
    // SAFETY: interface 0 is open, no completion is passed; the endpoints
    // are destroyed once and not used after.
    unsafe {
        assert_eq!(w.iface_ops(0).iface_flush.unwrap()(w.iface(0), 0, null_mut()), UCS_OK);
        ea.destroy();
        eb.destroy();
    }
}

static PENDING_RAN: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

unsafe extern "C" fn pending_cb(_req: *mut uct_pending_req_t) -> ucs_status_t {
    PENDING_RAN.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    UCS_OK
}

#[test]
fn pending_queue_and_peer_failure() {
    if !lo_reachable() {
        return;
    }
    let mut w = World::new(1);
    w.open(); // interface 1, the receiver
    let got = Got::default();
    // SAFETY: `got` lives to the end of the test, past the last progress
    // call of `w`.
    unsafe { w.listen(1, 1, &got) };
    let ab = w.ep_to_iface(0, 1);
    w.progress_until(|| am_short(ab, 1, 0, b"hi") == UCS_OK);
    // Fill the socket without letting the receiver read: only our own
    // interface makes progress (the receiver's progress is disabled).
    w.set_progress(1, false);
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
    // SAFETY: a live endpoint; `req` lives to the end of the test and runs
    // (leaving the queue) in the progress_until below.
    assert_eq!(unsafe { ab.ops().ep_pending_add.unwrap()(ab.raw(), &mut req, 0) }, UCS_OK);
    w.set_progress(1, true);
    w.progress_until(|| PENDING_RAN.load(std::sync::atomic::Ordering::SeqCst) == 1);
    w.progress_until(|| got.len() == sent + 1);
    // The peer goes away: the error handler hears of it.
    // Off the worker first: uct_iface_close removes the callback with
    // the thread-safe (deferred) call, which a later progress of the
    // same worker may still reach.
    w.set_progress(1, false);
    let (i, c) = w.ifaces.pop().unwrap();
    // SAFETY: taken out of the World's list, so closed once, here; nothing
    // uses the interface after (only ab, of interface 0, goes on).
    unsafe {
        uct_iface_close(i);
        uct_config_release(c as *mut c_void);
    }
    w.progress_until(|| {
        let _ = am_short(ab, 1, 0, b"x");
        failed(ab)
    });
    assert_ne!(am_short(ab, 1, 0, b"x"), UCS_OK);
    // SAFETY: destroyed once, not used after.
    unsafe { ab.destroy() };
}

/// Two tcp interfaces with coalescing on (64k), the second on a worker of
/// its own with a handler for id 3 that records into `got`, and an endpoint
/// pair between them that has carried one message. The caller declares
/// `got` before the World, so the World (and its last progress call) goes
/// first.
fn coalescing_world(got: &Got) -> (World, Ep, Ep) {
    coalescing_world_with(got, &[])
}

/// As `coalescing_world`, with more `UCX_TCP_*` settings on both interfaces.
fn coalescing_world_with(got: &Got, more: &[(&std::ffi::CStr, &std::ffi::CStr)]) -> (World, Ep, Ep) {
    let mut w = World::new(0);
    // (no safety-net timer: on a loaded machine it would send what these
    // tests check is held; tests/ucp-data.sh relies on it instead)
    let mut settings = vec![(c"TX_COALESCE", c"64k"), (c"TX_COALESCE_TIMEOUT", c"inf")];
    settings.extend_from_slice(more);
    w.open_with(&settings);
    w.open_peer_with(&settings);
    // SAFETY: `got` outlives the World (see above).
    unsafe { w.listen(1, 3, got) };
    let (ea, eb) = w.ep_pair(0, 1);
    w.progress_until(|| am_short(ea, 3, 0, b"warm-up") == UCS_OK);
    w.progress_until(|| got.len() == 1);
    (w, ea, eb)
}

/// Active messages sent back to back (no progress call in between) are held
/// back and go out together (`UCX_TCP_TX_COALESCE`): the first one at once,
/// the others (small zero-copy ones copied in) at the next flush, event arm,
/// progress, large zero-copy send or endpoint destruction, in order and
/// intact. The receiver is on a worker of its own, which another thread
/// progresses while the test checks that messages are held (this thread's
/// work on any other worker would send them first).
#[test]
fn back_to_back_messages_coalesce_in_order() {
    let got = Got::default();
    let (w, ea, eb) = coalescing_world(&got);
    let sender_progress = |on: bool| w.set_progress(0, on);
    let part1 = [0x11u8; 300];
    let part2 = [0x22u8; 700];
    let iov = [
        uct_iov_t { buffer: part1.as_ptr() as *mut c_void, length: 300, memh: null_mut(), stride: 0, count: 1 },
        uct_iov_t { buffer: part2.as_ptr() as *mut c_void, length: 700, memh: null_mut(), stride: 0, count: 1 },
    ];
    let big: Vec<u8> = (0..60_000u32).map(|k| (k % 251) as u8).collect();
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
        // SAFETY: a live endpoint; the iov's buffers outlive the call, which
        // copies them.
        assert_eq!(unsafe { ea.ops().ep_am_short_iov.unwrap()(ea.raw(), 3, iov.as_ptr(), 2) }, UCS_OK);
        want.push([part1.as_slice(), &part2].concat());
        // a small zero-copy message is copied in with the others: done now
        let small_hdr = [0x77u8; 4];
        // SAFETY: a live endpoint; header and iov buffers outlive the loop,
        // and a small zero-copy message is copied at once (UCS_OK, asserted),
        // so no completion is needed.
        let s = unsafe {
            ea.ops().ep_am_zcopy.unwrap()(ea.raw(), 3, small_hdr.as_ptr() as *const c_void, 4, iov.as_ptr(), 2, 0,
                                          null_mut())
        };
        assert_eq!(s, UCS_OK, "{release}: small am_zcopy");
        want.push([small_hdr.as_slice(), &part1, &part2].concat());
        // Only the first message is on the wire: the receiver (progressing
        // alone) gets it and nothing more.
        w.progress_peer_elsewhere(|| got.len() > base, 300);
        assert_eq!(got.len(), base + 1, "{release}: messages after the first were not held back");
        let mut comp = uct_completion_t { func: None, count: 1, status: UCS_OK };
        let mut zst = UCS_OK;
        let zhdr = [0x5au8; 8];
        match release {
            "flush" => {
                let s = flush_now(ea);
                assert!(s == UCS_OK || s == UCS_INPROGRESS, "{release}: flush {s}");
            }
            // SAFETY: interface 0 is open.
            "arm" => assert_eq!(unsafe { w.iface_ops(0).iface_event_arm.unwrap()(w.iface(0), UCT_EVENT_RECV) }, UCS_OK),
            "progress" => sender_progress(true),
            "zcopy" => {
                // too large to join the held messages within the 64 KiB
                // bound: a real zero-copy send, which takes the held
                // messages along ahead of it
                // SAFETY: a live endpoint; `zhdr`, `big` and `comp` live until
                // the completion is waited for below.
                let s = unsafe {
                    ea.ops().ep_am_zcopy.unwrap()(ea.raw(), 3, zhdr.as_ptr() as *const c_void, 8, big_iov.as_ptr(), 1,
                                                  0, &mut comp)
                };
                assert!(s == UCS_OK || s == UCS_INPROGRESS, "{release}: am_zcopy {s}");
                zst = s;
                want.push([zhdr.as_slice(), &big].concat());
            }
            // SAFETY: the last round: `ea` is not used after.
            _ => unsafe { ea.destroy() },
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
    // SAFETY: destroyed once, not used after.
    unsafe { eb.destroy() };
    for _ in 0..100 {
        w.progress();
    }
}

/// Coalescing leaves large zero-copy messages alone on a connection that
/// leaves the host: a message above 17 KiB is sent from the user's buffer
/// at once (not copied and held); a 16 KiB one is still copied and held,
/// and the message after a large one goes out on its own too. On a
/// connection within the host that got `UCX_TCP_LOCAL_CC` (the default,
/// reno, on loopback) every active message within the coalescing bound is
/// copied and held, and the message after a larger one is held to go out
/// with the next message. (Under BBR, holding those halved UCP stream
/// bandwidth over loopback; with reno it makes 32 and 64 KiB streams
/// faster: see the comment on COPY_HOLD_MAX in the tcp transport.)
#[test]
fn large_zero_copy_messages_are_not_held() {
    // The system's congestion control (LOCAL_CC empty), then the default
    // with a coalescing bound of 32 KiB; (size, held) per message.
    type Case<'a> = (&'a std::ffi::CStr, &'a [(usize, bool)], bool);
    let cases: [Case; 2] = [
        (c"", &[(20_000, false), (16_384, true)], false),
        (c"reno", &[(40_000, false), (20_000, true), (16_384, true)], true),
    ];
    for (local_cc, sizes, after_held) in cases {
        let got = Got::default();
        let bound = if local_cc.is_empty() { c"64k" } else { c"32k" };
        let (w, ea, eb) = coalescing_world_with(&got, &[(c"LOCAL_CC", local_cc), (c"TX_COALESCE", bound)]);
        large_zero_copy_case(&w, &got, ea, sizes, after_held);
        // SAFETY: destroyed once, not used after.
        unsafe { ea.destroy() };
        // SAFETY: as above.
        unsafe { eb.destroy() };
        for _ in 0..100 {
            w.progress();
        }
    }
}

/// One run of `large_zero_copy_messages_are_not_held`: per message size,
/// whether it is held back; `after_held`, the message after one that is
/// not is held back.
fn large_zero_copy_case(w: &World, got: &Got, ea: Ep, sizes: &[(usize, bool)], after_held: bool) {
    let zhdr = [0x5au8; 8];
    for &(size, held) in sizes {
        w.progress();
        w.set_progress(0, false);
        let base = got.len();
        let data: Vec<u8> = (0..size as u32).map(|k| (k % 241) as u8).collect();
        let iov = [uct_iov_t { buffer: data.as_ptr() as *mut c_void, length: size, memh: null_mut(), stride: 0,
                               count: 1 }];
        // the first message of the epoch goes out at once
        assert_eq!(am_short(ea, 3, 1, b"first"), UCS_OK);
        let mut comp = uct_completion_t { func: None, count: 1, status: UCS_OK };
        // SAFETY: a live endpoint; `zhdr`, `data` and `comp` live until the
        // completion is waited for below.
        let s = unsafe {
            ea.ops().ep_am_zcopy.unwrap()(ea.raw(), 3, zhdr.as_ptr() as *const c_void, 8, iov.as_ptr(), 1, 0,
                                          &mut comp)
        };
        assert!(s == UCS_OK || s == UCS_INPROGRESS, "am_zcopy {size}: {s}");
        assert_eq!(am_short(ea, 3, 2, b"after"), UCS_OK);
        let want = if held { 1 } else if after_held { 2 } else { 3 };
        w.progress_peer_elsewhere(|| got.len() >= base + want, 300);
        assert_eq!(got.len(), base + want, "zcopy of {size} bytes: held {held} expected, after it {after_held}");
        w.set_progress(0, true);
        w.progress_until(|| got.len() >= base + 3);
        assert_eq!(got.get(base + 1), [zhdr.as_slice(), &data].concat(), "zcopy of {size} bytes");
        assert_eq!(got.get(base + 2), [2u64.to_ne_bytes().as_slice(), b"after"].concat());
        if s == UCS_INPROGRESS {
            w.progress_until(|| count(&comp) == 0);
        }
        w.flush(ea);
    }
}

/// What the descriptor handler saw: per message its sequence number,
/// length and whether it came as a descriptor; the descriptors it kept.
#[derive(Default)]
struct Descs {
    seen: Vec<(u32, usize, bool)>,
    kept: Vec<(*mut u8, usize)>,
    bad: Vec<String>,
}

const DESC_HEADROOM: usize = 40;

/// The body of message `seq` of `len` bytes: its number, then a pattern.
fn desc_msg(seq: u32, len: usize) -> Vec<u8> {
    let mut m: Vec<u8> = (0..len).map(|k| (k as u32).wrapping_mul(31).wrapping_add(seq * 7) as u8).collect();
    m[..4].copy_from_slice(&seq.to_ne_bytes());
    m
}

/// Handler: checks each message against `desc_msg`, and keeps every other
/// descriptor (after writing over its headroom, which is the user's).
unsafe extern "C" fn on_am_desc(arg: *mut c_void, data: *mut c_void, len: usize, flags: c_uint) -> ucs_status_t {
    // SAFETY: registered with a `*mut Descs` that outlives the progress calls
    // and is only touched by this handler while they run.
    let d = unsafe { &mut *(arg as *mut Descs) };
    // SAFETY: the transport passes `len` readable bytes at `data`.
    let msg = unsafe { std::slice::from_raw_parts(data as *const u8, len) };
    let seq = u32::from_ne_bytes(msg[..4].try_into().unwrap());
    if msg != desc_msg(seq, len) {
        d.bad.push(format!("message {seq} ({len} bytes) arrived changed"));
    }
    let desc = flags & UCT_CB_PARAM_FLAG_DESC != 0;
    d.seen.push((seq, len, desc));
    if desc && seq % 2 == 0 {
        // SAFETY: with UCT_CB_PARAM_FLAG_DESC the rx_headroom bytes in
        // front of the data are the handler's.
        unsafe { std::ptr::write_bytes((data as *mut u8).sub(DESC_HEADROOM), 0xee, DESC_HEADROOM) };
        d.kept.push((data as *mut u8, len));
        return UCS_INPROGRESS;
    }
    UCS_OK
}

/// `uct_iface_release_desc` (an inline function of uct.h): the release
/// descriptor is the pointer just before `desc`.
///
/// # Safety
/// `desc` is a descriptor a handler kept (data less the rx_headroom) and
/// has not released.
unsafe fn release_desc(desc: *mut u8) {
    // SAFETY: see the function contract; the slot in front of a kept
    // descriptor holds its release descriptor.
    unsafe {
        let rd = (desc as *mut *mut uct_recv_desc_t).sub(1).read_unaligned();
        (*rd).cb.unwrap()(rd, desc as *mut c_void);
    }
}

/// Large active messages that arrive in pieces are handed over as
/// descriptors (UCX_TCP_RX_DESC_MIN): the data is intact, the headroom
/// asked for is there and the user's, kept descriptors stay intact while
/// later messages arrive, and they can be released in any order, also
/// after the interface closed. Smaller messages are never descriptors,
/// and with "inf" none is (16k, the default 17k and inf).
#[test]
fn large_messages_arrive_as_descriptors() {
    if !lo_reachable() {
        return;
    }
    // (setting, smallest message that may come as a descriptor); None: the
    // default (17k).
    for (setting, min) in [(Some(c"16k"), 16_384usize), (None, 17 << 10), (Some(c"inf"), usize::MAX)] {
        let mut w = World::new(0);
        w.open();
        // The receiver, with a headroom for the user in front of its data.
        let settings: Vec<(&std::ffi::CStr, &std::ffi::CStr)> =
            setting.map(|v| vec![(c"RX_DESC_MIN", v)]).unwrap_or_default();
        // SAFETY: the World's md is open.
        let config = unsafe { iface_config(w.md, c"tcp", &settings) };
        let mut p = device_params(c"tcp", c"lo");
        p.field_mask |= UCT_IFACE_PARAM_FIELD_RX_HEADROOM;
        p.rx_headroom = DESC_HEADROOM;
        let mut rx = null_mut();
        // SAFETY: md and worker are the World's, open; the parameters point
        // at static names; the out-pointer is a local.
        assert_eq!(unsafe { uct_iface_open(w.md, w.worker, &p, config, &mut rx) }, UCS_OK);
        w.ifaces.push((rx, config));
        w.set_progress(1, true);
        let mut descs = Box::new(Descs::default());
        let arg = &mut *descs as *mut Descs as *mut c_void;
        // SAFETY: the receiver is open; `descs` outlives its progress calls.
        assert_eq!(unsafe { uct_iface_set_am_handler(rx, 5, Some(on_am_desc), arg, 0) }, UCS_OK);
        let ep = w.ep_to_iface(0, 1);
        // Back to back, so that the receiver's reads end inside messages.
        let sizes = [100usize, 40_000, 16_384, 16_383, 65_000, 20, 32_768, 32_768, 32_768, 5, 50_000, 24_000, 24_000,
                     60_000, 17_000, 300, 65_000, 65_000, 65_000, 65_000];
        let msgs: Vec<Vec<u8>> = sizes.iter().enumerate().map(|(k, &n)| desc_msg(k as u32, n)).collect();
        let mut comps: Vec<Box<uct_completion_t>> = Vec::new();
        for m in &msgs {
            let iov = [uct_iov_t { buffer: m[4..].as_ptr() as *mut c_void, length: m.len() - 4, memh: null_mut(),
                                   stride: 0, count: 1 }];
            let mut comp = Box::new(uct_completion_t { func: None, count: 1, status: UCS_OK });
            loop {
                // SAFETY: a live endpoint; the header, data and completion
                // live until the completions are waited for below.
                let s = unsafe {
                    ep.ops().ep_am_zcopy.unwrap()(ep.raw(), 5, m.as_ptr() as *const c_void, 4, iov.as_ptr(), 1, 0,
                                                  &mut *comp)
                };
                if s == UCS_ERR_NO_RESOURCE {
                    w.progress();
                    continue;
                }
                assert!(s == UCS_OK || s == UCS_INPROGRESS, "am_zcopy: {s}");
                if s == UCS_OK {
                    comp.count = 0;
                }
                break;
            }
            comps.push(comp);
        }
        w.progress_until(|| descs.seen.len() == msgs.len() && comps.iter().all(|c| count(c) <= 0));
        assert!(descs.bad.is_empty(), "{:?}", descs.bad);
        let order: Vec<u32> = descs.seen.iter().map(|s| s.0).collect();
        assert_eq!(order, (0..msgs.len() as u32).collect::<Vec<_>>(), "messages out of order");
        let n_desc = descs.seen.iter().filter(|s| s.2).count();
        for &(seq, len, desc) in &descs.seen {
            assert!(!desc || len >= min, "message {seq} of {len} bytes came as a descriptor ({setting:?})");
        }
        if min == usize::MAX {
            assert_eq!(n_desc, 0, "descriptors with RX_DESC_MIN=inf");
        } else {
            assert!(n_desc > 0, "no large message came as a descriptor: {:?}", descs.seen);
        }
        // Kept descriptors are intact after all the later messages.
        for &(data, len) in &descs.kept {
            // SAFETY: a kept descriptor stays valid until released.
            let msg = unsafe { std::slice::from_raw_parts(data, len) };
            let seq = u32::from_ne_bytes(msg[..4].try_into().unwrap());
            assert_eq!(msg, desc_msg(seq, len), "kept message {seq} changed");
        }
        // Release half now (in reverse order), the rest after the close.
        let mut kept = std::mem::take(&mut descs.kept);
        let later = kept.split_off(kept.len() / 2);
        for &(data, _) in kept.iter().rev() {
            // SAFETY: kept by the handler, released once.
            unsafe { release_desc(data.sub(DESC_HEADROOM)) };
        }
        // SAFETY: destroyed once, not used after.
        unsafe { ep.destroy() };
        drop(w);
        for &(data, _) in &later {
            // SAFETY: as above; the pool outlives its interface while
            // descriptors are out.
            unsafe { release_desc(data.sub(DESC_HEADROOM)) };
        }
    }
}

/// A pending request that sends one fragment per call and answers
/// UCS_INPROGRESS until its last one (what libucp's multi-fragment
/// rendezvous does) is called again while the socket takes more, until it
/// answers UCS_OK: nothing is left behind in the pending queue.
#[repr(C)]
struct Fragments {
    req: uct_pending_req_t,
    ep: Ep,
    sent: u32,
    total: u32,
}

unsafe extern "C" fn send_fragment(req: *mut uct_pending_req_t) -> ucs_status_t {
    // SAFETY: `req` is the first field of a live Fragments (repr(C), same
    // address), which the test only reads while progress runs.
    let f = unsafe { &mut *(req as *mut Fragments) };
    let s = am_short(f.ep, 2, f.sent as u64, &[0x42; 64]);
    if s != UCS_OK {
        return s;
    }
    f.sent += 1;
    if f.sent < f.total { UCS_INPROGRESS } else { UCS_OK }
}

/// The congestion control of every connected TCP socket of this process
/// whose peer is 127.0.0.1 and that has one of `ports` at either end (the
/// connections of one World's interfaces: the tests of this file run in
/// parallel in one process).
fn loopback_congestion(ports: &[u16]) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc/self/fd").unwrap().flatten() {
        let Ok(fd) = e.file_name().to_string_lossy().parse::<i32>() else { continue };
        // SAFETY: all-zero is a valid sockaddr_in.
        let mut sa = unsafe { std::mem::zeroed::<libc::sockaddr_in>() };
        let mut sl = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
        // SAFETY: getpeername writes at most `sl` bytes into `sa` (a
        // descriptor that is not a connected socket fails it).
        let r = unsafe { libc::getpeername(fd, &mut sa as *mut _ as *mut libc::sockaddr, &mut sl) };
        if r != 0 || sa.sin_family as i32 != libc::AF_INET || sa.sin_addr.s_addr != u32::from_ne_bytes([127, 0, 0, 1]) {
            continue;
        }
        let peer_port = u16::from_be(sa.sin_port);
        // SAFETY: as above.
        let r = unsafe { libc::getsockname(fd, &mut sa as *mut _ as *mut libc::sockaddr, &mut sl) };
        if r != 0 || !(ports.contains(&peer_port) || ports.contains(&u16::from_be(sa.sin_port))) {
            continue;
        }
        let mut name = [0u8; 16];
        let mut nl = name.len() as libc::socklen_t;
        // SAFETY: as above.
        let r = unsafe {
            libc::getsockopt(fd, libc::IPPROTO_TCP, libc::TCP_CONGESTION, name.as_mut_ptr() as *mut c_void, &mut nl)
        };
        if r == 0 {
            let n = name.iter().position(|&b| b == 0).unwrap_or(name.len());
            out.push(String::from_utf8_lossy(&name[..n]).into_owned());
        }
    }
    out
}

/// Connections within the host get `UCX_TCP_LOCAL_CC` (reno by default),
/// both the connecting and the accepted side; an empty setting leaves the
/// system's default. (Where the system's default is reno already, the
/// first half cannot tell the difference.)
#[test]
fn local_connections_get_their_congestion_control() {
    let system = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_congestion_control").unwrap().trim().to_owned();
    for (setting, want) in [(None, "reno"), (Some(c""), system.as_str())] {
        let got = Got::default();
        let mut w = World::new(0);
        let settings: Vec<_> = setting.map(|v| (c"LOCAL_CC", v)).into_iter().collect();
        w.open_with(&settings);
        w.open_with(&settings);
        // SAFETY: `got` outlives the World (dropped at the end of this
        // iteration).
        unsafe { w.listen(1, 3, &got) };
        let (ea, _eb) = w.ep_pair(0, 1);
        w.progress_until(|| am_short(ea, 3, 0, b"hello") == UCS_OK);
        w.progress_until(|| got.len() == 1);
        // A tcp interface address starts with its port (network order).
        let ports: Vec<u16> = (0..2).map(|i| { let a = w.addrs(i).1; u16::from_be_bytes([a[0], a[1]]) }).collect();
        let ccs = loopback_congestion(&ports);
        assert!(ccs.len() >= 2, "setting {setting:?}: connected loopback sockets {ccs:?}");
        assert!(ccs.iter().all(|c| c == want), "setting {setting:?}: want {want}, sockets have {ccs:?}");
        drop(w);
    }
}

#[test]
fn pending_request_in_progress_is_called_again() {
    let w = World::new(2);
    let got = Got::default();
    let fills = Got::default();
    // SAFETY: `got` and `fills` live to the end of the test, past the last
    // progress call of `w`.
    unsafe {
        w.listen(1, 2, &got);
        w.listen(1, 3, &fills);
    }
    let (ea, _eb) = w.ep_pair(0, 1);
    w.progress_until(|| am_short(ea, 2, u64::MAX, b"first") == UCS_OK);
    w.progress_until(|| got.len() == 1);
    // Fill the socket while the receiver does not read.
    w.set_progress(1, false);
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
    // SAFETY: a live endpoint; `f` lives to the end of the test and has
    // left the queue (its last call answered UCS_OK) once `sent` is 40.
    assert_eq!(unsafe { ea.ops().ep_pending_add.unwrap()(ea.raw(), &mut f.req, 0) }, UCS_OK);
    w.set_progress(1, true);
    // SAFETY: a read of a live field, volatile because the callback writes
    // it through a pointer.
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
    // SAFETY: `got` lives to the end of the test, past the last progress
    // call of `w`.
    unsafe { w.listen(1, 4, &got) };
    let (ea, eb) = w.ep_pair(0, 1);
    w.progress_until(|| am_short(ea, 4, 0, b"hello") == UCS_OK);
    w.progress_until(|| got.len() == 1);
    w.set_progress(1, false);
    let payload = vec![0x5au8; 60_000];
    let piov = [uct_iov_t { buffer: payload.as_ptr() as *mut c_void, length: payload.len(), memh: null_mut(),
                            stride: 0, count: 1 }];
    let mut comp = uct_completion_t { func: Some(count_completion), count: 1, status: UCS_OK };
    let hdr = [0u8; 8];
    let mut tries = 0;
    loop {
        // SAFETY: a live endpoint; `hdr`, `payload` and `comp` live to the end
        // of the test, past the cancellation by the destroy below.
        let s = unsafe {
            ea.ops().ep_am_zcopy.unwrap()(ea.raw(), 4, hdr.as_ptr() as *const c_void, 8, piov.as_ptr(), 1, 0, &mut comp)
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
    let f = flush_now(ea);
    assert!(f == UCS_INPROGRESS || f == UCS_ERR_NO_RESOURCE, "flush with a send in flight: {f}");
    // SAFETY: destroyed once, not used after.
    unsafe { ea.destroy() };
    assert_eq!(COMP_CALLS.load(std::sync::atomic::Ordering::SeqCst), before + 1, "completion not run once");
    assert_eq!(comp.status, UCS_ERR_CANCELED);
    assert_eq!(comp.count, 0);
    w.set_progress(1, true);
    for _ in 0..1000 {
        w.progress();
    }
    assert_eq!(COMP_CALLS.load(std::sync::atomic::Ordering::SeqCst), before + 1, "completion run again");
    // The interfaces still work: a new pair of endpoints carries a message.
    let n = got.len();
    let (ea2, eb2) = w.ep_pair(0, 1);
    w.progress_until(|| am_short(ea2, 4, 7, b"after") == UCS_OK);
    w.progress_until(|| got.len() > n && got.get(got.len() - 1).ends_with(b"after"));
    // SAFETY: each destroyed once, none used after.
    unsafe {
        ea2.destroy();
        eb2.destroy();
        eb.destroy();
    }
}

// ---------------------------------------------------------------------------
// Hostile peers: raw sockets speaking (or breaking) the wire protocol.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};

const MAGIC: u64 = 0xCAFE_BABE_1234_5678;

fn frame(id: u8, body: &[u8]) -> Vec<u8> {
    let mut v = vec![id];
    v.extend_from_slice(&(body.len() as u32).to_ne_bytes());
    v.extend_from_slice(body);
    v
}

/// A connection request from 127.0.0.1:`port` with sequence number `sn`.
fn conn_req(sn: u64, port: u16) -> Vec<u8> {
    let mut b = 1u32.to_ne_bytes().to_vec();
    b.push(0);
    b.extend_from_slice(&sn.to_ne_bytes());
    b.extend_from_slice(&2u16.to_ne_bytes());
    b.extend_from_slice(&port.to_be_bytes());
    b.extend_from_slice(&[127, 0, 0, 1]);
    b.extend_from_slice(&[0; 8]);
    frame(32, &b)
}

fn put_req(addr: u64, len: u64, sn: u32) -> Vec<u8> {
    let mut b = addr.to_ne_bytes().to_vec();
    b.extend_from_slice(&len.to_ne_bytes());
    b.extend_from_slice(&sn.to_ne_bytes());
    frame(33, &b)
}

fn magic() -> Vec<u8> {
    MAGIC.to_ne_bytes().to_vec()
}

impl World {
    /// A raw TCP connection to interface `i`'s listening port.
    fn raw(&self, i: usize) -> TcpStream {
        let (_, addr) = self.addrs(i);
        let s = TcpStream::connect(("127.0.0.1", u16::from_be_bytes([addr[0], addr[1]]))).unwrap();
        s.set_nonblocking(true).unwrap();
        s
    }

    /// Progress until the library closes `s`; what it sent before.
    #[track_caller]
    fn wait_closed(&self, s: &mut TcpStream) -> Vec<u8> {
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        self.progress_until(|| match s.read(&mut buf) {
            Ok(0) => true,
            Ok(n) => {
                got.extend_from_slice(&buf[..n]);
                false
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => false,
            Err(_) => true,
        });
        got
    }

    /// Progress for a while; what `s` received meanwhile, and whether it
    /// is still open.
    fn soak(&self, s: &mut TcpStream, ms: u64) -> (Vec<u8>, bool) {
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        let end = std::time::Instant::now() + std::time::Duration::from_millis(ms);
        while std::time::Instant::now() < end {
            self.progress();
            match s.read(&mut buf) {
                Ok(0) => return (got, false),
                Ok(n) => got.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(_) => return (got, false),
            }
        }
        (got, true)
    }

    /// A message from interface 0 to 1 still arrives (through `got`, which
    /// listens for id 5 on interface 1).
    #[track_caller]
    fn still_serves(&self, ep: Ep, got: &Got) {
        let n = got.len();
        self.progress_until(|| am_short(ep, 5, 77, b"ok") == UCS_OK);
        self.progress_until(|| got.len() == n + 1);
    }
}

/// CONN_ACK frame, as the library answers a connection request.
fn ack_frame() -> Vec<u8> {
    frame(32, &2u32.to_ne_bytes())
}

#[test]
fn hostile_puts_write_nothing() {
    if !lo_reachable() {
        return;
    }
    let w = World::new(2);
    let got = Got::default();
    // SAFETY: `got` lives to the end of the test, past the last progress
    // call of `w`.
    unsafe { w.listen(1, 5, &got) };
    let ep = w.ep_to_iface(0, 1);
    w.still_serves(ep, &got);
    let mut target = vec![0u8; 4096];
    let memh = w.reg(&mut target[..1024]);
    let base = target.as_ptr() as u64;
    let unreg = vec![0u8; 256];
    let data = [0xeeu8; 64];

    // 1. a put before any connection request, into registered memory
    let mut s = w.raw(1);
    s.write_all(&[magic(), put_req(base, 64, 1), data.to_vec()].concat()).unwrap();
    w.wait_closed(&mut s);
    // 2. a put without the magic number's handshake at all
    let mut s = w.raw(1);
    s.write_all(&[put_req(base, 64, 1), data.to_vec()].concat()).unwrap();
    w.wait_closed(&mut s);
    // 3. after the handshake, into memory nobody registered
    let mut s = w.raw(1);
    s.write_all(&[magic(), conn_req(1000, 1), put_req(unreg.as_ptr() as u64, 64, 1), data.to_vec()].concat())
        .unwrap();
    assert_eq!(w.wait_closed(&mut s), ack_frame());
    // 4. straddling the end of the registered range
    let mut s = w.raw(1);
    s.write_all(&[magic(), conn_req(1001, 1), put_req(base + 1000, 64, 1), data.to_vec()].concat()).unwrap();
    assert_eq!(w.wait_closed(&mut s), ack_frame());
    // 5. a length that wraps around the address space
    let mut s = w.raw(1);
    s.write_all(&[magic(), conn_req(1002, 1), put_req(base, u64::MAX - 8, 1), data.to_vec()].concat()).unwrap();
    w.wait_closed(&mut s);
    // 6. a PUT_REQ shorter than its header
    let mut s = w.raw(1);
    s.write_all(&[magic(), conn_req(1003, 1), frame(33, &base.to_ne_bytes())].concat()).unwrap();
    w.wait_closed(&mut s);
    assert!(target.iter().all(|&b| b == 0), "a hostile put wrote into the process");
    assert!(unreg.iter().all(|&b| b == 0), "a hostile put wrote into the process");
    w.still_serves(ep, &got);

    // Inside the registration the put lands and is acknowledged; an empty
    // put (what a flush sends) too.
    let mut s = w.raw(1);
    s.write_all(&[magic(), conn_req(1004, 1), put_req(base + 8, 64, 7), data.to_vec(), put_req(0, 0, 8)].concat())
        .unwrap();
    let (bytes, open) = w.soak(&mut s, 300);
    assert!(open);
    let want = [ack_frame(), frame(34, &7u32.to_ne_bytes()), frame(34, &8u32.to_ne_bytes())].concat();
    assert_eq!(bytes, want);
    assert_eq!(&target[8..72], &data);
    // A put still coming in when its memory is deregistered is stopped:
    // announce 512 bytes, send 16, deregister, send the rest.
    s.write_all(&[put_req(base + 512, 512, 9), vec![0x11; 16]].concat()).unwrap();
    w.soak(&mut s, 100);
    w.dereg(memh);
    s.write_all(&[0x22; 496]).unwrap();
    w.wait_closed(&mut s);
    assert!(target[512 + 16..].iter().all(|&b| b == 0));
    w.still_serves(ep, &got);
    // SAFETY: destroyed once, not used after.
    unsafe { ep.destroy() };
}

#[test]
fn protocol_violations_close_the_connection() {
    if !lo_reachable() {
        return;
    }
    let w = World::new(2);
    let got = Got::default();
    // SAFETY: `got` lives to the end of the test, past the last progress
    // call of `w`.
    unsafe { w.listen(1, 5, &got) };
    let ep = w.ep_to_iface(0, 1);
    w.still_serves(ep, &got);
    let n = got.len();
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("wrong magic", b"GET / HTTP/1.0\r\n\r\n".to_vec()),
        ("active message before the request", [magic(), frame(5, &[0; 16])].concat()),
        ("keepalive before the request", [magic(), frame(35, &[])].concat()),
        ("malformed request", [magic(), frame(32, &[1, 0, 0, 0, 0])].concat()),
        ("request of a wrong length", [magic(), frame(32, &[0; 30])].concat()),
        ("ack instead of a request", [magic(), ack_frame()].concat()),
        ("unknown id", [magic(), conn_req(2000, 1), frame(40, &[1, 2, 3])].concat()),
        ("second request", [magic(), conn_req(2001, 1), conn_req(2001, 1)].concat()),
        ("ack without a request of ours", [magic(), conn_req(2002, 1), ack_frame()].concat()),
        ("unknown connection event", [magic(), conn_req(2003, 1), frame(32, &9u32.to_ne_bytes())].concat()),
        ("event of a wrong length", [magic(), conn_req(2004, 1), frame(32, &[4, 0, 0, 0, 0, 0])].concat()),
        ("put ack of a wrong length", [magic(), conn_req(2005, 1), frame(34, &[1])].concat()),
        ("frame over the receive segment", [magic(), conn_req(2006, 1), frame(5, &[])[..1].to_vec(),
                                             (1u32 << 30).to_ne_bytes().to_vec()].concat()),
    ];
    for (what, bytes) in cases {
        let mut s = w.raw(1);
        s.write_all(&bytes).unwrap();
        let start = std::time::Instant::now();
        w.wait_closed(&mut s);
        assert!(start.elapsed().as_secs() < 5, "{what}");
        w.still_serves(ep, &got);
    }
    assert_eq!(got.len(), n + 13, "no hostile active message was delivered");
    // A FIN closes an accepted connection quietly; one after it is not read.
    let mut s = w.raw(1);
    s.write_all(&[magic(), conn_req(2100, 1), frame(32, &4u32.to_ne_bytes())].concat()).unwrap();
    assert_eq!(w.wait_closed(&mut s), ack_frame());
    // SAFETY: destroyed once, not used after.
    unsafe { ep.destroy() };
}

#[test]
fn violation_on_a_user_endpoint_reaches_its_error_handler() {
    if !lo_reachable() {
        return;
    }
    let w = World::new(1);
    // A fake peer: our own device address with the port of a raw listener.
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let (dev, _) = w.addrs(0);
    // SAFETY: interface 0 is open; the device address is its own, the
    // interface address a 2-byte port, as long as tcp declares them.
    let raw = unsafe { connect_to_iface(w.iface(0), &dev, &port.to_be_bytes()) }.unwrap();
    // SAFETY: just created; destroyed below, once.
    let ep = unsafe { Ep::from_raw(raw) };
    l.set_nonblocking(true).unwrap();
    let mut s = loop {
        match l.accept() {
            Ok((s, _)) => break s,
            Err(_) => w.progress(),
        }
    };
    s.set_nonblocking(true).unwrap();
    // Read its magic and request, acknowledge it, then break the protocol.
    let mut hello = Vec::new();
    w.progress_until(|| {
        let mut b = [0u8; 64];
        if let Ok(n) = s.read(&mut b) {
            hello.extend_from_slice(&b[..n]);
        }
        hello.len() >= 8 + 5 + 29
    });
    assert_eq!(&hello[..8], &magic()[..]);
    s.write_all(&[ack_frame(), frame(60, &[0; 4])].concat()).unwrap();
    w.progress_until(|| failed(ep));
    w.wait_closed(&mut s);
    // SAFETY: destroyed once, not used after.
    unsafe { ep.destroy() };
}

#[test]
fn handshake_timeout_closes_silent_peers() {
    if !lo_reachable() {
        return;
    }
    let mut w = World::new(1);
    w.open_with(&[(c"HANDSHAKE_TIMEOUT", c"200ms")]);
    let got = Got::default();
    // SAFETY: `got` lives to the end of the test, past the last progress
    // call of `w`.
    unsafe { w.listen(1, 5, &got) };
    let ep = w.ep_to_iface(0, 1);
    w.still_serves(ep, &got);
    let mut silent = w.raw(1);
    let mut half = w.raw(1);
    half.write_all(&magic()[..3]).unwrap();
    let mut no_req = w.raw(1);
    no_req.write_all(&magic()).unwrap();
    let mut good = w.raw(1);
    good.write_all(&[magic(), conn_req(3000, 1)].concat()).unwrap();
    let start = std::time::Instant::now();
    w.wait_closed(&mut silent);
    w.wait_closed(&mut half);
    w.wait_closed(&mut no_req);
    assert!(start.elapsed().as_millis() >= 150, "closed before the timeout");
    // the one that completed its handshake stays
    let (bytes, open) = w.soak(&mut good, 300);
    assert!(open);
    assert_eq!(bytes, ack_frame());
    w.still_serves(ep, &got);
    // SAFETY: destroyed once, not used after.
    unsafe { ep.destroy() };
}
