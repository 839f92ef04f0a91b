//! The generic interface and endpoint objects.
//!
//! C callers dispatch the data path through inline helpers that read function
//! pointers straight out of our objects, so an interface is a `repr(C)` block
//! whose first 400 bytes are the `uct_iface_ops_t` vtable, and an endpoint
//! begins with a pointer to its interface. A transport is plain Rust behind
//! the [`Transport`] trait: [`Iface<T>`] puts the vtable, the state common to
//! every transport ([`IfaceHeader`]) and the transport's own state in one
//! block, and the vtable is built from generic trampolines, one per slot.
//! Slots a transport does not implement (not in [`Transport::OPS`], which
//! [`transport_ops!`](crate::transport_ops) derives from the methods the
//! transport writes) get a stub that returns `UCS_ERR_UNSUPPORTED`, and the
//! capability flags reported by `uct_iface_query` are masked by the same
//! list, so a flag cannot claim an operation that is not there.
//!
//! Files: `header` (the common state), `transport` (the trait and the
//! generic objects), `trampolines` (the vtable functions), `stubs` (the
//! `UCS_ERR_UNSUPPORTED` entries), `checks` (the argument checks of the
//! send calls, shared by every transport).

pub mod checks;
mod header;
pub mod stub_iface;
pub mod stubs;
mod trampolines;
mod transport;

pub use header::*;
pub use trampolines::{build_ops, Internal};
pub use transport::*;
