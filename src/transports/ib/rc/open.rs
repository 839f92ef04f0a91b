//! Opening an `rc_verbs` interface, its devices and attributes, endpoint
//! creation and connection, iface flush and the performance estimate.

use super::addr::{self, IbDevAddr};
use crate::transports::ib::bufs::BufPool;
use super::ep::{EpState, RcEp};
use super::fc::{Fc, FcConfig};
use super::iface::{self, RcIface, RxRelease, OVERHEAD};
use super::params::RcParams;
use crate::abi::*;
use crate::core::component::TlDevice;
use crate::core::config::BaseIfaceConfig;
use crate::core::iface::{Ep, Iface, IfaceHeader, IfaceParams};
use crate::core::md::MdObj;
use crate::core::handles::PeerAddr;
use crate::core::worker::WorkerObj;
use crate::sys::verbs::{CompChannel, Cq, Qp, QpCaps, Srq};
use crate::transports::ib::device::{link_lanes, mtu_bytes, port_perf, port_unusable, set_nonblock,
                                    tl_devices};
use crate::transports::ib::md::IbMd;
use crate::transports::ib::roce;
use crate::transports::ib::release::SendCosts;
use std::cell::{Cell, RefCell};
use std::collections::{HashMap, VecDeque};
use std::rc::Rc;

use super::iface::QPT_RC;
const QPT: u32 = QPT_RC;
pub fn query_devices(md: &MdObj) -> Result<Vec<TlDevice>, ucs_status_t> {
    tl_devices(md, QPT, "rc_verbs")
}

pub fn open(md: &MdObj, worker: &WorkerObj, params: &IfaceParams, base: &BaseIfaceConfig, p: RcParams,
            send_costs: SendCosts) -> Result<uct_iface_h, ucs_status_t> {
    let Some(ib) = IbMd::of(md.imp.as_ref()) else {
        crate::error!("rc_verbs: memory domain {} is not an ib memory domain", md.name);
        return Err(UCS_ERR_INVALID_PARAM);
    };
    if params.open_mode & UCT_IFACE_OPEN_MODE_DEVICE == 0 {
        crate::error!("rc_verbs: only UCT_IFACE_OPEN_MODE_DEVICE is supported");
        return Err(UCS_ERR_UNSUPPORTED);
    }
    if worker.thread_mode == UCS_THREAD_MODE_MULTI {
        crate::error!("rc_verbs: multi-threaded workers are not supported");
        return Err(UCS_ERR_INVALID_PARAM);
    }
    let port = params.dev_name.rsplit_once(':').filter(|(d, _)| *d == ib.name).and_then(|(_, p)| p.parse::<u8>().ok());
    let Some((port, info)) = port.and_then(|n| ib.ports.iter().find(|(q, _)| *q == n).copied()) else {
        crate::error!("rc_verbs: no device {} on memory domain {}", params.dev_name, ib.name);
        return Err(UCS_ERR_NO_DEVICE);
    };
    if let Some(why) = port_unusable(&ib.ctx, port, &info, ib.gid_index.unwrap_or(0).min(i32::MAX as u32) as i32) {
        crate::error!("rc_verbs: {} is not usable: {}", params.dev_name, why);
        return Err(UCS_ERR_NO_DEVICE);
    }
    let d = p.derive().map_err(|e| {
        crate::error!("rc_verbs: invalid configuration: {}", e);
        UCS_ERR_INVALID_PARAM
    })?;
    let io = |what: &str, e: crate::sys::verbs::Errno| {
        crate::error!("rc_verbs: {} on {} failed: {}", what, params.dev_name, e);
        UCS_ERR_IO_ERROR
    };
    let channel = CompChannel::create(&ib.ctx).map_err(|e| io("ibv_create_comp_channel", e))?;
    set_nonblock(channel.fd());
    set_nonblock(ib.ctx.async_fd());
    let tx_cq = Cq::create(&ib.ctx, p.tx_cq_len as i32, Some(&channel)).map_err(|e| io("ibv_create_cq(tx)", e))?;
    let rx_cq = Cq::create(&ib.ctx, p.rx_queue_len as i32, Some(&channel)).map_err(|e| io("ibv_create_cq(rx)", e))?;
    let srq = Srq::create(&ib.pd, p.rx_queue_len, 1).map_err(|e| io("ibv_create_srq", e))?;
    // The QP every endpoint gets, made once to learn what the device grants.
    let caps = QpCaps { max_send_wr: d.tx_qp_len, max_recv_wr: 0, max_send_sge: p.tx_min_sge, max_recv_sge: 1,
                        max_inline_data: p.tx_min_inline };
    let granted = Qp::create(&ib.pd, QPT_RC, &tx_cq, &rx_cq, Some(&srq), caps, false)
        .map_err(|e| io("ibv_create_qp(RC)", e))?.caps();
    let max_send_sge = (granted.max_send_sge as usize).min(iface::MAX_SGE_USED);
    if max_send_sge < 2 {
        crate::error!("rc_verbs: {} grants {} scatter/gather entries, at least 2 are needed", params.dev_name,
                      granted.max_send_sge);
        return Err(UCS_ERR_UNSUPPORTED);
    }
    let path_mtu = if p.path_mtu != 0 { p.path_mtu } else { info.active_mtu };
    let settings = roce::Settings { gid_index: ib.gid_index, ..p.roce.clone() };
    let (dev_addr, roce) = roce::iface_addressing(ib, port, &info, &settings, path_mtu, p.is_global, "rc_verbs")?;
    let max_rd_atomic = match p.max_rd_atomic {
        Some(v) if v as i32 > ib.caps.max_qp_rd_atom => {
            crate::error!("rc_verbs: MAX_RD_ATOMIC {} is beyond the device's {}", v, ib.caps.max_qp_rd_atom);
            return Err(UCS_ERR_INVALID_PARAM);
        }
        Some(v) => v,
        None => ib.caps.max_qp_rd_atom.max(0) as u32,
    }.min(255) as u8;
    let rx_pool = Box::new(BufPool::new(&ib.pd, &base.alloc_methods(), params.rx_headroom + 8, p.seg_size, p.rx_pool_grow.max(1) as usize,
                                        "rc receive buffers"));
    let tx_pool = BufPool::new(&ib.pd, &base.alloc_methods(), 0, p.seg_size, (p.tx_bufs_grow as usize).clamp(16, 256), "rc send buffers");
    let release = Box::new(RxRelease { base: uct_recv_desc_t { cb: Some(iface::release_rx_desc) },
                                       pool: &*rx_pool, headroom: params.rx_headroom });
    let fc = FcConfig { enabled: p.fc_enable, wnd: d.fc_wnd, soft: d.fc_soft, hard: d.fc_hard };
    let hdr = IfaceHeader::new(md, worker, params, base, super::internal());
    let tl = RcIface {
        srq, tx_cq, rx_cq, channel, rx_pool, tx_pool, release,
        md: ib, port, port_info: info,
        max_inline: granted.max_inline_data as usize,
        max_send_sge,
        path_mtu,
        dev_addr,
        roce,
        max_rd_atomic,
        max_get_zcopy: p.max_get_zcopy.unwrap_or(info.max_msg_sz as usize),
        atomics: ib.caps.atomic_hca,
        cq_available: Cell::new(p.tx_cq_len as i32 - 1),
        rx_posted: Cell::new(0),
        eps: RefCell::new(HashMap::new()),
        arb: RefCell::new(VecDeque::new()),
        fence_beat: Cell::new(0),
        idle_polls: Cell::new(0),
        rx_headroom: params.rx_headroom,
        send_costs,
        d, fc, p,
    };
    iface::refill(&tl, true);
    crate::debug!("rc_verbs: opened {} (inline {}, sge {}, lid {}, mtu {})", params.dev_name, tl.max_inline,
                  tl.max_send_sge, info.lid, mtu_bytes(path_mtu));
    Ok(Iface::into_handle(hdr, tl))
}

/// Bandwidth (bytes/s) and base latency (s) of the port (the model of
/// [`port_perf`]), with a warning about an unknown active width.
pub fn port_perf_of(s: &RcIface) -> (f64, f64) {
    let w = s.port_info.active_width;
    if link_lanes(w).is_none() {
        crate::warn!("rc_verbs: invalid active width {} on port {}, assuming 1x", w, s.port);
    }
    port_perf(&s.port_info, s.p.seg_size)
}

pub fn query(s: &RcIface, a: &mut uct_iface_attr_t) {
    let inl = s.max_inline;
    let sge = s.max_send_sge;
    let seg = s.p.seg_size;
    let msg = s.port_info.max_msg_sz as usize;
    let align_mtu = mtu_bytes(s.path_mtu);
    a.cap.put.max_short = inl;
    a.cap.put.max_bcopy = seg;
    a.cap.put.min_zcopy = 0;
    a.cap.put.max_zcopy = msg;
    a.cap.put.max_iov = sge;
    a.cap.put.opt_zcopy_align = 512;
    a.cap.put.align_mtu = align_mtu;
    a.cap.get.max_bcopy = seg;
    a.cap.get.min_zcopy = s.get_min_zcopy();
    a.cap.get.max_zcopy = s.max_get_zcopy;
    a.cap.get.max_iov = sge;
    a.cap.get.opt_zcopy_align = 512;
    a.cap.get.align_mtu = align_mtu;
    a.cap.am.max_short = s.am_max_short();
    a.cap.am.max_bcopy = seg - 1;
    a.cap.am.min_zcopy = 0;
    a.cap.am.max_zcopy = seg - 1;
    a.cap.am.max_hdr = s.d.short_desc_size - 1;
    a.cap.am.max_iov = sge - 1;
    a.cap.am.opt_zcopy_align = 512;
    a.cap.am.align_mtu = align_mtu;
    a.cap.flags = UCT_IFACE_FLAG_AM_BCOPY | UCT_IFACE_FLAG_AM_ZCOPY | UCT_IFACE_FLAG_PUT_BCOPY
        | UCT_IFACE_FLAG_PUT_ZCOPY | UCT_IFACE_FLAG_GET_BCOPY | UCT_IFACE_FLAG_GET_ZCOPY | UCT_IFACE_FLAG_PENDING
        | UCT_IFACE_FLAG_CONNECT_TO_EP | UCT_IFACE_FLAG_CB_SYNC | UCT_IFACE_FLAG_ERRHANDLE_PEER_FAILURE
        | UCT_IFACE_FLAG_EP_CHECK | super::release::extra_cap_flags();
    if a.cap.am.max_short > 0 {
        a.cap.flags |= UCT_IFACE_FLAG_AM_SHORT;
    }
    if a.cap.put.max_short > 0 {
        a.cap.flags |= UCT_IFACE_FLAG_PUT_SHORT;
    }
    a.cap.event_flags = UCT_IFACE_FLAG_EVENT_SEND_COMP | UCT_IFACE_FLAG_EVENT_RECV | UCT_IFACE_FLAG_EVENT_FD;
    if s.atomics {
        a.cap.flags |= UCT_IFACE_FLAG_ATOMIC_DEVICE;
        a.cap.atomic64.op_flags = 1 << UCT_ATOMIC_OP_ADD;
        a.cap.atomic64.fop_flags = (1 << UCT_ATOMIC_OP_ADD) | (1 << UCT_ATOMIC_OP_CSWAP);
    }
    a.device_addr_len = s.dev_addr.pack().len();
    a.iface_addr_len = 0;
    a.ep_addr_len = addr::EP_ADDR_LEN;
    a.max_conn_priv = 0;
    a.max_num_eps = s.p.max_num_eps;
    a.dev_num_paths = 1;
    let (bw, lat) = port_perf_of(s);
    a.latency.c = lat;
    a.latency.m = 1e-9;
    a.overhead = OVERHEAD;
    a.bandwidth.shared = bw;
    a.bandwidth.dedicated = 0.0;
    a.priority = 0;
}

pub fn estimate_perf(iface: &Iface<RcIface>, perf: &mut uct_perf_attr_t) -> ucs_status_t {
    let attr = crate::core::iface::query_attr(iface);
    let s = &iface.tl;
    crate::transports::ib::perf::estimate(&attr, &s.send_costs, u32::from(s.port_info.active_speed), perf);
    if perf.field_mask & UCT_PERF_ATTR_FIELD_MAX_INFLIGHT_EPS != 0 {
        perf.max_inflight_eps = (s.p.tx_cq_len / s.d.tx_qp_len.max(1)) as usize;
    }
    UCS_OK
}

pub fn ep_create(s: &RcIface) -> Result<RcEp, ucs_status_t> {
    let qp = iface::create_qp(s)?;
    let qpn = qp.qp_num();
    let st = EpState {
        qp: Some(qp), qpn, ep: std::ptr::null_mut(), peer: None, pi: 0, ci: 0,
        available: s.d.tx_qp_len as i32, unsignaled: 0, fc: Fc::new(&s.fc), fence_beat: s.fence_beat.get(),
        outstanding: VecDeque::new(), pending: VecDeque::new(), scheduled: false, failed: None,
        flush_cancel: false,
    };
    crate::debug!("rc_verbs: created endpoint qp 0x{:x}", qpn);
    Ok(RcEp { st: Rc::new(RefCell::new(st)) })
}

pub fn connect_to_ep(s: &RcIface, ep: &Ep<RcIface>, dev: Option<PeerAddr<'_>>, ep_addr: Option<PeerAddr<'_>>)
                     -> ucs_status_t {
    let (Some(dev), Some(ep_addr)) = (dev, ep_addr) else {
        crate::error!("rc_verbs connect_to_ep: a device and an endpoint address are needed");
        return UCS_ERR_INVALID_PARAM;
    };
    let peer = match IbDevAddr::read(&dev, s.dev_addr.len()) {
        Ok(a) => a,
        Err(e) => {
            crate::error!("rc_verbs connect_to_ep: bad device address: {}", e);
            return UCS_ERR_INVALID_ADDR;
        }
    };
    let qpn = match addr::unpack_ep_addr(ep_addr.bytes()) {
        Ok(q) => q,
        Err(e) => {
            crate::error!("rc_verbs connect_to_ep: bad endpoint address: {}", e);
            return UCS_ERR_INVALID_ADDR;
        }
    };
    let mut st = ep.tl.st.borrow_mut();
    let Some(qp) = st.qp.as_ref() else { return UCS_ERR_NOT_CONNECTED };
    if let Err(e) = iface::connect_qp(s, qp, &peer, qpn) {
        return e;
    }
    crate::debug!("rc_verbs: qp 0x{:x} connected to lid {} qp 0x{:x}", st.qpn, peer.lid, qpn);
    st.peer = Some((peer.lid, qpn, peer.roce.map(|r| r.gid)));
    UCS_OK
}

pub fn iface_flush(iface: &Iface<RcIface>) -> ucs_status_t {
    let eps: Vec<_> = iface.tl.eps.borrow().values().cloned().collect();
    let mut result = UCS_OK;
    for st in eps {
        // An endpoint out of send resources is not flushed yet: the
        // interface is in progress, as in the original (not an error).
        let ep = crate::transports::ib::rc::xfer::flush_state(iface, &st);
        if ep == UCS_ERR_NO_RESOURCE || ep == UCS_INPROGRESS {
            result = UCS_INPROGRESS;
        } else if ep != UCS_OK {
            return ep;
        }
    }
    result
}
