//! The `ib` family: RDMA over libibverbs, on any device a provider serves
//! (InfiniBand and RoCE HCAs, soft devices). UCX 1.13.1's `ib` component
//! offers one memory domain per device (named as the device, `mlx5_0`,
//! `softrdma0`), and on each of them the verbs transports open one
//! interface per usable port (`<device>:<port>`).
//!
//! - [`device`]: which devices and ports are usable.
//! - [`md`]: the memory domain: the opened device, its PD, registrations,
//!   and the packed remote key format.
//! - [`rdmacm`]: the `rdmacm` component (its connection manager is not
//!   implemented: opening it fails, as it fails without RDMA CM).

pub mod device;
pub mod md;
pub mod rdmacm;

use crate::abi::*;
use crate::core::component::{self, Component, MdDesc, MdOpen, TlDesc};
use crate::core::config::{self, embed, BaseMdConfig, Table};
use crate::core::md::MdImpl;
use once_cell::sync::Lazy;
use std::mem::offset_of;

/// The component name.
pub const NAME: &str = "ib";

/// The md settings (`UCX_IB_*`).
#[repr(C)]
pub struct IbMdConfig {
    pub base: BaseMdConfig,
}

static MD_TABLE: Lazy<Table> = Lazy::new(|| {
    Table::new(vec![embed(&config::BASE_MD_TABLE, offset_of!(IbMdConfig, base))])
});

struct IbOpen;

impl MdOpen for IbOpen {
    type Config = IbMdConfig;
    fn open(_c: &'static Component, name: &str, _cfg: &IbMdConfig) -> Result<Box<dyn MdImpl>, ucs_status_t> {
        Ok(Box::new(md::IbMd::open(name, Some(false), &md::MdParams::default())?))
    }
}

fn md_resources() -> Vec<String> {
    device::usable_devices()
}

static TLS: [TlDesc; 0] = [];

pub static COMPONENT: Component = Component {
    name: NAME,
    flags: 0,
    md: MdDesc::new::<IbOpen>(c"IB memory domain", c"IB_", &MD_TABLE),
    cm: None,
    md_resources,
    tls: &TLS,
    rkey_unpack: md::rkey_unpack,
    rkey_ptr: component::rkey_ptr_unsupported,
    rkey_release: component::rkey_release_nop,
};
