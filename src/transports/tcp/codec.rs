//! What travels on a tcp connection of UCX 1.13.1, as small pure encode and
//! decode functions over byte slices (all fields in host byte order, x86-64
//! little endian, as the C original writes its packed structs; only the
//! port inside a socket address is in network order).
//!
//! Layouts, checked with gcc against the packed C structs:
//! - frame header: `{am_id u8, length u32}`, 5 bytes, then `length` bytes;
//! - connection request: `{event u32, flags u8, cm_id u64}`, 13 bytes, then
//!   the sender's listening `sockaddr_in` (16 bytes) or `sockaddr_in6` (28);
//! - other connection events: the event alone, 4 bytes;
//! - put request: `{addr u64, length u64, sn u32}`, 20 bytes (the frame
//!   length covers these 20 bytes only; the data follows the frame);
//! - put acknowledgement: `{sn u32}`, 4 bytes;
//! - a connecting socket starts with the 8-byte magic number;
//! - device address: `{flags u8, family u8}`, then the IP (4 or 16 bytes),
//!   or on a loopback device the host identity `{id u64, ns}` where `ns`,
//!   the network namespace, is as wide as the release's `ucs_sys_ns_t`
//!   (8 bytes up to 1.21, 4 from 1.22: the `ns_len` arguments below, which
//!   callers take from `ucs::ns_len`).

use crate::sys::addr::SockAddr;

/// First 8 bytes a connecting side sends.
pub const MAGIC: u64 = 0xCAFE_BABE_1234_5678;
pub const MAGIC_LEN: usize = 8;

/// Size of the frame header.
pub const HDR_LEN: usize = 5;

/// User active-message ids are below this (`UCT_AM_ID_MAX`).
pub const AM_ID_MAX: u8 = 32;
/// Internal frame ids.
pub const AM_ID_CM: u8 = AM_ID_MAX;
pub const AM_ID_PUT_REQ: u8 = AM_ID_MAX + 1;
pub const AM_ID_PUT_ACK: u8 = AM_ID_MAX + 2;
pub const AM_ID_KEEPALIVE: u8 = AM_ID_MAX + 3;

/// Connection events (a bit set: ACK|REQ is 3).
pub const EV_CONN_REQ: u32 = 1;
pub const EV_CONN_ACK: u32 = 2;
pub const EV_CONN_ACK_WITH_REQ: u32 = EV_CONN_REQ | EV_CONN_ACK;
pub const EV_CONN_FIN: u32 = 4;

/// Connection request flag: both endpoints use CONNECT_TO_EP.
pub const REQ_FLAG_CONNECT_TO_EP: u8 = 1;

/// Size of the fixed part of a connection request.
pub const CONN_REQ_LEN: usize = 13;
pub const PUT_REQ_LEN: usize = 20;
pub const PUT_ACK_LEN: usize = 4;
pub const EVENT_LEN: usize = 4;

fn u32_at(b: &[u8], off: usize) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[off..off + 4]);
    u32::from_ne_bytes(a)
}

fn u64_at(b: &[u8], off: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[off..off + 8]);
    u64::from_ne_bytes(a)
}

/// Write a frame header into `out[..5]`.
#[inline(always)]
pub fn put_hdr(out: &mut [u8], am_id: u8, length: u32) {
    out[0] = am_id;
    out[1..5].copy_from_slice(&length.to_ne_bytes());
}

/// A frame header from 5 bytes: (am_id, length).
#[inline(always)]
pub fn get_hdr(b: &[u8]) -> Option<(u8, u32)> {
    if b.len() < HDR_LEN {
        return None;
    }
    Some((b[0], u32_at(b, 1)))
}

/// A decoded connection request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnReq {
    pub flags: u8,
    pub cm_id: u64,
    pub addr: SockAddr,
}

/// The body of a connection request (after the frame header).
pub fn encode_conn_req(out: &mut Vec<u8>, flags: u8, cm_id: u64, addr: &SockAddr) {
    out.extend_from_slice(&EV_CONN_REQ.to_ne_bytes());
    out.push(flags);
    out.extend_from_slice(&cm_id.to_ne_bytes());
    addr.encode_raw(out);
}

/// The event of a connection packet body.
pub fn conn_event(body: &[u8]) -> Option<u32> {
    (body.len() >= EVENT_LEN).then(|| u32_at(body, 0))
}

/// Decode a connection request body.
pub fn decode_conn_req(body: &[u8]) -> Option<ConnReq> {
    if body.len() < CONN_REQ_LEN || u32_at(body, 0) != EV_CONN_REQ {
        return None;
    }
    let addr = SockAddr::decode_raw(&body[CONN_REQ_LEN..])?;
    Some(ConnReq { flags: body[4], cm_id: u64_at(body, 5), addr })
}

/// A put request header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PutReq {
    pub addr: u64,
    pub length: u64,
    pub sn: u32,
}

pub fn encode_put_req(out: &mut [u8], r: &PutReq) {
    out[0..8].copy_from_slice(&r.addr.to_ne_bytes());
    out[8..16].copy_from_slice(&r.length.to_ne_bytes());
    out[16..20].copy_from_slice(&r.sn.to_ne_bytes());
}

pub fn decode_put_req(b: &[u8]) -> Option<PutReq> {
    if b.len() < PUT_REQ_LEN {
        return None;
    }
    Some(PutReq { addr: u64_at(b, 0), length: u64_at(b, 8), sn: u32_at(b, 16) })
}

pub fn decode_put_ack(b: &[u8]) -> Option<u32> {
    (b.len() >= PUT_ACK_LEN).then(|| u32_at(b, 0))
}

/// Sequence number `a` is at or before `b`, modulo 2^32.
pub fn sn_le(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) <= 0
}

// ---------------------------------------------------------------------------
// Addresses.

/// Device address flag: a loopback device, the host identity follows.
pub const DEV_FLAG_LOOPBACK: u8 = 1;
/// Bit 63 of the host identity: a network namespace id follows.
pub const LOCAL_FLAG_NS: u64 = 1 << 63;
/// Length of a loopback device address: the head, `id` and a namespace id
/// of `ns_len` bytes (18 bytes up to 1.21, 14 from 1.22).
pub const fn dev_addr_loopback_len(ns_len: usize) -> usize {
    2 + 8 + ns_len
}
pub const IFACE_ADDR_LEN: usize = 2;
pub const EP_ADDR_LEN: usize = 10;

/// Device address of a non-loopback interface: flags 0, family, IP.
pub fn encode_dev_addr_ip(out: &mut Vec<u8>, addr: &SockAddr) {
    out.push(0);
    out.push(addr.family as u8);
    out.extend_from_slice(addr.ip_bytes());
}

/// Device address of a loopback interface: flag, family, host identity
/// (with the namespace when not the default one; zero otherwise), the
/// namespace `ns_len` bytes wide.
pub fn encode_dev_addr_loopback(out: &mut Vec<u8>, family: u16, id: u64, ns: Option<u64>, ns_len: usize) {
    out.push(DEV_FLAG_LOOPBACK);
    out.push(family as u8);
    let id = match ns {
        Some(_) => id | LOCAL_FLAG_NS,
        None => id & !LOCAL_FLAG_NS,
    };
    out.extend_from_slice(&id.to_ne_bytes());
    crate::ucs::ns_encode(out, ns.unwrap_or(0), ns_len);
}

/// The parts of a device address: (flags, family).
pub fn dev_addr_head(b: &[u8]) -> Option<(u8, u16)> {
    (b.len() >= 2).then(|| (b[0], b[1] as u16))
}

/// The host identity of a loopback device address whose namespace is
/// `ns_len` bytes wide: (id, ns). None when `b` is shorter than that form.
pub fn dev_addr_local(b: &[u8], ns_len: usize) -> Option<(u64, u64)> {
    if b.len() < dev_addr_loopback_len(ns_len) {
        return None;
    }
    Some((u64_at(b, 2), crate::ucs::ns_decode(&b[10..], ns_len)?))
}

pub fn encode_iface_addr(port: u16) -> [u8; IFACE_ADDR_LEN] {
    port.to_be_bytes()
}

pub fn decode_iface_addr(b: &[u8]) -> Option<u16> {
    (b.len() >= IFACE_ADDR_LEN).then(|| u16::from_be_bytes([b[0], b[1]]))
}

pub fn encode_ep_addr(port: u16, key: u64) -> [u8; EP_ADDR_LEN] {
    let mut a = [0u8; EP_ADDR_LEN];
    a[..2].copy_from_slice(&port.to_be_bytes());
    a[2..].copy_from_slice(&key.to_ne_bytes());
    a
}

pub fn decode_ep_addr(b: &[u8]) -> Option<(u16, u64)> {
    (b.len() >= EP_ADDR_LEN).then(|| (u16::from_be_bytes([b[0], b[1]]), u64_at(b, 2)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v4(a: [u8; 4], port: u16) -> SockAddr {
        SockAddr::v4(a, port)
    }

    #[test]
    fn hdr_round_trip() {
        let mut b = [0u8; 5];
        put_hdr(&mut b, 7, 0x0102_0304);
        assert_eq!(b, [7, 4, 3, 2, 1]);
        assert_eq!(get_hdr(&b), Some((7, 0x0102_0304)));
        assert_eq!(get_hdr(&b[..4]), None);
    }

    #[test]
    fn conn_req_layout() {
        let a = v4([127, 0, 0, 1], 0x1234);
        let mut out = Vec::new();
        encode_conn_req(&mut out, REQ_FLAG_CONNECT_TO_EP, 0x1122_3344_5566_7788, &a);
        assert_eq!(out.len(), CONN_REQ_LEN + 16);
        assert_eq!(&out[0..4], &[1, 0, 0, 0]);
        assert_eq!(out[4], 1);
        assert_eq!(&out[5..13], &0x1122_3344_5566_7788u64.to_le_bytes());
        // sockaddr_in: family (host order), port (network order), address
        assert_eq!(&out[13..17], &[2, 0, 0x12, 0x34]);
        assert_eq!(&out[17..21], &[127, 0, 0, 1]);
        assert_eq!(&out[21..29], &[0u8; 8]);
        let r = decode_conn_req(&out).unwrap();
        assert_eq!(r, ConnReq { flags: 1, cm_id: 0x1122_3344_5566_7788, addr: a });
        assert_eq!(decode_conn_req(&out[..20]), None);
    }

    #[test]
    fn conn_req_v6() {
        let mut ip = [0u8; 16];
        ip[0] = 0xfd;
        ip[15] = 2;
        let a = SockAddr::v6(ip, 4000);
        let mut out = Vec::new();
        encode_conn_req(&mut out, 0, 3, &a);
        assert_eq!(out.len(), CONN_REQ_LEN + 28);
        assert_eq!(&out[13..15], &10u16.to_ne_bytes());
        assert_eq!(&out[21..37], &ip);
        assert_eq!(decode_conn_req(&out).unwrap().addr, a);
    }

    #[test]
    fn put_layout() {
        let r = PutReq { addr: 0xdead_beef_0000_1000, length: 4096, sn: 9 };
        let mut b = [0u8; PUT_REQ_LEN];
        encode_put_req(&mut b, &r);
        assert_eq!(&b[16..20], &9u32.to_le_bytes());
        assert_eq!(decode_put_req(&b), Some(r));
        assert_eq!(decode_put_ack(&5u32.to_ne_bytes()), Some(5));
    }

    #[test]
    fn sequence_compare_wraps() {
        assert!(sn_le(u32::MAX, 0));
        assert!(sn_le(3, 3));
        assert!(!sn_le(4, 3));
        assert!(!sn_le(0, u32::MAX));
    }

    #[test]
    fn addresses() {
        let mut d = Vec::new();
        encode_dev_addr_ip(&mut d, &v4([192, 0, 2, 2], 0));
        assert_eq!(d, [0, 2, 192, 0, 2, 2]);
        for (ns_len, len) in [(8, 18), (4, 14)] {
            let mut l = Vec::new();
            encode_dev_addr_loopback(&mut l, 2, 0x55, None, ns_len);
            assert_eq!(l.len(), len);
            assert_eq!(dev_addr_loopback_len(ns_len), len);
            assert_eq!(dev_addr_head(&l), Some((1, 2)));
            assert_eq!(dev_addr_local(&l, ns_len), Some((0x55, 0)));
            assert_eq!(dev_addr_local(&l[..len - 1], ns_len), None);
            let mut n = Vec::new();
            encode_dev_addr_loopback(&mut n, 2, 0x55, Some(77), ns_len);
            assert_eq!(n.len(), len);
            assert_eq!(&n[10..], &77u64.to_ne_bytes()[..ns_len]);
            assert_eq!(dev_addr_local(&n, ns_len), Some((0x55 | LOCAL_FLAG_NS, 77)));
        }
        assert_eq!(encode_iface_addr(0x1234), [0x12, 0x34]);
        assert_eq!(decode_iface_addr(&[0x12, 0x34]), Some(0x1234));
        let e = encode_ep_addr(80, 42);
        assert_eq!(&e[..2], &[0, 80]);
        assert_eq!(decode_ep_addr(&e), Some((80, 42)));
    }
}
