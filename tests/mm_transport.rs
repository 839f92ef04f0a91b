//! The posix and sysv transports driven through the exported API: two
//! interfaces in one process (sender and receiver, each with its own real
//! shared-memory FIFO), exercising what a two-process run cannot easily
//! observe: descriptors kept by a handler, a full FIFO with the pending
//! queue, and the wake-up event.

use std::ffi::{c_uint, c_void, CStr};
use std::ptr::{null, null_mut};
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

unsafe fn open_iface(md: uct_md_h, worker: uct_worker_h, tl: &CStr) -> Side {
    let mut config = null_mut();
    assert_eq!(uct_md_iface_config_read(md, tl.as_ptr(), null(), null(), &mut config), UCS_OK);
    let mut p: uct_iface_params_t = std::mem::zeroed();
    p.field_mask = UCT_IFACE_PARAM_FIELD_OPEN_MODE | UCT_IFACE_PARAM_FIELD_DEVICE | UCT_IFACE_PARAM_FIELD_RX_HEADROOM;
    p.open_mode = UCT_IFACE_OPEN_MODE_DEVICE;
    p.mode.device.tl_name = tl.as_ptr();
    p.mode.device.dev_name = c"memory".as_ptr();
    p.rx_headroom = HEADROOM;
    let mut iface = null_mut();
    assert_eq!(uct_iface_open(md, worker, &p, config, &mut iface), UCS_OK);
    Side { iface, config }
}

impl Pair {
    fn new(tl: &CStr) -> Pair {
        unsafe {
            let mut async_ = null_mut();
            assert_eq!(ucs_async_context_create(ASYNC_MODE_THREAD_SPINLOCK, &mut async_), UCS_OK);
            let mut worker = null_mut();
            assert_eq!(uct_worker_create(async_, UCS_THREAD_MODE_SINGLE, &mut worker), UCS_OK);
            let c = component(tl.to_str().unwrap());
            let mut mdc = null_mut();
            assert_eq!(uct_md_config_read(c, null(), null(), &mut mdc), UCS_OK);
            let mut md = null_mut();
            assert_eq!(uct_md_open(c, tl.as_ptr(), mdc, &mut md), UCS_OK);
            uct_config_release(mdc as *mut c_void);
            let rx = open_iface(md, worker, tl);
            let tx = open_iface(md, worker, tl);
            let mut attr: uct_iface_attr_t = std::mem::zeroed();
            assert_eq!(uct_iface_query(rx.iface, &mut attr), UCS_OK);
            let mut dev = vec![0u8; attr.device_addr_len];
            let mut addr = vec![0u8; attr.iface_addr_len];
            assert_eq!(uct_iface_get_device_address(rx.iface, dev.as_mut_ptr() as *mut uct_device_addr_t), UCS_OK);
            assert_eq!(uct_iface_get_address(rx.iface, addr.as_mut_ptr() as *mut uct_iface_addr_t), UCS_OK);
            assert_ne!(uct_iface_is_reachable(tx.iface, dev.as_ptr() as *const _, addr.as_ptr() as *const _), 0);
            let mut ep_p: uct_ep_params_t = std::mem::zeroed();
            ep_p.field_mask = UCT_EP_PARAM_FIELD_IFACE | UCT_EP_PARAM_FIELD_DEV_ADDR | UCT_EP_PARAM_FIELD_IFACE_ADDR;
            ep_p.iface = tx.iface;
            ep_p.dev_addr = dev.as_ptr() as *const _;
            ep_p.iface_addr = addr.as_ptr() as *const _;
            let mut ep = null_mut();
            assert_eq!(uct_ep_create(&ep_p, &mut ep), UCS_OK);
            Pair { async_, worker, md, rx, tx, ep }
        }
    }

    fn progress_rx(&self) -> u32 {
        unsafe { (*self.rx.iface).ops.iface_progress.unwrap()(self.rx.iface) }
    }

    fn progress_tx(&self) -> u32 {
        unsafe { (*self.tx.iface).ops.iface_progress.unwrap()(self.tx.iface) }
    }

    fn am_short(&self, id: u8, header: u64, payload: &[u8]) -> ucs_status_t {
        unsafe {
            (*self.tx.iface).ops.ep_am_short.unwrap()(self.ep, id, header, payload.as_ptr() as *const c_void,
                                                      payload.len() as c_uint)
        }
    }

    fn am_bcopy(&self, id: u8, fill: &mut Fill) -> isize {
        unsafe {
            (*self.tx.iface).ops.ep_am_bcopy.unwrap()(self.ep, id, Some(pack_fill), fill as *mut Fill as *mut c_void, 0)
        }
    }
}

impl Drop for Pair {
    fn drop(&mut self) {
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

unsafe extern "C" fn pack_fill(dest: *mut c_void, arg: *mut c_void) -> usize {
    let f = &*(arg as *const Fill);
    std::ptr::write_bytes(dest as *mut u8, f.byte, f.len);
    f.len
}

#[derive(Default)]
struct Rx {
    inline: Vec<Vec<u8>>,
    kept: Vec<(*mut u8, usize)>,
    keep: bool,
}

unsafe extern "C" fn on_am(arg: *mut c_void, data: *mut c_void, len: usize, flags: c_uint) -> ucs_status_t {
    let rx = &mut *(arg as *mut Rx);
    if flags & UCT_CB_PARAM_FLAG_DESC != 0 {
        // The headroom before the data is ours to write.
        std::ptr::write_bytes((data as *mut u8).sub(HEADROOM), 0xee, HEADROOM);
        if rx.keep {
            rx.kept.push((data as *mut u8, len));
            return UCS_INPROGRESS;
        }
    }
    rx.inline.push(std::slice::from_raw_parts(data as *const u8, len).to_vec());
    UCS_OK
}

/// What `uct_iface_release_desc` (an inline C helper) does.
unsafe fn release_desc(desc: *mut u8) {
    let rd = *(desc as *mut *mut uct_recv_desc_t).sub(1);
    ((*rd).cb.unwrap())(rd, desc as *mut c_void);
}

fn each_tl(f: impl Fn(&CStr)) {
    f(c"posix");
    f(c"sysv");
}

#[test]
fn short_and_bcopy_delivery() {
    each_tl(|tl| {
        let p = Pair::new(tl);
        let mut rx = Rx::default();
        unsafe {
            assert_eq!(uct_iface_set_am_handler(p.rx.iface, 3, Some(on_am), &mut rx as *mut Rx as *mut c_void, 0),
                       UCS_OK);
        }
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
        unsafe {
            assert_eq!(uct_iface_set_am_handler(p.rx.iface, 4, Some(on_am), &mut rx as *mut Rx as *mut c_void, 0),
                       UCS_OK);
        }
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
            let got = unsafe { std::slice::from_raw_parts(data, len) };
            assert!(got.iter().all(|&b| b == i as u8), "kept descriptor {i} was overwritten");
            unsafe { release_desc(data.sub(HEADROOM)) };
        }
    });
}

struct PendingCtx {
    req: uct_pending_req_t,
    pair: *const Pair,
    runs: std::cell::Cell<u32>,
}

unsafe extern "C" fn pending_send(req: *mut uct_pending_req_t) -> ucs_status_t {
    let ctx = &mut *(req as *mut PendingCtx);
    ctx.runs.set(ctx.runs.get() + 1);
    (*ctx.pair).am_short(5, 99, b"")
}

#[test]
fn full_fifo_gives_no_resource_and_pending_requests_run_later() {
    each_tl(|tl| {
        let p = Pair::new(tl);
        let mut rx = Rx::default();
        unsafe {
            assert_eq!(uct_iface_set_am_handler(p.rx.iface, 5, Some(on_am), &mut rx as *mut Rx as *mut c_void, 0),
                       UCS_OK);
        }
        let mut ctx = PendingCtx { req: unsafe { std::mem::zeroed() }, pair: &p, runs: std::cell::Cell::new(0) };
        ctx.req.func = Some(pending_send);
        // Resources available: pending_add says "go send".
        let add = |c: &mut PendingCtx| unsafe {
            (*p.tx.iface).ops.ep_pending_add.unwrap()(p.ep, &mut c.req, 0)
        };
        assert_eq!(add(&mut ctx), UCS_ERR_BUSY);
        let mut sent = 0;
        while p.am_short(5, sent, b"") == UCS_OK {
            sent += 1;
            assert!(sent <= 1024, "the FIFO never filled up");
        }
        assert_eq!(sent, 64, "default FIFO size");
        assert_eq!(unsafe { (*p.tx.iface).ops.ep_flush.unwrap()(p.ep, 0, null_mut()) }, UCS_ERR_NO_RESOURCE);
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
        assert_eq!(unsafe { (*p.tx.iface).ops.ep_flush.unwrap()(p.ep, 0, null_mut()) }, UCS_OK);
    });
}

#[test]
fn armed_interface_is_woken_by_a_send() {
    each_tl(|tl| {
        let p = Pair::new(tl);
        let mut rx = Rx::default();
        unsafe {
            assert_eq!(uct_iface_set_am_handler(p.rx.iface, 6, Some(on_am), &mut rx as *mut Rx as *mut c_void, 0),
                       UCS_OK);
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
        unsafe {
            assert_eq!(uct_ep_check(p.ep, 0, null_mut()), UCS_OK);
            assert_eq!(uct_ep_check(p.ep, 1, null_mut()), UCS_ERR_INVALID_PARAM);
        }
    });
}
