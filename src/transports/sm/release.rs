//! What the shared-memory transports (self, posix, sysv, cma) do
//! differently from one UCX release to the next, in one place: each item asks the
//! release the process runs (`crate::ucs::release::running`) whether it has
//! the change of release 1.N, with the older behaviour (UCX 1.13.1's) next
//! to it. The rest of the family uses these items and asks no release
//! questions of its own.
//!
//! In short, from 1.13 to 1.18:
//! - self: one device is named `memory` (1.14), the bandwidth is
//!   19360 MB/s and remote keys map to pointers (1.15);
//! - mm (posix, sysv): `UCX_*_BW` defaults to 15360 MB/s, the receive pool
//!   has a chunk-size limit and a growth factor (sysv's grows by 2), posix
//!   gets a minimal shared-memory size, a memory domain that cannot allocate
//!   has no device, and the component maps remote keys (1.14); a posix peer
//!   is reachable only if its segment opens (1.16); `FIFO_SIZE` defaults to
//!   256 (1.16); per-operation overheads are settings (1.17); sysv allocates
//!   at most the kernel's shmmax (1.21);
//! - cma: the send pool gets the chunk-size limit and growth factor (1.14),
//!   reachability probes the peer with a read and the estimated overheads
//!   are 500 ns (1.16); its memory domain reports no registration (1.19);
//! - all: `uct_iface_is_reachable_v2` explains a refusal (1.18), and
//!   `uct_iface_estimate_perf` answers its `flags` field (1.17).

use crate::abi::*;
use crate::core::config::parser::{KeyField, KeyValueParam};
use crate::core::config::{field, parser, TIME_AUTO};
use crate::core::handles::Remote;
use crate::ucs::release::running;
use libc::c_void;
use std::ffi::CStr;
use std::mem::offset_of;

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
pub fn mm_zero_copy() -> bool {
    !running().since(16)
}

// ---------------------------------------------------------------------------
// self

/// Bandwidth of the self transport (MB/s): 19360 from 1.15, 6911 before.
pub fn self_bandwidth_mbs() -> f64 {
    if running().since(15) { 19360.0 } else { 6911.0 }
}

/// The name of self device `i` of `n`: numbered, except a lone device
/// (1.14+) which is just `prefix`.
pub fn self_device_name(prefix: &str, i: usize, n: usize) -> String {
    if n == 1 && running().since(14) {
        return prefix.to_string();
    }
    format!("{prefix}{i}")
}

/// Component flags of self: its remote keys map to local pointers (1.15+).
pub fn self_component_flags() -> u64 {
    if running().since(15) { UCT_COMPONENT_FLAG_RKEY_PTR } else { 0 }
}

/// `uct_rkey_ptr` of self: the rkey is an offset (0 for self's own keys)
/// added to the remote address (1.15+); unsupported before.
pub fn self_rkey_ptr(rkey: uct_rkey_t, handle: *mut c_void, raddr: u64) -> Result<*mut c_void, ucs_status_t> {
    if running().since(15) {
        Ok(Remote::new(raddr, rkey).mapped() as *mut c_void)
    } else {
        crate::core::component::rkey_ptr_unsupported(rkey, handle, raddr)
    }
}

// ---------------------------------------------------------------------------
// mm (posix, sysv)

/// Defaults the mm interface table sets in its `SM_` sub-table: the
/// bandwidth is 15360 MB/s from 1.14 (the sm table's own default stays
/// 12179 MB/s, which cma overrides).
pub fn mm_sm_defaults() -> &'static CStr {
    if running().since(14) { c"ALLOC=md,mmap,heap;BW=15360MBs" } else { c"ALLOC=md,mmap,heap" }
}

/// Default `UCX_{POSIX,SYSV}_FIFO_SIZE`. A sender indexes the peer's FIFO
/// with its own size, so both sides must agree: 256 from 1.16, 64 before.
pub fn mm_fifo_size_default() -> &'static CStr {
    if running().since(16) { c"256" } else { c"64" }
}

/// Defaults the sysv transport sets in its `MM_` table (1.14+: its
/// receive pool doubles each time it grows).
pub fn sysv_mm_defaults() -> &'static CStr {
    if running().since(14) { c"RX_GROW_FACTOR=2.0" } else { c"" }
}

/// Component flags of posix and sysv (1.14+: remote keys map to pointers).
pub fn mm_component_flags() -> u64 {
    if running().since(14) { UCT_COMPONENT_FLAG_RKEY_PTR } else { 0 }
}

/// Whether an mm memory domain that cannot allocate reports no device
/// (1.14+; before, the device was listed and opening it failed).
pub fn mm_device_needs_alloc() -> bool {
    running().since(14)
}

/// What sysv may allocate: anything up to 1.20; from 1.21 on the kernel's
/// `shmmax` as libucs reads it (a C `long`: a larger value stops at
/// `i64::MAX`), anything when it cannot be read or is 0.
pub fn sysv_max_alloc() -> u64 {
    if !running().since(21) {
        return u64::MAX;
    }
    const SHMMAX_FILE: &str = "/proc/sys/kernel/shmmax";
    let limit = match std::fs::read_to_string(SHMMAX_FILE) {
        Ok(text) => parse_c_long(&text).unwrap_or(0) as u64,
        Err(e) => {
            crate::warn!("sysv: cannot read {}: {}", SHMMAX_FILE, e);
            0
        }
    };
    if limit > 0 { limit } else { u64::MAX }
}

/// A number as C's `strtol(text, &end, 0)` reads it, with only white space
/// allowed after it: decimal, `0x` hexadecimal or `0` octal, saturating at
/// the bounds of `i64`; None when there are no digits or something else
/// follows them.
fn parse_c_long(text: &str) -> Option<i64> {
    let t = text.trim_start();
    let (neg, t) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let (radix, t) = if t.len() > 2 && (t.starts_with("0x") || t.starts_with("0X"))
                           && t.as_bytes()[2].is_ascii_hexdigit() {
        (16, &t[2..])
    } else if t.starts_with('0') {
        (8, t)
    } else {
        (10, t)
    };
    let end = t.find(|c: char| !c.is_digit(radix)).unwrap_or(t.len());
    if end == 0 || !t[end..].chars().all(|c| c.is_ascii_whitespace()) {
        return None;
    }
    let mut v: i128 = 0;
    for c in t[..end].chars() {
        v = (v * radix as i128 + c.to_digit(radix)? as i128).min(i64::MAX as i128 + 1);
    }
    let v = if neg { -v } else { v };
    Some(v.clamp(i64::MIN as i128, i64::MAX as i128) as i64)
}

/// Whether a posix peer is reachable only when its FIFO segment can be
/// opened from here (1.16+).
pub fn posix_reach_opens_segment() -> bool {
    running().since(16)
}

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
    if running().since(14) { PoolGrowth { max_chunk_size, grow_factor } } else { POOL_GROWTH_FIXED }
}

/// The `<prefix>MAX_CHUNK_SIZE` and `<prefix>GROW_FACTOR` rows of a pool
/// (1.14+; none before): (name, documentation, offset) of each.
pub fn pool_growth_fields(max_chunk: (&'static CStr, &'static CStr, usize),
                          grow: (&'static CStr, &'static CStr, usize)) -> Vec<ucs_config_field_t> {
    if !running().since(14) {
        return Vec::new();
    }
    vec![
        field(max_chunk.0, c"128m", max_chunk.1, max_chunk.2, parser::memunits()),
        field(grow.0, c"1.0", grow.1, grow.2, parser::double()),
    ]
}

/// Per-operation overheads of an mm interface (seconds), as
/// `uct_iface_estimate_perf` reports them.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct MmOverheads {
    pub send_am_short: f64,
    pub send_am_bcopy: f64,
    pub recv_am_short: f64,
    pub recv_am_bcopy: f64,
}

/// The `SEND_OVERHEAD` / `RECV_OVERHEAD` values as libucs stores them in
/// the interface configuration: 8 bytes each, libucs time units (1.17, a
/// `u64`, "auto" by default) or seconds (1.18+, an `f64`). Read through
/// [`mm_overheads`].
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct MmOverheadConfig {
    pub send_am_short: u64,
    pub send_am_bcopy: u64,
    pub recv_am_short: u64,
    pub recv_am_bcopy: u64,
}

/// The fixed overhead of every mm operation (seconds).
pub const MM_OVERHEAD: f64 = 10e-9;

/// The overheads an mm interface reports: from `UCX_*_SEND_OVERHEAD` and
/// `UCX_*_RECV_OVERHEAD` (1.17+; "auto" stands for the fixed figure), the
/// fixed figure before.
pub fn mm_overheads(configured: &MmOverheadConfig) -> MmOverheads {
    let r = running();
    let secs = |v: u64| {
        if r.since(18) {
            f64::from_bits(v)
        } else if r.since(17) && v != TIME_AUTO {
            crate::ucs::clocks_to_secs(v)
        } else {
            MM_OVERHEAD
        }
    };
    MmOverheads { send_am_short: secs(configured.send_am_short), send_am_bcopy: secs(configured.send_am_bcopy),
                  recv_am_short: secs(configured.recv_am_short), recv_am_bcopy: secs(configured.recv_am_bcopy) }
}

/// The parser argument of one key-value row with keys `am_short` and
/// `am_bcopy`, built once with its table (and kept for good, as the table
/// is).
fn overhead_param(value: ucs_config_parser_t, short: (&'static CStr, usize), bcopy: (&'static CStr, usize))
                  -> &'static KeyValueParam {
    let keys: &'static [KeyField; 3] = Box::leak(Box::new([
        KeyField { name: c"am_short".as_ptr(), doc: short.0.as_ptr(), offset: short.1 },
        KeyField { name: c"am_bcopy".as_ptr(), doc: bcopy.0.as_ptr(), offset: bcopy.1 },
        KeyField { name: std::ptr::null(), doc: std::ptr::null(), offset: 0 },
    ]));
    Box::leak(Box::new(KeyValueParam { value, keys: keys.as_ptr() }))
}

/// The `SEND_OVERHEAD` and `RECV_OVERHEAD` rows of the mm interface table
/// (1.17+, and only with libucs's key-value parser; none before), storing
/// an [`MmOverheadConfig`] at `offset` of the table's struct.
pub fn mm_overhead_fields(offset: usize) -> Vec<ucs_config_field_t> {
    let r = running();
    if !r.since(17) {
        return Vec::new();
    }
    // 1.17 takes libucs time units ("auto": the transport's figure), 1.18
    // seconds.
    let (value, dfl) = if r.since(18) { (parser::time(), c"10e-9") } else { (parser::time_units(), c"auto") };
    let o = |f: usize| offset + f;
    let send = overhead_param(value,
                              (c"overhead of sending a short active message",
                               o(offset_of!(MmOverheadConfig, send_am_short))),
                              (c"overhead of sending a buffered-copy active message",
                               o(offset_of!(MmOverheadConfig, send_am_bcopy))));
    let recv = overhead_param(value,
                              (c"overhead of receiving a short active message",
                               o(offset_of!(MmOverheadConfig, recv_am_short))),
                              (c"overhead of receiving a buffered-copy active message",
                               o(offset_of!(MmOverheadConfig, recv_am_bcopy))));
    let (Some(send), Some(recv)) = (parser::key_value(send), parser::key_value(recv)) else { return Vec::new() };
    vec![
        field(c"SEND_OVERHEAD", dfl,
              c"Time the sender spends on a message once it is handed to the transport,\n\
                until the send operation returns",
              0, send),
        field(c"RECV_OVERHEAD", dfl, c"Time the receiver spends on a message", 0, recv),
    ]
}

/// The posix md's `SHM_MIN_SIZE` row (1.14+; none before).
pub fn posix_shm_min_size_fields(offset: usize) -> Vec<ucs_config_field_t> {
    if !running().since(14) {
        return Vec::new();
    }
    vec![field(c"SHM_MIN_SIZE", c"16m",
               c"Least free space the shared memory directory must have for posix to\n\
                 allocate (and so to offer its device); below it the transport is off.\n",
               offset, parser::memunits())]
}

/// What posix may allocate given the free space of its directory and its
/// `SHM_MIN_SIZE` setting: nothing below that minimum (1.14+).
pub fn posix_max_alloc(available: u64, shm_min_size: usize) -> u64 {
    if running().since(14) && available < shm_min_size as u64 {
        crate::debug!("posix: allocation disabled, {available} bytes free in the shared memory directory \
                       (minimum {shm_min_size})");
        return 0;
    }
    available
}

// ---------------------------------------------------------------------------
// cma

/// Whether the cma md reports registration (REG, host memory registered
/// and cached, a registration cost): up to 1.18; from 1.19 on it reports
/// none, and libucp then packs no remote key for it (a peer running the C
/// original could not unpack one).
pub fn cma_md_registers() -> bool {
    !running().since(19)
}

/// Whether cma probes a peer with a read before calling it reachable
/// (1.16+): a peer that forbids the access (ptrace rules) is not.
pub fn cma_reach_probes_peer() -> bool {
    running().since(16)
}

/// Send and receive overhead cma's `uct_iface_estimate_perf` reports
/// (1.16+: 500 ns; before: the interface's overhead attribute).
pub fn cma_perf_overhead(iface_overhead: f64) -> f64 {
    if running().since(16) { 500e-9 } else { iface_overhead }
}

// ---------------------------------------------------------------------------
// All of them

pub use crate::core::release::reason;

/// Answer the `flags` field of `uct_iface_estimate_perf` (1.17+): none of
/// these transports shares its send and receive resources.
pub fn perf_flags(perf: &mut uct_perf_attr_t) {
    crate::core::release::perf_fill_extra(perf);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn self_names() {
        let want = if running().since(14) { "memory" } else { "memory0" };
        assert_eq!(self_device_name("memory", 0, 1), want);
        assert_eq!(self_device_name("memory", 1, 2), "memory1");
    }

    #[test]
    fn posix_minimum() {
        assert_eq!(posix_max_alloc(1 << 30, 16 << 20), 1 << 30);
        let want = if running().since(14) { 0 } else { 1 << 20 };
        assert_eq!(posix_max_alloc(1 << 20, 16 << 20), want);
    }

    #[test]
    fn c_long_numbers() {
        assert_eq!(parse_c_long("18446744073692774399\n"), Some(i64::MAX));
        assert_eq!(parse_c_long(" 4096"), Some(4096));
        assert_eq!(parse_c_long("0x10"), Some(16));
        assert_eq!(parse_c_long("010"), Some(8));
        assert_eq!(parse_c_long("0"), Some(0));
        assert_eq!(parse_c_long("-5"), Some(-5));
        assert_eq!(parse_c_long("12k"), None);
        assert_eq!(parse_c_long(""), None);
    }

    #[test]
    fn overheads_of_the_release() {
        let r = running();
        let rows = mm_overhead_fields(0);
        assert_eq!(rows.len(), if r.since(17) { 2 } else { 0 });
        let stored = if r.since(18) { 20e-9f64.to_bits() } else { TIME_AUTO };
        let c = MmOverheadConfig { send_am_short: stored, send_am_bcopy: stored, recv_am_short: stored,
                                   recv_am_bcopy: stored };
        let want = if r.since(18) { 20e-9 } else { MM_OVERHEAD };
        assert_eq!(mm_overheads(&c).send_am_bcopy, want);
    }
}
