//! The state every interface has right after its vtable ([`IfaceHeader`]):
//! active-message handlers, the error handler and its deferred reports,
//! the progress callback on the worker.

use super::stubs::unsupported_ops;
use super::transport::IfaceParams;
use crate::abi::*;
use crate::core::config::BaseIfaceConfig;
use crate::core::md::MdObj;
use crate::core::registry::{self, Kind};
use crate::core::worker::WorkerObj;
use crate::ucs;
use libc::{c_int, c_uint, c_void};
use std::cell::Cell;

/// Written into every interface ("uct-rs" iface), for whoever looks at a
/// core dump; never read to decide whether a pointer is an interface (the
/// [`registry`] says that).
pub const IFACE_MAGIC: u64 = 0x7563_742d_7273_6966;

/// One active-message handler slot.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct AmHandler {
    pub cb: uct_am_callback_t,
    pub arg: *mut c_void,
    pub flags: u32,
}

/// The address lengths an interface reports in `uct_iface_attr_t`.
#[derive(Clone, Copy, Default, Debug)]
pub struct AddrLens {
    pub device: usize,
    pub iface: usize,
    pub ep: usize,
}

/// Per-transport hooks that the exported functions reach through private
/// data rather than through the vtable (as the C original does).
pub struct InternalOps {
    pub estimate_perf: unsafe fn(uct_iface_h, *mut uct_perf_attr_t) -> ucs_status_t,
    pub ep_query: unsafe fn(uct_ep_h, *mut uct_ep_attr_t) -> ucs_status_t,
    /// Whether the endpoint is connected to the peer at these addresses
    /// (each may be NULL): `uct_ep_is_connected` of the 1.16+ API.
    pub ep_is_connected: unsafe fn(uct_ep_h, *const uct_device_addr_t, *const uct_iface_addr_t,
                                   *const uct_ep_addr_t) -> bool,
    /// Whether the peer at these addresses (each may be NULL) is reachable,
    /// and if not, why (empty when the transport gives no reason).
    pub reachable: unsafe fn(uct_iface_h, *const uct_device_addr_t, *const uct_iface_addr_t) -> Result<(), String>,
    /// The transport needs the peer's iface address to judge reachability
    /// (all but tcp, which needs only the device address).
    pub reach_needs_iface_addr: bool,
}

/// State every interface has, right after the vtable.
#[repr(C)]
pub struct IfaceHeader {
    pub base: uct_iface_t,
    pub magic: u64,
    pub md: *const MdObj,
    pub worker: *const WorkerObj,
    pub internal: &'static InternalOps,
    /// Set by `uct_iface_set_am_handler`, possibly from inside a callback
    /// that holds a reference to this interface: hence cells.
    am: [Cell<AmHandler>; UCT_AM_ID_MAX],
    am_tracer: Cell<(uct_am_tracer_t, *mut c_void)>,
    pub err_handler: uct_error_handler_t,
    pub err_handler_arg: *mut c_void,
    pub err_handler_flags: u32,
    progress_flags: Cell<u32>,
    prog_id: Cell<c_int>,
    /// False for transports with nothing to poll: enabling progress then
    /// adds no callback to the worker (as UCX does for self).
    pub has_progress: bool,
    /// The device, interface and endpoint address lengths the transport
    /// reports (set once the interface exists): peer addresses are read,
    /// and our addresses written, within them. Kept as u16 in the padding
    /// after `has_progress`, so the header (and the transport state after
    /// it, which the data path reads) keeps the size and placement it has
    /// always had.
    addr_lens: Cell<[u16; 3]>,
    pub max_num_eps: usize,
    pub alloc_methods: Vec<uct_alloc_method_t>,
    pub rx_headroom: usize,
}

/// Call the error handler of `ep`'s interface.
///
/// # Safety
/// `ep` is a live endpoint of this library.
unsafe fn report_ep_err(ep: uct_ep_h, status: ucs_status_t) -> c_uint {
    // SAFETY: see the function contract: the endpoint names its live
    // interface, which starts with our header.
    if let Some(hdr) = unsafe { IfaceHeader::of_ep((*ep).iface) } {
        if let Some(h) = hdr.err_handler {
            // SAFETY: the user's handler with the argument it registered.
            unsafe { h(hdr.err_handler_arg, ep, status) };
        }
    }
    1
}

/// One-shot progress callbacks reporting a peer failure on an endpoint
/// (the endpoint is the argument; the callback is removed when the endpoint
/// is destroyed, so it is alive here).
unsafe extern "C" fn ep_err_progress(arg: *mut c_void) -> c_uint {
    // SAFETY: the argument is the live endpoint (see above).
    unsafe { report_ep_err(arg as uct_ep_h, UCS_ERR_CONNECTION_RESET) }
}

unsafe extern "C" fn ep_timeout_progress(arg: *mut c_void) -> c_uint {
    // SAFETY: as for ep_err_progress.
    unsafe { report_ep_err(arg as uct_ep_h, UCS_ERR_ENDPOINT_TIMEOUT) }
}

unsafe extern "C" fn is_ep_err_for(elem: *const ucs_callbackq_elem_t, arg: *mut c_void) -> c_int {
    // SAFETY: libucs hands the predicate a live queue element.
    let e = unsafe { &*elem };
    let reset: unsafe extern "C" fn(*mut c_void) -> c_uint = ep_err_progress;
    let timeout: unsafe extern "C" fn(*mut c_void) -> c_uint = ep_timeout_progress;
    matches!(e.cb, Some(cb) if (std::ptr::fn_addr_eq(cb, reset) || std::ptr::fn_addr_eq(cb, timeout))
             && e.arg == arg) as c_int
}

unsafe extern "C" fn stub_am_handler(arg: *mut c_void, _data: *mut c_void, length: usize, _flags: c_uint) -> ucs_status_t {
    crate::warn!("got active message id {}, but no handler installed ({} bytes dropped)", arg as usize, length);
    UCS_OK
}

impl IfaceHeader {
    pub fn new(md: &MdObj, worker: &WorkerObj, params: &IfaceParams, base_cfg: &BaseIfaceConfig,
               internal: &'static InternalOps) -> IfaceHeader {
        let mut alloc_methods = Vec::new();
        for m in base_cfg.alloc_methods() {
            if !alloc_methods.contains(&m) {
                alloc_methods.push(m);
            }
        }
        IfaceHeader {
            md,
            err_handler: params.err_handler,
            err_handler_arg: params.err_handler_arg,
            err_handler_flags: params.err_handler_flags,
            max_num_eps: base_cfg.max_num_eps as usize,
            alloc_methods,
            rx_headroom: params.rx_headroom,
            ..Self::bare(worker, internal)
        }
    }

    /// The header of an interface that belongs to no memory domain and has
    /// no progress of its own (a connection manager's endpoints), with no
    /// error handler.
    pub fn bare(worker: &WorkerObj, internal: &'static InternalOps) -> IfaceHeader {
        IfaceHeader {
            base: uct_iface_t { ops: unsupported_ops() },
            magic: IFACE_MAGIC,
            md: std::ptr::null(),
            worker,
            internal,
            am: std::array::from_fn(|id| Cell::new(Self::stub_handler(id as u8))),
            am_tracer: Cell::new((None, std::ptr::null_mut())),
            err_handler: None,
            err_handler_arg: std::ptr::null_mut(),
            err_handler_flags: 0,
            progress_flags: Cell::new(0),
            prog_id: Cell::new(UCS_CALLBACKQ_ID_NULL),
            addr_lens: Cell::new([0; 3]),
            max_num_eps: usize::MAX,
            alloc_methods: Vec::new(),
            rx_headroom: 0,
            has_progress: false,
        }
    }

    /// Install the handler of active-message id `id` (`id` < `UCT_AM_ID_MAX`).
    pub fn set_am_handler(&self, id: u8, h: AmHandler) {
        if let Some(slot) = self.am.get(id as usize) {
            slot.set(h);
        }
    }

    /// Record the active-message tracer and its argument.
    pub fn set_am_tracer(&self, tracer: uct_am_tracer_t, arg: *mut c_void) {
        self.am_tracer.set((tracer, arg));
    }

    /// The address lengths the transport reports.
    pub fn addr_lens(&self) -> AddrLens {
        let [device, iface, ep] = self.addr_lens.get();
        AddrLens { device: device as usize, iface: iface as usize, ep: ep as usize }
    }

    /// Record the lengths (an address is at most a few dozen bytes; a
    /// length beyond u16 would be a transport bug, and is kept at the
    /// largest value, so reads stay within what the transport reported).
    pub(super) fn set_addr_lens(&self, lens: AddrLens) {
        let short = |n: usize| u16::try_from(n).unwrap_or(u16::MAX);
        self.addr_lens.set([short(lens.device), short(lens.iface), short(lens.ep)]);
    }

    /// The progress flags currently enabled.
    pub fn progress_flags(&self) -> u32 {
        self.progress_flags.get()
    }

    /// The handler installed for ids nobody registered: it logs and drops.
    pub fn stub_handler(id: u8) -> AmHandler {
        AmHandler { cb: Some(stub_am_handler), arg: id as usize as *mut c_void, flags: UCT_CB_FLAG_ASYNC }
    }

    /// The header of an interface handle, if it is a live interface opened
    /// with `uct_iface_open` (looked up by address: nothing is read through
    /// a pointer that is not).
    ///
    /// # Safety
    /// The interface must stay open while the reference is used.
    pub unsafe fn from_handle<'a>(iface: uct_iface_h) -> Option<&'a IfaceHeader> {
        // SAFETY: every live interface is an `Iface<T>`, which starts with
        // the header; see the function contract for the lifetime.
        registry::is(iface, Kind::Iface).then(|| unsafe { &*(iface as *const IfaceHeader) })
    }

    /// The header of an endpoint's interface: a live interface of ours,
    /// whether opened by the user or by a connection manager.
    ///
    /// # Safety
    /// As for [`from_handle`](Self::from_handle).
    pub unsafe fn of_ep<'a>(iface: uct_iface_h) -> Option<&'a IfaceHeader> {
        let live = matches!(registry::kind_of(iface), Some(Kind::Iface | Kind::CmIface));
        // SAFETY: as in `from_handle`.
        live.then(|| unsafe { &*(iface as *const IfaceHeader) })
    }

    /// Deliver an active message held in `data` to the handler of `id`
    /// (inline delivery: the data is only valid during the call).
    #[inline(always)]
    pub fn invoke_am(&self, id: u8, data: &mut [u8], flags: u32) -> ucs_status_t {
        // SAFETY: `data` is a live, writable buffer for the whole call.
        unsafe { self.invoke_am_raw(id, data.as_mut_ptr() as *mut c_void, data.len(), flags) }
    }

    /// Deliver an active message that lives outside Rust memory (a
    /// descriptor in shared memory, for instance).
    ///
    /// # Safety
    /// `data` must hold `length` bytes, valid for the call (and, with
    /// `UCT_CB_PARAM_FLAG_DESC`, until the handler releases it).
    #[inline(always)]
    pub unsafe fn invoke_am_raw(&self, id: u8, data: *mut c_void, length: usize, flags: u32) -> ucs_status_t {
        let h = self.am[(id as usize) & (UCT_AM_ID_MAX - 1)].get();
        match h.cb {
            // SAFETY: the handler was installed through uct_iface_set_am_handler
            // together with its argument; see the function contract for data.
            Some(cb) => unsafe { cb(h.arg, data, length, flags) },
            None => UCS_OK,
        }
    }

    pub fn md(&self) -> &MdObj {
        // SAFETY: the md outlives every iface opened on it (uct_md_close
        // after uct_iface_close is the documented order).
        unsafe { &*self.md }
    }

    /// Report a failed endpoint to the error handler with
    /// `UCS_ERR_CONNECTION_RESET`, from the worker's progress (the caller
    /// may be anywhere, even another thread).
    pub fn schedule_ep_err(&self, ep: uct_ep_h) {
        self.schedule_ep_err_status(ep, UCS_ERR_CONNECTION_RESET)
    }

    /// As [`schedule_ep_err`](Self::schedule_ep_err), with the status the
    /// handler receives (`UCS_ERR_CONNECTION_RESET` or
    /// `UCS_ERR_ENDPOINT_TIMEOUT`; anything else is reported as a reset).
    pub fn schedule_ep_err_status(&self, ep: uct_ep_h, status: ucs_status_t) {
        if self.err_handler.is_none() {
            crate::diag!("ep {:p}: unhandled peer failure ({})", ep, crate::core::log::status_str(status));
            return;
        }
        let cb: unsafe extern "C" fn(*mut c_void) -> c_uint =
            if status == UCS_ERR_ENDPOINT_TIMEOUT { ep_timeout_progress } else { ep_err_progress };
        // SAFETY: the queue belongs to a live worker; add_safe is
        // thread-safe; the callback is removed if the ep dies first.
        unsafe {
            ucs::callbackq::oneshot_add(self.progress_q(), ep as *mut c_void, Some(cb), ep as *mut c_void);
        }
    }

    /// Drop a pending [`schedule_ep_err`](Self::schedule_ep_err) for `ep`.
    pub fn cancel_ep_err(&self, ep: uct_ep_h) {
        // SAFETY: predicate-based removal on our worker's queue.
        unsafe { ucs::callbackq::oneshot_cancel(self.progress_q(), ep as *mut c_void, Some(is_ep_err_for), ep as *mut c_void) };
    }

    /// Add or remove this interface's progress callback on the worker.
    pub fn progress_enable(&self, flags: u32) {
        let thread_safe = flags & UCT_PROGRESS_THREAD_SAFE != 0;
        let flags = flags & !UCT_PROGRESS_THREAD_SAFE;
        if self.has_progress && self.progress_flags.get() == 0 && flags != 0 && self.prog_id.get() == UCS_CALLBACKQ_ID_NULL {
            let cb: ucs_callback_t = Some(unsafe {
                // SAFETY: a `uct_iface_progress_func_t` takes the iface and
                // returns unsigned, the exact shape of `ucs_callback_t` with
                // the iface as argument, which is what the C original relies
                // on too.
                std::mem::transmute::<unsafe extern "C" fn(uct_iface_h) -> c_uint,
                    unsafe extern "C" fn(*mut c_void) -> c_uint>(
                    self.base.ops.iface_progress.expect("progress slot is always set"))
            });
            let q = self.progress_q();
            let me = self as *const IfaceHeader as *mut c_void;
            // SAFETY: the queue belongs to a live worker; the iface removes
            // its callback before it is freed (see iface close).
            self.prog_id.set(unsafe {
                if thread_safe {
                    ucs::callbackq::add_safe(q, cb, me, UCS_CALLBACKQ_FLAG_FAST)
                } else {
                    ucs::callbackq::add(q, cb, me, UCS_CALLBACKQ_FLAG_FAST)
                }
            });
        }
        self.progress_flags.set(self.progress_flags.get() | flags);
    }

    pub fn progress_disable(&self, flags: u32) {
        let thread_safe = flags & UCT_PROGRESS_THREAD_SAFE != 0;
        let flags = flags & !UCT_PROGRESS_THREAD_SAFE;
        let enabled = self.progress_flags.get();
        if enabled != 0 && enabled & !flags == 0 && self.prog_id.get() != UCS_CALLBACKQ_ID_NULL {
            let q = self.progress_q();
            // SAFETY: prog_id was returned by the same queue.
            unsafe {
                if thread_safe {
                    ucs::callbackq::remove_safe(q, self.prog_id.get())
                } else {
                    ucs::callbackq::remove(q, self.prog_id.get())
                }
            }
            self.prog_id.set(UCS_CALLBACKQ_ID_NULL);
        }
        self.progress_flags.set(enabled & !flags);
    }

    /// The progress queue of the interface's worker.
    pub fn progress_q(&self) -> *mut ucs_callbackq_t {
        self.worker().progress_q()
    }

    /// The worker the interface was opened on.
    pub fn worker(&self) -> &WorkerObj {
        // SAFETY: the worker outlives its interfaces (uct_worker_destroy
        // after uct_iface_close is the documented order).
        unsafe { &*self.worker }
    }
}
