//! The interface tables of the ib family: the IB interface table (`IB_`),
//! the RC tables (`RC_`) and rc_verbs' own table (`RC_VERBS_`), nested as
//! the parent module describes.

use super::parsers;
use super::{ADDR_TYPE_NAMES, FENCE_NAMES, FLUSH_MODE_NAMES, PATH_MTU_NAMES};
use super::release;
use crate::abi::*;
use crate::core::config::{self, embed_with_defaults, field, parser, BaseIfaceConfig, ConfigArray, Table};
use libc::{c_char, c_int, c_uint, c_ulong};
use once_cell::sync::Lazy;
use std::ffi::CStr;
use std::mem::offset_of;


/// A buffer pool's settings (`*_MAX_BUFS`, `*_BUFS_GROW`, and from 1.14
/// `*_MAX_CHUNK_SIZE`, `*_GROW_FACTOR`).
#[repr(C)]
pub struct MpoolConfig {
    /// Most buffers of the pool; -1: no limit.
    pub max_bufs: c_int,
    /// Buffers added each time the pool grows (0: the transport chooses).
    pub bufs_grow: c_uint,
    /// Largest chunk the pool allocates at once (1.14+).
    pub max_chunk_size: usize,
    /// Each chunk has this many times the buffers of the one before (1.14+).
    pub grow_factor: f64,
}

/// The `PKEY` value: libucs writes 8 bytes for "auto" and 4 for a number.
#[repr(C)]
pub struct HexSlot {
    pub value: c_uint,
    pub _spill: c_uint,
}

/// The allow/deny list `ROCE_SUBNETS` (1.18+; `ucs_config_allow_list_t`).
#[repr(C)]
pub struct AllowList {
    pub names: ConfigArray<*mut c_char>,
    /// 0: allow all, 1: allow only the listed, 2: deny the listed.
    pub mode: c_int,
}

/// The per-step overheads of sending (`SEND_OVERHEAD`, 1.17+), in seconds
/// (1.18) or libucs time units (1.17, see [`release::SendOverheadValue`]).
#[repr(C)]
pub struct SendOverhead {
    pub bcopy: release::SendOverheadValue,
    pub cqe: release::SendOverheadValue,
    pub db: release::SendOverheadValue,
    pub wqe_fetch: release::SendOverheadValue,
    pub wqe_post: release::SendOverheadValue,
}

/// Settings of every IB interface (`UCX_IB_*` keys of the interface).
#[repr(C)]
pub struct IbIfaceConfig {
    pub base: BaseIfaceConfig,
    /// Size of the send and receive bounce buffers (largest bcopy message).
    pub seg_size: usize,
    /// Send queue length (work requests) of each QP.
    pub tx_queue_len: c_uint,
    /// Send work requests posted together in one list.
    pub tx_max_batch: c_uint,
    /// Most send completions taken from the CQ per poll.
    pub tx_max_poll: c_uint,
    /// Inline data space requested for each send work request (bytes).
    pub tx_min_inline: usize,
    /// Space requested for responses (reads, atomics) delivered inline in
    /// the send CQE.
    pub tx_inline_resp: usize,
    /// Scatter/gather entries requested per send work request.
    pub tx_min_sge: c_uint,
    /// The send buffer pool.
    pub tx_mp: MpoolConfig,
    /// Receive queue length (the shared receive queue for RC).
    pub rx_queue_len: c_uint,
    /// Receive buffers posted together.
    pub rx_max_batch: c_uint,
    /// Most receive completions taken from the CQ per poll.
    pub rx_max_poll: c_uint,
    /// Space requested for receive data delivered inline in the CQE.
    pub rx_inline: usize,
    /// The receive buffer pool.
    pub rx_mp: MpoolConfig,
    /// Address type (index into [`ADDR_TYPE_NAMES`]); deprecated by IS_GLOBAL.
    pub addr_type: c_uint,
    /// Always use global routing (a GRH on every packet).
    pub is_global: c_int,
    /// Route by FLID with site-local GIDs (1.16+).
    pub flid_route: c_int,
    /// Service level (IB) or Ethernet priority (RoCEv2); "auto": 0.
    pub sl: c_ulong,
    /// Traffic class (IB) or DSCP (RoCEv2); "auto": 106 on RoCEv2, else 0.
    pub traffic_class: c_ulong,
    /// Hop limit (IB) or TTL (RoCEv2), 0..255.
    pub hop_limit: c_uint,
    /// Paths (connections) per peer pair; "auto" from LAG or LMC.
    pub num_paths: c_ulong,
    /// RoCEv2: reach only addresses of the local IP subnet.
    pub roce_local_subnet: c_int,
    /// RoCEv2: subnet prefix length for that check ("auto": from the address).
    pub roce_subnet_prefix_len: c_ulong,
    /// RoCE: subnets whose GIDs may be used (1.18+).
    pub roce_subnets: AllowList,
    /// RoCE: how a peer is judged reachable (1.19+; index into route,
    /// local_subnet, all).
    pub roce_reachability_mode: c_uint,
    /// Multiplier of the UDP source port on RoCE LAG.
    pub roce_path_factor: c_uint,
    /// LID path bits to use (ranges), the low part of the LID under LMC.
    pub lid_path_bits: ConfigArray<ucs_range_spec_t>,
    /// Partition key (15 bits) or "auto": the first full-member entry.
    pub pkey: HexSlot,
    /// Path MTU (index into [`PATH_MTU_NAMES`]; 0: the port's).
    pub path_mtu: c_uint,
    /// Counter set of the QPs (1.14+, mlx5 only).
    pub counter_set_id: c_ulong,
    /// Service level of replies (1.17+, mlx5 only).
    pub reverse_sl: c_ulong,
    /// Estimated send overheads (1.17+).
    pub send_overhead: SendOverhead,
}

/// Settings shared by every RC-like transport (`UCX_RC_*`).
#[repr(C)]
pub struct RcIfaceCommonConfig {
    pub ib: IbIfaceConfig,
    /// Outstanding RDMA reads/atomics per QP; "auto": the device maximum.
    pub max_rd_atomic: c_ulong,
    /// Transport (ACK) timeout, seconds.
    pub timeout: f64,
    /// Transport retries before the QP fails.
    pub retry_count: c_uint,
    /// Delay the peer is asked to wait after a receiver-not-ready NAK, seconds.
    pub rnr_timeout: f64,
    /// Retries after receiver-not-ready NAKs (7: unlimited in IB).
    pub rnr_retry_count: c_uint,
    /// Active-message flow control (credits) on.
    pub fc_enable: c_int,
    /// Credits (active messages without grant) per endpoint.
    pub fc_wnd_size: c_uint,
    /// Fraction of the window left at which a hard credit request is sent.
    pub fc_hard_thresh: f64,
    /// Fence mode (index into [`FENCE_NAMES`]).
    pub fence: c_uint,
    /// Largest get zcopy; "auto": the port's largest message.
    pub max_get_zcopy: usize,
    /// Most bytes of RDMA reads in flight per interface.
    pub tx_num_get_bytes: usize,
    /// Poll send completions on every progress call, not only when no
    /// receive completion was found.
    pub tx_poll_always: c_int,
    /// Enhanced connection establishment value (1.14+).
    pub ece: c_ulong,
}

/// Settings of the RC transports with their own send CQ (rc_verbs, rc_mlx5).
#[repr(C)]
pub struct RcIfaceConfig {
    pub common: RcIfaceCommonConfig,
    /// Fraction of the window left at which a soft credit request is sent.
    pub fc_soft_thresh: f64,
    /// Most unsignalled send work requests in a row.
    pub tx_cq_moderation: c_uint,
    /// Send CQ length: the most signalled sends in flight.
    pub tx_cq_len: c_uint,
}

/// The rc_verbs settings (`UCX_RC_VERBS_*`).
#[repr(C)]
pub struct RcVerbsIfaceConfig {
    pub rc: RcIfaceConfig,
    /// Space for active-message headers in zcopy sends (0: no am_zcopy).
    pub max_am_hdr: usize,
    /// Most posted work requests in flight per QP (also bounded by the send
    /// queue length); -1 (printed "inf"): no own limit.
    pub tx_max_wr: c_uint,
    /// How a flush is posted (index into [`FLUSH_MODE_NAMES`]).
    pub flush_mode: c_uint,
}

fn mpool_rows(prefix: &str, off: usize, max_dfl: &'static CStr, grow_dfl: &'static CStr, what: Pool)
              -> Vec<ucs_config_field_t> {
    let (max_name, grow_name, max_doc, grow_doc) = match prefix {
        "TX_" => (c"TX_MAX_BUFS", c"TX_BUFS_GROW",
                  c"Most send buffers of the interface; -1 is unlimited. Limiting them on RC\n\
                    may stall sends or deadlock.",
                  c"Send buffers added each time the pool grows (0: the transport chooses)"),
        _ => (c"RX_MAX_BUFS", c"RX_BUFS_GROW", c"Most receive buffers of the interface; -1 is unlimited.",
              c"Receive buffers added each time the pool grows (0: the transport chooses)"),
    };
    let mut v = vec![
        field(max_name, max_dfl, max_doc, off + offset_of!(MpoolConfig, max_bufs), parser::int()),
        field(grow_name, grow_dfl, grow_doc, off + offset_of!(MpoolConfig, bufs_grow), parser::uint()),
    ];
    v.extend(release::mpool_growth_rows(what, off + offset_of!(MpoolConfig, max_chunk_size),
                                        off + offset_of!(MpoolConfig, grow_factor)));
    v
}

/// Which buffer pool a row describes.
#[derive(Clone, Copy)]
pub enum Pool {
    Tx,
    Rx,
}

/// `UCX_IB_*` of an interface: the IB interface table.
pub static IB_IFACE_TABLE: Lazy<Table> = Lazy::new(|| {
    let mut t = vec![
        embed_with_defaults(c"", release::ib_iface_base_defaults(), &config::BASE_IFACE_TABLE,
                            offset_of!(IbIfaceConfig, base)),
        field(c"SEG_SIZE", c"8192", c"Size of the bounce buffers of sends and receives",
              offset_of!(IbIfaceConfig, seg_size), parser::memunits()),
        field(c"TX_QUEUE_LEN", c"256", c"Length of each QP's send queue (work requests)",
              offset_of!(IbIfaceConfig, tx_queue_len), parser::uint()),
        field(c"TX_MAX_BATCH", c"16",
              c"Send work requests posted in one list: more saves CPU, fewer lowers latency",
              offset_of!(IbIfaceConfig, tx_max_batch), parser::uint()),
        field(c"TX_MAX_POLL", c"16", c"Most send completions taken per poll of the send CQ",
              offset_of!(IbIfaceConfig, tx_max_poll), parser::uint()),
        field(c"TX_MIN_INLINE", c"64",
              c"Inline data space requested in each send work request; smaller messages go inline",
              offset_of!(IbIfaceConfig, tx_min_inline), parser::memunits()),
        field(c"TX_INLINE_RESP", c"0",
              c"Space requested for small responses (reads, atomics) delivered inside the completion",
              offset_of!(IbIfaceConfig, tx_inline_resp), parser::memunits()),
        field(c"TX_MIN_SGE", c"5", c"Scatter/gather entries requested per send work request",
              offset_of!(IbIfaceConfig, tx_min_sge), parser::uint()),
    ];
    t.extend(mpool_rows("TX_", offset_of!(IbIfaceConfig, tx_mp), c"-1", c"1024", Pool::Tx));
    t.extend([
        field(c"RX_QUEUE_LEN", c"4096", c"Length of the receive queue (receive buffers posted)",
              offset_of!(IbIfaceConfig, rx_queue_len), parser::uint()),
        field(c"RX_MAX_BATCH", c"16", c"Receive buffers posted together",
              offset_of!(IbIfaceConfig, rx_max_batch), parser::uint()),
        field(c"RX_MAX_POLL", c"16", c"Most receive completions taken per poll of the receive CQ",
              offset_of!(IbIfaceConfig, rx_max_poll), parser::uint()),
        field(c"RX_INLINE", c"0",
              c"Space requested for receive data delivered inside the completion; the device may\n\
                give less, or more when it costs nothing",
              offset_of!(IbIfaceConfig, rx_inline), parser::memunits()),
    ]);
    t.extend(mpool_rows("RX_", offset_of!(IbIfaceConfig, rx_mp), c"-1", c"0", Pool::Rx));
    t.extend([
        field(c"ADDR_TYPE", c"auto",
              c"Interface address type; auto picks it from the link layer and subnet prefix.\n\
                Deprecated: IS_GLOBAL forces global routing.",
              offset_of!(IbIfaceConfig, addr_type), parser::enumeration(ADDR_TYPE_NAMES.ptr())),
        field(c"IS_GLOBAL", c"n", c"Always use global routing",
              offset_of!(IbIfaceConfig, is_global), parser::boolean()),
    ]);
    t.extend(release::flid_route_rows(offset_of!(IbIfaceConfig, flid_route)));
    t.extend([
        field(c"SL", c"auto", c"Service level (InfiniBand) or Ethernet priority (RoCEv2); auto: 0",
              offset_of!(IbIfaceConfig, sl), parser::ulunits()),
        field(c"TRAFFIC_CLASS", c"auto",
              c"Traffic class (InfiniBand) or DSCP (RoCEv2); auto: 106 on RoCEv2, 0 elsewhere",
              offset_of!(IbIfaceConfig, traffic_class), parser::ulunits()),
        field(c"HOP_LIMIT", c"255", c"Hop limit (InfiniBand) or time to live (RoCEv2), 0 to 255",
              offset_of!(IbIfaceConfig, hop_limit), parser::uint()),
        field(c"NUM_PATHS", c"auto",
              c"Connections to create between two endpoints. auto: on RoCE, the LAG degree (2\n\
                on a bonded port, else 1); on InfiniBand, the path bits the fabric's LMC and\n\
                LID_PATH_BITS allow",
              offset_of!(IbIfaceConfig, num_paths), parser::ulunits()),
        field(c"ROCE_LOCAL_SUBNET", c"n",
              c"RoCEv2: consider only addresses of the device's IP subnet reachable (n: any address)",
              offset_of!(IbIfaceConfig, roce_local_subnet), parser::boolean()),
        field(c"ROCE_SUBNET_PREFIX_LEN", c"auto",
              c"Subnet prefix length (bits) for ROCE_LOCAL_SUBNET: auto takes it from the\n\
                device's address, inf allows only the same device",
              offset_of!(IbIfaceConfig, roce_subnet_prefix_len), parser::ulunits()),
    ]);
    t.extend(release::roce_subnets_rows(offset_of!(IbIfaceConfig, roce_subnets)));
    t.extend(release::roce_reachability_rows(offset_of!(IbIfaceConfig, roce_reachability_mode)));
    t.extend([
        field(c"ROCE_PATH_FACTOR", c"1",
              c"Multiplier of the UDP source port on a RoCE LAG port (selects the path)",
              offset_of!(IbIfaceConfig, roce_path_factor), parser::uint()),
        field(c"LID_PATH_BITS", c"0", c"Path bits (the low LID bits under the fabric's LMC) to use, as ranges",
              offset_of!(IbIfaceConfig, lid_path_bits), parsers::range_array()),
        field(c"PKEY", c"auto",
              c"Partition key (up to 0x7fff); auto takes the first entry with full membership",
              offset_of!(IbIfaceConfig, pkey), parsers::hex()),
        field(c"PATH_MTU", c"default", c"Path MTU; default takes the port's active MTU",
              offset_of!(IbIfaceConfig, path_mtu), parser::enumeration(PATH_MTU_NAMES.ptr())),
    ]);
    t.extend(release::ib_iface_tail_rows(offset_of!(IbIfaceConfig, counter_set_id),
                                         offset_of!(IbIfaceConfig, reverse_sl),
                                         offset_of!(IbIfaceConfig, send_overhead)));
    Table::new(t)
});

/// `UCX_RC_*` shared by every RC-like transport.
pub static RC_IFACE_COMMON_TABLE: Lazy<Table> = Lazy::new(|| {
    let mut t = vec![
        embed_with_defaults(c"IB_", c"RX_INLINE=64;TX_INLINE_RESP=64;RX_QUEUE_LEN=4095;SEG_SIZE=8256",
                            &IB_IFACE_TABLE, offset_of!(RcIfaceCommonConfig, ib)),
        field(c"MAX_RD_ATOMIC", c"auto", c"Outstanding RDMA reads and atomics per QP; auto: the device maximum",
              offset_of!(RcIfaceCommonConfig, max_rd_atomic), parser::ulunits()),
        field(c"TIMEOUT", c"1.0s", c"Time to wait for an acknowledgement before a transport retry",
              offset_of!(RcIfaceCommonConfig, timeout), parser::time()),
        field(c"RETRY_COUNT", c"7", c"Transport retries before the connection fails (at most 7)",
              offset_of!(RcIfaceCommonConfig, retry_count), parser::uint()),
        field(c"RNR_TIMEOUT", c"1ms", c"Wait asked of a sender whose message found no receive buffer",
              offset_of!(RcIfaceCommonConfig, rnr_timeout), parser::time()),
        field(c"RNR_RETRY_COUNT", c"7", c"Retries after receiver-not-ready replies (at most 7: unlimited)",
              offset_of!(RcIfaceCommonConfig, rnr_retry_count), parser::uint()),
        field(c"FC_ENABLE", c"y",
              c"Credit-based flow control of active messages, so that a sender does not run the\n\
                receiver out of buffers (and into RNR delays)",
              offset_of!(RcIfaceCommonConfig, fc_enable), parser::boolean()),
        field(c"FC_WND_SIZE", c"512", c"Active messages an endpoint may send before it needs new credits",
              offset_of!(RcIfaceCommonConfig, fc_wnd_size), parser::uint()),
        field(c"FC_HARD_THRESH", c"0.25",
              c"Fraction of FC_WND_SIZE left at which the sender asks for credits at once\n\
                (between 0 and 1, exclusive)",
              offset_of!(RcIfaceCommonConfig, fc_hard_thresh), parser::double()),
        field(c"FENCE", c"auto",
              c"What a fence does: none (nothing), weak (later reads and atomics wait for earlier\n\
                writes), auto (chosen from the hardware)",
              offset_of!(RcIfaceCommonConfig, fence), parser::enumeration(FENCE_NAMES.ptr())),
        parsers::deprecated(c"TX_NUM_GET_OPS", c"Replaced by TX_NUM_GET_BYTES"),
        field(c"MAX_GET_ZCOPY", c"auto", c"Largest get zcopy; auto: the port's largest message",
              offset_of!(RcIfaceCommonConfig, max_get_zcopy), parser::memunits()),
        field(c"TX_NUM_GET_BYTES", c"inf", c"Most bytes of RDMA reads in flight at once",
              offset_of!(RcIfaceCommonConfig, tx_num_get_bytes), parser::memunits()),
        field(c"TX_POLL_ALWAYS", c"n",
              c"Poll send completions on every progress call (n: only when no receive completion\n\
                was found)",
              offset_of!(RcIfaceCommonConfig, tx_poll_always), parser::boolean()),
    ];
    t.extend(release::ece_rows(offset_of!(RcIfaceCommonConfig, ece)));
    Table::new(t)
});

/// `UCX_RC_*` of the RC transports with their own send CQ.
pub static RC_IFACE_TABLE: Lazy<Table> = Lazy::new(|| {
    Table::new(vec![
        embed_with_defaults(c"RC_", c"MAX_NUM_EPS=256", &RC_IFACE_COMMON_TABLE, offset_of!(RcIfaceConfig, common)),
        field(c"FC_SOFT_THRESH", c"0.5",
              c"Fraction of FC_WND_SIZE left at which the sender asks for credits with its next\n\
                message (above FC_HARD_THRESH, below 1)",
              offset_of!(RcIfaceConfig, fc_soft_thresh), parser::double()),
        field(c"TX_CQ_MODERATION", c"64", c"Most send work requests posted in a row without a completion",
              offset_of!(RcIfaceConfig, tx_cq_moderation), parser::uint()),
        field(c"TX_CQ_LEN", c"4096", c"Length of the send CQ: the most signalled sends in flight",
              offset_of!(RcIfaceConfig, tx_cq_len), parser::uint()),
    ])
});

/// `UCX_RC_VERBS_*`: the rc_verbs interface table.
pub static RC_VERBS_IFACE_TABLE: Lazy<Table> = Lazy::new(|| {
    Table::new(vec![
        embed_with_defaults(c"RC_", release::rc_verbs_rc_defaults(), &RC_IFACE_TABLE,
                            offset_of!(RcVerbsIfaceConfig, rc)),
        field(c"MAX_AM_HDR", c"128", c"Space kept for active-message headers; 0 disables am_zcopy",
              offset_of!(RcVerbsIfaceConfig, max_am_hdr), parser::memunits()),
        field(c"TX_MAX_WR", c"-1",
              c"Most posted work requests in flight per QP, also bounded by TX_QUEUE_LEN; -1: no\n\
                further bound",
              offset_of!(RcVerbsIfaceConfig, tx_max_wr), parser::uint()),
        field(c"FLUSH_MODE", c"auto",
              c"How a flush is posted: write0 (an empty RDMA write), fc (a flow-control message),\n\
                auto (chosen from the device)",
              offset_of!(RcVerbsIfaceConfig, flush_mode), parser::enumeration(FLUSH_MODE_NAMES.ptr())),
    ])
});
