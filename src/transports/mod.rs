//! The transports. Each is plain Rust behind `core::iface::Transport`.

pub mod sm;
pub mod tcp_sockcm;
pub mod tcp;
