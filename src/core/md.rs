//! Memory domains: the object behind `uct_md_h` and what a transport's md
//! implements.

use crate::abi::*;
use crate::core::handles::Completion;
use crate::core::component::Component;
use crate::core::registry::{self, Kind};
use libc::{c_char, c_void};

/// What a memory domain does. Defaults report `UCS_ERR_UNSUPPORTED`.
#[allow(unused_variables)]
pub trait MdImpl: std::any::Any + Send + Sync {
    /// Fill the attributes (the component name is filled by the caller).
    fn query(&self, attr: &mut uct_md_attr_t);
    fn mem_reg(&self, address: *mut c_void, length: usize, flags: u32) -> Result<uct_mem_h, ucs_status_t> {
        Err(UCS_ERR_UNSUPPORTED)
    }
    fn mem_dereg(&self, memh: uct_mem_h, flags: u32, comp: Completion) -> ucs_status_t {
        UCS_ERR_UNSUPPORTED
    }
    fn mem_alloc(&self, length: &mut usize, address: &mut *mut c_void, mem_type: ucs_memory_type_t, flags: u32,
                 name: &str) -> Result<uct_mem_h, ucs_status_t> {
        Err(UCS_ERR_UNSUPPORTED)
    }
    fn mem_free(&self, memh: uct_mem_h) -> ucs_status_t {
        UCS_ERR_UNSUPPORTED
    }
    fn mem_advise(&self, memh: uct_mem_h, address: *mut c_void, length: usize, advice: u32) -> ucs_status_t {
        UCS_ERR_UNSUPPORTED
    }
    /// Write `rkey_packed_size` bytes describing `memh` to `buf`.
    fn mkey_pack(&self, memh: uct_mem_h, flags: u32, buf: *mut u8) -> ucs_status_t {
        UCS_OK
    }
    fn mem_query(&self, address: *const c_void, length: usize, attr: &mut uct_md_mem_attr_t) -> ucs_status_t {
        UCS_ERR_UNSUPPORTED
    }
    fn detect_memory_type(&self, address: *const c_void, length: usize) -> Result<ucs_memory_type_t, ucs_status_t> {
        Err(UCS_ERR_UNSUPPORTED)
    }
    fn is_sockaddr_accessible(&self, addr: *const libc::sockaddr, len: libc::socklen_t, mode: u32) -> bool {
        false
    }
    /// Memory types this md registers without blocking (reported by the
    /// v2 query of 1.14+).
    fn reg_nonblock_mem_types(&self) -> u64 {
        0
    }
    /// Memory types whose registrations may be cached by the caller (v2
    /// query): host memory, for every md of ours.
    fn cache_mem_types(&self) -> u64 {
        1u64 << UCS_MEMORY_TYPE_HOST
    }
    /// `UCS_MEM_FLAG_*` bits memory must carry for this md to register it
    /// (v2 query of 1.22+): none unless the md says otherwise.
    fn required_mem_flags(&self) -> u8 {
        0
    }
}

/// The object behind `uct_md_h` (live ones are in the [`registry`]).
pub struct MdObj {
    pub component: &'static Component,
    pub name: String,
    pub imp: Box<dyn MdImpl>,
}

impl MdObj {
    pub fn new(component: &'static Component, name: &str, imp: Box<dyn MdImpl>) -> MdObj {
        MdObj { component, name: name.to_string(), imp }
    }

    /// Box the md, record it as live and hand C its handle.
    pub fn into_handle(self) -> uct_md_h {
        let h = Box::into_raw(Box::new(self)) as uct_md_h;
        registry::register(h, Kind::Md);
        h
    }

    /// The md behind a handle, if it is a live md of this library (looked
    /// up by address: nothing is read through a pointer that is not).
    ///
    /// # Safety
    /// The md must stay open while the reference is used.
    pub unsafe fn from_handle<'a>(md: uct_md_h) -> Option<&'a MdObj> {
        // SAFETY: a live md is the box made by `into_handle`; see the
        // function contract for the lifetime.
        registry::is(md, Kind::Md).then(|| unsafe { &*(md as *const MdObj) })
    }

    /// Close a handle: false (and nothing done) when it is not a live md.
    /// Of two threads closing one md, one frees it and the other gets false.
    ///
    /// # Safety
    /// Nothing uses the md once this returned true.
    pub unsafe fn close(md: uct_md_h) -> bool {
        if !registry::take(md, Kind::Md) {
            return false;
        }
        // SAFETY: it was live, so it is our box, and taking the entry made
        // this call its only owner.
        drop(unsafe { Box::from_raw(md as *mut MdObj) });
        true
    }

    pub fn handle(&self) -> uct_md_h {
        self as *const MdObj as uct_md_h
    }

    /// Full attributes, component name included.
    pub fn query(&self, attr: &mut uct_md_attr_t) {
        // SAFETY: all-zero is a valid uct_md_attr_t.
        *attr = unsafe { std::mem::zeroed() };
        self.imp.query(attr);
        write_name(&mut attr.component_name, self.component.name);
    }
}

/// Copy a name into a fixed C char array, truncated and NUL-terminated.
pub fn write_name(dst: &mut [c_char], name: &str) {
    let n = name.len().min(dst.len().saturating_sub(1));
    for (d, s) in dst.iter_mut().zip(name.as_bytes()[..n].iter()) {
        *d = *s as c_char;
    }
    for d in dst[n..].iter_mut() {
        *d = 0;
    }
}

/// The registrations of a memory domain whose transport needs none (it
/// reaches the caller's memory directly, or the kernel copies it): every
/// registration gets the same non-NULL handle, and deregistration checks
/// that it is that handle.
pub struct FixedMemh {
    /// The handle value.
    pub value: usize,
    /// The memory domain's name, for log lines.
    pub md: &'static str,
}

impl FixedMemh {
    pub fn handle(&self) -> uct_mem_h {
        self.value as uct_mem_h
    }

    /// `Ok` for this md's handle; an error with a log line for any other.
    pub fn check(&self, memh: uct_mem_h) -> Result<(), ucs_status_t> {
        if memh as usize == self.value {
            Ok(())
        } else {
            crate::error!("{} md: {:p} is not a memory handle of this memory domain", self.md, memh);
            Err(UCS_ERR_INVALID_PARAM)
        }
    }
}

/// The attributes of a memory domain that registers any host memory (with
/// remote keys of `rkey_packed_size` bytes) and allocates none.
pub fn registers_host_memory(attr: &mut uct_md_attr_t, rkey_packed_size: usize) {
    attr.cap.flags = UCT_MD_FLAG_REG | UCT_MD_FLAG_NEED_RKEY;
    attr.cap.reg_mem_types = 1 << UCS_MEMORY_TYPE_HOST;
    attr.cap.access_mem_types = 1 << UCS_MEMORY_TYPE_HOST;
    attr.cap.alloc_mem_types = 0;
    attr.cap.detect_mem_types = 0;
    attr.cap.max_alloc = 0;
    attr.cap.max_reg = u64::MAX as _;
    attr.rkey_packed_size = rkey_packed_size;
    attr.local_cpus = all_cpus();
}

/// `uct_md_mem_query` of memory domains whose memory is plain host memory
/// of no particular device (self, posix_get).
pub fn host_mem_query(attr: &mut uct_md_mem_attr_t) -> ucs_status_t {
    if attr.field_mask & UCT_MD_MEM_ATTR_FIELD_MEM_TYPE != 0 {
        attr.mem_type = UCS_MEMORY_TYPE_HOST;
    }
    if attr.field_mask & UCT_MD_MEM_ATTR_FIELD_SYS_DEV != 0 {
        attr.sys_dev = UCS_SYS_DEVICE_ID_UNKNOWN;
    }
    UCS_OK
}

/// All CPUs, for `local_cpus` of memory domains not tied to a device.
pub fn all_cpus() -> ucs_cpu_set_t {
    // SAFETY: ucs_cpu_set_t is an array of integers.
    let mut s: ucs_cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: filling the plain integer array with ones.
    unsafe { std::ptr::write_bytes(&mut s as *mut ucs_cpu_set_t as *mut u8, 0xff, std::mem::size_of::<ucs_cpu_set_t>()) };
    s
}
