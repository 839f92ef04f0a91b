//! Exports that UCX releases from 1.14 on added to the API (1.14: the v2 memory
//! domain calls and `uct_ep_connect_to_ep_v2`; 1.16: `uct_ep_is_connected`
//! and `uct_rkey_compare`). Every build exports all of them; each answers
//! `UCS_ERR_UNSUPPORTED` to a process whose release does not have it, and
//! reaches the same core objects as the 1.13 calls otherwise.

use super::{component_or_fail, entry, known_fields, md_or_fail, need, since_release};
use crate::abi::*;
use crate::core::iface::IfaceHeader;
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
    a.reg_alignment = 1;
    a
}

entry! {
    fn uct_md_query_v2(md: uct_md_h, md_attr: *mut uct_md_attr_v2_t) -> ucs_status_t {
        since_release!(14, UCS_ERR_UNSUPPORTED);
        need!(md_attr, "md_attr");
        let m = md_or_fail!(md);
        let full = md_attr_v2(m);
        // SAFETY: checked non-NULL; the caller's struct of this release.
        let out = unsafe { &mut *md_attr };
        let want = out.field_mask;
        macro_rules! copy {
            ($($bit:ident => $f:ident),* $(,)?) => {
                $( if want & $bit != 0 { out.$f = full.$f; } )*
            };
        }
        copy!(UCT_MD_ATTR_FIELD_MAX_ALLOC => max_alloc, UCT_MD_ATTR_FIELD_MAX_REG => max_reg,
              UCT_MD_ATTR_FIELD_FLAGS => flags, UCT_MD_ATTR_FIELD_REG_MEM_TYPES => reg_mem_types,
              UCT_MD_ATTR_FIELD_REG_NONBLOCK_MEM_TYPES => reg_nonblock_mem_types,
              UCT_MD_ATTR_FIELD_CACHE_MEM_TYPES => cache_mem_types,
              UCT_MD_ATTR_FIELD_DETECT_MEM_TYPES => detect_mem_types,
              UCT_MD_ATTR_FIELD_ALLOC_MEM_TYPES => alloc_mem_types,
              UCT_MD_ATTR_FIELD_ACCESS_MEM_TYPES => access_mem_types,
              UCT_MD_ATTR_FIELD_DMABUF_MEM_TYPES => dmabuf_mem_types,
              UCT_MD_ATTR_FIELD_REG_COST => reg_cost, UCT_MD_ATTR_FIELD_COMPONENT_NAME => component_name,
              UCT_MD_ATTR_FIELD_RKEY_PACKED_SIZE => rkey_packed_size, UCT_MD_ATTR_FIELD_LOCAL_CPUS => local_cpus,
              UCT_MD_ATTR_FIELD_EXPORTED_MKEY_PACKED_SIZE => exported_mkey_packed_size,
              UCT_MD_ATTR_FIELD_GLOBAL_ID => global_id);
        copy!(UCT_MD_ATTR_FIELD_REG_ALIGNMENT => reg_alignment);
        copy!(UCT_MD_ATTR_FIELD_GVA_MEM_TYPES => gva_mem_types);
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
        // SAFETY: checked non-NULL.
        let p = unsafe { &*params };
        known_fields!(p.field_mask, UCT_MD_MEM_REG_FIELD_FLAGS | UCT_MD_MEM_REG_FIELD_DMABUF_FD
                      | UCT_MD_MEM_REG_FIELD_DMABUF_OFFSET, "mem reg params");
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
        UCS_ERR_UNSUPPORTED
    }
}
