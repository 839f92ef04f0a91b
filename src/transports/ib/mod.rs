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
//! - [`rdmacm`]: the `rdmacm` component (its connection manager is not
//!   implemented: opening it fails, as it fails without RDMA CM).

pub mod config;
pub mod device;
pub mod md;
pub mod rc;
pub mod rdmacm;
pub mod release;

use crate::abi::*;
use crate::core::component::{self, Component, MdDesc, MdOpen, TlDesc};
use crate::core::md::MdImpl;
use config::IbMdConfig;

/// The component name.
pub const NAME: &str = "ib";

struct IbOpen;

impl MdOpen for IbOpen {
    type Config = IbMdConfig;
    fn open(_c: &'static Component, name: &str, cfg: &IbMdConfig) -> Result<Box<dyn MdImpl>, ucs_status_t> {
        Ok(Box::new(md::IbMd::open(name, cfg.fork_init())?))
    }
}

fn md_resources() -> Vec<String> {
    device::usable_devices()
}

static TLS: [TlDesc; 1] = [TlDesc::new::<rc::RcOpen>(rc::NAME, config::RC_VERBS_CONFIG_NAME, config::RC_VERBS_CONFIG_PREFIX,
                                                      &config::RC_VERBS_IFACE_TABLE, rc::open::query_devices)];

pub static COMPONENT: Component = Component {
    name: NAME,
    flags: 0,
    md: MdDesc::new::<IbOpen>(config::MD_CONFIG_NAME, config::MD_CONFIG_PREFIX, &config::IB_MD_TABLE),
    cm: None,
    md_resources,
    tls: &TLS,
    rkey_unpack: md::rkey_unpack,
    rkey_ptr: component::rkey_ptr_unsupported,
    rkey_release: component::rkey_release_nop,
};
