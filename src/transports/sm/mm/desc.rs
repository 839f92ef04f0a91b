//! The receive descriptors of an mm interface: buffers carved from
//! shareable segments of the interface's own memory domain. Each FIFO element
//! names one (by segment id and offset), a bcopy or zcopy sender maps the
//! segment and writes the message there, and the receiver hands the buffer to
//! the AM handler with `UCT_CB_PARAM_FLAG_DESC`; a handler that keeps it
//! returns it through `uct_iface_release_desc`. Like the `mm_recv_desc`
//! memory pool of UCX 1.13.1 (`src/uct/sm/mm/base/mm_iface.c`), the pool
//! grows by `RX_BUFS_GROW` descriptors up to `RX_MAX_BUFS`; where the
//! release has them, each new chunk holds `RX_GROW_FACTOR` times the
//! descriptors of the previous one, within `RX_MAX_CHUNK_SIZE` bytes.

use super::fifo::DescInfo;
use super::mapper::{Mapper, Segment};
use super::md::MmMd;
use crate::transports::sm::release::PoolGrowth;
use crate::abi::*;
use libc::c_void;
use std::cell::{Cell, RefCell};

/// Header of a receive descriptor: its `DescInfo` (16 bytes), then the
/// release pointer slot that `uct_iface_release_desc` reads (8 bytes).
const DESC_HDR: usize = 24;
pub(super) const DESC_INFO_SIZE: usize = 16;

/// Receive descriptors, carved from shareable segments: the sender writes
/// the payload into them, the receiver hands them to AM handlers with
/// `UCT_CB_PARAM_FLAG_DESC`. Layout of one descriptor:
/// `[DescInfo 16][uct_recv_desc_t* 8][rx_headroom][payload seg_size]`.
pub struct DescPool<M: Mapper> {
    md: *const MmMd<M>,
    headroom: usize,
    stride: usize,
    lead: usize,
    /// Descriptors the next chunk is made for.
    grow: Cell<usize>,
    growth: PoolGrowth,
    max_bufs: Option<usize>,
    total: Cell<usize>,
    free: RefCell<Vec<*mut u8>>,
    chunks: RefCell<Vec<Segment>>,
}

impl<M: Mapper> DescPool<M> {
    #[allow(clippy::too_many_arguments)]
    pub(super) fn new(md: &MmMd<M>, headroom: usize, seg_size: usize, align: usize, align_offset: usize, grow: usize,
           growth: PoolGrowth, max_bufs: Option<usize>) -> DescPool<M> {
        let align = align.max(8);
        let stride = (DESC_HDR + headroom + seg_size).div_ceil(align) * align;
        // Payload at `lead + DESC_HDR + headroom` from a page-aligned chunk,
        // such that (payload + align_offset) % align == 0.
        let lead = (align - (DESC_HDR + headroom + align_offset) % align) % align;
        DescPool {
            md,
            headroom,
            stride,
            lead,
            grow: Cell::new(grow.max(1)),
            growth,
            max_bufs,
            total: Cell::new(0),
            free: RefCell::new(Vec::new()),
            chunks: RefCell::new(Vec::new()),
        }
    }

    fn md(&self) -> &MmMd<M> {
        // SAFETY: the md outlives the interfaces opened on it.
        unsafe { &*self.md }
    }

    /// Bytes of a chunk of `count` descriptors.
    pub(super) fn chunk_bytes(&self, count: usize) -> usize {
        self.lead.saturating_add(count.saturating_mul(self.stride))
    }

    fn grow(&self) -> bool {
        let mut count = self.grow.get();
        if let Some(max) = self.max_bufs {
            count = count.min(max.saturating_sub(self.total.get()));
        }
        // No chunk larger than the limit.
        count = count.min(self.growth.max_chunk_size.saturating_sub(self.lead) / self.stride);
        if count == 0 {
            return false;
        }
        let bytes = self.lead + count * self.stride;
        let seg = match self.md().alloc_segment(bytes, "mm_recv_desc") {
            Ok(s) => s,
            Err(s) => {
                crate::error!("mm: failed to allocate receive descriptors: {}", crate::core::log::status_str(s));
                return false;
            }
        };
        if seg.length > u32::MAX as usize {
            crate::error!("mm: descriptor segment of {} bytes is too large", seg.length);
            let _ = self.md().mapper.free(seg);
            return false;
        }
        let base = seg.address as *mut u8;
        let mut free = self.free.borrow_mut();
        for i in (0..count).rev() {
            // SAFETY: inside the new segment of `bytes` bytes.
            let slot = unsafe { base.add(self.lead + i * self.stride) };
            let payload_off = self.lead + i * self.stride + DESC_HDR + self.headroom;
            let info = DescInfo { seg_id: seg.seg_id, seg_size: seg.length as u32, offset: payload_off as u32 };
            // SAFETY: the slot header lies inside the segment we own.
            unsafe { write_info(slot, info) };
            free.push(slot);
        }
        self.total.set(self.total.get() + count);
        self.chunks.borrow_mut().push(seg);
        if self.growth.grow_factor != 1.0 {
            let next = (count.min(self.grow.get()) as f64 * self.growth.grow_factor + 0.5) as usize;
            self.grow.set(next.max(1));
        }
        true
    }

    #[inline]
    pub(super) fn get(&self) -> Option<*mut u8> {
        let got = self.free.borrow_mut().pop();
        match got {
            Some(s) => Some(s),
            None => {
                if self.grow() {
                    self.free.borrow_mut().pop()
                } else {
                    None
                }
            }
        }
    }

    #[inline]
    pub(super) fn put(&self, slot: *mut u8) {
        self.free.borrow_mut().push(slot);
    }

    #[inline(always)]
    pub(super) fn data(&self, slot: *mut u8) -> *mut u8 {
        // SAFETY: within the descriptor.
        unsafe { slot.add(DESC_HDR + self.headroom) }
    }

    pub(super) fn info(&self, slot: *mut u8) -> DescInfo {
        // SAFETY: the header was written by grow().
        unsafe { read_info(slot) }
    }

    /// The descriptor whose user part (headroom) starts at `desc`.
    fn slot_of_desc(desc: *mut u8) -> *mut u8 {
        desc.wrapping_sub(DESC_HDR)
    }
}

impl<M: Mapper> Drop for DescPool<M> {
    fn drop(&mut self) {
        for seg in self.chunks.borrow_mut().drain(..) {
            let _ = self.md().mapper.free(seg);
        }
    }
}

/// # Safety
/// `slot` points to a descriptor header of this process.
unsafe fn write_info(slot: *mut u8, info: DescInfo) {
    // SAFETY: the caller hands in the start of a descriptor, whose first
    // DESC_INFO_SIZE bytes are the header; unaligned writes need no alignment.
    unsafe {
        std::ptr::write_unaligned(slot as *mut u64, info.seg_id);
        std::ptr::write_unaligned(slot.add(8) as *mut u32, info.seg_size);
        std::ptr::write_unaligned(slot.add(12) as *mut u32, info.offset);
    }
}

/// # Safety
/// As for [`write_info`].
unsafe fn read_info(slot: *mut u8) -> DescInfo {
    // SAFETY: as in write_info, reading the header back.
    unsafe {
        DescInfo {
            seg_id: std::ptr::read_unaligned(slot as *const u64),
            seg_size: std::ptr::read_unaligned(slot.add(8) as *const u32),
            offset: std::ptr::read_unaligned(slot.add(12) as *const u32),
        }
    }
}

/// The `uct_recv_desc_t` stored in front of descriptors kept by a handler;
/// `uct_iface_release_desc` calls its `cb`, which returns the descriptor.
#[repr(C)]
pub(super) struct ReleaseDesc<M: Mapper> {
    pub(super) base: uct_recv_desc_t,
    pub(super) pool: *const DescPool<M>,
}

/// The `cb` of [`ReleaseDesc`]: gives a descriptor kept by an AM handler
/// back to its pool.
///
/// # Safety
/// `self_` is the `base` of a live `ReleaseDesc<M>` (the one the interface
/// stored in front of `desc`), and `desc` is the user part of a descriptor of
/// that pool, not returned yet.
pub(super) unsafe extern "C" fn release_desc<M: Mapper>(self_: *mut uct_recv_desc_t, desc: *mut c_void) {
    // SAFETY: `self_` is the ReleaseDesc we stored in front of the
    // descriptor, and the pool lives as long as the interface.
    unsafe {
        let rd = &*(self_ as *const ReleaseDesc<M>);
        (*rd.pool).put(DescPool::<M>::slot_of_desc(desc as *mut u8));
    }
}
