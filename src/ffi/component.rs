//! Components, memory-domain open/close/query and resource lists.

use super::{component_or_fail, entry, known_fields, md_or_fail, need, opt_str};
use crate::abi::*;
use crate::transports::COMPONENTS;
use crate::core::config;
use crate::core::md::{write_name, MdObj};
use crate::core::registry::{self, Kind};
use libc::{c_char, c_uint, c_void};

entry! {
    fn uct_query_components(components_p: *mut *mut uct_component_h, num_components_p: *mut c_uint) -> ucs_status_t {
        need!(components_p, "components_p");
        need!(num_components_p, "num_components_p");
        // A process whose UCX release we do not serve (logged when the
        // library loaded) gets no component: every layout would be a guess.
        let n = if crate::ucs::release::current().is_some() { COMPONENTS.len() } else { 0 };
        // SAFETY: plain allocation, released by uct_release_component_list.
        let arr = unsafe { libc::malloc(n.max(1) * std::mem::size_of::<uct_component_h>()) } as *mut uct_component_h;
        if arr.is_null() {
            return UCS_ERR_NO_MEMORY;
        }
        for (i, c) in COMPONENTS.iter().take(n).enumerate() {
            // SAFETY: `arr` holds `n` entries.
            unsafe { *arr.add(i) = c.handle() };
        }
        registry::register(arr, Kind::ComponentList);
        // SAFETY: out-pointers checked above.
        unsafe {
            *components_p = arr;
            *num_components_p = n as c_uint;
        }
        UCS_OK
    }
}

/// Free a list this library handed out; NULL is nothing to free.
fn release_list<T>(name: &str, list: *mut T, kind: Kind) {
    if list.is_null() {
        return;
    }
    if !registry::take(list, kind) {
        crate::error!("{}: list {:p} {}", name, list, registry::why_not(list, kind));
        return;
    }
    // SAFETY: a live list of `kind` was malloc'ed (or calloc'ed) by the
    // query that registered it; taking the entry made this its one free.
    unsafe { libc::free(list as *mut c_void) }
}

entry! {
    fn uct_release_component_list(components: *mut uct_component_h) {
        release_list(FN, components, Kind::ComponentList)
    }
}

entry! {
    fn uct_component_query(component: uct_component_h, component_attr: *mut uct_component_attr_t) -> ucs_status_t {
        need!(component_attr, "component_attr");
        let c = component_or_fail!(component);
        // SAFETY: checked non-NULL; the caller owns the struct.
        let attr = unsafe { &mut *component_attr };
        known_fields!(attr.field_mask, UCT_COMPONENT_ATTR_FIELD_NAME | UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT
                      | UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES | UCT_COMPONENT_ATTR_FIELD_FLAGS, "component attr");
        let mds = (c.md_resources)();
        if attr.field_mask & UCT_COMPONENT_ATTR_FIELD_NAME != 0 {
            write_name(&mut attr.name, c.name);
        }
        if attr.field_mask & UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT != 0 {
            attr.md_resource_count = mds.len() as c_uint;
        }
        if attr.field_mask & UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES != 0 {
            if attr.md_resources.is_null() {
                crate::error!("{}: md_resources must point to md_resource_count entries", FN);
                return UCS_ERR_INVALID_PARAM;
            }
            for (i, name) in mds.iter().enumerate() {
                // SAFETY: the caller sized md_resources from md_resource_count.
                let r = unsafe { &mut *attr.md_resources.add(i) };
                write_name(&mut r.md_name, name);
            }
        }
        if attr.field_mask & UCT_COMPONENT_ATTR_FIELD_FLAGS != 0 {
            attr.flags = c.flags();
        }
        UCS_OK
    }
}

entry! {
    fn uct_md_config_read(component: uct_component_h, env_prefix: *const c_char, filename: *const c_char,
                          config_p: *mut *mut uct_md_config_t) -> ucs_status_t {
        let _ = filename;
        need!(config_p, "config_p");
        let c = component_or_fail!(component);
        // SAFETY: env_prefix is NULL or a C string.
        let prefix = (!env_prefix.is_null()).then(|| unsafe { std::ffi::CStr::from_ptr(env_prefix) });
        match config::read(&c.md.config, prefix) {
            Ok(p) => {
                // SAFETY: out-pointer checked above.
                unsafe { *config_p = p as *mut uct_md_config_t };
                UCS_OK
            }
            Err(s) => {
                crate::error!("failed to read MD config of {}", c.name);
                s
            }
        }
    }
}

entry! {
    fn uct_md_open(component: uct_component_h, md_name: *const c_char, config: *const uct_md_config_t,
                   md_p: *mut uct_md_h) -> ucs_status_t {
        need!(md_p, "md_p");
        need!(md_name, "md_name");
        let c = component_or_fail!(component);
        // SAFETY: checked non-NULL above.
        let Some(name) = (unsafe { opt_str(md_name) }) else { return UCS_ERR_INVALID_PARAM };
        if !(c.md_resources)().iter().any(|m| m == name) {
            crate::error!("{}: component {} has no memory domain '{}'", FN, c.name, name);
            return UCS_ERR_NO_DEVICE;
        }
        need!(config, "config");
        // SAFETY: looked up in the registry; the caller keeps its config
        // until the md is open.
        let parsed = super::live_or!(unsafe { config::Parsed::from_ptr(config as *const c_void) }, config,
                                     Kind::Config, "config", UCS_ERR_INVALID_PARAM);
        let res = c.md.open(c, name, parsed);
        match res {
            Ok(imp) => {
                // SAFETY: out-pointer checked above.
                unsafe { *md_p = MdObj::new(c, name, imp).into_handle() };
                UCS_OK
            }
            Err(s) => s,
        }
    }
}

entry! {
    fn uct_md_close(md: uct_md_h) {
        // SAFETY: `close` frees only a live md, once; closing ends its life.
        if !unsafe { MdObj::close(md) } {
            crate::error!("{}: md {:p} {}", FN, md, registry::why_not(md, Kind::Md));
        }
    }
}

entry! {
    fn uct_md_query(md: uct_md_h, md_attr: *mut uct_md_attr_t) -> ucs_status_t {
        need!(md_attr, "md_attr");
        let m = md_or_fail!(md);
        // SAFETY: checked non-NULL.
        m.query(unsafe { &mut *md_attr });
        UCS_OK
    }
}

entry! {
    fn uct_md_query_tl_resources(md: uct_md_h, resources_p: *mut *mut uct_tl_resource_desc_t,
                                 num_resources_p: *mut c_uint) -> ucs_status_t {
        need!(resources_p, "resources_p");
        need!(num_resources_p, "num_resources_p");
        let m = md_or_fail!(md);
        let mut all = Vec::new();
        for tl in m.component.tls {
            match (tl.query_devices)(m) {
                Ok(devs) => all.extend(devs.into_iter().map(|d| (tl.name, d))),
                Err(s) => crate::debug!("failed to query {} resources: {}", tl.name, crate::core::log::status_str(s)),
            }
        }
        let arr = if all.is_empty() {
            std::ptr::null_mut()
        } else {
            // SAFETY: plain allocation, released by uct_release_tl_resource_list.
            let arr = unsafe { libc::calloc(all.len(), std::mem::size_of::<uct_tl_resource_desc_t>()) }
                as *mut uct_tl_resource_desc_t;
            if arr.is_null() {
                return UCS_ERR_NO_MEMORY;
            }
            for (i, (tl, d)) in all.iter().enumerate() {
                // SAFETY: `arr` holds all.len() zeroed entries.
                let r = unsafe { &mut *arr.add(i) };
                write_name(&mut r.tl_name, tl);
                write_name(&mut r.dev_name, &d.name);
                r.dev_type = d.dev_type;
                r.sys_device = d.sys_device;
            }
            registry::register(arr, Kind::TlResourceList);
            arr
        };
        // SAFETY: out-pointers checked above.
        unsafe {
            *resources_p = arr;
            *num_resources_p = all.len() as c_uint;
        }
        UCS_OK
    }
}

entry! {
    fn uct_release_tl_resource_list(resources: *mut uct_tl_resource_desc_t) {
        release_list(FN, resources, Kind::TlResourceList)
    }
}

entry! {
    fn uct_md_iface_config_read(md: uct_md_h, tl_name: *const c_char, env_prefix: *const c_char,
                                filename: *const c_char, config_p: *mut *mut uct_iface_config_t) -> ucs_status_t {
        let _ = filename;
        need!(config_p, "config_p");
        let m = md_or_fail!(md);
        // SAFETY: tl_name is NULL or a C string.
        let Some(tl) = (unsafe { opt_str(tl_name) }).and_then(|n| m.component.find_tl(n)) else {
            // SAFETY: as above.
            match unsafe { opt_str(tl_name) } {
                None => crate::error!("There is no sockaddr transport registered on the md"),
                Some(n) => crate::error!("Transport '{}' does not exist", n),
            }
            return UCS_ERR_NO_DEVICE;
        };
        // SAFETY: env_prefix is NULL or a C string.
        let prefix = (!env_prefix.is_null()).then(|| unsafe { std::ffi::CStr::from_ptr(env_prefix) });
        match config::read(&tl.config, prefix) {
            Ok(p) => {
                // SAFETY: out-pointer checked above.
                unsafe { *config_p = p as *mut uct_iface_config_t };
                UCS_OK
            }
            Err(s) => {
                crate::error!("Failed to read iface config");
                s
            }
        }
    }
}
