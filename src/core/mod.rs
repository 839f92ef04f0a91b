//! Transport-independent machinery.

#[macro_use]
pub mod log;
pub mod cm;
pub mod component;
pub mod config;
pub mod config_list;
pub mod iface;
pub mod md;
pub mod mem;
pub mod ops;
pub mod worker;
