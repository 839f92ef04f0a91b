//! What runs when the loader maps and unmaps the library: the UCX release
//! of the process is found, then our configuration tables join libucs's
//! global list (in that release's layout) and leave it again.

use crate::core::{component, config_list};
use crate::transports::COMPONENTS;
use crate::ucs::release;

extern "C" fn on_load() {
    let _ = std::panic::catch_unwind(|| {
        if release::current().is_none() {
            crate::error!("uct-rs: {}; no transport is offered", release::describe());
            return;
        }
        crate::debug!("uct-rs: serving {}", release::describe());
        config_list::publish(&component::config_descs(COMPONENTS));
    });
}

extern "C" fn on_unload() {
    let _ = std::panic::catch_unwind(config_list::withdraw);
}

#[used]
#[link_section = ".init_array"]
static ON_LOAD: extern "C" fn() = on_load;

#[used]
#[link_section = ".fini_array"]
static ON_UNLOAD: extern "C" fn() = on_unload;
