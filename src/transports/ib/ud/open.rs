//! Opening a `ud_verbs` interface: its devices, the one UD QP with its two
//! CQs, the buffer pools, and the attributes it reports.

use super::iface::{self, RxRelease, UdIface};
use super::neth::{self, QKEY};
use crate::abi::*;
use crate::core::component::TlDevice;
use crate::core::iface::{Iface, IfaceHeader, IfaceParams};
use crate::core::md::MdObj;
use crate::core::worker::WorkerObj;
use crate::sys::verbs::{raw, CompChannel, Cq, Qp, QpCaps};
use crate::transports::ib::config::UdVerbsIfaceConfig;
use crate::transports::ib::device::{is_roce, mtu_bytes, port_perf, port_unusable, set_nonblock, tl_devices};
use crate::transports::ib::roce;
use crate::transports::ib::md::IbMd;
use crate::transports::ib::bufs::BufPool;
use std::cell::{Cell, RefCell};
use std::collections::{HashMap, VecDeque};

pub const QPT_UD: u32 = 4;
const QPT: u32 = QPT_UD;
const QPS_INIT: u32 = 1;
const QPS_RTR: u32 = 2;
const QPS_RTS: u32 = 3;
mod mask {
    pub const STATE: u32 = 1;
    pub const PKEY_INDEX: u32 = 16;
    pub const PORT: u32 = 32;
    pub const QKEY: u32 = 64;
    pub const SQ_PSN: u32 = 65536;
}
/// Most scatter/gather entries of user memory per am_zcopy.
const MAX_ZCOPY_SGE: usize = 8;
/// Software overhead (seconds) and the latency ud adds to the port's.
pub const OVERHEAD: f64 = 105e-9;
const EXTRA_LATENCY: f64 = 30e-9;
/// The size UCX reserves in front of an am_zcopy header (its zcopy
/// descriptor); it bounds the header.
pub const ZCOPY_DESC_LEN: usize = 136;

pub fn query_devices(md: &MdObj) -> Result<Vec<TlDevice>, ucs_status_t> {
    tl_devices(md, QPT, "ud_verbs")
}

fn qp_setup(qp: &Qp, port: u8) -> Result<(), String> {
    // SAFETY: all-zero is a valid attribute struct.
    let mut a: raw::ibv_qp_attr = unsafe { std::mem::zeroed() };
    a.qp_state = QPS_INIT;
    a.pkey_index = 0;
    a.port_num = port;
    a.qkey = QKEY;
    qp.modify(&mut a, mask::STATE | mask::PKEY_INDEX | mask::PORT | mask::QKEY)
        .map_err(|e| format!("Failed to modify UD QP to INIT: {}", e))?;
    a.qp_state = QPS_RTR;
    qp.modify(&mut a, mask::STATE).map_err(|e| format!("Failed to modify UD QP to RTR: {}", e))?;
    a.qp_state = QPS_RTS;
    a.sq_psn = 0;
    qp.modify(&mut a, mask::STATE | mask::SQ_PSN).map_err(|e| format!("Failed to modify UD QP to RTS: {}", e))
}

pub fn open(md: &MdObj, worker: &WorkerObj, params: &IfaceParams, cfg: &UdVerbsIfaceConfig)
            -> Result<uct_iface_h, ucs_status_t> {
    let Some(ib) = IbMd::of(md.imp.as_ref()) else {
        crate::error!("ud_verbs: memory domain {} is not an ib memory domain", md.name);
        return Err(UCS_ERR_INVALID_PARAM);
    };
    if params.open_mode & UCT_IFACE_OPEN_MODE_DEVICE == 0 {
        crate::error!("ud_verbs: only UCT_IFACE_OPEN_MODE_DEVICE is supported");
        return Err(UCS_ERR_UNSUPPORTED);
    }
    if worker.async_ctx.is_null() {
        crate::error!("ud_verbs: the worker has no async context");
        return Err(UCS_ERR_INVALID_PARAM);
    }
    if worker.thread_mode == UCS_THREAD_MODE_MULTI {
        crate::error!("ud_verbs: multi-threaded workers are not supported");
        return Err(UCS_ERR_INVALID_PARAM);
    }
    let ud = cfg.ud();
    let p = ud.params()?;
    ud.warn_small_rx_batch();
    let ibc = cfg.ib();
    ibc.check_pools()?;
    let port = params.dev_name.rsplit_once(':').filter(|(d, _)| *d == ib.name).and_then(|(_, p)| p.parse::<u8>().ok());
    let Some((port, info)) = port.and_then(|n| ib.ports.iter().find(|(q, _)| *q == n).copied()) else {
        crate::error!("ud_verbs: no device {} on memory domain {}", params.dev_name, ib.name);
        return Err(UCS_ERR_NO_DEVICE);
    };
    if let Some(why) = port_unusable(&ib.ctx, port, &info, ib.gid_index.unwrap_or(0).min(i32::MAX as u32) as i32) {
        crate::error!("ud_verbs: {} is not usable: {}", params.dev_name, why);
        return Err(UCS_ERR_NO_DEVICE);
    }
    let settings = roce::Settings::from_config(ibc, ib.gid_index).map_err(|e| {
        crate::error!("ud_verbs: {e}");
        UCS_ERR_INVALID_PARAM
    })?;
    let seg_size = super::release::seg_size(ud.seg_size(mtu_bytes(info.active_mtu)));
    let io = |what: &str, e: crate::sys::verbs::Errno| {
        crate::error!("ud_verbs: {} on {} failed: {}", what, params.dev_name, e);
        UCS_ERR_IO_ERROR
    };
    let channel = CompChannel::create(&ib.ctx).map_err(|e| io("ibv_create_comp_channel", e))?;
    set_nonblock(channel.fd());
    let (tx_len, rx_len) = cfg.cq_lens();
    let tx_cq = Cq::create(&ib.ctx, tx_len as i32, Some(&channel)).map_err(|e| io("ibv_create_cq(tx)", e))?;
    let rx_cq = Cq::create(&ib.ctx, rx_len as i32, Some(&channel)).map_err(|e| io("ibv_create_cq(rx)", e))?;
    let caps = QpCaps { max_send_wr: p.tx_qp_len, max_recv_wr: p.rx_queue_len, max_send_sge: ibc.tx_min_sge() + 1,
                        max_recv_sge: 1, max_inline_data: ibc.tx_min_inline().min(u32::MAX as usize) as u32 };
    let qp = Qp::create(&ib.pd, QPT_UD, &tx_cq, &rx_cq, None, caps, false).map_err(|e| io("ibv_create_qp(UD)", e))?;
    if let Err(e) = qp_setup(&qp, port) {
        crate::error!("ud_verbs: {}", e);
        return Err(UCS_ERR_INVALID_PARAM);
    }
    let granted = qp.caps();
    let zcopy_sge = (granted.max_send_sge as usize).saturating_sub(1).min(MAX_ZCOPY_SGE);
    let (dev_addr, roce) = roce::iface_addressing(ib, port, &info, &settings, info.active_mtu, ibc.force_global(),
                                                 "ud_verbs")?;
    let dgid_check = match ud.dgid_check(is_roce(&info)) {
        true => Some(roce::DgidCheck::new(&ib.ctx, port, info.gid_tbl_len.max(0) as u32).map_err(|e| {
            crate::error!("ud_verbs: {}: {e}", params.dev_name);
            UCS_ERR_IO_ERROR
        })?),
        false => None,
    };
    let rx_pool = Box::new(BufPool::new(&ib.pd, &ibc.base.alloc_methods(), params.rx_headroom + 8, neth::GRH_LEN + seg_size,
                                        ibc.rx_pool_grow().max(1) as usize, "ud receive buffers"));
    let tx_pool = BufPool::new(&ib.pd, &ibc.base.alloc_methods(), 0, seg_size, (ibc.tx_mp.bufs_grow as usize).clamp(16, 256),
                               "ud send buffers");
    let release = Box::new(RxRelease { base: uct_recv_desc_t { cb: Some(iface::release_rx_desc) },
                                       pool: &*rx_pool, headroom: params.rx_headroom,
                                       async_ctx: worker.async_ctx });
    let hdr = IfaceHeader::new(md, worker, params, &ibc.base, super::internal());
    let qpn = qp.qp_num();
    let tl = UdIface {
        qp, tx_cq, rx_cq, channel, rx_pool, tx_pool, release, md: ib, port, port_info: info,
        max_inline: granted.max_inline_data as usize, zcopy_sge, seg_size, dev_addr, roce, dgid_check, qpn,
        rx_queue_len: p.rx_queue_len, rx_batch: ibc.rx_max_batch().clamp(1, 16), rx_max_poll: ibc.rx_max_poll(),
        tx_max_poll: ibc.tx_max_poll(), p,
        max_num_eps: iface::units(ibc.max_num_eps()),
        rx_posted: Cell::new(0), tx_available: Cell::new(p.tx_qp_len as i32), tx_sn: Cell::new(0),
        tx_done_sn: Cell::new(0), tx_unsignaled: Cell::new(0), ctl_out: RefCell::new(VecDeque::new()),
        eps: RefCell::new(Vec::new()), ahs: RefCell::new(HashMap::new()), arb: RefCell::new(VecDeque::new()),
        owed: RefCell::new(VecDeque::new()), conn: RefCell::new(HashMap::new()), polls: Cell::new(0), next_sweep: Cell::new(0.0),
        rx_headroom: params.rx_headroom, async_timer: Cell::new(None), async_fd: Cell::new(None), async_cb: (params.async_event_cb,
        params.async_event_arg), in_async: Cell::new(false), timeouts: RefCell::new(Vec::new()),
        rx_queued: RefCell::new(VecDeque::new()), rx_async_max_poll: p.rx_async_max_poll.clamp(1, 64),
        done: RefCell::new(Vec::new()),
        send_costs: crate::transports::ib::release::send_costs(&ibc.send_overhead, OVERHEAD),
    };
    iface::refill(&tl);
    crate::debug!("ud_verbs: opened {} qpn 0x{:x} (inline {}, sge {}, lid {}, seg {})", params.dev_name, qpn,
                  tl.max_inline, zcopy_sge, info.lid, seg_size);
    let h = Iface::into_handle(hdr, tl);
    // SAFETY: the handle was just made from an Iface<UdIface>.
    let iface = unsafe { &*(h as *const Iface<UdIface>) };
    super::timer::start(iface);
    Ok(h)
}

pub fn query(s: &UdIface, a: &mut uct_iface_attr_t) {
    let inl = s.max_inline;
    let seg = s.seg_size;
    let align_mtu = mtu_bytes(s.port_info.active_mtu);
    a.cap.am.max_short = inl.saturating_sub(8);
    a.cap.am.max_bcopy = super::release::payload_max(seg);
    a.cap.am.min_zcopy = 0;
    a.cap.am.max_zcopy = super::release::payload_max(seg);
    a.cap.am.max_hdr = super::release::max_hdr(seg);
    a.cap.am.max_iov = s.zcopy_sge;
    a.cap.am.opt_zcopy_align = 512;
    a.cap.am.align_mtu = align_mtu;
    // Computed as the original does, but put_short is not offered.
    a.cap.put.max_short = inl.saturating_sub(16);
    a.cap.flags = UCT_IFACE_FLAG_AM_BCOPY | UCT_IFACE_FLAG_AM_ZCOPY | UCT_IFACE_FLAG_CONNECT_TO_EP
        | UCT_IFACE_FLAG_CONNECT_TO_IFACE | UCT_IFACE_FLAG_PENDING | UCT_IFACE_FLAG_EP_CHECK
        | UCT_IFACE_FLAG_CB_SYNC | UCT_IFACE_FLAG_CB_ASYNC | UCT_IFACE_FLAG_ERRHANDLE_PEER_FAILURE
        | super::release::extra_cap_flags();
    if a.cap.am.max_short > 0 {
        a.cap.flags |= UCT_IFACE_FLAG_AM_SHORT;
    }
    a.cap.event_flags = UCT_IFACE_FLAG_EVENT_SEND_COMP | UCT_IFACE_FLAG_EVENT_RECV | UCT_IFACE_FLAG_EVENT_ASYNC_CB;
    a.device_addr_len = s.dev_addr.pack().len();
    a.iface_addr_len = neth::IFACE_ADDR_LEN;
    a.ep_addr_len = neth::EP_ADDR_LEN;
    a.max_conn_priv = 0;
    a.max_num_eps = s.max_num_eps;
    a.dev_num_paths = 1;
    let (bw, lat) = port_perf(&s.port_info, seg);
    a.latency.c = lat + EXTRA_LATENCY;
    a.latency.m = 0.0;
    a.overhead = OVERHEAD;
    a.bandwidth.shared = bw;
    a.bandwidth.dedicated = 0.0;
    a.priority = 0;
}

pub fn estimate_perf(iface: &Iface<UdIface>, perf: &mut uct_perf_attr_t) -> ucs_status_t {
    let attr = crate::core::iface::query_attr(iface);
    let s = &iface.tl;
    crate::transports::ib::perf::estimate(&attr, &s.send_costs, u32::from(s.port_info.active_speed), perf);
    UCS_OK
}
