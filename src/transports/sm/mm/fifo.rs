//! The receive FIFO in shared memory, byte for byte as UCX 1.13.1 lays it out
//! (`uct_mm_fifo_ctl_t` and `uct_mm_fifo_element_t` in
//! `src/uct/sm/mm/base/mm_iface.h`), so that a C peer can send to us and we
//! to it.
//!
//! Control block (64-byte aligned, 192 bytes): `head` u64 @0 (bit 63: the
//! receiver asked to be woken), `signal_addrlen` u32 @8, `signal_sockaddr`
//! (`sockaddr_un`, 110 bytes) @12, padding to the next cache line, `tail`
//! u64 @128, `pid` i32 @136. (The packed C struct pads 122 bytes up to 128,
//! so `tail` is on the third cache line, not the second.) Elements
//! (`fifo_elem_size` bytes each) follow at +192: `flags` u8 @0 (bit 0 owner
//! polarity, bit 1 inline), `am_id` u8 @1, `length` u16 @2, descriptor
//! `{seg_id u64, seg_size u32, offset u32}` @4, `desc_data` pointer @20
//! (meaningful to the receiver only), inline data @28.
//!
//! Everything here is accessed concurrently by another process, so it goes
//! through raw pointers, atomics and unaligned reads, never through Rust
//! references to the shared bytes. This module maps and reads shared
//! memory: it is one of the places allowed to be unsafe.

use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};

pub const CACHE_LINE: usize = 64;
pub const CTL_SIZE: usize = 192;
pub const ELEM_HDR: usize = 28;
pub const FLAG_OWNER: u8 = 1;
pub const FLAG_INLINE: u8 = 2;
pub const HEAD_EVENT_ARMED: u64 = 1 << 63;

const CTL_HEAD: usize = 0;
const CTL_SIGNAL_ADDRLEN: usize = 8;
const CTL_SIGNAL_SOCKADDR: usize = 12;
const SOCKADDR_UN_SIZE: usize = 110;
const CTL_TAIL: usize = 128;
const CTL_PID: usize = 136;

const EL_FLAGS: usize = 0;
const EL_AM_ID: usize = 1;
const EL_LENGTH: usize = 2;
const EL_SEG_ID: usize = 4;
const EL_SEG_SIZE: usize = 12;
const EL_OFFSET: usize = 16;
const EL_DESC_DATA: usize = 20;

/// Active-message ids a peer may name: `0 .. UCT_AM_ID_MAX`.
pub const AM_ID_MAX: u8 = crate::abi::UCT_AM_ID_MAX as u8;
/// Every flag bit a UCX 1.13.1 sender writes; any other bit is a forgery.
pub const KNOWN_FLAGS: u8 = FLAG_OWNER | FLAG_INLINE;

/// Bytes to allocate for a FIFO (control block, elements, alignment slack).
pub fn segment_bytes(fifo_size: usize, elem_size: usize) -> usize {
    CTL_SIZE + fifo_size * elem_size + CACHE_LINE - 1
}

/// Where a bcopy sender writes: a receive descriptor of the receiver.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DescInfo {
    pub seg_id: u64,
    pub seg_size: u32,
    pub offset: u32,
}

/// A FIFO, as mapped in this process.
#[derive(Clone, Copy)]
pub struct Fifo {
    ctl: *mut u8,
    elems: *mut u8,
    elem_size: usize,
    mask: u64,
}

impl Fifo {
    /// # Safety
    /// `base` is a mapping of at least `segment_bytes(fifo_size, elem_size)`
    /// bytes that stays mapped while the `Fifo` is used; `fifo_size` is a
    /// power of two.
    pub unsafe fn new(base: *mut u8, fifo_size: usize, elem_size: usize) -> Fifo {
        let ctl = ((base as usize + CACHE_LINE - 1) & !(CACHE_LINE - 1)) as *mut u8;
        // SAFETY: the control block fits in the mapping (see the contract
        // above), so its end is inside it too.
        Fifo { ctl, elems: unsafe { ctl.add(CTL_SIZE) }, elem_size, mask: fifo_size as u64 - 1 }
    }

    #[inline(always)]
    pub fn head(&self) -> &AtomicU64 {
        // SAFETY: 64-byte aligned u64 inside the mapping (see `new`).
        unsafe { &*(self.ctl.add(CTL_HEAD) as *const AtomicU64) }
    }

    #[inline(always)]
    pub fn tail(&self) -> &AtomicU64 {
        // SAFETY: 64-byte aligned u64 inside the mapping.
        unsafe { &*(self.ctl.add(CTL_TAIL) as *const AtomicU64) }
    }

    pub fn pid(&self) -> i32 {
        // SAFETY: inside the mapping; read as a plain (possibly stale) value.
        unsafe { std::ptr::read_volatile(self.ctl.add(CTL_PID) as *const i32) }
    }

    pub fn set_pid(&self, pid: i32) {
        // SAFETY: inside the mapping, written by the owner before publishing.
        unsafe { std::ptr::write_volatile(self.ctl.add(CTL_PID) as *mut i32, pid) }
    }

    /// The wake-up socket address the receiver published, with the length
    /// its control block claims, as read (a peer may claim more than the
    /// 110 bytes of a `sockaddr_un`: the caller checks).
    pub fn signal_addr(&self) -> (libc::sockaddr_un, libc::socklen_t) {
        // SAFETY: all-zero is a valid sockaddr_un; the copy reads the
        // 110-byte field inside the mapping, the length a u32 inside it.
        unsafe {
            let mut sa: libc::sockaddr_un = std::mem::zeroed();
            std::ptr::copy_nonoverlapping(self.ctl.add(CTL_SIGNAL_SOCKADDR),
                                          &mut sa as *mut libc::sockaddr_un as *mut u8, SOCKADDR_UN_SIZE);
            (sa, std::ptr::read_unaligned(self.ctl.add(CTL_SIGNAL_ADDRLEN) as *const u32))
        }
    }

    pub fn set_signal_addr(&self, sa: &libc::sockaddr_un, len: libc::socklen_t) {
        // SAFETY: writes inside the owner's control block, before publishing.
        unsafe {
            std::ptr::copy_nonoverlapping(sa as *const libc::sockaddr_un as *const u8,
                                          self.ctl.add(CTL_SIGNAL_SOCKADDR), SOCKADDR_UN_SIZE);
            std::ptr::write_unaligned(self.ctl.add(CTL_SIGNAL_ADDRLEN) as *mut u32, len);
        }
    }

    /// The element a counter value designates.
    #[inline(always)]
    pub fn elem(&self, index: u64) -> Elem {
        // SAFETY: the index is masked to the FIFO size, so the element lies
        // inside the mapping.
        Elem(unsafe { self.elems.add(((index & self.mask) as usize) * self.elem_size) })
    }

    pub fn mask(&self) -> u64 {
        self.mask
    }
}

/// One FIFO element.
#[derive(Clone, Copy)]
pub struct Elem(*mut u8);

impl Elem {
    #[inline(always)]
    fn flags_atomic(&self) -> &AtomicU8 {
        // SAFETY: a byte inside the mapping.
        unsafe { &*(self.0.add(EL_FLAGS) as *const AtomicU8) }
    }

    /// Flags, read with acquire ordering: when the owner bit says the
    /// element is ours, everything the sender wrote before it is visible.
    #[inline(always)]
    pub fn flags(&self) -> u8 {
        self.flags_atomic().load(Ordering::Acquire)
    }

    /// Publish the element: everything written before becomes visible to
    /// the receiver no later than the flags.
    #[inline(always)]
    pub fn publish(&self, flags: u8) {
        self.flags_atomic().store(flags, Ordering::Release)
    }

    #[inline(always)]
    pub fn am_id(&self) -> u8 {
        // SAFETY: a byte inside the mapping.
        unsafe { std::ptr::read_volatile(self.0.add(EL_AM_ID)) }
    }

    #[inline(always)]
    pub fn set_am_id(&self, id: u8) {
        // SAFETY: a byte inside the mapping.
        unsafe { std::ptr::write_volatile(self.0.add(EL_AM_ID), id) }
    }

    #[inline(always)]
    pub fn length(&self) -> usize {
        // SAFETY: an unaligned u16 inside the mapping.
        unsafe { std::ptr::read_unaligned(self.0.add(EL_LENGTH) as *const u16) as usize }
    }

    #[inline(always)]
    pub fn set_length(&self, len: u16) {
        // SAFETY: an unaligned u16 inside the mapping.
        unsafe { std::ptr::write_unaligned(self.0.add(EL_LENGTH) as *mut u16, len) }
    }

    #[inline(always)]
    pub fn desc(&self) -> DescInfo {
        // SAFETY: unaligned fields inside the mapping.
        unsafe {
            DescInfo {
                seg_id: std::ptr::read_unaligned(self.0.add(EL_SEG_ID) as *const u64),
                seg_size: std::ptr::read_unaligned(self.0.add(EL_SEG_SIZE) as *const u32),
                offset: std::ptr::read_unaligned(self.0.add(EL_OFFSET) as *const u32),
            }
        }
    }

    /// Attach a receive descriptor to the element (receiver side).
    pub fn set_desc(&self, info: DescInfo, local_data: *mut u8) {
        // SAFETY: unaligned fields inside the mapping.
        unsafe {
            std::ptr::write_unaligned(self.0.add(EL_SEG_ID) as *mut u64, info.seg_id);
            std::ptr::write_unaligned(self.0.add(EL_SEG_SIZE) as *mut u32, info.seg_size);
            std::ptr::write_unaligned(self.0.add(EL_OFFSET) as *mut u32, info.offset);
            std::ptr::write_unaligned(self.0.add(EL_DESC_DATA) as *mut usize, local_data as usize);
        }
    }

    /// Start of the inline data.
    #[inline(always)]
    pub fn data(&self) -> *mut u8 {
        // SAFETY: the header is 28 bytes and elements are larger.
        unsafe { self.0.add(ELEM_HDR) }
    }

    /// Initial state: owner polarity "previous round", nothing inline.
    pub fn init(&self) {
        self.publish(FLAG_OWNER);
    }
}

/// Whether a sender that saw `head` and `tail` may claim another element.
#[inline(always)]
pub fn can_send(head: u64, tail: u64, fifo_size: u64) -> bool {
    // Same arithmetic as UCX: 32-bit signed distance, so the armed bit (63)
    // and wrap-around do not matter.
    (head.wrapping_sub(tail) as u32 as i32) < fifo_size as i32
}

/// Owner polarity bit a sender writes for the element claimed at `head`.
#[inline(always)]
pub fn owner_bit(head: u64, fifo_size: u64) -> u8 {
    if head & fifo_size != 0 { FLAG_OWNER } else { 0 }
}

/// Whether the element at `read_index` holds a new message.
#[inline(always)]
pub fn has_new(read_index: u64, fifo_shift: u32, flags: u8) -> bool {
    ((read_index >> fifo_shift) & 1) as u8 == (flags & FLAG_OWNER)
}
