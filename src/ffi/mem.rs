//! `uct_mem_alloc`/`uct_mem_free` and the interface allocation helpers.

use super::{entry, iface_or_fail, known_fields, need, opt_str};
use crate::abi::layout_sizes::ReleaseSized;
use crate::abi::*;
use crate::core::md::MdObj;
use crate::core::mem::{self, AllocRequest, Allocated};
use libc::{c_char, c_uint};

/// Write an allocation to the caller's struct, in its release's layout
/// (1.19 appended `sys_device`: an older caller's struct is shorter).
///
/// # Safety
/// `mem` points to a writable `uct_allocated_memory_t` of the running
/// release.
unsafe fn fill(mem: *mut uct_allocated_memory_t, a: Allocated) {
    let out = a.record();
    // SAFETY: see the function contract.
    unsafe { out.write_in(mem, crate::ucs::release::running()) };
}

/// The caller's allocation record, read in its release's layout.
///
/// # Safety
/// `mem` points to a readable `uct_allocated_memory_t` of the running
/// release.
unsafe fn record(mem: *const uct_allocated_memory_t) -> uct_allocated_memory_t {
    // SAFETY: see the function contract.
    unsafe { uct_allocated_memory_t::read_in(mem, crate::ucs::release::running()) }
}

entry! {
    fn uct_mem_alloc(length: usize, methods: *const uct_alloc_method_t, num_methods: c_uint,
                     params: *const uct_mem_alloc_params_t, mem: *mut uct_allocated_memory_t) -> ucs_status_t {
        need!(params, "params");
        need!(mem, "mem");
        if num_methods > 0 {
            need!(methods, "methods");
        }
        // SAFETY: checked non-NULL: the caller's parameters, in its
        // release's layout (1.19 appended `sys_device`), copied for the call.
        let p = &unsafe { uct_mem_alloc_params_t::read_in(params, crate::ucs::release::running()) };
        let mut known = UCT_MEM_ALLOC_PARAM_FIELD_FLAGS | UCT_MEM_ALLOC_PARAM_FIELD_ADDRESS
            | UCT_MEM_ALLOC_PARAM_FIELD_MEM_TYPE | UCT_MEM_ALLOC_PARAM_FIELD_MDS | UCT_MEM_ALLOC_PARAM_FIELD_NAME;
        if crate::ucs::release::running().since(19) {
            // The system device to allocate near (a hint: host memory only).
            known |= UCT_MEM_ALLOC_PARAM_FIELD_SYS_DEVICE;
        }
        known_fields!(p.field_mask, known, "mem alloc params");
        let has = |f: u64| p.field_mask & f != 0;
        let flags = if has(UCT_MEM_ALLOC_PARAM_FIELD_FLAGS) {
            if crate::core::release::access_flag_required() && p.flags & UCT_MD_MEM_ACCESS_ALL == 0 {
                crate::error!("{}: flags {:#x} grant no access", FN, p.flags);
                return UCS_ERR_INVALID_PARAM;
            }
            p.flags
        } else {
            UCT_MD_MEM_ACCESS_LOCAL_READ | UCT_MD_MEM_ACCESS_LOCAL_WRITE
        };
        let address = if has(UCT_MEM_ALLOC_PARAM_FIELD_ADDRESS) { p.address } else { std::ptr::null_mut() };
        if flags & UCT_MD_MEM_FLAG_FIXED != 0 {
            // SAFETY: sysconf has no preconditions.
            let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(1) as usize;
            if address.is_null() || (address as usize) % page != 0 {
                crate::error!("{}: UCT_MD_MEM_FLAG_FIXED needs a page-aligned address", FN);
                return UCS_ERR_INVALID_PARAM;
            }
        }
        if length == 0 {
            crate::error!("{}: the length to allocate is zero", FN);
            return UCS_ERR_INVALID_PARAM;
        }
        let mem_type = if has(UCT_MEM_ALLOC_PARAM_FIELD_MEM_TYPE) { p.mem_type } else { UCS_MEMORY_TYPE_HOST };
        if mem_type >= memory_type_last(crate::ucs::release::running()) {
            crate::error!("{}: invalid memory type {}", FN, mem_type);
            return UCS_ERR_INVALID_PARAM;
        }
        let mds: &[uct_md_h] = if has(UCT_MEM_ALLOC_PARAM_FIELD_MDS) && !p.mds.mds.is_null() {
            // SAFETY: the caller lists `count` md handles.
            unsafe { std::slice::from_raw_parts(p.mds.mds, p.mds.count as usize) }
        } else {
            &[]
        };
        let name = if has(UCT_MEM_ALLOC_PARAM_FIELD_NAME) {
            // SAFETY: NULL or a C string.
            unsafe { opt_str(p.name) }.unwrap_or("anonymous-uct_mem_alloc")
        } else {
            "anonymous-uct_mem_alloc"
        };
        let methods: &[uct_alloc_method_t] = if num_methods == 0 {
            &[]
        } else {
            // SAFETY: checked non-NULL; the caller lists `num_methods` values.
            unsafe { std::slice::from_raw_parts(methods, num_methods as usize) }
        };
        let req = AllocRequest { length, flags, address, mem_type, mds, name };
        match mem::alloc(methods, &req) {
            Ok(a) => {
                // SAFETY: checked non-NULL.
                unsafe { fill(mem, a) };
                UCS_OK
            }
            Err(s) => s,
        }
    }
}

entry! {
    fn uct_mem_free(mem: *const uct_allocated_memory_t) -> ucs_status_t {
        need!(mem, "mem");
        // SAFETY: checked non-NULL.
        mem::free(&unsafe { record(mem) })
    }
}

entry! {
    fn uct_iface_mem_alloc(iface: uct_iface_h, length: usize, flags: c_uint, name: *const c_char,
                           mem: *mut uct_allocated_memory_t) -> ucs_status_t {
        need!(mem, "mem");
        let hdr = iface_or_fail!(iface);
        if length == 0 {
            return UCS_ERR_INVALID_PARAM;
        }
        let md = hdr.md();
        // SAFETY: all-zero is a valid uct_md_attr_t.
        let mut attr: uct_md_attr_t = unsafe { std::mem::zeroed() };
        md.query(&mut attr);
        let can_reg = attr.cap.flags & UCT_MD_FLAG_REG != 0;
        let needs_memh = attr.cap.flags & (UCT_MD_FLAG_NEED_MEMH | UCT_MD_FLAG_NEED_RKEY) != 0;
        let methods: Vec<uct_alloc_method_t> = if !can_reg && !needs_memh
            && crate::core::release::iface_alloc_by_need()
        {
            hdr.alloc_methods.clone()
        } else if !can_reg {
            if hdr.alloc_methods.contains(&UCT_ALLOC_METHOD_MD) {
                vec![UCT_ALLOC_METHOD_MD]
            } else {
                crate::error!("{}: md {} cannot register and md allocation is not allowed", FN, md.name);
                return UCS_ERR_NO_MEMORY;
            }
        } else {
            hdr.alloc_methods.clone()
        };
        // SAFETY: NULL or a C string.
        let name = unsafe { opt_str(name) }.unwrap_or("anonymous");
        let mdh = [md.handle()];
        let req = AllocRequest { length, flags: UCT_MD_MEM_ACCESS_ALL, address: std::ptr::null_mut(),
                                 mem_type: UCS_MEMORY_TYPE_HOST, mds: &mdh, name };
        let mut a = match mem::alloc(&methods, &req) {
            Ok(a) => a,
            Err(s) => return s,
        };
        if a.method != UCT_ALLOC_METHOD_MD {
            if can_reg && attr.cap.reg_mem_types & (1u64 << a.mem_type) != 0 {
                match md.imp.mem_reg(a.address, a.length, flags) {
                    Ok(h) => a.memh = h,
                    Err(s) => {
                        let tmp = Allocated { ..a };
                        // SAFETY: checked non-NULL.
                        unsafe { fill(mem, tmp) };
                        // SAFETY: as above; undo the allocation.
                        mem::free(&unsafe { record(mem) });
                        return s;
                    }
                }
            } else {
                a.memh = std::ptr::null_mut();
            }
            a.md = md.handle();
        }
        // SAFETY: checked non-NULL.
        unsafe { fill(mem, a) };
        UCS_OK
    }
}

entry! {
    fn uct_iface_mem_free(mem: *const uct_allocated_memory_t) {
        if mem.is_null() {
            crate::error!("{}: mem must not be NULL", FN);
            return;
        }
        // SAFETY: checked non-NULL.
        let m = &unsafe { record(mem) };
        if m.method != UCT_ALLOC_METHOD_MD && !m.memh.is_null() {
            // SAFETY: looked up in the registry; the caller keeps the md
            // open until its memory is freed.
            match unsafe { MdObj::from_handle(m.md) } {
                Some(md) => {
                    let _ = md.imp.mem_dereg(m.memh, 0, crate::core::handles::Completion::none());
                }
                None => crate::error!("{}: md {:p} {}; its registration of {:p} is not released", FN, m.md,
                                      crate::core::registry::why_not(m.md, crate::core::registry::Kind::Md),
                                      m.address),
            }
        }
        let _ = mem::free(m);
    }
}
