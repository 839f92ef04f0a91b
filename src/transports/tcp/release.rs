//! What the tcp family (the tcp transport and its connection manager) does
//! differently from one UCX release to the next. Everything here is chosen
//! by the release the process runs (`crate::ucs::release::running`, asked
//! whether it has what release 1.N brought); the rest of the family uses
//! these items and asks no release questions of its own.
//!
//! Changes since 1.13, by release:
//! - 1.14: a user endpoint whose peer closed the connection hears
//!   `UCS_ERR_CONNECTION_RESET` (was `UCS_ERR_ENDPOINT_TIMEOUT`); frames
//!   already received on an accepted connection whose socket an active
//!   message handler hands to a new endpoint go on with that endpoint; the
//!   buffer pools gain `*_MAX_CHUNK_SIZE` and `*_GROW_FACTOR`, and
//!   `*_BUFS_GROW` means the first chunk's size.
//! - 1.14.1 (not 1.14.0): `UCX_TCP_MAX_BW` bounds the bandwidth an
//!   interface reports.
//! - 1.16: devices are listed in name order, bridges only with
//!   `UCX_TCP_BRIDGE_ENABLE=y`, each with its system device (libucs's
//!   topology), and the PCI bandwidth bounds the reported bandwidth too.
//! - 1.18: interfaces say they reach other hosts
//!   (`UCT_IFACE_FLAG_INTER_NODE`); connecting sockets are bound to the
//!   interface's address first (`UCX_TCP_EP_BIND_SRC_ADDR`).
//! - 1.19: the memory domain reports no registration.

use crate::abi::*;
use crate::core::config::{field, parser};
use crate::ucs::release::running;
use libc::{c_int, c_uint};
use std::ffi::CStr;
use std::mem::offset_of;

// ---------------------------------------------------------------------------
// Errors and the receive path.

/// The status the error handler of a user endpoint gets when the
/// connection breaks while it is connected (the peer closed it, or an I/O
/// error).
pub fn peer_closed_status() -> ucs_status_t {
    if running().since(14) { UCS_ERR_CONNECTION_RESET } else { UCS_ERR_ENDPOINT_TIMEOUT }
}

/// Whether the frames left in the receive buffer of an accepted connection
/// follow its socket when an active-message handler gives the socket to a
/// new endpoint (they are handled on that endpoint). UCX 1.14 made them
/// follow; UCX 1.13 itself crashes there, so there is no older behaviour to
/// keep, and dropping them would lose data: every release follows.
pub const RX_FOLLOWS_SOCKET: bool = true;

// ---------------------------------------------------------------------------
// The memory domain.

/// Whether the md reports registration (REG, NEED_RKEY, host memory
/// registered and cached): up to 1.18. From 1.19 on it reports none, so
/// libucp registers nothing and packs no remote key for it (a peer running
/// the C original could not unpack one), and put targets are checked only
/// once the process registered something itself (see `put.rs`).
pub fn md_registers() -> bool {
    !running().since(19)
}

// ---------------------------------------------------------------------------
// Interface attributes.

/// Extra capability flags of every tcp interface (1.18+: it reaches other
/// hosts).
pub fn inter_node_flag() -> u64 {
    if running().since(18) { UCT_IFACE_FLAG_INTER_NODE } else { 0 }
}

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
    if running().since(16) {
        topo_of(name)
    } else {
        DeviceTopo { sys_device: UCS_SYS_DEVICE_ID_UNKNOWN, pci_bw: f64::INFINITY }
    }
}

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
pub fn inet6_loopback() -> bool {
    running().since(14)
}

/// Whether devices are listed in name order (1.16+; else in the order of
/// the `/sys/class/net` directory).
pub fn devices_sorted() -> bool {
    running().since(16)
}

// ---------------------------------------------------------------------------
// Configuration: the keys added after 1.13, where they go in the tables,
// and what they mean. The members exist in every build; libucs fills those
// whose rows the running release's table has, and the accessors below read
// only those.

/// The md settings added after 1.13 (at the end of `TcpMdConfig`).
#[repr(C)]
pub struct MdConfigExtra {
    pub bridge_enable: c_int,
}

/// The md keys after `AF_PRIO`; `at`: where [`MdConfigExtra`] sits.
pub fn md_fields(at: usize) -> Vec<ucs_config_field_t> {
    let mut v = Vec::new();
    if running().since(16) {
        v.push(field(c"BRIDGE_ENABLE", c"n", c"List bridge network devices too (they are left out by default)",
                     at + offset_of!(MdConfigExtra, bridge_enable), parser::boolean()));
    }
    v
}

/// Whether bridge devices are listed (always before 1.16).
pub fn bridges_listed(c: &MdConfigExtra) -> bool {
    !running().since(16) || c.bridge_enable != 0
}

/// The interface settings added after 1.13 (at the end of
/// `TcpIfaceConfig`).
#[repr(C)]
pub struct IfaceConfigExtra {
    /// 1.14+.
    pub tx_max_chunk_size: usize,
    pub tx_grow_factor: f64,
    pub rx_max_chunk_size: usize,
    pub rx_grow_factor: f64,
    /// 1.14.1+.
    pub max_bw: f64,
    /// 1.18+.
    pub ep_bind_src_addr: c_int,
}

/// The text of `UCX_TCP_TX_BUFS_GROW`.
pub fn tx_bufs_grow_doc() -> &'static CStr {
    if running().since(14) {
        c"Send buffers in the first chunk of the pool (0: the transport chooses)"
    } else {
        c"Send buffers added when the pool grows (0: the transport chooses)"
    }
}

/// The text of `UCX_TCP_RX_BUFS_GROW`.
pub fn rx_bufs_grow_doc() -> &'static CStr {
    if running().since(14) {
        c"Receive buffers in the first chunk of the pool (0: the transport chooses)"
    } else {
        c"Receive buffers added when the pool grows (0: the transport chooses)"
    }
}

/// The keys after `TX_BUFS_GROW`; `at`: where [`IfaceConfigExtra`] sits.
pub fn tx_pool_fields(at: usize) -> Vec<ucs_config_field_t> {
    let mut v = Vec::new();
    if running().since(14) {
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
    }
    v
}

/// The keys after `RX_BUFS_GROW`.
pub fn rx_pool_fields(at: usize) -> Vec<ucs_config_field_t> {
    let mut v = Vec::new();
    if running().since(14) {
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
    }
    v
}

/// Whether `UCX_TCP_MAX_BW` exists: from 1.14.1 on (1.14.0 has none).
fn has_max_bw() -> bool {
    let r = running();
    r.since(15) || (r.since(14) && r.patch >= 1)
}

/// The keys after `PORT_RANGE`.
pub fn port_range_fields(at: usize) -> Vec<ucs_config_field_t> {
    let mut v = Vec::new();
    if has_max_bw() {
        v.push(field(c"MAX_BW", c"2200MBs",
                     c"Most bandwidth an interface reports (the TCP stack's processing bounds it); 'auto': no bound",
                     at + offset_of!(IfaceConfigExtra, max_bw), parser::bw()));
    }
    v
}

/// The keys after `KEEPINTVL` (the last of UCX's own).
pub fn keepalive_fields(at: usize) -> Vec<ucs_config_field_t> {
    let mut v = Vec::new();
    if running().since(18) {
        v.push(field(c"EP_BIND_SRC_ADDR", c"try",
                     c"Bind a connecting socket to the address of the interface before it connects to the peer",
                     at + offset_of!(IfaceConfigExtra, ep_bind_src_addr), parser::ternary()));
    }
    v
}

/// Check the pool settings added in 1.14 as UCX's memory pools check
/// theirs when an interface opens: a growth factor below 1, or a chunk too
/// small for one buffer of `tx_buf`/`rx_buf` bytes, is refused.
pub fn check_pools(c: &IfaceConfigExtra, tx_buf: usize, rx_buf: usize) -> Result<(), ucs_status_t> {
    /// What a chunk of UCX's pools needs besides its buffers (chunk and
    /// element headers, alignment), about.
    const CHUNK_OVERHEAD: usize = 64;
    if !running().since(14) {
        return Ok(());
    }
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
    Ok(())
}

/// The bound `UCX_TCP_MAX_BW` puts on the reported bandwidth (B/s;
/// infinite for "auto" and before 1.14.1).
pub fn max_bw(c: &IfaceConfigExtra) -> f64 {
    if !has_max_bw() {
        return f64::INFINITY;
    }
    // libucs stores "auto" as -2.0.
    if c.max_bw as isize == -2 { f64::MAX } else { c.max_bw }
}

/// Whether a connecting socket is bound to the interface's address first.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
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
    if !running().since(18) {
        return BindSrc::No;
    }
    match c.ep_bind_src_addr as ucs_ternary_auto_value_t {
        UCS_YES => BindSrc::Yes,
        UCS_NO => BindSrc::No,
        _ => BindSrc::Try,
    }
}

/// Whether a loopback peer that passed the namespace checks is reachable:
/// not in 1.20, whose check then looks for a route to an address read out
/// of the loopback device address (which holds none) and finds none; 1.21
/// stops after the namespace checks again.
pub fn loopback_routable() -> bool {
    running().minor != 20
}

/// `USER_TIMEOUT` (1.22+, for the tcp transport and its CM): how long sent
/// data may stay unacknowledged before the kernel closes the socket
/// (`TCP_USER_TIMEOUT`); "auto" leaves the system's default.
pub fn user_timeout_rows(offset: usize) -> Vec<ucs_config_field_t> {
    if !running().since(22) {
        return Vec::new();
    }
    vec![crate::core::config::field(c"USER_TIMEOUT", c"auto",
                                     c"Longest time sent data may stay unacknowledged before TCP closes the\n\
                                       socket (TCP_USER_TIMEOUT); auto: the system's default.",
                                     offset, crate::core::config::parser::time_units())]
}

/// The user timeout a parsed `USER_TIMEOUT` asks for, in milliseconds
/// (Some(0): no timeout), or None to leave the system's default (also on
/// releases without the key, whose field stays unfilled).
pub fn user_timeout_ms(value: u64) -> Option<u32> {
    if !running().since(22) || value == crate::core::config::TIME_AUTO {
        return None;
    }
    if value == crate::core::config::TIME_INF {
        return Some(0);
    }
    let ms = crate::ucs::clocks_to_secs(value) * 1000.0;
    Some(if ms < 1.0 { 1 } else if ms > i32::MAX as f64 { i32::MAX as u32 } else { ms as u32 })
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
        let r = running();
        let md = names(md_fields(0));
        let tx = names(tx_pool_fields(0));
        let bw = names(port_range_fields(0));
        let last = names(keepalive_fields(0));
        assert_eq!(md, if r.since(16) { vec!["BRIDGE_ENABLE"] } else { vec![] });
        assert_eq!(tx.len(), if r.since(14) { 2 } else { 0 });
        assert_eq!(bw, if has_max_bw() { vec!["MAX_BW"] } else { vec![] });
        assert_eq!(last, if r.since(18) { vec!["EP_BIND_SRC_ADDR"] } else { vec![] });
    }

    #[test]
    fn statuses_and_flags() {
        if running().since(14) {
            assert_eq!(peer_closed_status(), UCS_ERR_CONNECTION_RESET);
        } else {
            assert_eq!(peer_closed_status(), UCS_ERR_ENDPOINT_TIMEOUT);
        }
        assert_eq!(inter_node_flag() != 0, running().since(18));
    }
}
