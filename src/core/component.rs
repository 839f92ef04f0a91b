//! What a component is: the memory domains, transports and configuration
//! tables it offers. The list of components lives with the transports
//! (`crate::transports::COMPONENTS`); core only ever receives it.

use crate::abi::*;
use crate::core::config::ConfigDesc;
use crate::core::iface::IfaceParams;
use crate::core::md::{MdImpl, MdObj};
use crate::core::worker::WorkerObj;
use libc::c_void;

/// One device a transport can open an interface on.
#[derive(Clone, Debug)]
pub struct TlDevice {
    pub name: String,
    pub dev_type: uct_device_type_t,
    pub sys_device: ucs_sys_device_t,
}

/// A transport of a component.
pub struct TlDesc {
    pub name: &'static str,
    pub config: ConfigDesc,
    pub query_devices: fn(&MdObj) -> Result<Vec<TlDevice>, ucs_status_t>,
    /// Open an interface; `config` points at this transport's parsed options.
    pub iface_open: fn(&MdObj, &WorkerObj, &IfaceParams, *const c_void) -> Result<uct_iface_h, ucs_status_t>,
}

/// Opens a memory domain; `config` points at the component's parsed options.
pub type MdOpenFn = fn(&'static Component, &str, *const c_void) -> Result<Box<dyn MdImpl>, ucs_status_t>;

/// A component, as `uct_component_h` designates it.
pub struct Component {
    pub name: &'static str,
    pub flags: u64,
    pub md_config: ConfigDesc,
    pub cm_config: Option<ConfigDesc>,
    /// Present for components with `UCT_COMPONENT_FLAG_CM`.
    pub cm_open: Option<crate::core::cm::CmOpenFn>,
    pub md_resources: fn() -> Vec<String>,
    pub md_open: MdOpenFn,
    pub tls: &'static [TlDesc],
    pub rkey_unpack: fn(*const u8) -> Result<(uct_rkey_t, *mut c_void), ucs_status_t>,
    pub rkey_ptr: fn(uct_rkey_t, *mut c_void, u64) -> Result<*mut c_void, ucs_status_t>,
    pub rkey_release: fn(uct_rkey_t, *mut c_void) -> ucs_status_t,
}

impl Component {
    pub fn handle(&'static self) -> uct_component_h {
        self as *const Component as uct_component_h
    }
    pub fn find_tl(&self, name: &str) -> Option<&'static TlDesc> {
        self.tls.iter().find(|t| t.name == name)
    }
}

/// The component of `list` behind a handle, if the handle is one of them.
pub fn find(list: &[&'static Component], h: uct_component_h) -> Option<&'static Component> {
    list.iter().copied().find(|c| c.handle() == h)
}

/// Every configuration table of the components of `list`: md, CM and each
/// transport's, in list order.
pub fn config_descs(list: &[&'static Component]) -> Vec<&'static ConfigDesc> {
    let mut v = Vec::new();
    for c in list {
        v.push(&c.md_config);
        if let Some(cm) = &c.cm_config {
            v.push(cm);
        }
        for tl in c.tls {
            v.push(&tl.config);
        }
    }
    v
}

/// A single md resource named after the component.
pub fn single_md_resource_self() -> Vec<String> {
    vec!["self".to_string()]
}

/// Rkeys of components whose packed key is empty and whose memory is the
/// caller's own address space: the key is 0, so `rkey + addr` is the address.
pub fn rkey_unpack_zero(_buf: *const u8) -> Result<(uct_rkey_t, *mut c_void), ucs_status_t> {
    Ok((0, std::ptr::null_mut()))
}

pub fn rkey_ptr_unsupported(_: uct_rkey_t, _: *mut c_void, _: u64) -> Result<*mut c_void, ucs_status_t> {
    Err(UCS_ERR_UNSUPPORTED)
}

pub fn rkey_release_nop(_: uct_rkey_t, _: *mut c_void) -> ucs_status_t {
    UCS_OK
}
