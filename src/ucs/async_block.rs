//! Blocking a libucs async context, as UCX 1.13.1's `UCS_ASYNC_BLOCK` /
//! `UCS_ASYNC_UNBLOCK` do.
//!
//! libucp expects the callbacks of a connection manager to run with the
//! worker's async context blocked by the calling thread (it asserts so in
//! its wireup code; Debian's build keeps assertions). libucs exports no
//! function for this: the two macros are inline code over the context's
//! fields, which 1.13.1 lays out as
//!
//! ```text
//!   union { recursive spinlock | recursive mutex [+ owner, count] | int poll_block }
//!   mode (u32), num_handlers, missed queue, last wakeup
//! ```
//!
//! The union is 40 bytes (`pthread_mutex_t`) in a build without assertions
//! and 56 bytes with them (the mutex then carries its owner and count), so
//! `mode` is at 40 or 56. Which one is found once, on a context of our own
//! in recursive-mutex mode (see `detect`). Signal mode
//! (`UCS_ASYNC_MODE_SIGNAL`, which libucp does not use by default) is left
//! unblocked.

use super::{ucs_async_context_create, ucs_async_context_destroy};
use crate::abi::ucs_async_context_t;
use once_cell::sync::Lazy;

const MODE_SIGNAL: u32 = 0;
const MODE_THREAD_SPINLOCK: u32 = 1;
const MODE_THREAD_MUTEX: u32 = 2;
const MODE_POLL: u32 = 3;
/// `UCS_ASYNC_PTHREAD_ID_NULL`.
const PTHREAD_ID_NULL: libc::pthread_t = libc::pthread_t::MAX;

/// `ucs_recursive_spinlock_t` at offset 0 of the context.
#[repr(C)]
struct RecursiveSpinlock {
    lock: libc::pthread_spinlock_t,
    count: i32,
    owner: libc::pthread_t,
}

/// Where `mode` is, and whether the mutex carries owner/count (assertions).
#[derive(Clone, Copy)]
struct Layout {
    mode_offset: usize,
}

const MUTEX_SIZE: usize = std::mem::size_of::<libc::pthread_mutex_t>();
/// Offsets of the assertion-build mutex bookkeeping after the mutex.
const MUTEX_OWNER_OFFSET: usize = MUTEX_SIZE;
const MUTEX_COUNT_OFFSET: usize = MUTEX_SIZE + 8;
const MODE_OFFSET_ASSERT: usize = MUTEX_SIZE + 16;
const MODE_OFFSET_PLAIN: usize = MUTEX_SIZE;

static LAYOUT: Lazy<Option<Layout>> = Lazy::new(detect);

fn read_u32(ctx: *const ucs_async_context_t, offset: usize) -> u32 {
    // SAFETY: callers pass a live context and an offset inside it (both
    // candidate offsets are within the 1.13.1 structure of either build).
    unsafe { std::ptr::read_volatile((ctx as *const u8).add(offset) as *const u32) }
}

fn detect() -> Option<Layout> {
    // A context in recursive-mutex mode: every field in front of `mode` is
    // then initialised (the mutex, and in a build with assertions its owner,
    // set to "no thread", and count), so reading the candidates is defined.
    // Without assertions, offset 40 holds the mode (2); with them, offset 40
    // is the low half of the owner (all ones) and the mode is at 56.
    let mut ctx = std::ptr::null_mut();
    // SAFETY: a plain libucs call; the context is destroyed below.
    if unsafe { ucs_async_context_create(MODE_THREAD_MUTEX, &mut ctx) } != crate::abi::UCS_OK {
        return None;
    }
    let layout = if read_u32(ctx, MODE_OFFSET_PLAIN) == MODE_THREAD_MUTEX {
        Some(Layout { mode_offset: MODE_OFFSET_PLAIN })
    } else if read_u32(ctx, MODE_OFFSET_ASSERT) == MODE_THREAD_MUTEX {
        Some(Layout { mode_offset: MODE_OFFSET_ASSERT })
    } else {
        None
    };
    // SAFETY: ours, created above.
    unsafe { ucs_async_context_destroy(ctx) };
    if layout.is_none() {
        crate::warn!("libucs async context layout not recognized: connection manager callbacks run unblocked");
    }
    layout
}

/// The mode of a live async context (`ucs_async_mode_t`), when the
/// layout is known.
pub fn mode_of(ctx: *const ucs_async_context_t) -> Option<u32> {
    if ctx.is_null() {
        return None;
    }
    let layout = (*LAYOUT)?;
    Some(read_u32(ctx, layout.mode_offset))
}

/// The async context blocked by this thread until dropped.
pub struct AsyncBlock {
    ctx: *mut ucs_async_context_t,
    mode: u32,
    layout: Layout,
}

impl AsyncBlock {
    /// Block `ctx` (null, signal mode or an unknown layout: nothing to do).
    pub fn new(ctx: *mut ucs_async_context_t) -> Option<AsyncBlock> {
        if ctx.is_null() {
            return None;
        }
        let layout = (*LAYOUT)?;
        let mode = read_u32(ctx, layout.mode_offset);
        let base = ctx as *mut u8;
        // SAFETY: `ctx` is the live async context the worker was created
        // with; the fields touched are those UCS_ASYNC_BLOCK touches for
        // its mode, at their 1.13.1 offsets (see the module text).
        unsafe {
            match mode {
                MODE_THREAD_SPINLOCK => {
                    let l = base as *mut RecursiveSpinlock;
                    let me = libc::pthread_self();
                    if std::ptr::read_volatile(&(*l).owner) == me {
                        (*l).count += 1;
                    } else {
                        libc::pthread_spin_lock(&mut (*l).lock);
                        (*l).owner = me;
                        (*l).count += 1;
                    }
                }
                MODE_THREAD_MUTEX => {
                    libc::pthread_mutex_lock(base as *mut libc::pthread_mutex_t);
                    if layout.mode_offset == MODE_OFFSET_ASSERT {
                        let count = base.add(MUTEX_COUNT_OFFSET) as *mut u32;
                        if *count == 0 {
                            *(base.add(MUTEX_OWNER_OFFSET) as *mut libc::pthread_t) = libc::pthread_self();
                        }
                        *count += 1;
                    }
                }
                MODE_POLL => *(base as *mut i32) += 1,
                MODE_SIGNAL => return None,
                _ => return None,
            }
        }
        Some(AsyncBlock { ctx, mode, layout })
    }
}

impl Drop for AsyncBlock {
    fn drop(&mut self) {
        let base = self.ctx as *mut u8;
        // SAFETY: undoes what `new` did, on the same live context, from the
        // thread that blocked it.
        unsafe {
            match self.mode {
                MODE_THREAD_SPINLOCK => {
                    let l = base as *mut RecursiveSpinlock;
                    (*l).count -= 1;
                    if (*l).count == 0 {
                        (*l).owner = PTHREAD_ID_NULL;
                        libc::pthread_spin_unlock(&mut (*l).lock);
                    }
                }
                MODE_THREAD_MUTEX => {
                    if self.layout.mode_offset == MODE_OFFSET_ASSERT {
                        let count = base.add(MUTEX_COUNT_OFFSET) as *mut u32;
                        *count -= 1;
                        if *count == 0 {
                            *(base.add(MUTEX_OWNER_OFFSET) as *mut libc::pthread_t) = PTHREAD_ID_NULL;
                        }
                    }
                    libc::pthread_mutex_unlock(base as *mut libc::pthread_mutex_t);
                }
                MODE_POLL => *(base as *mut i32) -= 1,
                _ => {}
            }
        }
    }
}
