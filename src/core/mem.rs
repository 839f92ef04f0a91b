//! `uct_mem_alloc`/`uct_mem_free`: the allocation methods (thp, md, heap,
//! mmap, huge), tried in the caller's order. This module maps memory, so it
//! is one of the places allowed to be unsafe.

use crate::abi::*;
use crate::core::md::MdObj;
use libc::c_void;

/// An array of C string pointers that can live in a `static`.
#[repr(transparent)]
pub struct Names<const N: usize>(pub [*const std::ffi::c_char; N]);
// SAFETY: the pointers are to immutable 'static string literals.
unsafe impl<const N: usize> Sync for Names<N> {}

/// Names of `uct_alloc_method_t` in enum order, NULL-terminated, as the
/// exported `uct_alloc_method_names` and the `ALLOC` config parser use them.
pub const ALLOC_METHOD_NAMES: Names<6> = Names([
    c"thp".as_ptr(),
    c"md".as_ptr(),
    c"heap".as_ptr(),
    c"mmap".as_ptr(),
    c"huge".as_ptr(),
    std::ptr::null(),
]);

static PARSER_ALLOC_METHOD_NAMES: Names<6> = ALLOC_METHOD_NAMES;

/// The NULL-terminated name array for the config parser of alloc methods.
pub fn alloc_method_names_ptr() -> *const *const std::ffi::c_char {
    PARSER_ALLOC_METHOD_NAMES.0.as_ptr()
}

const CACHE_LINE: usize = 64;

fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 { p as usize } else { 4096 }
}

fn huge_page_size() -> Option<usize> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("Hugepagesize:"))?;
    let kb: usize = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

fn thp_enabled() -> bool {
    std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled")
        .map(|s| s.contains("[always]") || s.contains("[madvise]"))
        .unwrap_or(false)
}

fn align_up(v: usize, a: usize) -> usize {
    v.div_ceil(a) * a
}

/// What a successful allocation produced.
pub struct Allocated {
    pub address: *mut c_void,
    pub length: usize,
    pub method: uct_alloc_method_t,
    pub md: uct_md_h,
    pub memh: uct_mem_h,
    pub mem_type: ucs_memory_type_t,
}

impl Allocated {
    /// The record `uct_mem_free` (and [`free`]) takes back.
    pub fn record(&self) -> uct_allocated_memory_t {
        uct_allocated_memory_t { address: self.address, length: self.length, method: self.method,
                                 mem_type: self.mem_type, md: self.md, memh: self.memh,
                                 sys_device: UCS_SYS_DEVICE_ID_UNKNOWN }
    }
}

pub struct AllocRequest<'a> {
    pub length: usize,
    pub flags: u32,
    pub address: *mut c_void,
    pub mem_type: ucs_memory_type_t,
    pub mds: &'a [uct_md_h],
    pub name: &'a str,
}

/// Try the methods in order; the first that succeeds wins.
pub fn alloc(methods: &[uct_alloc_method_t], req: &AllocRequest<'_>) -> Result<Allocated, ucs_status_t> {
    let fixed = req.flags & UCT_MD_MEM_FLAG_FIXED != 0;
    let host = req.mem_type == UCS_MEMORY_TYPE_HOST;
    for &method in methods {
        match method {
            UCT_ALLOC_METHOD_MD => {
                for &mdh in req.mds {
                    // SAFETY: md handles come from the caller; ours pass the
                    // magic test, anything else is skipped.
                    let Some(md) = (unsafe { MdObj::from_handle(mdh) }) else { continue };
                    // SAFETY: all-zero is a valid uct_md_attr_t.
                    let mut attr: uct_md_attr_t = unsafe { std::mem::zeroed() };
                    md.query(&mut attr);
                    if attr.cap.flags & UCT_MD_FLAG_ALLOC == 0
                        || (fixed && attr.cap.flags & UCT_MD_FLAG_FIXED == 0)
                        || attr.cap.alloc_mem_types & (1u64 << req.mem_type) == 0
                    {
                        continue;
                    }
                    let mut length = req.length;
                    let mut address = req.address;
                    let memh = md.imp.mem_alloc(&mut length, &mut address, req.mem_type, req.flags, req.name)
                        .inspect_err(|s| crate::error!("failed to allocate {} bytes using md {} for {}: {}",
                            req.length, md.component.name, req.name, crate::core::log::status_str(*s)))?;
                    return Ok(Allocated { address, length, method, md: mdh, memh, mem_type: req.mem_type });
                }
                if !host {
                    return Err(UCS_ERR_UNSUPPORTED);
                }
            }
            UCT_ALLOC_METHOD_THP if host && !fixed && thp_enabled() => {
                let Some(hps) = huge_page_size() else { continue };
                let length = align_up(req.length, hps);
                if length >= 2 * req.length {
                    continue;
                }
                let mut p: *mut c_void = std::ptr::null_mut();
                // SAFETY: posix_memalign writes a fresh allocation to `p`.
                if unsafe { libc::posix_memalign(&mut p, hps, length) } != 0 {
                    continue;
                }
                // SAFETY: `p` is our allocation of `length` bytes.
                if unsafe { libc::madvise(p, length, libc::MADV_HUGEPAGE) } != 0 {
                    // SAFETY: freeing what we just allocated.
                    unsafe { libc::free(p) };
                    continue;
                }
                return Ok(host_block(p, length, method));
            }
            UCT_ALLOC_METHOD_HEAP if host && !fixed => {
                let mut p: *mut c_void = std::ptr::null_mut();
                // SAFETY: as above.
                if unsafe { libc::posix_memalign(&mut p, CACHE_LINE, req.length) } == 0 {
                    return Ok(host_block(p, req.length, method));
                }
            }
            UCT_ALLOC_METHOD_MMAP if host => {
                let length = align_up(req.length, page_size());
                let mut flags = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS;
                if fixed {
                    flags |= libc::MAP_FIXED;
                }
                if req.flags & UCT_MD_MEM_FLAG_LOCK != 0 {
                    flags |= libc::MAP_LOCKED;
                }
                // SAFETY: anonymous mapping; with FIXED the caller asked for
                // that exact (page-aligned, checked) address.
                let p = unsafe {
                    libc::mmap(if fixed { req.address } else { std::ptr::null_mut() }, length,
                               libc::PROT_READ | libc::PROT_WRITE, flags, -1, 0)
                };
                if p != libc::MAP_FAILED {
                    return Ok(host_block(p, length, method));
                }
            }
            UCT_ALLOC_METHOD_HUGE if host => {
                let Some(hps) = huge_page_size() else { continue };
                let length = align_up(req.length, hps);
                // SAFETY: a private SysV segment, attached then marked for
                // removal so it disappears with its last detach.
                unsafe {
                    let id = libc::shmget(libc::IPC_PRIVATE, length, libc::IPC_CREAT | libc::SHM_HUGETLB | 0o600);
                    if id < 0 {
                        continue;
                    }
                    let at = if fixed { req.address } else { std::ptr::null_mut() };
                    let p = libc::shmat(id, at, 0);
                    libc::shmctl(id, libc::IPC_RMID, std::ptr::null_mut());
                    if p as isize == -1 {
                        continue;
                    }
                    return Ok(host_block(p, length, method));
                }
            }
            UCT_ALLOC_METHOD_THP | UCT_ALLOC_METHOD_HEAP | UCT_ALLOC_METHOD_MMAP | UCT_ALLOC_METHOD_HUGE => {}
            other => {
                crate::error!("invalid allocation method {}", other);
                return Err(UCS_ERR_INVALID_PARAM);
            }
        }
    }
    crate::debug!("could not allocate {} bytes for {} with any method", req.length, req.name);
    Err(UCS_ERR_NO_MEMORY)
}

fn host_block(address: *mut c_void, length: usize, method: uct_alloc_method_t) -> Allocated {
    Allocated { address, length, method, md: std::ptr::null_mut(), memh: std::ptr::null_mut(), mem_type: UCS_MEMORY_TYPE_HOST }
}

/// Release a block by the method that made it.
pub fn free(mem: &uct_allocated_memory_t) -> ucs_status_t {
    match mem.method {
        UCT_ALLOC_METHOD_MD => {
            // SAFETY: the md handle was recorded by alloc.
            match unsafe { MdObj::from_handle(mem.md) } {
                Some(md) => md.imp.mem_free(mem.memh),
                None => UCS_ERR_INVALID_PARAM,
            }
        }
        UCT_ALLOC_METHOD_THP | UCT_ALLOC_METHOD_HEAP => {
            // SAFETY: allocated with posix_memalign by alloc.
            unsafe { libc::free(mem.address) };
            UCS_OK
        }
        UCT_ALLOC_METHOD_MMAP => {
            // SAFETY: mapped by alloc with this length.
            if unsafe { libc::munmap(mem.address, mem.length) } == 0 { UCS_OK } else { UCS_ERR_INVALID_PARAM }
        }
        UCT_ALLOC_METHOD_HUGE => {
            // SAFETY: attached by alloc.
            if unsafe { libc::shmdt(mem.address) } == 0 { UCS_OK } else { UCS_ERR_INVALID_PARAM }
        }
        _ => UCS_ERR_INVALID_PARAM,
    }
}
