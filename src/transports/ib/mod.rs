//! The `ib` component (placeholder): it publishes the configuration tables
//! of the ib family (`UCX_IB_*`, `UCX_RC_VERBS_*`, see [`config`]) and
//! offers no memory domain yet, so nothing else changes. The real component,
//! md and transports replace this file.

pub mod config;
pub mod release;

use crate::abi::*;
use crate::core::component::{self, Component, IfaceOpen, MdDesc, MdOpen, TlDesc, TlDevice};
use crate::core::iface::IfaceParams;
use crate::core::md::{MdImpl, MdObj};
use crate::core::worker::WorkerObj;
use libc::c_void;

/// Opens nothing yet.
struct IbOpen;

impl MdOpen for IbOpen {
    type Config = config::IbMdConfig;
    fn open(_c: &'static Component, _name: &str, _cfg: &config::IbMdConfig) -> Result<Box<dyn MdImpl>, ucs_status_t> {
        Err(UCS_ERR_UNSUPPORTED)
    }
}

impl IfaceOpen for IbOpen {
    type Config = config::RcVerbsIfaceConfig;
    fn open(_md: &MdObj, _w: &WorkerObj, _p: &IfaceParams, _cfg: &config::RcVerbsIfaceConfig)
            -> Result<uct_iface_h, ucs_status_t> {
        Err(UCS_ERR_UNSUPPORTED)
    }
}

fn no_devices(_md: &MdObj) -> Result<Vec<TlDevice>, ucs_status_t> {
    Ok(Vec::new())
}

static TLS: [TlDesc; 1] = [TlDesc::new::<IbOpen>("rc_verbs", config::RC_VERBS_CONFIG_NAME,
                                                  config::RC_VERBS_CONFIG_PREFIX, &config::RC_VERBS_IFACE_TABLE,
                                                  no_devices)];

fn rkey_unpack(_buf: *const u8) -> Result<(uct_rkey_t, *mut c_void), ucs_status_t> {
    Err(UCS_ERR_UNSUPPORTED)
}

pub static COMPONENT: Component = Component {
    name: "ib",
    flags: 0,
    md: MdDesc::new::<IbOpen>(config::MD_CONFIG_NAME, config::MD_CONFIG_PREFIX, &config::IB_MD_TABLE),
    cm: None,
    md_resources: Vec::new,
    tls: &TLS,
    rkey_unpack,
    rkey_ptr: component::rkey_ptr_unsupported,
    rkey_release: component::rkey_release_nop,
};
