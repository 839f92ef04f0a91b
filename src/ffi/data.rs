//! The exported data arrays, with the sizes of the C original.

use crate::core::mem::{Names, ALLOC_METHOD_NAMES};

/// Names of `uct_alloc_method_t`, NULL-terminated (6 pointers, 48 bytes).
#[no_mangle]
pub static uct_alloc_method_names: Names<6> = ALLOC_METHOD_NAMES;

/// Names of `uct_device_type_t` (4 pointers, 32 bytes, as in the original).
#[no_mangle]
pub static uct_device_type_names: Names<4> = Names([
    c"network".as_ptr(),
    c"intra-node".as_ptr(),
    c"accelerator".as_ptr(),
    c"loopback".as_ptr(),
]);

/// Names of `uct_ep_operation_t`, NULL-terminated (16 pointers, 128 bytes).
#[no_mangle]
pub static uct_ep_operation_names: Names<16> = Names([
    c"am_short".as_ptr(),
    c"am_bcopy".as_ptr(),
    c"am_zcopy".as_ptr(),
    c"put_short".as_ptr(),
    c"put_bcopy".as_ptr(),
    c"put_zcopy".as_ptr(),
    c"get_short".as_ptr(),
    c"get_bcopy".as_ptr(),
    c"get_zcopy".as_ptr(),
    c"eager_short".as_ptr(),
    c"eager_bcopy".as_ptr(),
    c"eager_zcopy".as_ptr(),
    c"rndv_zcopy".as_ptr(),
    c"atomic_post".as_ptr(),
    c"atomic_fetch".as_ptr(),
    std::ptr::null(),
]);
