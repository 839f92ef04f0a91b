//! Addresses of the shared-memory transports a peer sends: the device
//! address (host and IPC namespace), the mm iface address (FIFO segment id
//! and mapper bytes), the self iface address (interface id) and the cma
//! iface address (pid, and PID namespace); those carrying a namespace id in
//! both of its widths (8 bytes up to UCX 1.21, 4 from 1.22).

use uct::transports::sm::cma::iface as cma;
use uct::transports::sm::device_addr;
use uct::transports::sm::mm::peer;
use uct::transports::sm::self_;

pub fn run(data: &[u8]) {
    let word = |i: usize| data.get(i * 8..i * 8 + 8).map(|w| u64::from_ne_bytes(w.try_into().unwrap()));

    // Device address, with the namespace id as wide as each release has
    // it: 8 bytes up to 1.21, 4 from 1.22.
    for ns_len in [8, 4] {
        let id_word = word(0);
        let ns_at = || data.get(8..8 + ns_len).and_then(|b| uct::ucs::ns_decode(b, ns_len));
        match device_addr::decode(data, ns_len) {
            Some((id, ns)) => {
                assert_eq!(ns.is_some(), id & (1 << 63) != 0);
                let packed = device_addr::encode(id, ns, ns_len);
                assert_eq!(packed.len(), if ns.is_some() { 8 + ns_len } else { 8 });
                assert_eq!(&packed[..], &data[..packed.len()]);
                assert!(device_addr::matches_local(id_word, ns_at, (id, ns)), "an address matches the host it names");
                assert!(!device_addr::matches_local(id_word, ns_at, (id ^ 1, ns)));
                if let Some(ns) = ns {
                    assert!(!device_addr::matches_local(id_word, ns_at, (id, Some(ns ^ 1))));
                }
            }
            None => assert!(data.len() < 8 || (data.len() < 8 + ns_len && word(0).unwrap() & (1 << 63) != 0)),
        }
    }

    // mm iface address.
    match peer::split_iface_addr(data) {
        Some((seg_id, extra)) => {
            assert_eq!(Some(seg_id), word(0));
            assert_eq!(extra.len() + 8, data.len());
        }
        None => assert!(data.len() < 8),
    }

    // The wake-up socket address in a peer's FIFO control block.
    if peer::check_signal_addr(data).is_ok() {
        assert_eq!(data.len(), 8);
        assert_eq!(u16::from_ne_bytes([data[0], data[1]]), libc::AF_UNIX as u16);
        assert_eq!(data[2], 0, "abstract namespace only");
    }

    // self iface address.
    assert_eq!(self_::decode_iface_addr(data), word(0));

    // cma iface address, in both namespace id widths.
    for ns_len in [8, 4] {
        let long = cma::addr_len_ns(ns_len);
        match cma::decode_iface_addr(data, ns_len) {
            Ok(a) => {
                assert!(a.pid > 0);
                let raw = u32::from_ne_bytes(data[..4].try_into().unwrap());
                assert_eq!(a.pid as u32, raw & !cma::ADDR_FLAG_PID_NS);
                assert_eq!(a.ns.is_some(), raw & cma::ADDR_FLAG_PID_NS != 0);
                let packed = cma::encode_iface_addr(a.pid as u32, a.ns, ns_len);
                assert_eq!(packed.len(), if a.ns.is_some() { long } else { 4 });
                if let Some(ns) = a.ns {
                    assert_eq!(Some(ns), uct::ucs::ns_decode(&data[long - ns_len..], ns_len));
                    assert_eq!(&packed[long - ns_len..], &data[long - ns_len..long]);
                    assert!(cma::same_pid_ns(&a, Some(ns)) && !cma::same_pid_ns(&a, None));
                } else {
                    assert_eq!(&packed[..], &data[..4]);
                    assert!(cma::same_pid_ns(&a, None));
                }
            }
            Err(_) => {
                let raw = data.get(..4).map(|b| u32::from_ne_bytes(b.try_into().unwrap()));
                assert!(match raw {
                    None => true,
                    Some(r) => r & !cma::ADDR_FLAG_PID_NS == 0
                        || (r & cma::ADDR_FLAG_PID_NS != 0 && data.len() < long),
                });
            }
        }
    }
}
