//! The generic interface and endpoint objects.
//!
//! C callers dispatch the data path through inline helpers that read function
//! pointers straight out of our objects, so an interface is a `repr(C)` block
//! whose first 400 bytes are the `uct_iface_ops_t` vtable, and an endpoint
//! begins with a pointer to its interface. A transport is plain Rust behind
//! the [`Transport`] trait: [`Iface<T>`] puts the vtable, the state common to
//! every transport ([`IfaceHeader`]) and the transport's own state in one
//! block, and the vtable is built from generic trampolines, one per slot.
//! Slots a transport does not list in [`Transport::OPS`] get a stub that
//! returns `UCS_ERR_UNSUPPORTED`, and the capability flags reported by
//! `uct_iface_query` are masked by the same list, so a flag cannot claim an
//! operation that is not there.

use crate::abi::*;
use crate::core::md::MdObj;
use crate::core::ops::*;
use crate::core::config::BaseIfaceConfig;
use crate::core::stubs::unsupported_ops;
use crate::core::worker::WorkerObj;
use crate::ucs;
use libc::{c_int, c_uint, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Marks objects made by this library ("uct-rs" iface).
pub const IFACE_MAGIC: u64 = 0x7563_742d_7273_6966;

/// Slot numbers of `uct_iface_ops_t`, in header order.
pub mod slot {
    pub const EP_PUT_SHORT: u32 = 0;
    pub const EP_PUT_BCOPY: u32 = 1;
    pub const EP_PUT_ZCOPY: u32 = 2;
    pub const EP_GET_SHORT: u32 = 3;
    pub const EP_GET_BCOPY: u32 = 4;
    pub const EP_GET_ZCOPY: u32 = 5;
    pub const EP_AM_SHORT: u32 = 6;
    pub const EP_AM_SHORT_IOV: u32 = 7;
    pub const EP_AM_BCOPY: u32 = 8;
    pub const EP_AM_ZCOPY: u32 = 9;
    pub const EP_ATOMIC_CSWAP64: u32 = 10;
    pub const EP_ATOMIC_CSWAP32: u32 = 11;
    pub const EP_ATOMIC32_POST: u32 = 12;
    pub const EP_ATOMIC64_POST: u32 = 13;
    pub const EP_ATOMIC32_FETCH: u32 = 14;
    pub const EP_ATOMIC64_FETCH: u32 = 15;
    pub const EP_PENDING_ADD: u32 = 24;
    pub const EP_PENDING_PURGE: u32 = 25;
    pub const EP_CHECK: u32 = 28;
    pub const EP_CONNECT: u32 = 30;
    pub const EP_DISCONNECT: u32 = 31;
    pub const CM_EP_CONN_NOTIFY: u32 = 32;
    pub const EP_GET_ADDRESS: u32 = 34;
    pub const EP_CONNECT_TO_EP: u32 = 35;
    pub const IFACE_EVENT_FD_GET: u32 = 43;
    pub const IFACE_EVENT_ARM: u32 = 44;
}

/// Bit of a slot in [`Transport::OPS`].
pub const fn op(slot: u32) -> u64 {
    1u64 << slot
}

/// Interface capability flags and the slot each one needs.
const FLAG_NEEDS: &[(u64, u32)] = &[
    (UCT_IFACE_FLAG_AM_SHORT, slot::EP_AM_SHORT),
    (UCT_IFACE_FLAG_AM_BCOPY, slot::EP_AM_BCOPY),
    (UCT_IFACE_FLAG_AM_ZCOPY, slot::EP_AM_ZCOPY),
    (UCT_IFACE_FLAG_PENDING, slot::EP_PENDING_ADD),
    (UCT_IFACE_FLAG_PUT_SHORT, slot::EP_PUT_SHORT),
    (UCT_IFACE_FLAG_PUT_BCOPY, slot::EP_PUT_BCOPY),
    (UCT_IFACE_FLAG_PUT_ZCOPY, slot::EP_PUT_ZCOPY),
    (UCT_IFACE_FLAG_GET_SHORT, slot::EP_GET_SHORT),
    (UCT_IFACE_FLAG_GET_BCOPY, slot::EP_GET_BCOPY),
    (UCT_IFACE_FLAG_GET_ZCOPY, slot::EP_GET_ZCOPY),
    (UCT_IFACE_FLAG_EP_CHECK, slot::EP_CHECK),
    (UCT_IFACE_FLAG_CONNECT_TO_EP, slot::EP_CONNECT_TO_EP),
];

/// Capability flags allowed by the set of implemented slots.
pub fn honest_flags(flags: u64, ops: u64) -> u64 {
    let mut out = flags;
    for &(flag, needed) in FLAG_NEEDS {
        if ops & op(needed) == 0 {
            out &= !flag;
        }
    }
    if ops & (op(slot::EP_ATOMIC32_POST) | op(slot::EP_ATOMIC64_POST) | op(slot::EP_ATOMIC32_FETCH)
        | op(slot::EP_ATOMIC64_FETCH)) == 0
    {
        out &= !(UCT_IFACE_FLAG_ATOMIC_CPU | UCT_IFACE_FLAG_ATOMIC_DEVICE);
    }
    out
}

/// One active-message handler slot.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct AmHandler {
    pub cb: uct_am_callback_t,
    pub arg: *mut c_void,
    pub flags: u32,
}

/// Per-transport hooks that the exported functions reach through private
/// data rather than through the vtable (as the C original does).
pub struct InternalOps {
    pub estimate_perf: unsafe fn(uct_iface_h, *mut uct_perf_attr_t) -> ucs_status_t,
    pub ep_query: unsafe fn(uct_ep_h, *mut uct_ep_attr_t) -> ucs_status_t,
}

/// State every interface has, right after the vtable.
#[repr(C)]
pub struct IfaceHeader {
    pub base: uct_iface_t,
    pub magic: u64,
    pub md: *const MdObj,
    pub worker: *mut WorkerObj,
    pub internal: &'static InternalOps,
    pub am: [AmHandler; UCT_AM_ID_MAX],
    pub am_tracer: uct_am_tracer_t,
    pub am_tracer_arg: *mut c_void,
    pub err_handler: uct_error_handler_t,
    pub err_handler_arg: *mut c_void,
    pub err_handler_flags: u32,
    pub progress_flags: u32,
    pub prog_id: c_int,
    pub max_num_eps: usize,
    pub alloc_methods: Vec<uct_alloc_method_t>,
    pub rx_headroom: usize,
    /// False for transports with nothing to poll: enabling progress then
    /// adds no callback to the worker (as UCX does for self).
    pub has_progress: bool,
}

/// Call the error handler of `ep`'s interface.
///
/// # Safety
/// `ep` is a live endpoint of this library.
unsafe fn report_ep_err(ep: uct_ep_h, status: ucs_status_t) -> c_uint {
    if let Some(hdr) = IfaceHeader::from_handle((*ep).iface) {
        if let Some(h) = hdr.err_handler {
            h(hdr.err_handler_arg, ep, status);
        }
    }
    1
}

/// One-shot progress callbacks reporting a peer failure on an endpoint
/// (the endpoint is the argument; the callback is removed when the endpoint
/// is destroyed, so it is alive here).
unsafe extern "C" fn ep_err_progress(arg: *mut c_void) -> c_uint {
    report_ep_err(arg as uct_ep_h, UCS_ERR_CONNECTION_RESET)
}

unsafe extern "C" fn ep_timeout_progress(arg: *mut c_void) -> c_uint {
    report_ep_err(arg as uct_ep_h, UCS_ERR_ENDPOINT_TIMEOUT)
}

unsafe extern "C" fn is_ep_err_for(elem: *const ucs_callbackq_elem_t, arg: *mut c_void) -> c_int {
    let e = &*elem;
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
    pub fn new(md: &MdObj, worker: *mut WorkerObj, params: &IfaceParams, base_cfg: &BaseIfaceConfig,
               internal: &'static InternalOps) -> IfaceHeader {
        let mut am = [Self::stub_handler(0); UCT_AM_ID_MAX];
        for (id, h) in am.iter_mut().enumerate() {
            *h = Self::stub_handler(id as u8);
        }
        let mut alloc_methods = Vec::new();
        for m in base_cfg.alloc_methods() {
            if !alloc_methods.contains(&m) {
                alloc_methods.push(m);
            }
        }
        IfaceHeader {
            base: uct_iface_t { ops: unsupported_ops() },
            magic: IFACE_MAGIC,
            md,
            worker,
            internal,
            am,
            am_tracer: None,
            am_tracer_arg: std::ptr::null_mut(),
            err_handler: params.err_handler,
            err_handler_arg: params.err_handler_arg,
            err_handler_flags: params.err_handler_flags,
            progress_flags: 0,
            prog_id: UCS_CALLBACKQ_ID_NULL,
            max_num_eps: base_cfg.max_num_eps as usize,
            alloc_methods,
            rx_headroom: params.rx_headroom,
            has_progress: true,
        }
    }

    /// The handler installed for ids nobody registered: it logs and drops.
    pub fn stub_handler(id: u8) -> AmHandler {
        AmHandler { cb: Some(stub_am_handler), arg: id as usize as *mut c_void, flags: UCT_CB_FLAG_ASYNC }
    }

    /// The header of an interface handle, if this library made it.
    ///
    /// # Safety
    /// `iface` must be null or point to at least a readable `uct_iface_t`.
    pub unsafe fn from_handle<'a>(iface: uct_iface_h) -> Option<&'a mut IfaceHeader> {
        if iface.is_null() {
            return None;
        }
        // SAFETY: every iface this library creates starts with IfaceHeader;
        // a foreign object fails the magic test (objects smaller than the
        // header are never handed to the four functions that use this, see
        // the contract: libucp calls them on transport objects only).
        let hdr = &mut *(iface as *mut IfaceHeader);
        (hdr.magic == IFACE_MAGIC).then_some(hdr)
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
        let h = &self.am[(id as usize) & (UCT_AM_ID_MAX - 1)];
        match h.cb {
            // SAFETY: the handler was installed through uct_iface_set_am_handler
            // together with its argument; see the function contract for data.
            Some(cb) => cb(h.arg, data, length, flags),
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
            ucs::ucs_callbackq_add_safe(self.progress_q(), Some(cb), ep as *mut c_void, UCS_CALLBACKQ_FLAG_ONESHOT);
        }
    }

    /// Drop a pending [`schedule_ep_err`](Self::schedule_ep_err) for `ep`.
    pub fn cancel_ep_err(&self, ep: uct_ep_h) {
        // SAFETY: predicate-based removal on our worker's queue.
        unsafe { ucs::ucs_callbackq_remove_if(self.progress_q(), Some(is_ep_err_for), ep as *mut c_void) };
    }

    /// Add or remove this interface's progress callback on the worker.
    pub fn progress_enable(&mut self, flags: u32) {
        let thread_safe = flags & UCT_PROGRESS_THREAD_SAFE != 0;
        let flags = flags & !UCT_PROGRESS_THREAD_SAFE;
        if self.has_progress && self.progress_flags == 0 && flags != 0 && self.prog_id == UCS_CALLBACKQ_ID_NULL {
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
            let me = self as *mut IfaceHeader as *mut c_void;
            // SAFETY: the queue belongs to a live worker; the iface removes
            // its callback before it is freed (see iface close).
            self.prog_id = unsafe {
                if thread_safe {
                    ucs::ucs_callbackq_add_safe(q, cb, me, UCS_CALLBACKQ_FLAG_FAST)
                } else {
                    ucs::ucs_callbackq_add(q, cb, me, UCS_CALLBACKQ_FLAG_FAST)
                }
            };
        }
        self.progress_flags |= flags;
    }

    pub fn progress_disable(&mut self, flags: u32) {
        let thread_safe = flags & UCT_PROGRESS_THREAD_SAFE != 0;
        let flags = flags & !UCT_PROGRESS_THREAD_SAFE;
        if self.progress_flags != 0 && self.progress_flags & !flags == 0 && self.prog_id != UCS_CALLBACKQ_ID_NULL {
            let q = self.progress_q();
            // SAFETY: prog_id was returned by the same queue.
            unsafe {
                if thread_safe {
                    ucs::ucs_callbackq_remove_safe(q, self.prog_id)
                } else {
                    ucs::ucs_callbackq_remove(q, self.prog_id)
                }
            }
            self.prog_id = UCS_CALLBACKQ_ID_NULL;
        }
        self.progress_flags &= !flags;
    }

    fn progress_q(&self) -> *mut ucs_callbackq_t {
        // SAFETY: the worker outlives its interfaces.
        unsafe { std::ptr::addr_of_mut!((*self.worker).base.progress_q) }
    }
}

/// Interface parameters with the field mask applied (unset = default).
pub struct IfaceParams {
    pub open_mode: u64,
    pub tl_name: String,
    pub dev_name: String,
    pub rx_headroom: usize,
    pub err_handler: uct_error_handler_t,
    pub err_handler_arg: *mut c_void,
    pub err_handler_flags: u32,
    pub am_alignment: Option<usize>,
    pub am_align_offset: usize,
    pub features: u64,
    pub cpu_mask: Option<ucs_cpu_set_t>,
    pub keepalive_interval: u64,
    pub async_event_cb: uct_async_event_cb_t,
    pub async_event_arg: *mut c_void,
}

/// An endpoint: the interface pointer C reads, then the transport's state.
#[repr(C)]
pub struct Ep<T: Transport> {
    pub base: uct_ep_t,
    pub tl: T::Ep,
}

/// An interface: vtable and common header, then the transport's state.
#[repr(C)]
pub struct Iface<T: Transport> {
    pub hdr: IfaceHeader,
    pub tl: T,
}

impl<T: Transport> Iface<T> {
    /// Box the interface, install its vtable and hand C its handle.
    pub fn into_handle(mut hdr: IfaceHeader, tl: T) -> uct_iface_h {
        hdr.base.ops = build_ops::<T>();
        hdr.has_progress = T::HAS_PROGRESS;
        Box::into_raw(Box::new(Iface { hdr, tl })) as uct_iface_h
    }
    pub fn handle(&self) -> uct_iface_h {
        self as *const Self as uct_iface_h
    }
}

/// Connection parameters handed to [`Transport::ep_create`].
pub struct EpParams<'a> {
    pub raw: &'a uct_ep_params_t,
    pub dev_addr: *const uct_device_addr_t,
    pub iface_addr: *const uct_iface_addr_t,
}

/// What a transport implements. Every method has a default, so a transport
/// writes only what it supports and lists those slots in `OPS`.
#[allow(unused_variables)]
pub trait Transport: Sized + 'static {
    type Ep: 'static;
    /// Bitmask of implemented slots (see [`op`]).
    const OPS: u64;
    /// Whether [`Transport::progress`] has work to do.
    const HAS_PROGRESS: bool = true;

    fn query(iface: &Iface<Self>, attr: &mut uct_iface_attr_t);
    fn ep_create(iface: &Iface<Self>, params: &EpParams<'_>) -> Result<Self::Ep, ucs_status_t>;
    /// Called once the endpoint has its final address (after `ep_create`),
    /// for transports that need the `uct_ep_h` later (error reports).
    fn ep_init(iface: &Iface<Self>, ep: &Ep<Self>) {}
    fn ep_destroy(iface: &Iface<Self>, ep: &mut Ep<Self>) {}
    fn close(iface: &mut Iface<Self>) {}
    fn get_device_address(iface: &Iface<Self>, out: AddrOut) -> ucs_status_t { UCS_OK }
    fn get_address(iface: &Iface<Self>, out: AddrOut) -> ucs_status_t { UCS_OK }
    fn is_reachable(iface: &Iface<Self>, dev: *const uct_device_addr_t, addr: *const uct_iface_addr_t) -> bool { false }
    fn progress(iface: &Iface<Self>) -> u32 { 0 }
    fn iface_flush(iface: &Iface<Self>, flags: u32, comp: *mut uct_completion_t) -> ucs_status_t { UCS_OK }
    fn iface_fence(iface: &Iface<Self>, flags: u32) -> ucs_status_t {
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
        UCS_OK
    }
    fn event_fd_get(iface: &Iface<Self>) -> Result<c_int, ucs_status_t> { Err(UCS_ERR_UNSUPPORTED) }
    fn event_arm(iface: &Iface<Self>, events: u32) -> ucs_status_t { UCS_ERR_UNSUPPORTED }
    fn estimate_perf(iface: &Iface<Self>, attr: &mut uct_perf_attr_t) -> ucs_status_t {
        default_estimate_perf(iface, attr)
    }

    fn am_short(iface: &Iface<Self>, ep: &Ep<Self>, id: u8, header: u64, payload: &[u8]) -> ucs_status_t {
        UCS_ERR_UNSUPPORTED
    }
    fn am_short_iov(iface: &Iface<Self>, ep: &Ep<Self>, id: u8, iov: &[uct_iov_t]) -> ucs_status_t {
        UCS_ERR_UNSUPPORTED
    }
    fn am_bcopy(iface: &Iface<Self>, ep: &Ep<Self>, id: u8, pack: Pack, flags: u32) -> isize {
        UCS_ERR_UNSUPPORTED as isize
    }
    fn put_short(iface: &Iface<Self>, ep: &Ep<Self>, data: &[u8], remote: Remote) -> ucs_status_t {
        UCS_ERR_UNSUPPORTED
    }
    /// Zero-copy put: the iov may be reused once the operation completes
    /// (UCS_OK now, or `comp` later after UCS_INPROGRESS).
    fn put_zcopy(iface: &Iface<Self>, ep: &Ep<Self>, iov: &[uct_iov_t], remote: Remote,
                 comp: *mut uct_completion_t) -> ucs_status_t {
        UCS_ERR_UNSUPPORTED
    }
    fn get_zcopy(iface: &Iface<Self>, ep: &Ep<Self>, iov: &[uct_iov_t], remote: Remote,
                 comp: *mut uct_completion_t) -> ucs_status_t {
        UCS_ERR_UNSUPPORTED
    }
    /// Zero-copy active message: `header` is copied before the call returns.
    #[allow(clippy::too_many_arguments)]
    fn am_zcopy(iface: &Iface<Self>, ep: &Ep<Self>, id: u8, header: &[u8], iov: &[uct_iov_t], flags: u32,
                comp: *mut uct_completion_t) -> ucs_status_t {
        UCS_ERR_UNSUPPORTED
    }
    fn put_bcopy(iface: &Iface<Self>, ep: &Ep<Self>, pack: Pack, remote: Remote) -> isize {
        UCS_ERR_UNSUPPORTED as isize
    }
    fn get_bcopy(iface: &Iface<Self>, ep: &Ep<Self>, unpack: Unpack, length: usize, remote: Remote,
                 comp: *mut uct_completion_t) -> ucs_status_t {
        UCS_ERR_UNSUPPORTED
    }
    fn atomic_post(iface: &Iface<Self>, ep: &Ep<Self>, op: AtomicOp, width: Width, value: u64,
                   remote: Remote) -> ucs_status_t {
        UCS_ERR_UNSUPPORTED
    }
    /// Fetching atomics, cswap included (`compare` is used by cswap only).
    #[allow(clippy::too_many_arguments)]
    fn atomic_fetch(iface: &Iface<Self>, ep: &Ep<Self>, op: AtomicOp, width: Width, value: u64, compare: u64,
                    remote: Remote, result: FetchResult, comp: *mut uct_completion_t) -> ucs_status_t {
        UCS_ERR_UNSUPPORTED
    }
    fn pending_add(iface: &Iface<Self>, ep: &Ep<Self>, req: PendingReq, flags: u32) -> ucs_status_t {
        UCS_ERR_UNSUPPORTED
    }
    fn pending_purge(iface: &Iface<Self>, ep: &Ep<Self>, cb: PurgeCb) {}
    fn ep_flush(iface: &Iface<Self>, ep: &Ep<Self>, flags: u32, comp: *mut uct_completion_t) -> ucs_status_t {
        UCS_OK
    }
    fn ep_fence(iface: &Iface<Self>, ep: &Ep<Self>, flags: u32) -> ucs_status_t {
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
        UCS_OK
    }
    fn ep_check(iface: &Iface<Self>, ep: &Ep<Self>, flags: u32, comp: *mut uct_completion_t) -> ucs_status_t {
        UCS_ERR_UNSUPPORTED
    }
    fn ep_get_address(iface: &Iface<Self>, ep: &Ep<Self>, out: AddrOut) -> ucs_status_t {
        UCS_ERR_UNSUPPORTED
    }
    fn ep_connect_to_ep(iface: &Iface<Self>, ep: &Ep<Self>, dev: *const uct_device_addr_t,
                        ep_addr: *const uct_ep_addr_t) -> ucs_status_t {
        UCS_ERR_UNSUPPORTED
    }
    fn ep_query(iface: &Iface<Self>, ep: &Ep<Self>, attr: &mut uct_ep_attr_t) -> ucs_status_t {
        UCS_ERR_UNSUPPORTED
    }
    /// Connection-manager endpoints: send the private data (client).
    fn ep_connect(iface: &Iface<Self>, ep: &Ep<Self>, params: Option<&uct_ep_connect_params_t>) -> ucs_status_t {
        UCS_ERR_UNSUPPORTED
    }
    fn ep_disconnect(iface: &Iface<Self>, ep: &Ep<Self>, flags: u32) -> ucs_status_t {
        UCS_ERR_UNSUPPORTED
    }
    fn cm_ep_conn_notify(iface: &Iface<Self>, ep: &Ep<Self>) -> ucs_status_t {
        UCS_ERR_UNSUPPORTED
    }
}

/// The attributes of an interface: common defaults, then the transport's
/// answer, masked by the operations it really has.
pub fn query_attr<T: Transport>(iface: &Iface<T>) -> uct_iface_attr_t {
    // SAFETY: all-zero is a valid uct_iface_attr_t (numbers and nullable
    // pointers only).
    let mut a: uct_iface_attr_t = unsafe { std::mem::zeroed() };
    a.max_num_eps = iface.hdr.max_num_eps;
    a.dev_num_paths = 1;
    T::query(iface, &mut a);
    a.cap.flags = honest_flags(a.cap.flags, T::OPS);
    if T::OPS & op(slot::EP_ATOMIC32_POST) == 0 {
        a.cap.atomic32.op_flags = 0;
    }
    if T::OPS & op(slot::EP_ATOMIC64_POST) == 0 {
        a.cap.atomic64.op_flags = 0;
    }
    if T::OPS & op(slot::EP_ATOMIC32_FETCH) == 0 {
        a.cap.atomic32.fop_flags = 0;
    }
    if T::OPS & op(slot::EP_ATOMIC64_FETCH) == 0 {
        a.cap.atomic64.fop_flags = 0;
    }
    a
}

/// `uct_iface_estimate_perf` for transports whose costs do not depend on the
/// operation: everything comes from the interface attributes.
pub fn default_estimate_perf<T: Transport>(iface: &Iface<T>, perf: &mut uct_perf_attr_t) -> ucs_status_t {
    let attr = query_attr(iface);
    let m = perf.field_mask;
    if m & UCT_PERF_ATTR_FIELD_SEND_PRE_OVERHEAD != 0 {
        perf.send_pre_overhead = attr.overhead;
    }
    if m & UCT_PERF_ATTR_FIELD_SEND_POST_OVERHEAD != 0 {
        perf.send_post_overhead = 0.0;
    }
    if m & UCT_PERF_ATTR_FIELD_RECV_OVERHEAD != 0 {
        perf.recv_overhead = attr.overhead;
    }
    if m & UCT_PERF_ATTR_FIELD_BANDWIDTH != 0 {
        perf.bandwidth = attr.bandwidth;
    }
    if m & UCT_PERF_ATTR_FIELD_LATENCY != 0 {
        perf.latency = attr.latency;
    }
    if m & UCT_PERF_ATTR_FIELD_MAX_INFLIGHT_EPS != 0 {
        perf.max_inflight_eps = usize::MAX;
    }
    UCS_OK
}

// ---------------------------------------------------------------------------
// Trampolines: C calls these through the vtable.

macro_rules! guard {
    ($fail:expr, $body:expr) => {
        match catch_unwind(AssertUnwindSafe(|| $body)) {
            Ok(v) => v,
            Err(_) => {
                crate::error!("internal error in {}", std::any::type_name::<T>());
                $fail
            }
        }
    };
}

/// The data path runs without `catch_unwind`: a landing pad costs saved
/// registers (stores that a following locked instruction must drain) on
/// every call. A panic there is still never unwound into C: Rust aborts the
/// process when a panic reaches an `extern "C"` frame. The data path is
/// written not to panic (no indexing or arithmetic that can fail on caller
/// input).
macro_rules! hot {
    ($body:expr) => {
        $body
    };
}

/// # Safety
/// `ep` must be an endpoint created by `Iface<T>` (the vtable slot that
/// leads here is only ever installed in `Iface<T>`'s vtable).
#[inline(always)]
unsafe fn parts<'a, T: Transport>(ep: uct_ep_h) -> (&'a Iface<T>, &'a Ep<T>) {
    let ep = &*(ep as *const Ep<T>);
    (&*(ep.base.iface as *const Iface<T>), ep)
}

#[inline(always)]
unsafe fn iface_of<'a, T: Transport>(iface: uct_iface_h) -> &'a Iface<T> {
    &*(iface as *const Iface<T>)
}

unsafe extern "C" fn t_put_short<T: Transport>(ep: uct_ep_h, buffer: *const c_void, length: c_uint,
                                               remote_addr: u64, rkey: uct_rkey_t) -> ucs_status_t {
    hot!({
        let (i, e) = parts::<T>(ep);
        T::put_short(i, e, bytes(buffer, length as usize), Remote::new(remote_addr, rkey))
    })
}

unsafe extern "C" fn t_put_bcopy<T: Transport>(ep: uct_ep_h, pack_cb: uct_pack_callback_t, arg: *mut c_void,
                                               remote_addr: u64, rkey: uct_rkey_t) -> isize {
    hot!({
        let (i, e) = parts::<T>(ep);
        match Pack::new(pack_cb, arg) {
            Some(p) => T::put_bcopy(i, e, p, Remote::new(remote_addr, rkey)),
            None => UCS_ERR_INVALID_PARAM as isize,
        }
    })
}

unsafe extern "C" fn t_put_zcopy<T: Transport>(ep: uct_ep_h, iov: *const uct_iov_t, iovcnt: usize,
                                               remote_addr: u64, rkey: uct_rkey_t,
                                               comp: *mut uct_completion_t) -> ucs_status_t {
    hot!({
        if iov.is_null() && iovcnt != 0 {
            return null_iov();
        }
        let (i, e) = parts::<T>(ep);
        T::put_zcopy(i, e, iov_slice(iov, iovcnt), Remote::new(remote_addr, rkey), comp)
    })
}

unsafe extern "C" fn t_get_zcopy<T: Transport>(ep: uct_ep_h, iov: *const uct_iov_t, iovcnt: usize,
                                               remote_addr: u64, rkey: uct_rkey_t,
                                               comp: *mut uct_completion_t) -> ucs_status_t {
    hot!({
        if iov.is_null() && iovcnt != 0 {
            return null_iov();
        }
        let (i, e) = parts::<T>(ep);
        T::get_zcopy(i, e, iov_slice(iov, iovcnt), Remote::new(remote_addr, rkey), comp)
    })
}

unsafe extern "C" fn t_am_zcopy<T: Transport>(ep: uct_ep_h, id: u8, header: *const c_void, header_length: c_uint,
                                              iov: *const uct_iov_t, iovcnt: usize, flags: c_uint,
                                              comp: *mut uct_completion_t) -> ucs_status_t {
    hot!({
        if iov.is_null() && iovcnt != 0 {
            return null_iov();
        }
        let (i, e) = parts::<T>(ep);
        T::am_zcopy(i, e, id, bytes(header, header_length as usize), iov_slice(iov, iovcnt), flags, comp)
    })
}

unsafe extern "C" fn t_get_bcopy<T: Transport>(ep: uct_ep_h, unpack_cb: uct_unpack_callback_t, arg: *mut c_void,
                                               length: usize, remote_addr: u64, rkey: uct_rkey_t,
                                               comp: *mut uct_completion_t) -> ucs_status_t {
    hot!({
        let (i, e) = parts::<T>(ep);
        match Unpack::new(unpack_cb, arg) {
            Some(u) => T::get_bcopy(i, e, u, length, Remote::new(remote_addr, rkey), comp),
            None => UCS_ERR_INVALID_PARAM,
        }
    })
}

unsafe extern "C" fn t_am_short<T: Transport>(ep: uct_ep_h, id: u8, header: u64, payload: *const c_void,
                                              length: c_uint) -> ucs_status_t {
    hot!({
        let (i, e) = parts::<T>(ep);
        T::am_short(i, e, id, header, bytes(payload, length as usize))
    })
}

unsafe extern "C" fn t_am_short_iov<T: Transport>(ep: uct_ep_h, id: u8, iov: *const uct_iov_t,
                                                  iovcnt: usize) -> ucs_status_t {
    hot!({
        if iov.is_null() && iovcnt != 0 {
            return null_iov();
        }
        let (i, e) = parts::<T>(ep);
        T::am_short_iov(i, e, id, iov_slice(iov, iovcnt))
    })
}

unsafe extern "C" fn t_am_bcopy<T: Transport>(ep: uct_ep_h, id: u8, pack_cb: uct_pack_callback_t, arg: *mut c_void,
                                              flags: c_uint) -> isize {
    hot!({
        let (i, e) = parts::<T>(ep);
        match Pack::new(pack_cb, arg) {
            Some(p) => T::am_bcopy(i, e, id, p, flags),
            None => UCS_ERR_INVALID_PARAM as isize,
        }
    })
}

unsafe extern "C" fn t_cswap64<T: Transport>(ep: uct_ep_h, compare: u64, swap: u64, remote_addr: u64,
                                             rkey: uct_rkey_t, result: *mut u64,
                                             comp: *mut uct_completion_t) -> ucs_status_t {
    hot!({
        let (i, e) = parts::<T>(ep);
        T::atomic_fetch(i, e, AtomicOp::Cswap, Width::W64, swap, compare, Remote::new(remote_addr, rkey),
                        FetchResult::U64(result), comp)
    })
}

unsafe extern "C" fn t_cswap32<T: Transport>(ep: uct_ep_h, compare: u32, swap: u32, remote_addr: u64,
                                             rkey: uct_rkey_t, result: *mut u32,
                                             comp: *mut uct_completion_t) -> ucs_status_t {
    hot!({
        let (i, e) = parts::<T>(ep);
        T::atomic_fetch(i, e, AtomicOp::Cswap, Width::W32, swap as u64, compare as u64,
                        Remote::new(remote_addr, rkey), FetchResult::U32(result), comp)
    })
}

unsafe extern "C" fn t_atomic32_post<T: Transport>(ep: uct_ep_h, opcode: c_uint, value: u32, remote_addr: u64,
                                                   rkey: uct_rkey_t) -> ucs_status_t {
    hot!({
        let (i, e) = parts::<T>(ep);
        match AtomicOp::post(opcode) {
            Some(o) => T::atomic_post(i, e, o, Width::W32, value as u64, Remote::new(remote_addr, rkey)),
            None => bad_opcode(opcode),
        }
    })
}

unsafe extern "C" fn t_atomic64_post<T: Transport>(ep: uct_ep_h, opcode: c_uint, value: u64, remote_addr: u64,
                                                   rkey: uct_rkey_t) -> ucs_status_t {
    hot!({
        let (i, e) = parts::<T>(ep);
        match AtomicOp::post(opcode) {
            Some(o) => T::atomic_post(i, e, o, Width::W64, value, Remote::new(remote_addr, rkey)),
            None => bad_opcode(opcode),
        }
    })
}

unsafe extern "C" fn t_atomic32_fetch<T: Transport>(ep: uct_ep_h, opcode: c_uint, value: u32, result: *mut u32,
                                                    remote_addr: u64, rkey: uct_rkey_t,
                                                    comp: *mut uct_completion_t) -> ucs_status_t {
    hot!({
        let (i, e) = parts::<T>(ep);
        match AtomicOp::fetch(opcode) {
            Some(o) => T::atomic_fetch(i, e, o, Width::W32, value as u64, 0, Remote::new(remote_addr, rkey),
                                       FetchResult::U32(result), comp),
            None => bad_opcode(opcode),
        }
    })
}

unsafe extern "C" fn t_atomic64_fetch<T: Transport>(ep: uct_ep_h, opcode: c_uint, value: u64, result: *mut u64,
                                                    remote_addr: u64, rkey: uct_rkey_t,
                                                    comp: *mut uct_completion_t) -> ucs_status_t {
    hot!({
        let (i, e) = parts::<T>(ep);
        match AtomicOp::fetch(opcode) {
            Some(o) => T::atomic_fetch(i, e, o, Width::W64, value, 0, Remote::new(remote_addr, rkey),
                                       FetchResult::U64(result), comp),
            None => bad_opcode(opcode),
        }
    })
}

// Cold paths are `extern "C"` (they cannot unwind), so the trampolines need
// no landing pad and tail-call them.
#[cold]
#[inline(never)]
extern "C" fn null_iov() -> ucs_status_t {
    crate::error!("iov is NULL but iovcnt is not zero");
    std::hint::black_box(UCS_ERR_INVALID_PARAM)
}

#[cold]
#[inline(never)]
extern "C" fn bad_opcode(opcode: u32) -> ucs_status_t {
    crate::error!("unsupported atomic opcode {}", opcode);
    // Opaque to the optimiser, so callers can tail-call this cold path
    // instead of keeping a stack frame on the hot one.
    std::hint::black_box(UCS_ERR_UNSUPPORTED)
}

unsafe extern "C" fn t_pending_add<T: Transport>(ep: uct_ep_h, req: *mut uct_pending_req_t,
                                                 flags: c_uint) -> ucs_status_t {
    hot!({
        let (i, e) = parts::<T>(ep);
        if req.is_null() {
            return UCS_ERR_INVALID_PARAM;
        }
        T::pending_add(i, e, PendingReq(req), flags)
    })
}

unsafe extern "C" fn t_pending_purge<T: Transport>(ep: uct_ep_h, cb: uct_pending_purge_callback_t,
                                                   arg: *mut c_void) {
    guard!((), {
        let (i, e) = parts::<T>(ep);
        T::pending_purge(i, e, PurgeCb::new(cb, arg))
    })
}

unsafe extern "C" fn t_ep_flush<T: Transport>(ep: uct_ep_h, flags: c_uint, comp: *mut uct_completion_t) -> ucs_status_t {
    hot!({
        let (i, e) = parts::<T>(ep);
        T::ep_flush(i, e, flags, comp)
    })
}

unsafe extern "C" fn t_ep_fence<T: Transport>(ep: uct_ep_h, flags: c_uint) -> ucs_status_t {
    hot!({
        let (i, e) = parts::<T>(ep);
        T::ep_fence(i, e, flags)
    })
}

unsafe extern "C" fn t_ep_check<T: Transport>(ep: uct_ep_h, flags: c_uint, comp: *mut uct_completion_t) -> ucs_status_t {
    guard!(UCS_ERR_IO_ERROR, {
        let (i, e) = parts::<T>(ep);
        T::ep_check(i, e, flags, comp)
    })
}

unsafe extern "C" fn t_ep_create<T: Transport>(params: *const uct_ep_params_t, ep_p: *mut uct_ep_h) -> ucs_status_t {
    guard!(UCS_ERR_IO_ERROR, {
        if params.is_null() || ep_p.is_null() {
            return UCS_ERR_INVALID_PARAM;
        }
        let p = &*params;
        let iface = iface_of::<T>(p.iface);
        let m = p.field_mask;
        let ep_params = EpParams {
            raw: p,
            dev_addr: if m & UCT_EP_PARAM_FIELD_DEV_ADDR != 0 { p.dev_addr } else { std::ptr::null() },
            iface_addr: if m & UCT_EP_PARAM_FIELD_IFACE_ADDR != 0 { p.iface_addr } else { std::ptr::null() },
        };
        match T::ep_create(iface, &ep_params) {
            Ok(tl) => {
                let ep = Box::into_raw(Box::new(Ep::<T> { base: uct_ep_t { iface: p.iface }, tl }));
                T::ep_init(iface, &*ep);
                *ep_p = ep as uct_ep_h;
                UCS_OK
            }
            Err(s) => s,
        }
    })
}

unsafe extern "C" fn t_ep_destroy<T: Transport>(ep: uct_ep_h) {
    guard!((), {
        let iface = iface_of::<T>((*ep).iface);
        // A peer-failure report still queued for this endpoint must not
        // run after it is gone.
        iface.hdr.cancel_ep_err(ep);
        // SAFETY: the ep was boxed by t_ep_create and is destroyed once.
        let mut ep = Box::from_raw(ep as *mut Ep<T>);
        T::ep_destroy(iface, &mut ep);
    })
}

unsafe extern "C" fn t_ep_connect<T: Transport>(ep: uct_ep_h, params: *const uct_ep_connect_params_t) -> ucs_status_t {
    guard!(UCS_ERR_IO_ERROR, {
        let (i, e) = parts::<T>(ep);
        T::ep_connect(i, e, params.as_ref())
    })
}

unsafe extern "C" fn t_ep_disconnect<T: Transport>(ep: uct_ep_h, flags: c_uint) -> ucs_status_t {
    guard!(UCS_ERR_IO_ERROR, {
        let (i, e) = parts::<T>(ep);
        T::ep_disconnect(i, e, flags)
    })
}

unsafe extern "C" fn t_cm_ep_conn_notify<T: Transport>(ep: uct_ep_h) -> ucs_status_t {
    guard!(UCS_ERR_IO_ERROR, {
        let (i, e) = parts::<T>(ep);
        T::cm_ep_conn_notify(i, e)
    })
}

unsafe extern "C" fn t_ep_get_address<T: Transport>(ep: uct_ep_h, addr: *mut uct_ep_addr_t) -> ucs_status_t {
    guard!(UCS_ERR_IO_ERROR, {
        let (i, e) = parts::<T>(ep);
        match AddrOut::new(addr as *mut u8) {
            Some(out) => T::ep_get_address(i, e, out),
            None => UCS_ERR_INVALID_PARAM,
        }
    })
}

unsafe extern "C" fn t_ep_connect_to_ep<T: Transport>(ep: uct_ep_h, dev: *const uct_device_addr_t,
                                                      ep_addr: *const uct_ep_addr_t) -> ucs_status_t {
    guard!(UCS_ERR_IO_ERROR, {
        let (i, e) = parts::<T>(ep);
        T::ep_connect_to_ep(i, e, dev, ep_addr)
    })
}

unsafe extern "C" fn t_iface_flush<T: Transport>(iface: uct_iface_h, flags: c_uint,
                                                 comp: *mut uct_completion_t) -> ucs_status_t {
    hot!(T::iface_flush(iface_of::<T>(iface), flags, comp))
}

unsafe extern "C" fn t_iface_fence<T: Transport>(iface: uct_iface_h, flags: c_uint) -> ucs_status_t {
    hot!(T::iface_fence(iface_of::<T>(iface), flags))
}

unsafe extern "C" fn t_progress_enable<T: Transport>(iface: uct_iface_h, flags: c_uint) {
    guard!((), (*(iface as *mut Iface<T>)).hdr.progress_enable(flags))
}

unsafe extern "C" fn t_progress_disable<T: Transport>(iface: uct_iface_h, flags: c_uint) {
    guard!((), (*(iface as *mut Iface<T>)).hdr.progress_disable(flags))
}

unsafe extern "C" fn t_progress<T: Transport>(iface: uct_iface_h) -> c_uint {
    hot!(T::progress(iface_of::<T>(iface)))
}

unsafe extern "C" fn t_event_fd_get<T: Transport>(iface: uct_iface_h, fd_p: *mut c_int) -> ucs_status_t {
    guard!(UCS_ERR_IO_ERROR, {
        if fd_p.is_null() {
            return UCS_ERR_INVALID_PARAM;
        }
        match T::event_fd_get(iface_of::<T>(iface)) {
            Ok(fd) => {
                *fd_p = fd;
                UCS_OK
            }
            Err(s) => s,
        }
    })
}

unsafe extern "C" fn t_event_arm<T: Transport>(iface: uct_iface_h, events: c_uint) -> ucs_status_t {
    guard!(UCS_ERR_IO_ERROR, T::event_arm(iface_of::<T>(iface), events))
}

unsafe extern "C" fn t_iface_close<T: Transport>(iface: uct_iface_h) {
    guard!((), {
        // SAFETY: boxed by Iface::into_handle, closed once.
        let mut b = Box::from_raw(iface as *mut Iface<T>);
        // Remove the progress callback at once (not deferred): the next
        // worker progress must not call into the freed interface.
        let flags = b.hdr.progress_flags;
        b.hdr.progress_disable(flags);
        T::close(&mut b);
        b.hdr.magic = 0;
    })
}

unsafe extern "C" fn t_iface_query<T: Transport>(iface: uct_iface_h, attr: *mut uct_iface_attr_t) -> ucs_status_t {
    guard!(UCS_ERR_IO_ERROR, {
        if attr.is_null() {
            return UCS_ERR_INVALID_PARAM;
        }
        *attr = query_attr(iface_of::<T>(iface));
        UCS_OK
    })
}

unsafe extern "C" fn t_get_device_address<T: Transport>(iface: uct_iface_h, addr: *mut uct_device_addr_t) -> ucs_status_t {
    guard!(UCS_ERR_IO_ERROR, match AddrOut::new(addr as *mut u8) {
        Some(out) => T::get_device_address(iface_of::<T>(iface), out),
        None => UCS_OK, // a zero-length address may be requested with NULL
    })
}

unsafe extern "C" fn t_get_address<T: Transport>(iface: uct_iface_h, addr: *mut uct_iface_addr_t) -> ucs_status_t {
    guard!(UCS_ERR_IO_ERROR, match AddrOut::new(addr as *mut u8) {
        Some(out) => T::get_address(iface_of::<T>(iface), out),
        None => UCS_ERR_INVALID_PARAM,
    })
}

unsafe extern "C" fn t_is_reachable<T: Transport>(iface: uct_iface_h, dev: *const uct_device_addr_t,
                                                  addr: *const uct_iface_addr_t) -> c_int {
    guard!(0, T::is_reachable(iface_of::<T>(iface), dev, addr) as c_int)
}

unsafe fn internal_estimate_perf<T: Transport>(iface: uct_iface_h, attr: *mut uct_perf_attr_t) -> ucs_status_t {
    guard!(UCS_ERR_IO_ERROR, T::estimate_perf(iface_of::<T>(iface), &mut *attr))
}

unsafe fn internal_ep_query<T: Transport>(ep: uct_ep_h, attr: *mut uct_ep_attr_t) -> ucs_status_t {
    guard!(UCS_ERR_IO_ERROR, {
        let (i, e) = parts::<T>(ep);
        T::ep_query(i, e, &mut *attr)
    })
}

/// The internal hooks of transport `T`.
pub struct Internal<T>(std::marker::PhantomData<T>);
impl<T: Transport> Internal<T> {
    pub const OPS: InternalOps = InternalOps {
        estimate_perf: internal_estimate_perf::<T>,
        ep_query: internal_ep_query::<T>,
    };
}

/// The vtable of transport `T`.
pub fn build_ops<T: Transport>() -> uct_iface_ops_t {
    let mut o = unsupported_ops();
    let has = |s: u32| T::OPS & op(s) != 0;
    if has(slot::EP_PUT_SHORT) { o.ep_put_short = Some(t_put_short::<T>); }
    if has(slot::EP_PUT_BCOPY) { o.ep_put_bcopy = Some(t_put_bcopy::<T>); }
    if has(slot::EP_GET_BCOPY) { o.ep_get_bcopy = Some(t_get_bcopy::<T>); }
    if has(slot::EP_PUT_ZCOPY) { o.ep_put_zcopy = Some(t_put_zcopy::<T>); }
    if has(slot::EP_GET_ZCOPY) { o.ep_get_zcopy = Some(t_get_zcopy::<T>); }
    if has(slot::EP_AM_ZCOPY) { o.ep_am_zcopy = Some(t_am_zcopy::<T>); }
    if has(slot::EP_AM_SHORT) { o.ep_am_short = Some(t_am_short::<T>); }
    if has(slot::EP_AM_SHORT_IOV) { o.ep_am_short_iov = Some(t_am_short_iov::<T>); }
    if has(slot::EP_AM_BCOPY) { o.ep_am_bcopy = Some(t_am_bcopy::<T>); }
    if has(slot::EP_ATOMIC_CSWAP64) { o.ep_atomic_cswap64 = Some(t_cswap64::<T>); }
    if has(slot::EP_ATOMIC_CSWAP32) { o.ep_atomic_cswap32 = Some(t_cswap32::<T>); }
    if has(slot::EP_ATOMIC32_POST) { o.ep_atomic32_post = Some(t_atomic32_post::<T>); }
    if has(slot::EP_ATOMIC64_POST) { o.ep_atomic64_post = Some(t_atomic64_post::<T>); }
    if has(slot::EP_ATOMIC32_FETCH) { o.ep_atomic32_fetch = Some(t_atomic32_fetch::<T>); }
    if has(slot::EP_ATOMIC64_FETCH) { o.ep_atomic64_fetch = Some(t_atomic64_fetch::<T>); }
    if has(slot::EP_PENDING_ADD) { o.ep_pending_add = Some(t_pending_add::<T>); }
    if has(slot::EP_PENDING_PURGE) { o.ep_pending_purge = Some(t_pending_purge::<T>); }
    if has(slot::EP_CHECK) { o.ep_check = Some(t_ep_check::<T>); }
    if has(slot::EP_GET_ADDRESS) { o.ep_get_address = Some(t_ep_get_address::<T>); }
    if has(slot::EP_CONNECT_TO_EP) { o.ep_connect_to_ep = Some(t_ep_connect_to_ep::<T>); }
    if has(slot::EP_CONNECT) { o.ep_connect = Some(t_ep_connect::<T>); }
    if has(slot::EP_DISCONNECT) { o.ep_disconnect = Some(t_ep_disconnect::<T>); }
    if has(slot::CM_EP_CONN_NOTIFY) { o.cm_ep_conn_notify = Some(t_cm_ep_conn_notify::<T>); }
    if has(slot::IFACE_EVENT_FD_GET) { o.iface_event_fd_get = Some(t_event_fd_get::<T>); }
    if has(slot::IFACE_EVENT_ARM) { o.iface_event_arm = Some(t_event_arm::<T>); }
    // Slots every transport has.
    o.ep_flush = Some(t_ep_flush::<T>);
    o.ep_fence = Some(t_ep_fence::<T>);
    o.ep_create = Some(t_ep_create::<T>);
    o.ep_destroy = Some(t_ep_destroy::<T>);
    o.iface_flush = Some(t_iface_flush::<T>);
    o.iface_fence = Some(t_iface_fence::<T>);
    o.iface_progress_enable = Some(t_progress_enable::<T>);
    o.iface_progress_disable = Some(t_progress_disable::<T>);
    o.iface_progress = Some(t_progress::<T>);
    o.iface_close = Some(t_iface_close::<T>);
    o.iface_query = Some(t_iface_query::<T>);
    o.iface_get_device_address = Some(t_get_device_address::<T>);
    o.iface_get_address = Some(t_get_address::<T>);
    o.iface_is_reachable = Some(t_is_reachable::<T>);
    o
}
