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
        assert_eq!(sent, fifo_size(), "default FIFO size");
        assert_eq!(p.flush(), UCS_ERR_NO_RESOURCE);
        assert_eq!(add(&mut ctx), UCS_OK);
        // The receiver drains; the sender's progress then runs the request.
        while (rx.inline.len() as u64) < fifo_size() {
            p.progress_rx();
        }
        while ctx.runs.get() == 0 {
            p.progress_tx();
        }
        while (rx.inline.len() as u64) < fifo_size() + 1 {
            p.progress_rx();
        }
        assert_eq!(ctx.runs.get(), 1);
        assert_eq!(&rx.inline[fifo_size() as usize][..8], &99u64.to_ne_bytes());
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

// ---- A hostile peer: elements and FIFO fields forged in shared memory ----

use std::sync::atomic::{AtomicU64, Ordering};

/// `UCX_<TL>_FIFO_SIZE`'s default: 64 up to UCX 1.15, 256 from 1.16.
fn fifo_size() -> u64 {
    if ::uct::ucs::release::running().since(16) {
        256
    } else {
        64
    }
}
const ELEM_SIZE: usize = 128;
const CTL_SIZE: usize = 192;
const FLAG_OWNER: u8 = 1;
const FLAG_INLINE: u8 = 2;
const ARMED: u64 = 1 << 63;

/// The receiver's FIFO mapped a second time, where the test writes what a
/// hostile peer could: any element, any head.
struct RawFifo {
    base: *mut u8,
    len: usize,
    sysv: bool,
}

impl RawFifo {
    /// Map the FIFO a posix or sysv iface address names (posix with the
    /// default proc links).
    fn map(tl: &CStr, addr: &[u8]) -> RawFifo {
        let seg_id = u64::from_ne_bytes(addr[..8].try_into().unwrap());
        let len = (CTL_SIZE + fifo_size() as usize * ELEM_SIZE + 63).div_ceil(4096) * 4096;
        if tl == c"sysv" {
            // SAFETY: attaching a live segment anywhere; checked below.
            let p = unsafe { libc::shmat(seg_id as i32, std::ptr::null(), 0) };
            assert_ne!(p as isize, -1, "shmat of the receiver's FIFO");
            return RawFifo { base: p as *mut u8, len, sysv: true };
        }
        assert!(seg_id & (1 << 63) != 0, "posix FIFO reached through a proc link");
        let mmid = seg_id & !(0xfu64 << 60);
        let path = format!("/proc/{}/fd/{}\0", mmid & ((1 << 30) - 1), mmid >> 30);
        // SAFETY: a NUL-terminated path; the descriptor is closed below.
        let fd = unsafe { libc::open(path.as_ptr() as *const libc::c_char, libc::O_RDWR) };
        assert!(fd >= 0, "open {path}");
        // SAFETY: a shared mapping of the FIFO file, at least `len` bytes.
        let p = unsafe { libc::mmap(null_mut(), len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, fd, 0) };
        // SAFETY: our descriptor, no longer needed once mapped.
        unsafe { libc::close(fd) };
        assert_ne!(p, libc::MAP_FAILED);
        RawFifo { base: p as *mut u8, len, sysv: false }
    }

    fn head(&self) -> &AtomicU64 {
        // SAFETY: the control block starts the (page-aligned) mapping.
        unsafe { &*(self.base as *const AtomicU64) }
    }

    fn elem(&self, index: u64) -> *mut u8 {
        // SAFETY: the index is reduced to the FIFO size.
        unsafe { self.base.add(CTL_SIZE + (index % fifo_size()) as usize * ELEM_SIZE) }
    }

    /// Claim the head as a sender does and publish a forged element.
    fn forge(&self, flags: u8, am_id: u8, length: u16, data: &[u8]) {
        let head = loop {
            let h = self.head().load(Ordering::Relaxed);
            if self.head().compare_exchange(h, (h + 1) & !ARMED, Ordering::AcqRel, Ordering::Relaxed).is_ok() {
                break h;
            }
        };
        let e = self.elem(head);
        let owner = if head & fifo_size() != 0 { FLAG_OWNER } else { 0 };
        // SAFETY: the element lies inside the mapping; data fits its 100
        // bytes of inline room; flags last, with release ordering, as a
        // sender publishes.
        unsafe {
            std::ptr::copy_nonoverlapping(data.as_ptr(), e.add(28), data.len());
            *e.add(1) = am_id;
            (e.add(2) as *mut u16).write_unaligned(length);
            (*(e as *const std::sync::atomic::AtomicU8)).store(flags | owner, Ordering::Release);
        }
    }

    /// The descriptor reference `{seg_id, seg_size, offset}` of the element
    /// at `index`.
    fn desc(&self, index: u64) -> (u64, u32, u32) {
        let e = self.elem(index);
        // SAFETY: unaligned fields inside the element.
        unsafe {
            ((e.add(4) as *const u64).read_unaligned(), (e.add(12) as *const u32).read_unaligned(),
             (e.add(16) as *const u32).read_unaligned())
        }
    }

    fn set_desc(&self, index: u64, d: (u64, u32, u32)) {
        let e = self.elem(index);
        // SAFETY: unaligned fields inside the element.
        unsafe {
            (e.add(4) as *mut u64).write_unaligned(d.0);
            (e.add(12) as *mut u32).write_unaligned(d.1);
            (e.add(16) as *mut u32).write_unaligned(d.2);
        }
    }
}

impl Drop for RawFifo {
    fn drop(&mut self) {
        // SAFETY: our own second mapping, unused after this.
        unsafe {
            if self.sysv {
                libc::shmdt(self.base as *const c_void);
            } else {
                libc::munmap(self.base as *mut c_void, self.len);
            }
        }
    }
}

fn raw_fifo(p: &Pair, tl: &CStr) -> RawFifo {
    // SAFETY: the receiver is open until `p` drops.
    let (_, addr) = unsafe { iface_addresses(p.rx.iface) };
    RawFifo::map(tl, &addr)
}

/// Progress the receiver until `rx` (the handler's, written behind the
/// compiler's back: hence a raw pointer, read anew after each call) holds
/// `n` messages.
fn drain(p: &Pair, rx: *const Rx, n: usize) {
    // SAFETY: the test's Rx, alive and written only inside progress calls.
    let count = || unsafe { (*rx).inline.len() };
    for _ in 0..100_000 {
        if count() >= n {
            return;
        }
        p.progress_rx();
    }
    panic!("expected {n} messages, got {}", count());
}

#[test]
fn forged_elements_are_dropped_and_the_fifo_moves_on() {
    each_tl(|tl| {
        let p = Pair::new(tl);
        let raw = raw_fifo(&p, tl);
        let mut rx = Rx::default();
        // SAFETY: `rx` lives to the end of the closure, past the last
        // progress call on `p`.
        unsafe { p.listen(1, &mut rx) };
        let good = |n: u64| {
            assert_eq!(p.am_short(1, n, b"good"), UCS_OK);
        };
        let mut want = Vec::new();
        let msg = |n: u64| {
            let mut v = n.to_ne_bytes().to_vec();
            v.extend_from_slice(b"good");
            v
        };
        // AM id 33 (33 & 31 is 1, whose handler must not run), 255, then
        // unknown flag bits, inline and not, then a descriptor element with
        // a bad id: each dropped, and the message after each one arrives.
        let forged: [(u8, u8); 6] = [(FLAG_INLINE, 33), (FLAG_INLINE, 255), (FLAG_INLINE | 0x80, 1), (0x04, 1),
                                     (0, 200), (0, 32)];
        for (i, &(flags, id)) in forged.iter().enumerate() {
            raw.forge(flags, id, 12, b"evil-evil-ev");
            good(i as u64);
            want.push(msg(i as u64));
        }
        drain(&p, &raw const rx, want.len());
        for _ in 0..100 {
            p.progress_rx();
        }
        assert_eq!(rx.inline, want, "only the good messages reach the handler");
        // Many rounds of the FIFO, forged and good elements interleaved: no
        // stall, nothing lost.
        for i in 0..500u64 {
            raw.forge(FLAG_INLINE, 32 + (i % 200) as u8, 8, b"evil-888");
            good(1000 + i);
            want.push(msg(1000 + i));
            drain(&p, &raw const rx, want.len());
        }
        assert_eq!(rx.inline, want);
        // The path still works for bcopy (forged lengths: the next test).
        let mut f = Fill { byte: 9, len: 3000 };
        assert_eq!(p.am_bcopy(1, &mut f), 3000);
        drain(&p, &raw const rx, want.len() + 1);
        assert_eq!(rx.inline.last().unwrap(), &vec![9u8; 3000]);
    });
}

/// Environment variable that makes a test of this binary the child process
/// whose log lines its parent reads (see [`run_child`]).
const CHILD_ENV: &str = "UCT_RS_MM_TEST_CHILD";

/// Runs the test `name` of this binary again as a child process (with
/// [`CHILD_ENV`] set and UCX's log at the warning level) and returns what it
/// printed, stdout (where UCX logs) and stderr; fails when the child does.
fn run_child(name: &str) -> String {
    let out = std::process::Command::new(std::env::current_exe().expect("the test binary"))
        .args([name, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, "1")
        .env("UCX_LOG_LEVEL", "warn")
        .output()
        .expect("the child runs");
    let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "child {name} failed: {}\n{text}", out.status);
    assert!(text.contains("1 passed"), "child {name} did not run:\n{text}");
    text
}

/// The lines of `text` that UCX printed at the error level.
fn error_lines(text: &str) -> Vec<&str> {
    text.lines().filter(|l| l.contains(" ERROR ")).collect()
}

/// A peer publishes an element whose length field claims more than the
/// element (inline) or a receive descriptor holds: the message is dropped
/// with an error line, never handed to the handler cut to size; the FIFO
/// goes on, and the peer's next messages arrive whole. Lengths of exactly
/// what the element or the descriptor holds are delivered whole. (In a
/// child process, whose log lines the parent reads.)
#[test]
fn forged_lengths_are_dropped_with_an_error_not_cut() {
    if std::env::var_os(CHILD_ENV).is_some() {
        each_tl(forged_lengths_child);
        return;
    }
    let text = run_child("forged_lengths_are_dropped_with_an_error_not_cut");
    let errors = error_lines(&text);
    // Each case runs on a new interface, whose first drop is logged.
    let want = ["inline length 65535 exceeds", "inline length 101 exceeds", "length 65535 exceeds the receive",
                "length 8257 exceeds the receive"];
    for w in want {
        let n = errors.iter().filter(|l| l.contains("mm: dropped FIFO element") && l.contains(w)).count();
        assert_eq!(n, 2, "one error line per transport for {w:?}:\n{text}");
    }
    assert_eq!(errors.len(), 2 * want.len(), "no other error line:\n{text}");
}

fn forged_lengths_child(tl: &'static CStr) {
    let msg = |n: u64, tail: &[u8]| {
        let mut v = n.to_ne_bytes().to_vec();
        v.extend_from_slice(tail);
        v
    };
    let pattern: Vec<u8> = (0..ELEM_SIZE - 28).map(|i| (i * 7 + 3) as u8).collect();
    {
        // What the element and the descriptor hold, exactly: whole.
        let p = Pair::new(tl);
        let raw = raw_fifo(&p, tl);
        // SAFETY: the receiver is open.
        let attr = unsafe { iface_attr(p.rx.iface) };
        let (max_short, seg) = (attr.cap.am.max_short, attr.cap.am.max_bcopy);
        assert_eq!((max_short, seg), (ELEM_SIZE - 28, 8256), "{tl:?}: the geometry the cases assume");
        let mut rx = Rx::default();
        // SAFETY: `rx` lives to the end of the block, past the last
        // progress call on `p`.
        unsafe { p.listen(1, &mut rx) };
        raw.forge(FLAG_INLINE, 1, max_short as u16, &pattern);
        raw.forge(0, 1, seg as u16, b"");
        drain(&p, &raw const rx, 2);
        assert_eq!(rx.inline[0], pattern, "{tl:?}: a full element, whole");
        assert_eq!(rx.inline[1].len(), seg, "{tl:?}: a full descriptor, whole");
    }
    // One byte more than the element or the descriptor holds, and the
    // largest length the field can say: dropped.
    let cases: [(u8, u16); 4] = [(FLAG_INLINE, u16::MAX), (FLAG_INLINE, ELEM_SIZE as u16 - 28 + 1), (0, u16::MAX),
                                 (0, 8256 + 1)];
    for (flags, length) in cases {
        let p = Pair::new(tl);
        let raw = raw_fifo(&p, tl);
        let mut rx = Rx::default();
        // SAFETY: `rx` lives to the end of the loop body, past the last
        // progress call on `p`.
        unsafe { p.listen(1, &mut rx) };
        raw.forge(flags, 1, length, &pattern);
        // The same peer's next messages: a short one, a bcopy one, then
        // two rounds of the FIFO.
        assert_eq!(p.am_short(1, 7, b"after"), UCS_OK);
        let mut f = Fill { byte: 0x3c, len: 3000 };
        assert_eq!(p.am_bcopy(1, &mut f), 3000);
        let mut want = vec![msg(7, b"after"), vec![0x3c; 3000]];
        drain(&p, &raw const rx, want.len());
        for _ in 0..100 {
            p.progress_rx();
        }
        let lens = |v: &[Vec<u8>]| v.iter().map(Vec::len).collect::<Vec<_>>();
        assert!(rx.inline == want, "{tl:?}: flags {flags:#x} length {length}: dropped, the next ones whole; \
                 delivered lengths {:?}, expected {:?}", lens(&rx.inline), lens(&want));
        for n in 0..2 * fifo_size() {
            assert_eq!(p.am_short(1, n, b"round"), UCS_OK);
            want.push(msg(n, b"round"));
            drain(&p, &raw const rx, want.len());
        }
        assert!(rx.inline == want, "{tl:?}: flags {flags:#x} length {length}: the FIFO goes on; \
                 delivered lengths {:?}", lens(&rx.inline));
    }
}

#[test]
fn forged_descriptor_references_are_refused_by_the_sender() {
    each_tl(|tl| {
        let p = Pair::new(tl);
        let raw = raw_fifo(&p, tl);
        let mut rx = Rx::default();
        // SAFETY: `rx` lives to the end of the closure, past the last
        // progress call on `p`.
        unsafe { p.listen(2, &mut rx) };
        let head = raw.head().load(Ordering::Relaxed) & !ARMED;
        let orig = raw.desc(head);
        let bad_id = if tl == c"sysv" {
            0x7fff_fff0u64
        } else {
            // A proc link naming another process than the FIFO's.
            (1u64 << 63) | (1 << 62) | 1 | (3 << 30)
        };
        let cases = [
            (orig.0, orig.1, orig.1 - 16),     // offset near the end of the segment
            (orig.0, orig.1, u32::MAX),        // offset beyond any segment
            (orig.0, u32::MAX, orig.1 + 4096), // a size claim larger than the segment
            (orig.0, 0, 0),                    // an empty segment
            (bad_id, orig.1, 0),               // a segment that cannot be attached
        ];
        for d in cases {
            raw.set_desc(head, d);
            let mut f = Fill { byte: 1, len: 100 };
            let r = p.am_bcopy(2, &mut f);
            assert!(r < 0, "{tl:?}: descriptor {d:x?} accepted ({r})");
            assert_eq!(raw.head().load(Ordering::Relaxed) & !ARMED, head, "a refused send claims nothing");
        }
        raw.set_desc(head, orig);
        let mut f = Fill { byte: 5, len: 100 };
        assert_eq!(p.am_bcopy(2, &mut f), 100);
        drain(&p, &raw const rx, 1);
        assert_eq!(rx.inline[0], vec![5u8; 100]);
    });
}

#[test]
fn a_hostile_head_cannot_hang_sender_or_receiver() {
    each_tl(|tl| {
        let p = Pair::new(tl);
        let raw = raw_fifo(&p, tl);
        let mut rx = Rx::default();
        // SAFETY: `rx` lives to the end of the closure, past the last
        // progress call on `p`.
        unsafe { p.listen(3, &mut rx) };
        // A head far ahead of the tail: the FIFO looks full.
        let head = raw.head().load(Ordering::Relaxed);
        raw.head().store(head + 10 * fifo_size(), Ordering::Relaxed);
        assert_eq!(p.am_short(3, 0, b""), UCS_ERR_NO_RESOURCE);
        // SAFETY: the receiver is open.
        assert_eq!(unsafe { uct_iface_event_arm(p.rx.iface, UCT_EVENT_RECV) }, UCS_ERR_BUSY);
        for _ in 0..1000 {
            p.progress_rx();
            p.progress_tx();
        }
        // A head that never stops moving: every send returns.
        raw.head().store(head, Ordering::Relaxed);
        let stop = std::sync::atomic::AtomicBool::new(false);
        let h = raw.head();
        std::thread::scope(|s| {
            s.spawn(|| {
                let mut v = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    v = v.wrapping_add(1);
                    h.store(head + (v & 1), Ordering::Relaxed);
                }
            });
            let t0 = std::time::Instant::now();
            for _ in 0..2000 {
                let st = p.am_short(3, 0, b"");
                assert!(st == UCS_OK || st == UCS_ERR_NO_RESOURCE, "{st}");
            }
            stop.store(true, Ordering::Relaxed);
            assert!(t0.elapsed() < std::time::Duration::from_secs(60));
        });
        for _ in 0..1000 {
            p.progress_rx();
        }
    });
}

#[test]
fn a_forged_wakeup_address_gets_no_datagram() {
    each_tl(|tl| {
        let p = Pair::new(tl);
        let raw = raw_fifo(&p, tl);
        let mut rx = Rx::default();
        // SAFETY: `rx` lives to the end of the closure, past the last
        // progress call on `p`.
        unsafe { p.listen(1, &mut rx) };
        // A unix datagram socket of the test's, at a path: what a peer might
        // aim senders' wake-ups at.
        let path = format!("/tmp/mm-wakeup-{}-{}", std::process::id(), tl.to_str().unwrap());
        let _ = std::fs::remove_file(&path);
        let victim = std::os::unix::net::UnixDatagram::bind(&path).expect("bind");
        victim.set_nonblocking(true).unwrap();
        // The path's own length, then lengths beyond a sockaddr_un.
        for claimed in [(2 + path.len() + 1) as u32, 111, u32::MAX] {
            // SAFETY: the control block's address length (u32 at 8) and
            // sockaddr_un (at 12) lie inside the mapping.
            unsafe {
                let sa = raw.base.add(12);
                std::ptr::write_bytes(sa, 0, 110);
                (sa as *mut u16).write_unaligned(libc::AF_UNIX as u16);
                std::ptr::copy_nonoverlapping(path.as_ptr(), sa.add(2), path.len());
                (raw.base.add(8) as *mut u32).write_unaligned(claimed);
            }
            // A new endpoint reads the forged address.
            // SAFETY: the receiver is open; its own addresses.
            let ep = unsafe {
                let (dev, addr) = iface_addresses(p.rx.iface);
                connect_to_iface(p.tx.iface, &dev, &addr).expect("second ep")
            };
            // The receiver asks to be woken; the send must not reach the
            // victim.
            // SAFETY: the receiver is open.
            assert_eq!(unsafe { uct_iface_event_arm(p.rx.iface, UCT_EVENT_RECV) }, UCS_OK);
            // SAFETY: the endpoint is live; an empty payload.
            let st = unsafe { p.tx.ops().ep_am_short.unwrap()(ep, 1, 0, std::ptr::null(), 0) };
            assert_eq!(st, UCS_OK);
            let mut buf = [0u8; 8];
            assert!(victim.recv(&mut buf).is_err(), "a datagram reached the forged address (length {claimed})");
            // SAFETY: created above, destroyed once.
            unsafe { uct_ep_destroy(ep) };
            drain(&p, &raw const rx, rx.inline.len() + 1);
        }
        let _ = std::fs::remove_file(&path);
    });
}

#[test]
fn endpoints_to_another_host_or_a_bad_fifo_are_refused() {
    each_tl(|tl| {
        let p = Pair::new(tl);
        // SAFETY: the receiver is open until `p` drops.
        let (dev, addr) = unsafe { iface_addresses(p.rx.iface) };
        let create = |dev: &[u8], addr: &[u8]| {
            // SAFETY: plain data; all-zero means "no field set".
            let mut prm: uct_ep_params_t = unsafe { std::mem::zeroed() };
            prm.field_mask = UCT_EP_PARAM_FIELD_IFACE | UCT_EP_PARAM_FIELD_DEV_ADDR | UCT_EP_PARAM_FIELD_IFACE_ADDR;
            prm.iface = p.tx.iface;
            prm.dev_addr = dev.as_ptr() as *const uct_device_addr_t;
            prm.iface_addr = addr.as_ptr() as *const uct_iface_addr_t;
            let mut ep = null_mut();
            // SAFETY: the sender is open; both addresses are as long as it
            // declared and outlive the call; the out-pointer is a local.
            let st = unsafe { uct_ep_create(&prm, &mut ep) };
            if st == UCS_OK {
                // SAFETY: just created, destroyed once.
                unsafe { uct_ep_destroy(ep) };
            }
            st
        };
        let mut other_host = dev.clone();
        other_host[0] ^= 1;
        assert_eq!(create(&other_host, &addr), UCS_ERR_UNREACHABLE);
        // A FIFO id that names nothing attachable.
        let mut bad = addr.clone();
        let id = if tl == c"sysv" { 0x7fff_fff0u64 } else { (1u64 << 63) | (1 << 62) | 1 | (3 << 30) };
        bad[..8].copy_from_slice(&id.to_ne_bytes());
        assert_eq!(create(&dev, &bad), UCS_ERR_SHMEM_SEGMENT);
        if tl == c"posix" {
            // A proc link to a file of ours that is no FIFO: refused before
            // anything is written to it.
            use std::os::fd::AsRawFd;
            let path = format!("/tmp/mm-not-a-fifo-{}", std::process::id());
            let f = std::fs::File::options().read(true).write(true).create(true).truncate(true).open(&path)
                .expect("temp file");
            f.set_len(1 << 16).unwrap();
            let id = (1u64 << 63) | (1 << 62) | std::process::id() as u64 | ((f.as_raw_fd() as u64) << 30);
            bad[..8].copy_from_slice(&id.to_ne_bytes());
            assert_eq!(create(&dev, &bad), UCS_ERR_SHMEM_SEGMENT);
            assert!(std::fs::read(&path).unwrap().iter().all(|&b| b == 0), "the file was written");
            drop(f);
            std::fs::remove_file(&path).unwrap();
        }
        assert_eq!(create(&dev, &addr), UCS_OK);
    });
}
