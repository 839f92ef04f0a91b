//! Publishing configuration tables in libucs's global table list, the way
//! UCX's components do, so that `ucx_info -c` (and anything else that walks
//! the list) sees `UCX_SELF_SEG_SIZE` and friends. The exported library
//! calls [`publish`] when it is loaded and [`withdraw`] before it is
//! unloaded (see `ffi::load`).

use crate::abi::*;
use crate::core::config::ConfigDesc;
use crate::ucs;
use once_cell::sync::Lazy;
use std::sync::Mutex;

struct Entries(Vec<*mut ucs_config_global_list_entry_t>);
// SAFETY: the entries are only touched under the mutex, at load and unload.
unsafe impl Send for Entries {}

static ENTRIES: Lazy<Mutex<Entries>> = Lazy::new(|| Mutex::new(Entries(Vec::new())));

/// Link one list entry per table at the tail of libucs's list.
///
/// Runs in the loader's constructor phase, before any thread of the
/// application can walk the list through us.
pub fn publish(descs: &[&'static ConfigDesc]) {
    let mut entries = ENTRIES.lock().unwrap_or_else(|e| e.into_inner());
    for d in descs {
        let e = Box::into_raw(Box::new(ucs::parser::entry(d.name.as_ptr(), d.prefix.as_ptr(),
                                                          Lazy::force(d.table).as_ptr(), d.size)));
        // SAFETY: linking a node we own (boxed above, freed only by
        // `withdraw`) at the tail of libucs's circular list, whose head is
        // always a valid node; nothing walks the list concurrently (see
        // above).
        unsafe {
            let head = std::ptr::addr_of_mut!(ucs::ucs_config_global_list);
            let node = std::ptr::addr_of_mut!((*e).list);
            (*node).prev = (*head).prev;
            (*node).next = head;
            (*(*head).prev).next = node;
            (*head).prev = node;
        }
        entries.0.push(e);
    }
}

/// The entry [`publish`] linked for `desc`'s table, if any: libucs (1.15+)
/// marks the entry it parses a config from, and its "unused variable"
/// warning only looks at marked tables.
pub fn published(desc: &ConfigDesc) -> Option<*mut ucs_config_global_list_entry_t> {
    let table = Lazy::force(desc.table).as_ptr();
    let entries = ENTRIES.lock().unwrap_or_else(|e| e.into_inner());
    // SAFETY: the entries stay allocated until `withdraw`, which takes the
    // same lock; only the `table` member is read.
    entries.0.iter().copied().find(|&e| unsafe { (*e).table } == table)
}

/// Unlink and free every entry [`publish`] linked.
pub fn withdraw() {
    let mut entries = ENTRIES.lock().unwrap_or_else(|e| e.into_inner());
    for e in entries.0.drain(..) {
        // SAFETY: `e` was boxed and linked by `publish` and is unlinked and
        // freed once, here; its neighbours are live list nodes.
        unsafe {
            let node = std::ptr::addr_of_mut!((*e).list);
            (*(*node).prev).next = (*node).next;
            (*(*node).next).prev = (*node).prev;
            drop(Box::from_raw(e));
        }
    }
}
