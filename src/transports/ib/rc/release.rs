//! What `rc_verbs` does differently per UCX release.
//!
//! - 1.18: `uct_iface_is_reachable_v2` explains a refusal ([`reason`]);
//!   `uct_iface_estimate_perf` has a `flags` field (filled by the generic
//!   layer's `perf_fill_extra`).
//! - Addresses keep their 1.13.1 layout in 1.18.1 on the verbs md: the
//!   endpoint address stays 4 bytes (its extended form needs a flush rkey,
//!   which the verbs md never has), the device address has no new field
//!   for an InfiniBand port without FLID routing.

pub use crate::core::release::reason;
