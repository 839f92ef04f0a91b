//! What the generic layer does differently per UCX release, in one place.
//! (The ABI itself is in `crate::abi`, libucs's changed calls in
//! `crate::ucs`; transports keep theirs in `transports/<family>/release.rs`.)

use crate::abi::*;
use crate::ucs::release::running;
use std::ffi::CStr;

/// The reason an `is_reachable` check failed, as `uct_iface_is_reachable_v2`
/// hands it back (1.18+; before, no reason is given). `text` is only
/// evaluated when the release reports it.
pub fn reason(text: impl FnOnce() -> String) -> String {
    if running().since(18) { text() } else { String::new() }
}

/// Whether memory registration and allocation must ask for some access (a
/// `UCT_MD_MEM_ACCESS_*` flag): up to 1.14; from 1.15 no flag is needed.
pub fn access_flag_required() -> bool {
    !running().since(15)
}

/// The peer address lengths a caller may pass in `uct_ep_params_t`
/// (1.18+: `dev_addr_length`, `iface_addr_length`); None when not given.
/// Older callers' structs end before those members: they are read only
/// where the release has them.
pub fn ep_param_addr_lens(p: &uct_ep_params_t) -> (Option<usize>, Option<usize>) {
    if !running().since(18) {
        return (None, None);
    }
    let m = p.field_mask;
    ((m & UCT_EP_PARAM_FIELD_DEV_ADDR_LENGTH != 0).then_some(p.dev_addr_length),
     (m & UCT_EP_PARAM_FIELD_IFACE_ADDR_LENGTH != 0).then_some(p.iface_addr_length))
}

/// The `uct_ep_params_t` field bits the running release defines.
pub fn ep_param_fields() -> u64 {
    if running().since(18) { (1u64 << 19) - 1 } else { (1u64 << 17) - 1 }
}

/// `uct_md_mem_attr_t` bits the running release defines beyond the 1.13
/// ones (1.14+), and what a memory domain without dma-buf support answers
/// for them.
pub fn mem_attr_fill_extra(attr: &mut uct_md_mem_attr_t) {
    if !running().since(14) {
        return;
    }
    if attr.field_mask & UCT_MD_MEM_ATTR_FIELD_DMABUF_FD != 0 {
        attr.dmabuf_fd = UCT_DMABUF_FD_INVALID;
    }
    if attr.field_mask & UCT_MD_MEM_ATTR_FIELD_DMABUF_OFFSET != 0 {
        attr.dmabuf_offset = 0;
    }
}

/// All `uct_md_mem_attr_t` field bits of the running release.
pub fn mem_attr_fields() -> u64 {
    if running().since(14) { (1u64 << 6) - 1 } else { (1u64 << 4) - 1 }
}

/// Performance flags an estimate reports (1.17+ `uct_perf_attr_t::flags`):
/// none of our transports shares one resource between send and receive.
pub fn perf_fill_extra(perf: &mut uct_perf_attr_t) {
    if running().since(17) && perf.field_mask & UCT_PERF_ATTR_FIELD_FLAGS != 0 {
        perf.flags = 0;
    }
}

/// The syntax line of time values, as libucs's own types print it
/// (1.18 added minutes).
pub fn time_syntax() -> &'static CStr {
    if running().since(18) {
        c"time value: <number>[m|s|ms|us|ns]"
    } else {
        c"time value: <number>[s|us|ms|ns]"
    }
}

/// The syntax line of time values that also take "inf" and "auto".
pub fn time_units_syntax() -> &'static CStr {
    if running().since(18) {
        c"time value: <number>[m|s|ms|us|ns], \"inf\", or \"auto\""
    } else {
        c"time value: <number>[s|us|ms|ns], \"inf\", or \"auto\""
    }
}

/// How `uct_iface_mem_alloc` treats a memory domain that cannot register:
/// up to 1.18 it allocates through the md or fails; from 1.19 only a
/// domain that needs memory handles or keys (`UCT_MD_FLAG_NEED_MEMH`,
/// `NEED_RKEY`) does, the others get plain memory and no handle.
pub fn iface_alloc_by_need() -> bool {
    running().since(19)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_only_where_reported() {
        let r = reason(|| "iface address is empty".to_string());
        if running().since(18) {
            assert_eq!(r, "iface address is empty");
        } else {
            assert!(r.is_empty());
        }
    }
}
