//! Memory registration, keys and memory queries of a memory domain.

use super::{component_or_fail, entry, known_fields, md_or_fail, need};
use crate::abi::layout_sizes::ReleaseSized;
use crate::abi::*;
use crate::core::handles::Completion;
use crate::core::registry::{self, Kind};
use libc::{c_char, c_int, c_uint, c_void};

/// The registry kind of the remote-key handles a component unpacks.
fn rkey_kind(component: uct_component_h) -> Kind {
    Kind::Rkey(component as usize)
}

/// The registration shared by `uct_md_mem_reg` and (1.14+)
/// `uct_md_mem_reg_v2`: the argument checks of the release, then the md.
/// Up to 1.14 a registration must ask for some access (a
/// `UCT_MD_MEM_ACCESS_*` flag); from 1.15 no flag is needed. A NULL address
/// is refused in every release (UCX 1.18 hands it to the md unchecked).
pub(super) fn mem_reg(fname: &str, m: &crate::core::md::MdObj, address: *mut c_void, length: usize, flags: u64,
                      memh_p: *mut uct_mem_h) -> ucs_status_t {
    if length == 0 || address.is_null() {
        crate::error!("uct_md_mem_reg(address={:p} length={}): invalid parameters", address, length);
        return UCS_ERR_INVALID_PARAM;
    }
    if crate::core::release::access_flag_required() && flags & UCT_MD_MEM_ACCESS_ALL as u64 == 0 {
        crate::error!("uct_md_mem_reg(flags={:#x}): invalid flags", flags);
        return UCS_ERR_INVALID_PARAM;
    }
    let Ok(flags) = u32::try_from(flags) else {
        crate::error!("{}: flags {:#x} has unknown bits", fname, flags);
        return UCS_ERR_INVALID_PARAM;
    };
    match m.imp.mem_reg(address, length, flags) {
        Ok(h) => {
            // SAFETY: the callers checked the out-pointer.
            unsafe { *memh_p = h };
            UCS_OK
        }
        Err(s) => s,
    }
}

entry! {
    fn uct_md_mem_reg(md: uct_md_h, address: *mut c_void, length: usize, flags: c_uint,
                      memh_p: *mut uct_mem_h) -> ucs_status_t {
        need!(memh_p, "memh_p");
        let m = md_or_fail!(md);
        mem_reg(FN, m, address, length, flags as u64, memh_p)
    }
}

entry! {
    fn uct_md_mem_dereg(md: uct_md_h, memh: uct_mem_h) -> ucs_status_t {
        let m = md_or_fail!(md);
        m.imp.mem_dereg(memh, 0, Completion::none())
    }
}

entry! {
    fn uct_md_mem_dereg_v2(md: uct_md_h, params: *const uct_md_mem_dereg_params_t) -> ucs_status_t {
        need!(params, "params");
        let m = md_or_fail!(md);
        // SAFETY: checked non-NULL.
        let p = unsafe { &*params };
        known_fields!(p.field_mask, UCT_MD_MEM_DEREG_FIELD_MEMH | UCT_MD_MEM_DEREG_FIELD_FLAGS
                      | UCT_MD_MEM_DEREG_FIELD_COMPLETION, "dereg params");
        if p.field_mask & UCT_MD_MEM_DEREG_FIELD_MEMH == 0 {
            crate::error!("{}: the memory handle field is missing", FN);
            return UCS_ERR_INVALID_PARAM;
        }
        let flags = if p.field_mask & UCT_MD_MEM_DEREG_FIELD_FLAGS != 0 { p.flags } else { 0 };
        let comp = if p.field_mask & UCT_MD_MEM_DEREG_FIELD_COMPLETION != 0 { p.comp } else { std::ptr::null_mut() };
        if flags & UCT_MD_MEM_DEREG_FLAG_INVALIDATE != 0 {
            // SAFETY: all-zero is a valid uct_md_attr_t.
            let mut attr: uct_md_attr_t = unsafe { std::mem::zeroed() };
            m.query(&mut attr);
            if attr.cap.flags & UCT_MD_FLAG_INVALIDATE == 0 {
                crate::error!("{}: md {} does not support invalidation", FN, m.name);
                return UCS_ERR_UNSUPPORTED;
            }
            if comp.is_null() {
                crate::error!("{}: invalidation needs a completion", FN);
                return UCS_ERR_INVALID_PARAM;
            }
        }
        // SAFETY: the caller keeps its completion alive until it completes.
        m.imp.mem_dereg(p.memh, flags, unsafe { Completion::from_raw(comp) })
    }
}

entry! {
    fn uct_md_mem_advise(md: uct_md_h, memh: uct_mem_h, addr: *mut c_void, length: usize,
                         advice: c_uint) -> ucs_status_t {
        let m = md_or_fail!(md);
        if length == 0 || addr.is_null() {
            return UCS_ERR_INVALID_PARAM;
        }
        m.imp.mem_advise(memh, addr, length, advice)
    }
}

entry! {
    fn uct_md_mem_query(md: uct_md_h, address: *const c_void, length: usize,
                        mem_attr: *mut uct_md_mem_attr_t) -> ucs_status_t {
        need!(mem_attr, "mem_attr");
        let m = md_or_fail!(md);
        if address.is_null() || length == 0 {
            crate::error!("{}: invalid range address={:p} length={}", FN, address, length);
            return UCS_ERR_INVALID_PARAM;
        }
        let release = crate::ucs::release::running();
        // SAFETY: checked non-NULL: the caller's struct, in its release's
        // layout, copied in and (what the release has of it) out again.
        let mut attr = unsafe { uct_md_mem_attr_t::read_in(mem_attr, release) };
        known_fields!(attr.field_mask, crate::core::release::mem_attr_fields(), "mem attr");
        let status = m.imp.mem_query(address, length, &mut attr);
        if status == UCS_OK {
            crate::core::release::mem_attr_fill_extra(&mut attr);
        }
        // SAFETY: as above.
        unsafe { attr.write_in(mem_attr, release) };
        status
    }
}

entry! {
    /// Two forms: up to 1.15 `(md, memh, params, rkey_buffer)`; 1.16 put
    /// the range of the memory to pack a key for (a hint; our keys cover
    /// the whole registration) before `params`. One export serves both: the
    /// arguments are integer-class, passed in registers in order, so a
    /// caller of the older form leaves its `params` and `rkey_buffer` where
    /// this signature reads `address` and `length`.
    fn uct_md_mkey_pack_v2(md: uct_md_h, memh: uct_mem_h, address: *mut c_void, length: usize,
                           params: *const uct_md_mkey_pack_params_t, rkey_buffer: *mut c_void) -> ucs_status_t {
        if crate::ucs::release::running().since(16) {
            let _ = (address, length);
            mkey_pack(md, memh, params, rkey_buffer)
        } else {
            mkey_pack(md, memh, address as *const uct_md_mkey_pack_params_t, length as *mut c_void)
        }
    }
}

/// Key packing flags in the newest numbering: up to 1.14 bit 0 asked for
/// a key that can be invalidated (1.15 split it into RMA and AMO), and
/// 1.14's export bit was bit 1 (bit 2 from 1.15).
fn pack_flags(flags: u32) -> u32 {
    let release = crate::ucs::release::running();
    if release.since(15) {
        return flags;
    }
    let mut out = 0;
    if flags & UCT_MD_MKEY_PACK_FLAG_INVALIDATE != 0 {
        out |= UCT_MD_MKEY_PACK_FLAG_INVALIDATE_RMA | UCT_MD_MKEY_PACK_FLAG_INVALIDATE_AMO;
    }
    if release.since(14) && flags & UCT_MD_MKEY_PACK_FLAG_EXPORT_v1_14 != 0 {
        out |= UCT_MD_MKEY_PACK_FLAG_EXPORT;
    }
    // Bits the release does not define stay, for the md to refuse.
    out | (flags & !(UCT_MD_MKEY_PACK_FLAG_INVALIDATE | UCT_MD_MKEY_PACK_FLAG_EXPORT_v1_14))
}

/// The key packing of both forms of `uct_md_mkey_pack_v2` and of
/// `uct_md_mkey_pack`; `params` is NULL or the caller's struct.
fn mkey_pack(md: uct_md_h, memh: uct_mem_h, params: *const uct_md_mkey_pack_params_t,
             rkey_buffer: *mut c_void) -> ucs_status_t {
    const FN: &str = "uct_md_mkey_pack";
    {
        need!(memh, "memh");
        need!(rkey_buffer, "rkey_buffer");
        let m = md_or_fail!(md);
        let flags = if params.is_null() {
            0
        } else {
            // SAFETY: checked non-NULL.
            let p = unsafe { &*params };
            known_fields!(p.field_mask, UCT_MD_MKEY_PACK_FIELD_FLAGS, "mkey pack params");
            if p.field_mask & UCT_MD_MKEY_PACK_FIELD_FLAGS != 0 { pack_flags(p.flags) } else { 0 }
        };
        m.imp.mkey_pack(memh, flags, rkey_buffer as *mut u8)
    }
}

entry! {
    fn uct_md_mkey_pack(md: uct_md_h, memh: uct_mem_h, rkey_buffer: *mut c_void) -> ucs_status_t {
        // NULL params means no flags.
        mkey_pack(md, memh, std::ptr::null(), rkey_buffer)
    }
}

entry! {
    fn uct_rkey_unpack(component: uct_component_h, rkey_buffer: *const c_void,
                       rkey_ob: *mut uct_rkey_bundle_t) -> ucs_status_t {
        need!(rkey_ob, "rkey_ob");
        let c = component_or_fail!(component);
        match (c.rkey_unpack)(rkey_buffer as *const u8) {
            Ok((rkey, handle)) => {
                // A handle is what the component allocated for the key
                // (a mapping, an attachment); keys without one (NULL) hold
                // nothing to release.
                registry::register(handle, rkey_kind(component));
                // SAFETY: checked non-NULL.
                let b = unsafe { &mut *rkey_ob };
                b.rkey = rkey;
                b.handle = handle;
                UCS_OK
            }
            Err(s) => s,
        }
    }
}

entry! {
    fn uct_rkey_ptr(component: uct_component_h, rkey_ob: *mut uct_rkey_bundle_t, remote_addr: u64,
                    addr_p: *mut *mut c_void) -> ucs_status_t {
        need!(rkey_ob, "rkey_ob");
        need!(addr_p, "addr_p");
        let c = component_or_fail!(component);
        // SAFETY: checked non-NULL; the bundle itself is the caller's.
        let b = unsafe { &*rkey_ob };
        if !b.handle.is_null() && !registry::is(b.handle, rkey_kind(component)) {
            crate::error!("{}: rkey handle {:p} {}", FN, b.handle, registry::why_not(b.handle, rkey_kind(component)));
            return UCS_ERR_INVALID_PARAM;
        }
        match (c.rkey_ptr)(b.rkey, b.handle, remote_addr) {
            Ok(p) => {
                // SAFETY: checked non-NULL.
                unsafe { *addr_p = p };
                UCS_OK
            }
            Err(s) => s,
        }
    }
}

entry! {
    fn uct_rkey_release(component: uct_component_h, rkey_ob: *const uct_rkey_bundle_t) -> ucs_status_t {
        need!(rkey_ob, "rkey_ob");
        let c = component_or_fail!(component);
        // SAFETY: checked non-NULL; the bundle itself is the caller's.
        let b = unsafe { &*rkey_ob };
        // Taken out first: of two releases of one key, one reaches the
        // component.
        if !b.handle.is_null() && !registry::take(b.handle, rkey_kind(component)) {
            crate::error!("{}: rkey handle {:p} {}", FN, b.handle, registry::why_not(b.handle, rkey_kind(component)));
            return UCS_ERR_INVALID_PARAM;
        }
        (c.rkey_release)(b.rkey, b.handle)
    }
}

entry! {
    fn uct_md_detect_memory_type(md: uct_md_h, addr: *const c_void, length: usize,
                                 mem_type_p: *mut ucs_memory_type_t) -> ucs_status_t {
        need!(mem_type_p, "mem_type_p");
        let m = md_or_fail!(md);
        match m.imp.detect_memory_type(addr, length) {
            Ok(t) => {
                // SAFETY: checked non-NULL.
                unsafe { *mem_type_p = t };
                UCS_OK
            }
            Err(s) => s,
        }
    }
}

entry! {
    fn uct_md_is_sockaddr_accessible(md: uct_md_h, sockaddr: *const ucs_sock_addr_t,
                                     mode: uct_sockaddr_accessibility_t) -> c_int {
        let m = md_or_fail!(md, 0);
        if sockaddr.is_null() {
            return 0;
        }
        // SAFETY: checked non-NULL.
        let s = unsafe { &*sockaddr };
        m.imp.is_sockaddr_accessible(s.addr, s.addrlen, mode) as c_int
    }
}

entry! {
    /// The v1.8 seed's md allocation entry point (host memory).
    fn uct_md_mem_alloc(md: uct_md_h, length_p: *mut usize, address_p: *mut *mut c_void, flags: c_uint,
                        alloc_name: *const c_char, memh_p: *mut uct_mem_h) -> ucs_status_t {
        need!(length_p, "length_p");
        need!(address_p, "address_p");
        need!(memh_p, "memh_p");
        let m = md_or_fail!(md);
        // SAFETY: checked non-NULL.
        let (len, addr) = unsafe { (&mut *length_p, &mut *address_p) };
        if *len == 0 {
            return UCS_ERR_INVALID_PARAM;
        }
        // SAFETY: NULL or a C string.
        let name = unsafe { super::opt_str(alloc_name) }.unwrap_or("anonymous");
        match m.imp.mem_alloc(len, addr, UCS_MEMORY_TYPE_HOST, flags, name) {
            Ok(h) => {
                // SAFETY: checked non-NULL.
                unsafe { *memh_p = h };
                UCS_OK
            }
            Err(s) => s,
        }
    }
}

entry! {
    /// The v1.8 seed's counterpart of `uct_md_mem_alloc`.
    fn uct_md_mem_free(md: uct_md_h, memh: uct_mem_h) -> ucs_status_t {
        let m = md_or_fail!(md);
        m.imp.mem_free(memh)
    }
}
