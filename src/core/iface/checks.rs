//! The argument checks of the send calls, written once for every transport:
//! the active-message id, a length against the interface's maximum (or a
//! range), an iov count against its limit. The happy path is one comparison, inlined; the
//! failure path is a cold `extern "C"` function (it cannot unwind, so the
//! caller needs no landing pad and tail-calls it) that logs and returns
//! `UCS_ERR_INVALID_PARAM`, as the C original's checks do.

use super::transport::Transport;
use crate::abi::*;

/// The operation a failed check belongs to, for its log line.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    AmShort,
    AmShortIov,
    AmBcopy,
    AmZcopyHeader,
    AmZcopy,
    PutShort,
    PutBcopy,
    PutZcopy,
    GetBcopy,
    GetZcopy,
}

impl Op {
    pub fn name(self) -> &'static str {
        match self {
            Op::AmShort => "am_short",
            Op::AmShortIov => "am_short_iov",
            Op::AmBcopy => "am_bcopy",
            Op::AmZcopyHeader => "am_zcopy header",
            Op::AmZcopy => "am_zcopy",
            Op::PutShort => "put_short",
            Op::PutBcopy => "put_bcopy",
            Op::PutZcopy => "put_zcopy",
            Op::GetBcopy => "get_bcopy",
            Op::GetZcopy => "get_zcopy",
        }
    }
}

/// An active-message id below `UCT_AM_ID_MAX`.
#[inline(always)]
pub fn am_id(id: u8) -> Result<(), ucs_status_t> {
    if (id as usize) < UCT_AM_ID_MAX {
        Ok(())
    } else {
        Err(am_id_error(id))
    }
}

/// A payload of at most `max` bytes.
#[inline(always)]
pub fn length<T: Transport>(op: Op, len: usize, max: usize) -> Result<(), ucs_status_t> {
    if len <= max {
        Ok(())
    } else {
        Err(length_error::<T>(op, len, max))
    }
}

/// A payload of `min` to `max` bytes.
#[inline(always)]
pub fn length_within<T: Transport>(op: Op, len: usize, min: usize, max: usize) -> Result<(), ucs_status_t> {
    if len >= min && len <= max {
        Ok(())
    } else {
        Err(range_error::<T>(op, len, min, max))
    }
}

/// At most `max` iov entries.
#[inline(always)]
pub fn iov_count<T: Transport>(op: Op, cnt: usize, max: usize) -> Result<(), ucs_status_t> {
    if cnt <= max {
        Ok(())
    } else {
        Err(iov_error::<T>(op, cnt, max))
    }
}

#[cold]
#[inline(never)]
extern "C" fn am_id_error(id: u8) -> ucs_status_t {
    crate::error!("invalid active message id {} (valid: 0..{})", id, UCT_AM_ID_MAX - 1);
    // Opaque to the optimiser, so callers tail-call this cold path instead
    // of keeping a stack frame on the hot one.
    std::hint::black_box(UCS_ERR_INVALID_PARAM)
}

#[cold]
#[inline(never)]
extern "C" fn length_error<T: Transport>(op: Op, len: usize, max: usize) -> ucs_status_t {
    crate::error!("{} {}: length {} exceeds the maximum {}", T::NAME, op.name(), len, max);
    std::hint::black_box(UCS_ERR_INVALID_PARAM)
}

#[cold]
#[inline(never)]
extern "C" fn range_error<T: Transport>(op: Op, len: usize, min: usize, max: usize) -> ucs_status_t {
    crate::error!("{} {}: length {} is outside {}..{}", T::NAME, op.name(), len, min, max);
    std::hint::black_box(UCS_ERR_INVALID_PARAM)
}

#[cold]
#[inline(never)]
extern "C" fn iov_error<T: Transport>(op: Op, cnt: usize, max: usize) -> ucs_status_t {
    crate::error!("{} {}: iovcnt {} exceeds the maximum {}", T::NAME, op.name(), cnt, max);
    std::hint::black_box(UCS_ERR_INVALID_PARAM)
}
