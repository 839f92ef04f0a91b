//! The transports. Each is plain Rust behind `core::iface::Transport`.

pub mod cma;
pub mod mm;
pub mod self_;
pub mod sm;
pub mod tcp;
