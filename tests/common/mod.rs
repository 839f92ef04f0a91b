//! Helpers shared by the Rust integration tests: looking components up,
//! creating a worker and opening a memory domain (both sound on their own:
//! they only hand fresh handles back), the calls every fixture makes on an
//! interface it owns, and [`Ep`], an endpoint handle whose liveness is
//! promised once, where it is created.
#![allow(dead_code)]

use ::uct::abi::*;
use ::uct::ffi::component::*;
use ::uct::ffi::config::*;
use ::uct::ffi::ep::*;
use ::uct::ffi::iface::*;
use ::uct::ffi::worker::*;
use std::ffi::{c_uint, c_void, CStr};
use std::ptr::{null, null_mut};

extern "C" {
    pub fn ucs_async_context_create(mode: u32, async_p: *mut *mut ucs_async_context_t) -> ucs_status_t;
    pub fn ucs_async_context_destroy(async_: *mut ucs_async_context_t);
}

/// `UCS_ASYNC_MODE_THREAD_SPINLOCK`.
pub const ASYNC_MODE_THREAD_SPINLOCK: u32 = 1;

/// The component of that name, if this library has it.
pub fn find_component(name: &str) -> Option<uct_component_h> {
    let mut list: *mut uct_component_h = null_mut();
    let mut n: c_uint = 0;
    // SAFETY: both out-pointers are locals.
    assert_eq!(unsafe { uct_query_components(&mut list, &mut n) }, UCS_OK);
    let mut found = None;
    for i in 0..n as usize {
        // SAFETY: the list just returned holds `n` handles.
        let c = unsafe { *list.add(i) };
        if component_name(c) == name {
            found = Some(c);
        }
    }
    // SAFETY: the list came from uct_query_components and is not used again.
    unsafe { uct_release_component_list(list) };
    found
}

/// The name a component reports.
///
/// Component handles are descriptors that live as long as the library, so
/// any handle this library handed out stays valid.
pub fn component_name(c: uct_component_h) -> String {
    // SAFETY: an all-zero attribute struct is valid (no fields requested yet).
    let mut attr: uct_component_attr_t = unsafe { std::mem::zeroed() };
    attr.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME;
    // SAFETY: the component is a process-lifetime descriptor (see above) and
    // `attr` is a local.
    assert_eq!(unsafe { uct_component_query(c, &mut attr) }, UCS_OK);
    // SAFETY: the query wrote a NUL-terminated name into the fixed array.
    unsafe { CStr::from_ptr(attr.name.as_ptr()) }.to_str().unwrap().to_owned()
}

/// The component of that name; panics when absent.
pub fn component(name: &str) -> uct_component_h {
    find_component(name).unwrap_or_else(|| panic!("component {name} not found"))
}

/// A new async context (thread-spinlock mode) and a single-threaded worker
/// on it. The caller owns both: it destroys the worker, then the context.
pub fn new_worker() -> (*mut ucs_async_context_t, uct_worker_h) {
    let mut async_ = null_mut();
    // SAFETY: the out-pointer is a local.
    assert_eq!(unsafe { ucs_async_context_create(ASYNC_MODE_THREAD_SPINLOCK, &mut async_) }, UCS_OK);
    let mut worker = null_mut();
    // SAFETY: `async_` was just created; the out-pointer is a local.
    assert_eq!(unsafe { uct_worker_create(async_, UCS_THREAD_MODE_SINGLE, &mut worker) }, UCS_OK);
    (async_, worker)
}

/// `uct_config_modify` of field `k` of a table with prefix `prefix` ("CMA_"):
/// the name as given first (a sub-table prefix such as "SCOPY_" works in
/// every release), then, from UCX 1.17 on, where libucs matches names with
/// the table's prefix, as "CMA_<k>".
///
/// # Safety
/// `cfg` is a live configuration of this library.
pub unsafe fn config_modify(cfg: *mut c_void, prefix: &str, k: &CStr, v: &CStr) -> ucs_status_t {
    // SAFETY: see the function contract; key and value are C strings.
    let status = unsafe { uct_config_modify(cfg, k.as_ptr(), v.as_ptr()) };
    if status != UCS_ERR_NO_ELEM || !running().since(17) {
        return status;
    }
    let full = config_key(prefix, k);
    // SAFETY: as above.
    unsafe { uct_config_modify(cfg, full.as_ptr(), v.as_ptr()) }
}

/// The name of field `k` of a table with prefix `prefix` as
/// `uct_config_modify` matches it from UCX 1.17 on ("CMA_MEMORY_INVALIDATE";
/// before, just `k`).
pub fn config_key(prefix: &str, k: &CStr) -> std::ffi::CString {
    if running().since(17) {
        let mut full = prefix.as_bytes().to_vec();
        full.extend_from_slice(k.to_bytes());
        std::ffi::CString::new(full).unwrap()
    } else {
        std::ffi::CString::from(k)
    }
}

/// The UCX release the test process runs (found from its libucs, as the
/// library does).
pub fn running() -> ::uct::abi::release::Release {
    ::uct::ucs::release::running()
}

/// The self transport's one device: `memory0` up to UCX 1.13, `memory`
/// from 1.14.
pub fn self_dev() -> &'static CStr {
    if running().since(14) {
        c"memory"
    } else {
        c"memory0"
    }
}

/// Opens the memory domain `name` of the component of the same name, with
/// `settings` applied to the md configuration first (each must be
/// accepted). The configuration is released once the md is open; the
/// caller closes the md.
pub fn open_md(name: &CStr, settings: &[(&CStr, &CStr)]) -> uct_md_h {
    let c = component(name.to_str().unwrap());
    let mut mdc = null_mut();
    // SAFETY: `c` came from the component list; the out-pointer is a local.
    assert_eq!(unsafe { uct_md_config_read(c, null(), null(), &mut mdc) }, UCS_OK);
    for (k, v) in settings {
        let prefix = format!("{}_", name.to_str().unwrap().to_ascii_uppercase());
        // SAFETY: `mdc` was just read.
        assert_eq!(unsafe { config_modify(mdc as *mut c_void, &prefix, k, v) }, UCS_OK, "{k:?}={v:?}");
    }
    let mut md = null_mut();
    // SAFETY: as above, and `mdc` is a configuration of this component.
    assert_eq!(unsafe { uct_md_open(c, name.as_ptr(), mdc, &mut md) }, UCS_OK);
    // SAFETY: `mdc` is ours and not used again (the md keeps its own copy).
    unsafe { uct_config_release(mdc as *mut c_void) };
    md
}

/// The configuration of transport `tl` read through `md`, with `settings`
/// applied (each must be accepted). The caller releases it.
///
/// # Safety
///
/// `md` is an open memory domain.
pub unsafe fn iface_config(md: uct_md_h, tl: &CStr, settings: &[(&CStr, &CStr)]) -> *mut uct_iface_config_t {
    let mut config = null_mut();
    // SAFETY: `md` is open (the caller's promise); the out-pointer is a local.
    assert_eq!(unsafe { uct_md_iface_config_read(md, tl.as_ptr(), null(), null(), &mut config) }, UCS_OK);
    let prefix = format!("{}_", tl.to_str().unwrap().to_ascii_uppercase());
    for (k, v) in settings {
        // SAFETY: `config` was just read.
        assert_eq!(unsafe { config_modify(config as *mut c_void, &prefix, k, v) }, UCS_OK, "{k:?}={v:?}");
    }
    config
}

/// Interface parameters for opening device `dev` of transport `tl`
/// (open mode and device set); callers add the rest.
pub fn device_params(tl: &'static CStr, dev: &'static CStr) -> uct_iface_params_t {
    // SAFETY: the parameter struct is plain data; all-zero means "no field
    // set" and NULL callbacks.
    let mut p: uct_iface_params_t = unsafe { std::mem::zeroed() };
    p.field_mask = UCT_IFACE_PARAM_FIELD_OPEN_MODE | UCT_IFACE_PARAM_FIELD_DEVICE;
    p.open_mode = UCT_IFACE_OPEN_MODE_DEVICE;
    p.mode.device.tl_name = tl.as_ptr();
    p.mode.device.dev_name = dev.as_ptr();
    p
}

/// The attributes `uct_iface_query` reports.
///
/// # Safety
///
/// `iface` is an open interface.
pub unsafe fn iface_attr(iface: uct_iface_h) -> uct_iface_attr_t {
    // SAFETY: the attribute struct is plain data; all-zero is valid.
    let mut a: uct_iface_attr_t = unsafe { std::mem::zeroed() };
    // SAFETY: `iface` is open (the caller's promise); `a` is a local.
    assert_eq!(unsafe { uct_iface_query(iface, &mut a) }, UCS_OK);
    a
}

/// The device and interface addresses of `iface`, each as long as its
/// attributes say.
///
/// # Safety
///
/// `iface` is an open interface.
pub unsafe fn iface_addresses(iface: uct_iface_h) -> (Vec<u8>, Vec<u8>) {
    // SAFETY: forwarded from the caller.
    let attr = unsafe { iface_attr(iface) };
    let mut dev = vec![0u8; attr.device_addr_len];
    let mut addr = vec![0u8; attr.iface_addr_len];
    // SAFETY: `iface` is open; each buffer has the length the interface
    // declared for that address.
    unsafe {
        assert_eq!(uct_iface_get_device_address(iface, dev.as_mut_ptr() as *mut uct_device_addr_t), UCS_OK);
        assert_eq!(uct_iface_get_address(iface, addr.as_mut_ptr() as *mut uct_iface_addr_t), UCS_OK);
    }
    (dev, addr)
}

/// Asserts that `iface` reaches the peer at (`dev`, `addr`), then creates
/// an endpoint to it (CONNECT_TO_IFACE); the status when that fails.
///
/// # Safety
///
/// `iface` is an open interface; `dev` and `addr` are at least as long as
/// its device and interface addresses.
pub unsafe fn connect_to_iface(iface: uct_iface_h, dev: &[u8], addr: &[u8]) -> Result<uct_ep_h, ucs_status_t> {
    let (dev_p, addr_p) = (dev.as_ptr() as *const uct_device_addr_t, addr.as_ptr() as *const uct_iface_addr_t);
    // SAFETY: `iface` is open and both addresses are long enough (the
    // caller's promise).
    assert_ne!(unsafe { uct_iface_is_reachable(iface, dev_p, addr_p) }, 0);
    // SAFETY: plain data; all-zero means "no field set".
    let mut p: uct_ep_params_t = unsafe { std::mem::zeroed() };
    p.field_mask = UCT_EP_PARAM_FIELD_IFACE | UCT_EP_PARAM_FIELD_DEV_ADDR | UCT_EP_PARAM_FIELD_IFACE_ADDR;
    p.iface = iface;
    p.dev_addr = dev_p;
    p.iface_addr = addr_p;
    let mut ep = null_mut();
    // SAFETY: as above; the addresses outlive the call and the out-pointer
    // is a local.
    let s = unsafe { uct_ep_create(&p, &mut ep) };
    if s == UCS_OK { Ok(ep) } else { Err(s) }
}

/// What the inline `uct_worker_progress` of the C headers does: walk the
/// worker's fast callbacks up to the first empty slot (slow and one-shot
/// callbacks run through a proxy among them), returning the sum of what
/// they return.
///
/// # Safety
///
/// `worker` is a live worker, used from this thread only.
pub unsafe fn worker_progress(worker: uct_worker_h) -> u32 {
    // The fast-path array's elements are as wide as the release makes them
    // (1.16 dropped their flags and id).
    if running().since(16) {
        // SAFETY: see the function contract.
        unsafe { dispatch::<ucs_callbackq_elem_t>(worker, |e| (e.cb, e.arg)) }
    } else {
        // SAFETY: see the function contract.
        unsafe { dispatch::<ucs_callbackq_elem_t_v1_13>(worker, |e| (e.cb, e.arg)) }
    }
}

/// Walk the fast-path array of the worker's queue, elements of type `E`.
///
/// # Safety
/// As for [`worker_progress`]; `E` is the running release's element.
unsafe fn dispatch<E>(worker: uct_worker_h, parts: impl Fn(&E) -> (ucs_callback_t, *mut c_void)) -> u32 {
    let mut n = 0;
    // The queue is at the start of the worker; its fast-path array first.
    let elems = worker as *const E;
    for i in 0..UCS_CALLBACKQ_FAST_COUNT + 1 {
        // SAFETY: the array has UCS_CALLBACKQ_FAST_COUNT + 1 slots (the last
        // always empty). Read volatile: callbacks change the array while
        // we walk it.
        let e = unsafe { std::ptr::read_volatile(elems.add(i)) };
        match parts(&e) {
            // SAFETY: a registered callback, called with its own argument
            // on the worker's thread, as the dispatcher does.
            (Some(cb), arg) => n += unsafe { cb(arg) },
            (None, _) => break,
        }
    }
    n
}

/// An endpoint handle the library returned from `uct_ep_create`.
///
/// It is `Copy`, like the C handle. Whoever makes one ([`Ep::from_raw`])
/// promises that the endpoint and its interface stay alive for as long as
/// any copy is used, and the only way to end it is the unsafe
/// [`Ep::destroy`]; so the handle is live whenever a copy is used.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Ep(uct_ep_h);

impl Ep {
    /// # Safety
    ///
    /// `ep` is a live endpoint; it and its interface stay alive while any
    /// copy of the returned `Ep` is used, and it is destroyed only through
    /// [`Ep::destroy`].
    pub unsafe fn from_raw(ep: uct_ep_h) -> Ep {
        Ep(ep)
    }

    /// The C handle, for calls that take it.
    pub fn raw(self) -> uct_ep_h {
        self.0
    }

    /// The operations table of the endpoint's interface (a copy, read now).
    pub fn ops(self) -> uct_iface_ops_t {
        // SAFETY: the endpoint and its interface are alive (the type's
        // invariant); an endpoint starts with its interface's handle, and
        // an interface with its operations table.
        unsafe { (*(*self.0).iface).ops }
    }

    /// `uct_ep_destroy`.
    ///
    /// # Safety
    ///
    /// No copy of this `Ep` is used afterwards.
    pub unsafe fn destroy(self) {
        // SAFETY: the endpoint is alive (the type's invariant) and, by the
        // caller's promise, not used again.
        unsafe { uct_ep_destroy(self.0) }
    }
}
