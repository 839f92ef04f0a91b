//! The `tcp` transport of UCX 1.13.1, wire-compatible with the C original:
//! active messages (short, short_iov, bcopy, zcopy) and put zcopy over
//! non-blocking TCP sockets, polled through one epoll set from the
//! interface's progress (no helper thread), with UCX's connection protocol
//! (magic number, connection requests and acknowledgements, connection
//! matching by peer address and sequence number, CONNECT_TO_EP by the
//! peer's endpoint key).
//!
//! Files (this one: the configuration tables, the memory domain and the
//! component):
//! - [`codec`]: frames, connection packets, put protocol, address codecs.
//! - [`proto`]: what a peer may send and when (pure checks of received
//!   frames and connection events).
//! - [`iface`]: the interface (settings, open, the listening socket,
//!   attributes, addresses) and its `Transport` implementation, which calls
//!   into the parts below.
//! - `conn`: connections (UCX's tcp endpoints), their socket slot, their
//!   table and state.
//! - `connect`: connecting, accepting, the connection protocol and the
//!   matching of simultaneous connections.
//! - `sockopt`: the socket options, and binding a connecting socket to the
//!   interface's address.
//! - `tx`: the send path (active messages, coalescing, pending requests).
//! - `rx`: the receive path and the interface's progress.
//! - `put`: put zero-copy, both sides, and endpoint flush.
//! - `release`: what differs from one UCX release to the next (keys added
//!   to the tables, statuses, device list, attributes).
//!
//! The component's connection manager (sockcm, `UCX_TCP_CM_*`) lives in
//! [`sockcm`].
//!
//! Every system call (sockets, epoll, network devices) goes through
//! [`crate::sys`]; sockets and the epoll set are owned values there, closed
//! on drop.

pub mod codec;
mod conn;
mod desc;
mod connect;
pub mod iface;
pub mod proto;
mod put;
mod release;
mod rx;
pub mod sockcm;
mod sockopt;
mod tx;

use crate::abi::*;
use crate::core::component::{self, Component, IfaceOpen, MdDesc, MdOpen, TlDesc, TlDevice};
use crate::core::config::{self, embed, field, parser, ArrayDesc, BaseIfaceConfig, BaseMdConfig, ConfigArray,
                          Table};
use crate::core::iface::IfaceParams;
use crate::core::md::{all_cpus, MdImpl, MdObj};
use crate::core::memreg::RegTable;
use crate::core::handles::Completion;
use crate::core::worker::WorkerObj;
use crate::sys::addr::{AF_INET, AF_INET6};
use libc::{c_char, c_int, c_uint, c_ulong, c_void};
use once_cell::sync::Lazy;
use std::mem::offset_of;
use std::sync::Arc;

pub const NAME: &str = "tcp";

// ---------------------------------------------------------------------------
// Configuration, with UCX's names, order and defaults.

/// The md settings (`UCX_TCP_AF_PRIO`, and the keys later releases added).
#[repr(C)]
pub struct TcpMdConfig {
    pub base: BaseMdConfig,
    pub af_prio: ConfigArray<*mut c_char>,
    pub rel: release::MdConfigExtra,
}

/// The interface settings (`UCX_TCP_*`).
#[repr(C)]
pub struct TcpIfaceConfig {
    pub base: BaseIfaceConfig,
    pub tx_seg_size: usize,
    pub rx_seg_size: usize,
    pub max_iov: c_ulong,
    pub sendv_thresh: usize,
    pub prefer_default: c_int,
    pub put_enable: c_int,
    pub conn_nb: c_int,
    pub max_poll: c_uint,
    pub max_conn_retries: c_uint,
    pub nodelay: c_int,
    pub sndbuf: usize,
    pub rcvbuf: usize,
    pub syn_cnt: c_ulong,
    /// `USER_TIMEOUT` (1.22+; unfilled before), libucs time units.
    pub user_timeout: u64,
    pub tx_max_bufs: c_int,
    pub tx_bufs_grow: c_uint,
    pub rx_max_bufs: c_int,
    pub rx_bufs_grow: c_uint,
    pub port_range: ucs_range_spec_t,
    pub keepidle: u64,
    pub keepcnt: c_ulong,
    pub keepintvl: u64,
    pub tx_coalesce: usize,
    pub handshake_timeout: u64,
    pub local_cc: *mut c_char,
    pub rx_desc_min: usize,
    pub tx_coalesce_timeout: u64,
    /// The keys of later releases (placed in the table among the others).
    pub rel: release::IfaceConfigExtra,
}

static STRING_ARRAY: Lazy<ArrayDesc> = Lazy::new(|| {
    ArrayDesc::new(std::mem::size_of::<*mut c_char>(), parser::string())
});

static MD_TABLE: Lazy<Table> = Lazy::new(|| {
    let mut t = vec![
        embed(&config::BASE_MD_TABLE, offset_of!(TcpMdConfig, base)),
        field(c"AF_PRIO", c"inet,inet6", c"Priority of address families used for socket connections",
              offset_of!(TcpMdConfig, af_prio), parser::array(Lazy::force(&STRING_ARRAY))),
    ];
    t.extend(release::md_fields(offset_of!(TcpMdConfig, rel)));
    Table::new(t)
});

static IFACE_TABLE: Lazy<Table> = Lazy::new(|| {
    let rel = offset_of!(TcpIfaceConfig, rel);
    let mut t = vec![
        field(c"", c"MAX_NUM_EPS=256", c"", offset_of!(TcpIfaceConfig, base), parser::table(&config::BASE_IFACE_TABLE)),
        field(c"TX_SEG_SIZE", c"8kb", c"Size of the send copy-out buffer",
              offset_of!(TcpIfaceConfig, tx_seg_size), parser::memunits()),
        field(c"RX_SEG_SIZE", c"64kb", c"Size of the receive copy-out buffer",
              offset_of!(TcpIfaceConfig, rx_seg_size), parser::memunits()),
        field(c"MAX_IOV", c"6", c"Most iov entries of user payload in one vector send",
              offset_of!(TcpIfaceConfig, max_iov), parser::ulong()),
        field(c"SENDV_THRESH", c"2kb", c"Payload size from which short active messages are sent with sendmsg()\n\
                instead of being copied and sent with send()",
              offset_of!(TcpIfaceConfig, sendv_thresh), parser::memunits()),
        field(c"PREFER_DEFAULT", c"y", c"Give the network device of the default route a higher priority",
              offset_of!(TcpIfaceConfig, prefer_default), parser::boolean()),
        field(c"PUT_ENABLE", c"y", c"Offer put zcopy", offset_of!(TcpIfaceConfig, put_enable), parser::boolean()),
        field(c"CONN_NB", c"n", c"Connect without blocking (faster start-up, but a loaded TCP/IP stack may\n\
                reset such connections)",
              offset_of!(TcpIfaceConfig, conn_nb), parser::boolean()),
        field(c"MAX_POLL", c"16", c"Most socket events handled by one progress call",
              offset_of!(TcpIfaceConfig, max_poll), parser::uint()),
        field(c"MAX_CONN_RETRIES", c"25", c"Most connection attempts when the peer's host drops connections\n\
                for lack of resources",
              offset_of!(TcpIfaceConfig, max_conn_retries), parser::uint()),
        field(c"NODELAY", c"y", c"Set TCP_NODELAY (no Nagle algorithm), usually faster",
              offset_of!(TcpIfaceConfig, nodelay), parser::boolean()),
        field(c"SNDBUF", c"auto", c"Socket send buffer size", offset_of!(TcpIfaceConfig, sndbuf), parser::memunits()),
        field(c"RCVBUF", c"auto", c"Socket receive buffer size", offset_of!(TcpIfaceConfig, rcvbuf), parser::memunits()),
        field(c"SYN_CNT", c"auto", c"SYN retransmits before a connection attempt is abandoned (at most 255;\n\
                auto: the system default)",
              offset_of!(TcpIfaceConfig, syn_cnt), parser::ulunits()),
    ];
    t.extend(release::user_timeout_rows(offset_of!(TcpIfaceConfig, user_timeout)));
    t.extend([
        field(c"TX_MAX_BUFS", c"-1", c"Checked like UCX's pool limit (-1: none, at least TX_BUFS_GROW); send buffers here belong to endpoints and are not limited by it",
              offset_of!(TcpIfaceConfig, tx_max_bufs), parser::int()),
        field(c"TX_BUFS_GROW", c"8", release::tx_bufs_grow_doc(), offset_of!(TcpIfaceConfig, tx_bufs_grow),
              parser::uint()),
    ]);
    t.extend(release::tx_pool_fields(rel));
    t.extend([
        field(c"RX_MAX_BUFS", c"-1", c"Checked like UCX's pool limit (-1: none, at least RX_BUFS_GROW); receive buffers here belong to endpoints and are not limited by it",
              offset_of!(TcpIfaceConfig, rx_max_bufs), parser::int()),
        field(c"RX_BUFS_GROW", c"8", release::rx_bufs_grow_doc(), offset_of!(TcpIfaceConfig, rx_bufs_grow),
              parser::uint()),
    ]);
    t.extend(release::rx_pool_fields(rel));
    t.extend([
        field(c"PORT_RANGE", c"0", c"Range of ports to listen on, picked at random; 0: the system picks one",
              offset_of!(TcpIfaceConfig, port_range), parser::range_spec()),
    ]);
    t.extend(release::port_range_fields(rel));
    t.extend([
        field(c"KEEPIDLE", c"10s", c"Idle time of a connection before TCP sends keepalive probes; \"inf\"\n\
                disables keepalive",
              offset_of!(TcpIfaceConfig, keepidle), parser::time_units()),
        field(c"KEEPCNT", c"auto", c"Keepalive probes TCP sends before dropping the connection; \"inf\"\n\
                disables keepalive",
              offset_of!(TcpIfaceConfig, keepcnt), parser::ulunits()),
        field(c"KEEPINTVL", c"2s", c"Time between keepalive probes; \"inf\" disables keepalive",
              offset_of!(TcpIfaceConfig, keepintvl), parser::time_units()),
    ]);
    t.extend(release::keepalive_fields(rel));
    t.extend([
        // Not in UCX 1.13.1: an extension of this library.
        field(c"TX_COALESCE", c"256k", c"Active messages sent back to back (between two progress calls) on one\n\
                endpoint are held back, up to this many bytes, and go out together in one\n\
                system call; the first message after a progress call is always sent at\n\
                once, as are puts above 17 KiB and, on a connection that leaves the host,\n\
                zero-copy messages above 17 KiB and the message after one. Held messages are on the wire\n\
                before any other operation of the worker that can send (another endpoint\n\
                or transport, the connection manager, progress, flush, event arm, endpoint\n\
                destroy) and before the same thread works on another worker; only a\n\
                single-threaded worker holds; a sender that stops calling into UCT gets\n\
                them sent by a timer after TX_COALESCE_TIMEOUT.\n\
                0: off (every message sent at once, as UCX 1.13.1 does) (uct-rs extension).",
              offset_of!(TcpIfaceConfig, tx_coalesce), parser::memunits()),
        // Not in UCX 1.13.1: an extension of this library.
        field(c"HANDSHAKE_TIMEOUT", c"5s", c"Time an accepted connection has to send the magic number and its\n\
                connection request; a connection that has not done so by then is closed\n\
                (\"inf\": no limit; uct-rs extension).",
              offset_of!(TcpIfaceConfig, handshake_timeout), parser::time_units()),
        // Not in UCX 1.13.1: an extension of this library.
        field(c"LOCAL_CC", c"reno", c"TCP congestion control of the connections that stay on this host (to a\n\
                loopback address or to the interface's own address); empty: the system's\n\
                default. Such a connection has no network to share: with BBR (a common\n\
                default) a stream of messages that end just past a segment boundary\n\
                (64 KiB zero-copy messages over lo) runs at a third of its rate in about half\n\
                of the runs; reno, always available, does not (uct-rs extension).",
              offset_of!(TcpIfaceConfig, local_cc), parser::string()),
        // Not in UCX 1.13.1: an extension of this library.
        field(c"RX_DESC_MIN", c"17k", c"An active message of at least this many bytes that is still arriving is\n\
                received into a buffer of its own and handed to its handler as a descriptor\n\
                (UCT_CB_PARAM_FLAG_DESC), which the handler may keep instead of copying the\n\
                data (libucp does, for data that arrives before its receive is posted).\n\
                Each such message then takes a receive call of its own: smaller ones, which\n\
                arrive several per receive, cost more that way than the copy saves.\n\
                \"inf\": off, every message is handed over from the receive buffer and must be\n\
                copied to be kept, as UCX 1.13.1 does (uct-rs extension).",
              offset_of!(TcpIfaceConfig, rx_desc_min), parser::memunits()),
        // Not in UCX 1.13.1: an extension of this library.
        field(c"TX_COALESCE_TIMEOUT", c"5ms", c"Messages held back by TX_COALESCE while the application makes no call\n\
                into UCT that sends them (it waits for its peer by other means) are sent\n\
                by a timer on libucs's async thread after this long (up to twice it;\n\
                at least 1ms). A worker whose async context is in signal or poll mode\n\
                runs no such timer and holds no messages. \"inf\": no timer, held messages wait for\n\
                the application's next call (uct-rs extension).",
              offset_of!(TcpIfaceConfig, tx_coalesce_timeout), parser::time_units()),
    ]);
    Table::new(t)
});

// ---------------------------------------------------------------------------
// The memory domain: puts carry raw remote addresses (the packed key is
// empty), so the md keeps the ranges registered with it, and a put from a
// peer is honoured only inside one of them.

pub struct TcpMd {
    /// Address families to try, in order.
    pub af_prio: Vec<u16>,
    /// What was registered with this md (shared with its interfaces,
    /// which check every incoming put against it).
    pub regs: Arc<RegTable>,
    /// Whether bridge devices are listed.
    pub bridges: bool,
}

impl MdImpl for TcpMd {
    fn reg_nonblock_mem_types(&self) -> u64 {
        // Registration records the range only: never blocks.
        if release::md_registers() { 1u64 << UCS_MEMORY_TYPE_HOST } else { 0 }
    }

    fn cache_mem_types(&self) -> u64 {
        if release::md_registers() { 1u64 << UCS_MEMORY_TYPE_HOST } else { 0 }
    }

    fn query(&self, attr: &mut uct_md_attr_t) {
        attr.cap.flags = if release::md_registers() { UCT_MD_FLAG_REG | UCT_MD_FLAG_NEED_RKEY } else { 0 };
        attr.cap.max_alloc = 0;
        attr.cap.reg_mem_types = if release::md_registers() { 1 << UCS_MEMORY_TYPE_HOST } else { 0 };
        attr.cap.alloc_mem_types = 0;
        attr.cap.access_mem_types = 1 << UCS_MEMORY_TYPE_HOST;
        attr.cap.detect_mem_types = 0;
        attr.cap.max_reg = c_ulong::MAX as _;
        attr.rkey_packed_size = 0;
        attr.reg_cost.c = 0.0;
        attr.reg_cost.m = 0.0;
        attr.local_cpus = all_cpus();
    }

    fn mem_reg(&self, address: *mut c_void, length: usize, _flags: u32) -> Result<uct_mem_h, ucs_status_t> {
        self.regs.register(address as usize, length)
    }

    fn mem_dereg(&self, memh: uct_mem_h, _flags: u32, _comp: Completion) -> ucs_status_t {
        match self.regs.deregister(memh) {
            Ok(()) => UCS_OK,
            Err(e) => e,
        }
    }
}

fn md_resources() -> Vec<String> {
    vec![NAME.to_string()]
}

impl MdOpen for TcpMd {
    type Config = TcpMdConfig;
    fn open(_c: &'static Component, _name: &str, cfg: &TcpMdConfig) -> Result<Box<dyn MdImpl>, ucs_status_t> {
        md_open(cfg)
    }
}

fn md_open(cfg: &TcpMdConfig) -> Result<Box<dyn MdImpl>, ucs_status_t> {
    let mut af_prio = Vec::new();
    let count = (cfg.af_prio.count as usize).min(2);
    for i in 0..count {
        // SAFETY: libucs filled `items` with `count` C strings.
        let s = unsafe { std::ffi::CStr::from_ptr(*cfg.af_prio.items.add(i)) };
        let s = s.to_string_lossy();
        if s.eq_ignore_ascii_case("inet") {
            af_prio.push(AF_INET);
        } else if s.eq_ignore_ascii_case("inet6") {
            af_prio.push(AF_INET6);
        } else {
            crate::error!("invalid address family: {}", s);
            return Err(UCS_ERR_INVALID_PARAM);
        }
    }
    Ok(Box::new(TcpMd { af_prio, regs: Arc::new(RegTable::new(NAME)), bridges: release::bridges_listed(&cfg.rel) }))
}

fn tcp_md(md: &MdObj) -> Option<&TcpMd> {
    let any: &dyn std::any::Any = md.imp.as_ref();
    any.downcast_ref::<TcpMd>()
}

fn query_devices(md: &MdObj) -> Result<Vec<TlDevice>, ucs_status_t> {
    let Some(m) = tcp_md(md) else {
        return Err(UCS_ERR_INVALID_PARAM);
    };
    let mut names = crate::sys::netif::active_devices(&m.af_prio, release::inet6_loopback())?;
    if release::devices_sorted() {
        crate::sys::netif::sort_names(&mut names);
    }
    if !m.bridges {
        names.retain(|name| {
            let bridge = crate::sys::netif::is_bridge(name);
            if bridge {
                crate::debug!("filtered out bridge device {}", name);
            }
            !bridge
        });
    }
    Ok(names
        .into_iter()
        .map(|name| {
            let sys_device = release::device_topo(&name).sys_device;
            TlDevice { name, dev_type: UCT_DEVICE_TYPE_NET, sys_device }
        })
        .collect())
}

/// Opens tcp interfaces.
struct TcpOpen;

impl IfaceOpen for TcpOpen {
    type Config = TcpIfaceConfig;
    fn open(md: &MdObj, worker: &WorkerObj, params: &IfaceParams, cfg: &TcpIfaceConfig)
            -> Result<uct_iface_h, ucs_status_t> {
        let Some(m) = tcp_md(md) else {
            crate::error!("tcp: memory domain {} is not a tcp memory domain", md.name);
            return Err(UCS_ERR_INVALID_PARAM);
        };
        iface::open(md, worker, params, cfg, &m.af_prio, m.regs.clone())
    }
}

static TLS: [TlDesc; 1] = [TlDesc::new::<TcpOpen>(NAME, c"TCP transport", c"TCP_", &IFACE_TABLE, query_devices)];

/// The tcp component: its memory domain, the tcp transport and the
/// connection manager.
pub static COMPONENT: Component = Component {
    name: NAME,
    flags: || UCT_COMPONENT_FLAG_CM,
    md: MdDesc::new::<TcpMd>(c"TCP memory domain", c"TCP_", &MD_TABLE),
    cm: Some(sockcm::CM),
    md_resources,
    tls: &TLS,
    rkey_unpack: component::rkey_unpack_zero,
    rkey_ptr: component::rkey_ptr_unsupported,
    rkey_release: component::rkey_release_nop,
};
