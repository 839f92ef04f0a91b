//! `uct_config_*` and `uct_cm_config_read`.

use super::{component_or_fail, entry, need};
use crate::abi::*;
use crate::core::config;
use crate::core::registry::{self, Kind};
use libc::{c_char, c_void};

/// Return `UCS_ERR_INVALID_PARAM` with a log line unless `config` is a
/// live config of this library.
macro_rules! live_config {
    ($config:expr) => {
        if !registry::is($config, Kind::Config) {
            crate::error!("{}: config {:p} {}", FN, $config, registry::why_not($config, Kind::Config));
            return UCS_ERR_INVALID_PARAM;
        }
    };
}

entry! {
    fn uct_config_release(config: *mut c_void) {
        // SAFETY: `release` frees only a live config, once.
        if unsafe { config::release(config) } != UCS_OK {
            crate::error!("{}: config {:p} {}", FN, config, registry::why_not(config, Kind::Config));
        }
    }
}

entry! {
    fn uct_config_get(config: *mut c_void, name: *const c_char, value: *mut c_char, max: usize) -> ucs_status_t {
        need!(name, "name");
        need!(value, "value");
        live_config!(config);
        // SAFETY: arguments checked; `get` reads only a live config.
        unsafe { config::get(config, name, value, max) }
    }
}

entry! {
    fn uct_config_modify(config: *mut c_void, name: *const c_char, value: *const c_char) -> ucs_status_t {
        need!(name, "name");
        need!(value, "value");
        live_config!(config);
        // SAFETY: arguments checked; `modify` writes only a live config.
        unsafe { config::modify(config, name, value) }
    }
}

entry! {
    fn uct_cm_config_read(component: uct_component_h, env_prefix: *const c_char, filename: *const c_char,
                          config_p: *mut *mut uct_cm_config_t) -> ucs_status_t {
        let _ = filename;
        need!(config_p, "config_p");
        let c = component_or_fail!(component);
        let Some(desc) = c.cm.as_ref().map(|cm| &cm.config) else {
            crate::error!("{}: component {} has no connection manager", FN, c.name);
            return UCS_ERR_INVALID_PARAM;
        };
        // SAFETY: env_prefix is NULL or a C string.
        let prefix = (!env_prefix.is_null()).then(|| unsafe { std::ffi::CStr::from_ptr(env_prefix) });
        match config::read(desc, prefix) {
            Ok(p) => {
                // SAFETY: out-pointer checked above.
                unsafe { *config_p = p as *mut uct_cm_config_t };
                UCS_OK
            }
            Err(s) => s,
        }
    }
}
