//! The options of a connection's socket: TCP_NODELAY, buffer sizes, SYN
//! retries and keepalive, as UCX sets them, and the binding of a
//! connecting socket to the interface's address.

use super::conn::Conn;
use super::iface::TcpIface;
use super::release::BindSrc;
use crate::abi::*;
use crate::core::config::UNITS_AUTO;
use crate::core::log::{LEVEL_DIAG, LEVEL_ERROR};
use crate::sys::addr::{SockAddr, AF_INET};
use crate::sys::socket::Socket;
use crate::sys::{errno_str, Errno};

impl TcpIface {
    /// The socket options of every connection's socket (and `O_NONBLOCK`
    /// when `set_nb`), as UCX sets them.
    pub(super) fn set_sockopt(&self, s: &Socket, set_nb: bool, peer: Option<&SockAddr>) -> Result<(), ucs_status_t> {
        if set_nb && s.set_nonblock().is_err() {
            return Err(UCS_ERR_IO_ERROR);
        }
        if !opt_ok(s, libc::IPPROTO_TCP, libc::TCP_NODELAY, s.set_nodelay(self.cfg.nodelay)) {
            return Err(UCS_ERR_IO_ERROR);
        }
        // The sizes go to the kernel as C ints (truncated), as in UCX.
        if self.cfg.sndbuf != UNITS_AUTO
            && !opt_ok(s, libc::SOL_SOCKET, libc::SO_SNDBUF, s.set_sndbuf(self.cfg.sndbuf as usize))
        {
            return Err(UCS_ERR_IO_ERROR);
        }
        if self.cfg.rcvbuf != UNITS_AUTO
            && !opt_ok(s, libc::SOL_SOCKET, libc::SO_RCVBUF, s.set_rcvbuf(self.cfg.rcvbuf as usize))
        {
            return Err(UCS_ERR_IO_ERROR);
        }
        if let (Some(cc), Some(peer)) = (&self.cfg.local_cc, peer) {
            if self.stays_on_host(peer) {
                // Best effort: an algorithm the kernel does not have (or
                // does not allow) leaves the system's default.
                if let Err(e) = s.set_congestion(cc) {
                    crate::debug!("tcp_iface {}: TCP_CONGESTION {} on fd {} (to {}): {}", self.if_name, cc, s.fd(), peer,
                                  errno_str(e as i32));
                }
            }
        }
        if self.cfg.syn_cnt != UNITS_AUTO {
            // Best effort, as in UCX.
            opt_ok(s, libc::IPPROTO_TCP, libc::TCP_SYNCNT, s.set_syncnt(self.cfg.syn_cnt as i32));
        }
        if let Some(ms) = self.cfg.user_timeout_ms {
            opt_ok(s, libc::IPPROTO_TCP, libc::TCP_USER_TIMEOUT, s.set_user_timeout(ms));
        }
        Ok(())
    }

    /// The connection stays on this host and its socket was given the
    /// congestion control `UCX_TCP_LOCAL_CC` names (by the side that
    /// connected; an accepted one knows its peer's listening address from
    /// the handshake).
    #[inline]
    pub(super) fn local_cc_conn(&self, conn: &Conn) -> bool {
        self.cfg.local_cc.is_some() && conn.peer.get().is_some_and(|p| self.stays_on_host(&p))
    }

    /// A connection to `peer` does not leave this host: the peer is a
    /// loopback address or the interface's own address.
    fn stays_on_host(&self, peer: &SockAddr) -> bool {
        peer.is_loopback_net() || (peer.family == self.ifaddr.family && peer.ip_bytes() == self.ifaddr.ip_bytes())
    }

    /// TCP keepalive with the interface's times (the values are small and
    /// positive: see `iface::open`).
    pub(super) fn keepalive_enable(&self, s: &Socket) -> Result<(), ucs_status_t> {
        let Some((idle, cnt, intvl)) = self.cfg.keepalive else { return Ok(()) };
        let ok = opt_ok(s, libc::IPPROTO_TCP, libc::TCP_KEEPINTVL, s.set_keepintvl(intvl as u32))
            && cnt.is_none_or(|c| opt_ok(s, libc::IPPROTO_TCP, libc::TCP_KEEPCNT, s.set_keepcnt(c as u32)))
            && opt_ok(s, libc::IPPROTO_TCP, libc::TCP_KEEPIDLE, s.set_keepidle(idle as u32))
            && opt_ok(s, libc::SOL_SOCKET, libc::SO_KEEPALIVE, s.set_keepalive(true));
        if ok { Ok(()) } else { Err(UCS_ERR_IO_ERROR) }
    }

    /// `UCX_TCP_EP_BIND_SRC_ADDR`: bind a connecting socket to the
    /// interface's address (any port), so that the peer sees the connection
    /// come from this interface. With "try" failures are diagnostics; with
    /// "yes" they fail the connection, and so does a strict reverse-path
    /// filter on an IPv4 device.
    pub(super) fn bind_source(&self, conn: &Conn, s: &Socket) -> Result<(), ucs_status_t> {
        let strict = match self.cfg.bind_src {
            BindSrc::No => return Ok(()),
            BindSrc::Try => false,
            BindSrc::Yes => true,
        };
        let level = if strict { LEVEL_ERROR } else { LEVEL_DIAG };
        let me = self as *const TcpIface;
        if self.ifaddr.family == AF_INET {
            let path = format!("/proc/sys/net/ipv4/conf/{}/rp_filter", self.if_name);
            let filter = std::fs::read_to_string(&path).map_err(|_| UCS_ERR_IO_ERROR)
                .and_then(|t| t.trim().parse::<i64>().map_err(|_| UCS_ERR_INVALID_PARAM));
            let verdict = match filter {
                Err(e) => {
                    crate::log_at!(level, "tcp_iface {:p}: unable to read rp_filter from {}", me, path);
                    Err(e)
                }
                Ok(1) => {
                    crate::log_at!(level, "tcp_iface {:p}: net.ipv4.conf.{}.rp_filter is set to strict mode (1), \
                                           connections may fail", me, self.if_name);
                    Err(UCS_ERR_INVALID_PARAM)
                }
                Ok(_) => Ok(()),
            };
            if strict {
                verdict?;
            }
        }
        let mut addr = self.ifaddr;
        addr.port = 0;
        if let Err(e) = s.bind(&addr) {
            crate::log_at!(level, "tcp_ep {:p}: failed to bind fd {} to {}: {}", conn as *const Conn, s.fd(), addr,
                           errno_str(e as i32));
            if strict {
                return Err(UCS_ERR_IO_ERROR);
            }
        }
        Ok(())
    }
}

/// Whether setting a socket option worked; a failure is logged with the
/// option's level and name, as the transport has always logged it.
fn opt_ok(s: &Socket, level: i32, name: i32, r: Result<(), Errno>) -> bool {
    if let Err(e) = r {
        crate::error!("setsockopt(fd={} level={} optname={}) failed: {}", s.fd(), level, name, errno_str(e as i32));
        return false;
    }
    true
}
