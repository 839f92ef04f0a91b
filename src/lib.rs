//! uct-rs: a binary-compatible Rust implementation of UCX 1.13.1's transport
//! layer (`libuct.so.0`).
//!
//! Layers, from the C boundary inwards:
//! - [`abi`]: `repr(C)` mirrors of the public UCT types and constants.
//! - [`ffi`]: the exported `uct_*` functions, each a thin wrapper made with
//!   one entry macro (argument checks, logging, no unwinding into C).
//! - [`core`]: transport-independent machinery (components, memory domains,
//!   configuration, workers, the generic iface/ep objects, memory allocation).
//! - [`transports`]: the transports themselves.
//! - [`sys`]: the operating-system layer (sockets, epoll, shared memory,
//!   cross-process copies); the system calls and their `unsafe` live there.
//! - [`ucs`]: the few libucs services we reuse (callback queue, config parser,
//!   logger), declared and wrapped in one place.

pub mod abi;
pub mod core;
pub mod ffi;
pub mod sys;
pub mod transports;
pub mod ucs;
