//! The `ib` family: RDMA over libibverbs, on any device a provider serves
//! (InfiniBand and RoCE HCAs, soft devices). UCX 1.13.1's `ib` component
//! offers one memory domain per device (named as the device, `mlx5_0`,
//! `softrdma0`), and on each of them the verbs transports open one
//! interface per usable port (`<device>:<port>`).
//!
//! - [`config`]: the settings of the family (`UCX_IB_*`, `UCX_RC_VERBS_*`
//!   with its `UCX_RC_*` and `UCX_IB_*` parts), as UCX 1.13.1 names them;
//!   [`release`]: what later releases changed in them.
//! - [`device`]: which devices and ports are usable.
//! - [`md`]: the memory domain: the opened device, its PD, registrations,
//!   and the packed remote key format.
//! - [`ud`]: the `ud_verbs` transport.
//! - [`rdmacm`]: the `rdmacm` component and its connection manager (RDMA CM).

pub mod bufs;
pub mod config;
pub mod device;
pub mod md;
pub mod perf;
pub mod rc;
pub mod rdmacm;
pub mod ud;
pub mod release;
pub mod roce;

use crate::abi::*;
use crate::core::component::{self, Component, MdDesc, MdOpen, TlDesc};
use crate::core::config::{TIME_AUTO, TIME_INF};
use crate::core::md::MdImpl;
use config::IbMdConfig;

/// The component name.
pub const NAME: &str = "ib";

struct IbOpen;

impl MdOpen for IbOpen {
    type Config = IbMdConfig;
    fn open(_c: &'static Component, name: &str, cfg: &IbMdConfig) -> Result<Box<dyn MdImpl>, ucs_status_t> {
        Ok(Box::new(md::IbMd::open(name, cfg.fork_init(), &md_params(cfg))?))
    }
}

/// The registration settings of the md configuration.
fn md_params(cfg: &IbMdConfig) -> md::MdParams {
    let gid_index = cfg.gid_index().map(|g| g.min(u32::MAX as libc::c_ulong) as u32);
    let mut p = md::MdParams { direct_cost: cfg.reg_cost(), gid_index, ..md::MdParams::default() };
    // Releases with the cache settings in the md table (up to 1.15) also
    // choose the registration methods there.
    if release::md_table_has_reg_methods() {
        p.reg_methods = cfg.reg_methods().iter().filter_map(|m| md::RegMethod::parse(m)).collect();
        let r = &cfg.rcache;
        p.rcache.event_prio = r.mem_prio;
        p.rcache.overhead = match r.overhead {
            TIME_INF | TIME_AUTO => None,
            t => Some(crate::ucs::clocks_to_secs(t)),
        };
        p.rcache.alignment = r.addr_align as usize;
        p.rcache.max_regions = r.max_regions;
        p.rcache.max_size = r.max_size;
        p.rcache.max_unreleased = r.max_unreleased;
        p.rcache.purge_on_fork = r.purge_on_fork != 0;
    }
    p
}

fn md_resources() -> Vec<String> {
    device::usable_devices()
}

static TLS: [TlDesc; 2] = [
    TlDesc::new::<rc::RcOpen>(rc::NAME, config::RC_VERBS_CONFIG_NAME, config::RC_VERBS_CONFIG_PREFIX,
                              &config::RC_VERBS_IFACE_TABLE, rc::open::query_devices),
    TlDesc::new::<ud::UdOpen>(ud::NAME, config::UD_VERBS_CONFIG_NAME, config::UD_VERBS_CONFIG_PREFIX,
                              &config::UD_VERBS_IFACE_TABLE, ud::open::query_devices),
];

pub static COMPONENT: Component = Component {
    name: NAME,
    flags: || 0,
    md: MdDesc::new::<IbOpen>(config::MD_CONFIG_NAME, config::MD_CONFIG_PREFIX, &config::IB_MD_TABLE),
    cm: None,
    md_resources,
    tls: &TLS,
    rkey_unpack: md::rkey_unpack,
    rkey_ptr: component::rkey_ptr_unsupported,
    rkey_release: component::rkey_release_nop,
};
