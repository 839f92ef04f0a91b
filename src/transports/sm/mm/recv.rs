//! The receive side of an mm interface's progress: the element at the read
//! index is taken when its owner bit says a sender published it, inline data
//! goes straight to the AM handler, a descriptor is handed over (and
//! replaced when the handler keeps it). Consumed elements are published back
//! to senders every `FIFO_RELEASE_FACTOR` of the FIFO, and the number of
//! messages taken per call adapts between 1 and `FIFO_MAX_POLL`.
//! (UCX 1.13.1: `src/uct/sm/mm/base/mm_iface.c`.)

use super::desc::DESC_INFO_SIZE;
use super::fifo;
use super::iface::MmIface;
use super::mapper::Mapper;
use super::peer::{self, BadElem, ElemHdr, Msg};
use crate::abi::*;
use crate::core::iface::Iface;
use libc::c_void;
use std::sync::atomic::Ordering;

/// The fewest messages one progress call takes from the FIFO.
const FIFO_MIN_POLL: u32 = 1;

/// Dropped elements each logged; past them, only the powers of two of the
/// count are.
const DROPS_LOGGED: u64 = 16;

impl<M: Mapper> MmIface<M> {
    /// Handle the element at the read index, if it holds a message.
    /// Returns false when there was nothing (or it must wait).
    #[inline(always)]
    pub(super) fn poll_one(&self, iface: &Iface<Self>) -> bool {
        let ri = self.read_index.get();
        let elem = self.fifo.elem(ri);
        let flags = elem.flags();
        if !fifo::has_new(ri, self.fifo_shift, flags) {
            return false;
        }
        // The header is copied out once: the peer may rewrite it meanwhile.
        let hdr = ElemHdr { flags, am_id: elem.am_id(), length: elem.length() as u16 };
        match peer::decode_elem(hdr, self.max_short, self.seg_size) {
            Ok(Msg::Inline { am_id, len }) => {
                // SAFETY: inline data lies inside the element (decode_elem
                // refused a length beyond the element's data area).
                unsafe { iface.hdr.invoke_am_raw(am_id, elem.data() as *mut c_void, len, 0) };
            }
            Ok(Msg::Desc { am_id, len }) => {
                if !self.recv_desc(iface, elem, ri, am_id, len) {
                    return false;
                }
            }
            // Dropped: the element is consumed like any other, so the FIFO
            // moves on; a descriptor stays attached to it.
            Err(why) => self.bad_elem(ri, why),
        }
        let next = ri.wrapping_add(1);
        self.read_index.set(next);
        if next & self.release_mask == 0 {
            self.fifo.tail().store(next, Ordering::Release);
        }
        true
    }

    /// Log a dropped element: each of the first [`DROPS_LOGGED`], then at
    /// each power of two of the count, so that a peer flooding the FIFO
    /// with forgeries cannot flood the log (the FIFO does not tell which
    /// sender wrote an element).
    #[cold]
    #[inline(never)]
    fn bad_elem(&self, ri: u64, why: BadElem) {
        let n = self.dropped.get() + 1;
        self.dropped.set(n);
        if n <= DROPS_LOGGED || n.is_power_of_two() {
            crate::error!("mm: dropped FIFO element {} from a peer: {} ({} dropped so far)", ri, why, n);
        }
    }

    fn recv_desc(&self, iface: &Iface<Self>, elem: fifo::Elem, ri: u64, am_id: u8, len: usize) -> bool {
        // A replacement must be at hand in case the handler keeps this one.
        if self.spare.get().is_none() {
            match self.pool.get() {
                Some(s) => self.spare.set(Some(s)),
                None => return false, // retry on a later progress call
            }
        }
        let idx = (ri & self.fifo.mask()) as usize;
        let slot = self.elem_slot[idx].get();
        let data = self.pool.data(slot);
        // SAFETY: the descriptor is ours and holds seg_size payload bytes
        // (decode_elem refused a longer len).
        let status = unsafe { iface.hdr.invoke_am_raw(am_id, data as *mut c_void, len, UCT_CB_PARAM_FLAG_DESC) };
        if status == UCS_INPROGRESS {
            // The user keeps the descriptor: note how to release it, and give
            // the element a fresh one.
            // SAFETY: the 8 bytes before the headroom are our release slot.
            unsafe {
                std::ptr::write_unaligned(slot.add(DESC_INFO_SIZE) as *mut *const uct_recv_desc_t,
                                          &self.release.base as *const uct_recv_desc_t)
            };
            if let Some(fresh) = self.spare.take() {
                elem.set_desc(self.pool.info(fresh), self.pool.data(fresh));
                self.elem_slot[idx].set(fresh);
            }
            self.spare.set(self.pool.get());
        }
        true
    }

    pub(super) fn window_adjust(&self, count: u32) {
        let cur = self.poll_count.get();
        if count < cur {
            self.poll_count.set((cur / 2).max(FIFO_MIN_POLL));
            self.prev_wnd_cons.set(false);
        } else if self.prev_wnd_cons.get() {
            self.poll_count.set((cur + 1).min(self.fifo_max_poll));
        } else {
            self.prev_wnd_cons.set(true);
        }
    }
}
