//! The posix and sysv transports driven through the exported API: two
//! interfaces in one process (sender and receiver, each with its own real
//! shared-memory FIFO), exercising what a two-process run cannot easily
//! observe: descriptors kept by a handler, a full FIFO with the pending
//! queue, and the wake-up event.

use std::ffi::{c_uint, c_void, CStr};
use std::ptr::null_mut;
use ::uct::abi::*;
use ::uct::ffi::component::*;
use ::uct::ffi::config::*;
use ::uct::ffi::ep::*;
use ::uct::ffi::iface::*;
use ::uct::ffi::worker::*;

mod common;
use common::*;

const HEADROOM: usize = 24;

struct Side {
    iface: uct_iface_h,
    config: *mut uct_iface_config_t,
}

struct Pair {
    async_: *mut ucs_async_context_t,
    worker: uct_worker_h,
    md: uct_md_h,
    rx: Side,
    tx: Side,
    ep: uct_ep_h,
}

/// Opens one more interface of `tl` on `md` (device "memory", our headroom).
///
/// # Safety
///
/// `md` and `worker` are open.
unsafe fn open_iface(md: uct_md_h, worker: uct_worker_h, tl: &'static CStr) -> Side {
    // SAFETY: `md` is open (the caller's promise).
    let config = unsafe { iface_config(md, tl, &[]) };
    let mut p = device_params(tl, c"memory");
    p.field_mask |= UCT_IFACE_PARAM_FIELD_RX_HEADROOM;
    p.rx_headroom = HEADROOM;
    let mut iface = null_mut();
    // SAFETY: md and worker are open (the caller's promise), the
    // configuration was just read, the parameters point at static names, the out-pointer is a
    // local.
    assert_eq!(unsafe { uct_iface_open(md, worker, &p, config, &mut iface) }, UCS_OK);
    Side { iface, config }
}

impl Side {
    /// The interface's operations table.
    fn ops(&self) -> &uct_iface_ops_t {
        // SAFETY: a Side's interface stays open until its Pair drops, and
        // starts with its operations table.
        unsafe { &(*self.iface).ops }
    }

    fn progress(&self) -> u32 {
        // SAFETY: the interface is open (see ops) and used from this thread.
        unsafe { self.ops().iface_progress.unwrap()(self.iface) }
    }
}

impl Pair {
    fn new(tl: &'static CStr) -> Pair {
        let (async_, worker) = new_worker();
        let md = open_md(tl, &[]);
        // SAFETY: md and worker were just opened.
        let (rx, tx) = unsafe { (open_iface(md, worker, tl), open_iface(md, worker, tl)) };
        // SAFETY: both interfaces were just opened; the addresses are rx's
        // own, as long as it declared.
        let ep = unsafe {
            let (dev, addr) = iface_addresses(rx.iface);
            connect_to_iface(tx.iface, &dev, &addr).expect("ep to the receiver")
        };
        Pair { async_, worker, md, rx, tx, ep }
    }

    fn progress_rx(&self) -> u32 {
        self.rx.progress()
    }

    fn progress_tx(&self) -> u32 {
        self.tx.progress()
    }

    fn am_short(&self, id: u8, header: u64, payload: &[u8]) -> ucs_status_t {
        // SAFETY: the Pair's endpoint is live until it drops; the payload
        // outlives the call, which copies it.
        unsafe {
            self.tx.ops().ep_am_short.unwrap()(self.ep, id, header, payload.as_ptr() as *const c_void,
                                               payload.len() as c_uint)
        }
    }

    fn am_bcopy(&self, id: u8, fill: &mut Fill) -> isize {
        // SAFETY: the Pair's endpoint is live until it drops; `fill` is the
        // argument pack_fill expects and outlives the call.
        unsafe { self.tx.ops().ep_am_bcopy.unwrap()(self.ep, id, Some(pack_fill), fill as *mut Fill as *mut c_void, 0) }
    }

    /// `ep_flush` with no completion.
    fn flush(&self) -> ucs_status_t {
        // SAFETY: the Pair's endpoint is live until it drops; no completion
        // is passed.
        unsafe { self.tx.ops().ep_flush.unwrap()(self.ep, 0, null_mut()) }
    }

    /// Registers `on_am` for `id` on the receiver, writing into `rx`.
    ///
    /// # Safety
    ///
    /// `rx` outlives every progress call of the receiver after this one.
    unsafe fn listen(&self, id: u8, rx: &mut Rx) {
        // SAFETY: the receiver is open; `rx` outlives its progress calls
        // (the caller's promise), where the handler runs.
        assert_eq!(unsafe { uct_iface_set_am_handler(self.rx.iface, id, Some(on_am), rx as *mut Rx as *mut c_void, 0) },
                   UCS_OK);
    }
}

impl Drop for Pair {
    fn drop(&mut self) {
        // SAFETY: everything was opened in new() and is closed only here,
        // the endpoint first, then each object before the one it was made
        // from.
        unsafe {
            uct_ep_destroy(self.ep);
            for s in [&self.tx, &self.rx] {
                uct_iface_close(s.iface);
                uct_config_release(s.config as *mut c_void);
            }
            uct_md_close(self.md);
            uct_worker_destroy(self.worker);
            ucs_async_context_destroy(self.async_);
        }
    }
}

struct Fill {
    byte: u8,
    len: usize,
}

/// Pack callback: `arg` is the `Fill` to write.
unsafe extern "C" fn pack_fill(dest: *mut c_void, arg: *mut c_void) -> usize {
    // SAFETY: am_bcopy passes a live Fill.
    let f = unsafe { &*(arg as *const Fill) };
    // SAFETY: the transport's buffer holds a segment, and the tests ask for
    // at most that.
    unsafe { std::ptr::write_bytes(dest as *mut u8, f.byte, f.len) };
    f.len
}

#[derive(Default)]
struct Rx {
    inline: Vec<Vec<u8>>,
    kept: Vec<(*mut u8, usize)>,
    keep: bool,
}

/// Active-message handler: `arg` is the test's `Rx` (see Pair::listen).
unsafe extern "C" fn on_am(arg: *mut c_void, data: *mut c_void, len: usize, flags: c_uint) -> ucs_status_t {
    // SAFETY: registered with a `*mut Rx` that outlives the progress calls;
    // the test does not touch it while progress runs.
    let rx = unsafe { &mut *(arg as *mut Rx) };
    if flags & UCT_CB_PARAM_FLAG_DESC != 0 {
        // The headroom before the data is ours to write.
        // SAFETY: a descriptor has the rx_headroom the interfaces were
        // opened with (HEADROOM) right before the data.
        unsafe { std::ptr::write_bytes((data as *mut u8).sub(HEADROOM), 0xee, HEADROOM) };
        if rx.keep {
            rx.kept.push((data as *mut u8, len));
            return UCS_INPROGRESS;
        }
    }
    // SAFETY: the transport passes `len` readable bytes at `data`.
    rx.inline.push(unsafe { std::slice::from_raw_parts(data as *const u8, len) }.to_vec());
    UCS_OK
}

/// What `uct_iface_release_desc` (an inline C helper) does.
///
/// # Safety
///
/// `desc` is the start (headroom included) of a descriptor a handler kept
/// (UCS_INPROGRESS) and has not been released yet; it is not used after.
unsafe fn release_desc(desc: *mut u8) {
    // SAFETY: a kept descriptor is preceded by the pointer to its release
    // descriptor (the caller's promise that `desc` is one).
    let rd = unsafe { *(desc as *mut *mut uct_recv_desc_t).sub(1) };
    // SAFETY: the release descriptor's callback takes the descriptor back,
    // once.
    unsafe { ((*rd).cb.unwrap())(rd, desc as *mut c_void) };
}

fn each_tl(f: impl Fn(&'static CStr)) {
    f(c"posix");
    f(c"sysv");
}

#[test]
fn short_and_bcopy_delivery() {
    each_tl(|tl| {
        let p = Pair::new(tl);
        let mut rx = Rx::default();
        // SAFETY: `rx` lives to the end of the closure, past the last
        // progress call on `p`.
        unsafe { p.listen(3, &mut rx) };
        assert_eq!(p.am_short(3, 0xabcdef, b"hi"), UCS_OK);
        let mut f = Fill { byte: 7, len: 5000 };
        assert_eq!(p.am_bcopy(3, &mut f), 5000);
        while rx.inline.len() < 2 {
            p.progress_rx();
        }
        let mut want = 0xabcdefu64.to_ne_bytes().to_vec();
        want.extend_from_slice(b"hi");
        assert_eq!(rx.inline[0], want);
        assert_eq!(rx.inline[1], vec![7u8; 5000]);
        // Oversized inline messages are refused, not truncated.
        assert_eq!(p.am_short(3, 0, &[0u8; 100]), UCS_ERR_INVALID_PARAM);
    });
}

#[test]
fn kept_descriptors_are_not_reused_until_released() {
    each_tl(|tl| {
        let p = Pair::new(tl);
        let mut rx = Rx { keep: true, ..Default::default() };
        // SAFETY: `rx` lives to the end of the closure, past the last
        // progress call on `p`.
        unsafe { p.listen(4, &mut rx) };
        // Keep the first 10 messages, then more than a whole FIFO's worth
        // flows through: the kept payloads must stay intact.
        for i in 0..10u8 {
            let mut f = Fill { byte: i, len: 1000 };
            assert_eq!(p.am_bcopy(4, &mut f), 1000);
            p.progress_rx();
        }
        while rx.kept.len() < 10 {
            p.progress_rx();
        }
        rx.keep = false;
        for _ in 0..300 {
            let mut f = Fill { byte: 0xff, len: 2000 };
            loop {
                let r = p.am_bcopy(4, &mut f);
                if r == 2000 {
                    break;
                }
                assert_eq!(r, UCS_ERR_NO_RESOURCE as isize);
                p.progress_rx();
                p.progress_tx();
            }
            p.progress_rx();
        }
        while rx.inline.len() < 300 {
            p.progress_rx();
        }
        for (i, &(data, len)) in rx.kept.iter().enumerate() {
            assert_eq!(len, 1000);
            // SAFETY: a kept descriptor stays valid until released, and
            // holds the `len` bytes the handler was given.
            let got = unsafe { std::slice::from_raw_parts(data, len) };
            assert!(got.iter().all(|&b| b == i as u8), "kept descriptor {i} was overwritten");
            // SAFETY: `data` was kept by on_am and is released once, here;
            // the descriptor starts HEADROOM bytes before it.
            unsafe { release_desc(data.sub(HEADROOM)) };
        }
    });
}

struct PendingCtx {
    req: uct_pending_req_t,
    pair: *const Pair,
    runs: std::cell::Cell<u32>,
}

/// Pending callback: `req` is the first field of a live PendingCtx.
unsafe extern "C" fn pending_send(req: *mut uct_pending_req_t) -> ucs_status_t {
    // SAFETY: the only request queued with this callback is `ctx.req` of
    // the test, and `req` is PendingCtx's first field (same address); the
    // test only reads `runs` (a Cell) while progress runs.
    let ctx = unsafe { &*(req as *const PendingCtx) };
    ctx.runs.set(ctx.runs.get() + 1);
    // SAFETY: `pair` points at the test's Pair, which outlives the request.
    unsafe { (*ctx.pair).am_short(5, 99, b"") }
}

#[test]
fn full_fifo_gives_no_resource_and_pending_requests_run_later() {
    each_tl(|tl| {
        let p = Pair::new(tl);
        let mut rx = Rx::default();
        // SAFETY: `rx` lives to the end of the closure, past the last
        // progress call on `p`.
        unsafe { p.listen(5, &mut rx) };
        // SAFETY: a pending request is plain data; all-zero is valid (the
        // callback is set below).
        let mut ctx = PendingCtx { req: unsafe { std::mem::zeroed() }, pair: &p, runs: std::cell::Cell::new(0) };
        ctx.req.func = Some(pending_send);
        // Resources available: pending_add says "go send".
        // SAFETY: the Pair's endpoint is live; `ctx` outlives the queued
        // request, which runs (and leaves the queue) before the test ends.
        let add = |c: &mut PendingCtx| unsafe { p.tx.ops().ep_pending_add.unwrap()(p.ep, &mut c.req, 0) };
        assert_eq!(add(&mut ctx), UCS_ERR_BUSY);
        let mut sent = 0;
        while p.am_short(5, sent, b"") == UCS_OK {
            sent += 1;
            assert!(sent <= 1024, "the FIFO never filled up");
        }
        assert_eq!(sent, 64, "default FIFO size");
        assert_eq!(p.flush(), UCS_ERR_NO_RESOURCE);
        assert_eq!(add(&mut ctx), UCS_OK);
        // The receiver drains; the sender's progress then runs the request.
        while rx.inline.len() < 64 {
            p.progress_rx();
        }
        while ctx.runs.get() == 0 {
            p.progress_tx();
        }
        while rx.inline.len() < 65 {
            p.progress_rx();
        }
        assert_eq!(ctx.runs.get(), 1);
        assert_eq!(&rx.inline[64][..8], &99u64.to_ne_bytes());
        assert_eq!(p.flush(), UCS_OK);
    });
}

#[test]
fn armed_interface_is_woken_by_a_send() {
    each_tl(|tl| {
        let p = Pair::new(tl);
        let mut rx = Rx::default();
        // SAFETY: `rx` lives to the end of the closure, past the last
        // progress call on `p`.
        unsafe { p.listen(6, &mut rx) };
        // SAFETY: the receiver is open until `p` drops; `fd` and `pfd` are
        // locals (one pollfd, as passed).
        unsafe {
            let mut fd = -1;
            assert_eq!(uct_iface_event_fd_get(p.rx.iface, &mut fd), UCS_OK);
            assert_eq!(uct_iface_event_arm(p.rx.iface, UCT_EVENT_RECV), UCS_OK);
            let mut pfd = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
            assert_eq!(libc::poll(&mut pfd, 1, 0), 0, "nothing to report yet");
            assert_eq!(p.am_short(6, 1, b""), UCS_OK);
            assert_eq!(libc::poll(&mut pfd, 1, 5000), 1, "the send must wake the receiver");
            // A message is waiting: arming must say "progress first".
            assert_eq!(uct_iface_event_arm(p.rx.iface, UCT_EVENT_RECV), UCS_ERR_BUSY);
            while rx.inline.is_empty() {
                p.progress_rx();
            }
            // Drained: the next arm consumes the signal and succeeds.
            let mut st = uct_iface_event_arm(p.rx.iface, UCT_EVENT_RECV);
            if st == UCS_ERR_BUSY {
                st = uct_iface_event_arm(p.rx.iface, UCT_EVENT_RECV);
            }
            assert_eq!(st, UCS_OK);
        }
    });
}

#[test]
fn ep_check_on_a_live_peer_is_ok() {
    each_tl(|tl| {
        let p = Pair::new(tl);
        // SAFETY: the Pair's endpoint is live; no completion is passed.
        unsafe {
            assert_eq!(uct_ep_check(p.ep, 0, null_mut()), UCS_OK);
            assert_eq!(uct_ep_check(p.ep, 1, null_mut()), UCS_ERR_INVALID_PARAM);
        }
    });
}
