//! What the shared-memory transports (self, posix, sysv, cma) do
//! differently from one UCX release to the next, in one place: each item is
//! written for the release that introduced the change (`ucx_since_1_NN`),
//! with the older behaviour (UCX 1.13.1's) next to it. The rest of the
//! family uses these items and has no `cfg` of its own.
//!
//! In short, from 1.13 to 1.18:
//! - self: one device is named `memory` (1.14), the bandwidth is
//!   19360 MB/s and remote keys map to pointers (1.15);
//! - mm (posix, sysv): `UCX_*_BW` defaults to 15360 MB/s, the receive pool
//!   has a chunk-size limit and a growth factor (sysv's grows by 2), posix
//!   gets a minimal shared-memory size, a memory domain that cannot allocate
//!   has no device, and the component maps remote keys (1.14); a posix peer
//!   is reachable only if its segment opens (1.16); `FIFO_SIZE` defaults to
//!   256 (1.16); per-operation overheads are settings (1.17);
//! - cma: the send pool gets the chunk-size limit and growth factor (1.14),
//!   reachability probes the peer with a read and the estimated overheads
//!   are 500 ns (1.16);
//! - all: `uct_iface_is_reachable_v2` explains a refusal (1.18), and
//!   `uct_iface_estimate_perf` answers its `flags` field (1.17).

use crate::abi::*;
#[cfg(ucx_since_1_14)]
use crate::core::config::{field, parser};
use crate::core::handles::Remote;
use libc::c_void;
use std::ffi::CStr;

// ---------------------------------------------------------------------------
// mm zero-copy

/// Whether the mm transports (posix, sysv) offer zero-copy operations and
/// local registrations for them, which the C original's mm does not have.
/// Up to 1.15, libucp chose protocols by thresholds that our registration
/// cost keeps off these operations (zero-copy on mm copies all the same),
/// so offering them changes nothing libucp does. From 1.16 libucp's
/// protocol selection (the "v2" protocols, on by default) models zero-copy
/// on its own and would send eager messages by mm zero-copy, unlike with
/// the C original: from 1.16 the mm transports offer what UCX's do.
pub const MM_ZERO_COPY: bool = cfg!(not(ucx_since_1_16));

// ---------------------------------------------------------------------------
// self

/// Bandwidth of the self transport (MB/s).
#[cfg(ucx_since_1_15)]
pub const SELF_BANDWIDTH_MBS: f64 = 19360.0;
#[cfg(not(ucx_since_1_15))]
pub const SELF_BANDWIDTH_MBS: f64 = 6911.0;

/// The name of self device `i` of `n`: numbered, except a lone device
/// (1.14+) which is just `prefix`.
pub fn self_device_name(prefix: &str, i: usize, n: usize) -> String {
    #[cfg(ucx_since_1_14)]
    if n == 1 {
        return prefix.to_string();
    }
    let _ = n;
    format!("{prefix}{i}")
}

/// Component flags of self: its remote keys map to local pointers (1.15+).
#[cfg(ucx_since_1_15)]
pub const SELF_COMPONENT_FLAGS: u64 = UCT_COMPONENT_FLAG_RKEY_PTR;
#[cfg(not(ucx_since_1_15))]
pub const SELF_COMPONENT_FLAGS: u64 = 0;

/// `uct_rkey_ptr` of self: the rkey is an offset (0 for self's own keys)
/// added to the remote address (1.15+); unsupported before.
#[cfg(ucx_since_1_15)]
pub fn self_rkey_ptr(rkey: uct_rkey_t, _handle: *mut c_void, raddr: u64) -> Result<*mut c_void, ucs_status_t> {
    Ok(Remote::new(raddr, rkey).mapped() as *mut c_void)
}
#[cfg(not(ucx_since_1_15))]
pub fn self_rkey_ptr(rkey: uct_rkey_t, handle: *mut c_void, raddr: u64) -> Result<*mut c_void, ucs_status_t> {
    let _ = Remote::new;
    crate::core::component::rkey_ptr_unsupported(rkey, handle, raddr)
}

// ---------------------------------------------------------------------------
// mm (posix, sysv)

/// Defaults the mm interface table sets in its `SM_` sub-table: the
/// bandwidth is 15360 MB/s from 1.14 (the sm table's own default stays
/// 12179 MB/s, which cma overrides).
#[cfg(ucx_since_1_14)]
pub const MM_SM_DEFAULTS: &CStr = c"ALLOC=md,mmap,heap;BW=15360MBs";
#[cfg(not(ucx_since_1_14))]
pub const MM_SM_DEFAULTS: &CStr = c"ALLOC=md,mmap,heap";

/// Default `UCX_{POSIX,SYSV}_FIFO_SIZE`. A sender indexes the peer's FIFO
/// with its own size, so both sides must agree: 256 from 1.16.
#[cfg(ucx_since_1_16)]
pub const MM_FIFO_SIZE_DEFAULT: &CStr = c"256";
#[cfg(not(ucx_since_1_16))]
pub const MM_FIFO_SIZE_DEFAULT: &CStr = c"64";

/// Defaults the sysv transport sets in its `MM_` table (1.14+: its
/// receive pool doubles each time it grows).
#[cfg(ucx_since_1_14)]
pub const SYSV_MM_DEFAULTS: &CStr = c"RX_GROW_FACTOR=2.0";
#[cfg(not(ucx_since_1_14))]
pub const SYSV_MM_DEFAULTS: &CStr = c"";

/// Component flags of posix and sysv (1.14+: remote keys map to pointers).
#[cfg(ucx_since_1_14)]
pub const MM_COMPONENT_FLAGS: u64 = UCT_COMPONENT_FLAG_RKEY_PTR;
#[cfg(not(ucx_since_1_14))]
pub const MM_COMPONENT_FLAGS: u64 = 0;

/// Whether an mm memory domain that cannot allocate reports no device
/// (1.14+; before, the device was listed and opening it failed).
#[cfg(ucx_since_1_14)]
pub const MM_DEVICE_NEEDS_ALLOC: bool = true;
#[cfg(not(ucx_since_1_14))]
pub const MM_DEVICE_NEEDS_ALLOC: bool = false;

/// Whether a posix peer is reachable only when its FIFO segment can be
/// opened from here (1.16+).
#[cfg(ucx_since_1_16)]
pub const POSIX_REACH_OPENS_SEGMENT: bool = true;
#[cfg(not(ucx_since_1_16))]
pub const POSIX_REACH_OPENS_SEGMENT: bool = false;

/// The growth settings of a memory pool: the largest chunk (bytes) and the
/// factor each new chunk's element count is multiplied by.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PoolGrowth {
    pub max_chunk_size: usize,
    pub grow_factor: f64,
}

/// Without the settings (before 1.14) pools grow by the same step forever.
pub const POOL_GROWTH_FIXED: PoolGrowth = PoolGrowth { max_chunk_size: usize::MAX, grow_factor: 1.0 };

/// The growth of a pool from its `*_MAX_CHUNK_SIZE` / `*_GROW_FACTOR`
/// settings (1.14+), or [`POOL_GROWTH_FIXED`] where they do not exist.
pub fn pool_growth(max_chunk_size: usize, grow_factor: f64) -> PoolGrowth {
    #[cfg(ucx_since_1_14)]
    {
        PoolGrowth { max_chunk_size, grow_factor }
    }
    #[cfg(not(ucx_since_1_14))]
    {
        let _ = (max_chunk_size, grow_factor);
        POOL_GROWTH_FIXED
    }
}

/// The `<prefix>MAX_CHUNK_SIZE` and `<prefix>GROW_FACTOR` rows of a pool
/// (1.14+; none before). `what` names the pool in the documentation.
#[allow(unused_variables)]
pub fn pool_growth_fields(max_chunk: (&'static CStr, &'static CStr, usize),
                          grow: (&'static CStr, &'static CStr, usize)) -> Vec<ucs_config_field_t> {
    #[cfg(ucx_since_1_14)]
    {
        vec![
            field(max_chunk.0, c"128m", max_chunk.1, max_chunk.2, parser::memunits()),
            field(grow.0, c"1.0", grow.1, grow.2, parser::double()),
        ]
    }
    #[cfg(not(ucx_since_1_14))]
    {
        Vec::new()
    }
}

/// Per-operation overheads of an mm interface (seconds), as
/// `uct_iface_estimate_perf` reports them.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct MmOverheads {
    pub send_am_short: f64,
    pub send_am_bcopy: f64,
    pub recv_am_short: f64,
    pub recv_am_bcopy: f64,
}

/// The fixed overhead of every mm operation (seconds).
pub const MM_OVERHEAD: f64 = 10e-9;

/// The overheads an mm interface reports: from `UCX_*_SEND_OVERHEAD` and
/// `UCX_*_RECV_OVERHEAD` (1.17+), the fixed figure before.
pub fn mm_overheads(configured: &MmOverheads) -> MmOverheads {
    #[cfg(ucx_since_1_17)]
    {
        *configured
    }
    #[cfg(not(ucx_since_1_17))]
    {
        let _ = configured;
        MmOverheads { send_am_short: MM_OVERHEAD, send_am_bcopy: MM_OVERHEAD, recv_am_short: MM_OVERHEAD,
                      recv_am_bcopy: MM_OVERHEAD }
    }
}

#[cfg(ucx_since_1_17)]
mod overhead_fields {
    use super::*;
    use crate::core::config::parser::{KeyField, KeyValueParam};

    /// A time value (seconds, as a double); the help text is the 1.17+ one.
    fn time() -> ucs_config_parser_t {
        crate::ucs::parser::value_parser(Some(crate::ucs::ucs_config_sscanf_time),
                                         Some(crate::ucs::ucs_config_sprintf_time),
                                         crate::ucs::ucs_config_clone_double, crate::ucs::ucs_config_release_nop,
                                         crate::ucs::ucs_config_help_generic,
                                         c"time value: <number>[m|s|ms|us|ns]".as_ptr() as *const c_void)
    }

    /// The parser argument of one key-value row with keys `am_short` and
    /// `am_bcopy`, built once with its table (and kept for good, as the
    /// table is).
    fn param(short: (&'static CStr, usize), bcopy: (&'static CStr, usize)) -> &'static KeyValueParam {
        let keys: &'static [KeyField; 3] = Box::leak(Box::new([
            KeyField { name: c"am_short".as_ptr(), doc: short.0.as_ptr(), offset: short.1 },
            KeyField { name: c"am_bcopy".as_ptr(), doc: bcopy.0.as_ptr(), offset: bcopy.1 },
            KeyField { name: std::ptr::null(), doc: std::ptr::null(), offset: 0 },
        ]));
        Box::leak(Box::new(KeyValueParam { value: time(), keys: keys.as_ptr() }))
    }

    pub fn fields(offset: usize) -> Vec<ucs_config_field_t> {
        let o = |f: usize| offset + f;
        let send = param((c"overhead of sending a short active message", o(std::mem::offset_of!(MmOverheads, send_am_short))),
                         (c"overhead of sending a buffered-copy active message",
                          o(std::mem::offset_of!(MmOverheads, send_am_bcopy))));
        let recv = param((c"overhead of receiving a short active message",
                          o(std::mem::offset_of!(MmOverheads, recv_am_short))),
                         (c"overhead of receiving a buffered-copy active message",
                          o(std::mem::offset_of!(MmOverheads, recv_am_bcopy))));
        vec![
            field(c"SEND_OVERHEAD", c"10e-9",
                  c"Time the sender spends on a message once it is handed to the transport,\n\
                    until the send operation returns",
                  0, parser::key_value(send)),
            field(c"RECV_OVERHEAD", c"10e-9", c"Time the receiver spends on a message",
                  0, parser::key_value(recv)),
        ]
    }
}

/// The `SEND_OVERHEAD` and `RECV_OVERHEAD` rows of the mm interface table
/// (1.17+; none before), storing an [`MmOverheads`] at `offset` of the
/// table's struct.
pub fn mm_overhead_fields(offset: usize) -> Vec<ucs_config_field_t> {
    #[cfg(ucx_since_1_17)]
    {
        overhead_fields::fields(offset)
    }
    #[cfg(not(ucx_since_1_17))]
    {
        let _ = offset;
        Vec::new()
    }
}

/// The posix md's `SHM_MIN_SIZE` row (1.14+; none before).
pub fn posix_shm_min_size_fields(offset: usize) -> Vec<ucs_config_field_t> {
    #[cfg(ucx_since_1_14)]
    {
        vec![field(c"SHM_MIN_SIZE", c"16m",
                   c"Least free space the shared memory directory must have for posix to\n\
                     allocate (and so to offer its device); below it the transport is off.\n",
                   offset, parser::memunits())]
    }
    #[cfg(not(ucx_since_1_14))]
    {
        let _ = offset;
        Vec::new()
    }
}

/// What posix may allocate given the free space of its directory and its
/// `SHM_MIN_SIZE` setting: nothing below that minimum (1.14+).
pub fn posix_max_alloc(available: u64, shm_min_size: usize) -> u64 {
    #[cfg(ucx_since_1_14)]
    if available < shm_min_size as u64 {
        crate::debug!("posix: allocation disabled, {available} bytes free in the shared memory directory \
                       (minimum {shm_min_size})");
        return 0;
    }
    let _ = shm_min_size;
    available
}

// ---------------------------------------------------------------------------
// cma

/// Whether cma probes a peer with a read before calling it reachable
/// (1.16+): a peer that forbids the access (ptrace rules) is not.
#[cfg(ucx_since_1_16)]
pub const CMA_REACH_PROBES_PEER: bool = true;
#[cfg(not(ucx_since_1_16))]
pub const CMA_REACH_PROBES_PEER: bool = false;

/// Send and receive overhead cma's `uct_iface_estimate_perf` reports
/// (1.16+: 500 ns; before: the interface's overhead attribute).
#[cfg(ucx_since_1_16)]
pub fn cma_perf_overhead(_iface_overhead: f64) -> f64 {
    500e-9
}
#[cfg(not(ucx_since_1_16))]
pub fn cma_perf_overhead(iface_overhead: f64) -> f64 {
    iface_overhead
}

// ---------------------------------------------------------------------------
// All of them

pub use crate::core::release::reason;

/// Answer the `flags` field of `uct_iface_estimate_perf` (1.17+): none of
/// these transports shares its send and receive resources.
pub fn perf_flags(perf: &mut uct_perf_attr_t) {
    #[cfg(ucx_since_1_17)]
    if perf.field_mask & UCT_PERF_ATTR_FIELD_FLAGS != 0 {
        perf.flags = 0;
    }
    let _ = perf;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn self_names() {
        #[cfg(ucx_since_1_14)]
        assert_eq!(self_device_name("memory", 0, 1), "memory");
        #[cfg(not(ucx_since_1_14))]
        assert_eq!(self_device_name("memory", 0, 1), "memory0");
        assert_eq!(self_device_name("memory", 1, 2), "memory1");
    }

    #[test]
    fn posix_minimum() {
        assert_eq!(posix_max_alloc(1 << 30, 16 << 20), 1 << 30);
        #[cfg(ucx_since_1_14)]
        assert_eq!(posix_max_alloc(1 << 20, 16 << 20), 0);
        #[cfg(not(ucx_since_1_14))]
        assert_eq!(posix_max_alloc(1 << 20, 16 << 20), 1 << 20);
    }
}
