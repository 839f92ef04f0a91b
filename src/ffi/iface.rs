//! Interface exports: open, and trampolines through `iface->ops` for the
//! rest (except the four functions UCX itself routes through private data:
//! AM handler, AM tracer, estimate_perf; and ep_query in ep.rs). Every one
//! first checks that the handle is a live interface of this library (the
//! registry), so a closed or foreign pointer is refused unread.

use super::{entry, iface_or_fail, known_fields, md_or_fail, need, opt_str, worker_or_fail};
use crate::abi::layout_sizes::ReleaseSized;
use crate::abi::*;
use crate::core::iface::stub_iface;
use crate::core::config;
use crate::core::iface::IfaceParams;
use crate::core::registry::{self, Kind};
use libc::{c_int, c_uint, c_void};

const IFACE_PARAM_FIELDS: u64 = (1u64 << 19) - 1;

/// The vtable of a live interface, or `UCS_ERR_INVALID_PARAM` (or `$ret`)
/// with a log line.
macro_rules! iface_ops {
    ($iface:expr) => {
        &iface_or_fail!($iface).base.ops
    };
    ($iface:expr, $ret:expr) => {
        &iface_or_fail!($iface, $ret).base.ops
    };
}

/// Read the parameters C passed, applying the field mask.
///
/// # Safety
/// `p` must be a valid `uct_iface_params_t`.
unsafe fn read_params(p: &uct_iface_params_t) -> Result<IfaceParams, ucs_status_t> {
    let m = p.field_mask;
    let has = |f: u64| m & f != 0;
    let open_mode = p.open_mode;
    let (mut tl_name, mut dev_name) = (String::new(), String::new());
    // Like UCX, the device names are read whenever the open mode says
    // DEVICE, even without UCT_IFACE_PARAM_FIELD_DEVICE (ucx_perftest
    // relies on it).
    if open_mode & UCT_IFACE_OPEN_MODE_DEVICE != 0 {
        // SAFETY: in DEVICE mode the union holds the device names, NULL or
        // C strings (UCT's contract).
        let (tl, dev) = unsafe { (opt_str(p.mode.device.tl_name), opt_str(p.mode.device.dev_name)) };
        tl_name = tl.unwrap_or_default().to_string();
        dev_name = dev.unwrap_or_default().to_string();
    }
    if has(UCT_IFACE_PARAM_FIELD_AM_ALIGN_OFFSET) && !has(UCT_IFACE_PARAM_FIELD_AM_ALIGNMENT) {
        crate::error!("alignment offset has no effect without alignment");
        return Err(UCS_ERR_INVALID_PARAM);
    }
    let am_alignment = has(UCT_IFACE_PARAM_FIELD_AM_ALIGNMENT).then_some(p.am_alignment);
    if let Some(a) = am_alignment {
        if a == 0 || !a.is_power_of_two() {
            crate::error!("AM alignment {} is not a power of 2", a);
            return Err(UCS_ERR_INVALID_PARAM);
        }
    }
    let err_handler_flags = if has(UCT_IFACE_PARAM_FIELD_ERR_HANDLER_FLAGS) { p.err_handler_flags } else { 0 };
    if err_handler_flags & UCT_CB_FLAG_RESERVED != 0 {
        crate::error!("error handler flags {:#x} use the reserved bit", err_handler_flags);
        return Err(UCS_ERR_INVALID_PARAM);
    }
    Ok(IfaceParams {
        open_mode,
        tl_name,
        dev_name,
        rx_headroom: if has(UCT_IFACE_PARAM_FIELD_RX_HEADROOM) { p.rx_headroom } else { 0 },
        err_handler: if has(UCT_IFACE_PARAM_FIELD_ERR_HANDLER) { p.err_handler } else { None },
        err_handler_arg: if has(UCT_IFACE_PARAM_FIELD_ERR_HANDLER_ARG) { p.err_handler_arg } else { std::ptr::null_mut() },
        err_handler_flags,
        am_alignment,
        am_align_offset: if has(UCT_IFACE_PARAM_FIELD_AM_ALIGN_OFFSET) { p.am_align_offset } else { 0 },
        features: if has(UCT_IFACE_PARAM_FIELD_FEATURES) { p.features } else { u64::MAX },
        cpu_mask: has(UCT_IFACE_PARAM_FIELD_CPU_MASK).then_some(p.cpu_mask),
        keepalive_interval: if has(UCT_IFACE_PARAM_FIELD_KEEPALIVE_INTERVAL) { p.keepalive_interval } else { 0 },
        async_event_cb: if has(UCT_IFACE_PARAM_FIELD_ASYNC_EVENT_CB) { p.async_event_cb } else { None },
        async_event_arg: if has(UCT_IFACE_PARAM_FIELD_ASYNC_EVENT_ARG) { p.async_event_arg } else { std::ptr::null_mut() },
    })
}

entry! {
    fn uct_iface_open(md: uct_md_h, worker: uct_worker_h, params: *const uct_iface_params_t,
                      config: *const uct_iface_config_t, iface_p: *mut uct_iface_h) -> ucs_status_t {
        need!(params, "params");
        need!(iface_p, "iface_p");
        // SAFETY: checked non-NULL.
        let p = unsafe { &*params };
        if p.field_mask & UCT_IFACE_PARAM_FIELD_OPEN_MODE != 0 && p.open_mode & UCT_IFACE_OPEN_MODE_STUB != 0
            && crate::ucs::release::running().since(22)
        {
            // A stub needs no md, worker or config (1.22's libucp passes
            // NULL for them).
            // SAFETY: in STUB mode the union holds the stub's status.
            let status = unsafe { p.mode.stub.status };
            // SAFETY: out-pointer checked above.
            unsafe { *iface_p = crate::core::iface::stub_iface::open(status) };
            return UCS_OK;
        }
        let m = md_or_fail!(md);
        let w = worker_or_fail!(worker);
        known_fields!(p.field_mask, IFACE_PARAM_FIELDS, "iface params");
        if p.field_mask & UCT_IFACE_PARAM_FIELD_OPEN_MODE == 0 {
            crate::error!("UCT_IFACE_PARAM_FIELD_OPEN_MODE is not defined");
            return UCS_ERR_INVALID_PARAM;
        }
        // SAFETY: a valid params struct.
        let ip = match unsafe { read_params(p) } {
            Ok(ip) => ip,
            Err(s) => return s,
        };
        let tl = if ip.open_mode & UCT_IFACE_OPEN_MODE_DEVICE != 0 {
            m.component.find_tl(&ip.tl_name)
        } else if ip.open_mode & (UCT_IFACE_OPEN_MODE_SOCKADDR_CLIENT | UCT_IFACE_OPEN_MODE_SOCKADDR_SERVER) != 0 {
            None
        } else {
            crate::error!("Invalid open mode {}", ip.open_mode);
            return UCS_ERR_INVALID_PARAM;
        };
        let Some(tl) = tl else {
            crate::error!("{}: md {} has no transport '{}'", FN, m.name, ip.tl_name);
            return UCS_ERR_NO_DEVICE;
        };
        need!(config, "config");
        // SAFETY: looked up in the registry; the caller keeps its config
        // until the interface is open.
        let parsed = super::live_or!(unsafe { config::Parsed::from_ptr(config as *const c_void) }, config,
                                     Kind::Config, "config", UCS_ERR_INVALID_PARAM);
        // The descriptor checks that the config was read for this transport.
        match tl.open(m, w, &ip, parsed) {
            Ok(i) => {
                // SAFETY: out-pointer checked above.
                unsafe { *iface_p = i };
                UCS_OK
            }
            Err(s) => s,
        }
    }
}

entry! {
    fn uct_iface_close(iface: uct_iface_h) {
        // Taken out of the registry first: of two closes of one interface
        // (two threads, or a close from a callback racing another), one
        // reaches the destructor; the registry lock is not held while it
        // runs (it may call back into this library).
        if !registry::take(iface, Kind::Iface) && !registry::take(iface, Kind::StubIface) {
            crate::error!("{}: iface {:p} {}", FN, iface, registry::why_not(iface, Kind::Iface));
            return;
        }
        // SAFETY: it was a live interface of ours: it begins with its
        // vtable, whose destructor frees it.
        if let Some(f) = unsafe { (*iface).ops.iface_close } {
            // SAFETY: the interface's own destructor, called once.
            unsafe { f(iface) }
        }
    }
}

entry! {
    fn uct_iface_query(iface: uct_iface_h, iface_attr: *mut uct_iface_attr_t) -> ucs_status_t {
        need!(iface_attr, "iface_attr");
        let ops = iface_ops!(iface);
        // SAFETY: dispatching to the interface's own implementation.
        ops.iface_query.map_or(UCS_ERR_UNSUPPORTED, |f| unsafe { f(iface, iface_attr) })
    }
}

entry! {
    fn uct_iface_get_device_address(iface: uct_iface_h, addr: *mut uct_device_addr_t) -> ucs_status_t {
        let ops = iface_ops!(iface);
        // SAFETY: dispatching to the interface's own implementation.
        ops.iface_get_device_address.map_or(UCS_ERR_UNSUPPORTED, |f| unsafe { f(iface, addr) })
    }
}

entry! {
    fn uct_iface_get_address(iface: uct_iface_h, addr: *mut uct_iface_addr_t) -> ucs_status_t {
        let ops = iface_ops!(iface);
        // SAFETY: dispatching to the interface's own implementation.
        ops.iface_get_address.map_or(UCS_ERR_UNSUPPORTED, |f| unsafe { f(iface, addr) })
    }
}

entry! {
    fn uct_iface_is_reachable(iface: uct_iface_h, dev_addr: *const uct_device_addr_t,
                              iface_addr: *const uct_iface_addr_t) -> c_int {
        let ops = iface_ops!(iface, 0);
        // SAFETY: dispatching to the interface's own implementation.
        ops.iface_is_reachable.map_or(0, |f| unsafe { f(iface, dev_addr, iface_addr) })
    }
}

entry! {
    fn uct_iface_is_reachable_v2(iface: uct_iface_h, params: *const uct_iface_is_reachable_params_t) -> c_int {
        if params.is_null() {
            crate::error!("{}: params must not be NULL", FN);
            return 0;
        }
        if stub_iface::status_of(iface).is_some() {
            return 0;
        }
        let hdr = iface_or_fail!(iface, 0);
        // SAFETY: checked non-NULL: the caller's parameters, in its
        // release's layout, copied for the call.
        let p = &unsafe { uct_iface_is_reachable_params_t::read_in(params, crate::ucs::release::running()) };
        let has = |bit: u64| p.field_mask & bit != 0;
        let info_len = if has(UCT_IFACE_IS_REACHABLE_FIELD_INFO_STRING_LENGTH) { p.info_string_length } else { 0 };
        if has(UCT_IFACE_IS_REACHABLE_FIELD_INFO_STRING) && !p.info_string.is_null() && info_len > 0 {
            // SAFETY: the caller's buffer of info_len > 0 bytes; UCX empties
            // it before anything else.
            unsafe { *p.info_string = 0 };
        }
        let mut required = UCT_IFACE_IS_REACHABLE_FIELD_DEVICE_ADDR;
        if hdr.internal.reach_needs_iface_addr {
            required |= UCT_IFACE_IS_REACHABLE_FIELD_IFACE_ADDR;
        }
        if p.field_mask & required != required {
            crate::error!("uct_iface_is_reachable: missing params (field_mask: {}, expected: {})", p.field_mask,
                          required);
            return 0;
        }
        let info = if has(UCT_IFACE_IS_REACHABLE_FIELD_INFO_STRING) {
            if p.info_string.is_null() {
                crate::error!("uct_iface_is_reachable: null info_string passed");
                return 0;
            }
            // SAFETY: the caller's buffer; UCX writes its first byte whenever
            // the field is set.
            unsafe { *p.info_string = 0 };
            Some((p.info_string, info_len))
        } else {
            None
        };
        let dev = if has(UCT_IFACE_IS_REACHABLE_FIELD_DEVICE_ADDR) { p.device_addr } else { std::ptr::null() };
        let addr = if has(UCT_IFACE_IS_REACHABLE_FIELD_IFACE_ADDR) { p.iface_addr } else { std::ptr::null() };
        // SAFETY: our interface; the addresses are the caller's, valid for
        // the call.
        let mut verdict = unsafe { (hdr.internal.reachable)(iface, dev, addr) };
        if verdict.is_ok() && device_scope(p) && !same_device(hdr, iface, dev) {
            verdict = Err("device address is different".to_string());
        }
        match verdict {
            Ok(()) => 1,
            Err(why) => {
                if let Some((buf, len)) = info {
                    // SAFETY: the caller's buffer of `len` bytes.
                    unsafe { write_info(buf, len, &why) };
                }
                0
            }
        }
    }
}

/// Whether the caller asks about its own device only (1.15+ `scope`; an
/// older caller's struct has no such member, and its copy reads zero).
fn device_scope(p: &uct_iface_is_reachable_params_t) -> bool {
    p.field_mask & UCT_IFACE_IS_REACHABLE_FIELD_SCOPE != 0 && p.scope == UCT_IFACE_REACHABILITY_SCOPE_DEVICE
}

/// Whether the peer's device address is this interface's own.
fn same_device(hdr: &crate::core::iface::IfaceHeader, iface: uct_iface_h, dev: *const uct_device_addr_t) -> bool {
    let len = hdr.addr_lens().device;
    if len == 0 {
        return true;
    }
    let mut mine = vec![0u8; len];
    let Some(get) = hdr.base.ops.iface_get_device_address else { return false };
    // SAFETY: our own interface writes its device address (`len` bytes) to
    // the buffer; the peer's address is at least as long as ours when the
    // transport found it reachable (same format).
    unsafe {
        get(iface, mine.as_mut_ptr() as *mut uct_device_addr_t) == UCS_OK
            && std::slice::from_raw_parts(dev as *const u8, len) == mine.as_slice()
    }
}

/// Copy `text` into the caller's info buffer of `len` bytes, truncated and
/// NUL-terminated (nothing when `len` is 0).
///
/// # Safety
/// `buf` holds `len` writable bytes.
unsafe fn write_info(buf: *mut libc::c_char, len: usize, text: &str) {
    if len == 0 {
        return;
    }
    let n = text.len().min(len - 1);
    // SAFETY: see the function contract; n < len.
    unsafe {
        std::ptr::copy_nonoverlapping(text.as_ptr(), buf as *mut u8, n);
        *buf.add(n) = 0;
    }
}

entry! {
    fn uct_iface_set_am_handler(iface: uct_iface_h, id: u8, cb: uct_am_callback_t, arg: *mut c_void,
                                flags: u32) -> ucs_status_t {
        let hdr = iface_or_fail!(iface);
        if id as usize >= UCT_AM_ID_MAX {
            crate::error!("active message id out-of-range (got: {} max: {})", id, UCT_AM_ID_MAX);
            return UCS_ERR_INVALID_PARAM;
        }
        if cb.is_none() {
            hdr.set_am_handler(id, crate::core::iface::IfaceHeader::stub_handler(id));
            return UCS_OK;
        }
        if flags & UCT_CB_FLAG_RESERVED != 0 {
            crate::error!("{}: flags {:#x} use the reserved bit", FN, flags);
            return UCS_ERR_INVALID_PARAM;
        }
        // SAFETY: all-zero is a valid uct_iface_attr_t.
        let mut attr: uct_iface_attr_t = unsafe { std::mem::zeroed() };
        // SAFETY: the query slot of our own interface.
        let status = unsafe { (hdr.base.ops.iface_query.expect("query"))(iface, &mut attr) };
        if status != UCS_OK {
            return status;
        }
        if flags & UCT_CB_FLAG_ASYNC == 0 && attr.cap.flags & UCT_IFACE_FLAG_CB_SYNC == 0 {
            crate::error!("Synchronous callback requested, but not supported");
            return UCS_ERR_INVALID_PARAM;
        }
        hdr.set_am_handler(id, crate::core::iface::AmHandler { cb, arg, flags });
        UCS_OK
    }
}

entry! {
    fn uct_iface_set_am_tracer(iface: uct_iface_h, tracer: uct_am_tracer_t, arg: *mut c_void) -> ucs_status_t {
        let hdr = iface_or_fail!(iface);
        hdr.set_am_tracer(tracer, arg);
        UCS_OK
    }
}

entry! {
    fn uct_iface_estimate_perf(iface: uct_iface_h, perf_attr: *mut uct_perf_attr_t) -> ucs_status_t {
        need!(perf_attr, "perf_attr");
        if let Some(status) = stub_iface::status_of(iface) {
            return status;
        }
        let hdr = iface_or_fail!(iface);
        let release = crate::ucs::release::running();
        let estimate = |perf: &mut uct_perf_attr_t| {
            if perf.field_mask & UCT_PERF_ATTR_FIELD_PATH_BANDWIDTH != 0 {
                // 1.19+: the bandwidth of one path is the interface's own
                // (as the C original's base estimate answers) unless the
                // transport's estimate below answers it itself.
                // SAFETY: all-zero is a valid uct_iface_attr_t.
                let mut attr: uct_iface_attr_t = unsafe { std::mem::zeroed() };
                if let Some(query) = hdr.base.ops.iface_query {
                    // SAFETY: our interface's own query, a local struct.
                    if unsafe { query(iface, &mut attr) } == UCS_OK {
                        perf.path_bandwidth = attr.bandwidth;
                    }
                }
            }
            // SAFETY: our interface, a local struct of the newest layout.
            let status = unsafe { (hdr.internal.estimate_perf)(iface, perf) };
            if status == UCS_OK {
                crate::core::release::perf_fill_extra(perf);
            }
            status
        };
        if release.since(19) {
            // SAFETY: checked non-NULL: the caller's struct, in the newest
            // layout, copied in and out again.
            let mut perf = unsafe { perf_attr.read_unaligned() };
            let status = estimate(&mut perf);
            // SAFETY: as above.
            unsafe { perf_attr.write_unaligned(perf) };
            return status;
        }
        let old_attr = perf_attr as *mut uct_perf_attr_t_v1_13;
        // SAFETY: checked non-NULL: the caller's struct, in its release's
        // (pre-1.19) layout, copied in and (what the release has of it) out.
        let mut old = unsafe { uct_perf_attr_t_v1_13::read_in(old_attr, release) };
        let mut perf = old.to_newest();
        let status = estimate(&mut perf);
        old.update_from(&perf);
        // SAFETY: as above.
        unsafe { old.write_in(old_attr, release) };
        status
    }
}

entry! {
    fn uct_iface_event_fd_get(iface: uct_iface_h, fd_p: *mut c_int) -> ucs_status_t {
        need!(fd_p, "fd_p");
        let ops = iface_ops!(iface);
        // SAFETY: dispatching to the interface's own implementation.
        ops.iface_event_fd_get.map_or(UCS_ERR_UNSUPPORTED, |f| unsafe { f(iface, fd_p) })
    }
}

entry! {
    fn uct_iface_event_arm(iface: uct_iface_h, events: c_uint) -> ucs_status_t {
        let ops = iface_ops!(iface);
        // SAFETY: dispatching to the interface's own implementation.
        ops.iface_event_arm.map_or(UCS_ERR_UNSUPPORTED, |f| unsafe { f(iface, events) })
    }
}

entry! {
    fn uct_iface_accept(iface: uct_iface_h, conn_request: uct_conn_request_h) -> ucs_status_t {
        let ops = iface_ops!(iface);
        // SAFETY: dispatching to the interface's own implementation.
        ops.iface_accept.map_or(UCS_ERR_UNSUPPORTED, |f| unsafe { f(iface, conn_request) })
    }
}

entry! {
    fn uct_iface_reject(iface: uct_iface_h, conn_request: uct_conn_request_h) -> ucs_status_t {
        let ops = iface_ops!(iface);
        // SAFETY: dispatching to the interface's own implementation.
        ops.iface_reject.map_or(UCS_ERR_UNSUPPORTED, |f| unsafe { f(iface, conn_request) })
    }
}
