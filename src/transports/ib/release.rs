//! What the ib family's configuration does differently from one UCX
//! release to the next, in one place: each item is written for the release
//! that introduced the change (`ucx_since_1_NN`), with UCX 1.13.1's form
//! next to it. The tables in [`super::config`] take their rows from here and
//! have no `cfg` of their own.
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
//! - UD (`UCX_UD_*`): no row changes from 1.13 to 1.18; its IB part changes
//!   as above, and ud_verbs sets its own interface overhead (105 ns) in
//!   `SEND_OVERHEAD` (1.18).

use super::config::parsers::{self, Names};
#[cfg(not(ucx_since_1_16))]
use super::config::MD_RCACHE_TABLE;
use crate::abi::*;
#[cfg(not(ucx_since_1_16))]
use crate::core::config::embed_with_defaults;
use crate::core::config::{field, parser};
use libc::c_int;
use std::ffi::CStr;

// ---------------------------------------------------------------------------
// md

/// The `REG_METHODS` row and the embedded registration-cache rows (up to
/// 1.15; the IB md aligns cached regions to 16 bytes instead of the generic
/// cache-line default).
#[allow(unused_variables)]
pub fn md_reg_method_rows(reg_methods: usize, rcache: usize) -> Vec<ucs_config_field_t> {
    #[cfg(not(ucx_since_1_16))]
    {
        #[cfg(ucx_since_1_15)]
        const DFL: &CStr = c"rcache,direct";
        #[cfg(not(ucx_since_1_15))]
        const DFL: &CStr = c"rcache,odp,direct";
        vec![
            field(c"REG_METHODS", DFL,
                  c"Registration methods to try, in this order:\n\
                    \x20 rcache - a cache of registrations in user space\n\
                    \x20 odp    - implicit on-demand paging (the whole address space)\n\
                    \x20 direct - one registration per request\n",
                  reg_methods, parsers::string_array()),
            embed_with_defaults(c"", c"RCACHE_ADDR_ALIGN=16", &MD_RCACHE_TABLE, rcache),
        ]
    }
    #[cfg(ucx_since_1_16)]
    {
        Vec::new()
    }
}

/// `ODP_NUMA_POLICY` (up to 1.14).
#[allow(unused_variables)]
pub fn md_odp_numa_rows(offset: usize) -> Vec<ucs_config_field_t> {
    #[cfg(not(ucx_since_1_15))]
    {
        let names = crate::ucs::optional::numa_policy_names().unwrap_or(std::ptr::null());
        vec![field(c"ODP_NUMA_POLICY", c"preferred",
                   c"NUMA policy given to on-demand-paging regions, to avoid page migrations:\n\
                     \x20default   - leave the policy as it is\n\
                     \x20preferred - prefer the nodes of the thread (its policy, else its CPUs),\n\
                     \x20bind      - bind to them; neither when the thread's policy is bind already",
                   offset, parser::enumeration(names))]
    }
    #[cfg(ucx_since_1_15)]
    {
        Vec::new()
    }
}

/// `ODP_MAX_SIZE` (up to 1.14).
#[allow(unused_variables)]
pub fn md_odp_max_size_rows(offset: usize) -> Vec<ucs_config_field_t> {
    #[cfg(not(ucx_since_1_15))]
    {
        vec![field(c"ODP_MAX_SIZE", c"auto", c"Longest region registered with on-demand paging (0: never)",
                   offset, parser::memunits())]
    }
    #[cfg(ucx_since_1_15)]
    {
        Vec::new()
    }
}

/// `MLX5_DV` (1.16+).
#[allow(unused_variables)]
pub fn md_mlx5_dv_rows(offset: usize) -> Vec<ucs_config_field_t> {
    #[cfg(ucx_since_1_16)]
    {
        vec![field(c"MLX5_DV", c"try", c"Use the direct-verbs interface of mlx5 devices", offset, parser::ternary())]
    }
    #[cfg(not(ucx_since_1_16))]
    {
        Vec::new()
    }
}

/// The objects DEVX may create (`MLX5_DEVX_OBJECTS`), `cq` from 1.14.
#[cfg(ucx_since_1_14)]
pub static DEVX_OBJECT_NAMES: Names = Names(&[c"rcqp".as_ptr(), c"rcsrq".as_ptr(), c"dct".as_ptr(),
                                              c"dcsrq".as_ptr(), c"dci".as_ptr(), c"cq".as_ptr(),
                                              std::ptr::null()]);
#[cfg(not(ucx_since_1_14))]
pub static DEVX_OBJECT_NAMES: Names = Names(&[c"rcqp".as_ptr(), c"rcsrq".as_ptr(), c"dct".as_ptr(),
                                              c"dcsrq".as_ptr(), c"dci".as_ptr(), std::ptr::null()]);
#[cfg(ucx_since_1_14)]
pub const DEVX_OBJECTS_DEFAULT: &CStr = c"rcqp,rcsrq,dct,dcsrq,dci,cq";
#[cfg(not(ucx_since_1_14))]
pub const DEVX_OBJECTS_DEFAULT: &CStr = c"rcqp,rcsrq,dct,dcsrq,dci";

/// Default `REG_MT_THRESH`: inf in 1.16 only, 4G before and after.
#[cfg(all(ucx_since_1_16, not(ucx_since_1_17)))]
pub const REG_MT_THRESH_DEFAULT: &CStr = c"inf";
#[cfg(not(all(ucx_since_1_16, not(ucx_since_1_17))))]
pub const REG_MT_THRESH_DEFAULT: &CStr = c"4G";

/// The parser of `PCI_RELAXED_ORDERING`: `<on|off|auto>` up to 1.14,
/// `<yes|no|try|auto>` from 1.15.
pub fn relaxed_order_parser() -> ucs_config_parser_t {
    #[cfg(ucx_since_1_15)]
    {
        parser::ternary_auto()
    }
    #[cfg(not(ucx_since_1_15))]
    {
        parser::on_off_auto()
    }
}

/// The stored `PCI_RELAXED_ORDERING` value as a setting: libucs stores
/// off/on/auto as 0/1/2, and no/yes/try/auto as 0/1/2/3.
pub fn relaxed_order(v: c_int) -> super::config::RelaxedOrder {
    use super::config::RelaxedOrder::*;
    #[cfg(ucx_since_1_15)]
    {
        match v {
            0 => Off,
            1 => On,
            2 => Try,
            _ => Auto,
        }
    }
    #[cfg(not(ucx_since_1_15))]
    {
        match v {
            0 => Off,
            1 => On,
            _ => Auto,
        }
    }
}

/// The md rows after `MAX_IDLE_RKEY_COUNT`: `REG_RETRY_CNT` and
/// `SMKEY_BLOCK_SIZE` (1.16+), `XGVMI_UMR_ENABLE` and `ODP_MEM_TYPES` (1.18+).
#[allow(unused_variables, unused_mut)]
pub fn md_tail_rows(retry: usize, smkey: usize, xgvmi: usize, odp_mem_types: usize) -> Vec<ucs_config_field_t> {
    let mut v = Vec::new();
    #[cfg(ucx_since_1_16)]
    {
        #[cfg(ucx_since_1_18)]
        const RETRY_DFL: &CStr = c"inf";
        #[cfg(not(ucx_since_1_18))]
        const RETRY_DFL: &CStr = c"7";
        v.push(field(c"REG_RETRY_CNT", RETRY_DFL, c"Attempts of a memory registration that fails for lack of resources",
                     retry, parser::ulunits()));
        v.push(field(c"SMKEY_BLOCK_SIZE", c"8",
                     c"Indexes per block of symmetric memory keys (larger blocks: less contention)",
                     smkey, parser::uint()));
    }
    #[cfg(ucx_since_1_18)]
    {
        v.push(field(c"XGVMI_UMR_ENABLE", c"y", c"Use UMR to speed up exporting and importing cross-host keys",
                     xgvmi, parser::boolean()));
        let names = crate::ucs::optional::memory_type_names().unwrap_or(std::ptr::null());
        v.push(field(c"ODP_MEM_TYPES", c"host",
                     c"Memory types reported as registrable without blocking when on-demand paging is on\n",
                     odp_mem_types, parsers::bitmap(names)));
    }
    v
}

/// How many times a registration is tried (`REG_RETRY_CNT`, 1.16+): once
/// before (`c_ulong::MAX` stands for "inf").
pub fn reg_attempts(configured: libc::c_ulong) -> libc::c_ulong {
    #[cfg(ucx_since_1_16)]
    {
        configured
    }
    #[cfg(not(ucx_since_1_16))]
    {
        let _ = configured;
        1
    }
}

// ---------------------------------------------------------------------------
// IB interface

/// Defaults the IB interface table sets in the generic interface table
/// (1.16+: no huge pages and no md allocation for bounce buffers).
#[cfg(ucx_since_1_16)]
pub const IB_IFACE_BASE_DEFAULTS: &CStr = c"ALLOC=thp,mmap,heap";
#[cfg(not(ucx_since_1_16))]
pub const IB_IFACE_BASE_DEFAULTS: &CStr = c"";

/// The `*_MAX_CHUNK_SIZE` and `*_GROW_FACTOR` rows of a buffer pool (1.14+).
#[allow(unused_variables)]
pub fn mpool_growth_rows(pool: super::config::Pool, chunk: usize, factor: usize) -> Vec<ucs_config_field_t> {
    #[cfg(ucx_since_1_14)]
    {
        use super::config::Pool;
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
    #[cfg(not(ucx_since_1_14))]
    {
        Vec::new()
    }
}

/// The growth of a buffer pool: (largest chunk, growth factor) from the
/// settings (1.14+), or fixed steps (no chunk limit, factor 1) before.
pub fn pool_growth(pool: &super::config::MpoolConfig) -> (usize, f64) {
    #[cfg(ucx_since_1_14)]
    {
        (pool.max_chunk_size, pool.grow_factor)
    }
    #[cfg(not(ucx_since_1_14))]
    {
        let _ = pool;
        (usize::MAX, 1.0)
    }
}

/// `FLID_ROUTE` (1.16+).
#[allow(unused_variables)]
pub fn flid_route_rows(offset: usize) -> Vec<ucs_config_field_t> {
    #[cfg(ucx_since_1_16)]
    {
        vec![field(c"FLID_ROUTE", c"y", c"Route by FLID when GIDs are site-local", offset, parser::boolean())]
    }
    #[cfg(not(ucx_since_1_16))]
    {
        Vec::new()
    }
}

/// `ROCE_SUBNETS` (1.18+): an allow/deny list of `address/bits` subnets.
#[allow(unused_variables)]
pub fn roce_subnets_rows(offset: usize) -> Vec<ucs_config_field_t> {
    #[cfg(ucx_since_1_18)]
    {
        let arg = std::ptr::addr_of!(crate::ucs::ucs_config_array_string) as *const libc::c_void;
        use crate::ucs::optional as o;
        let (Some(clone), Some(release), Some(help)) =
            (o::config_clone_allow_list(), o::config_release_allow_list(), o::config_help_allow_list())
        else {
            return Vec::new();
        };
        let p = crate::ucs::parser::value_parser(o::config_sscanf_allow_list(), o::config_sprintf_allow_list(),
                                                 clone, release, help, arg);
        vec![field(c"ROCE_SUBNETS", c"all",
                   c"Subnets (x.x.x.x/y) whose RoCE GID entries may be used, or with a leading '^'\n\
                     may not; not together with UCX_IB_GID_INDEX.",
                   offset, p)]
    }
    #[cfg(not(ucx_since_1_18))]
    {
        Vec::new()
    }
}

/// One value of `SEND_OVERHEAD`: seconds (1.18+) or libucs time units
/// (1.17, where the key holds "auto" by default).
#[cfg(all(ucx_since_1_17, not(ucx_since_1_18)))]
pub type SendOverheadValue = u64;
#[cfg(not(all(ucx_since_1_17, not(ucx_since_1_18))))]
pub type SendOverheadValue = f64;

/// The rows after `PATH_MTU`: `COUNTER_SET_ID` (1.14+), `REVERSE_SL` and
/// `SEND_OVERHEAD` (1.17+).
#[allow(unused_variables, unused_mut)]
pub fn ib_iface_tail_rows(counter_set_id: usize, reverse_sl: usize, send_overhead: usize)
                          -> Vec<ucs_config_field_t> {
    let mut v = Vec::new();
    #[cfg(ucx_since_1_14)]
    v.push(field(c"COUNTER_SET_ID", c"auto",
                 c"Performance counter set of the QPs; auto finds the default one with a probe QP",
                 counter_set_id, parser::ulunits()));
    #[cfg(ucx_since_1_17)]
    {
        v.push(field(c"REVERSE_SL", c"auto", c"Service level of the peer's replies; auto: the same as SL\n",
                     reverse_sl, parser::ulunits()));
        v.push(send_overhead::row(send_overhead));
    }
    v
}

#[cfg(ucx_since_1_17)]
mod send_overhead {
    use super::*;
    use crate::core::config::parser::{KeyField, KeyValueParam};
    use crate::transports::ib::config::SendOverhead;
    use std::mem::offset_of;

    #[cfg(ucx_since_1_18)]
    const DFL: &CStr = c"bcopy:5ns,cqe:20ns,db:40ns,wqe_fetch:350ns,wqe_post:0";
    #[cfg(not(ucx_since_1_18))]
    const DFL: &CStr = c"auto";

    pub fn row(base: usize) -> ucs_config_field_t {
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
        #[cfg(ucx_since_1_18)]
        let value = parser::time();
        #[cfg(not(ucx_since_1_18))]
        let value = parser::time_units();
        let param: &'static KeyValueParam = Box::leak(Box::new(KeyValueParam { value, keys: keys.as_ptr() }));
        field(c"SEND_OVERHEAD", DFL,
              c"Estimated time spent on a send: preparing the work request, handing it to the\n\
                device and completing the operation",
              0, parser::key_value(param))
    }
}

// ---------------------------------------------------------------------------
// RC

/// `ECE` (1.14+): the enhanced connection establishment value (0: the
/// device's default, auto: the most it supports).
#[allow(unused_variables)]
pub fn ece_rows(offset: usize) -> Vec<ucs_config_field_t> {
    #[cfg(ucx_since_1_14)]
    {
        vec![field(c"ECE", c"0",
                   c"Enhanced connection establishment: 0 uses the default, auto the most the device\n\
                     supports, another number that 32-bit value (a hint the transport may adjust)\n",
                   offset, parser::ulunits())]
    }
    #[cfg(not(ucx_since_1_14))]
    {
        Vec::new()
    }
}

/// Defaults rc_verbs sets on the RC table: 1.18+ its send overhead
/// (`wqe_post` = the interface overhead, 75 ns).
#[cfg(ucx_since_1_18)]
pub const RC_VERBS_RC_DEFAULTS: &CStr =
    c"IB_SEND_OVERHEAD=bcopy:5ns,cqe:20ns,db:40ns,wqe_fetch:350ns,wqe_post:75e-9";
#[cfg(not(ucx_since_1_18))]
pub const RC_VERBS_RC_DEFAULTS: &CStr = c"";

// ---------------------------------------------------------------------------
// UD

/// Defaults ud_verbs sets on the UD table: 1.18+ its send overhead
/// (`wqe_post` = the interface overhead, 105 ns).
#[cfg(ucx_since_1_18)]
pub const UD_VERBS_UD_DEFAULTS: &CStr =
    c"IB_SEND_OVERHEAD=bcopy:5ns,cqe:20ns,db:40ns,wqe_fetch:350ns,wqe_post:105e-9";
#[cfg(not(ucx_since_1_18))]
pub const UD_VERBS_UD_DEFAULTS: &CStr = c"";
