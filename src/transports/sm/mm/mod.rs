//! The shared-memory ("mm") transports `posix` and `sysv`: one FIFO-based
//! interface over two ways of sharing memory between processes, as UCX
//! 1.13.1's `src/uct/sm/mm` (a common `base` and one mapper per transport).
//! Here live the two components and their settings; [`mapper`] is what a
//! way of sharing memory provides, with [`posix`] (files in a tmpfs
//! directory) and [`sysv`] (System V segments) implementing it, and
//! `util.rs` their common helpers; [`md`] is the memory domain over a
//! mapper; [`fifo`] is the shared receive FIFO's layout; [`iface`] is the
//! interface, whose endpoint and send path are in `ep.rs`, receive path in
//! `recv.rs`, receive descriptors in `desc.rs` and creation in `open.rs`.
//! The mappers' system calls are [`crate::sys::shm`]'s; the wake-up socket
//! of an interface is a [`crate::sys::socket::Socket`] (a unix datagram
//! socket, closed with the interface).

mod desc;
mod ep;
pub mod fifo;
pub mod iface;
pub mod mapper;
pub mod md;
mod open;
pub mod peer;
pub mod posix;
mod recv;
pub mod sysv;
#[cfg(test)]
mod test_support;
mod util;

use crate::abi::*;
use crate::core::component::{Component, IfaceOpen, MdDesc, MdOpen, TlDesc, TlDevice};
use crate::core::config::{self, embed_with_defaults, field, parser, Table};
use crate::transports::sm::release::{self, MmOverheadConfig};
use crate::transports::sm::{SmIfaceConfig, SM_IFACE_TABLE};
use crate::core::iface::IfaceParams;
use crate::core::md::{MdImpl, MdObj};
use crate::core::worker::WorkerObj;
use libc::{c_int, c_uint, c_ulong, c_void};
use mapper::{Mapper, RkeyOps};
use once_cell::sync::Lazy;
use std::mem::offset_of;

/// The one device of shared-memory transports.
pub const DEVICE_NAME: &str = "memory";

/// Settings of the mm interfaces (`UCX_POSIX_*`, `UCX_SYSV_*`).
#[repr(C)]
pub struct MmIfaceConfig {
    pub sm: SmIfaceConfig,
    pub fifo_size: c_uint,
    pub seg_size: usize,
    pub release_factor: f64,
    pub rx_max_bufs: c_int,
    pub rx_bufs_grow: c_uint,
    /// `RX_MAX_CHUNK_SIZE` and `RX_GROW_FACTOR` (only in releases with
    /// them; see [`release::pool_growth`]).
    pub rx_max_chunk_size: usize,
    pub rx_grow_factor: f64,
    pub fifo_hugetlb: c_int,
    pub fifo_elem_size: c_uint,
    pub fifo_max_poll: c_ulong,
    pub error_handling: c_int,
    /// `SEND_OVERHEAD` / `RECV_OVERHEAD` (see [`release::mm_overheads`]).
    pub overhead: MmOverheadConfig,
}

pub static MM_IFACE_TABLE: Lazy<Table> = Lazy::new(|| {
    let mut rows = vec![
        embed_with_defaults(c"SM_", release::mm_sm_defaults(), &SM_IFACE_TABLE, offset_of!(MmIfaceConfig, sm)),
        field(c"FIFO_SIZE", release::mm_fifo_size_default(), c"Number of elements in the receive FIFO (a power of 2)",
              offset_of!(MmIfaceConfig, fifo_size), parser::uint()),
        field(c"SEG_SIZE", c"8256", c"Size of the buffers of copy-out (bcopy) sends",
              offset_of!(MmIfaceConfig, seg_size), parser::memunits()),
        field(c"FIFO_RELEASE_FACTOR", c"0.5",
              c"How often the receiver publishes consumed elements, as a fraction of the FIFO size (0 <= f < 1)",
              offset_of!(MmIfaceConfig, release_factor), parser::double()),
        field(c"RX_MAX_BUFS", c"-1", c"Most receive descriptors of an interface; -1 is unlimited",
              offset_of!(MmIfaceConfig, rx_max_bufs), parser::int()),
        field(c"RX_BUFS_GROW", c"512", c"Receive descriptors added each time the pool grows",
              offset_of!(MmIfaceConfig, rx_bufs_grow), parser::uint()),
    ];
    rows.extend(release::pool_growth_fields(
        (c"RX_MAX_CHUNK_SIZE", c"Largest chunk of shared memory the receive descriptor pool allocates at once",
         offset_of!(MmIfaceConfig, rx_max_chunk_size)),
        (c"RX_GROW_FACTOR",
         c"Each new chunk of the receive descriptor pool holds this many times the\n\
           descriptors of the previous one (at least 1)",
         offset_of!(MmIfaceConfig, rx_grow_factor))));
    rows.extend([
        field(c"FIFO_HUGETLB", c"no", c"Use huge pages for the FIFO and descriptors: y, n or try",
              offset_of!(MmIfaceConfig, fifo_hugetlb), parser::ternary()),
        field(c"FIFO_ELEM_SIZE", c"128", c"Size of a FIFO element (28-byte header plus inline data)",
              offset_of!(MmIfaceConfig, fifo_elem_size), parser::uint()),
        field(c"FIFO_MAX_POLL", c"16", c"Most messages taken from the FIFO in one progress call",
              offset_of!(MmIfaceConfig, fifo_max_poll), parser::ulunits()),
        field(c"ERROR_HANDLING", c"n", c"Report the peer-failure error handling capability",
              offset_of!(MmIfaceConfig, error_handling), parser::boolean()),
    ]);
    rows.extend(release::mm_overhead_fields(offset_of!(MmIfaceConfig, overhead)));
    Table::new(rows)
});

/// The transport table of posix: the mm settings under `MM_`.
pub static TL_IFACE_TABLE: Lazy<Table> = Lazy::new(|| {
    Table::new(vec![config::embed_prefixed(c"MM_", &MM_IFACE_TABLE, 0)])
});

/// The transport table of sysv: the mm settings under `MM_`, with sysv's
/// own defaults.
pub static SYSV_TL_IFACE_TABLE: Lazy<Table> = Lazy::new(|| {
    Table::new(vec![embed_with_defaults(c"MM_", release::sysv_mm_defaults(), &MM_IFACE_TABLE, 0)])
});

fn query_devices(md: &MdObj) -> Result<Vec<TlDevice>, ucs_status_t> {
    if release::mm_device_needs_alloc() {
        // SAFETY: all-zero is a valid uct_md_attr_t (numbers only).
        let mut attr: uct_md_attr_t = unsafe { std::mem::zeroed() };
        md.query(&mut attr);
        if attr.cap.flags & (UCT_MD_FLAG_ALLOC | UCT_MD_FLAG_REG) == 0 {
            crate::debug!("{}: the memory domain cannot allocate shared memory: no device", md.name);
            return Err(UCS_ERR_NO_DEVICE);
        }
    }
    Ok(vec![TlDevice { name: DEVICE_NAME.to_string(), dev_type: UCT_DEVICE_TYPE_SHM,
                       sys_device: UCS_SYS_DEVICE_ID_UNKNOWN }])
}

fn rkey_ptr(rkey: uct_rkey_t, _handle: *mut c_void, raddr: u64) -> Result<*mut c_void, ucs_status_t> {
    Ok(rkey.wrapping_add(raddr as uct_rkey_t) as *mut c_void)
}

fn rkey_unpack<R: RkeyOps>(buf: *const u8) -> Result<(uct_rkey_t, *mut c_void), ucs_status_t> {
    if buf.is_null() {
        crate::error!("rkey_unpack: the packed key is NULL");
        return Err(UCS_ERR_INVALID_PARAM);
    }
    // SAFETY: the caller hands in a key packed by this component's md.
    unsafe { R::unpack(buf) }
}

/// Opens the memory domains and interfaces of the mm transport that shares
/// memory through mapper `M`.
struct MmOpen<M>(std::marker::PhantomData<M>);

impl<M: Mapper> MdOpen for MmOpen<M> {
    type Config = M::MdConfig;
    fn open(_c: &'static Component, _name: &str, cfg: &M::MdConfig) -> Result<Box<dyn MdImpl>, ucs_status_t> {
        Ok(Box::new(md::MmMd { mapper: M::from_md_config(cfg)? }))
    }
}

impl<M: Mapper> IfaceOpen for MmOpen<M> {
    type Config = MmIfaceConfig;
    fn open(md: &MdObj, worker: &WorkerObj, params: &IfaceParams, cfg: &MmIfaceConfig)
            -> Result<uct_iface_h, ucs_status_t> {
        open::open::<M>(md, worker, params, cfg, &const { iface::MmInternal::<M>::OPS })
    }
}

// ---- posix ----

fn posix_md_resources() -> Vec<String> {
    vec!["posix".to_string()]
}

static POSIX_TLS: [TlDesc; 1] =
    [TlDesc::new::<MmOpen<posix::Posix>>("posix", c"POSIX transport", c"POSIX_", &TL_IFACE_TABLE, query_devices)];

pub static POSIX_COMPONENT: Component = Component {
    name: "posix",
    flags: release::mm_component_flags,
    md: MdDesc::new::<MmOpen<posix::Posix>>(c"posix memory domain", c"POSIX_", &posix::POSIX_MD_TABLE),
    cm: None,
    md_resources: posix_md_resources,
    tls: &POSIX_TLS,
    rkey_unpack: rkey_unpack::<posix::Posix>,
    rkey_ptr,
    rkey_release: <posix::Posix as RkeyOps>::release,
};

// ---- sysv ----

fn sysv_md_resources() -> Vec<String> {
    vec!["sysv".to_string()]
}

static SYSV_TLS: [TlDesc; 1] =
    [TlDesc::new::<MmOpen<sysv::Sysv>>("sysv", c"SYSV transport", c"SYSV_", &SYSV_TL_IFACE_TABLE, query_devices)];

pub static SYSV_COMPONENT: Component = Component {
    name: "sysv",
    flags: release::mm_component_flags,
    md: MdDesc::new::<MmOpen<sysv::Sysv>>(c"sysv memory domain", c"SYSV_", &sysv::SYSV_MD_TABLE),
    cm: None,
    md_resources: sysv_md_resources,
    tls: &SYSV_TLS,
    rkey_unpack: rkey_unpack::<sysv::Sysv>,
    rkey_ptr,
    rkey_release: <sysv::Sysv as RkeyOps>::release,
};

