//! The `ib` memory domain: one per RDMA device, holding the opened device,
//! its protection domain and the memory regions registered on it.
//!
//! Registration (`ibv_reg_mr`) always asks for local write, remote write,
//! remote read and remote atomic access, whatever the caller's access
//! flags, as UCX 1.13.1 does: a peer may therefore do anything the device
//! allows on registered memory, and nothing outside it.
//!
//! The packed remote key is 8 bytes, one host-order 64-bit value: the
//! region's rkey in the low half, the "atomic" rkey in the high half, which
//! is `0xffffffff` (none: atomics use the low key) for every region of
//! this md, as on a UCX 1.13.1 peer without relaxed ordering. Unpacking
//! takes the 8 bytes as the `uct_rkey_t` unchanged.

use crate::abi::*;
use crate::core::md::MdImpl;
use crate::core::ops::Completion;
use crate::sys::verbs::{self, access, Context, Mr, Pd, PortInfo};
use libc::c_void;
use std::collections::HashSet;
use std::sync::Mutex;

/// Bytes of a packed remote key.
pub const RKEY_PACKED_SIZE: usize = 8;
/// The key value meaning "no key" in either half of a packed key.
pub const INVALID_KEY: u32 = 0xffff_ffff;
/// Registration cost of a direct `ibv_reg_mr` as UCX 1.13.1 models it
/// (`UCX_IB_MEM_REG_OVERHEAD` / `_GROWTH` defaults): fixed part in seconds,
/// per-byte part in seconds.
pub const DIRECT_REG_COST: (f64, f64) = (16e-6, 0.06e-9);
/// Access rights of every registration.
const REG_ACCESS: u32 = access::LOCAL_WRITE | access::REMOTE_WRITE | access::REMOTE_READ | access::REMOTE_ATOMIC;
const MEMH_MAGIC: u64 = 0x6962_6d65_6d68_2121;

/// What `uct_mem_h` points to for this md: the keys the transports read on
/// their data path, and the region.
#[repr(C)]
pub struct IbMemh {
    magic: u64,
    pub lkey: u32,
    pub rkey: u32,
    pub address: usize,
    pub length: usize,
    mr: Option<Mr>,
}

/// The keys of a memory handle of an `ib` md, for the data path: `None`
/// for NULL or for something that is not such a handle (checked by a magic
/// number, as the handle is read on every zero-copy operation).
///
/// # Safety
/// `memh` is NULL or points to readable memory of at least the size of
/// [`IbMemh`] (UCT's contract: a handle the caller got from a
/// registration).
#[inline]
pub unsafe fn memh_lkey(memh: uct_mem_h) -> Option<u32> {
    if memh.is_null() {
        return None;
    }
    // SAFETY: readable per the function contract.
    let m = unsafe { &*(memh as *const IbMemh) };
    (m.magic == MEMH_MAGIC).then_some(m.lkey)
}

/// The direct rkey of an unpacked remote key (its low half).
#[inline]
pub fn rkey_direct(rkey: uct_rkey_t) -> u32 {
    rkey as u32
}

/// The rkey atomics use: the high half when it names a key, else the low
/// half.
#[inline]
pub fn rkey_atomic(rkey: uct_rkey_t) -> u32 {
    let hi = (rkey >> 32) as u32;
    if hi != INVALID_KEY {
        hi
    } else {
        rkey as u32
    }
}

/// The device attributes the transports use.
#[derive(Clone, Debug)]
pub struct DeviceCaps {
    pub phys_port_cnt: u8,
    pub max_qp_wr: i32,
    pub max_sge: i32,
    pub max_cqe: i32,
    pub max_srq_wr: i32,
    pub max_qp_rd_atom: i32,
    pub max_mr_size: u64,
    /// `atomic_cap == IBV_ATOMIC_HCA`: 64-bit atomics are offered.
    pub atomic_hca: bool,
    pub vendor_id: u32,
    pub vendor_part_id: u32,
}

/// An opened `ib` memory domain. Fields drop in order: registrations, PD,
/// then the device.
pub struct IbMd {
    memhs: Mutex<HashSet<usize>>,
    pub pd: Pd,
    pub ctx: Context,
    pub name: String,
    pub caps: DeviceCaps,
    /// The ports as queried when the md was opened (number, state).
    pub ports: Vec<(u8, PortInfo)>,
}

/// `IBV_ATOMIC_HCA`.
const ATOMIC_HCA: u32 = 1;

impl IbMd {
    /// Open device `name`: the device, its attributes and ports, a PD.
    /// `fork_init`: `Some(true)` for `UCX_IB_FORK_INIT=yes` (failure is an
    /// error), `Some(false)` for `try`, `None` for `no`.
    pub fn open(name: &str, fork_init: Option<bool>) -> Result<IbMd, ucs_status_t> {
        if let Some(required) = fork_init {
            if let Err(e) = verbs::device::fork_init() {
                if required {
                    crate::error!("ibv_fork_init() failed: {}", e);
                    return Err(UCS_ERR_IO_ERROR);
                }
                crate::debug!("ibv_fork_init() failed: {}, continuing without it", e);
            }
        }
        let ctx = super::device::open(name).map_err(|e| {
            if e == verbs::Errno::ENODEV {
                crate::debug!("ib: no device named {}", name);
                UCS_ERR_NO_DEVICE
            } else {
                crate::error!("ibv_open_device({}) failed: {}", name, e);
                UCS_ERR_IO_ERROR
            }
        })?;
        let a = ctx.query_device().map_err(|e| {
            crate::error!("ibv_query_device({}) failed: {}", name, e);
            UCS_ERR_IO_ERROR
        })?;
        let caps = DeviceCaps {
            phys_port_cnt: a.phys_port_cnt,
            max_qp_wr: a.max_qp_wr,
            max_sge: a.max_sge,
            max_cqe: a.max_cqe,
            max_srq_wr: a.max_srq_wr,
            max_qp_rd_atom: a.max_qp_rd_atom,
            max_mr_size: a.max_mr_size,
            atomic_hca: a.atomic_cap as u32 == ATOMIC_HCA,
            vendor_id: a.vendor_id,
            vendor_part_id: a.vendor_part_id,
        };
        let ports = super::device::ports(&ctx, caps.phys_port_cnt);
        let pd = Pd::alloc(&ctx).map_err(|e| {
            crate::error!("ibv_alloc_pd({}) failed: {}", name, e);
            UCS_ERR_IO_ERROR
        })?;
        Ok(IbMd { memhs: Mutex::new(HashSet::new()), pd, ctx, name: name.to_string(), caps, ports })
    }

    /// The `ib` md behind a generic md object, if it is one.
    pub fn of(imp: &dyn MdImpl) -> Option<&IbMd> {
        (imp as &dyn std::any::Any).downcast_ref::<IbMd>()
    }

    fn take_memh(&self, memh: uct_mem_h) -> Option<Box<IbMemh>> {
        let mut set = self.memhs.lock().unwrap_or_else(|p| p.into_inner());
        if !set.remove(&(memh as usize)) {
            return None;
        }
        // SAFETY: the set holds only handles made by `mem_reg` with
        // Box::into_raw and not yet taken; removing it made us the owner.
        Some(unsafe { Box::from_raw(memh as *mut IbMemh) })
    }

    fn is_memh(&self, memh: uct_mem_h) -> bool {
        self.memhs.lock().unwrap_or_else(|p| p.into_inner()).contains(&(memh as usize))
    }
}

impl Drop for IbMd {
    fn drop(&mut self) {
        let left: Vec<usize> = self.memhs.get_mut().unwrap_or_else(|p| p.into_inner()).drain().collect();
        if !left.is_empty() {
            crate::warn!("{}: {} memory region(s) still registered at close, deregistering them",
                         self.name, left.len());
        }
        for h in left {
            // SAFETY: handles in the set are live boxes made by mem_reg.
            drop(unsafe { Box::from_raw(h as *mut IbMemh) });
        }
    }
}

impl MdImpl for IbMd {
    fn query(&self, attr: &mut uct_md_attr_t) {
        attr.cap.flags = UCT_MD_FLAG_REG | UCT_MD_FLAG_NEED_MEMH | UCT_MD_FLAG_NEED_RKEY | UCT_MD_FLAG_ADVISE;
        attr.cap.max_alloc = 0;
        attr.cap.max_reg = libc::c_ulong::MAX as _;
        attr.cap.reg_mem_types = 1 << UCS_MEMORY_TYPE_HOST;
        attr.cap.alloc_mem_types = 0;
        attr.cap.access_mem_types = 1 << UCS_MEMORY_TYPE_HOST;
        attr.cap.detect_mem_types = 0;
        attr.rkey_packed_size = RKEY_PACKED_SIZE as _;
        attr.reg_cost.c = DIRECT_REG_COST.0;
        attr.reg_cost.m = DIRECT_REG_COST.1;
        attr.local_cpus = crate::core::md::all_cpus();
    }

    fn mem_reg(&self, address: *mut c_void, length: usize, flags: u32) -> Result<uct_mem_h, ucs_status_t> {
        let mr = Mr::reg(&self.pd, address, length, REG_ACCESS).map_err(|e| {
            let msg = format!("{}: ibv_reg_mr(address={:p}, length={}, access=0x{:x}) failed: {}{}", self.name,
                              address, length, REG_ACCESS, e,
                              if e == verbs::Errno::ENOMEM { " (check the locked memory limit, ulimit -l)" } else { "" });
            if flags & UCT_MD_MEM_FLAG_HIDE_ERRORS != 0 {
                crate::debug!("{}", msg);
            } else {
                crate::error!("{}", msg);
            }
            UCS_ERR_IO_ERROR
        })?;
        let memh = Box::new(IbMemh { magic: MEMH_MAGIC, lkey: mr.lkey(), rkey: mr.rkey(), address: address as usize,
                                     length, mr: Some(mr) });
        let h = Box::into_raw(memh) as uct_mem_h;
        self.memhs.lock().unwrap_or_else(|p| p.into_inner()).insert(h as usize);
        Ok(h)
    }

    fn mem_dereg(&self, memh: uct_mem_h, _flags: u32, _comp: Completion) -> ucs_status_t {
        let Some(mut m) = self.take_memh(memh) else {
            crate::error!("{}: {:p} is not a memory handle of this memory domain", self.name, memh);
            return UCS_ERR_INVALID_PARAM;
        };
        m.magic = 0;
        match m.mr.take().map(Mr::dereg) {
            Some(Err(e)) => {
                crate::error!("{}: ibv_dereg_mr(address=0x{:x}, length={}) failed: {}", self.name, m.address,
                              m.length, e);
                UCS_ERR_IO_ERROR
            }
            _ => UCS_OK,
        }
    }

    fn mem_advise(&self, memh: uct_mem_h, _address: *mut c_void, _length: usize, _advice: u32) -> ucs_status_t {
        // Registered memory is pinned: there is nothing to prefetch.
        if !self.is_memh(memh) {
            crate::error!("{}: {:p} is not a memory handle of this memory domain", self.name, memh);
            return UCS_ERR_INVALID_PARAM;
        }
        UCS_OK
    }

    fn mkey_pack(&self, memh: uct_mem_h, flags: u32, buf: *mut u8) -> ucs_status_t {
        if flags & UCT_MD_MKEY_PACK_FLAG_INVALIDATE != 0 {
            crate::debug!("{}: keys that can be invalidated are not supported", self.name);
            return UCS_ERR_UNSUPPORTED;
        }
        if !self.is_memh(memh) {
            crate::error!("{}: {:p} is not a memory handle of this memory domain", self.name, memh);
            return UCS_ERR_INVALID_PARAM;
        }
        // SAFETY: a live handle of ours (checked just above).
        let rkey = unsafe { (*(memh as *const IbMemh)).rkey };
        let packed = ((INVALID_KEY as u64) << 32) | rkey as u64;
        // SAFETY: the caller's buffer holds rkey_packed_size (8) bytes.
        unsafe { std::ptr::copy_nonoverlapping(packed.to_ne_bytes().as_ptr(), buf, RKEY_PACKED_SIZE) };
        UCS_OK
    }
}

/// `uct_rkey_unpack` of the component: the 8 bytes as they are.
pub fn rkey_unpack(buf: *const u8) -> Result<(uct_rkey_t, *mut c_void), ucs_status_t> {
    if buf.is_null() {
        crate::error!("ib: NULL remote key buffer");
        return Err(UCS_ERR_INVALID_PARAM);
    }
    let mut b = [0u8; RKEY_PACKED_SIZE];
    // SAFETY: the caller's packed key has rkey_packed_size (8) bytes.
    unsafe { std::ptr::copy_nonoverlapping(buf, b.as_mut_ptr(), RKEY_PACKED_SIZE) };
    Ok((u64::from_ne_bytes(b) as uct_rkey_t, std::ptr::null_mut()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_key_choice() {
        assert_eq!(rkey_atomic(0xffff_ffff_0000_1234), 0x1234);
        assert_eq!(rkey_atomic(0x0000_0042_0000_1234), 0x42);
        assert_eq!(rkey_direct(0x0000_0042_0000_1234), 0x1234);
    }

    #[test]
    fn unpack_is_verbatim() {
        let v: u64 = 0xffff_ffff_0102_0304;
        let (k, h) = rkey_unpack(v.to_ne_bytes().as_ptr()).unwrap();
        assert_eq!(k as u64, v);
        assert!(h.is_null());
        assert!(rkey_unpack(std::ptr::null()).is_err());
    }

    #[test]
    fn lkey_of_garbage_is_none() {
        let junk = [0u64; 8];
        // SAFETY: a readable local of more than IbMemh's size.
        assert_eq!(unsafe { memh_lkey(junk.as_ptr() as uct_mem_h) }, None);
        // SAFETY: NULL is allowed.
        assert_eq!(unsafe { memh_lkey(std::ptr::null_mut()) }, None);
    }
}
