//! Which RDMA devices the `ib` component offers, and which ports of a
//! device its transports open interfaces on.
//!
//! Devices come from libibverbs (`ibv_get_device_list`), whatever provider
//! serves them. As UCX 1.13.1 does, a device is offered only when its
//! uverbs character device (`/dev/infiniband/<uverbsN>`) exists and this
//! process may read and write it: a device the process cannot open is not
//! listed, rather than failing later.

use crate::sys::verbs::{self, Context, DeviceList, PortInfo};
use std::ffi::CString;
use std::os::unix::fs::FileTypeExt;

/// `IBV_PORT_ACTIVE`.
pub const PORT_ACTIVE: u32 = 4;
/// `IBV_LINK_LAYER_INFINIBAND` and `_ETHERNET`.
pub const LINK_LAYER_IB: u8 = 1;
pub const LINK_LAYER_ETHERNET: u8 = 2;
/// `IBV_NODE_SWITCH`: a switch's management port is port 0.
const NODE_SWITCH: i32 = 2;
/// `IBV_TRANSPORT_IWARP`: UCX's IB transports do not run on iWARP.
const TRANSPORT_IWARP: i32 = 1;
/// UCX looks at no more than two ports of a device.
pub const MAX_PORTS: u8 = 2;

/// Whether the uverbs node of a device is a character device we may read
/// and write.
fn node_usable(dev_name: &str) -> bool {
    let path = format!("/dev/infiniband/{}", dev_name);
    let is_char = std::fs::metadata(&path).map(|m| m.file_type().is_char_device()).unwrap_or(false);
    if !is_char {
        crate::debug!("ib: {} is not a character device, skipping it", path);
        return false;
    }
    let Ok(c) = CString::new(path.as_str()) else { return false };
    // SAFETY: a NUL-terminated path; access() only reads it.
    let ok = unsafe { libc::access(c.as_ptr(), libc::R_OK | libc::W_OK) } == 0;
    if !ok {
        crate::debug!("ib: no read/write access to {}, skipping it", path);
    }
    ok
}

/// The names of the usable devices, in libibverbs' order.
pub fn usable_devices() -> Vec<String> {
    let list = match DeviceList::get() {
        Ok(l) => l,
        Err(e) => {
            crate::debug!("ib: failed to get the device list ({}), assuming no devices are present", e);
            return Vec::new();
        }
    };
    (0..list.len()).map(|i| list.info(i)).filter(|d| node_usable(&d.dev_name)).map(|d| d.name).collect()
}

/// Open the device called `name`.
pub fn open(name: &str) -> Result<Context, verbs::Errno> {
    let list = DeviceList::get()?;
    let i = list.find(name).ok_or(verbs::Errno::ENODEV)?;
    list.open(i)
}

/// The ports of an opened device: (port number, its state), the numbers
/// UCX uses (port 0 alone on a switch, else 1..=phys_port_cnt, at most
/// [`MAX_PORTS`]).
pub fn ports(ctx: &Context, phys_port_cnt: u8) -> Vec<(u8, PortInfo)> {
    let range: Vec<u8> = if ctx.info().node_type == NODE_SWITCH {
        vec![0]
    } else {
        (1..=phys_port_cnt.min(MAX_PORTS)).collect()
    };
    range.into_iter().filter_map(|p| match ctx.query_port(p) {
        Ok(info) => Some((p, info)),
        Err(e) => {
            crate::debug!("ib: {}: ibv_query_port({}) failed: {}", ctx.info().name, p, e);
            None
        }
    }).collect()
}

/// Why a port cannot carry UCX's IB transports, if it cannot: not active,
/// no GID table, iWARP, or no valid GID at `gid_index` (all zero up to
/// 1.17, a zero interface id from 1.18).
pub fn port_unusable(ctx: &Context, port: u8, info: &PortInfo, gid_index: i32) -> Option<String> {
    if ctx.info().transport_type == TRANSPORT_IWARP {
        return Some("iWARP is not supported".into());
    }
    if info.state != PORT_ACTIVE {
        return Some(format!("port state is {}, not active", info.state));
    }
    if info.gid_tbl_len == 0 {
        return Some("the port has no GID table".into());
    }
    match ctx.query_gid(port, gid_index) {
        Ok(g) if !super::release::gid_is_valid(&g) => Some(format!("invalid gid[{}]", gid_index)),
        Ok(_) => None,
        Err(e) => Some(format!("ibv_query_gid({}) failed: {}", gid_index, e)),
    }
}

/// Whether a port's link layer is Ethernet (RoCE).
pub fn is_roce(info: &PortInfo) -> bool {
    info.link_layer == LINK_LAYER_ETHERNET
}

/// `ibv_mtu` values 1..5 are 256..4096 bytes.
pub fn mtu_bytes(mtu: u32) -> usize {
    if (1..=5).contains(&mtu) { 128 << mtu } else { 4096 }
}

/// Lanes of a port's `active_width` code (1x, 4x, 8x, 12x, 2x); None for
/// a code the model does not know.
pub fn link_lanes(active_width: u8) -> Option<f64> {
    match active_width {
        1 => Some(1.0),
        2 => Some(4.0),
        4 => Some(8.0),
        8 => Some(12.0),
        16 => Some(2.0),
        _ => None,
    }
}

/// Bandwidth (bytes/s) and base latency (s) of a port, as UCX models them
/// from the active width (an unknown one counted as 1x), the active speed
/// (per-lane signalling rate and line encoding) and the MTU, which is
/// capped at the transport's segment size `seg`. The headers counted per
/// packet are the RC ones: BTH 12, RETH 16 (larger than the RC and UD
/// transport headers), ICRC 4, VCRC 2, delimiter 2, and LRH 8 on
/// InfiniBand; on RoCE the GRH 40 and the Ethernet header 14 instead, 200 ns
/// more latency, and a QDR code read as 40 Gb Ethernet.
pub fn port_perf(info: &PortInfo, seg: usize) -> (f64, f64) {
    let width = link_lanes(info.active_width).unwrap_or(1.0);
    let roce = is_roce(info);
    let (lat, rate, enc) = match info.active_speed {
        2 => (2500e-9, 5.0e9, 0.8),
        4 if roce => (1300e-9, 10.3125e9, 64.0 / 66.0),
        4 => (1300e-9, 10.0e9, 0.8),
        8 => (700e-9, 10.3125e9, 64.0 / 66.0),
        16 => (700e-9, 14.0625e9, 64.0 / 66.0),
        32 => (600e-9, 25.78125e9, 64.0 / 66.0),
        64 => (600e-9, 25.78125e9 * 2.0, 64.0 / 66.0),
        128 => (600e-9, 100e9, 64.0 / 66.0),
        _ => (5000e-9, 2.5e9, 0.8),
    };
    let wire = width * rate * enc / 8.0;
    let mtu = mtu_bytes(info.active_mtu).min(seg) as f64;
    let link = if roce { 40 + 14 } else { 8 };
    let extra = (12 + 16 + 4 + 2 + 2 + link) as f64;
    (wire * mtu / (mtu + extra), if roce { lat + 200e-9 } else { lat })
}

/// The devices (`<ib device>:<port>`) a transport `tl` offers on an ib
/// md: none (UNSUPPORTED) when the device cannot create a minimal QP of
/// type `qp_type`, else every usable port the transports support (an md
/// whose ports are all left out still registers memory, with no
/// transport on it).
pub fn tl_devices(md: &crate::core::md::MdObj, qp_type: u32, tl: &str)
                  -> Result<Vec<crate::core::component::TlDevice>, crate::abi::ucs_status_t> {
    use crate::abi::*;
    use crate::sys::verbs::{Cq, Qp, QpCaps};
    let Some(ib) = super::md::IbMd::of(md.imp.as_ref()) else { return Err(UCS_ERR_INVALID_PARAM) };
    let probe = || {
        let Ok(cq) = Cq::create(&ib.ctx, 1, None) else { return false };
        let caps = QpCaps { max_send_wr: 1, max_recv_wr: 1, max_send_sge: 1, max_recv_sge: 1, max_inline_data: 0 };
        match Qp::create(&ib.pd, qp_type, &cq, &cq, None, caps, false) {
            Ok(_qp) => true,
            Err(e) => {
                crate::debug!("{}: {}: a QP of type {} cannot be created ({}), no {} devices", tl, ib.name, qp_type,
                              e, tl);
                false
            }
        }
    };
    if !probe() {
        return Err(UCS_ERR_UNSUPPORTED);
    }
    let gid_index = ib.gid_index.unwrap_or(0).min(i32::MAX as u32) as i32;
    Ok(ib.ports.iter().filter(|(port, info)| {
        match port_unusable(&ib.ctx, *port, info, gid_index) {
            Some(why) => {
                crate::debug!("{}: {}:{} is not usable: {}", tl, ib.name, port, why);
                false
            }
            None => true,
        }
    }).map(|(port, _)| crate::core::component::TlDevice {
        name: format!("{}:{}", ib.name, port),
        dev_type: UCT_DEVICE_TYPE_NET,
        sys_device: UCS_SYS_DEVICE_ID_UNKNOWN,
    }).collect())
}

/// Make a descriptor libibverbs owns non-blocking (completion channels,
/// the async event fd).
pub fn set_nonblock(fd: i32) {
    // SAFETY: plain fcntl calls on a descriptor libibverbs owns; only the
    // O_NONBLOCK status flag changes.
    unsafe {
        let fl = libc::fcntl(fd, libc::F_GETFL);
        if fl >= 0 {
            libc::fcntl(fd, libc::F_SETFL, fl | libc::O_NONBLOCK);
        }
    }
}

/// Take every pending event of a completion channel shared by a send and
/// a receive CQ, acknowledge them, and return how many each CQ had (the
/// first step of `uct_iface_event_arm`). A failure is logged as `tl`'s.
pub fn drain_cq_events(channel: &crate::sys::verbs::CompChannel, tx: &crate::sys::verbs::Cq,
                       rx: &crate::sys::verbs::Cq, tl: &str) -> Option<(u32, u32)> {
    use crate::sys::verbs::Errno;
    let (mut tx_ev, mut rx_ev) = (0u32, 0u32);
    loop {
        match channel.get_event() {
            Ok(id) if id == tx.id() => tx_ev += 1,
            Ok(id) if id == rx.id() => rx_ev += 1,
            Ok(_) => {}
            Err(Errno::EAGAIN) => break,
            Err(e) => {
                crate::error!("{}: ibv_get_cq_event failed: {}", tl, e);
                return None;
            }
        }
    }
    if tx_ev > 0 {
        tx.ack_events(tx_ev);
    }
    if rx_ev > 0 {
        rx.ack_events(rx_ev);
    }
    Some((tx_ev, rx_ev))
}
