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
/// no GID table, iWARP, or an all-zero GID at `gid_index`.
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
        Ok(g) if g.iter().all(|&b| b == 0) => Some(format!("GID {} is all zero", gid_index)),
        Ok(_) => None,
        Err(e) => Some(format!("ibv_query_gid({}) failed: {}", gid_index, e)),
    }
}
