//! [`SockAddr`]: an IPv4 or IPv6 address with a port, a plain value (Copy,
//! Eq, Hash) that both the tcp transport (which compares and sends it) and
//! the tcp sockcm (which takes and hands out C `sockaddr` memory) use.

use nix::sys::socket::{SockaddrIn, SockaddrIn6, SockaddrLike, SockaddrStorage};
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};

pub const AF_INET: u16 = libc::AF_INET as u16;
pub const AF_INET6: u16 = libc::AF_INET6 as u16;

/// Bytes of a C `sockaddr_in`.
pub const SOCKADDR_IN_LEN: usize = std::mem::size_of::<libc::sockaddr_in>();
/// Bytes of a C `sockaddr_in6`.
pub const SOCKADDR_IN6_LEN: usize = std::mem::size_of::<libc::sockaddr_in6>();

/// An IPv4 or IPv6 address with a port: what UCX compares, matches and
/// sends in a connection request (`sockaddr_in`/`sockaddr_in6`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SockAddr {
    pub family: u16,
    /// IPv4 uses the first 4 bytes.
    pub ip: [u8; 16],
    pub port: u16,
    pub flowinfo: u32,
    pub scope_id: u32,
}

/// Why caller-supplied socket address memory was refused
/// ([`SockAddr::from_user`]); its `Display` is the log text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BadAddr {
    Null,
    Family(i32),
    /// (length given, family)
    TooShort(u32, i32),
}

impl std::fmt::Display for BadAddr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            BadAddr::Null => write!(f, "NULL socket address"),
            BadAddr::Family(fam) => write!(f, "unsupported address family {fam}"),
            BadAddr::TooShort(len, fam) => {
                write!(f, "socket address length {len} is too short for family {fam}")
            }
        }
    }
}

impl SockAddr {
    pub fn v4(ip: [u8; 4], port: u16) -> SockAddr {
        let mut a = [0u8; 16];
        a[..4].copy_from_slice(&ip);
        SockAddr { family: AF_INET, ip: a, port, flowinfo: 0, scope_id: 0 }
    }

    pub fn v6(ip: [u8; 16], port: u16) -> SockAddr {
        SockAddr { family: AF_INET6, ip, port, flowinfo: 0, scope_id: 0 }
    }

    pub fn ip_bytes(&self) -> &[u8] {
        if self.family == AF_INET { &self.ip[..4] } else { &self.ip[..] }
    }

    /// Length of the C socket address of this family.
    pub fn raw_len(&self) -> usize {
        if self.family == AF_INET { SOCKADDR_IN_LEN } else { SOCKADDR_IN6_LEN }
    }

    pub fn is_loopback(&self) -> bool {
        if self.family == AF_INET {
            self.ip[..4] == [127, 0, 0, 1]
        } else {
            let mut lo = [0u8; 16];
            lo[15] = 1;
            self.ip == lo
        }
    }

    /// A loopback address: 127.0.0.0/8, ::1, or an IPv4-mapped 127.x.
    pub fn is_loopback_net(&self) -> bool {
        if self.family == AF_INET {
            return self.ip[0] == 127;
        }
        let mapped = self.ip[..10].iter().all(|&b| b == 0) && self.ip[10] == 0xff && self.ip[11] == 0xff;
        self.is_loopback() || (mapped && self.ip[12] == 127)
    }

    /// IPv6 link-local (fe80::/10).
    pub fn is_link_local_v6(&self) -> bool {
        self.family == AF_INET6 && self.ip[0] == 0xfe && self.ip[1] & 0xc0 == 0x80
    }

    /// The C `sockaddr_in`/`sockaddr_in6` bytes into `out`; returns the length.
    fn encode_into(&self, out: &mut [u8; SOCKADDR_IN6_LEN]) -> usize {
        out[..2].copy_from_slice(&self.family.to_ne_bytes());
        out[2..4].copy_from_slice(&self.port.to_be_bytes());
        if self.family == AF_INET {
            out[4..8].copy_from_slice(&self.ip[..4]);
            out[8..16].fill(0);
            SOCKADDR_IN_LEN
        } else {
            out[4..8].copy_from_slice(&self.flowinfo.to_ne_bytes());
            out[8..24].copy_from_slice(&self.ip);
            out[24..28].copy_from_slice(&self.scope_id.to_ne_bytes());
            SOCKADDR_IN6_LEN
        }
    }

    /// The address as a C `sockaddr_in`/`sockaddr_in6`, appended to `out`.
    pub fn encode_raw(&self, out: &mut Vec<u8>) {
        let mut b = [0u8; SOCKADDR_IN6_LEN];
        let n = self.encode_into(&mut b);
        out.extend_from_slice(&b[..n]);
    }

    /// Parse a C socket address of a known family.
    pub fn decode_raw(b: &[u8]) -> Option<SockAddr> {
        if b.len() < SOCKADDR_IN_LEN {
            return None;
        }
        let family = u16::from_ne_bytes([b[0], b[1]]);
        let port = u16::from_be_bytes([b[2], b[3]]);
        match family {
            AF_INET => {
                let mut ip = [0u8; 4];
                ip.copy_from_slice(&b[4..8]);
                Some(SockAddr::v4(ip, port))
            }
            AF_INET6 if b.len() >= SOCKADDR_IN6_LEN => {
                let mut ip = [0u8; 16];
                ip.copy_from_slice(&b[8..24]);
                let mut a = SockAddr::v6(ip, port);
                a.flowinfo = u32::from_ne_bytes([b[4], b[5], b[6], b[7]]);
                a.scope_id = u32::from_ne_bytes([b[24], b[25], b[26], b[27]]);
                Some(a)
            }
            _ => None,
        }
    }

    /// UCX's ordering of addresses (family, then address bytes, then port);
    /// it decides who accepts in a simultaneous connection.
    pub fn ucx_cmp(&self, other: &SockAddr) -> std::cmp::Ordering {
        self.family.cmp(&other.family)
            .then_with(|| self.ip_bytes().cmp(other.ip_bytes()))
            .then_with(|| self.port.cmp(&other.port))
    }

    /// Same peer for matching purposes (family, address, port).
    pub fn same(&self, other: &SockAddr) -> bool {
        self.ucx_cmp(other) == std::cmp::Ordering::Equal
    }

    /// The address as a zero-filled C `sockaddr_storage` and its length
    /// (what `getsockname` would have written), e.g. for
    /// `uct_ep_attr_t::local_address`.
    pub fn to_storage(self) -> (libc::sockaddr_storage, libc::socklen_t) {
        let mut b = [0u8; SOCKADDR_IN6_LEN];
        let n = self.encode_into(&mut b);
        // SAFETY: all-zero is a valid sockaddr_storage.
        let mut ss: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
        // SAFETY: sockaddr_storage has 128 bytes, more than the `n` <= 28
        // copied; both are plain bytes.
        unsafe { std::ptr::copy_nonoverlapping(b.as_ptr(), &mut ss as *mut _ as *mut u8, n) };
        (ss, n as libc::socklen_t)
    }

    /// Parse a `sockaddr_storage` holding an inet address.
    pub fn from_storage(ss: &libc::sockaddr_storage) -> Option<SockAddr> {
        // SAFETY: sockaddr_storage is plain, fully initialized integer
        // fields without padding; it is read as bytes for its size.
        let b = unsafe {
            std::slice::from_raw_parts(ss as *const _ as *const u8, std::mem::size_of::<libc::sockaddr_storage>())
        };
        SockAddr::decode_raw(b)
    }

    /// A socket address handed over by a caller as a pointer and a length
    /// (a `ucs_sock_addr_t`), checked for NULL, family and length.
    ///
    /// # Safety
    /// `sa` must be NULL or readable for `len` bytes.
    pub unsafe fn from_user(sa: *const libc::sockaddr, len: libc::socklen_t) -> Result<SockAddr, BadAddr> {
        if sa.is_null() {
            return Err(BadAddr::Null);
        }
        // SAFETY: non-NULL; the family is the first field of every sockaddr
        // (the caller vouches for the memory).
        let family = unsafe { (*sa).sa_family } as i32;
        let need = match family {
            libc::AF_INET => SOCKADDR_IN_LEN,
            libc::AF_INET6 => SOCKADDR_IN6_LEN,
            _ => return Err(BadAddr::Family(family)),
        };
        if (len as usize) < need {
            return Err(BadAddr::TooShort(len, family));
        }
        // SAFETY: the caller's memory holds `len` >= `need` bytes.
        let b = unsafe { std::slice::from_raw_parts(sa as *const u8, need) };
        SockAddr::decode_raw(b).ok_or(BadAddr::Family(family))
    }

    /// As a standard library address.
    pub fn to_std(&self) -> SocketAddr {
        if self.family == AF_INET {
            SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::new(self.ip[0], self.ip[1], self.ip[2], self.ip[3]),
                                             self.port))
        } else {
            SocketAddr::V6(SocketAddrV6::new(Ipv6Addr::from(self.ip), self.port, self.flowinfo, self.scope_id))
        }
    }

    /// From a standard library address (IPv6 flow info and scope kept).
    pub fn from_std(a: SocketAddr) -> SockAddr {
        match a {
            SocketAddr::V4(v4) => SockAddr::v4(v4.ip().octets(), v4.port()),
            SocketAddr::V6(v6) => SockAddr {
                flowinfo: v6.flowinfo(),
                scope_id: v6.scope_id(),
                ..SockAddr::v6(v6.ip().octets(), v6.port())
            },
        }
    }

    /// Call `f` with the address as nix's `sockaddr_in`/`sockaddr_in6`
    /// (exact C length), for nix's bind/connect.
    #[inline]
    pub(crate) fn with_nix<R>(&self, f: impl FnOnce(&dyn SockaddrLike) -> R) -> R {
        match self.to_std() {
            SocketAddr::V4(v4) => f(&SockaddrIn::from(v4)),
            SocketAddr::V6(v6) => f(&SockaddrIn6::from(v6)),
        }
    }

    /// From nix's storage: None for other families.
    pub(crate) fn from_nix(s: &SockaddrStorage) -> Option<SockAddr> {
        if let Some(v4) = s.as_sockaddr_in() {
            Some(SockAddr::from_std(SocketAddr::V4(SocketAddrV4::from(*v4))))
        } else {
            s.as_sockaddr_in6().map(|v6| SockAddr::from_std(SocketAddr::V6(SocketAddrV6::from(*v6))))
        }
    }
}

impl std::fmt::Display for SockAddr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.family == AF_INET {
            write!(f, "{}:{}", Ipv4Addr::new(self.ip[0], self.ip[1], self.ip[2], self.ip[3]), self.port)
        } else {
            write!(f, "[{}]:{}", Ipv6Addr::from(self.ip), self.port)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordering_like_ucx() {
        let a = SockAddr::v4([10, 0, 0, 1], 5000);
        let b = SockAddr::v4([10, 0, 0, 2], 1);
        assert_eq!(a.ucx_cmp(&b), std::cmp::Ordering::Less);
        let c = SockAddr::v4([10, 0, 0, 1], 4000);
        assert_eq!(a.ucx_cmp(&c), std::cmp::Ordering::Greater);
        assert!(a.same(&SockAddr::v4([10, 0, 0, 1], 5000)));
    }

    #[test]
    fn loopback_networks() {
        assert!(SockAddr::v4([127, 0, 0, 1], 1).is_loopback_net());
        assert!(SockAddr::v4([127, 3, 2, 1], 1).is_loopback_net());
        assert!(!SockAddr::v4([10, 0, 0, 1], 1).is_loopback_net());
        let mut v6 = [0u8; 16];
        v6[15] = 1;
        assert!(SockAddr::v6(v6, 1).is_loopback_net());
        let mut mapped = [0u8; 16];
        mapped[10..].copy_from_slice(&[0xff, 0xff, 127, 0, 0, 9]);
        assert!(SockAddr::v6(mapped, 1).is_loopback_net());
        mapped[12] = 192;
        assert!(!SockAddr::v6(mapped, 1).is_loopback_net());
        v6[15] = 2;
        assert!(!SockAddr::v6(v6, 1).is_loopback_net());
    }

    #[test]
    fn raw_round_trip() {
        let a = SockAddr::v4([127, 0, 0, 1], 33000);
        let mut v = Vec::new();
        a.encode_raw(&mut v);
        assert_eq!(v.len(), 16);
        assert_eq!(SockAddr::decode_raw(&v), Some(a));
        assert!(a.is_loopback());
        let mut b = SockAddr::v6(Ipv6Addr::LOCALHOST.octets(), 7);
        b.flowinfo = 5;
        b.scope_id = 2;
        let mut v = Vec::new();
        b.encode_raw(&mut v);
        assert_eq!(v.len(), 28);
        assert_eq!(SockAddr::decode_raw(&v), Some(b));
        assert!(b.is_loopback() && !b.is_link_local_v6());
        assert_eq!(b.to_string(), "[::1]:7");
    }

    #[test]
    fn storage_std_and_nix_round_trips() {
        let mut a = SockAddr::v6([0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9], 4242);
        a.scope_id = 3;
        assert!(a.is_link_local_v6());
        for x in [a, SockAddr::v4([192, 168, 1, 2], 80)] {
            let (ss, len) = x.to_storage();
            assert_eq!(len as usize, x.raw_len());
            assert_eq!(SockAddr::from_storage(&ss), Some(x));
            assert_eq!(SockAddr::from_std(x.to_std()), x);
            assert_eq!(x.with_nix(|a| a.len()) as usize, x.raw_len());
            let n = SockaddrStorage::from(x.to_std());
            assert_eq!(SockAddr::from_nix(&n), Some(x));
            // SAFETY: `ss` holds `len` bytes.
            let back = unsafe { SockAddr::from_user(&ss as *const _ as *const libc::sockaddr, len) };
            assert_eq!(back, Ok(x));
            // SAFETY: as above; a shorter length is refused before reading more.
            let short = unsafe { SockAddr::from_user(&ss as *const _ as *const libc::sockaddr, len - 1) };
            assert!(matches!(short, Err(BadAddr::TooShort(..))));
        }
        // SAFETY: NULL is allowed.
        assert_eq!(unsafe { SockAddr::from_user(std::ptr::null(), 16) }, Err(BadAddr::Null));
    }
}
