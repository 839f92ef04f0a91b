//! Transport-independent machinery: what every transport shares and no
//! transport names. [`component`] describes components, their memory
//! domains and transports, and their typed openers; [`md`] and [`worker`]
//! are the objects behind `uct_md_h` and `uct_worker_h`; [`iface`] is the
//! generic interface/endpoint (the vtable C dispatches through, the
//! [`iface::Transport`] trait, the shared argument checks); [`handles`] the
//! safe handles the data path hands transports (payloads, callbacks,
//! completions, peer addresses); [`config`] and [`config_list`] the
//! configuration tables, through libucs's parser; [`mem`] memory
//! allocation; [`memreg`] a table of registered address ranges; [`cm`]
//! connection managers and listeners; [`log`] logging through libucs;
//! [`registry`] the live control-path objects, by address and kind, which
//! every handle from C is checked against. The list of components is given
//! to core by the exported functions (`crate::transports::COMPONENTS`);
//! core never imports a transport or `ffi`.

#[macro_use]
pub mod log;
pub mod cm;
pub mod component;
pub mod config;
pub mod config_list;
pub mod handles;
pub mod iface;
pub mod md;
pub mod mem;
pub mod memreg;
pub mod registry;
pub mod release;
pub mod worker;
