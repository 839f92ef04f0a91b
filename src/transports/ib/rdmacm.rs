//! The `rdmacm` component: UCX's connection manager over librdmacm.
//!
//! The connection manager itself is not implemented yet. The component is
//! listed, as UCX 1.13.1 lists it, so that tools and libucp see the same
//! components; opening its CM first asks librdmacm for an event channel,
//! which fails where RDMA CM is unavailable (no `/dev/infiniband/rdma_cm`:
//! the usual machine, and the soft RDMA device of the tests) exactly as the
//! original fails there, and otherwise reports `UCS_ERR_UNSUPPORTED`.
//! The component has no memory domain and no settings.

use crate::abi::*;
use crate::core::cm::CmImpl;
use crate::core::component::{self, CmDesc, CmOpen, Component, MdDesc, MdOpen};
use crate::core::config::Table;
use crate::core::md::MdImpl;
use crate::core::worker::WorkerObj;
use once_cell::sync::Lazy;

pub const NAME: &str = "rdmacm";

/// Neither the md nor the CM of the component has settings.
#[repr(C)]
pub struct NoConfig {
    _unused: u8,
}

static EMPTY_TABLE: Lazy<Table> = Lazy::new(|| Table::new(vec![]));

struct RdmacmOpen;

impl MdOpen for RdmacmOpen {
    type Config = NoConfig;
    fn open(_c: &'static Component, name: &str, _cfg: &NoConfig) -> Result<Box<dyn MdImpl>, ucs_status_t> {
        crate::debug!("rdmacm: no memory domain '{}' (the component has none)", name);
        Err(UCS_ERR_NO_DEVICE)
    }
}

impl CmOpen for RdmacmOpen {
    type Config = NoConfig;
    fn open(_c: &'static Component, _worker: &WorkerObj, _cfg: &NoConfig) -> Result<Box<dyn CmImpl>, ucs_status_t> {
        match crate::sys::verbs::cm::probe_event_channel() {
            Err(e) => {
                if e == crate::sys::verbs::Errno::ENODEV || e == crate::sys::verbs::Errno::ENOENT {
                    crate::diag!("rdma_create_event_channel failed: {}", e.desc());
                } else {
                    crate::error!("rdma_create_event_channel failed: {}", e.desc());
                }
                Err(UCS_ERR_IO_ERROR)
            }
            Ok(()) => {
                crate::debug!("rdmacm: the RDMA connection manager is not implemented by this library");
                Err(UCS_ERR_UNSUPPORTED)
            }
        }
    }
}

fn md_resources() -> Vec<String> {
    Vec::new()
}

fn rkey_unpack(_buf: *const u8) -> Result<(uct_rkey_t, *mut libc::c_void), ucs_status_t> {
    Err(UCS_ERR_UNSUPPORTED)
}

pub static COMPONENT: Component = Component {
    name: NAME,
    flags: || UCT_COMPONENT_FLAG_CM,
    md: MdDesc::new::<RdmacmOpen>(c"", c"", &EMPTY_TABLE),
    cm: Some(CmDesc::new::<RdmacmOpen>(c"RDMA-CM connection manager", c"RDMACM_", &EMPTY_TABLE)),
    md_resources,
    tls: &[],
    rkey_unpack,
    rkey_ptr: component::rkey_ptr_unsupported,
    rkey_release: component::rkey_release_nop,
};
