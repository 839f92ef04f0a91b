//! The transports, one folder per family as in UCX's source tree. Each is
//! plain Rust behind `core::iface::Transport`; each family exports its
//! `Component`s, and [`COMPONENTS`] lists them for the exported functions.

#[cfg(feature = "verbs")]
pub mod ib;
pub mod sm;
pub mod tcp;

use crate::core::component::Component;

/// Every component, in the order UCX 1.13.1 on Debian lists them (the
/// transports that later issues bring are added here in place).
pub static COMPONENTS: &[&Component] = &[
    &sm::self_::COMPONENT,
    &tcp::COMPONENT,
    &sm::mm::SYSV_COMPONENT,
    &sm::mm::POSIX_COMPONENT,
    #[cfg(feature = "verbs")]
    &ib::COMPONENT,
    #[cfg(feature = "verbs")]
    &ib::rdmacm::COMPONENT,
    &sm::cma::COMPONENT,
    // Not in UCX: between two processes of this library only. Last, so that
    // libucp opens it after cma and its first query already knows whether a
    // cma interface is beside it (see `sm::get_lanes`).
    &sm::posix_get::COMPONENT,
];
