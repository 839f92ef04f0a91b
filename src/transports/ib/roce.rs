//! RoCE ports (an Ethernet link layer): which GID an interface uses, the
//! RoCE version and address family that go with it, and which RoCE peers it
//! reaches. The rules follow the C original of the running release
//! ([`super::release`] answers the release questions; the facts are in
//! `docs/rdma/roce-facts.md`).
//!
//! - A GID's RoCE version is read from the port's sysfs directory
//!   (`gid_attrs/types/<i>`: "IB/RoCE v1" or "RoCE v2"; unreadable: v1), its
//!   address family from its bytes (IPv4-mapped or not), its network
//!   interface from `gid_attrs/ndevs/<i>`.
//! - `UCX_IB_GID_INDEX=auto` walks the table once per preference (RoCE v2
//!   before v1, IPv4 before IPv6; from 1.21 global IPv6 before link-local)
//!   and takes the first entry of that kind that is valid and accepts a test
//!   address handle; with none, index 0 counted as v1/IPv4.
//! - Reachability: up to 1.18 by IP subnet when asked (`ROCE_LOCAL_SUBNET`),
//!   every peer otherwise; from 1.19 as `ROCE_REACHABILITY_MODE` says, by
//!   default through the host's routes on the GID's interface.

use super::release;
use crate::sys::verbs::{raw, Ah, Context, Pd};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Device address flag: the address family of the GID is IPv6.
pub const FLAG_IPV6: u8 = 1 << 4;
/// The RoCE version sits in bits 5..7 of the device address flags.
pub const VERSION_SHIFT: u8 = 5;
/// The DLID UCX sets on RoCE address handles (plus the path).
pub const ROCE_DLID_BASE: u16 = 0xc000;

/// A RoCE version as the device address carries it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Version {
    V1 = 0,
    V1_5 = 1,
    V2 = 2,
    Any = 3,
}

impl Version {
    fn from_bits(b: u8) -> Version {
        match b & 3 {
            0 => Version::V1,
            1 => Version::V1_5,
            2 => Version::V2,
            _ => Version::Any,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Version::V1 => "RoCE v1",
            Version::V1_5 => "RoCE v1.5",
            Version::V2 => "RoCE v2",
            Version::Any => "any RoCE version",
        }
    }
}

/// A RoCE GID with what the device address says of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RoceGid {
    pub gid: [u8; 16],
    pub version: Version,
    pub ipv6: bool,
}

impl RoceGid {
    /// The version and family bits of a device address's flags byte.
    pub fn flag_bits(&self) -> u8 {
        ((self.version as u8) << VERSION_SHIFT) | if self.ipv6 { FLAG_IPV6 } else { 0 }
    }
    /// Read back from a flags byte and the 16 GID bytes.
    pub fn from_flags(flags: u8, gid: [u8; 16]) -> RoceGid {
        RoceGid { gid, version: Version::from_bits(flags >> VERSION_SHIFT), ipv6: flags & FLAG_IPV6 != 0 }
    }
    /// The IP address inside the GID, of the family the address claims.
    pub fn ip(&self) -> IpAddr {
        if self.ipv6 {
            IpAddr::V6(Ipv6Addr::from(self.gid))
        } else {
            IpAddr::V4(Ipv4Addr::new(self.gid[12], self.gid[13], self.gid[14], self.gid[15]))
        }
    }
}

/// Whether a GID holds an IPv4 address (IPv4-mapped, or the IPv4 multicast
/// form `ff0e::ffff:a.b.c.d`).
pub fn is_ipv4(g: &[u8; 16]) -> bool {
    let mapped = g[..10].iter().all(|&b| b == 0);
    let mcast = g[..4] == [0xff, 0x0e, 0, 0] && g[4..10].iter().all(|&b| b == 0);
    (mapped || mcast) && g[10] == 0xff && g[11] == 0xff
}

/// Whether a GID is an IPv6 link-local address (fe80::/10).
pub fn is_link_local(g: &[u8; 16]) -> bool {
    g[0] == 0xfe && g[1] & 0xc0 == 0x80
}

/// The port's sysfs directory, where the original reads it.
fn port_dir(dev: &str, port: u8) -> String {
    format!("/sys/class/infiniband/{dev}/ports/{port}")
}

/// The RoCE version of GID entry `i` (sysfs; an unreadable file is v1, as
/// in the original; text of another kind is an error).
pub fn gid_version(dev: &str, port: u8, i: u32) -> Result<Version, String> {
    let path = format!("{}/gid_attrs/types/{i}", port_dir(dev, port));
    let Ok(text) = std::fs::read(&path) else { return Ok(Version::V1) };
    let text = &text[..text.len().min(15)];
    if text.starts_with(b"IB/RoCE v1") {
        Ok(Version::V1)
    } else if text.starts_with(b"RoCE v2") {
        Ok(Version::V2)
    } else {
        Err(format!("failed to parse gid type '{}' ({path})", String::from_utf8_lossy(text).trim()))
    }
}

/// The network interface of GID entry `i`, if sysfs names one.
pub fn gid_ndev(dev: &str, port: u8, i: u32) -> Option<String> {
    let path = format!("{}/gid_attrs/ndevs/{i}", port_dir(dev, port));
    let name = std::fs::read_to_string(path).ok()?;
    let name = name.trim();
    (!name.is_empty()).then(|| name.to_string())
}

/// The GID an interface uses on a RoCE port.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Selected {
    pub index: u8,
    pub gid: RoceGid,
    /// Its network interface (sysfs), when there is one.
    pub ndev: Option<String>,
}

/// One entry of the port's table: Ok(None) when it is not valid.
fn entry(ctx: &Context, dev: &str, port: u8, i: u32) -> Result<Option<RoceGid>, String> {
    let gid = ctx.query_gid(port, i as i32)
        .map_err(|e| format!("ibv_query_gid(dev={dev} port={port} index={i}) failed: {e}"))?;
    if !release::gid_is_valid(&gid) {
        return Ok(None);
    }
    let version = gid_version(dev, port, i)?;
    Ok(Some(RoceGid { gid, version, ipv6: !is_ipv4(&gid) }))
}

/// Whether the device accepts an address handle from entry `i` to itself
/// (the original's test of a candidate).
fn accepts_ah(pd: &Pd, port: u8, i: u32, gid: &[u8; 16]) -> bool {
    // SAFETY: all-zero is a valid ibv_ah_attr.
    let mut a: raw::ibv_ah_attr = unsafe { std::mem::zeroed() };
    a.port_num = port;
    a.is_global = 1;
    a.dlid = ROCE_DLID_BASE;
    a.grh.dgid = raw::ibv_gid { raw: *gid };
    a.grh.sgid_index = i as u8;
    a.grh.hop_limit = 255;
    a.grh.flow_label = 1;
    Ah::create(pd, &mut a).is_ok()
}

/// An `addr/len` subnet of `ROCE_SUBNETS`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Subnet {
    pub addr: IpAddr,
    pub bits: u32,
}

/// Parse one `addr/len` item.
pub fn parse_subnet(s: &str) -> Result<Subnet, String> {
    let bad = || format!("failed to parse RoCE subnet: {s}");
    let (a, l) = s.split_once('/').ok_or_else(bad)?;
    let addr: IpAddr = a.parse().map_err(|_| bad())?;
    let bits: u32 = l.parse().map_err(|_| bad())?;
    if bits > width(&addr) {
        return Err(bad());
    }
    Ok(Subnet { addr, bits })
}

/// The `ROCE_SUBNETS` filter of GID selection (1.18+).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum SubnetFilter {
    #[default]
    All,
    Allow(Vec<Subnet>),
    Deny(Vec<Subnet>),
}

impl SubnetFilter {
    fn admits(&self, g: &RoceGid) -> bool {
        let ip = g.ip();
        let hit = |l: &[Subnet]| l.iter().any(|s| same_prefix(&s.addr, &ip, s.bits));
        match self {
            SubnetFilter::All => true,
            SubnetFilter::Allow(l) => hit(l),
            SubnetFilter::Deny(l) => !hit(l),
        }
    }
}

fn width(a: &IpAddr) -> u32 {
    if a.is_ipv4() { 32 } else { 128 }
}

fn ip_bytes(a: &IpAddr) -> Vec<u8> {
    match a {
        IpAddr::V4(v) => v.octets().to_vec(),
        IpAddr::V6(v) => v.octets().to_vec(),
    }
}

/// Whether two addresses of one family agree in their first `bits` bits.
pub fn same_prefix(a: &IpAddr, b: &IpAddr, bits: u32) -> bool {
    if a.is_ipv4() != b.is_ipv4() {
        return false;
    }
    let (x, y) = (ip_bytes(a), ip_bytes(b));
    let bits = bits.min(8 * x.len() as u32) as usize;
    let (full, rest) = (bits / 8, bits % 8);
    if x[..full] != y[..full] {
        return false;
    }
    rest == 0 || (x[full] ^ y[full]) >> (8 - rest) == 0
}

/// Choose the GID of a RoCE port: `explicit` (`UCX_IB_GID_INDEX`) or the
/// original's preference walk.
pub fn select_gid(ctx: &Context, pd: &Pd, dev: &str, port: u8, tbl_len: u32, explicit: Option<u32>,
                  filter: &SubnetFilter) -> Result<Selected, String> {
    if let Some(i) = explicit {
        if filter != &SubnetFilter::All {
            return Err("both GID_INDEX and ROCE_SUBNETS are specified, please select only one of them".into());
        }
        let g = entry(ctx, dev, port, i)?.ok_or_else(|| format!("invalid gid[{i}] on {dev}:{port}"))?;
        return Ok(Selected { index: i as u8, gid: g, ndev: gid_ndev(dev, port, i) });
    }
    for &(version, ipv6, link_local_ok) in release::gid_preferences() {
        for i in 0..tbl_len.min(256) {
            // An empty entry is passed over (the original up to 1.20 could
            // choose an all-zero entry of the right kind and then fail to
            // open; from 1.21 it passes over it too).
            let Some(g) = entry(ctx, dev, port, i)? else { continue };
            if g.version != version || g.ipv6 != ipv6 || (!link_local_ok && is_link_local(&g.gid)) {
                continue;
            }
            if !accepts_ah(pd, port, i, &g.gid) || !filter.admits(&g) {
                continue;
            }
            crate::debug!("{dev}:{port} using gid_index {i} ({}, {})", g.version.name(),
                          if g.ipv6 { "IPv6" } else { "IPv4" });
            return Ok(Selected { index: i as u8, gid: g, ndev: gid_ndev(dev, port, i) });
        }
    }
    if filter != &SubnetFilter::All {
        return Err("failed to find a gid which matches the ROCE_SUBNETS list".into());
    }
    // As the original: index 0, announced as RoCE v1 over IPv4.
    let gid = ctx.query_gid(port, 0).map_err(|e| format!("ibv_query_gid(dev={dev} port={port} index=0) failed: {e}"))?;
    crate::debug!("{dev}:{port}: no GID matches a preference, using gid_index 0 as RoCE v1/IPv4");
    Ok(Selected { index: 0, gid: RoceGid { gid, version: Version::V1, ipv6: false }, ndev: gid_ndev(dev, port, 0) })
}

// ---------------------------------------------------------------------------
// The settings of an interface on a RoCE port

/// The RoCE settings of an interface's configuration (`UCX_IB_*`).
#[derive(Clone, Debug, PartialEq)]
pub struct Settings {
    /// `GID_INDEX` (the md's), None for auto.
    pub gid_index: Option<u32>,
    /// `TRAFFIC_CLASS`, None for auto.
    pub traffic_class: Option<u8>,
    pub hop_limit: u8,
    pub sl: u8,
    pub local_subnet: bool,
    /// `ROCE_SUBNET_PREFIX_LEN`: None for auto, `u32::MAX` for inf.
    pub prefix_len: Option<u32>,
    pub subnets: SubnetFilter,
    /// `ROCE_REACHABILITY_MODE` (1.19+).
    pub mode: Option<Mode>,
    pub path_factor: u32,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings { gid_index: None, traffic_class: None, hop_limit: 255, sl: 0, local_subnet: false, prefix_len: None,
                   subnets: SubnetFilter::All, mode: None, path_factor: 1 }
    }
}

impl Settings {
    /// Read from an interface's IB settings (`gid_index`: the md's).
    pub fn from_config(ib: &super::config::IbIfaceConfig, gid_index: Option<u32>) -> Result<Settings, String> {
        use crate::core::config::{UNITS_AUTO, UNITS_INF};
        let prefix_len = match ib.roce_subnet_prefix_len {
            UNITS_AUTO => None,
            UNITS_INF => Some(u32::MAX),
            n => Some(n.min(u32::MAX as u64 - 1) as u32),
        };
        let subnets = if release::roce_subnets_exist() { subnet_filter(&ib.roce_subnets)? } else { SubnetFilter::All };
        let mode = match ib.roce_reachability_mode {
            0 => Mode::Route,
            1 => Mode::LocalSubnet,
            _ => Mode::All,
        };
        let mode = release::roce_reachability_modes().then_some(mode);
        Ok(Settings {
            gid_index,
            traffic_class: (ib.traffic_class != UNITS_AUTO).then_some(ib.traffic_class as u8),
            hop_limit: ib.hop_limit(),
            sl: ib.sl(),
            local_subnet: ib.roce_local_subnet != 0,
            prefix_len,
            subnets,
            mode,
            path_factor: ib.roce_path_factor,
        })
    }
}

/// `ROCE_SUBNETS` as a filter.
fn subnet_filter(l: &super::config::AllowList) -> Result<SubnetFilter, String> {
    if l.mode == 0 {
        return Ok(SubnetFilter::All);
    }
    let mut v = Vec::new();
    if !l.names.items.is_null() {
        // SAFETY: libucs filled `items` with `count` C strings.
        let names = unsafe { std::slice::from_raw_parts(l.names.items, l.names.count as usize) };
        for &n in names {
            if n.is_null() {
                continue;
            }
            // SAFETY: a NUL-terminated string libucs allocated.
            let s = unsafe { std::ffi::CStr::from_ptr(n) }.to_string_lossy();
            v.push(parse_subnet(&s)?);
        }
    }
    Ok(if l.mode == 2 { SubnetFilter::Deny(v) } else { SubnetFilter::Allow(v) })
}

/// The traffic class a RoCE port's own settings give (`tc/<port>/traffic_class`,
/// "Global tclass=N"), when sysfs has it.
fn port_tclass(dev: &str, port: u8) -> Option<u8> {
    let t = std::fs::read_to_string(format!("/sys/class/infiniband/{dev}/tc/{port}/traffic_class")).ok()?;
    let v = t.split("Global tclass=").nth(1)?;
    let n: String = v.chars().take_while(|c| c.is_ascii_digit()).collect();
    n.parse().ok()
}

/// An interface's addressing on a RoCE port.
#[derive(Clone, Debug)]
pub struct Port {
    pub reach: Reach,
    pub traffic_class: u8,
    pub hop_limit: u8,
    pub sl: u8,
    pub path_factor: u32,
    pub port: u8,
}

impl Port {
    /// Choose the GID and the rules of an interface on RoCE port `port`.
    pub fn open(ctx: &Context, pd: &Pd, dev: &str, port: u8, tbl_len: u32, s: &Settings) -> Result<Port, String> {
        let sel = select_gid(ctx, pd, dev, port, tbl_len, s.gid_index, &s.subnets)?;
        let v2 = sel.gid.version == Version::V2;
        let traffic_class = match s.traffic_class {
            Some(t) => t,
            None if v2 && release::roce_tclass_from_sysfs() => port_tclass(dev, port).unwrap_or(106),
            None if v2 => 106,
            None => 0,
        };
        let reach = Reach::new(sel, s.local_subnet, s.prefix_len, s.mode)?;
        Ok(Port { reach, traffic_class, hop_limit: s.hop_limit, sl: s.sl, path_factor: s.path_factor, port })
    }

    /// The GID index in use.
    pub fn gid_index(&self) -> u8 {
        self.reach.local.index
    }

    /// The address handle towards `dgid` on path `path_index`: always
    /// global; the path goes into the DLID (0xc000 plus the path times
    /// `ROCE_PATH_FACTOR`) and the flow label (its complement), as the
    /// original sets them.
    pub fn fill_ah(&self, a: &mut raw::ibv_ah_attr, dgid: &[u8; 16], path_index: u32) {
        let path = self.path_factor.wrapping_mul(path_index);
        a.port_num = self.port;
        a.is_global = 1;
        a.dlid = ROCE_DLID_BASE | path as u16;
        a.sl = self.sl;
        a.src_path_bits = 0;
        a.static_rate = 0;
        a.grh.dgid = raw::ibv_gid { raw: *dgid };
        a.grh.sgid_index = self.gid_index();
        a.grh.hop_limit = self.hop_limit;
        a.grh.traffic_class = self.traffic_class;
        a.grh.flow_label = !path;
    }
}

/// The device address of an interface on `port` of `ib` and, on a RoCE
/// port, its RoCE addressing. `path_mtu`: the `ibv_mtu` value the
/// interface uses; `force_global`: InfiniBand addresses carry the
/// interface id (`IS_GLOBAL`, `ADDR_TYPE`). Errors are logged as `tl`'s.
pub fn iface_addressing(ib: &super::md::IbMd, port: u8, info: &crate::sys::verbs::PortInfo, s: &Settings,
                        path_mtu: u32, force_global: bool, tl: &str)
                        -> Result<(super::rc::addr::IbDevAddr, Option<Port>), crate::abi::ucs_status_t> {
    use super::rc::addr::IbDevAddr;
    if super::device::is_roce(info) {
        let p = Port::open(&ib.ctx, &ib.pd, &ib.name, port, info.gid_tbl_len.max(0) as u32, s).map_err(|e| {
            crate::error!("{tl}: {}:{}/RoCE: {e}", ib.name, port);
            crate::abi::UCS_ERR_INVALID_PARAM
        })?;
        let addr = IbDevAddr::roce(p.reach.local.gid, path_mtu as u8);
        return Ok((addr, Some(p)));
    }
    let index = s.gid_index.unwrap_or(0);
    let gid = ib.ctx.query_gid(port, index.min(i32::MAX as u32) as i32).map_err(|e| {
        crate::error!("{tl}: ibv_query_gid({}:{}, {index}) failed: {e}", ib.name, port);
        crate::abi::UCS_ERR_IO_ERROR
    })?;
    let mut prefix = [0u8; 8];
    prefix.copy_from_slice(&gid[..8]);
    let mut if_id = [0u8; 8];
    if_id.copy_from_slice(&gid[8..]);
    Ok((IbDevAddr { lid: info.lid, subnet_prefix: prefix, if_id: force_global.then_some(if_id), path_mtu: path_mtu as u8,
                    pkey: 0xffff, gid_index: None, roce: None }, None))
}

/// ud_verbs' check of the destination GID of each datagram received on a
/// RoCE port (`UD_ETH_DGID_CHECK`): the address in the GRH area must be one
/// of the port's GIDs, or the datagram is dropped.
#[derive(Debug)]
pub struct DgidCheck {
    gids: Vec<[u8; 16]>,
    last: std::cell::Cell<[u8; 16]>,
}

/// `IBV_WC_GRH`.
const WC_GRH: u32 = 1 << 0;

impl DgidCheck {
    /// Every valid GID of the port.
    pub fn new(ctx: &Context, port: u8, tbl_len: u32) -> Result<DgidCheck, String> {
        let mut gids = Vec::new();
        for i in 0..tbl_len.min(256) {
            let g = ctx.query_gid(port, i as i32).map_err(|e| format!("ibv_query_gid(port={port} index={i}) failed: {e}"))?;
            if release::gid_is_valid(&g) {
                gids.push(g);
            }
        }
        Ok(DgidCheck { gids, last: std::cell::Cell::new([0xff; 16]) })
    }

    /// Whether 0xff goes into the first byte of each receive buffer before
    /// it is posted (1.19+ read the header's kind from it).
    pub fn marks_buffers(&self) -> bool {
        release::ud_grh_family_from_buffer()
    }

    /// Whether a datagram whose GRH area is `grh` is for us (`wc_flags`
    /// and `wc_sl` of its completion). Err: the address it was sent to.
    pub fn check(&self, grh: &[u8; 40], wc_flags: u32, wc_sl: u8) -> Result<(), String> {
        if wc_flags & WC_GRH == 0 {
            crate::warn!("ud_verbs: RoCE packet does not contain GRH");
            return Ok(());
        }
        let ipv4 = if release::ud_grh_family_from_buffer() { grh[0] >> 4 != 6 } else { wc_sl & 7 == 2 };
        let mut gid = [0u8; 16];
        if ipv4 {
            gid[10] = 0xff;
            gid[11] = 0xff;
            gid[12..].copy_from_slice(&grh[36..40]);
        } else {
            gid.copy_from_slice(&grh[24..40]);
        }
        if gid == self.last.get() {
            return Ok(());
        }
        if self.gids.contains(&gid) {
            self.last.set(gid);
            return Ok(());
        }
        Err(std::net::Ipv6Addr::from(gid).to_string())
    }
}

// ---------------------------------------------------------------------------
// Reachability

/// `ROCE_REACHABILITY_MODE` (1.19+); before 1.19 `LocalSubnet` stands for
/// `ROCE_LOCAL_SUBNET=y` and `All` for its default.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Route,
    LocalSubnet,
    All,
}

/// How an interface judges RoCE peers.
#[derive(Clone, Debug)]
pub struct Reach {
    pub local: Selected,
    pub mode: Mode,
    /// Subnet prefix bits compared in `LocalSubnet` mode (0: no check).
    pub prefix_bits: u32,
}

/// The prefix length of the first usable address of interface `ndev`
/// (`ROCE_SUBNET_PREFIX_LEN=auto`).
fn ndev_prefix_bits(ndev: &str) -> Option<u32> {
    let skip_v4_ll = release::roce_prefix_skips_ipv4_link_local();
    let addrs = nix::ifaddrs::getifaddrs().ok()?;
    for a in addrs {
        if a.interface_name != ndev {
            continue;
        }
        use nix::net::if_::InterfaceFlags as F;
        if !a.flags.contains(F::IFF_UP) || !a.flags.contains(F::IFF_RUNNING) {
            continue;
        }
        let (Some(addr), Some(mask)) = (a.address, a.netmask) else { continue };
        if let (Some(v4), Some(m)) = (addr.as_sockaddr_in(), mask.as_sockaddr_in()) {
            if skip_v4_ll && v4.ip().octets()[..2] == [169, 254] {
                continue;
            }
            return Some(32 - u32::from(m.ip()).trailing_zeros().min(32));
        }
        if let (Some(v6), Some(m)) = (addr.as_sockaddr_in6(), mask.as_sockaddr_in6()) {
            let o = v6.ip().octets();
            if o[0] == 0xfe && o[1] & 0xc0 == 0x80 {
                continue;
            }
            return Some(128 - u128::from(m.ip()).trailing_zeros().min(128));
        }
    }
    None
}

impl Reach {
    /// The rules of an interface using `local`: `local_subnet`
    /// (`ROCE_LOCAL_SUBNET`), `prefix_len` (`ROCE_SUBNET_PREFIX_LEN`, None
    /// for auto, `u32::MAX` for inf) and `mode` (`ROCE_REACHABILITY_MODE`,
    /// 1.19+).
    pub fn new(local: Selected, local_subnet: bool, prefix_len: Option<u32>, mode: Option<Mode>)
               -> Result<Reach, String> {
        let mode = match mode {
            Some(_) if local_subnet => Mode::LocalSubnet,
            Some(m) => m,
            None if local_subnet => Mode::LocalSubnet,
            None => Mode::All,
        };
        let mut prefix_bits = 0;
        if mode == Mode::LocalSubnet && local.gid.version == Version::V2 {
            let w = if local.gid.ipv6 { 128 } else { 32 };
            prefix_bits = match prefix_len {
                Some(u32::MAX) => w,
                Some(n) if n > w => return Err(format!("invalid parameter for ROCE_SUBNET_PREFIX_LEN: {n}")),
                Some(n) => n,
                None => match local.ndev.as_deref().and_then(ndev_prefix_bits) {
                    Some(b) => b.min(w),
                    None => {
                        crate::debug!("failed to detect RoCE subnet mask prefix - ignoring mask");
                        0
                    }
                },
            };
        }
        Ok(Reach { local, mode, prefix_bits })
    }

    /// Whether a peer whose device address carries `remote` is reachable.
    pub fn reaches(&self, remote: &RoceGid) -> Result<(), String> {
        let local = &self.local.gid;
        if remote.version == Version::Any {
            return Ok(());
        }
        let versions = || format!("different RoCE versions ({} here, {} there)", local.version.name(),
                                  remote.version.name());
        let families = || "different address families of the RoCE GIDs".to_string();
        if !release::roce_reachability_modes() {
            // Up to 1.18: every peer unless a subnet is checked.
            if self.prefix_bits == 0 {
                return Ok(());
            }
            if !release::roce_reach_checks_family_late() && local.ipv6 != remote.ipv6 {
                return Err(families());
            }
            if local.version != remote.version {
                return Err(versions());
            }
            if local.version != Version::V2 {
                return Ok(());
            }
            return self.subnet_check(remote);
        }
        if self.mode == Mode::All {
            return Ok(());
        }
        if local.version != remote.version {
            return Err(versions());
        }
        if local.version != Version::V2 {
            return Ok(());
        }
        if local.ipv6 != remote.ipv6 {
            return Err(families());
        }
        match self.mode {
            Mode::Route => self.route_check(remote),
            _ if self.prefix_bits == 0 => Ok(()),
            _ => self.subnet_check(remote),
        }
    }

    fn subnet_check(&self, remote: &RoceGid) -> Result<(), String> {
        let (a, b) = (self.local.gid.ip(), remote.ip());
        if same_prefix(&a, &b, self.prefix_bits) {
            Ok(())
        } else {
            Err(format!("IP addresses do not match with a {}-bit prefix: local {a}, remote {b}", self.prefix_bits))
        }
    }

    fn route_check(&self, remote: &RoceGid) -> Result<(), String> {
        let Some(ndev) = self.local.ndev.as_deref() else {
            return Err(format!("no network interface for the RoCE GID index {}", self.local.index));
        };
        let ip = remote.ip();
        if routes::routable(ndev, &ip, release::roce_route_rules()) {
            Ok(())
        } else {
            Err(format!("no route to {ip} on {ndev}"))
        }
    }
}

/// The route test of `ROCE_REACHABILITY_MODE=route`, on the host's routing
/// tables as `/proc/net/route` and `/proc/net/ipv6_route` show them.
pub mod routes {
    use std::net::IpAddr;

    /// What counts as a route to the peer, by release.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct Rules {
        /// A default route (prefix 0) counts (1.20+).
        pub default_routes: bool,
        /// A covering route on `lo` will do (1.20+).
        pub loopback: bool,
        /// The interface's route must be the longest covering one (1.21+).
        pub best_only: bool,
        /// An address of this host is reachable (its local route, 1.22+).
        pub local_addresses: bool,
    }

    /// One route: interface, destination, prefix length.
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub struct Route {
        pub dev: String,
        pub dst: IpAddr,
        pub bits: u32,
    }

    /// Parse `/proc/net/route` (IPv4, little-endian hex words).
    pub fn parse_v4(text: &str) -> Vec<Route> {
        text.lines().skip(1).filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let dst = u32::from_str_radix(f.get(1)?, 16).ok()?;
            let mask = u32::from_str_radix(f.get(7)?, 16).ok()?;
            Some(Route { dev: f[0].to_string(), dst: IpAddr::V4(dst.to_le_bytes().into()),
                         bits: mask.count_ones() })
        }).collect()
    }

    /// Parse `/proc/net/ipv6_route`.
    pub fn parse_v6(text: &str) -> Vec<Route> {
        text.lines().filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let dst = u128::from_str_radix(f.first()?, 16).ok()?;
            let bits = u32::from_str_radix(f.get(1)?, 16).ok()?;
            Some(Route { dev: f.get(9)?.to_string(), dst: IpAddr::V6(dst.into()), bits })
        }).collect()
    }

    /// Whether `routes` give interface `ndev` a way to `ip` under `rules`
    /// (`local`: the addresses of this host).
    pub fn decide(routes: &[Route], local: &[IpAddr], ndev: &str, ip: &IpAddr, rules: Rules) -> bool {
        if rules.local_addresses && local.contains(ip) {
            return true;
        }
        let covering: Vec<&Route> = routes.iter()
            .filter(|r| super::same_prefix(&r.dst, ip, r.bits) && (rules.default_routes || r.bits > 0))
            .collect();
        let best = covering.iter().map(|r| r.bits).max();
        let on_dev = covering.iter().any(|r| r.dev == ndev && (!rules.best_only || Some(r.bits) == best));
        on_dev || (rules.loopback && covering.iter().any(|r| r.dev == "lo"))
    }

    /// [`decide`] on this host's tables.
    pub fn routable(ndev: &str, ip: &IpAddr, rules: Rules) -> bool {
        let text = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
        let routes = if ip.is_ipv4() { parse_v4(&text("/proc/net/route")) } else {
            parse_v6(&text("/proc/net/ipv6_route"))
        };
        let local: Vec<IpAddr> = nix::ifaddrs::getifaddrs().map(|it| it.filter_map(|a| {
            let a = a.address?;
            a.as_sockaddr_in().map(|s| IpAddr::V4(s.ip()))
                .or_else(|| a.as_sockaddr_in6().map(|s| IpAddr::V6(s.ip())))
        }).collect()).unwrap_or_default();
        decide(&routes, &local, ndev, ip, rules)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v4(a: [u8; 4]) -> [u8; 16] {
        let mut g = [0u8; 16];
        g[10] = 0xff;
        g[11] = 0xff;
        g[12..].copy_from_slice(&a);
        g
    }

    #[test]
    fn families_and_flags() {
        assert!(is_ipv4(&v4([10, 0, 0, 1])));
        let ll = [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xfe, 0, 0, 1];
        assert!(!is_ipv4(&ll) && is_link_local(&ll));
        let g = RoceGid { gid: v4([10, 0, 0, 1]), version: Version::V2, ipv6: false };
        assert_eq!(g.flag_bits(), 0x40);
        assert_eq!(RoceGid::from_flags(0x08 | 0x40, g.gid), g);
        let g6 = RoceGid { gid: ll, version: Version::V1, ipv6: true };
        assert_eq!(g6.flag_bits(), 0x10);
        assert_eq!(RoceGid::from_flags(0x18, ll), g6);
    }

    #[test]
    fn subnets() {
        let s = parse_subnet("10.83.0.0/16").unwrap();
        assert!(same_prefix(&s.addr, &"10.83.7.9".parse().unwrap(), s.bits));
        assert!(!same_prefix(&s.addr, &"10.84.0.1".parse().unwrap(), s.bits));
        assert!(same_prefix(&"10.0.0.0".parse().unwrap(), &"10.0.0.255".parse().unwrap(), 24));
        assert!(!same_prefix(&"10.0.0.0".parse().unwrap(), &"10.0.0.255".parse().unwrap(), 28));
        assert!(parse_subnet("10.0.0.0").is_err() && parse_subnet("x/8").is_err() && parse_subnet("1.2.3.4/33").is_err());
        let f = SubnetFilter::Deny(vec![s]);
        assert!(!f.admits(&RoceGid { gid: v4([10, 83, 0, 2]), version: Version::V2, ipv6: false }));
        assert!(f.admits(&RoceGid { gid: v4([10, 84, 0, 2]), version: Version::V2, ipv6: false }));
    }

    #[test]
    fn dgid_check() {
        let mine = v4([10, 83, 0, 1]);
        let ll = [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0xff, 0xfe, 0, 0, 1];
        let c = DgidCheck { gids: vec![ll, mine], last: std::cell::Cell::new([0xff; 16]) };
        // an IPv6 GRH (version 6 in the first byte): bytes 24..40
        let mut grh = [0u8; 40];
        grh[0] = 0x60;
        grh[24..].copy_from_slice(&ll);
        assert!(c.check(&grh, WC_GRH, 0).is_ok());
        grh[39] ^= 1;
        assert!(c.check(&grh, WC_GRH, 0).is_err());
        // no GRH flag: accepted (with a warning)
        assert!(c.check(&grh, 0, 0).is_ok());
        // an IPv4 header: the destination address at bytes 36..40; the
        // release tells it by the first byte (1.19+) or by `sl` (up to 1.18)
        let mut ip4 = [0u8; 40];
        ip4[20] = 0x45;
        ip4[36..].copy_from_slice(&[10, 83, 0, 1]);
        let sl = if release::ud_grh_family_from_buffer() { 0 } else { 2 };
        if release::ud_grh_family_from_buffer() {
            ip4[0] = 0xff;
        }
        assert!(c.check(&ip4, WC_GRH, sl).is_ok());
        ip4[39] = 9;
        assert_eq!(c.check(&ip4, WC_GRH, sl), Err("::ffff:10.83.0.9".to_string()));
    }

    #[test]
    fn route_rules() {
        let v4 = routes::parse_v4("Iface\tDestination\tGateway\tFlags\tRefCnt\tUse\tMetric\tMask\tMTU\tWindow\tIRTT\n\
            eth0\t00000000\t0100000A\t0003\t0\t0\t0\t00000000\t0\t0\t0\n\
            eth0\t0000000A\t00000000\t0001\t0\t0\t0\t000000FF\t0\t0\t0\n\
            eth1\t0000530A\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n");
        assert_eq!(v4[1], routes::Route { dev: "eth0".into(), dst: "10.0.0.0".parse().unwrap(), bits: 8 });
        let r19 = routes::Rules { default_routes: false, loopback: false, best_only: false, local_addresses: false };
        let r21 = routes::Rules { default_routes: true, loopback: true, best_only: true, local_addresses: false };
        let ip: IpAddr = "10.83.0.7".parse().unwrap();
        assert!(routes::decide(&v4, &[], "eth1", &ip, r19));
        assert!(routes::decide(&v4, &[], "eth0", &ip, r19), "10/8 on eth0 covers it");
        assert!(!routes::decide(&v4, &[], "eth0", &ip, r21), "eth1's /24 is the better route");
        let far: IpAddr = "192.168.1.1".parse().unwrap();
        assert!(!routes::decide(&v4, &[], "eth0", &far, r19), "default routes do not count before 1.20");
        assert!(routes::decide(&v4, &[], "eth0", &far, r21));
        let r22 = routes::Rules { local_addresses: true, ..r21 };
        assert!(routes::decide(&v4, &[far], "eth1", &far, r22));
        let v6 = routes::parse_v6("fe800000000000000000000000000000 40 00000000000000000000000000000000 00 \
            00000000000000000000000000000000 00000100 00000001 00000000 00000001     eth1\n");
        assert_eq!(v6[0].bits, 64);
        assert_eq!(v6[0].dev, "eth1");
    }
}
