//! The memory domain of the mm transports: allocation of shareable memory
//! through a [`Mapper`], and packing keys peers use to map it.

use super::mapper::{Mapper, Segment};
use crate::abi::*;
use crate::core::handles::Completion;
use crate::core::md::{all_cpus, MdImpl, MdObj};
use crate::transports::sm::release;
use libc::c_void;

const MEMH_MAGIC: u64 = 0x7563_742d_6d6d_6868;
const LOCAL_MAGIC: u64 = 0x7563_742d_6d6d_6c72;

/// A local registration: memory the process may use as the source or
/// target of its own zero-copy operations. It has no remote key (peers
/// reach mm memory only through segments made by `uct_md_mem_alloc`), so
/// the md does not claim `UCT_MD_FLAG_REG`.
struct LocalReg {
    magic: u64,
}

/// The memory handle of mm memory domains.
struct Memh {
    magic: u64,
    seg: Segment,
}

pub struct MmMd<M: Mapper> {
    pub mapper: M,
}

impl<M: Mapper> MmMd<M> {
    /// The mm md behind a generic md object (None for other mds).
    pub fn of(md: &MdObj) -> Option<&MmMd<M>> {
        let any: &dyn std::any::Any = md.imp.as_ref();
        any.downcast_ref::<MmMd<M>>()
    }

    /// The segment behind a memory handle made by this md.
    pub fn segment(memh: uct_mem_h) -> Option<&'static Segment> {
        if memh.is_null() {
            return None;
        }
        // SAFETY: handles of this md are boxed `Memh`; foreign pointers fail
        // the magic test (callers pass handles from uct_md_mem_alloc).
        let m = unsafe { &*(memh as *const Memh) };
        (m.magic == MEMH_MAGIC).then_some(&m.seg)
    }

    /// Allocate a shareable segment (used for FIFOs and receive descriptors).
    pub fn alloc_segment(&self, length: usize, name: &str) -> Result<Segment, ucs_status_t> {
        self.mapper.alloc(length, std::ptr::null_mut(), false, name)
    }
}

fn is_local(memh: uct_mem_h) -> bool {
    // SAFETY: registrations are boxed `LocalReg`s; both handle kinds start
    // with a magic word, so reading it tells them apart.
    !memh.is_null() && unsafe { *(memh as *const u64) } == LOCAL_MAGIC
}

impl<M: Mapper> MdImpl for MmMd<M> {
    fn query(&self, attr: &mut uct_md_attr_t) {
        let max_alloc = self.mapper.max_alloc();
        attr.cap.flags = UCT_MD_FLAG_RKEY_PTR | UCT_MD_FLAG_NEED_RKEY;
        if max_alloc > 0 {
            attr.cap.flags |= UCT_MD_FLAG_ALLOC | UCT_MD_FLAG_FIXED;
        }
        attr.cap.max_alloc = max_alloc;
        attr.cap.max_reg = 0;
        attr.cap.alloc_mem_types = 1 << UCS_MEMORY_TYPE_HOST;
        attr.cap.access_mem_types = 1 << UCS_MEMORY_TYPE_HOST;
        // Host memory can be registered for local zero-copy use (where the
        // release has the zero-copy operations, see `release`).
        attr.cap.reg_mem_types = if release::mm_zero_copy() { 1 << UCS_MEMORY_TYPE_HOST } else { 0 };
        attr.cap.detect_mem_types = 0;
        // A zero-copy operation of this transport copies the payload
        // (into the peer's FIFO or a mapped segment): using the memory
        // costs a memcpy per byte, and the operation a little bookkeeping
        // (one nanosecond, stated so that the fixed part is not zero).
        // Said so, libucp's threshold model (fixed cost divided by the
        // per-byte saving, which is negative here) finds that zero-copy
        // never pays and keeps its eager, put/get and rendezvous traffic on
        // the copy paths, exactly as with the C original, where these
        // zero-copy operations do not exist.  With a zero fixed cost the
        // quotient is -0.0, which libucp reads as "zero-copy from 0 bytes".
        // (Only releases with these operations: up to 1.15, where libucs
        // still gives its memcpy estimate.)
        if release::mm_zero_copy() {
            let memcpy_bw = crate::ucs::memcpy_bw().unwrap_or(0.0);
            attr.reg_cost.c = 1e-9;
            attr.reg_cost.m = if memcpy_bw > 0.0 { 1.0 / memcpy_bw } else { 0.0 };
        }
        attr.rkey_packed_size = self.mapper.rkey_packed_size();
        attr.local_cpus = all_cpus();
    }

    fn mem_alloc(&self, length: &mut usize, address: &mut *mut c_void, mem_type: ucs_memory_type_t, flags: u32,
                 name: &str) -> Result<uct_mem_h, ucs_status_t> {
        if mem_type != UCS_MEMORY_TYPE_HOST {
            return Err(UCS_ERR_UNSUPPORTED);
        }
        let fixed = flags & UCT_MD_MEM_FLAG_FIXED != 0;
        let seg = self.mapper.alloc(*length, *address, fixed, name)?;
        *length = seg.length;
        *address = seg.address;
        Ok(Box::into_raw(Box::new(Memh { magic: MEMH_MAGIC, seg })) as uct_mem_h)
    }

    fn mem_free(&self, memh: uct_mem_h) -> ucs_status_t {
        if Self::segment(memh).is_none() {
            crate::error!("mm md: {:p} is not a memory handle of this memory domain", memh);
            return UCS_ERR_INVALID_PARAM;
        }
        // SAFETY: validated above; the handle was boxed by mem_alloc.
        let mut m = unsafe { Box::from_raw(memh as *mut Memh) };
        m.magic = 0;
        self.mapper.free(std::mem::take(&mut m.seg))
    }

    fn mem_reg(&self, _address: *mut c_void, _length: usize, _flags: u32) -> Result<uct_mem_h, ucs_status_t> {
        if !release::mm_zero_copy() {
            // Registrations serve only our zero-copy operations.
            return Err(UCS_ERR_UNSUPPORTED);
        }
        Ok(Box::into_raw(Box::new(LocalReg { magic: LOCAL_MAGIC })) as uct_mem_h)
    }

    fn mem_dereg(&self, memh: uct_mem_h, flags: u32, _comp: Completion) -> ucs_status_t {
        if !is_local(memh) || flags != 0 {
            crate::error!("mm md: {:p} is not a registration of this memory domain (or flags {:#x})", memh, flags);
            return UCS_ERR_INVALID_PARAM;
        }
        // SAFETY: validated above; boxed by mem_reg.
        let mut r = unsafe { Box::from_raw(memh as *mut LocalReg) };
        r.magic = 0;
        UCS_OK
    }

    fn mkey_pack(&self, memh: uct_mem_h, _flags: u32, buf: *mut u8) -> ucs_status_t {
        if is_local(memh) {
            crate::error!("mm md: registered memory has no remote key; allocate shared memory with uct_md_mem_alloc");
            return UCS_ERR_UNSUPPORTED;
        }
        match Self::segment(memh) {
            Some(seg) => {
                self.mapper.mkey_pack(seg, buf);
                UCS_OK
            }
            None => {
                crate::error!("mm md: {:p} is not a memory handle of this memory domain", memh);
                UCS_ERR_INVALID_PARAM
            }
        }
    }
}
