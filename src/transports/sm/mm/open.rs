//! Opening an mm interface: the configuration checks, the receive FIFO in a
//! new shared segment with its wake-up socket (a unix datagram socket bound
//! to a kernel-chosen abstract name, which the FIFO's control block
//! publishes), and a receive descriptor for every element (as
//! `uct_mm_iface_t`'s constructor in UCX 1.13.1's
//! `src/uct/sm/mm/base/mm_iface.c` does).

use super::desc::{release_desc, DescPool, ReleaseDesc};
use super::fifo::{self, Fifo};
use super::iface::MmIface;
use super::mapper::Mapper;
use super::md::MmMd;
use super::MmIfaceConfig;
use crate::abi::*;
use crate::core::iface::{Iface, IfaceHeader, IfaceParams, InternalOps};
use crate::core::md::MdObj;
use crate::core::worker::WorkerObj;
use crate::sys::socket::{unix_addr_to_raw, Socket, UnixAddr};
use crate::sys::errno_str;
use crate::transports::sm::release;
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::marker::PhantomData;
use std::sync::atomic::Ordering;

/// `FIFO_MAX_POLL` when the setting is 0 or infinite.
const FIFO_DEFAULT_MAX_POLL: u32 = 16;

/// The wake-up socket: non-blocking, close-on-exec, autobound; with the
/// name it got.
fn create_signal_socket() -> Result<(Socket, UnixAddr), ucs_status_t> {
    let sock = Socket::unix_dgram().map_err(|err| {
        crate::error!("failed to create unix domain socket for signal: {}", errno_str(err as i32));
        UCS_ERR_IO_ERROR
    })?;
    let name = sock.autobind().map_err(|err| {
        crate::error!("failed to auto-bind unix domain socket: {}", errno_str(err as i32));
        UCS_ERR_IO_ERROR
    })?;
    Ok((sock, name))
}

/// Open a posix or sysv interface.
pub fn open<M: Mapper>(md: &MdObj, worker: &WorkerObj, params: &IfaceParams, cfg: &MmIfaceConfig,
                       internal: &'static InternalOps) -> Result<uct_iface_h, ucs_status_t> {
    let Some(mm) = MmMd::<M>::of(md) else {
        crate::error!("mm: memory domain {} is not a shared-memory domain", md.name);
        return Err(UCS_ERR_INVALID_PARAM);
    };
    if params.open_mode & UCT_IFACE_OPEN_MODE_DEVICE == 0 {
        crate::error!("only UCT_IFACE_OPEN_MODE_DEVICE is supported");
        return Err(UCS_ERR_UNSUPPORTED);
    }
    if params.dev_name != super::DEVICE_NAME {
        crate::error!("{}: no device named '{}'", md.component.name, params.dev_name);
        return Err(UCS_ERR_NO_DEVICE);
    }
    if worker.thread_mode == UCS_THREAD_MODE_MULTI {
        crate::error!("Shared memory transport does not support multi-threaded worker");
        return Err(UCS_ERR_INVALID_PARAM);
    }
    crate::core::config::check_pool_limits("mm receive descriptors", cfg.rx_bufs_grow, cfg.rx_max_bufs)?;
    let fifo_size = cfg.fifo_size as usize;
    if fifo_size <= 1 || !fifo_size.is_power_of_two() {
        crate::error!("The MM FIFO size must be a power of two and bigger than 1.");
        return Err(UCS_ERR_INVALID_PARAM);
    }
    if !(0.0..1.0).contains(&cfg.release_factor) {
        crate::error!("The MM release FIFO factor must be: (0 =< factor < 1).");
        return Err(UCS_ERR_INVALID_PARAM);
    }
    let elem_size = cfg.fifo_elem_size as usize;
    if elem_size <= fifo::ELEM_HDR || elem_size - fifo::ELEM_HDR > u16::MAX as usize {
        crate::error!("FIFO_ELEM_SIZE ({}) must be larger than the {}-byte element header and at most {}",
                      elem_size, fifo::ELEM_HDR, u16::MAX as usize + fifo::ELEM_HDR);
        return Err(UCS_ERR_INVALID_PARAM);
    }
    if cfg.seg_size == 0 || cfg.seg_size > u16::MAX as usize {
        crate::error!("SEG_SIZE ({}) must be between 1 and {} (the FIFO length field is 16 bits)",
                      cfg.seg_size, u16::MAX);
        return Err(UCS_ERR_INVALID_PARAM);
    }
    let (align, align_offset) = match params.am_alignment {
        Some(a) if a > 1 => (a, if params.am_align_offset < cfg.seg_size { params.am_align_offset } else { 0 }),
        _ => (fifo::CACHE_LINE, 0),
    };
    let fifo_max_poll = if cfg.fifo_max_poll == u64::MAX as libc::c_ulong - 1 || cfg.fifo_max_poll == 0 {
        FIFO_DEFAULT_MAX_POLL
    } else {
        cfg.fifo_max_poll.min(u32::MAX as libc::c_ulong) as u32
    };
    let release_mask = {
        let n = ((fifo_size as f64 * cfg.release_factor) as usize).max(1);
        let log = usize::BITS - 1 - n.leading_zeros();
        (1u64 << log) - 1
    };

    let fifo_seg = mm.alloc_segment(fifo::segment_bytes(fifo_size, elem_size), "mm_recv_fifo")?;
    // SAFETY: the segment was just created with the FIFO's size.
    let fifo = unsafe { Fifo::new(fifo_seg.address as *mut u8, fifo_size, elem_size) };
    let (signal, signal_name) = match create_signal_socket() {
        Ok(x) => x,
        Err(s) => {
            let _ = mm.mapper.free(fifo_seg);
            return Err(s);
        }
    };
    fifo.head().store(0, Ordering::Relaxed);
    fifo.tail().store(0, Ordering::Relaxed);
    fifo.set_pid(crate::sys::getpid());
    let (sa, sa_len) = unix_addr_to_raw(&signal_name);
    fifo.set_signal_addr(&sa, sa_len);
    crate::debug!("mm: own FIFO at {:p} (segment {:p}) pid {}", fifo.elem(0).data(), fifo_seg.address, fifo.pid());

    let max_bufs = if cfg.rx_max_bufs < 0 { None } else { Some(cfg.rx_max_bufs as usize) };
    let growth = release::pool_growth(cfg.rx_max_chunk_size, cfg.rx_grow_factor);
    let pool = Box::new(DescPool::new(mm, params.rx_headroom, cfg.seg_size, align, align_offset,
                                      cfg.rx_bufs_grow as usize, growth, max_bufs));
    // As libucs checks a memory pool's settings: the growth factor is at
    // least 1 and a chunk holds at least one descriptor.
    if growth.grow_factor.is_nan() || growth.grow_factor < 1.0 {
        crate::error!("Invalid memory pool parameter(s): mm receive descriptors grow by a factor of {}",
                      growth.grow_factor);
        drop(pool);
        drop(signal);
        let _ = mm.mapper.free(fifo_seg);
        return Err(UCS_ERR_INVALID_PARAM);
    }
    if growth.max_chunk_size < pool.chunk_bytes(1) {
        crate::error!("Invalid memory pool parameter: chunk size is too small ({})", growth.max_chunk_size);
        drop(pool);
        drop(signal);
        let _ = mm.mapper.free(fifo_seg);
        return Err(UCS_ERR_INVALID_PARAM);
    }
    let release = Box::new(ReleaseDesc { base: uct_recv_desc_t { cb: Some(release_desc::<M>) },
                                         pool: &*pool as *const DescPool<M> });
    let mut elem_slot = Vec::with_capacity(fifo_size);
    for i in 0..fifo_size as u64 {
        let Some(slot) = pool.get() else {
            crate::error!("failed to allocate a descriptor for MM");
            for c in &elem_slot {
                let c: &Cell<*mut u8> = c;
                pool.put(c.get());
            }
            drop(pool);
            drop(signal);
            let _ = mm.mapper.free(fifo_seg);
            return Err(UCS_ERR_NO_RESOURCE);
        };
        let e = fifo.elem(i);
        e.set_desc(pool.info(slot), pool.data(slot));
        e.init();
        elem_slot.push(Cell::new(slot));
    }
    let spare = pool.get();
    let extra_flags = if cfg.error_handling != 0 { UCT_IFACE_FLAG_ERRHANDLE_PEER_FAILURE } else { 0 };
    // SAFETY: the base config is the first member of the mm config.
    let hdr = IfaceHeader::new(md, worker, params, &cfg.sm.base, internal);
    crate::debug!("created mm iface FIFO id {:#x} size {} ({} x {} elems)", fifo_seg.seg_id, fifo_seg.length,
                  elem_size, fifo_size);
    let tl = MmIface {
        md: mm,
        fifo_seg,
        fifo,
        fifo_size: fifo_size as u64,
        fifo_shift: fifo_size.trailing_zeros(),
        elem_size,
        max_short: elem_size - fifo::ELEM_HDR,
        seg_size: cfg.seg_size,
        release_mask,
        fifo_max_poll,
        read_index: Cell::new(0),
        dropped: Cell::new(0),
        poll_count: Cell::new(fifo_max_poll),
        prev_wnd_cons: Cell::new(false),
        elem_slot,
        spare: Cell::new(spare),
        pool,
        release,
        signal,
        pending_eps: RefCell::new(VecDeque::new()),
        bandwidth: cfg.sm.bandwidth,
        overheads: release::mm_overheads(&cfg.overhead),
        extra_flags,
        _m: PhantomData,
    };
    Ok(Iface::into_handle(hdr, tl))
}
