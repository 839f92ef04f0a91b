//! What a transport implements ([`Transport`]), the generic objects that hold
//! it ([`Iface`], [`Ep`]), and the capability rules: a flag is reported only
//! when the slot it needs is implemented.

use super::header::{AddrLens, IfaceHeader};
use super::trampolines::build_ops;
use crate::abi::*;
use crate::core::handles::*;
use crate::core::registry::{self, Kind};
use libc::{c_int, c_void};

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

/// The slots of `atomic_post` at operand width `bits` (32 or 64).
pub const fn atomic_post_ops(bits: u32) -> u64 {
    match bits {
        32 => op(slot::EP_ATOMIC32_POST),
        64 => op(slot::EP_ATOMIC64_POST),
        _ => panic!("atomic operand widths are 32 and 64"),
    }
}

/// The slots of `atomic_fetch` (cswap included) at operand width `bits`.
pub const fn atomic_fetch_ops(bits: u32) -> u64 {
    match bits {
        32 => op(slot::EP_ATOMIC_CSWAP32) | op(slot::EP_ATOMIC32_FETCH),
        64 => op(slot::EP_ATOMIC_CSWAP64) | op(slot::EP_ATOMIC64_FETCH),
        _ => panic!("atomic operand widths are 32 and 64"),
    }
}

/// The operations of a transport, declared once: written inside
/// `impl Transport for X`, it takes the transport's methods and yields
/// both them and [`Transport::OPS`], the set of vtable slots that dispatch
/// to them (and so the capability flags the interface may report). A
/// slot is in the set exactly when its method is written here, so the two
/// cannot disagree; methods that are not optional slots (flush, fence,
/// progress, ...) may be written here too and add nothing.
///
/// Optional clauses, in this order, before the methods:
/// - `atomics: [32, 64];` the operand widths `atomic_post` and
///   `atomic_fetch` serve (needed when either is written);
/// - `offered_if(COND): [method, ...];` methods whose slots are left out
///   (a stub answers) when `COND`, evaluated when an interface opens, is
///   false: the method exists for every release, the operation only for
///   some (`OPS` has them, [`Transport::ops`] only where `COND` holds).
#[macro_export]
macro_rules! transport_ops {
    (@go $ws:tt [$($cond:expr => [$($dn:ident),*])?]
     $( $(#[$m:meta])* fn $name:ident ($($args:tt)*) $(-> $ret:ty)? $body:block )*) => {
        const OPS: u64 = 0 $(| $crate::__transport_op_bits!($name, $ws))*;
        $(
            fn ops() -> u64 {
                Self::OPS & !(if $cond { 0 } else { 0 $(| $crate::__transport_op_bits!($dn, $ws))* })
            }
        )?
        $( $(#[$m])* fn $name ($($args)*) $(-> $ret)? $body )*
    };
    (atomics: [$($w:literal),*]; offered_if($c:expr): [$($dn:ident),* $(,)?]; $($rest:tt)*) => {
        $crate::transport_ops!(@go [$($w),*] [$c => [$($dn),*]] $($rest)*);
    };
    (atomics: [$($w:literal),*]; $($rest:tt)*) => {
        $crate::transport_ops!(@go [$($w),*] [] $($rest)*);
    };
    (offered_if($c:expr): [$($dn:ident),* $(,)?]; $($rest:tt)*) => {
        $crate::transport_ops!(@go [] [$c => [$($dn),*]] $($rest)*);
    };
    ($($rest:tt)*) => {
        $crate::transport_ops!(@go [] [] $($rest)*);
    };
}

/// The slots a method of [`transport_ops!`] fills (none for methods that
/// are not optional slots).
#[doc(hidden)]
#[macro_export]
macro_rules! __transport_op_bits {
    (put_short, $w:tt) => { $crate::__transport_op_bits!(@ EP_PUT_SHORT) };
    (put_bcopy, $w:tt) => { $crate::__transport_op_bits!(@ EP_PUT_BCOPY) };
    (put_zcopy, $w:tt) => { $crate::__transport_op_bits!(@ EP_PUT_ZCOPY) };
    (get_bcopy, $w:tt) => { $crate::__transport_op_bits!(@ EP_GET_BCOPY) };
    (get_zcopy, $w:tt) => { $crate::__transport_op_bits!(@ EP_GET_ZCOPY) };
    (am_short, $w:tt) => { $crate::__transport_op_bits!(@ EP_AM_SHORT) };
    (am_short_iov, $w:tt) => { $crate::__transport_op_bits!(@ EP_AM_SHORT_IOV) };
    (am_bcopy, $w:tt) => { $crate::__transport_op_bits!(@ EP_AM_BCOPY) };
    (am_zcopy, $w:tt) => { $crate::__transport_op_bits!(@ EP_AM_ZCOPY) };
    (pending_add, $w:tt) => { $crate::__transport_op_bits!(@ EP_PENDING_ADD) };
    (pending_purge, $w:tt) => { $crate::__transport_op_bits!(@ EP_PENDING_PURGE) };
    (ep_check, $w:tt) => { $crate::__transport_op_bits!(@ EP_CHECK) };
    (ep_connect, $w:tt) => { $crate::__transport_op_bits!(@ EP_CONNECT) };
    (ep_disconnect, $w:tt) => { $crate::__transport_op_bits!(@ EP_DISCONNECT) };
    (cm_ep_conn_notify, $w:tt) => { $crate::__transport_op_bits!(@ CM_EP_CONN_NOTIFY) };
    (ep_get_address, $w:tt) => { $crate::__transport_op_bits!(@ EP_GET_ADDRESS) };
    (ep_connect_to_ep, $w:tt) => { $crate::__transport_op_bits!(@ EP_CONNECT_TO_EP) };
    (event_fd_get, $w:tt) => { $crate::__transport_op_bits!(@ IFACE_EVENT_FD_GET) };
    (event_arm, $w:tt) => { $crate::__transport_op_bits!(@ IFACE_EVENT_ARM) };
    (atomic_post, []) => { compile_error!("atomic_post: say its operand widths (`atomics: [..];`)") };
    (atomic_post, [$($w:literal),*]) => { (0 $(| $crate::core::iface::atomic_post_ops($w))*) };
    (atomic_fetch, []) => { compile_error!("atomic_fetch: say its operand widths (`atomics: [..];`)") };
    (atomic_fetch, [$($w:literal),*]) => { (0 $(| $crate::core::iface::atomic_fetch_ops($w))*) };
    ($other:ident, $w:tt) => { 0 };
    (@ $slot:ident) => { $crate::core::iface::op($crate::core::iface::slot::$slot) };
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
        let iface = Box::new(Iface { hdr, tl });
        let attr = query_attr(&iface);
        iface.hdr.set_addr_lens(AddrLens { device: attr.device_addr_len, iface: attr.iface_addr_len,
                                           ep: attr.ep_addr_len });
        // An interface opened on a memory domain is the user's; one without
        // (a connection manager's endpoints' interface) is the CM's.
        let kind = if iface.hdr.md.is_null() { Kind::CmIface } else { Kind::Iface };
        let h = Box::into_raw(iface) as uct_iface_h;
        registry::register(h, kind);
        h
    }
    pub fn handle(&self) -> uct_iface_h {
        self as *const Self as uct_iface_h
    }

    /// The handle of the interface whose transport state is `tl`.
    ///
    /// # Safety
    /// `tl` is the `tl` field of a live `Iface<T>` (one made by
    /// [`Iface::into_handle`]), not a value of its own.
    pub unsafe fn handle_of_tl(tl: &T) -> uct_iface_h {
        let off = std::mem::offset_of!(Iface<T>, tl);
        // SAFETY: `tl` sits `off` bytes into its Iface (function contract).
        unsafe { (tl as *const T as *const u8).sub(off) as uct_iface_h }
    }
}

/// Free a connection manager's internal interface at the CM's close,
/// unless `user_eps` endpoints the user has not destroyed still point at
/// it: then it is kept (leaked, with a warning) so that their
/// `uct_ep_destroy` stays safe.
///
/// # Safety
/// `iface` was boxed by [`Iface::into_handle`] and is not used after this.
pub unsafe fn free_cm_iface<T: Transport>(iface: *mut Iface<T>, user_eps: usize, who: &str) {
    if user_eps > 0 {
        crate::warn!("{}: CM closed with {} endpoints not destroyed", who, user_eps);
        return;
    }
    // SAFETY: boxed by into_handle, freed once (function contract).
    unsafe { drop(Box::from_raw(iface)) };
}

impl<T: Transport> Ep<T> {
    /// A boxed endpoint on `iface` with state `tl`, as the handle C gets
    /// (freed by `uct_ep_destroy` through the vtable).
    pub fn boxed_handle(iface: uct_iface_h, tl: T::Ep) -> uct_ep_h {
        Box::into_raw(Box::new(Ep::<T> { base: uct_ep_t { iface }, tl })) as uct_ep_h
    }
}

/// However the interface is freed (`uct_iface_close`, or its CM closing
/// it), it leaves the registry before its memory does.
impl<T: Transport> Drop for Iface<T> {
    fn drop(&mut self) {
        registry::forget(self as *const Self);
    }
}

/// Connection parameters handed to [`Transport::ep_create`]: the peer's
/// addresses when the caller gave them (`UCT_EP_PARAM_FIELD_*_ADDR`).
pub struct EpParams<'a> {
    pub raw: &'a uct_ep_params_t,
    pub dev_addr: Option<PeerAddr<'a>>,
    pub iface_addr: Option<PeerAddr<'a>>,
}

/// What a transport implements. Every method has a default, so a transport
/// writes only what it supports, inside [`transport_ops!`], which derives
/// `OPS` from the methods written.
#[allow(unused_variables)]
pub trait Transport: Sized + 'static {
    type Ep: 'static;
    /// The transport's name in log lines.
    const NAME: &'static str;
    /// Bitmask of implemented slots (see [`op`]); written by
    /// [`transport_ops!`], never by hand.
    const OPS: u64;
    /// The slots the running release is offered: [`Transport::OPS`] less
    /// those of an `offered_if` clause whose condition is false (written
    /// by [`transport_ops!`] when it has such a clause).
    fn ops() -> u64 {
        Self::OPS
    }
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
    fn is_reachable(iface: &Iface<Self>, dev: Option<PeerAddr<'_>>, addr: Option<PeerAddr<'_>>) -> bool { false }
    /// [`is_reachable`](Self::is_reachable) with the reason when not (the
    /// text `uct_iface_is_reachable_v2` hands back as its info string).
    fn reachable(iface: &Iface<Self>, dev: Option<PeerAddr<'_>>, addr: Option<PeerAddr<'_>>) -> Result<(), String> {
        if Self::is_reachable(iface, dev, addr) { Ok(()) } else { Err(String::new()) }
    }
    /// Whether reachability is judged on the iface address too (false:
    /// the device address is enough).
    const REACH_NEEDS_IFACE_ADDR: bool = true;
    /// The longest device address a peer may have, for transports whose
    /// device addresses say their own length (0: as long as ours). The
    /// transport reads a peer's address as far as its format says, never
    /// beyond.
    const PEER_DEVICE_ADDR_MAX: usize = 0;
    fn progress(iface: &Iface<Self>) -> u32 { 0 }
    /// Called after `uct_iface_progress_enable`/`_disable` changed the
    /// header's progress flags (read them there), for transports whose
    /// background work follows them.
    fn progress_changed(iface: &Iface<Self>) {}
    fn iface_flush(iface: &Iface<Self>, flags: u32, comp: Completion) -> ucs_status_t { UCS_OK }
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
                 comp: Completion) -> ucs_status_t {
        UCS_ERR_UNSUPPORTED
    }
    fn get_zcopy(iface: &Iface<Self>, ep: &Ep<Self>, iov: &[uct_iov_t], remote: Remote,
                 comp: Completion) -> ucs_status_t {
        UCS_ERR_UNSUPPORTED
    }
    /// Zero-copy active message: `header` is copied before the call returns.
    #[allow(clippy::too_many_arguments)]
    fn am_zcopy(iface: &Iface<Self>, ep: &Ep<Self>, id: u8, header: &[u8], iov: &[uct_iov_t], flags: u32,
                comp: Completion) -> ucs_status_t {
        UCS_ERR_UNSUPPORTED
    }
    fn put_bcopy(iface: &Iface<Self>, ep: &Ep<Self>, pack: Pack, remote: Remote) -> isize {
        UCS_ERR_UNSUPPORTED as isize
    }
    fn get_bcopy(iface: &Iface<Self>, ep: &Ep<Self>, unpack: Unpack, length: usize, remote: Remote,
                 comp: Completion) -> ucs_status_t {
        UCS_ERR_UNSUPPORTED
    }
    fn atomic_post(iface: &Iface<Self>, ep: &Ep<Self>, op: AtomicOp, width: Width, value: u64,
                   remote: Remote) -> ucs_status_t {
        UCS_ERR_UNSUPPORTED
    }
    /// Fetching atomics, cswap included (`compare` is used by cswap only).
    #[allow(clippy::too_many_arguments)]
    fn atomic_fetch(iface: &Iface<Self>, ep: &Ep<Self>, op: AtomicOp, width: Width, value: u64, compare: u64,
                    remote: Remote, result: FetchResult, comp: Completion) -> ucs_status_t {
        UCS_ERR_UNSUPPORTED
    }
    fn pending_add(iface: &Iface<Self>, ep: &Ep<Self>, req: PendingReq, flags: u32) -> ucs_status_t {
        UCS_ERR_UNSUPPORTED
    }
    fn pending_purge(iface: &Iface<Self>, ep: &Ep<Self>, cb: PurgeCb) {}
    fn ep_flush(iface: &Iface<Self>, ep: &Ep<Self>, flags: u32, comp: Completion) -> ucs_status_t {
        UCS_OK
    }
    fn ep_fence(iface: &Iface<Self>, ep: &Ep<Self>, flags: u32) -> ucs_status_t {
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
        UCS_OK
    }
    fn ep_check(iface: &Iface<Self>, ep: &Ep<Self>, flags: u32, comp: Completion) -> ucs_status_t {
        UCS_ERR_UNSUPPORTED
    }
    fn ep_get_address(iface: &Iface<Self>, ep: &Ep<Self>, out: AddrOut) -> ucs_status_t {
        UCS_ERR_UNSUPPORTED
    }
    fn ep_connect_to_ep(iface: &Iface<Self>, ep: &Ep<Self>, dev: Option<PeerAddr<'_>>,
                        ep_addr: Option<PeerAddr<'_>>) -> ucs_status_t {
        UCS_ERR_UNSUPPORTED
    }
    /// Whether `ep` is connected to the peer at these addresses. By
    /// default: whether that peer is reachable at all (for transports whose
    /// endpoints are all alike towards one peer).
    fn ep_is_connected(iface: &Iface<Self>, ep: &Ep<Self>, dev: Option<PeerAddr<'_>>, addr: Option<PeerAddr<'_>>,
                       ep_addr: Option<PeerAddr<'_>>) -> bool {
        Self::reachable(iface, dev, addr).is_ok()
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
    // 1.22's control-path device (padding before): no particular one.
    a.ctl_device = UCS_SYS_DEVICE_ID_UNKNOWN;
    T::query(iface, &mut a);
    let ops = T::ops();
    a.cap.flags = honest_flags(a.cap.flags, ops);
    if ops & op(slot::EP_ATOMIC32_POST) == 0 {
        a.cap.atomic32.op_flags = 0;
    }
    if ops & op(slot::EP_ATOMIC64_POST) == 0 {
        a.cap.atomic64.op_flags = 0;
    }
    if ops & op(slot::EP_ATOMIC32_FETCH) == 0 {
        a.cap.atomic32.fop_flags = 0;
    }
    if ops & op(slot::EP_ATOMIC64_FETCH) == 0 {
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

#[cfg(test)]
mod tests {
    use super::*;

    struct Probe;

    impl Transport for Probe {
        type Ep = ();
        const NAME: &'static str = "probe";

        fn query(_iface: &Iface<Self>, _attr: &mut uct_iface_attr_t) {}

        fn ep_create(_iface: &Iface<Self>, _params: &EpParams<'_>) -> Result<(), ucs_status_t> {
            Ok(())
        }

        crate::transport_ops! {
            atomics: [64];
            offered_if(false): [am_bcopy];

            fn am_short(_iface: &Iface<Self>, _ep: &Ep<Self>, _id: u8, _header: u64, _payload: &[u8])
                        -> ucs_status_t {
                UCS_OK
            }

            fn am_bcopy(_iface: &Iface<Self>, _ep: &Ep<Self>, _id: u8, _pack: Pack, _flags: u32) -> isize {
                0
            }

            fn atomic_fetch(_iface: &Iface<Self>, _ep: &Ep<Self>, _op: AtomicOp, _width: Width, _value: u64,
                            _compare: u64, _remote: Remote, _result: FetchResult, _comp: Completion)
                            -> ucs_status_t {
                UCS_OK
            }

            fn ep_flush(_iface: &Iface<Self>, _ep: &Ep<Self>, _flags: u32, _comp: Completion) -> ucs_status_t {
                UCS_OK
            }
        }
    }

    #[test]
    fn ops_follow_the_methods_written() {
        let want = op(slot::EP_AM_SHORT) | op(slot::EP_ATOMIC_CSWAP64) | op(slot::EP_ATOMIC64_FETCH);
        assert_eq!(Probe::OPS, want | op(slot::EP_AM_BCOPY));
        assert_eq!(Probe::ops(), want);
        let flags = honest_flags(UCT_IFACE_FLAG_AM_SHORT | UCT_IFACE_FLAG_AM_BCOPY | UCT_IFACE_FLAG_ATOMIC_CPU,
                                 Probe::ops());
        assert_eq!(flags, UCT_IFACE_FLAG_AM_SHORT | UCT_IFACE_FLAG_ATOMIC_CPU);
    }
}
