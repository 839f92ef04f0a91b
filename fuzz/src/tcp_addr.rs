//! tcp addresses a peer hands us: the device, iface and endpoint addresses
//! of the tcp transport (`transports::tcp::codec`) and the C socket address
//! inside a connection request (`sys::addr::SockAddr::decode_raw`).
//!
//! Invariants checked on every input:
//! - each decoder accepts exactly the inputs at least as long as its fixed
//!   layout and reads nothing past it (the same answer for the prefix);
//! - what it decodes encodes back to the very bytes it came from (for a
//!   loopback device address: unless the namespace bit is clear and the
//!   namespace field not zero, the one field the encoder writes as zero;
//!   in both widths of the namespace id, 8 bytes up to 1.21 and 4 from 1.22);
//! - a decoded socket address is of a known family, no longer than the
//!   input, re-encodes to the input's bytes (an IPv4 address's 8 padding
//!   bytes as zeros), decodes back to itself, and survives the conversions
//!   the transport and the connection manager apply to it.

use uct::sys::addr::{SockAddr, AF_INET, AF_INET6, SOCKADDR_IN6_LEN, SOCKADDR_IN_LEN};
use uct::transports::tcp::codec;

pub fn run(data: &[u8]) {
    iface_addr(data);
    ep_addr(data);
    dev_addr(data);
    sock_addr(data);
}

fn iface_addr(data: &[u8]) {
    let got = codec::decode_iface_addr(data);
    assert_eq!(got.is_some(), data.len() >= codec::IFACE_ADDR_LEN);
    let Some(port) = got else { return };
    let fixed = &data[..codec::IFACE_ADDR_LEN];
    assert_eq!(codec::decode_iface_addr(fixed), got);
    assert_eq!(codec::encode_iface_addr(port), fixed);
}

fn ep_addr(data: &[u8]) {
    let got = codec::decode_ep_addr(data);
    assert_eq!(got.is_some(), data.len() >= codec::EP_ADDR_LEN);
    let Some((port, key)) = got else { return };
    let fixed = &data[..codec::EP_ADDR_LEN];
    assert_eq!(codec::decode_ep_addr(fixed), got);
    assert_eq!(codec::encode_ep_addr(port, key), fixed);
    // An endpoint address starts with the same port as an iface address.
    assert_eq!(codec::decode_iface_addr(data), Some(port));
}

fn dev_addr(data: &[u8]) {
    let head = codec::dev_addr_head(data);
    assert_eq!(head.is_some(), data.len() >= 2);
    let Some((flags, family)) = head else { return };
    assert_eq!((flags, family), (data[0], u16::from(data[1])));
    assert_eq!(codec::dev_addr_head(&data[..2]), head);

    // The loopback form, in the layout of each release: the namespace id
    // 8 bytes wide up to 1.21, 4 from 1.22.
    for ns_len in [8, 4] {
        let full_len = codec::dev_addr_loopback_len(ns_len);
        let local = codec::dev_addr_local(data, ns_len);
        assert_eq!(local.is_some(), data.len() >= full_len);
        let Some((id, ns)) = local else { continue };
        assert!(ns_len == 8 || ns <= u64::from(u32::MAX));
        let fixed = &data[..full_len];
        assert_eq!(codec::dev_addr_local(fixed, ns_len), local);
        let in_ns = id & codec::LOCAL_FLAG_NS != 0;
        let mut again = Vec::new();
        codec::encode_dev_addr_loopback(&mut again, family, id, in_ns.then_some(ns), ns_len);
        assert_eq!(again.len(), full_len);
        assert_eq!(codec::dev_addr_head(&again), Some((codec::DEV_FLAG_LOOPBACK, family)));
        let expect_ns = if in_ns { ns } else { 0 };
        assert_eq!(codec::dev_addr_local(&again, ns_len), Some((id, expect_ns)));
        if in_ns || ns == 0 {
            assert_eq!(&again[2..], &fixed[2..]);
        }
    }

    // The IP form: flags 0, family, then the 4 or 16 address bytes.
    let ip_len = match family {
        f if f == AF_INET => 4,
        f if f == AF_INET6 => 16,
        _ => return,
    };
    if data.len() < 2 + ip_len {
        return;
    }
    let mut ip = [0u8; 16];
    ip[..ip_len].copy_from_slice(&data[2..2 + ip_len]);
    let a = if ip_len == 4 { SockAddr::v4([ip[0], ip[1], ip[2], ip[3]], 0) } else { SockAddr::v6(ip, 0) };
    let mut enc = Vec::new();
    codec::encode_dev_addr_ip(&mut enc, &a);
    assert_eq!(enc.len(), 2 + ip_len);
    assert_eq!(codec::dev_addr_head(&enc), Some((0, family)));
    assert_eq!(&enc[2..], &data[2..2 + ip_len]);
}

fn sock_addr(data: &[u8]) {
    let got = SockAddr::decode_raw(data);
    let family = (data.len() >= 2).then(|| u16::from_ne_bytes([data[0], data[1]]));
    let accept = match family {
        Some(f) if f == AF_INET => data.len() >= SOCKADDR_IN_LEN,
        Some(f) if f == AF_INET6 => data.len() >= SOCKADDR_IN6_LEN,
        _ => false,
    };
    assert_eq!(got.is_some(), accept, "family {family:?}, {} bytes", data.len());
    let Some(a) = got else { return };
    assert_eq!(Some(a.family), family);
    let n = a.raw_len();
    assert!(n <= data.len());
    assert_eq!(SockAddr::decode_raw(&data[..n]), got);

    let mut enc = Vec::new();
    a.encode_raw(&mut enc);
    assert_eq!(enc.len(), n);
    if a.family == AF_INET {
        // sin_family, sin_port, sin_addr; sin_zero is not kept.
        assert_eq!(&enc[..8], &data[..8]);
        assert_eq!(&enc[8..], &[0u8; 8]);
        assert_eq!(a.ip_bytes(), &data[4..8]);
        assert_eq!(&a.ip[4..], &[0u8; 12]);
    } else {
        assert_eq!(&enc[..], &data[..n]);
        assert_eq!(a.ip_bytes(), &data[8..24]);
    }
    assert_eq!(SockAddr::decode_raw(&enc), got);

    // What the transport and the connection manager do with the address.
    assert_eq!(SockAddr::from_std(a.to_std()), a);
    let (ss, len) = a.to_storage();
    assert_eq!(len as usize, n);
    assert_eq!(SockAddr::from_storage(&ss), got);
    assert!(a.same(&a));
    assert_eq!(a.ucx_cmp(&a), std::cmp::Ordering::Equal);
    let text = a.to_string();
    assert!(text.ends_with(&format!(":{}", a.port)), "{text}");
    let _ = (a.is_loopback(), a.is_link_local_v6());
}
