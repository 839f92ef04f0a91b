//! The stub interface of 1.22 (`UCT_IFACE_OPEN_MODE_STUB`): an interface of
//! no transport, memory domain or worker, which libucp opens for endpoints
//! that stand in for others (proxies, failed endpoints). libucp replaces
//! its whole operation table but the close, and asks our functions about
//! it and its endpoints: every such query answers with the status given at
//! open (reachability and connection questions: no).

use super::stubs::unsupported_ops;
use crate::abi::*;
use crate::core::registry::{self, Kind};

#[repr(C)]
struct StubIface {
    base: uct_iface_t,
    status: ucs_status_t,
}

unsafe extern "C" fn close(iface: uct_iface_h) {
    // SAFETY: called once by uct_iface_close, after it took the handle out
    // of the registry: the box made by `open` is ours again.
    drop(unsafe { Box::from_raw(iface as *mut StubIface) });
}

/// Open a stub interface whose queries answer `status`.
pub fn open(status: ucs_status_t) -> uct_iface_h {
    let mut ops = unsupported_ops();
    ops.iface_close = Some(close);
    let h = Box::into_raw(Box::new(StubIface { base: uct_iface_t { ops }, status })) as uct_iface_h;
    registry::register(h, Kind::StubIface);
    h
}

/// The status a stub interface answers with, if `iface` is a live one (by
/// address: nothing is read through a pointer that is not).
pub fn status_of(iface: uct_iface_h) -> Option<ucs_status_t> {
    // SAFETY: a live stub interface is the box made by `open`.
    registry::is(iface, Kind::StubIface).then(|| unsafe { (*(iface as *const StubIface)).status })
}

/// The same for an endpoint: its interface is a stub.
///
/// # Safety
/// `ep` is NULL or points to a readable `uct_ep_t`.
pub unsafe fn status_of_ep(ep: uct_ep_h) -> Option<ucs_status_t> {
    if ep.is_null() {
        return None;
    }
    // SAFETY: see the function contract.
    status_of(unsafe { (*ep).iface })
}
