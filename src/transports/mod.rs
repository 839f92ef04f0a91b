//! The transports. Each is plain Rust behind `core::iface::Transport`.

pub mod self_;
