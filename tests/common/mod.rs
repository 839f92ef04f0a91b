//! Helpers shared by the Rust integration tests.
#![allow(dead_code)]

use ::uct::abi::*;
use ::uct::ffi::component::*;
use std::ffi::{c_uint, CStr};
use std::ptr::null_mut;

extern "C" {
    pub fn ucs_async_context_create(mode: u32, async_p: *mut *mut ucs_async_context_t) -> ucs_status_t;
    pub fn ucs_async_context_destroy(async_: *mut ucs_async_context_t);
}

/// `UCS_ASYNC_MODE_THREAD_SPINLOCK`.
pub const ASYNC_MODE_THREAD_SPINLOCK: u32 = 1;

/// The component of that name, if this library has it.
pub fn find_component(name: &str) -> Option<uct_component_h> {
    let mut list: *mut uct_component_h = null_mut();
    let mut n: c_uint = 0;
    // SAFETY: plain API calls with valid out-pointers.
    unsafe {
        assert_eq!(uct_query_components(&mut list, &mut n), UCS_OK);
        let mut found = None;
        for i in 0..n as usize {
            let mut attr: uct_component_attr_t = std::mem::zeroed();
            attr.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME;
            assert_eq!(uct_component_query(*list.add(i), &mut attr), UCS_OK);
            if CStr::from_ptr(attr.name.as_ptr()).to_str().unwrap() == name {
                found = Some(*list.add(i));
            }
        }
        uct_release_component_list(list);
        found
    }
}

/// The component of that name; panics when absent.
pub fn component(name: &str) -> uct_component_h {
    find_component(name).unwrap_or_else(|| panic!("component {name} not found"))
}
