//! What a component is: the memory domains, transports and configuration
//! tables it offers. The list of components lives with the transports
//! (`crate::transports::COMPONENTS`); core only ever receives it.

use crate::abi::*;
use crate::core::cm::CmImpl;
use crate::core::config::{ConfigDesc, Parsed, Table};
use crate::core::iface::IfaceParams;
use crate::core::md::{MdImpl, MdObj};
use crate::core::worker::WorkerObj;
use libc::c_void;
use once_cell::sync::Lazy;
use std::ffi::CStr;

/// One device a transport can open an interface on.
#[derive(Clone, Debug)]
pub struct TlDevice {
    pub name: String,
    pub dev_type: uct_device_type_t,
    pub sys_device: ucs_sys_device_t,
}

/// How a transport opens an interface, with its parsed configuration.
pub trait IfaceOpen: 'static {
    /// The `repr(C)` struct the transport's config table describes.
    type Config: 'static;
    fn open(md: &MdObj, worker: &WorkerObj, params: &IfaceParams, config: &Self::Config)
            -> Result<uct_iface_h, ucs_status_t>;
}

/// How a component opens a memory domain, with its parsed configuration.
pub trait MdOpen: 'static {
    type Config: 'static;
    fn open(component: &'static Component, name: &str, config: &Self::Config)
            -> Result<Box<dyn MdImpl>, ucs_status_t>;
}

/// How a component opens a connection manager on a worker.
pub trait CmOpen: 'static {
    type Config: 'static;
    fn open(component: &'static Component, worker: &WorkerObj, config: &Self::Config)
            -> Result<Box<dyn CmImpl>, ucs_status_t>;
}

// The one place where a parsed options block becomes the typed struct of the
// code that opens something with it: each descriptor below is built from
// the opener's `Config` type, and its `open` accepts only blocks parsed from
// that descriptor's own table.

type ErasedIfaceOpen = unsafe fn(&MdObj, &WorkerObj, &IfaceParams, Parsed) -> Result<uct_iface_h, ucs_status_t>;
type ErasedMdOpen = unsafe fn(&'static Component, &str, Parsed) -> Result<Box<dyn MdImpl>, ucs_status_t>;
type ErasedCmOpen = unsafe fn(&'static Component, &WorkerObj, Parsed) -> Result<Box<dyn CmImpl>, ucs_status_t>;

/// # Safety
/// `config` was parsed from the table of `O::Config`.
unsafe fn erased_iface_open<O: IfaceOpen>(md: &MdObj, worker: &WorkerObj, params: &IfaceParams, config: Parsed)
                                          -> Result<uct_iface_h, ucs_status_t> {
    // SAFETY: see the function contract.
    O::open(md, worker, params, unsafe { config.as_typed::<O::Config>() })
}

/// # Safety
/// `config` was parsed from the table of `O::Config`.
unsafe fn erased_md_open<O: MdOpen>(c: &'static Component, name: &str, config: Parsed)
                                    -> Result<Box<dyn MdImpl>, ucs_status_t> {
    // SAFETY: see the function contract.
    O::open(c, name, unsafe { config.as_typed::<O::Config>() })
}

/// # Safety
/// `config` was parsed from the table of `O::Config`.
unsafe fn erased_cm_open<O: CmOpen>(c: &'static Component, worker: &WorkerObj, config: Parsed)
                                    -> Result<Box<dyn CmImpl>, ucs_status_t> {
    // SAFETY: see the function contract.
    O::open(c, worker, unsafe { config.as_typed::<O::Config>() })
}

#[cold]
fn foreign_config(what: &str, name: &CStr) -> ucs_status_t {
    crate::error!("config was not read for {} '{}'", what, name.to_string_lossy());
    UCS_ERR_INVALID_PARAM
}

/// A transport of a component.
pub struct TlDesc {
    pub name: &'static str,
    pub config: ConfigDesc,
    pub query_devices: fn(&MdObj) -> Result<Vec<TlDevice>, ucs_status_t>,
    open: ErasedIfaceOpen,
}

impl TlDesc {
    /// Transport `name`, configured by `table` (the table of `O::Config`)
    /// under `UCX_<prefix>`, opened by `O`.
    pub const fn new<O: IfaceOpen>(name: &'static str, config_name: &'static CStr, prefix: &'static CStr,
                                   table: &'static Lazy<Table>,
                                   query_devices: fn(&MdObj) -> Result<Vec<TlDevice>, ucs_status_t>) -> TlDesc {
        TlDesc { name, config: ConfigDesc::of::<O::Config>(config_name, prefix, table), query_devices,
                 open: erased_iface_open::<O> }
    }

    /// Open an interface with `config`, which must have been read for this
    /// transport.
    pub fn open(&self, md: &MdObj, worker: &WorkerObj, params: &IfaceParams, config: Parsed)
                -> Result<uct_iface_h, ucs_status_t> {
        if !config.is_from(&self.config) {
            return Err(foreign_config("transport", self.config.name));
        }
        // SAFETY: checked just above; `new` built the table from O::Config.
        unsafe { (self.open)(md, worker, params, config) }
    }
}

/// The memory domains of a component: their configuration and opener.
pub struct MdDesc {
    pub config: ConfigDesc,
    open: ErasedMdOpen,
}

impl MdDesc {
    pub const fn new<O: MdOpen>(config_name: &'static CStr, prefix: &'static CStr, table: &'static Lazy<Table>)
                                -> MdDesc {
        MdDesc { config: ConfigDesc::of::<O::Config>(config_name, prefix, table), open: erased_md_open::<O> }
    }

    pub fn open(&self, c: &'static Component, name: &str, config: Parsed) -> Result<Box<dyn MdImpl>, ucs_status_t> {
        if !config.is_from(&self.config) {
            return Err(foreign_config("memory domain", self.config.name));
        }
        // SAFETY: checked just above; `new` built the table from O::Config.
        unsafe { (self.open)(c, name, config) }
    }
}

/// The connection manager of a component: its configuration and opener.
pub struct CmDesc {
    pub config: ConfigDesc,
    open: ErasedCmOpen,
}

impl CmDesc {
    pub const fn new<O: CmOpen>(config_name: &'static CStr, prefix: &'static CStr, table: &'static Lazy<Table>)
                                -> CmDesc {
        CmDesc { config: ConfigDesc::of::<O::Config>(config_name, prefix, table), open: erased_cm_open::<O> }
    }

    pub fn open(&self, c: &'static Component, worker: &WorkerObj, config: Parsed)
                -> Result<Box<dyn CmImpl>, ucs_status_t> {
        if !config.is_from(&self.config) {
            return Err(foreign_config("connection manager", self.config.name));
        }
        // SAFETY: checked just above; `new` built the table from O::Config.
        unsafe { (self.open)(c, worker, config) }
    }
}

/// A component, as `uct_component_h` designates it.
pub struct Component {
    pub name: &'static str,
    /// Its `UCT_COMPONENT_FLAG_*` bits in the running release (read through
    /// [`Component::flags`]).
    pub flags: fn() -> u64,
    pub md: MdDesc,
    /// Present for components with `UCT_COMPONENT_FLAG_CM`.
    pub cm: Option<CmDesc>,
    pub md_resources: fn() -> Vec<String>,
    pub tls: &'static [TlDesc],
    pub rkey_unpack: fn(*const u8) -> Result<(uct_rkey_t, *mut c_void), ucs_status_t>,
    pub rkey_ptr: fn(uct_rkey_t, *mut c_void, u64) -> Result<*mut c_void, ucs_status_t>,
    pub rkey_release: fn(uct_rkey_t, *mut c_void) -> ucs_status_t,
}

impl Component {
    pub fn handle(&'static self) -> uct_component_h {
        self as *const Component as uct_component_h
    }
    /// The `UCT_COMPONENT_FLAG_*` bits the component reports.
    pub fn flags(&self) -> u64 {
        (self.flags)()
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
        v.push(&c.md.config);
        if let Some(cm) = &c.cm {
            v.push(&cm.config);
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
