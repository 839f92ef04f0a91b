//! What `ud_verbs` does differently per UCX release.
//!
//! - 1.18: the bounce buffer counts the 40-byte GRH area, so the largest AM
//!   header grows by 40 (3992 on an MTU-4096 port) while bcopy/zcopy stay at
//!   the segment minus the network header; the interface reports
//!   `UCT_IFACE_FLAG_INTER_NODE`. The wire format does not change.

use super::neth::{GRH_LEN, NETH_LEN};
use super::open::ZCOPY_DESC_LEN;
#[cfg(ucx_since_1_18)]
use crate::abi::*;

/// Our bounce buffer size (without the GRH area) from the configured one.
pub fn seg_size(seg: usize) -> usize {
    seg
}

/// Largest bcopy/zcopy payload.
pub fn payload_max(seg: usize) -> usize {
    seg - NETH_LEN
}

/// Largest am_zcopy header.
pub fn max_hdr(seg: usize) -> usize {
    #[cfg(ucx_since_1_18)]
    {
        seg + GRH_LEN - NETH_LEN - ZCOPY_DESC_LEN
    }
    #[cfg(not(ucx_since_1_18))]
    {
        let _ = GRH_LEN;
        seg - NETH_LEN - ZCOPY_DESC_LEN
    }
}

#[cfg(ucx_since_1_18)]
pub const EXTRA_CAP_FLAGS: u64 = UCT_IFACE_FLAG_INTER_NODE;
#[cfg(not(ucx_since_1_18))]
pub const EXTRA_CAP_FLAGS: u64 = 0;

pub use crate::core::release::reason;

#[cfg(test)]
mod tests {
    #[test]
    fn limits() {
        assert_eq!(super::payload_max(4096), 4088);
        #[cfg(not(ucx_since_1_18))]
        assert_eq!(super::max_hdr(4096), 3952);
    }
}
