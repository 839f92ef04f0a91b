//! Configuration of the `ib` family: the memory-domain table (`UCX_IB_*`),
//! the `rc_verbs` interface table (`UCX_RC_VERBS_*`) and the `ud_verbs`
//! one (`UCX_UD_VERBS_*`, in `config/ud.rs`, nested alike), with UCX's key
//! names, defaults, value syntax and nesting, so that `ucx_info -c` and
//! `-cf` print what the C original prints and every spelling UCX accepts
//! (`UCX_RC_VERBS_X`, `UCX_RC_X`, `UCX_IB_X`) sets the same field.
//!
//! Nesting of the interface table (outermost first), as in UCX 1.13.1:
//! - `RC_VERBS_` (the transport's prefix): [`RcVerbsIfaceConfig`], whose
//!   first row embeds under `RC_`
//! - [`RcIfaceConfig`] (settings of the RC transports that have their own
//!   send completion queue), whose first row embeds under `RC_` again, with
//!   the default `MAX_NUM_EPS=256`
//! - [`RcIfaceCommonConfig`] (settings shared by every RC-like transport),
//!   whose first row embeds under `IB_`, with the defaults
//!   `RX_INLINE=64;TX_INLINE_RESP=64;RX_QUEUE_LEN=4095;SEG_SIZE=8256`
//! - [`IbIfaceConfig`] (settings of every IB interface), whose first row
//!   embeds the generic interface table (`ALLOC`, `FAILURE`,
//!   `MAX_NUM_EPS`) without a prefix.
//!
//! libucs looks a key up under every prefix of the chain, the innermost
//! first, and a more specific spelling overrides a more generic one.
//!
//! The structs hold the union of the keys of every release we build for;
//! a key that a release does not have keeps a zero value, and the
//! accessors (here and in [`super::release`]) give the behaviour of that
//! release. Which rows exist in which release is decided in
//! [`super::release`].

use super::release;
use crate::abi::*;
use crate::core::config::{self, embed, field, parser, ArrayDesc, BaseMdConfig, ConfigArray, Table, UNITS_AUTO};
use crate::ucs;
use libc::{c_char, c_int, c_uint, c_ulong, c_void};
use once_cell::sync::Lazy;
use std::ffi::CStr;
use std::mem::offset_of;

/// The md config table's name and prefix (`UCX_IB_*`).
pub const MD_CONFIG_NAME: &CStr = c"IB memory domain";
pub const MD_CONFIG_PREFIX: &CStr = c"IB_";
/// The rc_verbs transport's config name and prefix (`UCX_RC_VERBS_*`).
pub const RC_VERBS_CONFIG_NAME: &CStr = c"rc_verbs transport";
pub const RC_VERBS_CONFIG_PREFIX: &CStr = c"RC_VERBS_";

// ---------------------------------------------------------------------------
// Value parsers libucs has and core does not wrap.

/// Parsers of the ib tables beyond [`crate::core::config::parser`].
pub mod parsers {
    use super::*;

    /// A 16-bit hexadecimal number (`0x...`) or "auto".
    pub fn hex() -> ucs_config_parser_t {
        ucs::parser::value_parser(Some(ucs::ucs_config_sscanf_hex), Some(ucs::ucs_config_sprintf_hex),
                                  ucs::ucs_config_clone_uint,
                                  ucs::ucs_config_release_nop, ucs::ucs_config_help_generic,
                                  c"hex representation of a number or \"auto\"".as_ptr() as *const c_void)
    }

    /// A set of names out of `names` (NULL-terminated), stored as bits.
    pub fn bitmap(names: *const *const c_char) -> ucs_config_parser_t {
        ucs::parser::value_parser(Some(ucs::ucs_config_sscanf_bitmap), Some(ucs::ucs_config_sprintf_bitmap),
                                  ucs::ucs_config_clone_uint, ucs::ucs_config_release_nop, ucs::ucs_config_help_bitmap,
                                  names as *const c_void)
    }

    /// A comma-separated list of strings.
    pub fn string_array() -> ucs_config_parser_t {
        let arg = std::ptr::addr_of!(ucs::ucs_config_array_string) as *const c_void;
        ucs::parser::value_parser(Some(ucs::ucs_config_sscanf_array), Some(ucs::ucs_config_sprintf_array),
                                  ucs::ucs_config_clone_array, ucs::ucs_config_release_array,
                                  ucs::ucs_config_help_array, arg)
    }

    fn bw_spec() -> ucs_config_parser_t {
        ucs::parser::value_parser(Some(ucs::ucs_config_sscanf_bw_spec), Some(ucs::ucs_config_sprintf_bw_spec),
                                  ucs::ucs_config_clone_bw_spec, ucs::ucs_config_release_bw_spec,
                                  ucs::ucs_config_help_generic,
                                  c"device_name:<number>[T|G|M|K]B|b[[p|/]s] or device_name:auto".as_ptr()
                                      as *const c_void)
    }

    static BW_SPEC_ARRAY: Lazy<ArrayDesc> = Lazy::new(|| {
        ArrayDesc::new(std::mem::size_of::<ucs_config_bw_spec_t>(), bw_spec())
    });
    static RANGE_ARRAY: Lazy<ArrayDesc> = Lazy::new(|| {
        ArrayDesc::new(std::mem::size_of::<ucs_range_spec_t>(), parser::range_spec())
    });

    /// A list of `device:bandwidth` pairs.
    pub fn bw_spec_array() -> ucs_config_parser_t {
        parser::array(Lazy::force(&BW_SPEC_ARRAY))
    }

    /// A list of number ranges (`a-b,c`).
    pub fn range_array() -> ucs_config_parser_t {
        parser::array(Lazy::force(&RANGE_ARRAY))
    }

    // Deprecated keys: accepted with any value, ignored, shown as such.
    unsafe extern "C" fn dep_read(_: *const c_char, _: *mut c_void, _: *const c_void) -> c_int {
        1
    }
    unsafe extern "C" fn dep_write(buf: *mut c_char, max: usize, _: *const c_void, _: *const c_void) -> c_int {
        if max > 0 {
            // SAFETY: libucs's buffer of `max` bytes.
            unsafe { *buf = 0 };
        }
        1
    }
    unsafe extern "C" fn dep_clone(_: *const c_void, _: *mut c_void, _: *const c_void) -> ucs_status_t {
        UCS_OK
    }
    unsafe extern "C" fn dep_release(_: *mut c_void, _: *const c_void) {}
    unsafe extern "C" fn dep_help(buf: *mut c_char, max: usize, _: *const c_void) {
        if max > 0 {
            // SAFETY: libucs's buffer of `max` bytes.
            unsafe { *buf = 0 };
        }
    }

    /// A deprecated row (libucs knows it by its offset, `usize::MAX`).
    pub fn deprecated(name: &'static CStr, doc: &'static CStr) -> ucs_config_field_t {
        field(name, c"", doc, usize::MAX,
              ucs::parser::value_parser(Some(dep_read), Some(dep_write), dep_clone, dep_release, dep_help,
                                        c"".as_ptr() as *const c_void))
    }

    /// A NULL-terminated array of C strings, for enum and bitmap parsers.
    pub struct Names(pub &'static [*const c_char]);
    // SAFETY: points to 'static string literals only, never written.
    unsafe impl Sync for Names {}
    // SAFETY: see above.
    unsafe impl Send for Names {}

    impl Names {
        pub fn ptr(&self) -> *const *const c_char {
            self.0.as_ptr()
        }
    }
}

use parsers::Names;

/// Values of `UCX_*_ADDR_TYPE`, in UCX's order.
pub static ADDR_TYPE_NAMES: Names = Names(&[c"ib_local".as_ptr(), c"ib_site_local".as_ptr(),
                                            c"ib_global".as_ptr(), c"eth".as_ptr(), c"auto".as_ptr(),
                                            std::ptr::null()]);
/// `ADDR_TYPE=auto` (pick the type from the link layer and subnet prefix).
pub const ADDR_TYPE_AUTO: c_uint = 4;

/// Values of `UCX_*_PATH_MTU`: index 0 is "default", 1..4 are 512..4096
/// (one less than the `ibv_mtu` codes, see [`IbIfaceConfig::path_mtu`]).
pub static PATH_MTU_NAMES: Names = Names(&[c"default".as_ptr(), c"512".as_ptr(), c"1024".as_ptr(),
                                           c"2048".as_ptr(), c"4096".as_ptr(), std::ptr::null()]);

/// Values of `UCX_*_FENCE`.
pub static FENCE_NAMES: Names = Names(&[c"none".as_ptr(), c"weak".as_ptr(), c"auto".as_ptr(), std::ptr::null()]);

/// Values of `UCX_RC_VERBS_FLUSH_MODE`.
pub static FLUSH_MODE_NAMES: Names = Names(&[c"write0".as_ptr(), c"fc".as_ptr(), c"auto".as_ptr(),
                                             std::ptr::null()]);

/// What the hex parser stores for "auto".
pub const HEX_AUTO: u16 = 0xfffe;

/// UCX's `ternary` values (`<yes|no|try>`, plus `auto` where allowed).
pub const TERNARY_NO: c_int = 0;
pub const TERNARY_YES: c_int = 1;
pub const TERNARY_TRY: c_int = 2;

fn units(v: c_ulong) -> Option<c_ulong> {
    (v != UNITS_AUTO).then_some(v)
}

// ---------------------------------------------------------------------------
// The md table (`UCX_IB_*`).

/// The registration cache settings (`UCX_IB_RCACHE_*`; UCX 1.13 keeps them
/// in the md table, later releases in the generic md layer).
#[repr(C)]
pub struct MdRcacheConfig {
    /// Priority of the cache's memory-event handler among other handlers.
    pub mem_prio: c_uint,
    /// Lookup cost the md reports while the cache is used, in libucs time
    /// units; "auto" lets the md choose (UCX: 180 ns, 360 ns on Fujitsu ARM).
    pub overhead: u64,
    /// Cached regions are aligned to this many bytes (a power of two).
    pub addr_align: c_uint,
    /// Most regions the cache keeps.
    pub max_regions: c_ulong,
    /// Most bytes the cached regions may cover.
    pub max_size: usize,
    /// Bytes of released or invalidated regions that make the cache clean up.
    pub max_unreleased: usize,
    /// Whether a fork() empties the cache.
    pub purge_on_fork: c_int,
}

/// The ib md settings.
#[repr(C)]
pub struct IbMdConfig {
    pub base: BaseMdConfig,
    /// Registration methods to try, in order (`rcache`, `odp`, `direct`).
    pub reg_methods: ConfigArray<*mut c_char>,
    pub rcache: MdRcacheConfig,
    /// Fixed cost of one direct registration (seconds).
    pub mem_reg_overhead: f64,
    /// Cost per registered byte of a direct registration (seconds).
    pub mem_reg_growth: f64,
    /// Whether to call `ibv_fork_init()`: yes (failure is an error), try, no.
    pub fork_init: c_int,
    /// Whether the md listens for the device's asynchronous events.
    pub async_events: c_int,
    /// Whether Ethernet pause frames are on (off disqualifies transports that
    /// need a lossless RoCE fabric).
    pub eth_pause: c_int,
    /// NUMA policy for on-demand-paging regions (1.13/1.14 only).
    pub odp_numa_policy: c_uint,
    /// Prefetch on-demand-paging regions when they are registered.
    pub odp_prefetch: c_int,
    /// Largest region registered with on-demand paging (1.13/1.14 only).
    pub odp_max_size: usize,
    /// Extra device descriptions, `vendor:device[:name[:flags[:priority]]]`.
    pub device_specs: ConfigArray<*mut c_char>,
    /// Prefer the device nearest to the CPU among the requested ones.
    pub prefer_nearest_device: c_int,
    /// Use indirect keys for atomics where the hardware has them.
    pub indirect_atomic: c_int,
    /// GID table index to use ("auto": chosen per port).
    pub gid_index: c_ulong,
    /// Only IB ports with this subnet prefix are used (empty: all).
    pub subnet_prefix: *mut c_char,
    /// Whether devices may access GPU memory directly: yes, try, no.
    pub gpu_direct_rdma: c_int,
    /// GPU-initiated transfers (1.20+, [`release::md_gda_rows`]; GPU devices
    /// are not served here: no effect): the farthest GPU used (1.20, seconds),
    pub gda_max_sys_latency: f64,
    /// the most devices per GPU (1.21: an unsigned int in the low half;
    /// 1.22+: unsigned long units),
    pub gda_max_hca_per_gpu: c_ulong,
    /// DMA-BUF registration of GPU memory (1.21+: yes, try, no),
    pub gda_dmabuf_enable: c_int,
    /// and whether an inactive GPU context may be taken (1.21+).
    pub gda_retain_inactive_ctx: c_int,
    /// Bandwidth limits of the PCI bus per device (`name:bandwidth`).
    pub pci_bw: ConfigArray<ucs_config_bw_spec_t>,
    /// Use the mlx5 direct-verbs back end (1.16+).
    pub mlx5_dv: c_int,
    /// Use the mlx5 DEVX back end: yes, try, no.
    pub mlx5_devx: c_int,
    /// Which objects the DEVX back end creates (bits of the names' order).
    /// 8 bytes: libucs stores 4 (1.13) or 8 (1.18) here.
    pub mlx5_devx_objects: u64,
    /// Regions at least this long are registered by several threads.
    pub reg_mt_thresh: usize,
    /// Piece registered by each thread of a multi-threaded registration.
    pub reg_mt_chunk: usize,
    /// Pin the registration threads to CPUs.
    pub reg_mt_bind: c_int,
    /// Relaxed ordering of PCI writes: on/off/auto (1.13-1.14), yes/no/try/
    /// auto (1.15+); see [`IbMdConfig::relaxed_order`].
    pub pci_relaxed_ordering: c_int,
    /// Invalidated keys kept before their indexes are reused.
    pub max_idle_rkey_count: c_uint,
    /// Attempts of a registration that fails for lack of resources (1.16+).
    pub reg_retry_count: c_ulong,
    /// Indexes per block of symmetric keys (1.16+).
    pub smkey_block_size: c_uint,
    /// Cross-host key export through UMR (1.18+).
    pub xgvmi_umr_enable: c_int,
    /// Memory types registered without blocking when ODP is on (1.18+).
    pub odp_mem_types: u64,
    /// GPU memory through a NIC attached to the GPU (1.20+; no effect here).
    pub direct_nic: c_int,
}

/// The relaxed-ordering setting of the md.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RelaxedOrder {
    Off,
    On,
    /// 1.15+: on where the device allows it, no error otherwise.
    Try,
    /// On only for CPUs known to gain from it (UCX: Fujitsu ARM, AMD
    /// Naples/Rome/Milan); off elsewhere.
    Auto,
}

impl IbMdConfig {
    /// The registration methods, in order of preference.
    pub fn reg_methods(&self) -> Vec<String> {
        strings(&self.reg_methods)
    }
    /// The extra device descriptions.
    pub fn device_specs(&self) -> Vec<String> {
        strings(&self.device_specs)
    }
    /// The subnet prefix filter, if one is set.
    pub fn subnet_prefix(&self) -> Option<String> {
        cstr(self.subnet_prefix).filter(|s| !s.is_empty())
    }
    /// The GID index, `None` for "auto".
    pub fn gid_index(&self) -> Option<c_ulong> {
        units(self.gid_index)
    }
    /// The cost of a direct registration: (fixed seconds, seconds per byte).
    pub fn reg_cost(&self) -> (f64, f64) {
        (self.mem_reg_overhead, self.mem_reg_growth)
    }
    pub fn relaxed_order(&self) -> RelaxedOrder {
        release::relaxed_order(self.pci_relaxed_ordering)
    }
    /// Whether a failing `ibv_fork_init()` is an error (`yes`), tolerated
    /// (`try`), or the call is skipped (`no`): `Some(required)` when called.
    pub fn fork_init(&self) -> Option<bool> {
        match self.fork_init {
            TERNARY_NO => None,
            TERNARY_YES => Some(true),
            _ => Some(false),
        }
    }
}

fn cstr(p: *const c_char) -> Option<String> {
    if p.is_null() {
        return None;
    }
    // SAFETY: libucs stored a NUL-terminated string it allocated.
    Some(unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
}

fn strings(a: &ConfigArray<*mut c_char>) -> Vec<String> {
    if a.items.is_null() {
        return Vec::new();
    }
    // SAFETY: libucs filled `items` with `count` string pointers.
    let items = unsafe { std::slice::from_raw_parts(a.items, a.count as usize) };
    items.iter().filter_map(|&p| cstr(p)).collect()
}

/// The registration cache rows (`RCACHE_*`), as libuct's generic md code
/// defines them in 1.13.
pub static MD_RCACHE_TABLE: Lazy<Table> = Lazy::new(|| {
    Table::new(vec![
        field(c"RCACHE_MEM_PRIO", c"1000",
              c"Priority of the registration cache's handler of memory events (unmap and the like)",
              offset_of!(MdRcacheConfig, mem_prio), parser::uint()),
        field(c"RCACHE_OVERHEAD", c"auto", c"Registration cost reported while the cache serves registrations",
              offset_of!(MdRcacheConfig, overhead), parser::time_units()),
        field(c"RCACHE_ADDR_ALIGN", c"64",
              c"Alignment of cached regions, a power of two from 16 bytes up to the page size",
              offset_of!(MdRcacheConfig, addr_align), parser::uint()),
        field(c"RCACHE_MAX_REGIONS", c"inf", c"Most regions the registration cache keeps",
              offset_of!(MdRcacheConfig, max_regions), parser::ulunits()),
        field(c"RCACHE_MAX_SIZE", c"inf", c"Most bytes the cached regions may cover",
              offset_of!(MdRcacheConfig, max_size), parser::memunits()),
        field(c"RCACHE_MAX_UNRELEASED", c"512M",
              c"Bytes of released or invalidated regions waiting for cleanup that trigger\n\
                a cleanup of the cache",
              offset_of!(MdRcacheConfig, max_unreleased), parser::memunits()),
        field(c"RCACHE_PURGE_ON_FORK", c"y", c"Empty the registration cache when the process forks",
              offset_of!(MdRcacheConfig, purge_on_fork), parser::boolean()),
    ])
});

/// `UCX_IB_*`: the ib md table.
pub static IB_MD_TABLE: Lazy<Table> = Lazy::new(|| {
    let mut t = vec![embed(&config::BASE_MD_TABLE, offset_of!(IbMdConfig, base))];
    t.extend(release::md_reg_method_rows(offset_of!(IbMdConfig, reg_methods), offset_of!(IbMdConfig, rcache)));
    t.extend([
        field(c"MEM_REG_OVERHEAD", c"16us", c"Fixed time one direct memory registration is estimated to take",
              offset_of!(IbMdConfig, mem_reg_overhead), parser::time()),
        field(c"MEM_REG_GROWTH", c"0.06ns", c"Time a direct memory registration is estimated to take per byte",
              offset_of!(IbMdConfig, mem_reg_growth), parser::time()),
        field(c"FORK_INIT", c"try",
              c"Call ibv_fork_init() so that registered memory survives fork() in the parent\n\
                (yes: its failure is an error; try: its failure is ignored; no: not called)",
              offset_of!(IbMdConfig, fork_init), parser::ternary()),
        field(c"ASYNC_EVENTS", c"y", c"Watch the device's asynchronous events (port changes, QP errors)",
              offset_of!(IbMdConfig, async_events), parser::boolean()),
        field(c"ETH_PAUSE_ON", c"y",
              c"Whether the Ethernet network uses pause frames (flow control that avoids\n\
                drops under congestion). With 'n', IB transports that behave badly on a\n\
                lossy RoCE fabric are not used.",
              offset_of!(IbMdConfig, eth_pause), parser::boolean()),
    ]);
    t.extend(release::md_odp_numa_rows(offset_of!(IbMdConfig, odp_numa_policy)));
    t.push(field(c"ODP_PREFETCH", c"n", c"Prefetch memory registered with on-demand paging",
                 offset_of!(IbMdConfig, odp_prefetch), parser::boolean()));
    t.extend(release::md_odp_max_size_rows(offset_of!(IbMdConfig, odp_max_size)));
    t.extend([
        field(c"DEVICE_SPECS", c"",
              c"Extra device descriptions, each <vendor-id>:<device-id>[:name[:flags[:priority]]]:\n\
                the PCI vendor and device ids (decimal or 0x-hex), a name, flags out of\n\
                '4' (mlx4), '5' (mlx5), 'd' (DC version 1), 'D' (DC version 2) and 'a'\n\
                (compact address vectors), and a priority (integer).",
              offset_of!(IbMdConfig, device_specs), parsers::string_array()),
        field(c"PREFER_NEAREST_DEVICE", c"y",
              c"Among the devices of NET_DEVICES, prefer the one nearest to the CPU",
              offset_of!(IbMdConfig, prefer_nearest_device), parser::boolean()),
        field(c"INDIRECT_ATOMIC", c"y", c"Use indirect memory keys for atomic operations where supported",
              offset_of!(IbMdConfig, indirect_atomic), parser::boolean()),
        field(c"GID_INDEX", c"auto", c"Index of the port's GID table entry to use",
              offset_of!(IbMdConfig, gid_index), parser::ulunits()),
        field(c"SUBNET_PREFIX", c"",
              c"Use only InfiniBand ports of this subnet prefix (e.g. fe80:0:0:0); empty: any port.\n\
                Ignored on Ethernet ports.",
              offset_of!(IbMdConfig, subnet_prefix), parser::string()),
        field(c"GPU_DIRECT_RDMA", c"try", c"Let the device access GPU memory directly",
              offset_of!(IbMdConfig, gpu_direct_rdma), parser::ternary()),
    ]);
    t.extend(release::md_gda_rows(release::GdaOffsets {
        max_sys_latency: offset_of!(IbMdConfig, gda_max_sys_latency),
        max_hca_per_gpu: offset_of!(IbMdConfig, gda_max_hca_per_gpu),
        dmabuf_enable: offset_of!(IbMdConfig, gda_dmabuf_enable),
        retain_inactive_ctx: offset_of!(IbMdConfig, gda_retain_inactive_ctx),
    }));
    t.push(field(c"PCI_BW", c"", c"Bandwidth limit of the PCI bus of a device, as <device>:<bandwidth>",
                 offset_of!(IbMdConfig, pci_bw), parsers::bw_spec_array()));
    t.extend(release::md_mlx5_dv_rows(offset_of!(IbMdConfig, mlx5_dv)));
    t.extend([
        field(c"MLX5_DEVX", c"try", c"Use the DEVX interface of mlx5 devices",
              offset_of!(IbMdConfig, mlx5_devx), parser::ternary()),
        field(c"MLX5_DEVX_OBJECTS", release::devx_objects_default(), c"Objects created through DEVX",
              offset_of!(IbMdConfig, mlx5_devx_objects), parsers::bitmap(release::devx_object_names())),
        field(c"REG_MT_THRESH", release::reg_mt_thresh_default(),
              c"Regions at least this long are registered by several threads, one per CPU\n\
                the registering thread may run on",
              offset_of!(IbMdConfig, reg_mt_thresh), parser::memunits()),
        field(c"REG_MT_CHUNK", c"2G", c"Piece each thread of a multi-threaded registration handles (a power of 2)",
              offset_of!(IbMdConfig, reg_mt_chunk), parser::memunits()),
        field(c"REG_MT_BIND", c"n", c"Pin the threads of a multi-threaded registration to CPUs",
              offset_of!(IbMdConfig, reg_mt_bind), parser::boolean()),
        field(c"PCI_RELAXED_ORDERING", c"auto",
              c"Register memory for relaxed ordering of PCI transactions, which is faster on\n\
                some systems",
              offset_of!(IbMdConfig, pci_relaxed_ordering), release::relaxed_order_parser()),
        field(c"MAX_IDLE_RKEY_COUNT", c"16", c"Invalidated memory keys kept aside before their reuse",
              offset_of!(IbMdConfig, max_idle_rkey_count), parser::uint()),
    ]);
    t.extend(release::md_tail_rows(offset_of!(IbMdConfig, reg_retry_count), offset_of!(IbMdConfig, smkey_block_size),
                                   offset_of!(IbMdConfig, xgvmi_umr_enable), offset_of!(IbMdConfig, odp_mem_types),
                                   offset_of!(IbMdConfig, direct_nic)));
    Table::new(t)
});

mod access;
mod iface;
mod ud;
pub use access::*;
pub use iface::*;
pub use ud::*;
