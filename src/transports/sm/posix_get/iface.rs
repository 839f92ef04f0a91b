//! The `posix_get` interface: one operation, a zero-copy get out of a peer's
//! posix segment mapped through the remote key ([`super::key`]); it is
//! checked against the segment's bounds and complete when it returns.
//!
//! Addresses: the device address is the host's, marked so that only this
//! library reaches it; the iface address is the PID namespace this process
//! is in (0 for the host's) and its pid: the peer's proc-link segment ids
//! name processes of that namespace, and a get is refused when its key's
//! segment is not the peer's own.

use super::key::Key;
use super::DEVICE_NAME;
use crate::abi::*;
use crate::core::iface::checks;
use crate::core::iface::{Ep, EpParams, Iface, IfaceHeader, IfaceParams, Internal, InternalOps, Transport};
use crate::core::md::MdObj;
use crate::core::handles::*;
use crate::core::worker::WorkerObj;
use crate::transports::sm;
use crate::transports::sm::release;
use crate::transports::sm::SmIfaceConfig;
use crate::ucs;
use std::sync::atomic::{AtomicU64, Ordering};

/// The mark in our device address (see `device_addr::pack_marked`).
pub const DEVICE_MARK: u64 = 0x2d67_6574_2d72_735f;
/// Latency and overhead reported: those of a mapped copy.
const LATENCY: f64 = 80e-9;
const OVERHEAD: f64 = 10e-9;
/// PID namespace (0: the host's) and pid, 8 bytes each.
const ADDR_LEN: usize = 16;

pub struct GetIface {
    bandwidth: f64,
    /// Gets done and bytes read, said at debug level when the interface
    /// closes (how tests see that libucp used the lane).
    gets: AtomicU64,
    bytes: AtomicU64,
}

pub struct GetEp {
    /// The peer's pid.
    pid: u64,
    /// The peer's start time, read when the endpoint was made (a key whose
    /// segment was mapped from a process of another start time, the same
    /// pid reused, is refused).
    start: u64,
}

fn local_pid_ns() -> u64 {
    ucs::ns_unless_default(ucs::UCS_SYS_NS_TYPE_PID).unwrap_or(0)
}

impl Transport for GetIface {
    type Ep = GetEp;
    const NAME: &'static str = "posix_get";
    const HAS_PROGRESS: bool = false;

    fn query(iface: &Iface<Self>, attr: &mut uct_iface_attr_t) {
        attr.cap.get.min_zcopy = 0;
        attr.cap.get.max_zcopy = usize::MAX;
        attr.cap.get.opt_zcopy_align = 1;
        attr.cap.get.align_mtu = 1;
        attr.cap.get.max_iov = sm::MAX_IOV;
        attr.device_addr_len = sm::device_addr::len();
        attr.iface_addr_len = ADDR_LEN;
        attr.ep_addr_len = 0;
        attr.max_conn_priv = 0;
        attr.cap.flags = UCT_IFACE_FLAG_GET_ZCOPY | UCT_IFACE_FLAG_PENDING | UCT_IFACE_FLAG_CONNECT_TO_IFACE;
        // A get completes before it returns: there is never an event to
        // wait for, and arming always succeeds.
        attr.cap.event_flags = UCT_IFACE_FLAG_EVENT_SEND_COMP | UCT_IFACE_FLAG_EVENT_RECV
            | UCT_IFACE_FLAG_EVENT_ASYNC_CB;
        attr.latency.c = LATENCY;
        attr.latency.m = 0.0;
        attr.overhead = OVERHEAD;
        // Below a cma interface of the same worker (see `get_lanes`).
        let worker = iface.hdr.worker() as *const WorkerObj as usize;
        attr.bandwidth.dedicated = sm::get_lanes::posix_get_bandwidth(worker, iface.tl.bandwidth);
        attr.bandwidth.shared = 0.0;
        attr.priority = 0;
    }

    fn ep_create(iface: &Iface<Self>, params: &EpParams<'_>) -> Result<GetEp, ucs_status_t> {
        if params.dev_addr.is_none() || params.iface_addr.is_none() {
            crate::error!("posix_get: creating an endpoint needs both UCT_EP_PARAM_FIELD_DEV_ADDR and \
                           UCT_EP_PARAM_FIELD_IFACE_ADDR");
            return Err(UCS_ERR_INVALID_PARAM);
        }
        if let Err(why) = Self::reachable(iface, params.dev_addr, params.iface_addr) {
            crate::error!("posix_get: the peer is not reachable: {why}");
            return Err(UCS_ERR_UNREACHABLE);
        }
        let pid = params.iface_addr.and_then(|a| a.read_at::<8>(8)).map_or(0, u64::from_ne_bytes);
        Ok(GetEp { pid, start: ucs::proc_create_time(pid as libc::pid_t) })
    }

    fn get_device_address(_iface: &Iface<Self>, out: AddrOut) -> ucs_status_t {
        out.write(&sm::device_addr::pack_marked(DEVICE_MARK))
    }

    fn get_address(_iface: &Iface<Self>, out: AddrOut) -> ucs_status_t {
        let mut a = [0u8; ADDR_LEN];
        a[..8].copy_from_slice(&local_pid_ns().to_ne_bytes());
        a[8..].copy_from_slice(&u64::from(std::process::id()).to_ne_bytes());
        out.write(&a)
    }

    fn is_reachable(iface: &Iface<Self>, dev: Option<PeerAddr<'_>>, addr: Option<PeerAddr<'_>>) -> bool {
        Self::reachable(iface, dev, addr).is_ok()
    }

    fn reachable(_iface: &Iface<Self>, dev: Option<PeerAddr<'_>>, addr: Option<PeerAddr<'_>>) -> Result<(), String> {
        let (dev, addr) = sm::both_addrs(dev, addr)?;
        sm::device_addr::check_host_marked(dev, DEVICE_MARK)?;
        let ns = addr.read_at::<8>(0).map(u64::from_ne_bytes);
        if ns != Some(local_pid_ns()) {
            return Err(release::reason(|| format!("pid namespaces differ ({:?} vs {})", ns, local_pid_ns())));
        }
        match addr.read_at::<8>(8).map(u64::from_ne_bytes) {
            Some(pid) if pid != 0 && pid <= i32::MAX as u64 => Ok(()),
            pid => Err(release::reason(|| format!("bad peer pid {pid:?}"))),
        }
    }

    fn close(iface: &mut Iface<Self>) {
        crate::debug!("posix_get: interface closed after {} gets of {} bytes", iface.tl.gets.load(Ordering::Relaxed),
                      iface.tl.bytes.load(Ordering::Relaxed));
    }

    crate::transport_ops! {
        fn event_arm(_iface: &Iface<Self>, _events: u32) -> ucs_status_t {
            UCS_OK
        }

        fn get_zcopy(iface: &Iface<Self>, ep: &Ep<Self>, iov: &[uct_iov_t], remote: Remote,
                     _comp: Completion) -> ucs_status_t {
            if let Err(e) = checks::iov_count::<Self>(checks::Op::GetZcopy, iov.len(), sm::MAX_IOV) {
                return e;
            }
            let total = iov.iter().map(|e| e.length.saturating_mul(e.count.max(1) as usize)).fold(0usize, usize::saturating_add);
            // SAFETY: the rkey is one this component unpacked and the caller
            // has not released (UCT contract); a value without the key's magic
            // is refused.
            let Some(key) = (unsafe { Key::of(remote.rkey) }) else {
                crate::error!("posix_get: get_zcopy with rkey {:#x}, which is not a key of this transport", remote.rkey);
                return UCS_ERR_INVALID_PARAM;
            };
            if key.creator.is_some_and(|pid| pid != ep.tl.pid) {
                crate::error!("posix_get: get_zcopy through a key of pid {:?}'s segment on an endpoint to pid {}",
                              key.creator, ep.tl.pid);
                return UCS_ERR_INVALID_PARAM;
            }
            if key.mapping.creator_start.is_some_and(|s| s != ep.tl.start) {
                crate::error!("posix_get: get_zcopy through a key of an earlier process with pid {}", ep.tl.pid);
                return UCS_ERR_INVALID_PARAM;
            }
            let Some(src) = key.source(remote.addr, total) else {
                crate::error!("posix_get: get_zcopy of {} bytes at {:#x} is outside the remote segment", total, remote.addr);
                return UCS_ERR_INVALID_PARAM;
            };
            iface.tl.gets.fetch_add(1, Ordering::Relaxed);
            iface.tl.bytes.fetch_add(total as u64, Ordering::Relaxed);
            // The source lies inside the mapping (checked above); the
            // destinations are the caller's iov entries.
            sm::get_zcopy(iov, Remote::new(src as u64, 0))
        }

        fn pending_add(_iface: &Iface<Self>, _ep: &Ep<Self>, _req: PendingReq, _flags: u32) -> ucs_status_t {
            // A get never runs out of resources: there is never a reason to wait.
            UCS_ERR_BUSY
        }

        fn pending_purge(_iface: &Iface<Self>, _ep: &Ep<Self>, _cb: PurgeCb) {
            // Nothing is ever queued (see `pending_add`): nothing to purge.
        }
    }
}

static INTERNAL: InternalOps = Internal::<GetIface>::OPS;

pub fn open(md: &MdObj, worker: &WorkerObj, params: &IfaceParams, cfg: &SmIfaceConfig)
            -> Result<uct_iface_h, ucs_status_t> {
    let any: &dyn std::any::Any = md.imp.as_ref();
    if any.downcast_ref::<super::GetMd>().is_none() {
        crate::error!("posix_get: memory domain {} is not a posix_get memory domain", md.name);
        return Err(UCS_ERR_INVALID_PARAM);
    }
    if params.open_mode & UCT_IFACE_OPEN_MODE_DEVICE == 0 {
        crate::error!("only UCT_IFACE_OPEN_MODE_DEVICE is supported");
        return Err(UCS_ERR_UNSUPPORTED);
    }
    if params.dev_name != DEVICE_NAME {
        crate::error!("posix_get: no device named '{}'", params.dev_name);
        return Err(UCS_ERR_NO_DEVICE);
    }
    let hdr = IfaceHeader::new(md, worker, params, &cfg.base, &INTERNAL);
    Ok(Iface::into_handle(hdr, GetIface { bandwidth: cfg.bandwidth, gets: AtomicU64::new(0),
                                                    bytes: AtomicU64::new(0) }))
}
