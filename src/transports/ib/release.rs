//! What the ib family's configuration does differently from one UCX
//! release to the next, in one place: each item asks the release the
//! process runs (`crate::ucs::release::running`) whether it has the change of
//! release 1.N, with UCX 1.13.1's form next to it. The tables in
//! [`super::config`] take their rows from here (built for the running
//! release) and ask no release questions of their own; so do the md's
//! registration and key packing.
//!
//! From 1.13 to 1.18 (read from UCX's sources at each release tag):
//! - md (`UCX_IB_*`): the DEVX object list gains `cq` (1.14);
//!   `ODP_NUMA_POLICY` and `ODP_MAX_SIZE` go, `REG_METHODS` loses `odp` and
//!   `PCI_RELAXED_ORDERING` becomes yes/no/try/auto (1.15); `REG_METHODS` and
//!   the `RCACHE_*` rows go (the registration cache moved to the generic md
//!   layer), `MLX5_DV`, `REG_RETRY_CNT` (7) and `SMKEY_BLOCK_SIZE` come, and
//!   `REG_MT_THRESH` defaults to inf for that one release (1.16);
//!   `REG_RETRY_CNT` defaults to inf, `XGVMI_UMR_ENABLE` and `ODP_MEM_TYPES`
//!   come (1.18);
//! - IB interface: buffer pools get `*_MAX_CHUNK_SIZE` and `*_GROW_FACTOR`,
//!   `COUNTER_SET_ID` comes (1.14); `FLID_ROUTE` comes and the generic
//!   `ALLOC` defaults to `thp,mmap,heap` (1.16); `REVERSE_SL` and
//!   `SEND_OVERHEAD` (time units, "auto") come (1.17); `ROCE_SUBNETS` comes and
//!   `SEND_OVERHEAD` holds seconds with explicit per-step defaults, which
//!   rc_verbs sets for its own interface overhead (75 ns) (1.18);
//! - RC common: `ECE` comes (1.14).
//! - md behaviour: the registration methods and cache settings of the md
//!   table are read up to 1.15 (later the md registers directly); a packed
//!   key carries the atomic key (the same MR) from 1.16; `mkey_pack` refuses
//!   invalidatable keys, and exported keys from 1.14.
//! - UD (`UCX_UD_*`): no row changes from 1.13 to 1.18; its IB part changes
//!   as above, and ud_verbs sets its own interface overhead (105 ns) in
//!   `SEND_OVERHEAD` (1.18).
//!
//! From 1.18 to 1.22 (the RC, rc_verbs, UD and ud_verbs tables have no
//! other row changes):
//! - md: `GDA_MAX_SYS_LATENCY` (300ns) after `GPU_DIRECT_RDMA`, and
//!   `DIRECT_NIC` (y) last (1.20); `GDA_MAX_SYS_LATENCY` goes and
//!   `GDA_MAX_HCA_PER_GPU` (1), `GDA_DMABUF_ENABLE` (try) and
//!   `GDA_RETAIN_INACTIVE_CTX` (n) come in its place (1.21); the DEVX
//!   object list gains the name `auto` (1.20.1, the reference release of
//!   the 1.20 series); `GDA_MAX_HCA_PER_GPU` takes unsigned long units and
//!   defaults to auto (1.22). All of these concern GPU devices or mlx5
//!   back ends this library does not serve: they are read and shown, with
//!   no effect.
//! - IB interface: `ROCE_REACHABILITY_MODE` (route|local_subnet|all) after
//!   `ROCE_SUBNETS` (1.19); "auto" `TRAFFIC_CLASS` on RoCEv2 takes the
//!   port's own traffic class when it has one (1.21).
//! - RoCE ports (`super::roce`, the last section of this file): valid GIDs,
//!   the GID preference order, reachability and its route test, the UD
//!   destination-GID check change in 1.18, 1.19, 1.20, 1.21 and 1.22.
//! - RC common: `ECE` defaults to auto, which now keeps the device's default
//!   (0 did before), and inf asks for the most the device supports (auto
//!   did before) (1.22). No device here has ECE, so an interface opens only
//!   with a value that keeps the default: 0 or auto up to 1.21, auto from
//!   1.22 ([`ece_usable_without_support`]).
//! - md v2 query: `required_mem_flags` asks for registrable memory (1.22,
//!   [`md_required_mem_flags`]).
//!
//! The performance estimate of rc_verbs and ud_verbs ([`super::perf`]),
//! from 1.13 to 1.22:
//! - send costs per operation ([`send_costs`]): 1.13 counts the interface
//!   overhead before the post only; 1.14 adds fixed costs (send buffer for
//!   a bcopy, doorbell, completion of a zcopy, and the device's fetch of
//!   the work request in the latency); 1.17 reads them from
//!   `SEND_OVERHEAD` ("auto": the 1.14 values); 1.18 gives that setting
//!   explicit defaults;
//! - the bandwidth of one path (`path_bandwidth`, 1.19): reads on an NDR
//!   port capped per path ([`path_bandwidth`]); 1.20 caps reads on XDR
//!   ports too, per path and for the interface ([`op_bandwidth`]), and
//!   counts get_short as a read; 1.21 asks libibverbs for the port speed
//!   where UCX was built with that call (not here: see [`op_bandwidth`]);
//!   1.22 changes only how a failure of that call is logged.
//! - rc_verbs' capability flags (`INTER_NODE` 1.18, `PUT_AM_ORDER` 1.22)
//!   are in `rc::release`.

use super::config::parsers::{self, Names};
use super::config::MD_RCACHE_TABLE;
use crate::abi::*;
use crate::core::config::{embed_with_defaults, field, parser, TIME_AUTO};
use crate::ucs::release::running;
use libc::{c_char, c_int};
use std::ffi::CStr;

// ---------------------------------------------------------------------------
// md

/// `UCS_MEM_FLAG_*` bits the md's v2 query asks of memory it registers:
/// registrable memory (1.22+; the member does not exist before). libucp
/// keeps zero-copy protocols whose memory it cannot vouch for (the
/// rendezvous active-message zcopy, for one) off an ib lane by it.
pub fn md_required_mem_flags() -> u8 {
    if running().since(22) { UCS_MEM_FLAG_REGISTRABLE } else { 0 }
}

/// Whether the md table has `REG_METHODS` and the registration-cache rows
/// (up to 1.15), so that the md takes its registration methods and cache
/// settings from there; later releases register directly.
pub fn md_table_has_reg_methods() -> bool {
    !running().since(16)
}

/// The `REG_METHODS` row and the embedded registration-cache rows (up to
/// 1.15; the IB md aligns cached regions to 16 bytes instead of the generic
/// cache-line default).
pub fn md_reg_method_rows(reg_methods: usize, rcache: usize) -> Vec<ucs_config_field_t> {
    if !md_table_has_reg_methods() {
        return Vec::new();
    }
    let dfl = if running().since(15) { c"rcache,direct" } else { c"rcache,odp,direct" };
    vec![
        field(c"REG_METHODS", dfl,
              c"Registration methods to try, in this order:\n\
                \x20 rcache - a cache of registrations in user space\n\
                \x20 odp    - implicit on-demand paging (the whole address space)\n\
                \x20 direct - one registration per request\n",
              reg_methods, parsers::string_array()),
        embed_with_defaults(c"", c"RCACHE_ADDR_ALIGN=16", &MD_RCACHE_TABLE, rcache),
    ]
}

/// `ODP_NUMA_POLICY` (up to 1.14, whose libucs has the policy names).
pub fn md_odp_numa_rows(offset: usize) -> Vec<ucs_config_field_t> {
    if running().since(15) {
        return Vec::new();
    }
    let Some(names) = crate::ucs::optional::numa_policy_names() else { return Vec::new() };
    vec![field(c"ODP_NUMA_POLICY", c"preferred",
               c"NUMA policy given to on-demand-paging regions, to avoid page migrations:\n\
                 \x20default   - leave the policy as it is\n\
                 \x20preferred - prefer the nodes of the thread (its policy, else its CPUs),\n\
                 \x20bind      - bind to them; neither when the thread's policy is bind already",
               offset, parser::enumeration(names))]
}

/// `ODP_MAX_SIZE` (up to 1.14).
pub fn md_odp_max_size_rows(offset: usize) -> Vec<ucs_config_field_t> {
    if running().since(15) {
        return Vec::new();
    }
    vec![field(c"ODP_MAX_SIZE", c"auto", c"Longest region registered with on-demand paging (0: never)",
               offset, parser::memunits())]
}

/// `MLX5_DV` (1.16+).
pub fn md_mlx5_dv_rows(offset: usize) -> Vec<ucs_config_field_t> {
    if !running().since(16) {
        return Vec::new();
    }
    vec![field(c"MLX5_DV", c"try", c"Use the direct-verbs interface of mlx5 devices", offset, parser::ternary())]
}

/// The objects DEVX may create (`MLX5_DEVX_OBJECTS`), `cq` from 1.14 and
/// the name `auto` from 1.20.1.
static DEVX_OBJECT_NAMES_V1_20_1: Names = Names(&[c"rcqp".as_ptr(), c"rcsrq".as_ptr(), c"dct".as_ptr(),
                                                c"dcsrq".as_ptr(), c"dci".as_ptr(), c"cq".as_ptr(),
                                                c"auto".as_ptr(), std::ptr::null()]);
static DEVX_OBJECT_NAMES: Names = Names(&[c"rcqp".as_ptr(), c"rcsrq".as_ptr(), c"dct".as_ptr(), c"dcsrq".as_ptr(),
                                          c"dci".as_ptr(), c"cq".as_ptr(), std::ptr::null()]);
static DEVX_OBJECT_NAMES_V1_13: Names = Names(&[c"rcqp".as_ptr(), c"rcsrq".as_ptr(), c"dct".as_ptr(),
                                                c"dcsrq".as_ptr(), c"dci".as_ptr(), std::ptr::null()]);

/// The names of `MLX5_DEVX_OBJECTS` (NULL-terminated).
pub fn devx_object_names() -> *const *const c_char {
    let r = running();
    if r.since(21) || (r.since(20) && r.patch >= 1) {
        DEVX_OBJECT_NAMES_V1_20_1.ptr()
    } else if r.since(14) {
        DEVX_OBJECT_NAMES.ptr()
    } else {
        DEVX_OBJECT_NAMES_V1_13.ptr()
    }
}

/// Default `MLX5_DEVX_OBJECTS`.
pub fn devx_objects_default() -> &'static CStr {
    if running().since(14) { c"rcqp,rcsrq,dct,dcsrq,dci,cq" } else { c"rcqp,rcsrq,dct,dcsrq,dci" }
}

/// Where the GPU-direct-async (`GDA_*`) settings are stored.
pub struct GdaOffsets {
    pub max_sys_latency: usize,
    pub max_hca_per_gpu: usize,
    pub dmabuf_enable: usize,
    pub retain_inactive_ctx: usize,
}

/// The `GDA_*` rows after `GPU_DIRECT_RDMA`: `GDA_MAX_SYS_LATENCY` in 1.20
/// only; from 1.21 `GDA_MAX_HCA_PER_GPU` (an unsigned 1 in 1.21, unsigned
/// long units defaulting to auto from 1.22), `GDA_DMABUF_ENABLE` and
/// `GDA_RETAIN_INACTIVE_CTX`. They tune GPU-initiated transfers of GPU
/// devices, which this library does not serve: they are read and shown,
/// and change nothing here.
pub fn md_gda_rows(o: GdaOffsets) -> Vec<ucs_config_field_t> {
    let r = running();
    if !r.since(20) {
        return Vec::new();
    }
    if !r.since(21) {
        return vec![field(c"GDA_MAX_SYS_LATENCY", c"300ns",
                          c"GPU devices farther from the device than this latency are not used with it",
                          o.max_sys_latency, parser::time())];
    }
    let max_hca = if r.since(22) {
        field(c"GDA_MAX_HCA_PER_GPU", c"auto", c"Most devices used for GPU-initiated transfers of one GPU",
              o.max_hca_per_gpu, parser::ulunits())
    } else {
        field(c"GDA_MAX_HCA_PER_GPU", c"1", c"Most devices used for GPU-initiated transfers of one GPU",
              o.max_hca_per_gpu, parser::uint())
    };
    vec![max_hca,
         field(c"GDA_DMABUF_ENABLE", c"try", c"Register GPU memory of GPU-initiated transfers by DMA-BUF",
               o.dmabuf_enable, parser::ternary()),
         field(c"GDA_RETAIN_INACTIVE_CTX", c"n",
               c"Take an inactive primary GPU context to query the GPU's capabilities",
               o.retain_inactive_ctx, parser::boolean())]
}

/// Default `REG_MT_THRESH`: inf in 1.16 only, 4G before and after.
pub fn reg_mt_thresh_default() -> &'static CStr {
    let r = running();
    if r.since(16) && !r.since(17) { c"inf" } else { c"4G" }
}

/// The parser of `PCI_RELAXED_ORDERING`: `<on|off|auto>` up to 1.14,
/// `<yes|no|try|auto>` from 1.15.
pub fn relaxed_order_parser() -> ucs_config_parser_t {
    if running().since(15) { parser::ternary_auto() } else { parser::on_off_auto() }
}

/// The stored `PCI_RELAXED_ORDERING` value as a setting: libucs stores
/// off/on/auto as 0/1/2 (up to 1.14), and no/yes/try/auto as 0/1/2/3.
pub fn relaxed_order(v: c_int) -> super::config::RelaxedOrder {
    use super::config::RelaxedOrder::*;
    match (v, running().since(15)) {
        (0, _) => Off,
        (1, _) => On,
        (2, true) => Try,
        _ => Auto,
    }
}

/// The md rows after `MAX_IDLE_RKEY_COUNT`: `REG_RETRY_CNT` and
/// `SMKEY_BLOCK_SIZE` (1.16+), `XGVMI_UMR_ENABLE` and `ODP_MEM_TYPES` (1.18+),
/// `DIRECT_NIC` (1.20+; GPU memory over a NIC attached to the GPU, which
/// this library does not serve: read and shown, no effect).
pub fn md_tail_rows(retry: usize, smkey: usize, xgvmi: usize, odp_mem_types: usize, direct_nic: usize)
                    -> Vec<ucs_config_field_t> {
    let r = running();
    let mut v = Vec::new();
    if r.since(16) {
        let retry_dfl = if r.since(18) { c"inf" } else { c"7" };
        v.push(field(c"REG_RETRY_CNT", retry_dfl,
                     c"Attempts of a memory registration that fails for lack of resources", retry,
                     parser::ulunits()));
        v.push(field(c"SMKEY_BLOCK_SIZE", c"8",
                     c"Indexes per block of symmetric memory keys (larger blocks: less contention)",
                     smkey, parser::uint()));
    }
    if r.since(18) {
        v.push(field(c"XGVMI_UMR_ENABLE", c"y", c"Use UMR to speed up exporting and importing cross-host keys",
                     xgvmi, parser::boolean()));
        let names = crate::ucs::optional::memory_type_names().unwrap_or(std::ptr::null());
        v.push(field(c"ODP_MEM_TYPES", c"host",
                     c"Memory types reported as registrable without blocking when on-demand paging is on\n",
                     odp_mem_types, parsers::bitmap(names)));
    }
    if r.since(20) {
        v.push(field(c"DIRECT_NIC", c"y", c"Reach GPU memory through a NIC attached to the GPU (Direct NIC)",
                     direct_nic, parser::boolean()));
    }
    v
}

/// How many times a registration is tried (`REG_RETRY_CNT`, 1.16+): once
/// before (`c_ulong::MAX` stands for "inf").
pub fn reg_attempts(configured: libc::c_ulong) -> libc::c_ulong {
    if running().since(16) { configured } else { 1 }
}

/// The `mkey_pack` flags this md cannot honour: keys that can be
/// invalidated, and from 1.14 exported keys (whose bit moved in 1.15).
pub fn unsupported_pack_flags() -> u32 {
    let r = running();
    if r.since(15) {
        UCT_MD_MKEY_PACK_FLAG_INVALIDATE_RMA | UCT_MD_MKEY_PACK_FLAG_INVALIDATE_AMO | UCT_MD_MKEY_PACK_FLAG_EXPORT
    } else if r.since(14) {
        UCT_MD_MKEY_PACK_FLAG_INVALIDATE | UCT_MD_MKEY_PACK_FLAG_EXPORT_v1_14
    } else {
        UCT_MD_MKEY_PACK_FLAG_INVALIDATE
    }
}

/// Whether a packed key carries the atomic key in its upper half (1.16+:
/// the key of the MR atomics use, here the same MR); before, "none".
pub fn packs_atomic_key() -> bool {
    running().since(16)
}

// ---------------------------------------------------------------------------
// IB interface

/// Defaults the IB interface table sets in the generic interface table
/// (1.16+: no huge pages and no md allocation for bounce buffers).
pub fn ib_iface_base_defaults() -> &'static CStr {
    if running().since(16) { c"ALLOC=thp,mmap,heap" } else { c"" }
}

/// The `*_MAX_CHUNK_SIZE` and `*_GROW_FACTOR` rows of a buffer pool (1.14+).
pub fn mpool_growth_rows(pool: super::config::Pool, chunk: usize, factor: usize) -> Vec<ucs_config_field_t> {
    use super::config::Pool;
    if !running().since(14) {
        return Vec::new();
    }
    let (c, f, cdoc, fdoc) = match pool {
        Pool::Tx => (c"TX_MAX_CHUNK_SIZE", c"TX_GROW_FACTOR",
                     c"Largest chunk the send buffer pool allocates at once\n",
                     c"Each new chunk of the send buffer pool is this many times the previous one"),
        Pool::Rx => (c"RX_MAX_CHUNK_SIZE", c"RX_GROW_FACTOR",
                     c"Largest chunk the receive buffer pool allocates at once\n",
                     c"Each new chunk of the receive buffer pool is this many times the previous one"),
    };
    vec![field(c, c"128m", cdoc, chunk, parser::memunits()), field(f, c"1.0", fdoc, factor, parser::double())]
}

/// The growth of a buffer pool: (largest chunk, growth factor) from the
/// settings (1.14+), or fixed steps (no chunk limit, factor 1) before.
pub fn pool_growth(pool: &super::config::MpoolConfig) -> (usize, f64) {
    if running().since(14) { (pool.max_chunk_size, pool.grow_factor) } else { (usize::MAX, 1.0) }
}

/// `FLID_ROUTE` (1.16+).
pub fn flid_route_rows(offset: usize) -> Vec<ucs_config_field_t> {
    if !running().since(16) {
        return Vec::new();
    }
    vec![field(c"FLID_ROUTE", c"y", c"Route by FLID when GIDs are site-local", offset, parser::boolean())]
}

/// `ROCE_SUBNETS` (1.18+, with libucs's allow-list parser): an allow/deny
/// list of `address/bits` subnets.
pub fn roce_subnets_rows(offset: usize) -> Vec<ucs_config_field_t> {
    use crate::ucs::optional as o;
    if !running().since(18) {
        return Vec::new();
    }
    let arg = std::ptr::addr_of!(crate::ucs::ucs_config_array_string) as *const libc::c_void;
    let (Some(read), Some(write), Some(clone), Some(release), Some(help)) =
        (o::config_sscanf_allow_list(), o::config_sprintf_allow_list(), o::config_clone_allow_list(),
         o::config_release_allow_list(), o::config_help_allow_list())
    else {
        return Vec::new();
    };
    let p = crate::ucs::parser::value_parser(Some(read), Some(write), clone, release, help, arg);
    vec![field(c"ROCE_SUBNETS", c"all",
               c"Subnets (x.x.x.x/y) whose RoCE GID entries may be used, or with a leading '^'\n\
                 may not; not together with UCX_IB_GID_INDEX.",
               offset, p)]
}

/// How a RoCE interface decides that a peer is reachable
/// (`ROCE_REACHABILITY_MODE`, 1.19+): by a route to its address, only
/// within the interface's IP subnet, or always.
static REACHABILITY_MODE_NAMES: Names = Names(&[c"route".as_ptr(), c"local_subnet".as_ptr(), c"all".as_ptr(),
                                                std::ptr::null()]);

/// `ROCE_REACHABILITY_MODE` (1.19+), which RoCE (Ethernet) ports consult
/// (`super::roce::Reach`).
pub fn roce_reachability_rows(offset: usize) -> Vec<ucs_config_field_t> {
    if !running().since(19) {
        return Vec::new();
    }
    vec![field(c"ROCE_REACHABILITY_MODE", c"route",
               c"Which peers a RoCE interface considers reachable:\n\
                 \x20route        - those whose address the interface has a route to\n\
                 \x20local_subnet - only those within the interface's IP subnet\n\
                 \x20all          - every peer, without a check",
               offset, parser::enumeration(REACHABILITY_MODE_NAMES.ptr()))]
}

/// One value of `SEND_OVERHEAD` (1.17+) as libucs stores it: 8 bytes
/// holding seconds as an `f64` (1.18+) or libucs time units as a `u64`
/// (1.17, where the key holds "auto" by default).
#[repr(transparent)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SendOverheadValue(pub u64);

impl SendOverheadValue {
    /// The value in seconds; None for "auto" (1.17).
    pub fn secs(self) -> Option<f64> {
        if running().since(18) {
            Some(f64::from_bits(self.0))
        } else if self.0 == TIME_AUTO {
            None
        } else {
            Some(crate::ucs::clocks_to_secs(self.0))
        }
    }
}

/// The rows after `PATH_MTU`: `COUNTER_SET_ID` (1.14+), `REVERSE_SL` and
/// `SEND_OVERHEAD` (1.17+; the latter only with libucs's key-value parser).
pub fn ib_iface_tail_rows(counter_set_id: usize, reverse_sl: usize, send_overhead: usize)
                          -> Vec<ucs_config_field_t> {
    let r = running();
    let mut v = Vec::new();
    if r.since(14) {
        v.push(field(c"COUNTER_SET_ID", c"auto",
                     c"Performance counter set of the QPs; auto finds the default one with a probe QP",
                     counter_set_id, parser::ulunits()));
    }
    if r.since(17) {
        v.push(field(c"REVERSE_SL", c"auto", c"Service level of the peer's replies; auto: the same as SL\n",
                     reverse_sl, parser::ulunits()));
        v.extend(send_overhead_row(send_overhead));
    }
    v
}

/// The `SEND_OVERHEAD` row (1.17+), storing a `SendOverhead` at `base`.
fn send_overhead_row(base: usize) -> Option<ucs_config_field_t> {
    use crate::core::config::parser::{KeyField, KeyValueParam};
    use crate::transports::ib::config::SendOverhead;
    use std::mem::offset_of;

    let k = |name: &'static CStr, doc: &'static CStr, off: usize| KeyField {
        name: name.as_ptr(),
        doc: doc.as_ptr(),
        offset: base + off,
    };
    let keys: &'static [KeyField; 6] = Box::leak(Box::new([
        k(c"bcopy", c"time to take a send buffer", offset_of!(SendOverhead, bcopy)),
        k(c"cqe", c"time to handle a completion", offset_of!(SendOverhead, cqe)),
        k(c"db", c"time to ring the doorbell over PCI", offset_of!(SendOverhead, db)),
        k(c"wqe_fetch", c"time the device takes to fetch a work request", offset_of!(SendOverhead, wqe_fetch)),
        k(c"wqe_post", c"time to write a work request", offset_of!(SendOverhead, wqe_post)),
        KeyField { name: std::ptr::null(), doc: std::ptr::null(), offset: 0 },
    ]));
    let (value, dfl) = if running().since(18) {
        (parser::time(), c"bcopy:5ns,cqe:20ns,db:40ns,wqe_fetch:350ns,wqe_post:0")
    } else {
        (parser::time_units(), c"auto")
    };
    let param: &'static KeyValueParam = Box::leak(Box::new(KeyValueParam { value, keys: keys.as_ptr() }));
    Some(field(c"SEND_OVERHEAD", dfl,
               c"Estimated time spent on a send: preparing the work request, handing it to the\n\
                 device and completing the operation",
               0, parser::key_value(param)?))
}

// ---------------------------------------------------------------------------
// RC

/// `ECE` (1.14+): the enhanced connection establishment value. Up to 1.21
/// 0 (the default) keeps the device's default and auto asks for the most
/// it supports; from 1.22 auto (the default) keeps the device's default
/// and inf asks for the most.
pub fn ece_rows(offset: usize) -> Vec<ucs_config_field_t> {
    let r = running();
    if !r.since(14) {
        return Vec::new();
    }
    if r.since(22) {
        vec![field(c"ECE", c"auto",
                   c"Enhanced connection establishment: auto uses the default, inf the most the\n\
                     device supports, another number that 32-bit value (a hint the transport may\n\
                     adjust)\n",
                   offset, parser::ulunits())]
    } else {
        vec![field(c"ECE", c"0",
                   c"Enhanced connection establishment: 0 uses the default, auto the most the device\n\
                     supports, another number that 32-bit value (a hint the transport may adjust)\n",
                   offset, parser::ulunits())]
    }
}

/// Whether an RC interface may open with the `ECE` value `v` on a device
/// without ECE, as every device of this library is: only the values that
/// keep the device's default pass (0 and auto up to 1.21, auto from 1.22);
/// any other is refused at open. Before 1.14 there is no such setting.
pub fn ece_usable_without_support(v: libc::c_ulong) -> bool {
    let r = running();
    if !r.since(14) {
        true
    } else if r.since(22) {
        v == crate::core::config::UNITS_AUTO
    } else {
        v == crate::core::config::UNITS_AUTO || v == 0
    }
}

/// Defaults rc_verbs sets on the RC table: 1.18+ its send overhead
/// (`wqe_post` = the interface overhead, 75 ns).
pub fn rc_verbs_rc_defaults() -> &'static CStr {
    if running().since(18) {
        c"IB_SEND_OVERHEAD=bcopy:5ns,cqe:20ns,db:40ns,wqe_fetch:350ns,wqe_post:75e-9"
    } else {
        c""
    }
}

// ---------------------------------------------------------------------------
// UD

/// Defaults ud_verbs sets on the UD table: 1.18+ its send overhead
/// (`wqe_post` = the interface overhead, 105 ns).
pub fn ud_verbs_ud_defaults() -> &'static CStr {
    if running().since(18) {
        c"IB_SEND_OVERHEAD=bcopy:5ns,cqe:20ns,db:40ns,wqe_fetch:350ns,wqe_post:105e-9"
    } else {
        c""
    }
}

// ---------------------------------------------------------------------------
// Performance estimate (`uct_iface_estimate_perf` of rc_verbs and ud_verbs)

/// The costs of one send, in seconds, as an ib interface's estimate adds
/// them up: writing the work request (`wqe_post`) and, for a bcopy, taking
/// a send buffer (`bcopy`) before the post; ringing the doorbell (`db`)
/// and, for a zcopy, handling its completion (`cqe`) after it; the time the
/// device takes to fetch the request (`wqe_fetch`), added to the latency of
/// a bcopy or zcopy.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SendCosts {
    pub wqe_post: f64,
    pub bcopy: f64,
    pub db: f64,
    pub cqe: f64,
    pub wqe_fetch: f64,
}

/// The fixed costs 1.14 introduced (the interface overhead to post), which
/// 1.17 keeps as the values of the "auto" settings.
fn fixed_send_costs(iface_overhead: f64) -> SendCosts {
    SendCosts { wqe_post: iface_overhead, bcopy: 5e-9, db: 40e-9, cqe: 20e-9, wqe_fetch: 350e-9 }
}

/// The send costs of an interface whose own overhead is `iface_overhead`,
/// with `cfg` its `SEND_OVERHEAD` setting:
/// - up to 1.13 the interface overhead before the post and nothing else;
/// - 1.14: fixed costs besides (5 ns bcopy, 40 ns doorbell, 20 ns zcopy
///   completion, 350 ns fetch);
/// - 1.17: each from `SEND_OVERHEAD`, "auto" (the default) meaning the
///   1.14 value;
/// - 1.18: each from `SEND_OVERHEAD`, which now has explicit defaults (the
///   transport's own overhead for `wqe_post`).
///
/// (The original's other figures for one ARM vendor's CPUs before 1.18 are
/// not modelled: this library runs on none of them.)
pub fn send_costs(cfg: &crate::transports::ib::config::SendOverhead, iface_overhead: f64) -> SendCosts {
    let r = running();
    if !r.since(14) {
        return SendCosts { wqe_post: iface_overhead, bcopy: 0.0, db: 0.0, cqe: 0.0, wqe_fetch: 0.0 };
    }
    let fixed = fixed_send_costs(iface_overhead);
    if !r.since(17) {
        return fixed;
    }
    SendCosts {
        wqe_post: cfg.wqe_post.secs().unwrap_or(fixed.wqe_post),
        bcopy: cfg.bcopy.secs().unwrap_or(fixed.bcopy),
        db: cfg.db.secs().unwrap_or(fixed.db),
        cqe: cfg.cqe.secs().unwrap_or(fixed.cqe),
        wqe_fetch: cfg.wqe_fetch.secs().unwrap_or(fixed.wqe_fetch),
    }
}

/// Port speed codes (`active_speed`, or `active_speed_ex` where libibverbs
/// has it) the read caps below look for.
pub const SPEED_NDR: u32 = 128;
pub const SPEED_XDR: u32 = 256;

/// Whether `op` counts as a read for the caps below: get_bcopy and
/// get_zcopy in 1.19; every get, get_short included, from 1.20.
fn is_read(op: uct_ep_operation_t) -> bool {
    match op {
        UCT_EP_OP_GET_BCOPY | UCT_EP_OP_GET_ZCOPY => true,
        UCT_EP_OP_GET_SHORT => running().since(20),
        _ => false,
    }
}

/// The bandwidth an interface estimates for `op` (None: no operation was
/// named), from its own bandwidth `iface_bw` over `num_paths` paths on a
/// port of speed `speed`:
/// - up to 1.19 the interface's bandwidth;
/// - 1.20: a read on an XDR port gets at most 40% of it per path;
/// - 1.21 takes the bandwidth from libibverbs' port speed query where UCX
///   was built with one (a newer rdma-core than this machine's; the C
///   reference here has none) and falls back to the interface's: this
///   library takes the fallback.
pub fn op_bandwidth(iface_bw: uct_ppn_bandwidth_t, num_paths: u32, op: Option<uct_ep_operation_t>, speed: u32)
                    -> uct_ppn_bandwidth_t {
    let mut bw = iface_bw;
    if running().since(20) && speed == SPEED_XDR && op.is_some_and(is_read) {
        bw.shared = bw.shared.min(bw.shared * f64::from(num_paths) * 0.4);
    }
    bw
}

/// The bandwidth of one path for `op` (the field exists from 1.19): the
/// interface's shared bandwidth `iface_bw`, except for reads, where one path
/// carries at most 95% of it and 38 GB/s on an NDR port (1.19), or 40% and
/// 35 GB/s on an XDR port (1.20). (Bonded RoCE ports split it between their
/// paths; this library drives no RoCE port.)
pub fn path_bandwidth(iface_bw: f64, op: Option<uct_ep_operation_t>, speed: u32) -> f64 {
    let read = op.is_some_and(is_read);
    let (ratio, cap) = match speed {
        SPEED_NDR if read => (0.95, 38e9),
        SPEED_XDR if read && running().since(20) => (0.4, 35e9),
        _ => (1.0, f64::MAX),
    };
    (iface_bw * ratio).min(cap)
}

// ---------------------------------------------------------------------------
// RoCE ports (`super::roce`; docs/rdma/roce-facts.md)

/// Whether a GID table entry is valid: not all zero (up to 1.17), a
/// non-zero interface id (its last 8 bytes) from 1.18.
pub fn gid_is_valid(gid: &[u8; 16]) -> bool {
    if running().since(18) {
        gid[8..].iter().any(|&b| b != 0)
    } else {
        gid.iter().any(|&b| b != 0)
    }
}

/// The preference order of `GID_INDEX=auto` on a RoCE port: (version,
/// IPv6, link-local allowed). From 1.21 a global IPv6 GID comes before a
/// link-local one of the same version.
pub fn gid_preferences() -> &'static [(super::roce::Version, bool, bool)] {
    use super::roce::Version::{V1, V2};
    if running().since(21) {
        &[(V2, false, true), (V2, true, false), (V2, true, true), (V1, false, true), (V1, true, false), (V1, true, true)]
    } else {
        &[(V2, false, true), (V2, true, true), (V1, false, true), (V1, true, true)]
    }
}

/// Whether the automatic subnet prefix passes over an IPv4 link-local
/// (169.254/16) address of the interface (1.21+).
pub fn roce_prefix_skips_ipv4_link_local() -> bool {
    running().since(21)
}

/// Whether RoCE reachability follows `ROCE_REACHABILITY_MODE` (1.19+).
pub fn roce_reachability_modes() -> bool {
    running().since(19)
}

/// Up to 1.18: whether differing address families are caught only by the
/// subnet comparison (1.18) instead of a check of their own (1.13-1.17).
pub fn roce_reach_checks_family_late() -> bool {
    running().since(18)
}

/// What the route test of `ROCE_REACHABILITY_MODE=route` accepts: 1.19
/// only a non-default route on the GID's interface; 1.20 default routes
/// too, or a route on `lo`; 1.21 only the longest covering route; 1.22
/// also an address of this host.
pub fn roce_route_rules() -> super::roce::routes::Rules {
    let r = running();
    super::roce::routes::Rules { default_routes: r.since(20), loopback: r.since(20), best_only: r.since(21),
                                 local_addresses: r.since(22) }
}

/// Whether `TRAFFIC_CLASS=auto` on RoCE v2 takes the port's own traffic
/// class from sysfs when it has one (1.21+).
pub fn roce_tclass_from_sysfs() -> bool {
    running().since(21)
}

/// Whether ud_verbs tells an IPv6 GRH from an IPv4 header by the first byte
/// of the receive buffer (1.19+, which marks each buffer before posting
/// it) instead of the completion's `sl` field.
pub fn ud_grh_family_from_buffer() -> bool {
    running().since(19)
}

/// Whether a RoCE port's bandwidth counts its LAG level (1.14+).
pub fn roce_bandwidth_counts_lag() -> bool {
    running().since(14)
}

/// Whether the LAG level is read through `lower_*` links of the interface
/// (a VLAN on a bond, 1.16+).
pub fn roce_lag_follows_lower_links() -> bool {
    running().since(16)
}

/// Whether the interface table has `ROCE_SUBNETS` (1.18+).
pub fn roce_subnets_exist() -> bool {
    running().since(18)
}
