//! What `rc_verbs` does differently per UCX release.
//!
//! - 1.18: `uct_iface_is_reachable_v2` explains a refusal ([`reason`]);
//!   `uct_iface_estimate_perf` has a `flags` field (filled by the generic
//!   layer's `perf_fill_extra`).
//! - Addresses keep their 1.13.1 layout in 1.18.1 on the verbs md: the
//!   endpoint address stays 4 bytes (its extended form needs a flush rkey,
//!   which the verbs md never has), the device address has no new field
//!   for an InfiniBand port without FLID routing.
//! - Capability flags ([`extra_cap_flags`]): the interface reaches other
//!   hosts (1.18); active messages arrive only after the puts sent before
//!   them (1.22: one QP per endpoint keeps them in order).

pub use crate::core::release::reason;

use crate::abi::*;
use crate::ucs::release::running;

/// Capability flags an rc_verbs interface has beyond 1.13.1's:
/// `INTER_NODE` (1.18+) and `PUT_AM_ORDER` (1.22+).
pub fn extra_cap_flags() -> u64 {
    let r = running();
    let mut f = 0;
    if r.since(18) {
        f |= UCT_IFACE_FLAG_INTER_NODE;
    }
    if r.since(22) {
        f |= UCT_IFACE_FLAG_PUT_AM_ORDER;
    }
    f
}
