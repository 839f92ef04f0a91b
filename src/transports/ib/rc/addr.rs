//! The wire formats of `rc_verbs` addresses, as UCX 1.13.1 packs them.
//!
//! Device address (the IB interface's): a flags byte, then for an
//! InfiniBand port the 16-bit LID in host order, the interface id (8 bytes)
//! when global routing is forced, the subnet prefix (2 bytes for a
//! site-local `fec0::/48`-style prefix, 8 bytes for a global one, nothing
//! for the link-local `fe80::` one), the path MTU (1 byte) when it is not
//! 4096, and the pkey (2 bytes) when it is not 0xffff. A RoCE port packs
//! its raw GID (16 bytes) instead of the LID and subnet fields: flag 0x08,
//! with the address family (0x10: IPv6) and the RoCE version (bits 5..7)
//! of that GID in the same byte; the optional fields follow as on IB.
//!
//! Endpoint address: a flags byte (bit 0: an atomic MR id byte follows,
//! never set by the verbs md) and the QP number, 24 bits little endian.

use crate::core::handles::PeerAddr;
use crate::transports::ib::roce::{self, RoceGid};

/// The longest device address a peer may send (InfiniBand form with every
/// optional field).
pub const DEV_ADDR_MAX: usize = 23;

/// Flag bits of the device address.
pub const FLAG_GID_INDEX: u8 = 1 << 0;
pub const FLAG_PATH_MTU: u8 = 1 << 1;
pub const FLAG_PKEY: u8 = 1 << 2;
pub const FLAG_ETH: u8 = 1 << 3;
pub const FLAG_SUBNET16: u8 = 1 << 4;
pub const FLAG_SUBNET64: u8 = 1 << 5;
pub const FLAG_IF_ID: u8 = 1 << 6;

/// `IBV_MTU_4096`: the MTU a device address leaves out.
pub const MTU_4096: u8 = 5;
/// The subnet prefix that is never packed.
pub const LINK_LOCAL_PREFIX: [u8; 8] = [0xfe, 0x80, 0, 0, 0, 0, 0, 0];

/// An InfiniBand device address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IbDevAddr {
    pub lid: u16,
    /// The 8 bytes of the GID's subnet prefix, network order.
    pub subnet_prefix: [u8; 8],
    /// The GID's interface id, when packed.
    pub if_id: Option<[u8; 8]>,
    /// `ibv_mtu` value (5 = 4096 when absent).
    pub path_mtu: u8,
    pub pkey: u16,
    pub gid_index: Option<u8>,
    /// A RoCE port's GID (then `lid` is 0, and `subnet_prefix` and `if_id`
    /// are the GID's halves).
    pub roce: Option<RoceGid>,
}

fn is_site_local(p: &[u8; 8]) -> bool {
    p[0] == 0xfe && p[1] == 0xc0 && p[2..6] == [0, 0, 0, 0]
}

impl IbDevAddr {
    /// The address of a RoCE port using `gid`.
    pub fn roce(gid: RoceGid, path_mtu: u8) -> IbDevAddr {
        let mut subnet_prefix = [0u8; 8];
        subnet_prefix.copy_from_slice(&gid.gid[..8]);
        let mut if_id = [0u8; 8];
        if_id.copy_from_slice(&gid.gid[8..]);
        IbDevAddr { lid: 0, subnet_prefix, if_id: Some(if_id), path_mtu, pkey: 0xffff, gid_index: None,
                    roce: Some(gid) }
    }

    /// Pack, as the original does for an interface (never a GID index).
    pub fn pack(&self) -> Vec<u8> {
        let mut flags = 0u8;
        let mut out = vec![0u8];
        let p = &self.subnet_prefix;
        if let Some(r) = &self.roce {
            flags |= FLAG_ETH | r.flag_bits();
            out.extend_from_slice(&r.gid);
        } else {
            out.extend_from_slice(&self.lid.to_ne_bytes());
            if let Some(id) = self.if_id {
                flags |= FLAG_IF_ID;
                out.extend_from_slice(&id);
            }
        }
        if self.roce.is_none() && is_site_local(p) {
            // The original stores the upper 16 bits of the prefix as read
            // in host order (little endian): the prefix bytes 6 and 7.
            flags |= FLAG_SUBNET16;
            out.extend_from_slice(&p[6..8]);
        } else if self.roce.is_none() && *p != LINK_LOCAL_PREFIX {
            flags |= FLAG_SUBNET64;
            out.extend_from_slice(p);
        }
        if self.path_mtu != MTU_4096 {
            flags |= FLAG_PATH_MTU;
            out.push(self.path_mtu);
        }
        if let Some(g) = self.gid_index {
            flags |= FLAG_GID_INDEX;
            out.push(g);
        }
        if self.pkey != 0xffff {
            flags |= FLAG_PKEY;
            out.extend_from_slice(&self.pkey.to_ne_bytes());
        }
        out[0] = flags;
        out
    }

    /// Unpack a peer's device address (`bytes` bounded by the declared
    /// length).
    pub fn unpack(bytes: &[u8]) -> Result<IbDevAddr, String> {
        let (&flags, mut rest) = bytes.split_first().ok_or("empty device address")?;
        let mut take = |n: usize| -> Result<&[u8], String> {
            if rest.len() < n {
                return Err(format!("device address too short (flags 0x{:02x})", flags));
            }
            let (a, b) = rest.split_at(n);
            rest = b;
            Ok(a)
        };
        let eth = flags & FLAG_ETH != 0;
        let mut roce_gid = None;
        let (mut lid, mut if_id, mut subnet_prefix) = (0, None, LINK_LOCAL_PREFIX);
        if eth {
            let g: [u8; 16] = take(16)?.try_into().map_err(|_| "gid")?;
            roce_gid = Some(RoceGid::from_flags(flags, g));
            subnet_prefix.copy_from_slice(&g[..8]);
            if_id = Some(g[8..].try_into().map_err(|_| "gid")?);
        } else {
            lid = u16::from_ne_bytes(take(2)?.try_into().map_err(|_| "lid")?);
            if flags & FLAG_IF_ID != 0 {
                if_id = Some(take(8)?.try_into().map_err(|_| "if_id")?);
            }
        }
        if !eth && flags & FLAG_SUBNET16 != 0 {
            let s = take(2)?;
            subnet_prefix = [0xfe, 0xc0, 0, 0, 0, 0, s[0], s[1]];
        } else if !eth && flags & FLAG_SUBNET64 != 0 {
            subnet_prefix = take(8)?.try_into().map_err(|_| "subnet")?;
        }
        let path_mtu = if flags & FLAG_PATH_MTU != 0 { take(1)?[0] } else { MTU_4096 };
        let gid_index = if flags & FLAG_GID_INDEX != 0 { Some(take(1)?[0]) } else { None };
        let pkey = if flags & FLAG_PKEY != 0 {
            u16::from_ne_bytes(take(2)?.try_into().map_err(|_| "pkey")?)
        } else {
            0xffff
        };
        Ok(IbDevAddr { lid, subnet_prefix, if_id, path_mtu, pkey, gid_index, roce: roce_gid })
    }

    /// The length of a packed address whose flags byte is `flags`.
    pub fn packed_len(flags: u8) -> usize {
        let body = if flags & FLAG_ETH != 0 {
            16
        } else {
            2 + if flags & FLAG_IF_ID != 0 { 8 } else { 0 }
                + if flags & FLAG_SUBNET16 != 0 { 2 } else if flags & FLAG_SUBNET64 != 0 { 8 } else { 0 }
        };
        1 + body + (flags & FLAG_PATH_MTU != 0) as usize + (flags & FLAG_GID_INDEX != 0) as usize
            + if flags & FLAG_PKEY != 0 { 2 } else { 0 }
    }

    /// Unpack a peer's device address, reading only as many bytes as its
    /// flags say it has, and only if they are readable (a forged flags
    /// byte cannot send the read past mapped memory). `own_len`: the length
    /// of our own address (what may be read without that check).
    pub fn read(dev: &PeerAddr<'_>, own_len: usize) -> Result<IbDevAddr, String> {
        let [flags] = dev.read::<1>().ok_or("empty device address")?;
        let n = Self::packed_len(flags);
        let bytes = dev.copy_checked(n, own_len)
            .ok_or_else(|| format!("device address of {} bytes (flags 0x{:02x}) is not readable", n, flags))?;
        Self::unpack(&bytes)
    }

    /// The packed length of this address.
    pub fn len(&self) -> usize {
        self.pack().len()
    }

    pub fn is_empty(&self) -> bool {
        false
    }

    /// Whether a peer with address `other` is reachable from us (`self`):
    /// pkeys match in the low 15 bits with one side a full member; two
    /// InfiniBand ports need equal subnet prefixes, two RoCE ports follow
    /// `roce` (the interface's rules), and the two link layers never meet.
    pub fn reaches(&self, other: &IbDevAddr, roce: Option<&roce::Reach>) -> Result<(), String> {
        let (a, b) = (self.pkey, other.pkey);
        if (a & 0x7fff) != (b & 0x7fff) || ((a | b) & 0x8000) == 0 {
            return Err(format!("pkey 0x{:x} and 0x{:x} do not match", a, b));
        }
        match (&self.roce, &other.roce, roce) {
            (Some(_), Some(theirs), Some(rules)) => return rules.reaches(theirs),
            (Some(_), Some(_), None) => return Ok(()),
            (Some(_), None, _) => return Err("link layers differ: local RoCE, remote InfiniBand".into()),
            (None, Some(_), _) => return Err("link layers differ: local InfiniBand, remote RoCE".into()),
            (None, None, _) => {}
        }
        if self.subnet_prefix != other.subnet_prefix {
            return Err("IB subnet prefixes differ".into());
        }
        Ok(())
    }
}

/// Bytes of an endpoint address.
pub const EP_ADDR_LEN: usize = 4;
/// Endpoint address flag: an atomic MR id byte follows.
pub const EP_ADDR_FLAG_ATOMIC_MR: u8 = 1;

pub fn pack_ep_addr(qpn: u32) -> [u8; EP_ADDR_LEN] {
    [0, qpn as u8, (qpn >> 8) as u8, (qpn >> 16) as u8]
}

/// The QP number of a peer's endpoint address (flags are read, the atomic
/// MR id, which the verbs md never sends, is ignored).
pub fn unpack_ep_addr(b: &[u8]) -> Result<u32, String> {
    let b: &[u8; 4] = b.get(..4).and_then(|s| s.try_into().ok()).ok_or("endpoint address shorter than 4 bytes")?;
    Ok(b[1] as u32 | (b[2] as u32) << 8 | (b[3] as u32) << 16)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base(lid: u16) -> IbDevAddr {
        IbDevAddr { lid, subnet_prefix: LINK_LOCAL_PREFIX, if_id: None, path_mtu: MTU_4096, pkey: 0xffff,
                    gid_index: None, roce: None }
    }

    #[test]
    fn default_ib_address_is_three_bytes() {
        let a = base(0x0102);
        let p = a.pack();
        assert_eq!(p, vec![0, 0x02, 0x01]);
        assert_eq!(IbDevAddr::unpack(&p).unwrap(), a);
    }

    #[test]
    fn optional_fields_round_trip() {
        let a = IbDevAddr { lid: 7, subnet_prefix: [0x20, 1, 2, 3, 4, 5, 6, 7], if_id: Some([9; 8]), path_mtu: 3,
                            pkey: 0x8001, gid_index: Some(2), roce: None };
        let p = a.pack();
        assert_eq!(p[0], FLAG_IF_ID | FLAG_SUBNET64 | FLAG_PATH_MTU | FLAG_GID_INDEX | FLAG_PKEY);
        assert_eq!(p.len(), 1 + 2 + 8 + 8 + 1 + 1 + 2);
        assert_eq!(IbDevAddr::unpack(&p).unwrap(), a);
        let s = IbDevAddr { subnet_prefix: [0xfe, 0xc0, 0, 0, 0, 0, 0x12, 0x34], ..base(1) };
        let p = s.pack();
        assert_eq!(p, vec![FLAG_SUBNET16, 1, 0, 0x12, 0x34]);
        assert_eq!(IbDevAddr::unpack(&p).unwrap(), s);
    }

    #[test]
    fn bad_addresses_are_errors() {
        assert!(IbDevAddr::unpack(&[]).is_err());
        assert!(IbDevAddr::unpack(&[0, 1]).is_err());
        assert!(IbDevAddr::unpack(&[FLAG_ETH | 0x40, 0, 0]).is_err(), "a RoCE address needs 16 GID bytes");
        assert!(IbDevAddr::unpack(&[FLAG_SUBNET64, 1, 0, 5]).is_err());
        let all = FLAG_IF_ID | FLAG_SUBNET64 | FLAG_PATH_MTU | FLAG_GID_INDEX | FLAG_PKEY;
        assert_eq!(IbDevAddr::packed_len(all), DEV_ADDR_MAX);
        assert_eq!(IbDevAddr::packed_len(0), 3);
        assert_eq!(IbDevAddr::packed_len(FLAG_PATH_MTU), 4);
    }

    #[test]
    fn roce_addresses() {
        let mut g = [0u8; 16];
        g[10] = 0xff;
        g[11] = 0xff;
        g[12..].copy_from_slice(&[10, 83, 0, 2]);
        let a = IbDevAddr::roce(RoceGid { gid: g, version: roce::Version::V2, ipv6: false }, MTU_4096);
        let p = a.pack();
        assert_eq!(p.len(), 17);
        assert_eq!(p[0], 0x48);
        assert_eq!(&p[1..], &g);
        assert_eq!(IbDevAddr::unpack(&p).unwrap(), a);
        let b = IbDevAddr::roce(RoceGid { gid: g, version: roce::Version::V1, ipv6: true }, 3);
        let p = b.pack();
        assert_eq!((p.len(), p[0], p[17]), (18, 0x1a, 3));
        assert_eq!(IbDevAddr::unpack(&p).unwrap(), b);
        assert_eq!(IbDevAddr::packed_len(0x1a), 18);
        assert!(IbDevAddr::unpack(&p[..17]).is_err());
    }

    #[test]
    fn reachability() {
        assert!(base(1).reaches(&base(2), None).is_ok());
        let other = IbDevAddr { subnet_prefix: [0x20, 0, 0, 0, 0, 0, 0, 1], ..base(2) };
        assert!(base(1).reaches(&other, None).is_err());
        let limited = IbDevAddr { pkey: 0x7fff, ..base(2) };
        assert!(base(1).reaches(&limited, None).is_ok());
        assert!(limited.reaches(&limited, None).is_err());
        let r = IbDevAddr::roce(RoceGid { gid: [7; 16], version: roce::Version::V2, ipv6: true }, MTU_4096);
        assert!(r.reaches(&base(1), None).is_err() && base(1).reaches(&r, None).is_err());
        assert!(r.reaches(&r, None).is_ok());
    }

    #[test]
    fn ep_address() {
        let p = pack_ep_addr(0x00ab_cdef);
        assert_eq!(p, [0, 0xef, 0xcd, 0xab]);
        assert_eq!(unpack_ep_addr(&p).unwrap(), 0xab_cdef);
        assert!(unpack_ep_addr(&p[..3]).is_err());
    }
}
