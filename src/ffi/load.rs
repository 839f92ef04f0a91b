//! What runs when the loader maps and unmaps the library: our configuration
//! tables join libucs's global list and leave it again.

use crate::core::{component, config_list};
use crate::transports::COMPONENTS;

extern "C" fn on_load() {
    let _ = std::panic::catch_unwind(|| config_list::publish(&component::config_descs(COMPONENTS)));
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
