//! Publishing our configuration tables in libucs's global table list, the
//! way UCX's components do, so that `ucx_info -c` (and anything else that
//! walks the list) sees `UCX_SELF_SEG_SIZE` and friends. Entries are added
//! when the library is loaded and removed before it is unloaded.

use crate::abi::*;
use crate::core::component::COMPONENTS;
use crate::core::config::ConfigDesc;
use once_cell::sync::Lazy;
use std::sync::Mutex;

extern "C" {
    static mut ucs_config_global_list: ucs_list_link_t;
}

struct Entries(Vec<*mut ucs_config_global_list_entry_t>);
// SAFETY: the entries are only touched under the mutex, at load and unload.
unsafe impl Send for Entries {}

static ENTRIES: Lazy<Mutex<Entries>> = Lazy::new(|| Mutex::new(Entries(Vec::new())));

fn descs() -> Vec<&'static ConfigDesc> {
    let mut v = Vec::new();
    for c in COMPONENTS {
        v.push(&c.md_config);
        if let Some(cm) = &c.cm_config {
            v.push(cm);
        }
        for tl in c.tls {
            v.push(&tl.config);
        }
    }
    v
}

extern "C" fn register_tables() {
    let _ = std::panic::catch_unwind(|| {
        let mut entries = ENTRIES.lock().unwrap_or_else(|e| e.into_inner());
        for d in descs() {
            let e = Box::into_raw(Box::new(ucs_config_global_list_entry_t {
                name: d.name.as_ptr(),
                prefix: d.prefix.as_ptr(),
                table: Lazy::force(d.table).as_ptr(),
                size: d.size,
                list: ucs_list_link_t { prev: std::ptr::null_mut(), next: std::ptr::null_mut() },
            }));
            // SAFETY: linking a node we own at the tail of libucs's circular
            // list; this runs in the loader's constructor phase, before any
            // thread of the application can walk the list through us.
            unsafe {
                let head = std::ptr::addr_of_mut!(ucs_config_global_list);
                let node = std::ptr::addr_of_mut!((*e).list);
                (*node).prev = (*head).prev;
                (*node).next = head;
                (*(*head).prev).next = node;
                (*head).prev = node;
            }
            entries.0.push(e);
        }
    });
}

extern "C" fn unregister_tables() {
    let _ = std::panic::catch_unwind(|| {
        let mut entries = ENTRIES.lock().unwrap_or_else(|e| e.into_inner());
        for e in entries.0.drain(..) {
            // SAFETY: unlinking the nodes linked by register_tables.
            unsafe {
                let node = std::ptr::addr_of_mut!((*e).list);
                (*(*node).prev).next = (*node).next;
                (*(*node).next).prev = (*node).prev;
                drop(Box::from_raw(e));
            }
        }
    });
}

#[used]
#[link_section = ".init_array"]
static REGISTER: extern "C" fn() = register_tables;

#[used]
#[link_section = ".fini_array"]
static UNREGISTER: extern "C" fn() = unregister_tables;
