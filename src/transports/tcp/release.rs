//! What the tcp family (the tcp transport and its connection manager) does
//! differently from one UCX release to the next. Everything here is chosen
//! by the `ucx_since_1_NN` flags of the build (the release that brought the
//! change); the rest of the family uses these items and has no such flags
//! of its own.
//!
//! Changes since 1.13, by release:
//! - 1.14: a user endpoint whose peer closed the connection hears
//!   `UCS_ERR_CONNECTION_RESET` (was `UCS_ERR_ENDPOINT_TIMEOUT`); frames
//!   already received on an accepted connection whose socket an active
//!   message handler hands to a new endpoint go on with that endpoint; the
//!   buffer pools gain `*_MAX_CHUNK_SIZE` and `*_GROW_FACTOR`, and
//!   `*_BUFS_GROW` means the first chunk's size.
//! - 1.15: `UCX_TCP_MAX_BW` bounds the bandwidth an interface reports.
//! - 1.16: devices are listed in name order, bridges only with
//!   `UCX_TCP_BRIDGE_ENABLE=y`, each with its system device (libucs's
//!   topology), and the PCI bandwidth bounds the reported bandwidth too.
//! - 1.18: interfaces say they reach other hosts
//!   (`UCT_IFACE_FLAG_INTER_NODE`); connecting sockets are bound to the
//!   interface's address first (`UCX_TCP_EP_BIND_SRC_ADDR`).

use crate::abi::*;
#[cfg(any(ucx_since_1_14, ucx_since_1_15, ucx_since_1_16, ucx_since_1_18))]
use crate::core::config::{field, parser};
#[allow(unused_imports)]
use libc::{c_int, c_uint};
use std::ffi::CStr;
#[allow(unused_imports)]
use std::mem::offset_of;

// ---------------------------------------------------------------------------
// Errors and the receive path.

/// The status the error handler of a user endpoint gets when the
/// connection breaks while it is connected (the peer closed it, or an I/O
/// error).
#[cfg(ucx_since_1_14)]
pub const PEER_CLOSED_STATUS: ucs_status_t = UCS_ERR_CONNECTION_RESET;
#[cfg(not(ucx_since_1_14))]
pub const PEER_CLOSED_STATUS: ucs_status_t = UCS_ERR_ENDPOINT_TIMEOUT;

/// Whether the frames left in the receive buffer of an accepted connection
/// follow its socket when an active-message handler gives the socket to a
/// new endpoint (they are handled on that endpoint). UCX 1.14 made them
/// follow; UCX 1.13 itself crashes there, so there is no older behaviour to
/// keep, and dropping them would lose data: every release follows.
pub const RX_FOLLOWS_SOCKET: bool = true;

// ---------------------------------------------------------------------------
// Interface attributes.

/// Extra capability flags of every tcp interface.
#[cfg(ucx_since_1_18)]
pub const INTER_NODE_FLAG: u64 = UCT_IFACE_FLAG_INTER_NODE;
#[cfg(not(ucx_since_1_18))]
pub const INTER_NODE_FLAG: u64 = 0;

/// What the device list and the interface attributes learn of a network
/// device's hardware: its system device and the bandwidth of its PCI link
/// (infinite when unknown).
pub struct DeviceTopo {
    pub sys_device: ucs_sys_device_t,
    pub pci_bw: f64,
}

/// The hardware behind network device `name`, as libucs's topology sees it
/// (from 1.16 on; before, nothing is known).
pub fn device_topo(name: &str) -> DeviceTopo {
    #[cfg(ucx_since_1_16)]
    {
        topo_of(name)
    }
    #[cfg(not(ucx_since_1_16))]
    {
        let _ = name;
        DeviceTopo { sys_device: UCS_SYS_DEVICE_ID_UNKNOWN, pci_bw: f64::INFINITY }
    }
}

#[cfg(ucx_since_1_16)]
fn topo_of(name: &str) -> DeviceTopo {
    /// The priority of a network device's name for its system device.
    const NAME_PRIORITY: c_uint = 10;
    let unknown = DeviceTopo { sys_device: UCS_SYS_DEVICE_ID_UNKNOWN, pci_bw: f64::INFINITY };
    let Ok(cname) = std::ffi::CString::new(name) else { return unknown };
    match crate::ucs::netif_topology(&cname, NAME_PRIORITY) {
        Some((sys_device, pci_bw)) => DeviceTopo { sys_device, pci_bw },
        None => unknown,
    }
}

/// Whether an interface's IPv6 loopback address (`::1`) makes it usable
/// (from 1.14; before, only link-local addresses and it were skipped).
pub const INET6_LOOPBACK: bool = cfg!(ucx_since_1_14);

/// Whether devices are listed in name order (else in the order of the
/// `/sys/class/net` directory).
pub const DEVICES_SORTED: bool = cfg!(ucx_since_1_16);

// ---------------------------------------------------------------------------
// Configuration: the keys added after 1.13, where they go in the tables,
// and what they mean.

/// The md settings added after 1.13 (at the end of `TcpMdConfig`).
#[repr(C)]
pub struct MdConfigExtra {
    #[cfg(ucx_since_1_16)]
    pub bridge_enable: c_int,
}

/// The md keys after `AF_PRIO`; `at`: where [`MdConfigExtra`] sits.
pub fn md_fields(at: usize) -> Vec<ucs_config_field_t> {
    #[allow(unused_mut)]
    let mut v = Vec::new();
    #[cfg(ucx_since_1_16)]
    v.push(field(c"BRIDGE_ENABLE", c"n", c"List bridge network devices too (they are left out by default)",
                 at + offset_of!(MdConfigExtra, bridge_enable), parser::boolean()));
    let _ = at;
    v
}

/// Whether bridge devices are listed.
pub fn bridges_listed(c: &MdConfigExtra) -> bool {
    #[cfg(ucx_since_1_16)]
    {
        c.bridge_enable != 0
    }
    #[cfg(not(ucx_since_1_16))]
    {
        let _ = c;
        true
    }
}

/// The interface settings added after 1.13 (at the end of
/// `TcpIfaceConfig`).
#[repr(C)]
pub struct IfaceConfigExtra {
    #[cfg(ucx_since_1_14)]
    pub tx_max_chunk_size: usize,
    #[cfg(ucx_since_1_14)]
    pub tx_grow_factor: f64,
    #[cfg(ucx_since_1_14)]
    pub rx_max_chunk_size: usize,
    #[cfg(ucx_since_1_14)]
    pub rx_grow_factor: f64,
    #[cfg(ucx_since_1_15)]
    pub max_bw: f64,
    #[cfg(ucx_since_1_18)]
    pub ep_bind_src_addr: c_int,
}

/// The text of `UCX_TCP_TX_BUFS_GROW` and `UCX_TCP_RX_BUFS_GROW`.
#[cfg(ucx_since_1_14)]
pub const TX_BUFS_GROW_DOC: &CStr = c"Send buffers in the first chunk of the pool (0: the transport chooses)";
#[cfg(ucx_since_1_14)]
pub const RX_BUFS_GROW_DOC: &CStr = c"Receive buffers in the first chunk of the pool (0: the transport chooses)";
#[cfg(not(ucx_since_1_14))]
pub const TX_BUFS_GROW_DOC: &CStr = c"Send buffers added when the pool grows (0: the transport chooses)";
#[cfg(not(ucx_since_1_14))]
pub const RX_BUFS_GROW_DOC: &CStr = c"Receive buffers added when the pool grows (0: the transport chooses)";

/// The keys after `TX_BUFS_GROW`; `at`: where [`IfaceConfigExtra`] sits.
pub fn tx_pool_fields(at: usize) -> Vec<ucs_config_field_t> {
    #[allow(unused_mut)]
    let mut v = Vec::new();
    #[cfg(ucx_since_1_14)]
    v.extend([
        field(c"TX_MAX_CHUNK_SIZE", c"128m",
              c"Most memory the send buffer pool takes at once (checked as UCX checks it; buffers here are\n\
                allocated one at a time)",
              at + offset_of!(IfaceConfigExtra, tx_max_chunk_size), parser::memunits()),
        field(c"TX_GROW_FACTOR", c"1.0",
              c"How much larger each new chunk of the send buffer pool is than the one before (at least 1;\n\
                checked as UCX checks it)",
              at + offset_of!(IfaceConfigExtra, tx_grow_factor), parser::double()),
    ]);
    let _ = at;
    v
}

/// The keys after `RX_BUFS_GROW`.
pub fn rx_pool_fields(at: usize) -> Vec<ucs_config_field_t> {
    #[allow(unused_mut)]
    let mut v = Vec::new();
    #[cfg(ucx_since_1_14)]
    v.extend([
        field(c"RX_MAX_CHUNK_SIZE", c"128m",
              c"Most memory the receive buffer pool takes at once (checked as UCX checks it; buffers here are\n\
                allocated one at a time)",
              at + offset_of!(IfaceConfigExtra, rx_max_chunk_size), parser::memunits()),
        field(c"RX_GROW_FACTOR", c"1.0",
              c"How much larger each new chunk of the receive buffer pool is than the one before (at least 1;\n\
                checked as UCX checks it)",
              at + offset_of!(IfaceConfigExtra, rx_grow_factor), parser::double()),
    ]);
    let _ = at;
    v
}

/// The keys after `PORT_RANGE`.
pub fn port_range_fields(at: usize) -> Vec<ucs_config_field_t> {
    #[allow(unused_mut)]
    let mut v = Vec::new();
    #[cfg(ucx_since_1_15)]
    v.push(field(c"MAX_BW", c"2200MBs",
                 c"Most bandwidth an interface reports (the TCP stack's processing bounds it); 'auto': no bound",
                 at + offset_of!(IfaceConfigExtra, max_bw), parser::bw()));
    let _ = at;
    v
}

/// The keys after `KEEPINTVL` (the last of UCX's own).
pub fn keepalive_fields(at: usize) -> Vec<ucs_config_field_t> {
    #[allow(unused_mut)]
    let mut v = Vec::new();
    #[cfg(ucx_since_1_18)]
    v.push(field(c"EP_BIND_SRC_ADDR", c"try",
                 c"Bind a connecting socket to the address of the interface before it connects to the peer",
                 at + offset_of!(IfaceConfigExtra, ep_bind_src_addr), parser::ternary()));
    let _ = at;
    v
}

/// Check the pool settings added after 1.13 as UCX's memory pools check
/// theirs when an interface opens: a growth factor below 1, or a chunk too
/// small for one buffer of `tx_buf`/`rx_buf` bytes, is refused.
pub fn check_pools(c: &IfaceConfigExtra, tx_buf: usize, rx_buf: usize) -> Result<(), ucs_status_t> {
    #[cfg(ucx_since_1_14)]
    {
        /// What a chunk of UCX's pools needs besides its buffers (chunk and
        /// element headers, alignment), about.
        const CHUNK_OVERHEAD: usize = 64;
        for (factor, chunk, buf) in [(c.tx_grow_factor, c.tx_max_chunk_size, tx_buf),
                                     (c.rx_grow_factor, c.rx_max_chunk_size, rx_buf)] {
            if factor.is_nan() || factor < 1.0 {
                crate::error!("Invalid memory pool parameter(s)");
                return Err(UCS_ERR_INVALID_PARAM);
            }
            if chunk < buf.saturating_add(CHUNK_OVERHEAD) {
                crate::error!("Invalid memory pool parameter: chunk size is too small ({})", chunk);
                return Err(UCS_ERR_INVALID_PARAM);
            }
        }
    }
    let _ = (c, tx_buf, rx_buf);
    Ok(())
}

/// The bound `UCX_TCP_MAX_BW` puts on the reported bandwidth (B/s;
/// infinite for "auto" and before 1.15).
pub fn max_bw(c: &IfaceConfigExtra) -> f64 {
    #[cfg(ucx_since_1_15)]
    {
        // libucs stores "auto" as -2.0.
        if c.max_bw as isize == -2 { f64::MAX } else { c.max_bw }
    }
    #[cfg(not(ucx_since_1_15))]
    {
        let _ = c;
        f64::INFINITY
    }
}

/// Whether a connecting socket is bound to the interface's address first.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[cfg_attr(not(ucx_since_1_18), allow(dead_code))]
pub enum BindSrc {
    /// Not bound.
    No,
    /// Bound if possible (failures are diagnostics).
    Try,
    /// Bound, or the connection fails (and a strict reverse-path filter on
    /// the device is refused).
    Yes,
}

/// `UCX_TCP_EP_BIND_SRC_ADDR` (no binding before 1.18).
pub fn bind_src(c: &IfaceConfigExtra) -> BindSrc {
    #[cfg(ucx_since_1_18)]
    {
        match c.ep_bind_src_addr as ucs_ternary_auto_value_t {
            UCS_YES => BindSrc::Yes,
            UCS_NO => BindSrc::No,
            _ => BindSrc::Try,
        }
    }
    #[cfg(not(ucx_since_1_18))]
    {
        let _ = c;
        BindSrc::No
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_of_the_release() {
        let names = |v: Vec<ucs_config_field_t>| -> Vec<String> {
            // SAFETY: the names are static C strings.
            v.iter().map(|f| unsafe { CStr::from_ptr(f.name) }.to_string_lossy().into_owned()).collect()
        };
        let md = names(md_fields(0));
        let tx = names(tx_pool_fields(0));
        let bw = names(port_range_fields(0));
        let last = names(keepalive_fields(0));
        assert_eq!(md, if cfg!(ucx_since_1_16) { vec!["BRIDGE_ENABLE"] } else { vec![] });
        assert_eq!(tx.len(), if cfg!(ucx_since_1_14) { 2 } else { 0 });
        assert_eq!(bw, if cfg!(ucx_since_1_15) { vec!["MAX_BW"] } else { vec![] });
        assert_eq!(last, if cfg!(ucx_since_1_18) { vec!["EP_BIND_SRC_ADDR"] } else { vec![] });
    }

    #[test]
    fn statuses_and_flags() {
        if cfg!(ucx_since_1_14) {
            assert_eq!(PEER_CLOSED_STATUS, UCS_ERR_CONNECTION_RESET);
        } else {
            assert_eq!(PEER_CLOSED_STATUS, UCS_ERR_ENDPOINT_TIMEOUT);
        }
        assert_eq!(INTER_NODE_FLAG != 0, cfg!(ucx_since_1_18));
    }
}
