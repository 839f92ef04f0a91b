//! Exports that UCX releases from 1.14 on added to the API (1.14: the v2 memory
//! domain calls and `uct_ep_connect_to_ep_v2`; 1.16: `uct_ep_is_connected`
//! and `uct_rkey_compare`). Every build exports all of them; each answers
//! `UCS_ERR_UNSUPPORTED` to a process whose release does not have it, and
//! reaches the same core objects as the 1.13 calls otherwise.

use super::{component_or_fail, entry, known_fields, md_or_fail, need, since_release};
use crate::abi::layout_sizes::ReleaseSized;
use crate::abi::*;
use crate::core::iface::{stub_iface, IfaceHeader};
use crate::core::md::MdObj;
use libc::{c_int, c_void};

/// The attributes of `md` in the v2 layout: the transport's v1 attributes
/// plus what only the v2 struct carries.
fn md_attr_v2(m: &MdObj) -> uct_md_attr_v2_t {
    // SAFETY: all-zero is a valid uct_md_attr_t.
    let mut v1: uct_md_attr_t = unsafe { std::mem::zeroed() };
    m.query(&mut v1);
    let mut a = uct_md_attr_v2_t {
        field_mask: u64::MAX,
        max_alloc: v1.cap.max_alloc as _,
        max_reg: v1.cap.max_reg as _,
        flags: v1.cap.flags,
        reg_mem_types: v1.cap.reg_mem_types,
        reg_nonblock_mem_types: m.imp.reg_nonblock_mem_types(),
        cache_mem_types: m.imp.cache_mem_types(),
        detect_mem_types: v1.cap.detect_mem_types,
        alloc_mem_types: v1.cap.alloc_mem_types,
        access_mem_types: v1.cap.access_mem_types,
        reg_cost: v1.reg_cost,
        component_name: v1.component_name,
        rkey_packed_size: v1.rkey_packed_size,
        local_cpus: v1.local_cpus,
        ..Default::default()
    };
    if v1.cap.flags & UCT_MD_FLAG_INVALIDATE != 0 {
        a.flags |= UCT_MD_FLAG_INVALIDATE_RMA | UCT_MD_FLAG_INVALIDATE_AMO;
    }
    // 1.16 added the member but its memory domains leave it 0 (only a GPU
    // domain fills it in); from 1.17 on every domain starts from 1, "no
    // alignment needed". ucx_info prints the line when it is not that value.
    a.reg_alignment = if crate::ucs::release::running().since(17) { 1 } else { 0 };
    a.required_mem_flags = m.imp.required_mem_flags();
    a
}

entry! {
    /// Three layouts: 1.14 (its own field bits), 1.15-1.17 (a member
    /// inserted, bits renumbered; 1.16 appended `reg_alignment`) and 1.18+
    /// (`gva_mem_types` inserted; 1.22 appended `required_mem_flags`).
    /// Only the members the caller asks for are written.
    fn uct_md_query_v2(md: uct_md_h, md_attr: *mut uct_md_attr_v2_t) -> ucs_status_t {
        since_release!(14, UCS_ERR_UNSUPPORTED);
        need!(md_attr, "md_attr");
        let m = md_or_fail!(md);
        let full = md_attr_v2(m);
        let release = crate::ucs::release::running();
        macro_rules! copy {
            ($out:ident, $want:expr, $($bit:ident => $f:ident),* $(,)?) => {
                $( if $want & $bit != 0 { $out.$f = full.$f; } )*
            };
        }
        if release.since(18) {
            // SAFETY: checked non-NULL: the caller's struct of its release,
            // copied in and (what the release has of it) out again.
            let mut out = unsafe { uct_md_attr_v2_t::read_in(md_attr, release) };
            let want = out.field_mask;
            copy!(out, want, UCT_MD_ATTR_FIELD_MAX_ALLOC => max_alloc, UCT_MD_ATTR_FIELD_MAX_REG => max_reg,
                  UCT_MD_ATTR_FIELD_FLAGS => flags, UCT_MD_ATTR_FIELD_REG_MEM_TYPES => reg_mem_types,
                  UCT_MD_ATTR_FIELD_REG_NONBLOCK_MEM_TYPES => reg_nonblock_mem_types,
                  UCT_MD_ATTR_FIELD_CACHE_MEM_TYPES => cache_mem_types,
                  UCT_MD_ATTR_FIELD_GVA_MEM_TYPES => gva_mem_types,
                  UCT_MD_ATTR_FIELD_DETECT_MEM_TYPES => detect_mem_types,
                  UCT_MD_ATTR_FIELD_ALLOC_MEM_TYPES => alloc_mem_types,
                  UCT_MD_ATTR_FIELD_ACCESS_MEM_TYPES => access_mem_types,
                  UCT_MD_ATTR_FIELD_DMABUF_MEM_TYPES => dmabuf_mem_types,
                  UCT_MD_ATTR_FIELD_REG_COST => reg_cost, UCT_MD_ATTR_FIELD_COMPONENT_NAME => component_name,
                  UCT_MD_ATTR_FIELD_RKEY_PACKED_SIZE => rkey_packed_size,
                  UCT_MD_ATTR_FIELD_LOCAL_CPUS => local_cpus,
                  UCT_MD_ATTR_FIELD_EXPORTED_MKEY_PACKED_SIZE => exported_mkey_packed_size,
                  UCT_MD_ATTR_FIELD_GLOBAL_ID => global_id, UCT_MD_ATTR_FIELD_REG_ALIGNMENT => reg_alignment);
            if release.since(22) {
                copy!(out, want, UCT_MD_ATTR_FIELD_REQUIRED_MEM_FLAGS => required_mem_flags);
            }
            // SAFETY: as above.
            unsafe { out.write_in(md_attr, release) };
        } else if release.since(15) {
            let p = md_attr as *mut uct_md_attr_v2_t_v1_15;
            // SAFETY: as above, in the 1.15-1.17 layout.
            let mut out = unsafe { uct_md_attr_v2_t_v1_15::read_in(p, release) };
            let want = out.field_mask;
            copy!(out, want, UCT_MD_ATTR_FIELD_MAX_ALLOC => max_alloc, UCT_MD_ATTR_FIELD_MAX_REG => max_reg,
                  UCT_MD_ATTR_FIELD_FLAGS => flags, UCT_MD_ATTR_FIELD_REG_MEM_TYPES => reg_mem_types,
                  UCT_MD_ATTR_FIELD_REG_NONBLOCK_MEM_TYPES => reg_nonblock_mem_types,
                  UCT_MD_ATTR_FIELD_CACHE_MEM_TYPES => cache_mem_types,
                  UCT_MD_ATTR_FIELD_DETECT_MEM_TYPES => detect_mem_types,
                  UCT_MD_ATTR_FIELD_ALLOC_MEM_TYPES => alloc_mem_types,
                  UCT_MD_ATTR_FIELD_ACCESS_MEM_TYPES => access_mem_types,
                  UCT_MD_ATTR_FIELD_DMABUF_MEM_TYPES => dmabuf_mem_types,
                  UCT_MD_ATTR_FIELD_REG_COST => reg_cost, UCT_MD_ATTR_FIELD_COMPONENT_NAME => component_name,
                  UCT_MD_ATTR_FIELD_RKEY_PACKED_SIZE => rkey_packed_size,
                  UCT_MD_ATTR_FIELD_LOCAL_CPUS => local_cpus,
                  UCT_MD_ATTR_FIELD_EXPORTED_MKEY_PACKED_SIZE => exported_mkey_packed_size,
                  UCT_MD_ATTR_FIELD_GLOBAL_ID => global_id);
            if release.since(16) {
                copy!(out, want, UCT_MD_ATTR_FIELD_REG_ALIGNMENT => reg_alignment);
            }
            // SAFETY: as above.
            unsafe { out.write_in(p, release) };
        } else {
            let p = md_attr as *mut uct_md_attr_v2_t_v1_14;
            // SAFETY: checked non-NULL: the caller's 1.14 struct, whole.
            let out = unsafe { &mut *p };
            let want = out.field_mask;
            let mut flags = full.flags;
            // 1.14 has no v2 flags (invalidation is the v1 flag).
            flags &= !(UCT_MD_FLAG_INVALIDATE_RMA | UCT_MD_FLAG_INVALIDATE_AMO | UCT_MD_FLAG_MEMTYPE_COPY);
            if want & UCT_MD_ATTR_FIELD_FLAGS != 0 {
                out.flags = flags;
            }
            copy!(out, want, UCT_MD_ATTR_FIELD_MAX_ALLOC => max_alloc, UCT_MD_ATTR_FIELD_MAX_REG => max_reg,
                  UCT_MD_ATTR_FIELD_REG_MEM_TYPES => reg_mem_types,
                  UCT_MD_ATTR_FIELD_CACHE_MEM_TYPES_v1_14 => cache_mem_types,
                  UCT_MD_ATTR_FIELD_DETECT_MEM_TYPES_v1_14 => detect_mem_types,
                  UCT_MD_ATTR_FIELD_ALLOC_MEM_TYPES_v1_14 => alloc_mem_types,
                  UCT_MD_ATTR_FIELD_ACCESS_MEM_TYPES_v1_14 => access_mem_types,
                  UCT_MD_ATTR_FIELD_DMABUF_MEM_TYPES_v1_14 => dmabuf_mem_types,
                  UCT_MD_ATTR_FIELD_REG_COST_v1_14 => reg_cost,
                  UCT_MD_ATTR_FIELD_COMPONENT_NAME_v1_14 => component_name,
                  UCT_MD_ATTR_FIELD_RKEY_PACKED_SIZE_v1_14 => rkey_packed_size,
                  UCT_MD_ATTR_FIELD_LOCAL_CPUS_v1_14 => local_cpus,
                  UCT_MD_ATTR_FIELD_EXPORTED_MKEY_PACKED_SIZE_v1_14 => exported_mkey_packed_size,
                  UCT_MD_ATTR_FIELD_GLOBAL_ID_v1_14 => global_id);
        }
        UCS_OK
    }
}

entry! {
    fn uct_md_mem_reg_v2(md: uct_md_h, address: *mut c_void, length: usize,
                         params: *const uct_md_mem_reg_params_t, memh_p: *mut uct_mem_h) -> ucs_status_t {
        since_release!(14, UCS_ERR_UNSUPPORTED);
        need!(params, "params");
        need!(memh_p, "memh_p");
        let m = md_or_fail!(md);
        let release = crate::ucs::release::running();
        // SAFETY: checked non-NULL: the caller's parameters, in its
        // release's layout (1.22 appended `mem_type`), copied for the call.
        let p = &unsafe { uct_md_mem_reg_params_t::read_in(params, release) };
        let mut known = UCT_MD_MEM_REG_FIELD_FLAGS | UCT_MD_MEM_REG_FIELD_DMABUF_FD
            | UCT_MD_MEM_REG_FIELD_DMABUF_OFFSET;
        if release.since(22) {
            known |= UCT_MD_MEM_REG_FIELD_MEM_TYPE;
        }
        known_fields!(p.field_mask, known, "mem reg params");
        if p.field_mask & UCT_MD_MEM_REG_FIELD_MEM_TYPE != 0 && p.mem_type != UCS_MEMORY_TYPE_HOST {
            crate::error!("{}: md {} registers host memory only (memory type {})", FN, m.name, p.mem_type);
            return UCS_ERR_UNSUPPORTED;
        }
        let flags = if p.field_mask & UCT_MD_MEM_REG_FIELD_FLAGS != 0 { p.flags } else { 0 };
        if p.field_mask & UCT_MD_MEM_REG_FIELD_DMABUF_FD != 0 && p.dmabuf_fd != UCT_DMABUF_FD_INVALID {
            crate::error!("{}: md {} cannot register a dmabuf", FN, m.name);
            return UCS_ERR_UNSUPPORTED;
        }
        super::md::mem_reg(FN, m, address, length, flags, memh_p)
    }
}

entry! {
    fn uct_md_mem_attach(md: uct_md_h, mkey_buffer: *const c_void, params: *mut uct_md_mem_attach_params_t,
                         memh_p: *mut uct_mem_h) -> ucs_status_t {
        since_release!(14, UCS_ERR_UNSUPPORTED);
        let _ = (mkey_buffer, params, memh_p);
        let m = md_or_fail!(md);
        // None of our memory domains exports memory keys (no md reports
        // UCT_MD_FLAG_EXPORTED_MKEY), so there is nothing to attach to.
        crate::debug!("{}: md {} has no exported memory keys", FN, m.name);
        UCS_ERR_UNSUPPORTED
    }
}

entry! {
    fn uct_ep_connect_to_ep_v2(ep: uct_ep_h, device_addr: *const uct_device_addr_t,
                               ep_addr: *const uct_ep_addr_t,
                               params: *const uct_ep_connect_to_ep_params_t) -> ucs_status_t {
        since_release!(14, UCS_ERR_UNSUPPORTED);
        need!(ep, "ep");
        // SAFETY: checked non-NULL (an endpoint begins with its interface).
        if let Some(status) = unsafe { stub_iface::status_of_ep(ep) } {
            return status;
        }
        if !params.is_null() {
            // SAFETY: checked non-NULL.
            let p = unsafe { &*params };
            known_fields!(p.field_mask, UCT_EP_CONNECT_TO_EP_PARAM_FIELD_DEVICE_ADDR_LENGTH
                          | UCT_EP_CONNECT_TO_EP_PARAM_FIELD_EP_ADDR_LENGTH, "connect_to_ep params");
        }
        // The lengths are a hint: our addresses carry their own length.
        // SAFETY: forwarding our own arguments to the v1 call.
        unsafe { super::ep::uct_ep_connect_to_ep(ep, device_addr, ep_addr) }
    }
}

entry! {
    fn uct_ep_is_connected(ep: uct_ep_h, params: *const uct_ep_is_connected_params_t) -> c_int {
        since_release!(16, 0);
        if ep.is_null() || params.is_null() {
            crate::error!("{}: ep and params must not be NULL", FN);
            return 0;
        }
        // SAFETY: checked non-NULL (an endpoint begins with its interface).
        if unsafe { stub_iface::status_of_ep(ep) }.is_some() {
            return 0;
        }
        // SAFETY: the UCT object model (an endpoint begins with its
        // interface pointer); the interface is looked up in the registry.
        let Some(hdr) = (unsafe { IfaceHeader::of_ep((*ep).iface) }) else {
            crate::error!("{}: endpoint {:p} does not belong to a live interface of this library", FN, ep);
            return 0;
        };
        // SAFETY: checked non-NULL.
        let p = unsafe { &*params };
        let pick = |bit: u64, ptr: *const c_void| if p.field_mask & bit != 0 { ptr } else { std::ptr::null() };
        let dev = pick(UCT_EP_IS_CONNECTED_FIELD_DEVICE_ADDR, p.device_addr as *const c_void);
        let addr = pick(UCT_EP_IS_CONNECTED_FIELD_IFACE_ADDR, p.iface_addr as *const c_void);
        let ep_addr = pick(UCT_EP_IS_CONNECTED_FIELD_EP_ADDR, p.ep_addr as *const c_void);
        // SAFETY: the interface is ours, so the endpoint is one of its own;
        // the addresses are the caller's, valid for the call.
        unsafe { (hdr.internal.ep_is_connected)(ep, dev as _, addr as _, ep_addr as _) as c_int }
    }
}

entry! {
    fn uct_rkey_compare(component: uct_component_h, rkey1: uct_rkey_t, rkey2: uct_rkey_t,
                        params: *const uct_rkey_compare_params_t, result: *mut c_int) -> ucs_status_t {
        since_release!(16, UCS_ERR_UNSUPPORTED);
        need!(params, "params");
        need!(result, "result");
        let _c = component_or_fail!(component);
        // SAFETY: checked non-NULL.
        let mask = unsafe { (*params).field_mask };
        known_fields!(mask, 0u64, "rkey compare params");
        // Every key of our components is a plain value (an address offset,
        // a segment id, 0): two keys are the same key when they are equal.
        let order = rkey1.cmp(&rkey2) as c_int;
        // SAFETY: checked non-NULL.
        unsafe { *result = order };
        UCS_OK
    }
}

// The device API of 1.20-1.22 (GPU-initiated transfers): none of our
// transports has a device-side endpoint or memory element, so every call
// answers `UCS_ERR_UNSUPPORTED` and no interface reports a device flag.

entry! {
    /// 1.20+: the device-side handle of an endpoint.
    fn uct_ep_get_device_ep(ep: uct_ep_h, device_ep_p: *mut *mut c_void) -> ucs_status_t {
        since_release!(20, UCS_ERR_UNSUPPORTED);
        need!(ep, "ep");
        need!(device_ep_p, "device_ep_p");
        // SAFETY: checked non-NULL (an endpoint begins with its interface).
        if let Some(status) = unsafe { stub_iface::status_of_ep(ep) } {
            return status;
        }
        crate::debug!("{}: no transport of this library has device endpoints", FN);
        UCS_ERR_UNSUPPORTED
    }
}

entry! {
    /// 1.20 only (1.21 moved it to the memory domain): a device memory
    /// element of a registration.
    fn uct_iface_mem_element_pack(iface: uct_iface_h, memh: uct_mem_h, rkey: uct_rkey_t,
                                  mem_element: *mut c_void) -> ucs_status_t {
        since_release!(20, UCS_ERR_UNSUPPORTED);
        let _ = (iface, memh, rkey, mem_element);
        crate::debug!("{}: no transport of this library has device memory elements", FN);
        UCS_ERR_UNSUPPORTED
    }
}

entry! {
    /// 1.21+: a device memory element of a registration.
    fn uct_md_mem_elem_pack(md: uct_md_h, memh: uct_mem_h, rkey: uct_rkey_t, mem_elem: *mut c_void)
                            -> ucs_status_t {
        since_release!(21, UCS_ERR_UNSUPPORTED);
        let _ = (memh, rkey, mem_elem);
        let m = md_or_fail!(md);
        crate::debug!("{}: md {} has no device memory elements", FN, m.name);
        UCS_ERR_UNSUPPORTED
    }
}

entry! {
    /// 1.22+: scatter-gather put of `count` strided lists. No interface of
    /// this library reports a scatter-gather put (its
    /// `max_put_sgl_zcopy_count` is 0), so there is nothing to post.
    fn uct_ep_put_sgl_zcopy(ep: uct_ep_h, buffers: *const *mut c_void, lengths: *const usize,
                            memhs: *const uct_mem_h, remote_addrs: *const u64, rkeys: *const uct_rkey_t,
                            counts: *const usize, strides: *const usize, count: usize,
                            comp: *mut uct_completion_t) -> ucs_status_t {
        since_release!(22, UCS_ERR_UNSUPPORTED);
        let _ = (buffers, lengths, memhs, remote_addrs, rkeys, counts, strides, count, comp);
        need!(ep, "ep");
        // SAFETY: checked non-NULL (an endpoint begins with its interface).
        if let Some(status) = unsafe { stub_iface::status_of_ep(ep) } {
            return status;
        }
        UCS_ERR_UNSUPPORTED
    }
}

entry! {
    /// 1.21+ (earlier releases export a form taking flags, outside their
    /// public headers): invalidate the remote access of an endpoint. None of
    /// our transports can take back a remote access key.
    fn uct_ep_invalidate(ep: uct_ep_h, params: *const uct_ep_invalidate_params_t) -> ucs_status_t {
        need!(ep, "ep");
        // SAFETY: checked non-NULL (an endpoint begins with its interface).
        if let Some(status) = unsafe { stub_iface::status_of_ep(ep) } {
            return status;
        }
        if crate::ucs::release::running().since(21) && !params.is_null() {
            // SAFETY: checked non-NULL: a 1.21+ caller's parameters.
            let mask = unsafe { (*params).field_mask };
            known_fields!(mask, 0u64, "ep invalidate params");
        }
        UCS_ERR_UNSUPPORTED
    }
}

entry! {
    /// Two unrelated forms: 1.20's (the size of a device memory element)
    /// and 1.22's (scatter-gather puts, capability flags, tokens). Our
    /// interfaces have none of these: each asked-for member is zero, as the
    /// C original's base query answers for transports without them.
    fn uct_iface_query_v2(iface: uct_iface_h, iface_attr: *mut uct_iface_attr_v2_t) -> ucs_status_t {
        let release = crate::ucs::release::running();
        if release.minor != 20 {
            since_release!(22, UCS_ERR_UNSUPPORTED);
        }
        need!(iface_attr, "iface_attr");
        if stub_iface::status_of(iface).is_none() {
            let _ = super::iface_or_fail!(iface);
        }
        if release.minor == 20 {
            let p = iface_attr as *mut uct_iface_attr_v2_t_v1_20;
            // SAFETY: checked non-NULL: the caller's 1.20 struct, whole.
            let a = unsafe { &mut *p };
            if a.field_mask & UCT_IFACE_ATTR_FIELD_DEVICE_MEM_ELEMENT_SIZE != 0 {
                a.device_mem_element_size = 0;
            }
            return UCS_OK;
        }
        // SAFETY: checked non-NULL: the caller's 1.22 struct, whole.
        let a = unsafe { &mut *iface_attr };
        let m = a.field_mask;
        let tokens = m & (UCT_IFACE_ATTR_FIELD_TX_TOKEN | UCT_IFACE_ATTR_FIELD_RX_TOKEN);
        if tokens != 0 && tokens != UCT_IFACE_ATTR_FIELD_TX_TOKEN | UCT_IFACE_ATTR_FIELD_RX_TOKEN {
            crate::error!("invalid field_mask: TX/RX token fields must be set together");
            return UCS_ERR_INVALID_PARAM;
        }
        if m & UCT_IFACE_ATTR_FIELD_CAP_FLAGS != 0 {
            a.cap.flags = 0;
        }
        if m & UCT_IFACE_ATTR_FIELD_MAX_PUT_SGL_ZCOPY_COUNT != 0 {
            a.max_put_sgl_zcopy_count = 0;
        }
        if tokens != 0 || m & UCT_IFACE_ATTR_FIELD_TX_TOKEN_LENGTH != 0 {
            a.tx_token_length = 0;
        }
        if tokens != 0 || m & UCT_IFACE_ATTR_FIELD_RX_TOKEN_LENGTH != 0 {
            a.rx_token_length = 0;
        }
        UCS_OK
    }
}

entry! {
    /// 1.19+: unpack a remote key, optionally naming the system device the
    /// memory is used from (a hint our keys do not need).
    fn uct_rkey_unpack_v2(component: uct_component_h, rkey_buffer: *const c_void,
                          params: *const uct_rkey_unpack_params_t, rkey_ob: *mut uct_rkey_bundle_t)
                          -> ucs_status_t {
        since_release!(19, UCS_ERR_UNSUPPORTED);
        need!(params, "params");
        // SAFETY: checked non-NULL.
        let mask = unsafe { (*params).field_mask };
        known_fields!(mask, UCT_RKEY_UNPACK_FIELD_SYS_DEVICE, "rkey unpack params");
        // SAFETY: forwarding our own arguments to the v1 call.
        unsafe { super::md::uct_rkey_unpack(component, rkey_buffer, rkey_ob) }
    }
}

entry! {
    /// 1.22+: what memory a range is, in the v2 layout.
    fn uct_md_mem_query_v2(md: uct_md_h, address: *const c_void, length: usize,
                           mem_attr: *mut uct_md_mem_attr_v2_t) -> ucs_status_t {
        since_release!(22, UCS_ERR_UNSUPPORTED);
        need!(mem_attr, "mem_attr");
        let m = md_or_fail!(md);
        if address.is_null() || length == 0 {
            crate::error!("{}: invalid range address={:p} length={}", FN, address, length);
            return UCS_ERR_INVALID_PARAM;
        }
        // SAFETY: checked non-NULL: the caller's 1.22 struct, whole.
        let out = unsafe { &mut *mem_attr };
        let want = out.field_mask;
        known_fields!(want, (UCT_MD_MEM_ATTR_V2_FIELD_MEM_FLAGS << 1) - 1, "mem attr v2");
        let mut v1 = uct_md_mem_attr_t {
            field_mask: UCT_MD_MEM_ATTR_FIELD_MEM_TYPE | UCT_MD_MEM_ATTR_FIELD_SYS_DEV
                | UCT_MD_MEM_ATTR_FIELD_BASE_ADDRESS | UCT_MD_MEM_ATTR_FIELD_ALLOC_LENGTH,
            ..Default::default()
        };
        let status = m.imp.mem_query(address, length, &mut v1);
        if status != UCS_OK {
            return status;
        }
        let has = |bit: u64| want & bit != 0;
        if has(UCT_MD_MEM_ATTR_V2_FIELD_MEM_TYPE) {
            out.mem_type = v1.mem_type;
        }
        if has(UCT_MD_MEM_ATTR_V2_FIELD_SYS_DEV) {
            out.sys_dev = v1.sys_dev;
        }
        if has(UCT_MD_MEM_ATTR_V2_FIELD_BASE_ADDRESS) {
            out.base_address = v1.base_address;
        }
        if has(UCT_MD_MEM_ATTR_V2_FIELD_ALLOC_LENGTH) {
            out.alloc_length = v1.alloc_length;
        }
        if has(UCT_MD_MEM_ATTR_V2_FIELD_DMABUF_FD) {
            out.dmabuf_fd = UCT_DMABUF_FD_INVALID;
        }
        if has(UCT_MD_MEM_ATTR_V2_FIELD_DMABUF_OFFSET) {
            out.dmabuf_offset = 0;
        }
        if has(UCT_MD_MEM_ATTR_V2_FIELD_MEM_FLAGS) {
            out.mem_flags = 0;
        }
        UCS_OK
    }
}
