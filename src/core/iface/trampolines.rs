//! The `extern "C"` functions C reaches through the vtable, one per slot,
//! generic over the transport: each turns raw arguments into the safe
//! handles of `core::handles` and calls the [`Transport`] method.

use super::header::{AddrLens, InternalOps};
use super::stubs::unsupported_ops;
use super::transport::*;
use crate::abi::layout_sizes::ReleaseSized;
use crate::abi::*;
use crate::core::handles::*;
use libc::{c_int, c_uint, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};

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
    // SAFETY: see the function contract: `ep` is an `Ep<T>`, whose base
    // names its (live) `Iface<T>`.
    unsafe {
        let ep = &*(ep as *const Ep<T>);
        (&*(ep.base.iface as *const Iface<T>), ep)
    }
}

/// # Safety
/// `iface` must be an interface created as `Iface<T>`.
#[inline(always)]
unsafe fn iface_of<'a, T: Transport>(iface: uct_iface_h) -> &'a Iface<T> {
    // SAFETY: see the function contract.
    unsafe { &*(iface as *const Iface<T>) }
}

// The unsafe steps every trampoline takes, each argued once. A trampoline
// of `T` is installed only in the vtable of `Iface<T>` (see `build_ops`),
// so C reaches it only with that interface or one of its endpoints, and
// with the other arguments as UCT's API documents them.

/// The interface and endpoint behind an endpoint handle.
macro_rules! parts {
    ($ep:expr) => {{
        // SAFETY: an endpoint of `Iface<T>` (see above).
        unsafe { parts::<T>($ep) }
    }};
}

/// The interface behind an interface handle.
macro_rules! iface {
    ($iface:expr) => {{
        // SAFETY: an `Iface<T>` (see above).
        unsafe { iface_of::<T>($iface) }
    }};
}

/// The worker's ordering rule (see `WorkerObj::order_before`): messages
/// another endpoint holds back go out before this endpoint's operation.
macro_rules! ordered {
    ($i:expr, $ep:expr) => {
        $i.hdr.worker().order_before($ep as *const c_void)
    };
    ($i:expr) => {
        $i.hdr.worker().order_all()
    };
}

/// A data-path trampoline under the ordering rule, as two functions of the
/// same signature: the trampoline checks whether any worker holds messages
/// (one load) and runs the body; when one does, it tail-calls the cold twin,
/// which first sends what this worker holds (for an endpoint operation: what
/// another endpoint holds), then runs the same body. Neither needs a stack
/// frame for the check.
macro_rules! ordered_op {
    (ep fn $name:ident / $cold:ident ($ep:ident : uct_ep_h $(, $a:ident : $t:ty)* $(,)?) -> $ret:ty $body:block) => {
        unsafe extern "C" fn $name<T: Transport>($ep: uct_ep_h $(, $a: $t)*) -> $ret {
            if crate::core::worker::any_holding() {
                // SAFETY: the same function contract, the same arguments.
                return unsafe { $cold::<T>($ep $(, $a)*) };
            }
            $body
        }

        #[cold]
        #[inline(never)]
        unsafe extern "C" fn $cold<T: Transport>($ep: uct_ep_h $(, $a: $t)*) -> $ret {
            {
                let (i, _) = parts!($ep);
                ordered!(i, $ep);
            }
            $body
        }
    };
    (iface fn $name:ident / $cold:ident ($if_:ident : uct_iface_h $(, $a:ident : $t:ty)* $(,)?) -> $ret:ty $body:block) => {
        unsafe extern "C" fn $name<T: Transport>($if_: uct_iface_h $(, $a: $t)*) -> $ret {
            if crate::core::worker::any_holding() {
                // SAFETY: the same function contract, the same arguments.
                return unsafe { $cold::<T>($if_ $(, $a)*) };
            }
            $body
        }

        #[cold]
        #[inline(never)]
        unsafe extern "C" fn $cold<T: Transport>($if_: uct_iface_h $(, $a: $t)*) -> $ret {
            ordered!(iface!($if_));
            $body
        }
    };
}

/// The caller's buffer of `len` bytes, for the call.
macro_rules! bytes {
    ($p:expr, $len:expr) => {{
        // SAFETY: UCT's contract: the buffer holds `len` readable bytes
        // for the call (NULL only with a zero length).
        unsafe { bytes($p, $len) }
    }};
}

/// The caller's iov list (checked non-NULL when the count is not zero).
macro_rules! iovs {
    ($p:expr, $n:expr) => {{
        // SAFETY: UCT's contract: `n` readable entries, for the call.
        unsafe { iov_slice($p, $n) }
    }};
}

/// The caller's completion (NULL: none).
macro_rules! comp {
    ($c:expr) => {{
        // SAFETY: UCT's contract: the caller keeps it alive until the
        // operation completes.
        unsafe { Completion::from_raw($c) }
    }};
}

ordered_op! { ep
    fn t_put_short / cold_put_short(ep: uct_ep_h, buffer: *const c_void, length: c_uint,
                                    remote_addr: u64, rkey: uct_rkey_t) -> ucs_status_t {
        hot!({
            let (i, e) = parts!(ep);
            T::put_short(i, e, bytes!(buffer, length as usize), Remote::new(remote_addr, rkey))
        })
    }
}

ordered_op! { ep
    fn t_put_bcopy / cold_put_bcopy(ep: uct_ep_h, pack_cb: uct_pack_callback_t, arg: *mut c_void,
                                    remote_addr: u64, rkey: uct_rkey_t) -> isize {
        hot!({
            let (i, e) = parts!(ep);
            match Pack::new(pack_cb, arg) {
                Some(p) => T::put_bcopy(i, e, p, Remote::new(remote_addr, rkey)),
                None => UCS_ERR_INVALID_PARAM as isize,
            }
        })
    }
}

ordered_op! { ep
    fn t_put_zcopy / cold_put_zcopy(ep: uct_ep_h, iov: *const uct_iov_t, iovcnt: usize,
                                    remote_addr: u64, rkey: uct_rkey_t,
                                    comp: *mut uct_completion_t) -> ucs_status_t {
        hot!({
            if iov.is_null() && iovcnt != 0 {
                return null_iov();
            }
            let (i, e) = parts!(ep);
            T::put_zcopy(i, e, iovs!(iov, iovcnt), Remote::new(remote_addr, rkey), comp!(comp))
        })
    }
}

ordered_op! { ep
    fn t_get_zcopy / cold_get_zcopy(ep: uct_ep_h, iov: *const uct_iov_t, iovcnt: usize,
                                    remote_addr: u64, rkey: uct_rkey_t,
                                    comp: *mut uct_completion_t) -> ucs_status_t {
        hot!({
            if iov.is_null() && iovcnt != 0 {
                return null_iov();
            }
            let (i, e) = parts!(ep);
            T::get_zcopy(i, e, iovs!(iov, iovcnt), Remote::new(remote_addr, rkey), comp!(comp))
        })
    }
}

ordered_op! { ep
    fn t_am_zcopy / cold_am_zcopy(ep: uct_ep_h, id: u8, header: *const c_void, header_length: c_uint,
                                  iov: *const uct_iov_t, iovcnt: usize, flags: c_uint,
                                  comp: *mut uct_completion_t) -> ucs_status_t {
        hot!({
            if iov.is_null() && iovcnt != 0 {
                return null_iov();
            }
            let (i, e) = parts!(ep);
            T::am_zcopy(i, e, id, bytes!(header, header_length as usize), iovs!(iov, iovcnt), flags, comp!(comp))
        })
    }
}

ordered_op! { ep
    fn t_get_bcopy / cold_get_bcopy(ep: uct_ep_h, unpack_cb: uct_unpack_callback_t, arg: *mut c_void,
                                    length: usize, remote_addr: u64, rkey: uct_rkey_t,
                                    comp: *mut uct_completion_t) -> ucs_status_t {
        hot!({
            let (i, e) = parts!(ep);
            match Unpack::new(unpack_cb, arg) {
                Some(u) => T::get_bcopy(i, e, u, length, Remote::new(remote_addr, rkey), comp!(comp)),
                None => UCS_ERR_INVALID_PARAM,
            }
        })
    }
}

ordered_op! { ep
    fn t_am_short / cold_am_short(ep: uct_ep_h, id: u8, header: u64, payload: *const c_void,
                                  length: c_uint) -> ucs_status_t {
        hot!({
            let (i, e) = parts!(ep);
            T::am_short(i, e, id, header, bytes!(payload, length as usize))
        })
    }
}

ordered_op! { ep
    fn t_am_short_iov / cold_am_short_iov(ep: uct_ep_h, id: u8, iov: *const uct_iov_t,
                                          iovcnt: usize) -> ucs_status_t {
        hot!({
            if iov.is_null() && iovcnt != 0 {
                return null_iov();
            }
            let (i, e) = parts!(ep);
            T::am_short_iov(i, e, id, iovs!(iov, iovcnt))
        })
    }
}

ordered_op! { ep
    fn t_am_bcopy / cold_am_bcopy(ep: uct_ep_h, id: u8, pack_cb: uct_pack_callback_t, arg: *mut c_void,
                                  flags: c_uint) -> isize {
        hot!({
            let (i, e) = parts!(ep);
            match Pack::new(pack_cb, arg) {
                Some(p) => T::am_bcopy(i, e, id, p, flags),
                None => UCS_ERR_INVALID_PARAM as isize,
            }
        })
    }
}

ordered_op! { ep
    fn t_cswap64 / cold_cswap64(ep: uct_ep_h, compare: u64, swap: u64, remote_addr: u64,
                                rkey: uct_rkey_t, result: *mut u64,
                                comp: *mut uct_completion_t) -> ucs_status_t {
        hot!({
            let (i, e) = parts!(ep);
            T::atomic_fetch(i, e, AtomicOp::Cswap, Width::W64, swap, compare, Remote::new(remote_addr, rkey),
                            FetchResult::U64(result), comp!(comp))
        })
    }
}

ordered_op! { ep
    fn t_cswap32 / cold_cswap32(ep: uct_ep_h, compare: u32, swap: u32, remote_addr: u64,
                                rkey: uct_rkey_t, result: *mut u32,
                                comp: *mut uct_completion_t) -> ucs_status_t {
        hot!({
            let (i, e) = parts!(ep);
            T::atomic_fetch(i, e, AtomicOp::Cswap, Width::W32, swap as u64, compare as u64,
                            Remote::new(remote_addr, rkey), FetchResult::U32(result), comp!(comp))
        })
    }
}

ordered_op! { ep
    fn t_atomic32_post / cold_atomic32_post(ep: uct_ep_h, opcode: c_uint, value: u32, remote_addr: u64,
                                            rkey: uct_rkey_t) -> ucs_status_t {
        hot!({
            let (i, e) = parts!(ep);
            match AtomicOp::post(opcode) {
                Some(o) => T::atomic_post(i, e, o, Width::W32, value as u64, Remote::new(remote_addr, rkey)),
                None => bad_opcode(opcode),
            }
        })
    }
}

ordered_op! { ep
    fn t_atomic64_post / cold_atomic64_post(ep: uct_ep_h, opcode: c_uint, value: u64, remote_addr: u64,
                                            rkey: uct_rkey_t) -> ucs_status_t {
        hot!({
            let (i, e) = parts!(ep);
            match AtomicOp::post(opcode) {
                Some(o) => T::atomic_post(i, e, o, Width::W64, value, Remote::new(remote_addr, rkey)),
                None => bad_opcode(opcode),
            }
        })
    }
}

ordered_op! { ep
    fn t_atomic32_fetch / cold_atomic32_fetch(ep: uct_ep_h, opcode: c_uint, value: u32, result: *mut u32,
                                              remote_addr: u64, rkey: uct_rkey_t,
                                              comp: *mut uct_completion_t) -> ucs_status_t {
        hot!({
            let (i, e) = parts!(ep);
            match AtomicOp::fetch(opcode) {
                Some(o) => T::atomic_fetch(i, e, o, Width::W32, value as u64, 0, Remote::new(remote_addr, rkey),
                                           FetchResult::U32(result), comp!(comp)),
                None => bad_opcode(opcode),
            }
        })
    }
}

ordered_op! { ep
    fn t_atomic64_fetch / cold_atomic64_fetch(ep: uct_ep_h, opcode: c_uint, value: u64, result: *mut u64,
                                              remote_addr: u64, rkey: uct_rkey_t,
                                              comp: *mut uct_completion_t) -> ucs_status_t {
        hot!({
            let (i, e) = parts!(ep);
            match AtomicOp::fetch(opcode) {
                Some(o) => T::atomic_fetch(i, e, o, Width::W64, value, 0, Remote::new(remote_addr, rkey),
                                           FetchResult::U64(result), comp!(comp)),
                None => bad_opcode(opcode),
            }
        })
    }
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
        let (i, e) = parts!(ep);
        if req.is_null() {
            return UCS_ERR_INVALID_PARAM;
        }
        T::pending_add(i, e, PendingReq(req), flags)
    })
}

unsafe extern "C" fn t_pending_purge<T: Transport>(ep: uct_ep_h, cb: uct_pending_purge_callback_t,
                                                   arg: *mut c_void) {
    guard!((), {
        let (i, e) = parts!(ep);
        T::pending_purge(i, e, PurgeCb::new(cb, arg))
    })
}

ordered_op! { ep
    fn t_ep_flush / cold_ep_flush(ep: uct_ep_h, flags: c_uint, comp: *mut uct_completion_t) -> ucs_status_t {
        hot!({
            let (i, e) = parts!(ep);
            T::ep_flush(i, e, flags, comp!(comp))
        })
    }
}

ordered_op! { ep
    fn t_ep_fence / cold_ep_fence(ep: uct_ep_h, flags: c_uint) -> ucs_status_t {
        hot!({
            let (i, e) = parts!(ep);
            T::ep_fence(i, e, flags)
        })
    }
}

unsafe extern "C" fn t_ep_check<T: Transport>(ep: uct_ep_h, flags: c_uint, comp: *mut uct_completion_t) -> ucs_status_t {
    guard!(UCS_ERR_IO_ERROR, {
        let (i, e) = parts!(ep);
        ordered!(i, ep);
        T::ep_check(i, e, flags, comp!(comp))
    })
}

unsafe extern "C" fn t_ep_create<T: Transport>(params: *const uct_ep_params_t, ep_p: *mut uct_ep_h) -> ucs_status_t {
    guard!(UCS_ERR_IO_ERROR, {
        if params.is_null() || ep_p.is_null() {
            return UCS_ERR_INVALID_PARAM;
        }
        // SAFETY: checked non-NULL; the caller's parameters, in its
        // release's layout, copied for the call.
        let p = &unsafe { uct_ep_params_t::read_in(params, crate::ucs::release::running()) };
        let iface = iface!(p.iface);
        ordered!(iface);
        let m = p.field_mask;
        let lens = iface.hdr.addr_lens();
        // The caller's lengths of the peer's addresses where it gives them
        // (1.18+), else as long as ours.
        let (dev_len, iface_len) = crate::core::release::ep_param_addr_lens(p);
        let dev_addr = if m & UCT_EP_PARAM_FIELD_DEV_ADDR != 0 {
            // SAFETY: the peer's address of this transport, valid for the
            // call, when the field mask says it is there.
            unsafe { PeerAddr::new(p.dev_addr as *const c_void, dev_len.unwrap_or(peer_dev_len::<T>(&lens))) }
        } else {
            None
        };
        let iface_addr = if m & UCT_EP_PARAM_FIELD_IFACE_ADDR != 0 {
            // SAFETY: see above.
            unsafe { PeerAddr::new(p.iface_addr as *const c_void, iface_len.unwrap_or(lens.iface)) }
        } else {
            None
        };
        let ep_params = EpParams { raw: p, dev_addr, iface_addr };
        match T::ep_create(iface, &ep_params) {
            Ok(tl) => {
                let ep = Box::new(Ep::<T> { base: uct_ep_t { iface: p.iface }, tl });
                T::ep_init(iface, &ep);
                // SAFETY: checked non-NULL above; the caller's out-pointer.
                unsafe { *ep_p = Box::into_raw(ep) as uct_ep_h };
                UCS_OK
            }
            Err(s) => s,
        }
    })
}

unsafe extern "C" fn t_ep_destroy<T: Transport>(ep: uct_ep_h) {
    guard!((), {
        let (iface, _) = parts!(ep);
        ordered!(iface, ep);
        // A peer-failure report still queued for this endpoint must not
        // run after it is gone.
        iface.hdr.cancel_ep_err(ep);
        // SAFETY: the ep was boxed by t_ep_create and is destroyed once.
        let mut ep = unsafe { Box::from_raw(ep as *mut Ep<T>) };
        T::ep_destroy(iface, &mut ep);
    })
}

unsafe extern "C" fn t_ep_connect<T: Transport>(ep: uct_ep_h, params: *const uct_ep_connect_params_t) -> ucs_status_t {
    guard!(UCS_ERR_IO_ERROR, {
        let (i, e) = parts!(ep);
        ordered!(i, ep);
        // SAFETY: NULL or the caller's parameters, valid for the call.
        T::ep_connect(i, e, unsafe { params.as_ref() })
    })
}

unsafe extern "C" fn t_ep_disconnect<T: Transport>(ep: uct_ep_h, flags: c_uint) -> ucs_status_t {
    guard!(UCS_ERR_IO_ERROR, {
        let (i, e) = parts!(ep);
        ordered!(i, ep);
        T::ep_disconnect(i, e, flags)
    })
}

unsafe extern "C" fn t_cm_ep_conn_notify<T: Transport>(ep: uct_ep_h) -> ucs_status_t {
    guard!(UCS_ERR_IO_ERROR, {
        let (i, e) = parts!(ep);
        ordered!(i, ep);
        T::cm_ep_conn_notify(i, e)
    })
}

unsafe extern "C" fn t_ep_get_address<T: Transport>(ep: uct_ep_h, addr: *mut uct_ep_addr_t) -> ucs_status_t {
    guard!(UCS_ERR_IO_ERROR, {
        let (i, e) = parts!(ep);
        // SAFETY: the caller's buffer holds the ep address length we report.
        match unsafe { AddrOut::new(addr as *mut u8, i.hdr.addr_lens().ep) } {
            Some(out) => T::ep_get_address(i, e, out),
            None => UCS_ERR_INVALID_PARAM,
        }
    })
}

/// How much of a peer's device address a transport may read: our own
/// length, or the transport's longest self-describing form.
fn peer_dev_len<T: Transport>(lens: &AddrLens) -> usize {
    lens.device.max(T::PEER_DEVICE_ADDR_MAX)
}

unsafe extern "C" fn t_ep_connect_to_ep<T: Transport>(ep: uct_ep_h, dev: *const uct_device_addr_t,
                                                      ep_addr: *const uct_ep_addr_t) -> ucs_status_t {
    guard!(UCS_ERR_IO_ERROR, {
        let (i, e) = parts!(ep);
        ordered!(i, ep);
        let lens = i.hdr.addr_lens();
        // SAFETY: the peer's addresses of this transport, valid for the call.
        let (dev, ep_addr) = unsafe {
            (PeerAddr::new(dev as *const c_void, peer_dev_len::<T>(&lens)), PeerAddr::new(ep_addr as *const c_void, lens.ep))
        };
        T::ep_connect_to_ep(i, e, dev, ep_addr)
    })
}

ordered_op! { iface
    fn t_iface_flush / cold_iface_flush(iface: uct_iface_h, flags: c_uint,
                                        comp: *mut uct_completion_t) -> ucs_status_t {
        hot!({
            let i = iface!(iface);
            T::iface_flush(i, flags, comp!(comp))
        })
    }
}

ordered_op! { iface
    fn t_iface_fence / cold_iface_fence(iface: uct_iface_h, flags: c_uint) -> ucs_status_t {
        hot!({
            let i = iface!(iface);
            T::iface_fence(i, flags)
        })
    }
}

unsafe extern "C" fn t_progress_enable<T: Transport>(iface: uct_iface_h, flags: c_uint) {
    guard!((), {
        let i = iface!(iface);
        i.hdr.progress_enable(flags);
        T::progress_changed(i)
    })
}

unsafe extern "C" fn t_progress_disable<T: Transport>(iface: uct_iface_h, flags: c_uint) {
    guard!((), {
        let i = iface!(iface);
        i.hdr.progress_disable(flags);
        T::progress_changed(i)
    })
}

ordered_op! { iface
    fn t_progress / cold_progress(iface: uct_iface_h) -> c_uint {
        hot!({
            let i = iface!(iface);
            T::progress(i)
        })
    }
}

unsafe extern "C" fn t_event_fd_get<T: Transport>(iface: uct_iface_h, fd_p: *mut c_int) -> ucs_status_t {
    guard!(UCS_ERR_IO_ERROR, {
        if fd_p.is_null() {
            return UCS_ERR_INVALID_PARAM;
        }
        match T::event_fd_get(iface!(iface)) {
            Ok(fd) => {
                // SAFETY: checked non-NULL above; the caller's out-pointer.
                unsafe { *fd_p = fd };
                UCS_OK
            }
            Err(s) => s,
        }
    })
}

unsafe extern "C" fn t_event_arm<T: Transport>(iface: uct_iface_h, events: c_uint) -> ucs_status_t {
    guard!(UCS_ERR_IO_ERROR, {
        let i = iface!(iface);
        ordered!(i);
        T::event_arm(i, events)
    })
}

unsafe extern "C" fn t_iface_close<T: Transport>(iface: uct_iface_h) {
    guard!((), {
        // SAFETY: boxed by Iface::into_handle, closed once.
        let mut b = unsafe { Box::from_raw(iface as *mut Iface<T>) };
        ordered!(b);
        // Remove the progress callback at once (not deferred): the next
        // worker progress must not call into the freed interface.
        let flags = b.hdr.progress_flags();
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
        let a = query_attr(iface!(iface));
        // SAFETY: checked non-NULL above; the caller's struct.
        unsafe { *attr = a };
        UCS_OK
    })
}

unsafe extern "C" fn t_get_device_address<T: Transport>(iface: uct_iface_h, addr: *mut uct_device_addr_t) -> ucs_status_t {
    let i = iface!(iface);
    // SAFETY: the caller's buffer holds the device address length we report.
    guard!(UCS_ERR_IO_ERROR, match unsafe { AddrOut::new(addr as *mut u8, i.hdr.addr_lens().device) } {
        Some(out) => T::get_device_address(i, out),
        None => UCS_OK, // a zero-length address may be requested with NULL
    })
}

unsafe extern "C" fn t_get_address<T: Transport>(iface: uct_iface_h, addr: *mut uct_iface_addr_t) -> ucs_status_t {
    let i = iface!(iface);
    // SAFETY: the caller's buffer holds the iface address length we report.
    guard!(UCS_ERR_IO_ERROR, match unsafe { AddrOut::new(addr as *mut u8, i.hdr.addr_lens().iface) } {
        Some(out) => T::get_address(i, out),
        None => UCS_ERR_INVALID_PARAM,
    })
}

unsafe extern "C" fn t_is_reachable<T: Transport>(iface: uct_iface_h, dev: *const uct_device_addr_t,
                                                  addr: *const uct_iface_addr_t) -> c_int {
    let i = iface!(iface);
    let lens = i.hdr.addr_lens();
    // SAFETY: the peer's addresses of this transport, valid for the call.
    let (dev, addr) = unsafe {
        (PeerAddr::new(dev as *const c_void, peer_dev_len::<T>(&lens)), PeerAddr::new(addr as *const c_void, lens.iface))
    };
    guard!(0, T::reachable(i, dev, addr).is_ok() as c_int)
}

/// # Safety
/// `iface` is an `Iface<T>` and `attr` the caller's (non-NULL) struct.
unsafe fn internal_estimate_perf<T: Transport>(iface: uct_iface_h, attr: *mut uct_perf_attr_t) -> ucs_status_t {
    // SAFETY: see the function contract.
    guard!(UCS_ERR_IO_ERROR, T::estimate_perf(iface!(iface), unsafe { &mut *attr }))
}

/// # Safety
/// `ep` is an endpoint of an `Iface<T>` and `attr` the caller's (non-NULL)
/// struct.
unsafe fn internal_ep_query<T: Transport>(ep: uct_ep_h, attr: *mut uct_ep_attr_t) -> ucs_status_t {
    guard!(UCS_ERR_IO_ERROR, {
        let (i, e) = parts!(ep);
        // SAFETY: see the function contract.
        T::ep_query(i, e, unsafe { &mut *attr })
    })
}

/// # Safety
/// `ep` is an endpoint of an `Iface<T>`; each address is NULL or a peer
/// address of this transport, valid for the call.
unsafe fn internal_ep_is_connected<T: Transport>(ep: uct_ep_h, dev: *const uct_device_addr_t,
                                                 addr: *const uct_iface_addr_t, ep_addr: *const uct_ep_addr_t) -> bool {
    guard!(false, {
        let (i, e) = parts!(ep);
        let lens = i.hdr.addr_lens();
        // SAFETY: see the function contract.
        let (dev, addr, ep_addr) = unsafe {
            (PeerAddr::new(dev as *const c_void, peer_dev_len::<T>(&lens)), PeerAddr::new(addr as *const c_void, lens.iface),
             PeerAddr::new(ep_addr as *const c_void, lens.ep))
        };
        T::ep_is_connected(i, e, dev, addr, ep_addr)
    })
}

/// # Safety
/// `iface` is an `Iface<T>`; each address is NULL or a peer address of this
/// transport, valid for the call.
unsafe fn internal_reachable<T: Transport>(iface: uct_iface_h, dev: *const uct_device_addr_t,
                                           addr: *const uct_iface_addr_t) -> Result<(), String> {
    let i = iface!(iface);
    let lens = i.hdr.addr_lens();
    // SAFETY: see the function contract.
    let (dev, addr) = unsafe {
        (PeerAddr::new(dev as *const c_void, peer_dev_len::<T>(&lens)), PeerAddr::new(addr as *const c_void, lens.iface))
    };
    guard!(Err(String::new()), T::reachable(i, dev, addr))
}

/// The internal hooks of transport `T`.
pub struct Internal<T>(std::marker::PhantomData<T>);
impl<T: Transport> Internal<T> {
    pub const OPS: InternalOps = InternalOps {
        estimate_perf: internal_estimate_perf::<T>,
        ep_query: internal_ep_query::<T>,
        ep_is_connected: internal_ep_is_connected::<T>,
        reachable: internal_reachable::<T>,
        reach_needs_iface_addr: T::REACH_NEEDS_IFACE_ADDR,
    };
}

/// The vtable of transport `T`.
pub fn build_ops<T: Transport>() -> uct_iface_ops_t {
    let mut o = unsupported_ops();
    let ops = T::ops();
    let has = |s: u32| ops & op(s) != 0;
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
