//! The `cma` transport: zero-copy put and get between processes of the same
//! host through Linux's cross-memory attach (`process_vm_writev` and
//! `process_vm_readv`), as UCX 1.13.1's "scopy" transports do.
//!
//! Nothing is shared or mapped: an endpoint knows only the peer's pid (its
//! iface address), remote addresses are raw pointers in the peer's address
//! space, registration is a formality and the rkey is a constant. A put or
//! get is queued and returns `UCS_INPROGRESS`; the interface's progress
//! (registered on the worker while operations are queued) moves the data in
//! `SEG_SIZE` pieces, at most `TX_QUOTA` pieces per call, round-robin over
//! the endpoints, and completes the user's `uct_completion_t`.
//!
//! - [`md`]: the memory domain, and whether CMA is usable on this host.
//! - [`iface`]: the interface, endpoints and the transfer queue.
//! - [`xfer`]: one transfer (an iov walk and the system call, made through
//!   [`crate::sys::vm`]).

pub mod assist;
pub mod iface;
pub mod md;
pub mod xfer;

use crate::abi::*;
use crate::core::component::{self, Component, IfaceOpen, MdDesc, MdOpen, TlDesc, TlDevice};
use crate::core::config::{self, embed, embed_prefixed, embed_with_defaults, field, parser, BaseMdConfig,
                          Table};
use crate::core::iface::IfaceParams;
use crate::core::md::{MdImpl, MdObj};
use crate::core::worker::WorkerObj;
use crate::transports::sm::release;
use crate::transports::sm::{SmIfaceConfig, SM_IFACE_TABLE};
use libc::{c_int, c_uint, c_ulong, c_void};
use once_cell::sync::Lazy;
use std::mem::offset_of;

/// The component, md and transport name.
pub const NAME: &str = "cma";
/// The one device of the transport (as every shared-memory transport).
pub const DEVICE_NAME: &str = "memory";

// ---------------------------------------------------------------------------
// Configuration (`UCX_CMA_*`), with UCX's names, nesting and defaults.

/// The md settings (`UCX_CMA_MEMORY_INVALIDATE`).
#[repr(C)]
pub struct CmaMdConfig {
    pub base: BaseMdConfig,
    pub mem_invalidate: c_int,
}

/// The settings of the "scopy" interfaces (`UCX_<TL>_SCOPY_*`, reachable
/// without the `SCOPY_` part too), the shared-memory settings under `SM_`.
#[repr(C)]
pub struct ScopyIfaceConfig {
    pub sm: SmIfaceConfig,
    pub max_iov: c_ulong,
    pub seg_size: usize,
    pub tx_quota: c_uint,
    /// Parsed as an integer: -1 is "no limit".
    pub tx_max_bufs: c_int,
    pub tx_bufs_grow: c_uint,
    /// `TX_MAX_CHUNK_SIZE` and `TX_GROW_FACTOR` (only in releases with
    /// them; see [`release::pool_growth`]).
    pub tx_max_chunk_size: usize,
    pub tx_grow_factor: f64,
}

/// The interface settings of `cma` (the scopy table under `SCOPY_`).
#[repr(C)]
pub struct CmaIfaceConfig {
    pub scopy: ScopyIfaceConfig,
    /// `SPLIT_MIN` (an extension of ours, see `assist`).
    pub split_min: usize,
}

static MD_TABLE: Lazy<Table> = Lazy::new(|| {
    Table::new(vec![
        embed(&config::BASE_MD_TABLE, offset_of!(CmaMdConfig, base)),
        field(c"MEMORY_INVALIDATE", c"n",
              c"Report the memory invalidation capability (UCT_MD_FLAG_INVALIDATE).\n\
                Invalidation is not enforced: a peer keeps access to registered memory.",
              offset_of!(CmaMdConfig, mem_invalidate), parser::boolean()),
    ])
});

static SCOPY_IFACE_TABLE: Lazy<Table> = Lazy::new(|| {
    let mut rows = vec![
        embed_prefixed(c"SM_", &SM_IFACE_TABLE, offset_of!(ScopyIfaceConfig, sm)),
        field(c"MAX_IOV", c"16", c"Most iov entries of user data a single put or get zcopy may carry",
              offset_of!(ScopyIfaceConfig, max_iov), parser::ulong()),
        field(c"SEG_SIZE", c"512k",
              c"Bytes moved by one system call while progressing put and get zcopy operations",
              offset_of!(ScopyIfaceConfig, seg_size), parser::memunits()),
        field(c"TX_QUOTA", c"1",
              c"Most segments one call of the interface progress transfers (small values keep\n\
                progress short, which is fair to other work when many peers are served)",
              offset_of!(ScopyIfaceConfig, tx_quota), parser::uint()),
        field(c"TX_MAX_BUFS", c"-1",
              c"Most operation descriptors the interface may hold at once; -1 is unlimited.",
              offset_of!(ScopyIfaceConfig, tx_max_bufs), parser::int()),
        field(c"TX_BUFS_GROW", c"8",
              c"Operation descriptors added each time the descriptor pool grows (at least 1)",
              offset_of!(ScopyIfaceConfig, tx_bufs_grow), parser::uint()),
    ];
    rows.extend(release::pool_growth_fields(
        (c"TX_MAX_CHUNK_SIZE", c"Largest chunk of memory the operation descriptor pool allocates at once",
         offset_of!(ScopyIfaceConfig, tx_max_chunk_size)),
        (c"TX_GROW_FACTOR",
         c"Each time the operation descriptor pool grows, it adds this many times the\n\
           descriptors it added the time before (at least 1)",
         offset_of!(ScopyIfaceConfig, tx_grow_factor))));
    Table::new(rows)
});

static IFACE_TABLE: Lazy<Table> = Lazy::new(|| {
    Table::new(vec![
        embed_with_defaults(c"SCOPY_", c"ALLOC=huge,thp,mmap,heap;SM_BW=11145MBs", &SCOPY_IFACE_TABLE,
                            offset_of!(CmaIfaceConfig, scopy)),
        // Not in UCX: an extension of this library.
        field(c"SPLIT_MIN", c"256k",
              c"A get_zcopy of at least this many bytes from a peer that runs this library too is\n\
                shared with it: the peer writes the second half while we read the first (both\n\
                processes copy at once). A peer with the C library is read as usual.\n\
                0: never (uct-rs extension).",
              offset_of!(CmaIfaceConfig, split_min), parser::memunits()),
    ])
});

// ---------------------------------------------------------------------------
// The component.

fn md_resources() -> Vec<String> {
    if md::cma_usable() {
        vec![NAME.to_string()]
    } else {
        Vec::new()
    }
}

/// Opens the cma memory domain and interfaces.
struct CmaOpen;

impl MdOpen for CmaOpen {
    type Config = CmaMdConfig;
    fn open(_c: &'static Component, _name: &str, cfg: &CmaMdConfig) -> Result<Box<dyn MdImpl>, ucs_status_t> {
        Ok(Box::new(md::CmaMd::new(cfg.mem_invalidate != 0)))
    }
}

impl IfaceOpen for CmaOpen {
    type Config = CmaIfaceConfig;
    fn open(md: &MdObj, worker: &WorkerObj, params: &IfaceParams, cfg: &CmaIfaceConfig)
            -> Result<uct_iface_h, ucs_status_t> {
        iface::open(md, worker, params, cfg)
    }
}

fn query_devices(_md: &MdObj) -> Result<Vec<TlDevice>, ucs_status_t> {
    Ok(vec![TlDevice { name: DEVICE_NAME.to_string(), dev_type: UCT_DEVICE_TYPE_SHM,
                       sys_device: UCS_SYS_DEVICE_ID_UNKNOWN }])
}

static TLS: [TlDesc; 1] = [TlDesc::new::<CmaOpen>(NAME, c"cma transport", c"CMA_", &IFACE_TABLE, query_devices)];

/// The value UCX's stub unpack gives to keys of memory domains without a
/// key of their own: remote addresses are used as they are.
pub const STUB_RKEY: uct_rkey_t = 0xdead_beef;

fn rkey_unpack(_buf: *const u8) -> Result<(uct_rkey_t, *mut c_void), ucs_status_t> {
    Ok((STUB_RKEY, std::ptr::null_mut()))
}

pub static COMPONENT: Component = Component {
    name: NAME,
    flags: || 0,
    md: MdDesc::new::<CmaOpen>(c"CMA memory domain", c"CMA_", &MD_TABLE),
    cm: None,
    md_resources,
    tls: &TLS,
    rkey_unpack,
    rkey_ptr: component::rkey_ptr_unsupported,
    rkey_release: component::rkey_release_nop,
};
