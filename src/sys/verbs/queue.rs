//! Completion channels and queues, shared receive queues, queue pairs and
//! address handles; posting work requests and polling completions.

use super::{check_rc, last_errno, raw, Context, Errno, Pd};
use std::mem::MaybeUninit;
use std::os::fd::RawFd;
use std::ptr;

/// A completion channel (`ibv_create_comp_channel`): its descriptor becomes
/// readable when an armed CQ attached to it gets a completion.
pub struct CompChannel {
    ch: *mut raw::ibv_comp_channel,
}

// SAFETY: libibverbs objects are thread-safe; the pointer is owned.
unsafe impl Send for CompChannel {}
// SAFETY: as above.
unsafe impl Sync for CompChannel {}

impl CompChannel {
    pub fn create(ctx: &Context) -> Result<CompChannel, Errno> {
        // SAFETY: live context.
        let ch = unsafe { raw::ibv_create_comp_channel(ctx.raw()) };
        if ch.is_null() {
            return Err(last_errno());
        }
        Ok(CompChannel { ch })
    }

    pub fn fd(&self) -> RawFd {
        // SAFETY: live channel; plain field.
        unsafe { (*self.ch).fd }
    }

    /// Take one completion event: the identity ([`Cq::id`]) of the CQ it
    /// is for. EAGAIN when none is waiting (the descriptor is non-blocking
    /// once the caller made it so). The event must be acknowledged on that
    /// CQ ([`Cq::ack_events`]) before the CQ is destroyed.
    pub fn get_event(&self) -> Result<usize, Errno> {
        let mut cq: *mut raw::ibv_cq = ptr::null_mut();
        let mut ctx: *mut libc::c_void = ptr::null_mut();
        // SAFETY: live channel, valid out-pointers.
        check_rc(unsafe { raw::ibv_get_cq_event(self.ch, &mut cq, &mut ctx) })?;
        Ok(cq as usize)
    }
}

impl Drop for CompChannel {
    fn drop(&mut self) {
        // SAFETY: owned; its CQs are destroyed (module rule).
        let rc = unsafe { raw::ibv_destroy_comp_channel(self.ch) };
        if rc != 0 {
            crate::warn!("ibv_destroy_comp_channel failed: {}", Errno::from_raw(rc.abs()));
        }
    }
}

/// A completion queue.
pub struct Cq {
    cq: *mut raw::ibv_cq,
}

// SAFETY: libibverbs objects are thread-safe; the pointer is owned.
unsafe impl Send for Cq {}
// SAFETY: as above.
unsafe impl Sync for Cq {}

impl Cq {
    /// A CQ of at least `cqe` entries, reporting to `channel` if given.
    pub fn create(ctx: &Context, cqe: i32, channel: Option<&CompChannel>) -> Result<Cq, Errno> {
        let ch = channel.map_or(ptr::null_mut(), |c| c.ch);
        // SAFETY: live context and channel (if any).
        let cq = unsafe { raw::ibv_create_cq(ctx.raw(), cqe, ptr::null_mut(), ch, 0) };
        if cq.is_null() {
            return Err(last_errno());
        }
        Ok(Cq { cq })
    }

    /// What [`CompChannel::get_event`] returns for this CQ.
    pub fn id(&self) -> usize {
        self.cq as usize
    }

    /// The number of entries the CQ really has.
    pub fn cqe(&self) -> i32 {
        // SAFETY: live CQ; plain field.
        unsafe { (*self.cq).cqe }
    }

    /// Poll up to `wc.len()` completions; returns how many were written.
    #[inline]
    pub fn poll(&self, wc: &mut [raw::ibv_wc]) -> Result<usize, Errno> {
        // SAFETY: live CQ; `wc` has room for the count passed.
        let n = unsafe { raw::ibv_poll_cq(self.cq, wc.len() as i32, wc.as_mut_ptr()) };
        if n < 0 {
            return Err(Errno::from_raw(-n));
        }
        Ok(n as usize)
    }

    /// [`Cq::poll`] into uninitialised room (nothing to clear before each
    /// poll of a busy loop): the completions written.
    #[inline]
    pub fn poll_into<'a>(&self, wc: &'a mut [MaybeUninit<raw::ibv_wc>]) -> Result<&'a [raw::ibv_wc], Errno> {
        // SAFETY: live CQ; `wc` has room for the count passed, and
        // ibv_poll_cq only writes entries.
        let n = unsafe { raw::ibv_poll_cq(self.cq, wc.len() as i32, wc.as_mut_ptr() as *mut raw::ibv_wc) };
        if n < 0 {
            return Err(Errno::from_raw(-n));
        }
        let n = (n as usize).min(wc.len());
        // SAFETY: the first `n` entries were written by ibv_poll_cq.
        Ok(unsafe { std::slice::from_raw_parts(wc.as_ptr() as *const raw::ibv_wc, n) })
    }

    /// Arm the CQ: the next (solicited, if asked) completion raises an
    /// event on its channel.
    pub fn req_notify(&self, solicited_only: bool) -> Result<(), Errno> {
        // SAFETY: live CQ.
        check_rc(unsafe { raw::ibv_req_notify_cq(self.cq, solicited_only as i32) })
    }

    /// Acknowledge `n` events taken for this CQ.
    pub fn ack_events(&self, n: u32) {
        // SAFETY: live CQ; the caller took `n` events for it.
        unsafe { raw::ibv_ack_cq_events(self.cq, n) };
    }

    pub(super) fn raw(&self) -> *mut raw::ibv_cq {
        self.cq
    }
}

impl Drop for Cq {
    fn drop(&mut self) {
        // SAFETY: owned; its QPs are destroyed (module rule).
        let rc = unsafe { raw::ibv_destroy_cq(self.cq) };
        if rc != 0 {
            crate::warn!("ibv_destroy_cq failed: {}", Errno::from_raw(rc.abs()));
        }
    }
}

/// A shared receive queue.
pub struct Srq {
    srq: *mut raw::ibv_srq,
}

// SAFETY: libibverbs objects are thread-safe; the pointer is owned.
unsafe impl Send for Srq {}
// SAFETY: as above.
unsafe impl Sync for Srq {}

impl Srq {
    pub fn create(pd: &Pd, max_wr: u32, max_sge: u32) -> Result<Srq, Errno> {
        // SAFETY: all-zero is a valid value of this plain C struct.
        let mut attr: raw::ibv_srq_init_attr = unsafe { std::mem::zeroed() };
        attr.attr.max_wr = max_wr;
        attr.attr.max_sge = max_sge;
        // SAFETY: live PD, valid attributes.
        let srq = unsafe { raw::ibv_create_srq(pd.raw(), &mut attr) };
        if srq.is_null() {
            return Err(last_errno());
        }
        Ok(Srq { srq })
    }

    /// Post a chain of receive requests.
    ///
    /// # Safety
    /// `wr` is a valid chain; every buffer it names stays valid, and is not
    /// otherwise accessed, until its completion is polled or the SRQ is
    /// destroyed.
    #[inline]
    pub unsafe fn post_recv(&self, wr: *mut raw::ibv_recv_wr) -> Result<(), Errno> {
        let mut bad: *mut raw::ibv_recv_wr = ptr::null_mut();
        // SAFETY: live SRQ; the chain is valid (function contract).
        check_rc(unsafe { raw::ibv_post_srq_recv(self.srq, wr, &mut bad) })
    }
}

impl Drop for Srq {
    fn drop(&mut self) {
        // SAFETY: owned; its QPs are destroyed (module rule).
        let rc = unsafe { raw::ibv_destroy_srq(self.srq) };
        if rc != 0 {
            crate::warn!("ibv_destroy_srq failed: {}", Errno::from_raw(rc.abs()));
        }
    }
}

/// The sizes of a QP's queues.
#[derive(Clone, Copy, Debug, Default)]
pub struct QpCaps {
    pub max_send_wr: u32,
    pub max_recv_wr: u32,
    pub max_send_sge: u32,
    pub max_recv_sge: u32,
    pub max_inline_data: u32,
}

/// A queue pair.
pub struct Qp {
    qp: *mut raw::ibv_qp,
    caps: QpCaps,
}

// SAFETY: libibverbs objects are thread-safe; the pointer is owned.
unsafe impl Send for Qp {}
// SAFETY: as above.
unsafe impl Sync for Qp {}

impl Qp {
    /// A QP of `qp_type` (`IBV_QPT_*`) on `pd`, completing sends to
    /// `send_cq` and receives to `recv_cq` (or taking receives from `srq`).
    /// The caps are what was asked for; the QP's real ones are [`Qp::caps`].
    pub fn create(pd: &Pd, qp_type: raw::ibv_qp_type::Type, send_cq: &Cq, recv_cq: &Cq, srq: Option<&Srq>,
                  caps: QpCaps, sq_sig_all: bool) -> Result<Qp, Errno> {
        // SAFETY: all-zero is a valid value of this plain C struct.
        let mut a: raw::ibv_qp_init_attr = unsafe { std::mem::zeroed() };
        a.send_cq = send_cq.raw();
        a.recv_cq = recv_cq.raw();
        a.srq = srq.map_or(ptr::null_mut(), |s| s.srq);
        a.qp_type = qp_type;
        a.sq_sig_all = sq_sig_all as i32;
        a.cap.max_send_wr = caps.max_send_wr;
        a.cap.max_recv_wr = caps.max_recv_wr;
        a.cap.max_send_sge = caps.max_send_sge;
        a.cap.max_recv_sge = caps.max_recv_sge;
        a.cap.max_inline_data = caps.max_inline_data;
        // SAFETY: live PD, CQs and SRQ; valid attributes.
        let qp = unsafe { raw::ibv_create_qp(pd.raw(), &mut a) };
        if qp.is_null() {
            return Err(last_errno());
        }
        let caps = QpCaps { max_send_wr: a.cap.max_send_wr, max_recv_wr: a.cap.max_recv_wr,
                            max_send_sge: a.cap.max_send_sge, max_recv_sge: a.cap.max_recv_sge,
                            max_inline_data: a.cap.max_inline_data };
        Ok(Qp { qp, caps })
    }

    pub fn qp_num(&self) -> u32 {
        // SAFETY: live QP; plain field.
        unsafe { (*self.qp).qp_num }
    }

    pub fn caps(&self) -> QpCaps {
        self.caps
    }

    /// `ibv_modify_qp` with the attributes selected by `mask`
    /// (`IBV_QP_*`).
    pub fn modify(&self, attr: &mut raw::ibv_qp_attr, mask: u32) -> Result<(), Errno> {
        // SAFETY: live QP, valid attributes.
        check_rc(unsafe { raw::ibv_modify_qp(self.qp, attr, mask as libc::c_int) })
    }

    /// Post a chain of send requests.
    ///
    /// # Safety
    /// `wr` is a valid chain; every buffer it names (other than inline data,
    /// copied during the call) stays valid until its completion, or a later
    /// signalled completion of this QP, is polled; remote addresses and keys
    /// are the peer's business (the device checks them).
    #[inline]
    pub unsafe fn post_send(&self, wr: *mut raw::ibv_send_wr) -> Result<(), Errno> {
        let mut bad: *mut raw::ibv_send_wr = ptr::null_mut();
        // SAFETY: live QP; the chain is valid (function contract).
        check_rc(unsafe { raw::ibv_post_send(self.qp, wr, &mut bad) })
    }

    /// Post a chain of receive requests.
    ///
    /// # Safety
    /// As [`Srq::post_recv`].
    #[inline]
    pub unsafe fn post_recv(&self, wr: *mut raw::ibv_recv_wr) -> Result<(), Errno> {
        let mut bad: *mut raw::ibv_recv_wr = ptr::null_mut();
        // SAFETY: live QP; the chain is valid (function contract).
        check_rc(unsafe { raw::ibv_post_recv(self.qp, wr, &mut bad) })
    }
}

impl Drop for Qp {
    fn drop(&mut self) {
        // SAFETY: owned QP, destroyed once.
        let rc = unsafe { raw::ibv_destroy_qp(self.qp) };
        if rc != 0 {
            crate::warn!("ibv_destroy_qp({}) failed: {}", self.qp_num(), Errno::from_raw(rc.abs()));
        }
    }
}

/// An address handle (datagram destinations).
pub struct Ah {
    ah: *mut raw::ibv_ah,
}

// SAFETY: libibverbs objects are thread-safe; the pointer is owned.
unsafe impl Send for Ah {}
// SAFETY: as above.
unsafe impl Sync for Ah {}

impl Ah {
    pub fn create(pd: &Pd, attr: &mut raw::ibv_ah_attr) -> Result<Ah, Errno> {
        // SAFETY: live PD, valid attributes.
        let ah = unsafe { raw::ibv_create_ah(pd.raw(), attr) };
        if ah.is_null() {
            return Err(last_errno());
        }
        Ok(Ah { ah })
    }

    /// The handle for a datagram work request (`wr.ud.ah`).
    pub fn as_ptr(&self) -> *mut raw::ibv_ah {
        self.ah
    }
}

impl Drop for Ah {
    fn drop(&mut self) {
        // SAFETY: owned AH, destroyed once.
        let rc = unsafe { raw::ibv_destroy_ah(self.ah) };
        if rc != 0 {
            crate::warn!("ibv_destroy_ah failed: {}", Errno::from_raw(rc.abs()));
        }
    }
}

/// libibverbs' name of a work completion status.
pub fn wc_status_str(status: u32) -> String {
    // SAFETY: returns a static string for any value.
    let p = unsafe { raw::ibv_wc_status_str(status) };
    if p.is_null() {
        return format!("status {}", status);
    }
    // SAFETY: NUL-terminated static string.
    unsafe { std::ffi::CStr::from_ptr(p) }.to_string_lossy().into_owned()
}
