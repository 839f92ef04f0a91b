//! The `rc_verbs` transport: reliable-connected QPs over plain libibverbs,
//! wire-compatible with UCX 1.13.1's (`src/uct/ib/rc/verbs`).
//!
//! - [`params`]: every setting, in one struct with the 1.13.1 defaults,
//!   and the configuration tables read into it.
//! - [`addr`]: device and endpoint address formats.
//! - [`fc`]: the RC active-message header and credit flow control.
//! - [`bufs`]: registered send and receive buffer pools.
//! - [`ep`]: endpoint state, posting, completion of retired operations,
//!   pending dispatch; [`xfer`]: the data-path operations.
//! - [`iface`]: CQs, SRQ, progress, events, QP setup.
//! - [`open`]: opening an interface and its attributes; [`release`]:
//!   per-release differences.

pub mod addr;
pub mod ep;
pub mod fc;
pub mod iface;
pub mod open;
pub mod params;
pub mod release;
pub mod xfer;

use crate::abi::*;
use crate::core::component::IfaceOpen;
use crate::core::iface::*;
use crate::core::md::MdObj;
use crate::core::handles::*;
use crate::core::worker::WorkerObj;
use iface::RcIface;
use crate::transports::ib::config::RcVerbsIfaceConfig;

/// The transport name.
pub const NAME: &str = "rc_verbs";

pub struct RcOpen;

impl IfaceOpen for RcOpen {
    type Config = RcVerbsIfaceConfig;
    fn open(md: &MdObj, worker: &WorkerObj, params: &IfaceParams, cfg: &RcVerbsIfaceConfig)
            -> Result<uct_iface_h, ucs_status_t> {
        let p = params::RcParams::from_config(cfg)?;
        cfg.common().check_ece(params.dev_name.split(':').next().unwrap_or_default())?;
        let costs = crate::transports::ib::release::send_costs(&cfg.ib().send_overhead, iface::OVERHEAD);
        open::open(md, worker, params, &cfg.ib().base, p, costs)
    }
}


static INTERNAL: InternalOps = Internal::<RcIface>::OPS;

fn ep_h(ep: &Ep<RcIface>) -> uct_ep_h {
    ep as *const Ep<RcIface> as uct_ep_h
}

impl Transport for RcIface {
    type Ep = ep::RcEp;
    const NAME: &'static str = NAME;
    const REACH_NEEDS_IFACE_ADDR: bool = false;
    const PEER_DEVICE_ADDR_MAX: usize = addr::DEV_ADDR_MAX;

    fn query(iface: &Iface<Self>, attr: &mut uct_iface_attr_t) {
        open::query(&iface.tl, attr)
    }

    fn ep_create(iface: &Iface<Self>, _params: &EpParams<'_>) -> Result<ep::RcEp, ucs_status_t> {
        open::ep_create(&iface.tl)
    }

    fn ep_init(iface: &Iface<Self>, ep: &Ep<Self>) {
        let mut st = ep.tl.st.borrow_mut();
        st.ep = ep_h(ep);
        iface.tl.eps.borrow_mut().insert(st.qpn, ep.tl.st.clone());
    }

    fn ep_destroy(iface: &Iface<Self>, ep: &mut Ep<Self>) {
        iface::ep_destroy(iface, &ep.tl.st, &iface.hdr)
    }

    fn close(iface: &mut Iface<Self>) {
        iface::close(iface)
    }

    fn get_device_address(iface: &Iface<Self>, out: AddrOut) -> ucs_status_t {
        out.write(&iface.tl.dev_addr.pack())
    }

    fn is_reachable(iface: &Iface<Self>, dev: Option<PeerAddr<'_>>, addr: Option<PeerAddr<'_>>) -> bool {
        Self::reachable(iface, dev, addr).is_ok()
    }

    fn reachable(iface: &Iface<Self>, dev: Option<PeerAddr<'_>>, _addr: Option<PeerAddr<'_>>) -> Result<(), String> {
        let Some(dev) = dev else { return Err(release::reason(|| "device address is empty".into())) };
        let peer = addr::IbDevAddr::read(&dev, iface.tl.dev_addr.len()).map_err(|e| release::reason(|| e))?;
        iface.tl.dev_addr.reaches(&peer, iface.tl.roce.as_ref().map(|r| &r.reach)).map_err(|e| release::reason(|| e))
    }

    fn ep_is_connected(iface: &Iface<Self>, ep: &Ep<Self>, dev: Option<PeerAddr<'_>>, _addr: Option<PeerAddr<'_>>,
                       ep_addr: Option<PeerAddr<'_>>) -> bool {
        let Some(peer) = ep.tl.st.borrow().peer else { return false };
        // InfiniBand: the LID; RoCE (no LID): the GID
        let lid_ok = dev.is_none_or(|d| addr::IbDevAddr::read(&d, iface.tl.dev_addr.len())
            .is_ok_and(|a| a.lid == peer.0 && a.roce.map(|r| r.gid) == peer.2));
        let qpn_ok = ep_addr.is_none_or(|a| addr::unpack_ep_addr(a.bytes()).is_ok_and(|q| q == peer.1));
        lid_ok && qpn_ok
    }

    fn progress(iface: &Iface<Self>) -> u32 {
        iface::progress(iface)
    }

    fn iface_flush(iface: &Iface<Self>, _flags: u32, comp: Completion) -> ucs_status_t {
        if !comp.is_none() {
            return UCS_ERR_UNSUPPORTED;
        }
        open::iface_flush(iface)
    }

    fn iface_fence(iface: &Iface<Self>, _flags: u32) -> ucs_status_t {
        let b = &iface.tl.fence_beat;
        b.set(b.get().wrapping_add(1));
        UCS_OK
    }

    crate::transport_ops! {
        atomics: [64];

        fn event_fd_get(iface: &Iface<Self>) -> Result<libc::c_int, ucs_status_t> {
            Ok(iface.tl.channel.fd())
        }

        fn event_arm(iface: &Iface<Self>, events: u32) -> ucs_status_t {
            iface::event_arm(iface, events)
        }

        fn estimate_perf(iface: &Iface<Self>, perf: &mut uct_perf_attr_t) -> ucs_status_t {
            open::estimate_perf(iface, perf)
        }

        fn am_short(iface: &Iface<Self>, ep: &Ep<Self>, id: u8, header: u64, payload: &[u8]) -> ucs_status_t {
            xfer::am_short(iface, ep, id, header, payload)
        }
        fn am_short_iov(iface: &Iface<Self>, ep: &Ep<Self>, id: u8, iov: &[uct_iov_t]) -> ucs_status_t {
            xfer::am_short_iov(iface, ep, id, iov)
        }
        fn am_bcopy(iface: &Iface<Self>, ep: &Ep<Self>, id: u8, pack: Pack, _flags: u32) -> isize {
            xfer::am_bcopy(iface, ep, id, pack)
        }
        fn am_zcopy(iface: &Iface<Self>, ep: &Ep<Self>, id: u8, header: &[u8], iov: &[uct_iov_t], _flags: u32,
                    comp: Completion) -> ucs_status_t {
            xfer::am_zcopy(iface, ep, id, header, iov, comp)
        }
        fn put_short(iface: &Iface<Self>, ep: &Ep<Self>, data: &[u8], remote: Remote) -> ucs_status_t {
            xfer::put_short(iface, ep, data, remote)
        }
        fn put_bcopy(iface: &Iface<Self>, ep: &Ep<Self>, pack: Pack, remote: Remote) -> isize {
            xfer::put_bcopy(iface, ep, pack, remote)
        }
        fn put_zcopy(iface: &Iface<Self>, ep: &Ep<Self>, iov: &[uct_iov_t], remote: Remote, comp: Completion)
                     -> ucs_status_t {
            xfer::put_zcopy(iface, ep, iov, remote, comp)
        }
        fn get_bcopy(iface: &Iface<Self>, ep: &Ep<Self>, unpack: Unpack, length: usize, remote: Remote,
                     comp: Completion) -> ucs_status_t {
            xfer::get_bcopy(iface, ep, unpack, length, remote, comp)
        }
        fn get_zcopy(iface: &Iface<Self>, ep: &Ep<Self>, iov: &[uct_iov_t], remote: Remote, comp: Completion)
                     -> ucs_status_t {
            xfer::get_zcopy(iface, ep, iov, remote, comp)
        }
        fn atomic_post(iface: &Iface<Self>, ep: &Ep<Self>, op: AtomicOp, width: Width, value: u64, remote: Remote)
                       -> ucs_status_t {
            xfer::atomic_post(iface, ep, op, width, value, remote)
        }
        fn atomic_fetch(iface: &Iface<Self>, ep: &Ep<Self>, op: AtomicOp, width: Width, value: u64, compare: u64,
                        remote: Remote, result: FetchResult, comp: Completion) -> ucs_status_t {
            xfer::atomic_fetch(iface, ep, op, width, value, compare, remote, result, comp)
        }
        fn pending_add(iface: &Iface<Self>, ep: &Ep<Self>, req: PendingReq, _flags: u32) -> ucs_status_t {
            let s = &iface.tl;
            let mut st = ep.tl.st.borrow_mut();
            // A failed endpoint would never run the request: BUSY sends the
            // caller back to the operation, which reports the failure (the
            // original answers BUSY there too, its resources being restored).
            if st.failed.is_some() || st.has_tx_res(s) {
                return UCS_ERR_BUSY;
            }
            st.add_pending(s, ep::Pend::User(req), false);
            UCS_OK
        }
        fn pending_purge(_iface: &Iface<Self>, ep: &Ep<Self>, cb: PurgeCb) {
            let reqs: Vec<ep::Pend> = ep.tl.st.borrow_mut().pending.drain(..).collect();
            for r in reqs {
                if let ep::Pend::User(r) = r {
                    cb.call(r);
                }
            }
        }
        fn ep_flush(iface: &Iface<Self>, ep: &Ep<Self>, flags: u32, comp: Completion) -> ucs_status_t {
            xfer::ep_flush(iface, ep, flags, comp)
        }
        fn ep_fence(iface: &Iface<Self>, ep: &Ep<Self>, _flags: u32) -> ucs_status_t {
            ep.tl.st.borrow_mut().fence(&iface.tl);
            UCS_OK
        }
        fn ep_check(iface: &Iface<Self>, ep: &Ep<Self>, flags: u32, comp: Completion) -> ucs_status_t {
            xfer::ep_check(iface, ep, flags, comp)
        }
        fn ep_get_address(_iface: &Iface<Self>, ep: &Ep<Self>, out: AddrOut) -> ucs_status_t {
            out.write(&addr::pack_ep_addr(ep.tl.st.borrow().qpn))
        }
        fn ep_connect_to_ep(iface: &Iface<Self>, ep: &Ep<Self>, dev: Option<PeerAddr<'_>>,
                            ep_addr: Option<PeerAddr<'_>>) -> ucs_status_t {
            open::connect_to_ep(&iface.tl, ep, dev, ep_addr)
        }
    }
}

pub(crate) fn internal() -> &'static InternalOps {
    &INTERNAL
}
