//! librdmacm: only what the library asks of it today.

use super::{last_errno, raw, Errno};

/// Whether an RDMA CM event channel can be created (it is destroyed at
/// once): the error librdmacm gives when it cannot.
pub fn probe_event_channel() -> Result<(), Errno> {
    // SAFETY: a plain librdmacm call without arguments.
    let ch = unsafe { raw::rdma_create_event_channel() };
    if ch.is_null() {
        return Err(last_errno());
    }
    // SAFETY: the channel was just created and is destroyed once.
    unsafe { raw::rdma_destroy_event_channel(ch) };
    Ok(())
}
