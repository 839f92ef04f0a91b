//! C ABI of UCX 1.13.1's public UCT headers, as Rust `#[repr(C)]` items.
//!
//! Everything a C caller of `libuct.so.0` can see is declared here under
//! its exact C name: structs, unions, typedefs, enum values, flag bits and
//! limits from `uct/api/uct.h`, `uct_def.h`, `tl.h`, `version.h` and
//! `v2/uct_v2.h`, plus the libucs types those headers embed. The rest of the
//! crate imports them with `use crate::abi::*`.
//!
//! Conventions:
//! * Names are the C names. A struct is named after its typedef
//!   (`uct_iface_attr_t`); when the C struct tag differs, an alias with the
//!   tag name exists too (`uct_iface_attr`). Anonymous nested structs and
//!   unions are named `<outer>_<member path>_t` (table in [`uct`]).
//! * C enums become a `u32` type alias plus constants. Flag constants take
//!   the integer type of the field or argument they are used with (for
//!   example `UCT_IFACE_FLAG_*` and every `*_FIELD_*` are `u64`,
//!   `UCT_CB_FLAG_*` are `u32`).
//! * `ucs_status_t` is `i8`: the C enum is packed to one byte.
//! * Function-pointer typedefs are `Option<unsafe extern "C" fn(..)>`, so a
//!   NULL pointer is `None`.
//! * Opaque C structs are zero-sized `#[repr(C, align(8))]` types that only
//!   appear behind pointers.
//! * C members named with Rust keywords use raw identifiers (`r#priv`,
//!   `r#type`).
//!
//! The layouts are checked at compile time against the reference table in
//! `tests/data/ucx-1.13.1-layouts.tsv` (see `layout_asserts.rs`), and the
//! C header generated from this module (`include/uct-rs/uct_abi.h`) is
//! compared with the real UCX headers by `c-tests/layout-check.sh`.

#![allow(non_camel_case_types, non_upper_case_globals, non_snake_case)]
#![allow(clippy::unreadable_literal, clippy::zero_ptr)]

pub mod tl;
pub mod ucs;
pub mod uct;
pub mod uct_def;
pub mod v2;
pub mod version;

/// cbindgen:ignore
#[cfg(not(ucx_since_1_14))]
mod layout_asserts;

pub use tl::*;
pub use ucs::*;
pub use uct::*;
pub use uct_def::*;
pub use v2::*;
pub use version::*;

/// Implements `Default` as "all bytes zero" for plain C structs whose every
/// member (integers, floats, raw pointers, `Option<fn>`, byte arrays,
/// `sockaddr_storage`, unions of those) accepts the all-zero pattern. This
/// matches the usual C idiom of `memset(&params, 0, sizeof(params))`.
macro_rules! zeroed_default {
    ($($t:ty),* $(,)?) => {
        $(
            impl Default for $t {
                #[inline]
                fn default() -> Self {
                    // SAFETY: every member of this repr(C) type is valid
                    // when all of its bytes are zero (see macro docs).
                    unsafe { ::core::mem::zeroed() }
                }
            }
        )*
    };
}

zeroed_default!(
    // ucs
    ucs_callbackq_elem_t,
    ucs_callbackq_t,
    ucs_cpu_set_t,
    ucs_linear_func_t,
    ucs_sock_addr_t,
    ucs_config_names_array_t,
    ucs_config_allow_list_t,
    ucs_list_link_t,
    ucs_config_parser_t,
    ucs_config_array_t,
    ucs_config_field_t,
    ucs_config_global_list_entry_t,
    ucs_range_spec_t,
    ucs_config_bw_spec_t,
    // uct_def.h
    uct_iov_t,
    uct_cm_ep_priv_data_pack_args_t,
    uct_cm_ep_resolve_args_t,
    uct_cm_remote_data_t,
    uct_cm_listener_conn_request_args_t,
    uct_cm_ep_client_connect_args_t,
    uct_cm_ep_server_conn_notify_args_t,
    // uct.h
    uct_md_resource_desc_t,
    uct_component_attr_t,
    uct_tl_resource_desc_t,
    uct_ppn_bandwidth_t,
    uct_iface_attr_cap_put_t,
    uct_iface_attr_cap_get_t,
    uct_iface_attr_cap_am_t,
    uct_iface_attr_cap_tag_recv_t,
    uct_iface_attr_cap_tag_eager_t,
    uct_iface_attr_cap_tag_rndv_t,
    uct_iface_attr_cap_tag_t,
    uct_iface_attr_cap_atomic_t,
    uct_iface_attr_cap_t,
    uct_iface_attr_t,
    uct_iface_params_mode_device_t,
    uct_iface_params_mode_sockaddr_t,
    uct_iface_params_mode_t,
    uct_iface_params_t,
    uct_ep_params_t,
    uct_ep_connect_params_t,
    uct_cm_attr_t,
    uct_listener_attr_t,
    uct_listener_params_t,
    uct_md_attr_cap_t,
    uct_md_attr_t,
    uct_md_mem_attr_t,
    uct_allocated_memory_t,
    uct_rkey_bundle_t,
    uct_completion_t,
    uct_pending_req_t,
    uct_tag_context_t,
    uct_mem_alloc_params_mds_t,
    uct_mem_alloc_params_t,
    // tl.h
    uct_iface_ops_t,
    uct_worker_t,
    uct_iface_t,
    uct_ep_t,
    uct_listener_t,
    uct_recv_desc_t,
    // v2
    uct_perf_attr_t,
    uct_ep_attr_t,
    uct_md_mem_dereg_params_t,
    uct_md_mkey_pack_params_t,
    uct_iface_is_reachable_params_t,
);
