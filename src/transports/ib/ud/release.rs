//! What `ud_verbs` does differently per UCX release.
//!
//! - 1.18: the bounce buffer counts the 40-byte GRH area, so the largest AM
//!   header grows by 40 (3992 on an MTU-4096 port) while bcopy/zcopy stay at
//!   the segment minus the network header; the interface reports
//!   `UCT_IFACE_FLAG_INTER_NODE`. The wire format does not change.

use super::neth::{GRH_LEN, NETH_LEN};
use super::open::ZCOPY_DESC_LEN;
use crate::abi::*;
use crate::ucs::release::running;

/// Our bounce buffer size (without the GRH area) from the configured one.
pub fn seg_size(seg: usize) -> usize {
    seg
}

/// Largest bcopy/zcopy payload.
pub fn payload_max(seg: usize) -> usize {
    seg - NETH_LEN
}

/// Largest am_zcopy header (1.18+: the GRH area counts).
pub fn max_hdr(seg: usize) -> usize {
    let grh = if running().since(18) { GRH_LEN } else { 0 };
    seg + grh - NETH_LEN - ZCOPY_DESC_LEN
}

/// Extra capability flags of a ud_verbs interface (1.18+: it reaches
/// other hosts).
pub fn extra_cap_flags() -> u64 {
    if running().since(18) { UCT_IFACE_FLAG_INTER_NODE } else { 0 }
}

pub use crate::core::release::reason;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits() {
        assert_eq!(payload_max(4096), 4088);
        assert_eq!(max_hdr(4096), if running().since(18) { 3992 } else { 3952 });
    }
}
