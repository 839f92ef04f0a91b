//! librdmacm: event channels, connection identifiers (`rdma_cm_id`), their
//! events, and the dummy UD QP whose number a connection carries.
//!
//! Ownership: an [`EventChannel`] and a [`CmId`] release themselves when
//! dropped (`rdma_destroy_event_channel`, `rdma_destroy_id`); a channel must
//! outlive the ids created on it or migrated to it. Events are copied out
//! and acknowledged at once by [`EventChannel::next_event`], so no event is
//! ever held while an id is destroyed (`rdma_destroy_id` waits for the
//! events of its id to be acknowledged).

use super::{check_rc, last_errno, raw, Errno};
use crate::sys::addr::SockAddr;
use libc::{c_int, c_void};
use std::ffi::CStr;
use std::ptr;

/// `RDMA_PS_TCP`: reliable connections.
const PS_TCP: raw::rdma_port_space::Type = 0x0106;
/// `RDMA_OPTION_ID` level, `RDMA_OPTION_ID_REUSEADDR` option.
const OPTION_ID: c_int = 0;
const OPTION_ID_REUSEADDR: c_int = 1;

/// `RDMA_CM_EVENT_*` values.
pub mod ev {
    pub const ADDR_RESOLVED: u32 = 0;
    pub const ADDR_ERROR: u32 = 1;
    pub const ROUTE_RESOLVED: u32 = 2;
    pub const ROUTE_ERROR: u32 = 3;
    pub const CONNECT_REQUEST: u32 = 4;
    pub const CONNECT_RESPONSE: u32 = 5;
    pub const CONNECT_ERROR: u32 = 6;
    pub const UNREACHABLE: u32 = 7;
    pub const REJECTED: u32 = 8;
    pub const ESTABLISHED: u32 = 9;
    pub const DISCONNECTED: u32 = 10;
    pub const DEVICE_REMOVAL: u32 = 11;
    pub const ADDR_CHANGE: u32 = 14;
    pub const TIMEWAIT_EXIT: u32 = 15;
}

/// Whether an RDMA CM event channel can be created (it is destroyed at
/// once): the error librdmacm gives when it cannot.
pub fn probe_event_channel() -> Result<(), Errno> {
    EventChannel::create().map(drop)
}

/// librdmacm's name of an event type.
pub fn event_name(kind: u32) -> String {
    // SAFETY: rdma_event_str returns a static string for any value.
    let p = unsafe { raw::rdma_event_str(kind as raw::rdma_cm_event_type::Type) };
    if p.is_null() {
        return format!("event {}", kind);
    }
    // SAFETY: a NUL-terminated static string.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

/// An event channel (`rdma_create_event_channel`).
pub struct EventChannel {
    ch: *mut raw::rdma_event_channel,
}

// SAFETY: librdmacm's channel calls are thread-safe; the pointer is owned.
unsafe impl Send for EventChannel {}
// SAFETY: as above; shared use only reads events through librdmacm.
unsafe impl Sync for EventChannel {}

/// An event, copied out of librdmacm's and already acknowledged.
#[derive(Debug)]
pub struct Event {
    /// `RDMA_CM_EVENT_*` ([`ev`]).
    pub kind: u32,
    /// librdmacm's status: a negative errno, or for REJECTED the
    /// transport's reject reason.
    pub status: i32,
    /// The id the event is for (for a connection request: a new id the
    /// receiver owns, see [`CmId::adopt`]).
    pub id: *mut raw::rdma_cm_id,
    /// The context the id had when the event was read.
    pub context: usize,
    /// The listening id of a connection request (else NULL).
    pub listen_id: *mut raw::rdma_cm_id,
    /// The private data of a connection event (request, response,
    /// rejection, establishment), as many bytes as librdmacm reports.
    pub private_data: Vec<u8>,
}

impl EventChannel {
    pub fn create() -> Result<EventChannel, Errno> {
        // SAFETY: a plain librdmacm call without arguments.
        let ch = unsafe { raw::rdma_create_event_channel() };
        if ch.is_null() {
            return Err(last_errno());
        }
        Ok(EventChannel { ch })
    }

    pub fn fd(&self) -> c_int {
        // SAFETY: live channel; plain field.
        unsafe { (*self.ch).fd }
    }

    pub(super) fn raw(&self) -> *mut raw::rdma_event_channel {
        self.ch
    }

    /// Make `rdma_get_cm_event` return EAGAIN instead of waiting.
    pub fn set_nonblocking(&self) -> Result<(), Errno> {
        crate::sys::set_nonblocking(self.fd())
    }

    /// The next event, or None when none is queued (a non-blocking channel).
    pub fn next_event(&self) -> Result<Option<Event>, Errno> {
        let mut e: *mut raw::rdma_cm_event = ptr::null_mut();
        // SAFETY: live channel, valid out-pointer.
        if unsafe { raw::rdma_get_cm_event(self.ch, &mut e) } != 0 {
            return match last_errno() {
                Errno::EAGAIN | Errno::EINTR => Ok(None),
                err => Err(err),
            };
        }
        // SAFETY: librdmacm returned a valid event, ours until acknowledged.
        let ev = unsafe { &*e };
        let kind = ev.event as u32;
        let with_data = matches!(kind, ev::CONNECT_REQUEST | ev::CONNECT_RESPONSE | ev::REJECTED | ev::ESTABLISHED);
        let private_data = if with_data {
            // SAFETY: for connection events the union holds `conn`.
            let conn = unsafe { &ev.param.conn };
            if conn.private_data.is_null() || conn.private_data_len == 0 {
                Vec::new()
            } else {
                // SAFETY: librdmacm's buffer of `private_data_len` bytes,
                // valid until the acknowledgement below.
                unsafe { std::slice::from_raw_parts(conn.private_data as *const u8, conn.private_data_len as usize) }
                    .to_vec()
            }
        } else {
            Vec::new()
        };
        // SAFETY: the id of an event is live while the event is held.
        let context = if ev.id.is_null() { 0 } else { unsafe { (*ev.id).context as usize } };
        let out = Event { kind, status: ev.status, id: ev.id, context, listen_id: ev.listen_id, private_data };
        // SAFETY: acknowledging the event just read, once; nothing above
        // keeps a pointer into it.
        if unsafe { raw::rdma_ack_cm_event(e) } != 0 {
            crate::warn!("rdma_ack_cm_event on event {} failed: {}", event_name(kind), last_errno());
        }
        Ok(Some(out))
    }
}

impl Drop for EventChannel {
    fn drop(&mut self) {
        // SAFETY: owned channel; its ids are gone (module's ownership rule).
        unsafe { raw::rdma_destroy_event_channel(self.ch) };
    }
}

/// A connection identifier (`rdma_create_id`, `RDMA_PS_TCP`).
pub struct CmId {
    id: *mut raw::rdma_cm_id,
}

// SAFETY: librdmacm's id calls are thread-safe for distinct calls; the
// owner serializes its own use (it is kept behind a lock).
unsafe impl Send for CmId {}

/// What `rdma_init_qp_attr` gives for RTR that a device address needs.
#[derive(Clone, Copy, Debug)]
pub struct RtrAttr {
    pub is_global: bool,
    pub dlid: u16,
    pub dgid: [u8; 16],
    pub sgid_index: u8,
    /// `ibv_mtu` value.
    pub path_mtu: u32,
}

impl CmId {
    /// A new id on `channel` whose events carry `context`.
    pub fn create(channel: &EventChannel, context: usize) -> Result<CmId, Errno> {
        let mut id: *mut raw::rdma_cm_id = ptr::null_mut();
        // SAFETY: live channel, valid out-pointer; the context is an opaque
        // number handed back in events.
        check_rc(unsafe { raw::rdma_create_id(channel.raw(), &mut id, context as *mut c_void, PS_TCP) })?;
        Ok(CmId { id })
    }

    /// Take ownership of the new id of a connection request.
    ///
    /// # Safety
    /// `id` is the id of a CONNECT_REQUEST event, not owned by anyone else.
    pub unsafe fn adopt(id: *mut raw::rdma_cm_id) -> CmId {
        CmId { id }
    }

    pub fn raw(&self) -> *mut raw::rdma_cm_id {
        self.id
    }

    pub fn set_context(&self, context: usize) {
        // SAFETY: live id; events read later see the new value (the
        // channel's reader takes it under librdmacm's lock).
        unsafe { (*self.id).context = context as *mut c_void };
    }

    pub fn set_reuseaddr(&self) -> Result<(), Errno> {
        let mut one: c_int = 1;
        // SAFETY: live id; the option value is an int.
        check_rc(unsafe {
            raw::rdma_set_option(self.id, OPTION_ID, OPTION_ID_REUSEADDR, &mut one as *mut c_int as *mut c_void,
                                 std::mem::size_of::<c_int>())
        })
    }

    pub fn bind(&self, addr: &SockAddr) -> Result<(), Errno> {
        let (mut ss, _) = addr.to_storage();
        // SAFETY: live id; a complete socket address.
        check_rc(unsafe { raw::rdma_bind_addr(self.id, &mut ss as *mut _ as *mut libc::sockaddr as *mut _) })
    }

    pub fn listen(&self, backlog: c_int) -> Result<(), Errno> {
        // SAFETY: live, bound id.
        check_rc(unsafe { raw::rdma_listen(self.id, backlog) })
    }

    pub fn resolve_addr(&self, src: Option<&SockAddr>, dst: &SockAddr, timeout_ms: c_int) -> Result<(), Errno> {
        let mut s = src.map(|a| a.to_storage().0);
        let (mut d, _) = dst.to_storage();
        let sp = s.as_mut().map_or(ptr::null_mut(), |s| s as *mut _ as *mut libc::sockaddr as *mut _);
        // SAFETY: live id; complete socket addresses (or NULL source).
        check_rc(unsafe { raw::rdma_resolve_addr(self.id, sp, &mut d as *mut _ as *mut libc::sockaddr as *mut _, timeout_ms) })
    }

    pub fn resolve_route(&self, timeout_ms: c_int) -> Result<(), Errno> {
        // SAFETY: live id with a resolved address.
        check_rc(unsafe { raw::rdma_resolve_route(self.id, timeout_ms) })
    }

    fn conn_param(qp_num: u32, data: &[u8]) -> raw::rdma_conn_param {
        raw::rdma_conn_param {
            private_data: data.as_ptr() as *const c_void,
            private_data_len: data.len().min(u8::MAX as usize) as u8,
            responder_resources: 0,
            initiator_depth: 0,
            flow_control: 0,
            retry_count: 0,
            rnr_retry_count: 0,
            srq: 0,
            qp_num,
        }
    }

    /// `rdma_connect` without a QP attached: the peer is told `qp_num`.
    pub fn connect(&self, qp_num: u32, data: &[u8]) -> Result<(), Errno> {
        let mut p = Self::conn_param(qp_num, data);
        // SAFETY: live id with a resolved route; `data` outlives the call.
        check_rc(unsafe { raw::rdma_connect(self.id, &mut p) })
    }

    pub fn accept(&self, qp_num: u32, data: &[u8]) -> Result<(), Errno> {
        let mut p = Self::conn_param(qp_num, data);
        // SAFETY: live id of a connection request; `data` outlives the call.
        check_rc(unsafe { raw::rdma_accept(self.id, &mut p) })
    }

    pub fn reject(&self, data: &[u8]) -> Result<(), Errno> {
        // SAFETY: live id of a connection request; `data` outlives the call.
        check_rc(unsafe {
            raw::rdma_reject(self.id, data.as_ptr() as *const c_void, data.len().min(u8::MAX as usize) as u8)
        })
    }

    pub fn establish(&self) -> Result<(), Errno> {
        // SAFETY: live id that received a connect response.
        check_rc(unsafe { raw::rdma_establish(self.id) })
    }

    pub fn disconnect(&self) -> Result<(), Errno> {
        // SAFETY: live id.
        check_rc(unsafe { raw::rdma_disconnect(self.id) })
    }

    pub fn migrate(&self, channel: &EventChannel) -> Result<(), Errno> {
        // SAFETY: live id and channel.
        check_rc(unsafe { raw::rdma_migrate_id(self.id, channel.raw()) })
    }

    /// The attributes a QP of this connection would get for RTR.
    pub fn rtr_attr(&self) -> Result<RtrAttr, Errno> {
        // SAFETY: all-zero is a valid value of this plain C struct.
        let mut a: raw::ibv_qp_attr = unsafe { std::mem::zeroed() };
        a.qp_state = raw::ibv_qp_state::IBV_QPS_RTR;
        let mut mask: c_int = 0;
        // SAFETY: live id, valid out-pointers.
        check_rc(unsafe { raw::rdma_init_qp_attr(self.id, &mut a, &mut mask) })?;
        // SAFETY: the GID union is 16 plain bytes.
        let dgid = unsafe { a.ah_attr.grh.dgid.raw };
        Ok(RtrAttr { is_global: a.ah_attr.is_global != 0, dlid: a.ah_attr.dlid, dgid,
                     sgid_index: a.ah_attr.grh.sgid_index, path_mtu: a.path_mtu as u32 })
    }

    fn addr_at(&self, dst: bool) -> Option<SockAddr> {
        // SAFETY: live id; the route's address union is plain data, read
        // as a sockaddr_storage (its largest member).
        let ss = unsafe {
            let a = &(*self.id).route.addr;
            if dst { a.dst_addr_union.dst_storage } else { a.src_addr_union.src_storage }
        };
        SockAddr::from_storage(&ss)
    }

    /// `rdma_get_local_addr`.
    pub fn local_addr(&self) -> Option<SockAddr> {
        self.addr_at(false)
    }

    /// `rdma_get_peer_addr`.
    pub fn peer_addr(&self) -> Option<SockAddr> {
        self.addr_at(true)
    }

    /// The device the id is bound to (after address resolution or on a
    /// connection request): its name, node GUID and port number.
    pub fn device(&self) -> Option<(String, u64, u8)> {
        // SAFETY: live id; verbs is NULL or a live context of librdmacm.
        let (verbs, port) = unsafe { ((*self.id).verbs, (*self.id).port_num) };
        if verbs.is_null() {
            return None;
        }
        // SAFETY: a live context has a live device.
        let dev = unsafe { (*verbs).device };
        // SAFETY: live device; a static NUL-terminated name (or NULL).
        let name = unsafe { raw::ibv_get_device_name(dev) };
        if name.is_null() {
            return None;
        }
        // SAFETY: NUL-terminated, see above.
        let name = unsafe { CStr::from_ptr(name) }.to_string_lossy().into_owned();
        // SAFETY: live device.
        let guid = u64::from_be(unsafe { raw::ibv_get_device_guid(dev) });
        Some((name, guid, port))
    }

    /// The link layer of the id's port (`IBV_LINK_LAYER_*`).
    pub fn link_layer(&self) -> Result<u8, Errno> {
        // SAFETY: live id.
        let (verbs, port) = unsafe { ((*self.id).verbs, (*self.id).port_num) };
        if verbs.is_null() {
            return Err(Errno::ENODEV);
        }
        // SAFETY: all-zero is a valid value of this plain C struct.
        let mut a: raw::ibv_port_attr = unsafe { std::mem::zeroed() };
        // SAFETY: live context, valid out-pointer.
        check_rc(unsafe { raw::___ibv_query_port(verbs, port, &mut a) })?;
        Ok(a.link_layer)
    }

    /// GID `index` of the id's port.
    pub fn port_gid(&self, index: c_int) -> Result<[u8; 16], Errno> {
        // SAFETY: live id.
        let (verbs, port) = unsafe { ((*self.id).verbs, (*self.id).port_num) };
        if verbs.is_null() {
            return Err(Errno::ENODEV);
        }
        // SAFETY: all-zero is a valid GID.
        let mut gid: raw::ibv_gid = unsafe { std::mem::zeroed() };
        // SAFETY: live context, valid out-pointer.
        check_rc(unsafe { raw::ibv_query_gid(verbs, port, index, &mut gid) })?;
        // SAFETY: the GID union is 16 plain bytes.
        Ok(unsafe { gid.raw })
    }

    /// A dummy UD QP on the id's protection domain (its number identifies
    /// the connection to the peer), completing to `cq`.
    pub fn dummy_qp(&self, cq: &DummyCq) -> Result<DummyQp, Errno> {
        // SAFETY: live id.
        let pd = unsafe { (*self.id).pd };
        if pd.is_null() {
            return Err(Errno::ENODEV);
        }
        // SAFETY: all-zero is a valid value of this plain C struct.
        let mut a: raw::ibv_qp_init_attr = unsafe { std::mem::zeroed() };
        a.send_cq = cq.cq;
        a.recv_cq = cq.cq;
        a.qp_type = raw::ibv_qp_type::IBV_QPT_UD;
        a.cap.max_send_wr = 2;
        a.cap.max_recv_wr = 2;
        a.cap.max_send_sge = 1;
        a.cap.max_recv_sge = 1;
        // SAFETY: live PD and CQ, valid attributes.
        let qp = unsafe { raw::ibv_create_qp(pd, &mut a) };
        if qp.is_null() {
            return Err(last_errno());
        }
        Ok(DummyQp { qp })
    }

    /// A one-entry CQ on the id's device, for dummy QPs.
    pub fn dummy_cq(&self) -> Result<DummyCq, Errno> {
        // SAFETY: live id.
        let verbs = unsafe { (*self.id).verbs };
        if verbs.is_null() {
            return Err(Errno::ENODEV);
        }
        // SAFETY: live context.
        let cq = unsafe { raw::ibv_create_cq(verbs, 1, ptr::null_mut(), ptr::null_mut(), 0) };
        if cq.is_null() {
            return Err(last_errno());
        }
        Ok(DummyCq { cq })
    }
}

impl Drop for CmId {
    fn drop(&mut self) {
        // SAFETY: owned id; its events are acknowledged when read.
        if unsafe { raw::rdma_destroy_id(self.id) } != 0 {
            crate::warn!("rdma_destroy_id() failed: {}", last_errno());
        }
    }
}

/// A CQ for dummy QPs (on a device of librdmacm's).
pub struct DummyCq {
    cq: *mut raw::ibv_cq,
}

// SAFETY: an owned verbs object, used by one owner at a time.
unsafe impl Send for DummyCq {}

impl Drop for DummyCq {
    fn drop(&mut self) {
        // SAFETY: owned CQ; its QPs are destroyed first (ownership rule).
        let rc = unsafe { raw::ibv_destroy_cq(self.cq) };
        if rc != 0 {
            crate::warn!("ibv_destroy_cq() returned {}: {}", rc, Errno::from_raw(rc.abs()));
        }
    }
}

/// A dummy UD QP (see [`CmId::dummy_qp`]).
pub struct DummyQp {
    qp: *mut raw::ibv_qp,
}

// SAFETY: an owned verbs object, used by one owner at a time.
unsafe impl Send for DummyQp {}

impl DummyQp {
    pub fn qp_num(&self) -> u32 {
        // SAFETY: live QP; plain field.
        unsafe { (*self.qp).qp_num }
    }
}

impl Drop for DummyQp {
    fn drop(&mut self) {
        // SAFETY: owned QP.
        let rc = unsafe { raw::ibv_destroy_qp(self.qp) };
        if rc != 0 {
            crate::warn!("ibv_destroy_qp() returned {}: {}", rc, Errno::from_raw(rc.abs()));
        }
    }
}
