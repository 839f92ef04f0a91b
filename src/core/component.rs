//! The component registry: which components exist, in Debian's order, and
//! what each one offers (memory domains, transports, configuration).

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
    pub iface_open: fn(&MdObj, &mut WorkerObj, &IfaceParams, *const c_void) -> Result<uct_iface_h, ucs_status_t>,
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

/// Every component, in the order UCX 1.13.1 on Debian lists them (the
/// transports that later issues bring are added here in place).
pub static COMPONENTS: &[&Component] = &[
    &crate::transports::sm::self_::COMPONENT,
    &crate::transports::tcp::COMPONENT,
    &crate::transports::sm::mm::SYSV_COMPONENT,
    &crate::transports::sm::mm::POSIX_COMPONENT,
    &crate::transports::sm::cma::COMPONENT,
];

/// The component behind a handle, if the handle is one of ours.
pub fn from_handle(h: uct_component_h) -> Option<&'static Component> {
    COMPONENTS.iter().copied().find(|c| c.handle() == h)
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
