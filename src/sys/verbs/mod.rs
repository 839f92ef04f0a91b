//! RDMA verbs: the part of the OS layer that talks to libibverbs (through
//! the `rdma-sys` bindings). Every libibverbs call of the library is made
//! here, on owned objects that release themselves when dropped; the
//! transports above never hold a raw verbs pointer they must free.
//!
//! - [`device`]: the device list, an opened device ([`Context`]) and its
//!   queries (device, port, GID), asynchronous events, `ibv_fork_init`.
//! - [`mem`]: protection domains and memory regions.
//! - [`queue`]: completion channels and queues, shared receive queues,
//!   queue pairs and address handles, and the posting and polling calls.
//!
//! Ownership rule: a verbs object must be destroyed before the objects it
//! was created from (a QP before its CQs, SRQ and PD; everything before its
//! context). The wrappers do not keep their parents alive; whoever holds
//! them declares the fields so that Rust drops children first (fields are
//! dropped in declaration order).
//!
//! Failures are reported as [`Errno`], as libibverbs reports them (its
//! calls return an errno value or set `errno`).

pub mod cm;
pub mod device;
pub mod mem;
pub mod queue;

pub use device::{AsyncEvent, Context, DeviceInfo, DeviceList, PortInfo};
pub use mem::{Mr, Pd};
pub use queue::{wc_status_str, Ah, CompChannel, Cq, Qp, QpCaps, Srq};
pub use nix::errno::Errno;

/// The raw bindings, for the types the transports fill in (work requests,
/// scatter/gather entries, completions, attribute structs).
pub use rdma_sys as raw;

/// Memory access rights of a memory region or QP (`IBV_ACCESS_*`).
pub mod access {
    pub const LOCAL_WRITE: u32 = 1;
    pub const REMOTE_WRITE: u32 = 2;
    pub const REMOTE_READ: u32 = 4;
    pub const REMOTE_ATOMIC: u32 = 8;
}

/// The errno libibverbs left for a call that returned NULL or -1 (EIO when
/// it left none).
fn last_errno() -> Errno {
    match Errno::last() {
        Errno::UnknownErrno => Errno::EIO,
        e => e,
    }
}

/// A call's integer result as libibverbs returns it: 0, or an errno value
/// (positive, or negative in some providers), or -1 with `errno` set.
fn check_rc(rc: libc::c_int) -> Result<(), Errno> {
    match rc {
        0 => Ok(()),
        -1 => Err(last_errno()),
        r => Err(Errno::from_raw(r.abs())),
    }
}
