//! The ud wire formats: the 8-byte network header every datagram starts
//! with, the control header of connection requests and replies, and the
//! iface/ep address layouts. Everything is host-endian (little endian on
//! the hosts UCX runs ud on), as in UCX 1.13.1.

/// Destination id meaning "no endpoint yet" (a connection request).
pub const EP_NULL_ID: u32 = 0x00ff_ffff;
pub const ID_MASK: u32 = 0x00ff_ffff;
pub const AM: u32 = 1 << 24;
pub const ACK_REQ: u32 = 1 << 25;
pub const NAK: u32 = 1 << 27;
pub const PUT: u32 = 1 << 28;
pub const CTL: u32 = 1 << 29;
pub const AM_ID_SHIFT: u32 = 27;
/// Length of the network header.
pub const NETH_LEN: usize = 8;
/// Bytes in front of every received datagram (the GRH area).
pub const GRH_LEN: usize = 40;
/// The Q_Key of every ud QP and send.
pub const QKEY: u32 = 0x1ee7_a330;

/// Control header: type, sender's ep address, conn_sn, path index, host
/// name and pid; a connection request carries the device address after it.
pub const CTL_LEN: usize = 40;
pub const CTL_CREQ: u8 = 1;
pub const CTL_CREP: u8 = 2;
const PEER_NAME_OFF: usize = 20;
const PEER_NAME_LEN: usize = 16;
const PEER_PID_OFF: usize = 36;

/// Lengths of the iface and ep addresses.
pub const IFACE_ADDR_LEN: usize = 3;
pub const EP_ADDR_LEN: usize = 6;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Neth {
    pub ptype: u32,
    pub psn: u16,
    pub ack_psn: u16,
}

impl Neth {
    pub fn dest(&self) -> u32 {
        self.ptype & ID_MASK
    }
    pub fn is_am(&self) -> bool {
        self.ptype & AM != 0
    }
    pub fn am_id(&self) -> u8 {
        (self.ptype >> AM_ID_SHIFT) as u8
    }
    pub fn has(&self, bit: u32) -> bool {
        self.ptype & bit != 0
    }
    pub fn pack(&self) -> [u8; NETH_LEN] {
        let mut b = [0u8; NETH_LEN];
        b[..4].copy_from_slice(&self.ptype.to_le_bytes());
        b[4..6].copy_from_slice(&self.psn.to_le_bytes());
        b[6..8].copy_from_slice(&self.ack_psn.to_le_bytes());
        b
    }
    pub fn parse(b: &[u8]) -> Option<Neth> {
        if b.len() < NETH_LEN {
            return None;
        }
        Some(Neth {
            ptype: u32::from_le_bytes([b[0], b[1], b[2], b[3]]),
            psn: u16::from_le_bytes([b[4], b[5]]),
            ack_psn: u16::from_le_bytes([b[6], b[7]]),
        })
    }
}

/// The packet type of an active message to `dest`.
pub fn am_type(dest: u32, id: u8) -> u32 {
    ((id as u32) << AM_ID_SHIFT) | AM | (dest & ID_MASK)
}

/// 16-bit circular comparison: a < b.
pub fn psn_lt(a: u16, b: u16) -> bool {
    (a.wrapping_sub(b) as i16) < 0
}
pub fn psn_le(a: u16, b: u16) -> bool {
    (a.wrapping_sub(b) as i16) <= 0
}

pub fn put24(b: &mut [u8], v: u32) {
    b[..3].copy_from_slice(&v.to_le_bytes()[..3]);
}
pub fn get24(b: &[u8]) -> u32 {
    u32::from_le_bytes([b[0], b[1], b[2], 0])
}

/// An ep address: the iface QP number and the ep id.
pub fn pack_ep_addr(qpn: u32, ep_id: u32) -> [u8; EP_ADDR_LEN] {
    let mut b = [0u8; EP_ADDR_LEN];
    put24(&mut b[..3], qpn);
    put24(&mut b[3..], ep_id);
    b
}
pub fn unpack_ep_addr(b: &[u8]) -> Option<(u32, u32)> {
    (b.len() >= EP_ADDR_LEN).then(|| (get24(&b[..3]), get24(&b[3..6])))
}

/// A received control header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ctl {
    /// Connection request: the sender's QPN and ep id, its conn_sn, path
    /// index, and where its device address starts in the packet.
    Creq { qpn: u32, ep_id: u32, conn_sn: u32, path_index: u8 },
    /// Connection reply: the replier's ep id.
    Crep { src_ep_id: u32 },
}

fn fill_peer_name(b: &mut [u8]) {
    let mut host = [0u8; 64];
    // SAFETY: gethostname writes at most `host.len()` bytes into our array.
    let r = unsafe { libc::gethostname(host.as_mut_ptr() as *mut libc::c_char, host.len()) };
    if r == 0 {
        let n = host.iter().position(|&c| c == 0).unwrap_or(host.len()).min(PEER_NAME_LEN - 1);
        b[PEER_NAME_OFF..PEER_NAME_OFF + n].copy_from_slice(&host[..n]);
    }
    // SAFETY: getpid has no preconditions.
    let pid = unsafe { libc::getpid() };
    b[PEER_PID_OFF..PEER_PID_OFF + 4].copy_from_slice(&pid.to_le_bytes());
}

/// The control header of a connection request (device address appended
/// by the caller).
pub fn pack_creq(qpn: u32, ep_id: u32, conn_sn: u32, path_index: u8) -> [u8; CTL_LEN] {
    let mut b = [0u8; CTL_LEN];
    b[0] = CTL_CREQ;
    b[4..10].copy_from_slice(&pack_ep_addr(qpn, ep_id));
    b[12..16].copy_from_slice(&conn_sn.to_le_bytes());
    b[16] = path_index;
    fill_peer_name(&mut b);
    b
}

pub fn pack_crep(src_ep_id: u32) -> [u8; CTL_LEN] {
    let mut b = [0u8; CTL_LEN];
    b[0] = CTL_CREP;
    b[4..8].copy_from_slice(&src_ep_id.to_le_bytes());
    fill_peer_name(&mut b);
    b
}

/// Parse a control header (the bytes after the neth).
pub fn parse_ctl(b: &[u8]) -> Result<Ctl, String> {
    if b.len() < CTL_LEN {
        return Err(format!("control packet of {} bytes is too short", b.len()));
    }
    match b[0] {
        CTL_CREQ => Ok(Ctl::Creq {
            qpn: get24(&b[4..7]),
            ep_id: get24(&b[7..10]),
            conn_sn: u32::from_le_bytes([b[12], b[13], b[14], b[15]]),
            path_index: b[16],
        }),
        CTL_CREP => Ok(Ctl::Crep { src_ep_id: u32::from_le_bytes([b[4], b[5], b[6], b[7]]) & ID_MASK }),
        t => Err(format!("unknown control packet type {}", t)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn neth_roundtrip() {
        let n = Neth { ptype: am_type(5, 3) | ACK_REQ, psn: 0xfffe, ack_psn: 7 };
        let b = n.pack();
        assert_eq!(Neth::parse(&b), Some(n));
        let p = Neth::parse(&b).unwrap();
        assert!(p.is_am() && p.has(ACK_REQ) && !p.has(CTL));
        assert_eq!((p.dest(), p.am_id()), (5, 3));
        assert_eq!(Neth::parse(&b[..7]), None);
        assert_eq!(&b[..4], &(0x1b00_0005u32 | ACK_REQ).to_le_bytes());
    }

    #[test]
    fn circular() {
        assert!(psn_lt(0xffff, 1));
        assert!(psn_lt(1, 2));
        assert!(!psn_lt(2, 2) && psn_le(2, 2));
        assert!(!psn_lt(3, 0xfff0));
    }

    #[test]
    fn ctl_layout() {
        let b = pack_creq(0x123456, 0x42, 7, 1);
        assert_eq!(b[0], 1);
        assert_eq!(&b[4..10], &[0x56, 0x34, 0x12, 0x42, 0, 0]);
        assert_eq!(&b[12..16], &7u32.to_le_bytes());
        assert_eq!(parse_ctl(&b), Ok(Ctl::Creq { qpn: 0x123456, ep_id: 0x42, conn_sn: 7, path_index: 1 }));
        let r = pack_crep(9);
        assert_eq!(parse_ctl(&r), Ok(Ctl::Crep { src_ep_id: 9 }));
        assert!(parse_ctl(&r[..39]).is_err());
        let mut bad = r;
        bad[0] = 9;
        assert!(parse_ctl(&bad).is_err());
    }

    #[test]
    fn ep_addr() {
        assert_eq!(unpack_ep_addr(&pack_ep_addr(0xabcdef, 3)), Some((0xabcdef, 3)));
        assert_eq!(unpack_ep_addr(&[1, 2, 3]), None);
    }
}
