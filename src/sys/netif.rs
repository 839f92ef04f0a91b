//! Network devices: their addresses (`getifaddrs`, through nix), their link
//! speed, link type and MTU (ioctls, through libc: nix has no wrapper for
//! these requests), whether they carry the default route, and the system's
//! listen backlog limit. These log their own failures (warnings), as UCX's
//! interface helpers do.

use super::addr::{SockAddr, AF_INET, AF_INET6};
use super::socket::Socket;
use crate::abi::*;
use nix::ifaddrs::getifaddrs;
use nix::net::if_::InterfaceFlags;

/// The first address of family `af` of an active (up and running)
/// interface, skipping IPv6 loopback and link-local addresses, as UCX's
/// `ucs_netif_get_addr` picks it.
pub fn netif_addr(if_name: &str, af: u16, v6_loopback: bool) -> Option<SockAddr> {
    let list = match getifaddrs() {
        Ok(l) => l,
        Err(e) => {
            crate::warn!("getifaddrs error: {}", super::errno_str(e as i32));
            return None;
        }
    };
    let active = InterfaceFlags::IFF_UP | InterfaceFlags::IFF_RUNNING;
    for ifa in list {
        if ifa.interface_name != if_name || !ifa.flags.contains(active) {
            continue;
        }
        let Some(a) = ifa.address.as_ref().and_then(SockAddr::from_nix) else { continue };
        if a.family == AF_INET6 && ((a.is_loopback() && !v6_loopback) || a.is_link_local_v6()) {
            continue;
        }
        if a.family == af {
            return Some(a);
        }
    }
    None
}

/// The network devices, in `/sys/class/net` order, that have an address of
/// one of the families.
pub fn active_devices(afs: &[u16], v6_loopback: bool) -> Result<Vec<String>, ucs_status_t> {
    let dir = match std::fs::read_dir("/sys/class/net") {
        Ok(d) => d,
        Err(e) => {
            crate::error!("opendir(/sys/class/net) failed: {}", e);
            return Err(UCS_ERR_IO_ERROR);
        }
    };
    let mut out = Vec::new();
    for entry in dir.flatten() {
        if !entry.file_type().is_ok_and(|t| t.is_symlink()) {
            continue;
        }
        let name = entry.file_name().to_string_lossy().into_owned();
        if afs.iter().any(|&af| netif_addr(&name, af, v6_loopback).is_some()) {
            out.push(name);
        }
    }
    Ok(out)
}

/// Sort device names as `scandir(3)` with `alphasort` does: by
/// `strcoll(3)`, in the collation of the process's locale.
pub fn sort_names(names: &mut [String]) {
    let c: Vec<std::ffi::CString> =
        names.iter().map(|n| std::ffi::CString::new(n.as_str()).unwrap_or_default()).collect();
    let mut idx: Vec<usize> = (0..names.len()).collect();
    // SAFETY: both arguments are NUL-terminated strings alive for the call.
    idx.sort_by(|&a, &b| unsafe { libc::strcoll(c[a].as_ptr(), c[b].as_ptr()) }.cmp(&0));
    let sorted: Vec<String> = idx.iter().map(|&i| std::mem::take(&mut names[i])).collect();
    for (d, s) in names.iter_mut().zip(sorted) {
        *d = s;
    }
}

/// Whether network device `name` is a bridge (its sysfs entry has a
/// `bridge` directory).
pub fn is_bridge(name: &str) -> bool {
    std::fs::metadata(format!("/sys/class/net/{name}/bridge")).is_ok_and(|m| m.is_dir())
}

/// The name of the device that owns the IP address of `addr` (the port is
/// ignored): what UCX reports as the device of a connected socket.
pub fn name_of_address(addr: &SockAddr) -> nix::Result<Option<String>> {
    for ifa in getifaddrs()? {
        let Some(a) = ifa.address.as_ref().and_then(SockAddr::from_nix) else { continue };
        if a.family == addr.family && a.ip_bytes() == addr.ip_bytes() {
            return Ok(Some(ifa.interface_name));
        }
    }
    Ok(None)
}

fn ifreq_for(if_name: &str) -> libc::ifreq {
    // SAFETY: all-zero is a valid ifreq.
    let mut ifr: libc::ifreq = unsafe { std::mem::zeroed() };
    for (d, s) in ifr.ifr_name.iter_mut().zip(if_name.as_bytes().iter().take(libc::IFNAMSIZ - 1)) {
        *d = *s as libc::c_char;
    }
    ifr
}

/// One interface ioctl on a scratch socket. `ifr` must be what `req`
/// expects (for SIOCETHTOOL: `ifru_data` points to a live ethtool command
/// block).
fn netif_ioctl(req: libc::c_ulong, ifr: &mut libc::ifreq) -> bool {
    let Ok(sock) = Socket::stream(AF_INET, false) else { return false };
    // SAFETY: `ifr` is a live ifreq holding the device name; the requests
    // used here read or fill it (SIOCETHTOOL through the command block
    // its data member points to, which the caller keeps alive).
    unsafe { libc::ioctl(sock.fd(), req, ifr as *mut libc::ifreq) == 0 }
}

/// Latency (s) and bandwidth (B/s) of a network device, from its link
/// speed, MTU and link-layer framing, as UCX estimates them.
pub fn netif_caps(if_name: &str) -> (f64, f64) {
    const ETHTOOL_GSET: u32 = 1;
    #[repr(C)]
    struct EthtoolCmd {
        cmd: u32,
        supported: u32,
        advertising: u32,
        speed: u16,
        duplex: u8,
        port: u8,
        phy_address: u8,
        transceiver: u8,
        autoneg: u8,
        mdio_support: u8,
        maxtxpkt: u32,
        maxrxpkt: u32,
        speed_hi: u16,
        eth_tp_mdix: u8,
        eth_tp_mdix_ctrl: u8,
        lp_advertising: u32,
        reserved: [u32; 2],
    }
    // SAFETY: all-zero is a valid command block.
    let mut ecmd: EthtoolCmd = unsafe { std::mem::zeroed() };
    ecmd.cmd = ETHTOOL_GSET;
    let mut ifr = ifreq_for(if_name);
    ifr.ifr_ifru.ifru_data = &mut ecmd as *mut EthtoolCmd as *mut libc::c_char;
    let mut speed_mbps: u32 = 0;
    let mut known = false;
    if netif_ioctl(libc::SIOCETHTOOL, &mut ifr) {
        speed_mbps = ((ecmd.speed_hi as u32) << 16) | ecmd.speed as u32;
        known = speed_mbps != u32::MAX;
    }
    if !known {
        speed_mbps = 100;
        crate::debug!("speed of {} is UNKNOWN, assuming {} Mbps", if_name, speed_mbps);
    }
    let mut ifr = ifreq_for(if_name);
    let ether_type = if netif_ioctl(libc::SIOCGIFHWADDR, &mut ifr) {
        // SAFETY: SIOCGIFHWADDR filled the hardware address member.
        unsafe { ifr.ifr_ifru.ifru_hwaddr.sa_family }
    } else {
        libc::ARPHRD_ETHER
    };
    let mut ifr = ifreq_for(if_name);
    let mtu = if netif_ioctl(libc::SIOCGIFMTU, &mut ifr) {
        // SAFETY: SIOCGIFMTU filled the mtu member.
        unsafe { ifr.ifr_ifru.ifru_mtu as f64 }
    } else {
        1500.0
    };
    let ll_headers: f64 = match ether_type {
        // preamble, start of frame, MACs and ethertype, CRC, inter-packet gap
        libc::ARPHRD_ETHER => (7 + 1 + 14 + 4 + 12) as f64,
        // LRH, GRH, BTH, DETH, IPoIB, ICRC, VCRC, delimiter
        libc::ARPHRD_INFINIBAND => (8 + 40 + 12 + 8 + 4 + 20 + 4 + 2 + 2) as f64,
        _ => 0.0,
    };
    let speed = speed_mbps as f64 * 1e6;
    let latency = 576.0 / speed + 5.2e-6;
    let bandwidth = speed / 8.0 * (mtu - 40.0) / (mtu + ll_headers);
    (latency, bandwidth)
}

/// Whether the device carries the default route (`/proc/net/route`).
pub fn netif_is_default(if_name: &str) -> Result<bool, ucs_status_t> {
    let text = match std::fs::read_to_string("/proc/net/route") {
        Ok(t) => t,
        Err(e) => {
            crate::debug!("failed to open '/proc/net/route': {}", e);
            return Err(UCS_ERR_IO_ERROR);
        }
    };
    for line in text.lines() {
        let cols: Vec<&str> = line.split_whitespace().collect();
        if cols.len() >= 8 && cols[0] == if_name && u32::from_str_radix(cols[7], 16) == Ok(0) {
            return Ok(true);
        }
    }
    Ok(false)
}

/// `net.core.somaxconn`, the most a listen backlog can be (`SOMAXCONN`
/// when it cannot be read).
pub fn somaxconn() -> i32 {
    std::fs::read_to_string("/proc/sys/net/core/somaxconn").ok()
        .and_then(|s| s.trim().parse().ok()).unwrap_or(libc::SOMAXCONN)
}

/// `net.rdma_ucm.max_backlog`, the most an RDMA CM listen backlog can be
/// (None when it cannot be read: no RDMA CM module).
pub fn rdma_cm_max_backlog() -> Option<i32> {
    std::fs::read_to_string("/proc/sys/net/rdma_ucm/max_backlog").ok().and_then(|s| s.trim().parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_is_listed() {
        let devs = active_devices(&[AF_INET, AF_INET6], false).unwrap();
        assert!(devs.iter().any(|d| d == "lo"));
        let a = netif_addr("lo", AF_INET, false).expect("lo has 127.0.0.1");
        assert!(a.is_loopback());
        assert_eq!(netif_addr("no-such-device", AF_INET, false), None);
        assert!(!netif_is_default("lo").unwrap());
        assert!(!is_bridge("lo"));
        let mut v = vec!["lo".to_string(), "eth1".into(), "eth0".into(), "br0".into()];
        sort_names(&mut v);
        assert_eq!(v, ["br0", "eth0", "eth1", "lo"]);
        assert_eq!(name_of_address(&SockAddr::v4([127, 0, 0, 1], 9)).unwrap().as_deref(), Some("lo"));
        assert_eq!(name_of_address(&SockAddr::v4([0, 0, 0, 0], 9)).unwrap(), None);
    }

    #[test]
    fn caps_and_limits() {
        let (lat, bw) = netif_caps("lo");
        assert!(lat > 0.0 && bw > 0.0);
        assert!(somaxconn() > 0);
    }
}
