//! The tcp interface: its settings, opening it (the listening socket and
//! the epoll set), its addresses and attributes, and the [`Transport`]
//! implementation, which hands each operation to the part of the transport
//! that does it:
//!
//! - `conn`: connections (UCX's tcp endpoints), their table and state;
//! - `connect`: connecting, accepting and the connection protocol;
//! - `tx`: the send path (active messages, coalescing, pending requests);
//! - `rx`: the receive path and the interface's progress;
//! - `put`: put zero-copy and its acknowledgements, endpoint flush.
//!
//! Everything runs on the worker's thread (UCX refuses multi-threaded
//! workers for tcp, and so do we); the state uses `Cell`/`RefCell`, and no
//! borrow is held while user callbacks (active-message handlers, pending
//! requests, completions) run, since they may send or destroy endpoints.
//! One epoll set holds the listening socket and every connection's socket;
//! the interface progress polls it without waiting. Sockets and the epoll
//! set are owned values of `crate::sys` (closed on drop); the listening
//! socket is taken out of the set and closed when the interface closes or
//! accepting fails.

use super::conn::Conn;
use super::release::{self, BindSrc};
use super::codec;
use super::TcpIfaceConfig;
use crate::abi::*;
use crate::core::config::{TIME_AUTO, TIME_INF, UNITS_AUTO, UNITS_INF};
use crate::core::iface::{Ep, EpParams, Iface, IfaceHeader, IfaceParams, Internal, InternalOps, Transport};
use crate::core::md::MdObj;
use crate::core::handles::*;
use crate::core::worker::{HoldLock, WorkerObj};
use crate::sys::addr::SockAddr;
use crate::sys::epoll::{Epoll, Event, EV_READ};
use crate::sys::socket::{listen_in_range, ListenError, ListenStep, Socket};
use crate::sys::{self, errno_str, netif};
use crate::ucs;
use libc::c_int;
use std::cell::{Cell, RefCell};
use crate::core::memreg::RegTable;
use std::collections::{HashMap, VecDeque};
use std::os::fd::{AsFd, AsRawFd};
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Iovs for the transport header and the user's (or put) header.
pub(super) const ZCOPY_SERVICE_IOV: usize = 2;
/// Events handled per epoll call.
pub(super) const MAX_EVENTS: usize = 16;
/// Epoll tag of the listening socket.
pub(super) const LISTEN_TAG: u64 = u64::MAX;
/// Default keepalive times (seconds) when the settings are "auto".
const KEEPALIVE_IDLE_DEFAULT: i32 = 10;
const KEEPALIVE_INTVL_DEFAULT: i32 = 2;
/// Handshake timeout (seconds) when the setting is "auto".
const HANDSHAKE_TIMEOUT_DEFAULT: u64 = 5;
/// Size of UCX's zero-copy send context that precedes its iov array in the
/// send buffer: it limits the zcopy header (`max_hdr`).
const ZCOPY_CTX_LEN: usize = 32;

/// Settings fixed when the interface opens.
pub(super) struct Cfg {
    pub(super) tx_seg_size: usize,
    pub(super) rx_seg_size: usize,
    pub(super) sendv_thresh: usize,
    pub(super) max_iov: usize,
    pub(super) max_hdr: usize,
    prefer_default: bool,
    put_enable: bool,
    pub(super) conn_nb: bool,
    pub(super) max_poll: usize,
    pub(super) max_conn_retries: u32,
    pub(super) syn_cnt: u64,
    /// `TCP_USER_TIMEOUT` to set, ms (1.22+ `UCX_TCP_USER_TIMEOUT`).
    pub(super) user_timeout_ms: Option<u32>,
    pub(super) nodelay: bool,
    pub(super) sndbuf: u64,
    pub(super) rcvbuf: u64,
    pub(super) keepalive: Option<(i32, Option<i32>, i32)>,
    /// Most bytes of active messages held back for coalescing (0: off).
    pub(super) coalesce: usize,
    /// `UCX_TCP_TX_COALESCE_TIMEOUT`: how long held messages wait at
    /// most while the thread does not call (1-2 times it; None: no limit).
    pub(super) hold_limit: Option<Duration>,
    /// Time an accepted connection has for its handshake (None: no limit).
    pub(super) handshake_timeout: Option<std::time::Duration>,
    /// `UCX_TCP_LOCAL_CC`: the congestion control of connections within
    /// this host (None: the system's default).
    pub(super) local_cc: Option<String>,
    /// Active messages of at least this many body bytes are received into
    /// descriptors (desc.rs) when they do not arrive whole.
    pub(super) rx_desc_min: usize,
    /// Upper bound of the reported bandwidth (B/s): the device's PCI link
    /// and `UCX_TCP_MAX_BW` (infinite where the release has neither).
    bw_bound: f64,
    /// Whether connecting sockets are bound to the interface's address.
    pub(super) bind_src: BindSrc,
}

/// One tcp interface: its settings, listening socket, epoll set and
/// connections.
pub struct TcpIface {
    pub(super) cfg: Cfg,
    pub(super) if_name: String,
    /// Our address with the listening port.
    pub(super) ifaddr: SockAddr,
    pub(super) epoll: Epoll,
    /// The listening socket (in the epoll set, tagged `LISTEN_TAG`) until
    /// the interface closes or accepting fails.
    pub(super) listener: RefCell<Option<Socket>>,
    pub(super) conns: RefCell<Vec<Option<Rc<Conn>>>>,
    pub(super) free_slots: RefCell<Vec<usize>>,
    pub(super) gen: Cell<u32>,
    pub(super) next_sn: RefCell<HashMap<SockAddr, u64>>,
    pub(super) next_key: Cell<u64>,
    pub(super) in_progress: Cell<bool>,
    /// A hold started during this interface's progress (from a handler or
    /// a pending request) took the worker's hold lock for the rest of it:
    /// progress unlocks when it returns (see `TcpIface::progress`).
    pub(super) progress_locked: Cell<bool>,
    /// Connections whose socket is in the epoll set for reading only, and
    /// for anything else (writing, connecting).
    pub(super) n_read: Cell<usize>,
    pub(super) n_other: Cell<usize>,
    /// Progress calls since the epoll set was last polled.
    pub(super) fast_polls: Cell<u32>,
    /// Bytes the last receive of a message returned.
    pub(super) last_rx: Cell<usize>,
    /// Receive buffers no connection holds: a connection has one only
    /// while part of a message waits in it (see `rx.rs`).
    pub(super) rx_pool: RefCell<Vec<Vec<u8>>>,
    /// Receive descriptors of large active messages (None: off).
    pub(super) descs: Option<super::desc::DescPoolHandle>,
    /// Send buffers no connection holds (see `tx.rs`).
    pub(super) tx_pool: RefCell<Vec<Vec<u8>>>,
    /// Room for the events of one epoll call (taken by progress).
    pub(super) events: RefCell<Vec<Event>>,
    /// Progress calls so far (wrapping): sends of one epoch may coalesce.
    pub(super) epoch: Cell<u32>,
    /// Connections holding messages back.
    pub(super) holding: RefCell<Vec<Rc<Conn>>>,
    /// The memory registered with the md: puts land only there.
    pub(super) regs: Arc<RegTable>,
    /// Handshake deadlines of accepted connections, in accept order.
    pub(super) hs_queue: RefCell<VecDeque<(Instant, u64)>>,
    /// A coarse timer is pending (handshake deadlines, accept pause).
    pub(super) timers_on: Cell<bool>,
    /// Progress calls since the clock was last read for the timers.
    pub(super) timer_polls: Cell<u32>,
    /// Accepting is paused until then (out of descriptors or memory).
    pub(super) listen_paused: Cell<Option<Instant>>,
    /// The next pause of accepting.
    pub(super) accept_backoff: Cell<Duration>,
    /// When failing accepts were last logged.
    pub(super) accept_logged: Cell<Option<Instant>>,
}

/// A user endpoint: its connection.
pub struct TcpEp {
    pub(super) conn: Rc<Conn>,
}

pub(super) type I = Iface<TcpIface>;

impl TcpIface {
    fn conn_of(ep: &Ep<Self>) -> &Rc<Conn> {
        &ep.tl.conn
    }

    /// An entry point of an interface that may hold messages back runs
    /// with the worker's hold lock taken: the safety net's timer sends
    /// held messages under the same lock, from the async thread (see
    /// `WorkerObj::hold`). Nothing to lock where nothing is held.
    #[inline]
    fn guard(iface: &I) -> Option<HoldLock<'_>> {
        if iface.tl.cfg.coalesce == 0 {
            return None;
        }
        iface.hdr.worker().hold_lock()
    }

    /// The same for a send, which runs no user code that could start a
    /// hold in the middle of it: locked only while something is held (a
    /// send that starts a hold makes it its last step).
    #[inline(always)]
    fn send_guard(iface: &I) -> Option<HoldLock<'_>> {
        if !crate::core::worker::any_holding() {
            return None;
        }
        Self::guard(iface)
    }
}

// The errors of the argument checks of the send operations, kept out of
// line so that the checks cost the fast path nothing.

fn ep_handle(ep: &Ep<TcpIface>) -> uct_ep_h {
    ep as *const Ep<TcpIface> as uct_ep_h
}

impl Transport for TcpIface {
    type Ep = TcpEp;
    const NAME: &'static str = "tcp";

    fn query(iface: &I, attr: &mut uct_iface_attr_t) {
        let s = &iface.tl;
        let c = &s.cfg;
        let (latency, bandwidth) = netif::netif_caps(&s.if_name);
        let am_buf = c.tx_seg_size - codec::HDR_LEN;
        attr.ep_addr_len = codec::EP_ADDR_LEN;
        attr.iface_addr_len = codec::IFACE_ADDR_LEN;
        attr.device_addr_len = if s.ifaddr.is_loopback() {
            codec::dev_addr_loopback_len(ucs::ns_len())
        } else {
            2 + s.ifaddr.ip_bytes().len()
        };
        attr.cap.flags = UCT_IFACE_FLAG_CONNECT_TO_IFACE | UCT_IFACE_FLAG_CONNECT_TO_EP | UCT_IFACE_FLAG_AM_SHORT
            | UCT_IFACE_FLAG_AM_BCOPY | UCT_IFACE_FLAG_PENDING | UCT_IFACE_FLAG_CB_SYNC | UCT_IFACE_FLAG_EP_CHECK
            | UCT_IFACE_FLAG_ERRHANDLE_PEER_FAILURE | release::inter_node_flag();
        attr.cap.event_flags = UCT_IFACE_FLAG_EVENT_SEND_COMP | UCT_IFACE_FLAG_EVENT_RECV | UCT_IFACE_FLAG_EVENT_FD;
        attr.cap.am.max_short = am_buf;
        attr.cap.am.max_bcopy = am_buf;
        if c.keepalive.is_some() {
            attr.cap.flags |= UCT_IFACE_FLAG_EP_KEEPALIVE;
        }
        if c.max_iov > ZCOPY_SERVICE_IOV {
            attr.cap.am.max_iov = c.max_iov - ZCOPY_SERVICE_IOV;
            attr.cap.am.max_zcopy = c.rx_seg_size - codec::HDR_LEN;
            attr.cap.am.max_hdr = c.max_hdr;
            attr.cap.am.opt_zcopy_align = 1;
            attr.cap.flags |= UCT_IFACE_FLAG_AM_ZCOPY;
            if c.put_enable {
                attr.cap.put.max_iov = c.max_iov - ZCOPY_SERVICE_IOV;
                attr.cap.put.max_zcopy = usize::MAX - (codec::HDR_LEN + codec::PUT_REQ_LEN);
                attr.cap.put.opt_zcopy_align = 1;
                attr.cap.flags |= UCT_IFACE_FLAG_PUT_ZCOPY;
            }
        }
        attr.bandwidth.dedicated = 0.0;
        attr.bandwidth.shared = bandwidth.min(c.bw_bound);
        attr.latency.c = latency;
        attr.latency.m = 0.0;
        attr.overhead = 50e-6;
        attr.priority = if c.prefer_default {
            match netif::netif_is_default(&s.if_name) {
                Ok(true) => 0,
                _ => 1,
            }
        } else {
            0
        };
    }

    fn ep_create(iface: &I, params: &EpParams<'_>) -> Result<TcpEp, ucs_status_t> {
        let _locked = Self::guard(iface);
        iface.tl.create_ep(iface, params)
    }

    fn ep_init(_iface: &I, ep: &Ep<Self>) {
        ep.tl.conn.owner.set(ep_handle(ep));
    }

    fn ep_destroy(iface: &I, ep: &mut Ep<Self>) {
        let _locked = Self::guard(iface);
        iface.tl.destroy_ep(iface, &ep.tl.conn)
    }

    fn ep_is_connected(_iface: &I, ep: &Ep<Self>, dev: Option<PeerAddr<'_>>, addr: Option<PeerAddr<'_>>,
                       ep_addr: Option<PeerAddr<'_>>) -> bool {
        if dev.is_none() || addr.is_none() {
            // The caller's field mask, as far as the addresses tell it
            // (device address bit 0, iface address bit 1, ep address bit 2).
            let mask = dev.is_some() as u64 | (addr.is_some() as u64) << 1 | (ep_addr.is_some() as u64) << 2;
            crate::error!("missing params (field_mask: {}), both device_addr and iface_addr must be provided.", mask);
            return false;
        }
        super::connect::conn_leads_to(&ep.tl.conn, dev, addr)
    }

    fn close(iface: &mut I) {
        {
            let _locked = Self::guard(iface);
            let s = &iface.tl;
            crate::debug!("tcp_iface {}: destroying", s.if_name);
            if let Some(pool) = &s.descs {
                let (n, kept) = pool.counts();
                crate::debug!("tcp_iface {}: {} messages received as descriptors, {} kept by their handlers",
                              s.if_name, n, kept);
            }
            s.release_all_held(iface);
            let all: Vec<Rc<Conn>> = s.conns.borrow().iter().flatten().cloned().collect();
            for c in all {
                s.destroy_conn(&c);
            }
            // Closing the listening socket takes it out of the epoll set (no
            // other descriptor refers to it); the set itself closes when the
            // interface is dropped, right after this.
            drop(s.listener.borrow_mut().take());
        }
        // The safety net's timer goes with the interface (a later hold on
        // another one adds it again): nothing of it outlives the interface.
        iface.hdr.worker().net_stop();
    }

    fn get_device_address(iface: &I, out: AddrOut) -> ucs_status_t {
        let a = &iface.tl.ifaddr;
        let ns_len = ucs::ns_len();
        let mut v = Vec::with_capacity(codec::dev_addr_loopback_len(ns_len));
        if a.is_loopback() {
            let (id, ns) = (ucs::system_id(), ucs::ns_unless_default(ucs::UCS_SYS_NS_TYPE_NET));
            codec::encode_dev_addr_loopback(&mut v, a.family, id, ns, ns_len);
        } else {
            codec::encode_dev_addr_ip(&mut v, a);
        }
        out.write(&v)
    }

    fn get_address(iface: &I, out: AddrOut) -> ucs_status_t {
        out.write(&codec::encode_iface_addr(iface.tl.ifaddr.port))
    }

    fn is_reachable(iface: &I, dev: Option<PeerAddr<'_>>, addr: Option<PeerAddr<'_>>) -> bool {
        Self::reachable(iface, dev, addr).is_ok()
    }

    /// Judged on the device address alone (the iface address only carries
    /// the port); the reasons are UCX's info strings.
    fn reachable(iface: &I, dev: Option<PeerAddr<'_>>, _addr: Option<PeerAddr<'_>>) -> Result<(), String> {
        // A tcp device address starts with its 2-byte head (flags, family).
        let Some(head) = dev.and_then(|d| d.read::<2>()) else { return Err(String::new()) };
        let Some((flags, family)) = codec::dev_addr_head(&head) else { return Err(String::new()) };
        let me = &iface.tl.ifaddr;
        if family != me.family {
            return Err(format!("different address family {} vs {}", me.family, family));
        }
        let loopback = flags & codec::DEV_FLAG_LOOPBACK != 0;
        if loopback != me.is_loopback() {
            return Err(format!("incompatible loopback flags, {} (local) vs {} (remote)", me.is_loopback() as i32,
                               loopback as i32));
        }
        if !loopback {
            return Ok(());
        }
        // A loopback device address is 18 bytes long up to 1.21, 14 from
        // 1.22 (the namespace id narrowed); read no more than that.
        let ns_len = ucs::ns_len();
        let Some(full) = dev.and_then(|d| d.prefix(codec::dev_addr_loopback_len(ns_len))) else {
            return Err(String::new());
        };
        let Some((id, ns)) = codec::dev_addr_local(full, ns_len) else { return Err(String::new()) };
        let host = ucs::system_id() & !codec::LOCAL_FLAG_NS;
        let (my_id, my_ns) = match ucs::ns_unless_default(ucs::UCS_SYS_NS_TYPE_NET) {
            None => (host, 0),
            Some(ns) => (host | codec::LOCAL_FLAG_NS, ns),
        };
        if id != my_id {
            return Err(format!("different host id local {} vs {}", my_id, id));
        }
        if id & codec::LOCAL_FLAG_NS != 0 && ns != my_ns {
            // UCX names every kind of namespace this way (in hex while the
            // ids were 64-bit, in decimal from 1.22).
            return Err(if ns_len == 4 {
                format!("different pid namespaces {} vs {}", my_ns, ns)
            } else {
                format!("different pid namespaces {:x} vs {:x}", my_ns, ns)
            });
        }
        if !super::release::loopback_routable() {
            // 1.20 goes on to ask for a route to the address the device
            // address would hold, read from the namespace words: there is
            // none, and a loopback peer is never reached.
            let b = &full[2..6];
            return Err(format!("no route to {}.{}.{}.{}", b[0], b[1], b[2], b[3]));
        }
        Ok(())
    }

    const REACH_NEEDS_IFACE_ADDR: bool = false;

    /// Progress runs without the hold lock (it is called all the time):
    /// what was held when it was called went out in the trampoline, and a
    /// hold that starts inside it takes the lock until it returns
    /// (`send_buffered`).
    fn progress(iface: &I) -> u32 {
        let s = &iface.tl;
        if s.in_progress.get() {
            // Called from a handler of this interface's own progress,
            // which does nothing (and keeps the lock it may hold).
            return 0;
        }
        let n = s.progress_iface(iface);
        // What the handlers sent during the call was held (`may_hold`):
        // it goes out now, one write per connection. The application's
        // next message is the first of a new epoch (it goes out at once).
        s.release_all_held(iface);
        s.epoch.set(s.epoch.get().wrapping_add(1));
        if s.progress_locked.replace(false) {
            iface.hdr.worker().hold_unlock();
        }
        n
    }

    fn iface_flush(iface: &I, _flags: u32, comp: Completion) -> ucs_status_t {
        if !comp.is_none() {
            return UCS_ERR_UNSUPPORTED;
        }
        let _locked = Self::guard(iface);
        iface.tl.release_all_held(iface);
        if iface.tl.outstanding() { UCS_INPROGRESS } else { UCS_OK }
    }

    crate::transport_ops! {
        fn event_fd_get(iface: &I) -> Result<c_int, ucs_status_t> {
            Ok(iface.tl.epoll.as_raw_fd())
        }

        fn event_arm(iface: &I, _events: u32) -> ucs_status_t {
            // The epoll descriptor is readable whenever a socket has an event:
            // it is always armed (as in UCX). Held messages go out before the
            // caller sleeps.
            let _locked = Self::guard(iface);
            iface.tl.release_all_held(iface);
            UCS_OK
        }

        #[inline]
        fn am_short(iface: &I, ep: &Ep<Self>, id: u8, header: u64, payload: &[u8]) -> ucs_status_t {
            let _locked = Self::send_guard(iface);
            iface.tl.send_am_short(iface, Self::conn_of(ep), id, header, payload)
        }

        fn am_short_iov(iface: &I, ep: &Ep<Self>, id: u8, iov: &[uct_iov_t]) -> ucs_status_t {
            let _locked = Self::send_guard(iface);
            iface.tl.send_am_short_iov(iface, Self::conn_of(ep), id, iov)
        }

        fn am_bcopy(iface: &I, ep: &Ep<Self>, id: u8, pack: Pack, _flags: u32) -> isize {
            let _locked = Self::send_guard(iface);
            iface.tl.send_am_bcopy(iface, Self::conn_of(ep), id, pack)
        }

        fn am_zcopy(iface: &I, ep: &Ep<Self>, id: u8, header: &[u8], iov: &[uct_iov_t], _flags: u32,
                    comp: Completion) -> ucs_status_t {
            let _locked = Self::send_guard(iface);
            iface.tl.send_am_zcopy(iface, Self::conn_of(ep), id, header, iov, comp)
        }

        fn put_zcopy(iface: &I, ep: &Ep<Self>, iov: &[uct_iov_t], remote: Remote,
                     comp: Completion) -> ucs_status_t {
            let _locked = Self::send_guard(iface);
            iface.tl.send_put_zcopy(iface, Self::conn_of(ep), iov, remote, comp)
        }

        fn pending_add(iface: &I, ep: &Ep<Self>, req: PendingReq, _flags: u32) -> ucs_status_t {
            let _locked = Self::guard(iface);
            let conn = Self::conn_of(ep);
            if iface.tl.check_tx(conn) == UCS_OK {
                return UCS_ERR_BUSY;
            }
            conn.pending.borrow_mut().push_back(req);
            UCS_OK
        }

        fn pending_purge(iface: &I, ep: &Ep<Self>, cb: PurgeCb) {
            let _locked = Self::guard(iface);
            let conn = Self::conn_of(ep);
            loop {
                let Some(req) = conn.pending.borrow_mut().pop_front() else { break };
                cb.call(req);
            }
        }

        fn ep_flush(iface: &I, ep: &Ep<Self>, flags: u32, comp: Completion) -> ucs_status_t {
            let _locked = Self::guard(iface);
            iface.tl.flush_ep(iface, Self::conn_of(ep), flags, comp)
        }

        fn ep_check(iface: &I, ep: &Ep<Self>, flags: u32, comp: Completion) -> ucs_status_t {
            let _locked = Self::guard(iface);
            iface.tl.check_ep(iface, Self::conn_of(ep), flags, comp)
        }

        fn ep_get_address(iface: &I, ep: &Ep<Self>, out: AddrOut) -> ucs_status_t {
            out.write(&codec::encode_ep_addr(iface.tl.ifaddr.port, ep.tl.conn.cm_id.get()))
        }

        fn ep_connect_to_ep(iface: &I, ep: &Ep<Self>, dev: Option<PeerAddr<'_>>,
                            ep_addr: Option<PeerAddr<'_>>) -> ucs_status_t {
            let _locked = Self::guard(iface);
            iface.tl.connect_to_ep(iface, Self::conn_of(ep), dev, ep_addr)
        }

        fn ep_query(_iface: &I, _ep: &Ep<Self>, _attr: &mut uct_ep_attr_t) -> ucs_status_t {
            UCS_ERR_UNSUPPORTED
        }
    }
}

static INTERNAL: InternalOps = Internal::<TcpIface>::OPS;

fn time_seconds(t: u64, auto: i32, max: i32) -> i32 {
    if t == TIME_AUTO {
        return auto;
    }
    if t == TIME_INF {
        return max;
    }
    let secs = ucs::clocks_to_secs(t) as i64;
    secs.clamp(1, max as i64) as i32
}

/// A time setting as a duration: None for "inf", `auto` for "auto".
fn time_duration(t: u64, auto: Duration) -> Option<Duration> {
    if t == TIME_INF {
        return None;
    }
    if t == TIME_AUTO {
        return Some(auto);
    }
    Some(Duration::from_secs_f64(ucs::clocks_to_secs(t).clamp(0.0, 1e9)))
}

/// `UCX_TCP_TX_COALESCE_TIMEOUT`: the safety net's period, at least 1 ms
/// ("auto": the default, 5 ms); None for "inf". A tick wakes the async
/// thread once; on a 2-core machine whose cores run two busy processes
/// the thread takes a core from one of them for the tick.
fn hold_period(t: u64) -> Option<Duration> {
    time_duration(t, Duration::from_millis(5)).map(|d| d.max(Duration::from_millis(1)))
}

/// `UCX_TCP_LOCAL_CC` as set (None when empty or not valid UTF-8).
fn local_cc(p: *const libc::c_char) -> Option<String> {
    if p.is_null() {
        return None;
    }
    // SAFETY: libucs's string parser stores a NUL-terminated heap string
    // that lives as long as the config (which outlives this call).
    let s = unsafe { std::ffi::CStr::from_ptr(p) }.to_str().ok()?.trim();
    (!s.is_empty()).then(|| s.to_owned())
}

/// Open a tcp interface on a network device.
pub fn open(md: &MdObj, worker: &WorkerObj, params: &IfaceParams, c: &TcpIfaceConfig, af_prio: &[u16],
            regs: Arc<RegTable>) -> Result<uct_iface_h, ucs_status_t> {
    if params.open_mode & UCT_IFACE_OPEN_MODE_DEVICE == 0 {
        crate::error!("only UCT_IFACE_OPEN_MODE_DEVICE is supported");
        return Err(UCS_ERR_UNSUPPORTED);
    }
    if worker.thread_mode == UCS_THREAD_MODE_MULTI {
        crate::error!("TCP transport does not support multi-threaded worker");
        return Err(UCS_ERR_INVALID_PARAM);
    }
    // Buffers here belong to endpoints, not to shared pools, so these limits
    // bound nothing; the values are still checked as UCX checks its pools
    // (a grow of 0 means 32 there).
    let or_32 = |g: libc::c_uint| if g == 0 { 32 } else { g };
    crate::core::config::check_pool_limits("tcp tx buffers", or_32(c.tx_bufs_grow), c.tx_max_bufs)?;
    crate::core::config::check_pool_limits("tcp rx buffers", or_32(c.rx_bufs_grow), c.rx_max_bufs)?;
    let tx_seg_size = c.tx_seg_size.saturating_add(codec::HDR_LEN);
    let rx_seg_size = c.rx_seg_size.saturating_add(codec::HDR_LEN);
    let max_iov = (c.max_iov as usize).saturating_add(ZCOPY_SERVICE_IOV).min(sys::iov_max());
    let hdr_offset = ZCOPY_CTX_LEN + std::mem::size_of::<libc::iovec>() * max_iov;
    if hdr_offset > tx_seg_size && max_iov > ZCOPY_SERVICE_IOV {
        crate::error!("AM Zcopy context ({}) must be <= TX segment size ({}). It can be adjusted by decreasing \
                       maximum IOV count ({})", hdr_offset, tx_seg_size, max_iov);
        return Err(UCS_ERR_INVALID_PARAM);
    }
    if c.max_conn_retries > u8::MAX as u32 {
        crate::error!("unsupported value was specified ({}) for the maximal connection retries, expected lower \
                       than {}", c.max_conn_retries, u8::MAX);
        return Err(UCS_ERR_INVALID_PARAM);
    }
    if tx_seg_size > rx_seg_size {
        crate::error!("RX segment size ({}) must be >= TX segment size ({})", rx_seg_size, tx_seg_size);
        return Err(UCS_ERR_INVALID_PARAM);
    }
    if rx_seg_size > u32::MAX as usize || tx_seg_size > (1 << 30) {
        crate::error!("tcp: segment sizes too large (TX {} RX {})", tx_seg_size, rx_seg_size);
        return Err(UCS_ERR_INVALID_PARAM);
    }
    // UCX's receive buffers hold two segments.
    release::check_pools(&c.rel, tx_seg_size, rx_seg_size.saturating_mul(2))?;
    let keepidle = if c.keepidle != UNITS_AUTO {
        c.keepidle
    } else if params.keepalive_interval != 0 {
        params.keepalive_interval
    } else {
        TIME_AUTO
    };
    let keepalive = (keepidle != TIME_INF && c.keepcnt != UNITS_INF && c.keepintvl != TIME_INF).then(|| {
        (time_seconds(keepidle, KEEPALIVE_IDLE_DEFAULT, i16::MAX as i32),
         (c.keepcnt != UNITS_AUTO).then(|| c.keepcnt.min(i8::MAX as u64) as i32),
         time_seconds(c.keepintvl, KEEPALIVE_INTVL_DEFAULT, i16::MAX as i32))
    });
    let Some(mut ifaddr) =
        af_prio.iter().find_map(|&af| netif::netif_addr(&params.dev_name, af, release::inet6_loopback()))
    else {
        crate::error!("tcp: no usable address on device '{}'", params.dev_name);
        return Err(UCS_ERR_NO_DEVICE);
    };
    let epoll = Epoll::new().map_err(|e| {
        crate::error!("epoll_create1() failed: {}", errno_str(e as i32));
        UCS_ERR_IO_ERROR
    })?;
    // Listen on the device's address: a random port of PORT_RANGE, or one
    // the system picks (a port found taken is drawn again).
    let backlog = netif::somaxconn();
    let (listener, bound) =
        listen_in_range(&ifaddr, c.port_range.first, c.port_range.last, backlog, sys::rand,
                        |addr, e| log_listen_error(addr, backlog, e))
            .map_err(|e| if e.step == ListenStep::Bind { sys::bind_errno_status(e.errno) } else { UCS_ERR_IO_ERROR })?;
    ifaddr.port = bound.port;
    epoll_set(&epoll, &listener, 0, EV_READ, LISTEN_TAG);
    let lfd = listener.fd();
    let hold_limit = hold_period(c.tx_coalesce_timeout);
    let cfg = Cfg {
        tx_seg_size,
        rx_seg_size,
        sendv_thresh: if sys::iov_max() >= 3 { c.sendv_thresh } else { usize::MAX },
        max_iov,
        max_hdr: tx_seg_size - hdr_offset,
        prefer_default: c.prefer_default != 0,
        put_enable: c.put_enable != 0,
        conn_nb: c.conn_nb != 0,
        max_poll: c.max_poll as usize,
        max_conn_retries: c.max_conn_retries,
        syn_cnt: c.syn_cnt,
        user_timeout_ms: release::user_timeout_ms(c.user_timeout),
        nodelay: c.nodelay != 0,
        sndbuf: c.sndbuf as u64,
        rcvbuf: c.rcvbuf as u64,
        keepalive,
        // Only a single-threaded worker may hold messages back (the
        // ordering rule across its thread's workers needs one thread), and
        // only with the safety net where one is asked for.
        coalesce: if worker.may_hold() && (hold_limit.is_none() || worker.has_net()) {
            c.tx_coalesce.min(1 << 24)
        } else {
            0
        },
        hold_limit,
        handshake_timeout: time_duration(c.handshake_timeout, Duration::from_secs(HANDSHAKE_TIMEOUT_DEFAULT)),
        local_cc: local_cc(c.local_cc),
        rx_desc_min: c.rx_desc_min,
        bw_bound: release::device_topo(&params.dev_name).pci_bw.min(release::max_bw(&c.rel)),
        bind_src: release::bind_src(&c.rel),
    };
    let hdr = IfaceHeader::new(md, worker, params, &c.base, &INTERNAL);
    let descs = if cfg.rx_desc_min < cfg.rx_seg_size {
        super::desc::DescPoolHandle::new(params.rx_headroom, cfg.rx_seg_size - codec::HDR_LEN)
    } else {
        None
    };
    let tl = TcpIface {
        cfg,
        if_name: params.dev_name.clone(),
        ifaddr,
        epoll,
        listener: RefCell::new(Some(listener)),
        conns: RefCell::new(Vec::new()),
        free_slots: RefCell::new(Vec::new()),
        gen: Cell::new(0),
        next_sn: RefCell::new(HashMap::new()),
        next_key: Cell::new(2),
        in_progress: Cell::new(false),
        progress_locked: Cell::new(false),
        n_read: Cell::new(0),
        n_other: Cell::new(0),
        fast_polls: Cell::new(0),
        last_rx: Cell::new(0),
        rx_pool: RefCell::new(Vec::new()),
        descs,
        tx_pool: RefCell::new(Vec::new()),
        events: RefCell::new(vec![Event::EMPTY; MAX_EVENTS]),
        epoch: Cell::new(0),
        holding: RefCell::new(Vec::new()),
        regs,
        hs_queue: RefCell::new(VecDeque::new()),
        timers_on: Cell::new(false),
        timer_polls: Cell::new(0),
        listen_paused: Cell::new(None),
        accept_backoff: Cell::new(super::connect::ACCEPT_BACKOFF_MIN),
        accept_logged: Cell::new(None),
    };
    crate::debug!("tcp_iface {}: listening for connections (fd={}) on {}", tl.if_name, lfd, ifaddr);
    Ok(Iface::into_handle(hdr, tl))
}

/// The log line of a failed step of opening the listening socket, as the
/// transport has always written it (a taken port is only a debug line: the
/// next port is tried).
fn log_listen_error(addr: &SockAddr, backlog: i32, e: &ListenError) {
    let err = errno_str(e.errno as i32);
    match e.step {
        ListenStep::Socket => crate::error!("socket create failed: {}", err),
        ListenStep::Bind => {
            let level = if e.errno == sys::Errno::EADDRINUSE {
                crate::core::log::LEVEL_DEBUG
            } else {
                crate::core::log::LEVEL_ERROR
            };
            crate::log_at!(level, "bind(fd={} addr={}) failed: {}", e.fd, addr, err);
        }
        ListenStep::Listen => crate::error!("listen(fd={} addr={} backlog={}) failed: {}", e.fd, addr, backlog, err),
        ListenStep::Nonblock => {}
        ListenStep::Name => crate::error!("getsockname(fd={}) failed: {}", e.fd, err),
    }
}

/// Change the events of `sock` in the epoll set from `old` to `new` (0:
/// absent), tagged `data`; a failure is logged (as UCX does) and otherwise
/// ignored.
pub(super) fn epoll_set(epoll: &Epoll, sock: impl AsFd, old: u32, new: u32, data: u64) {
    let fd = sock.as_fd().as_raw_fd();
    if let Err((op, e)) = epoll.update(sock, old, new, data) {
        crate::error!("epoll_ctl(epfd={}, op={}, fd={}) failed: {}", epoll.as_raw_fd(), Epoll::op_name(op), fd,
                      errno_str(e as i32));
    }
}

impl TcpIface {
    /// Take the listening socket out of the epoll set and close it.
    pub(super) fn close_listener(&self) {
        if let Some(l) = self.listener.borrow_mut().take() {
            epoll_set(&self.epoll, &l, EV_READ, 0, LISTEN_TAG);
        }
    }
}
