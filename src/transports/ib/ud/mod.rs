//! The `ud_verbs` transport: UCX's reliable protocol over unreliable
//! datagrams on plain libibverbs, wire-compatible with UCX 1.13.1's
//! (`src/uct/ib/ud`).
//!
//! - [`neth`]: wire formats (network header, control header, addresses);
//!   [`window`]: sequence numbers and the congestion window, plain Rust.
//! - [`ep`]: endpoint state; [`proto`]: acks, explicit control packets,
//!   retransmission and the retransmission timer; [`conn`]: connection
//!   requests/replies and their matching.
//! - [`iface`]: the UD QP, CQs, buffers, receive path;
//!   [`xfer`]: data-path operations, pending, flush;
//!   [`timer`]: progress, the async timer and its locking.
//! - [`open`]: opening and attributes; [`release`]: per-release
//!   differences.

pub mod conn;
pub mod ep;
pub mod iface;
pub mod neth;
pub mod open;
pub mod proto;
pub mod release;
pub mod timer;
pub mod window;
pub mod xfer;

use crate::abi::*;
use crate::core::component::IfaceOpen;
use crate::core::iface::*;
use crate::core::md::MdObj;
use crate::core::handles::*;
use crate::core::worker::WorkerObj;
use crate::transports::ib::config::UdVerbsIfaceConfig;
use crate::transports::ib::rc::addr::IbDevAddr;
use ep::EpRef;
use iface::UdIface;
use timer::guard;

/// The transport name.
pub const NAME: &str = "ud_verbs";

pub struct UdOpen;

impl IfaceOpen for UdOpen {
    type Config = UdVerbsIfaceConfig;
    fn open(md: &MdObj, worker: &WorkerObj, params: &IfaceParams, cfg: &UdVerbsIfaceConfig)
            -> Result<uct_iface_h, ucs_status_t> {
        open::open(md, worker, params, cfg)
    }
}

static INTERNAL: InternalOps = Internal::<UdIface>::OPS;

pub(crate) fn internal() -> &'static InternalOps {
    &INTERNAL
}

/// The C-visible endpoint's part: a handle on the state the interface
/// keeps (which may outlive it, see [`ep`]).
pub struct UdEp {
    pub st: EpRef,
}

fn ep_h(ep: &Ep<UdIface>) -> uct_ep_h {
    ep as *const Ep<UdIface> as uct_ep_h
}

impl Transport for UdIface {
    type Ep = UdEp;
    const NAME: &'static str = NAME;
    const REACH_NEEDS_IFACE_ADDR: bool = false;
    const PEER_DEVICE_ADDR_MAX: usize = crate::transports::ib::rc::addr::DEV_ADDR_MAX;

    fn query(iface: &Iface<Self>, attr: &mut uct_iface_attr_t) {
        open::query(&iface.tl, attr)
    }

    fn ep_create(iface: &Iface<Self>, params: &EpParams<'_>) -> Result<UdEp, ucs_status_t> {
        let _g = guard(iface);
        let st = match (&params.dev_addr, &params.iface_addr) {
            (Some(d), Some(a)) => conn::create_to_iface(iface, d, a)?,
            _ => conn::create_unconnected(&iface.tl)?,
        };
        Ok(UdEp { st })
    }

    fn ep_init(iface: &Iface<Self>, ep: &Ep<Self>) {
        let _g = guard(iface);
        ep.tl.st.borrow_mut().ep = ep_h(ep);
    }

    fn ep_destroy(iface: &Iface<Self>, ep: &mut Ep<Self>) {
        let _g = guard(iface);
        let s = &iface.tl;
        let handle = ep_h(ep);
        let (id, drop_now) = {
            let mut st = ep.tl.st.borrow_mut();
            st.pending.clear();
            proto::purge(s, &mut st, UCS_ERR_CANCELED);
            st.tx.ack_all();
            st.ep = std::ptr::null_mut();
            st.closed_at = Some(proto::now());
            st.scheduled = false;
            (st.id, !st.connected())
        };
        iface.hdr.cancel_ep_err(handle);
        s.arb.borrow_mut().retain(|&i| i != id);
        if drop_now {
            timer::forget(s, id);
        }
        proto::run_done(s);
    }

    fn close(iface: &mut Iface<Self>) {
        iface::close(iface);
        proto::run_done(&iface.tl);
    }

    fn get_device_address(iface: &Iface<Self>, out: AddrOut) -> ucs_status_t {
        out.write(&iface.tl.dev_addr.pack())
    }

    fn get_address(iface: &Iface<Self>, out: AddrOut) -> ucs_status_t {
        let mut b = [0u8; neth::IFACE_ADDR_LEN];
        neth::put24(&mut b, iface.tl.qpn);
        out.write(&b)
    }

    fn is_reachable(iface: &Iface<Self>, dev: Option<PeerAddr<'_>>, addr: Option<PeerAddr<'_>>) -> bool {
        Self::reachable(iface, dev, addr).is_ok()
    }

    fn reachable(iface: &Iface<Self>, dev: Option<PeerAddr<'_>>, _addr: Option<PeerAddr<'_>>) -> Result<(), String> {
        let Some(dev) = dev else { return Err(release::reason(|| "device address is empty".into())) };
        let peer = IbDevAddr::read(&dev, iface.tl.dev_addr.len()).map_err(|e| release::reason(|| e))?;
        iface.tl.dev_addr.reaches(&peer, iface.tl.roce.as_ref().map(|r| &r.reach)).map_err(|e| release::reason(|| e))
    }

    fn ep_is_connected(iface: &Iface<Self>, ep: &Ep<Self>, dev: Option<PeerAddr<'_>>, _addr: Option<PeerAddr<'_>>,
                       ep_addr: Option<PeerAddr<'_>>) -> bool {
        let _g = guard(iface);
        let st = ep.tl.st.borrow();
        let Some(peer) = st.peer.as_ref() else { return false };
        let dev_ok = dev.is_none_or(|d| IbDevAddr::read(&d, iface.tl.dev_addr.len())
            .is_ok_and(|a| a.pack() == peer.dev));
        let ep_ok = ep_addr.is_none_or(|a| a.prefix(neth::EP_ADDR_LEN).and_then(neth::unpack_ep_addr)
            .is_some_and(|(q, id)| q == peer.qpn && Some(id) == st.dest_id));
        dev_ok && ep_ok
    }

    fn progress(iface: &Iface<Self>) -> u32 {
        let _g = guard(iface);
        timer::progress(iface)
    }

    fn progress_changed(iface: &Iface<Self>) {
        timer::progress_changed(iface)
    }

    fn iface_flush(iface: &Iface<Self>, _flags: u32, comp: Completion) -> ucs_status_t {
        if !comp.is_none() {
            return UCS_ERR_UNSUPPORTED;
        }
        let _g = guard(iface);
        let r = xfer::iface_flush(iface);
        proto::run_done(&iface.tl);
        r
    }

    crate::transport_ops! {
        fn event_arm(iface: &Iface<Self>, events: u32) -> ucs_status_t {
            let _g = guard(iface);
            iface::event_arm(iface, events)
        }

        fn estimate_perf(iface: &Iface<Self>, perf: &mut uct_perf_attr_t) -> ucs_status_t {
            open::estimate_perf(iface, perf)
        }

        fn am_short(iface: &Iface<Self>, ep: &Ep<Self>, id: u8, header: u64, payload: &[u8]) -> ucs_status_t {
            let _g = guard(iface);
            xfer::am_short(iface, ep, id, header, payload)
        }
        fn am_short_iov(iface: &Iface<Self>, ep: &Ep<Self>, id: u8, iov: &[uct_iov_t]) -> ucs_status_t {
            let _g = guard(iface);
            xfer::am_short_iov(iface, ep, id, iov)
        }
        fn am_bcopy(iface: &Iface<Self>, ep: &Ep<Self>, id: u8, pack: Pack, _flags: u32) -> isize {
            let _g = guard(iface);
            xfer::am_bcopy(iface, ep, id, pack)
        }
        fn am_zcopy(iface: &Iface<Self>, ep: &Ep<Self>, id: u8, header: &[u8], iov: &[uct_iov_t], _flags: u32,
                    comp: Completion) -> ucs_status_t {
            let _g = guard(iface);
            xfer::am_zcopy(iface, ep, id, header, iov, comp)
        }
        fn pending_add(iface: &Iface<Self>, ep: &Ep<Self>, req: PendingReq, flags: u32) -> ucs_status_t {
            let _g = guard(iface);
            xfer::pending_add(iface, ep, req, flags)
        }
        fn pending_purge(iface: &Iface<Self>, ep: &Ep<Self>, cb: PurgeCb) {
            let _g = guard(iface);
            xfer::pending_purge(ep, cb)
        }
        fn ep_flush(iface: &Iface<Self>, ep: &Ep<Self>, flags: u32, comp: Completion) -> ucs_status_t {
            let _g = guard(iface);
            xfer::ep_flush(iface, ep, flags, comp)
        }
        fn ep_check(iface: &Iface<Self>, ep: &Ep<Self>, _flags: u32, _comp: Completion) -> ucs_status_t {
            let _g = guard(iface);
            xfer::ep_check(iface, ep)
        }
        fn ep_get_address(iface: &Iface<Self>, ep: &Ep<Self>, out: AddrOut) -> ucs_status_t {
            let _g = guard(iface);
            out.write(&neth::pack_ep_addr(iface.tl.qpn, ep.tl.st.borrow().id))
        }
        fn ep_connect_to_ep(iface: &Iface<Self>, ep: &Ep<Self>, dev: Option<PeerAddr<'_>>,
                            ep_addr: Option<PeerAddr<'_>>) -> ucs_status_t {
            let _g = guard(iface);
            let r = conn::connect_to_ep(&iface.tl, &mut ep.tl.st.borrow_mut(), dev, ep_addr);
            timer::send_owed_all(iface);
            r
        }
    }
}
