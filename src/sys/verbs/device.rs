//! RDMA devices: the list libibverbs finds, an opened device and what it
//! reports about itself and its ports.

use super::{check_rc, last_errno, raw, Errno};
use std::ffi::CStr;
use std::os::fd::RawFd;

/// What a device of the list is called and where it lives.
#[derive(Clone, Debug)]
pub struct DeviceInfo {
    /// The RDMA device name (`mlx5_0`, `softrdma0`): the md name.
    pub name: String,
    /// The name of its uverbs character device (`uverbs0`), under
    /// `/dev/infiniband/`.
    pub dev_name: String,
    /// Its sysfs directory (`.../class/infiniband/<name>`).
    pub ibdev_path: String,
    /// Node type (`IBV_NODE_*`).
    pub node_type: i32,
    /// Transport type (`IBV_TRANSPORT_*`).
    pub transport_type: i32,
}

/// The devices libibverbs found (`ibv_get_device_list`).
pub struct DeviceList {
    list: *mut *mut raw::ibv_device,
    count: usize,
}

// SAFETY: the list is an array of device descriptions libibverbs does not
// change while it is held; reading it from several threads is safe.
unsafe impl Send for DeviceList {}
// SAFETY: as above (read-only use).
unsafe impl Sync for DeviceList {}

fn c_chars(chars: &[libc::c_char]) -> String {
    let bytes: Vec<u8> = chars.iter().take_while(|&&c| c != 0).map(|&c| c as u8).collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

impl DeviceList {
    /// The current list. An error (no RDMA support at all) is reported as
    /// such; an empty list is not an error.
    pub fn get() -> Result<DeviceList, Errno> {
        let mut n: libc::c_int = 0;
        // SAFETY: `n` is a valid out-pointer; the list is freed in Drop.
        let list = unsafe { raw::ibv_get_device_list(&mut n) };
        if list.is_null() {
            return Err(last_errno());
        }
        Ok(DeviceList { list, count: n.max(0) as usize })
    }

    pub fn len(&self) -> usize {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    fn device(&self, i: usize) -> *mut raw::ibv_device {
        assert!(i < self.count);
        // SAFETY: i < count, and the list holds `count` valid pointers.
        unsafe { *self.list.add(i) }
    }

    /// The names of device `i`.
    pub fn info(&self, i: usize) -> DeviceInfo {
        let d = self.device(i);
        // SAFETY: `d` is a device of the live list; its fields are plain
        // data written by libibverbs.
        let dev = unsafe { &*d };
        DeviceInfo {
            name: c_chars(&dev.name),
            dev_name: c_chars(&dev.dev_name),
            ibdev_path: c_chars(&dev.ibdev_path),
            node_type: dev.node_type,
            transport_type: dev.transport_type,
        }
    }

    /// The index of the device called `name`.
    pub fn find(&self, name: &str) -> Option<usize> {
        (0..self.count).find(|&i| self.info(i).name == name)
    }

    /// Open device `i` (`ibv_open_device`). The context stays valid after
    /// the list is dropped.
    pub fn open(&self, i: usize) -> Result<Context, Errno> {
        let d = self.device(i);
        // SAFETY: `d` is a device of the live list.
        let ctx = unsafe { raw::ibv_open_device(d) };
        if ctx.is_null() {
            return Err(last_errno());
        }
        Ok(Context { ctx, info: self.info(i) })
    }
}

impl Drop for DeviceList {
    fn drop(&mut self) {
        // SAFETY: the list came from ibv_get_device_list and is freed once.
        unsafe { raw::ibv_free_device_list(self.list) };
    }
}

/// `ibv_fork_init`: makes registered memory safe across `fork()`.
pub fn fork_init() -> Result<(), Errno> {
    // SAFETY: a plain libibverbs call without arguments.
    check_rc(unsafe { raw::ibv_fork_init() })
}

/// A port's state as the transports need it.
#[derive(Clone, Copy, Debug)]
pub struct PortInfo {
    pub state: u32,
    pub max_mtu: u32,
    pub active_mtu: u32,
    pub gid_tbl_len: i32,
    pub lid: u16,
    pub sm_lid: u16,
    pub lmc: u8,
    pub active_width: u8,
    pub active_speed: u8,
    pub link_layer: u8,
    pub pkey_tbl_len: u16,
    pub max_msg_sz: u32,
}

/// An asynchronous event of a device, read and acknowledged.
#[derive(Clone, Copy, Debug)]
pub struct AsyncEvent {
    /// `IBV_EVENT_*`.
    pub kind: raw::ibv_event_type,
    /// The QP number, for QP events.
    pub qp_num: Option<u32>,
    /// The port number, for port events.
    pub port: Option<i32>,
}

/// An opened device (`ibv_context`).
pub struct Context {
    ctx: *mut raw::ibv_context,
    info: DeviceInfo,
}

// SAFETY: libibverbs contexts are thread-safe; the pointer is owned.
unsafe impl Send for Context {}
// SAFETY: as above.
unsafe impl Sync for Context {}

impl Context {
    pub fn info(&self) -> &DeviceInfo {
        &self.info
    }

    pub(super) fn raw(&self) -> *mut raw::ibv_context {
        self.ctx
    }

    /// `ibv_query_device`.
    pub fn query_device(&self) -> Result<raw::ibv_device_attr, Errno> {
        // SAFETY: all-zero is a valid value of this plain C struct.
        let mut attr: raw::ibv_device_attr = unsafe { std::mem::zeroed() };
        // SAFETY: live context, valid out-pointer.
        check_rc(unsafe { raw::ibv_query_device(self.ctx, &mut attr) })?;
        Ok(attr)
    }

    /// `ibv_query_port` for port `port` (numbered from 1).
    pub fn query_port(&self, port: u8) -> Result<PortInfo, Errno> {
        // SAFETY: all-zero is a valid value of this plain C struct.
        let mut a: raw::ibv_port_attr = unsafe { std::mem::zeroed() };
        // SAFETY: live context, valid out-pointer of the struct's full size.
        check_rc(unsafe { raw::___ibv_query_port(self.ctx, port, &mut a) })?;
        Ok(PortInfo {
            state: a.state as u32,
            max_mtu: a.max_mtu as u32,
            active_mtu: a.active_mtu as u32,
            gid_tbl_len: a.gid_tbl_len,
            lid: a.lid,
            sm_lid: a.sm_lid,
            lmc: a.lmc,
            active_width: a.active_width,
            active_speed: a.active_speed,
            link_layer: a.link_layer,
            pkey_tbl_len: a.pkey_tbl_len,
            max_msg_sz: a.max_msg_sz,
        })
    }

    /// `ibv_query_gid`: GID `index` of `port`, as 16 bytes in network order.
    pub fn query_gid(&self, port: u8, index: i32) -> Result<[u8; 16], Errno> {
        let mut gid = raw::ibv_gid { raw: [0; 16] };
        // SAFETY: live context, valid out-pointer.
        check_rc(unsafe { raw::ibv_query_gid(self.ctx, port, index, &mut gid) })?;
        // SAFETY: every bit pattern is a valid byte array.
        Ok(unsafe { gid.raw })
    }

    /// The descriptor asynchronous events are read from.
    pub fn async_fd(&self) -> RawFd {
        // SAFETY: live context; the field is plain data.
        unsafe { (*self.ctx).async_fd }
    }

    /// Read and acknowledge one asynchronous event (EAGAIN when none is
    /// waiting and the descriptor is non-blocking).
    pub fn get_async_event(&self) -> Result<AsyncEvent, Errno> {
        // SAFETY: all-zero is a valid value (a null element pointer).
        let mut ev: raw::ibv_async_event = unsafe { std::mem::zeroed() };
        // SAFETY: live context, valid out-pointer.
        check_rc(unsafe { raw::ibv_get_async_event(self.ctx, &mut ev) })?;
        let kind = ev.event_type;
        use raw::ibv_event_type::*;
        let is_qp = matches!(ev.event_type, IBV_EVENT_QP_FATAL | IBV_EVENT_QP_REQ_ERR | IBV_EVENT_QP_ACCESS_ERR
                             | IBV_EVENT_COMM_EST | IBV_EVENT_SQ_DRAINED | IBV_EVENT_PATH_MIG
                             | IBV_EVENT_PATH_MIG_ERR | IBV_EVENT_QP_LAST_WQE_REACHED);
        let is_port = matches!(ev.event_type, IBV_EVENT_PORT_ACTIVE | IBV_EVENT_PORT_ERR | IBV_EVENT_LID_CHANGE
                               | IBV_EVENT_PKEY_CHANGE | IBV_EVENT_SM_CHANGE | IBV_EVENT_CLIENT_REREGISTER
                               | IBV_EVENT_GID_CHANGE);
        let qp_num = if is_qp {
            // SAFETY: for QP events the element is the QP, still alive
            // until the event is acknowledged below.
            Some(unsafe { (*ev.element.qp).qp_num })
        } else {
            None
        };
        // SAFETY: for port events the element is the port number.
        let port = if is_port { Some(unsafe { ev.element.port_num }) } else { None };
        // SAFETY: acknowledging the event just read, once.
        unsafe { raw::ibv_ack_async_event(&mut ev) };
        Ok(AsyncEvent { kind, qp_num, port })
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        // SAFETY: the context is owned, and (by the module's ownership rule)
        // every object created on it is already destroyed.
        let rc = unsafe { raw::ibv_close_device(self.ctx) };
        if rc != 0 {
            crate::warn!("ibv_close_device({}) failed: {}", self.info.name, Errno::from_raw(rc.abs()));
        }
    }
}

/// The name of an `IBV_EVENT_*` value, for log lines.
pub fn event_name(kind: raw::ibv_event_type) -> String {
    // SAFETY: ibv_event_type_str returns a static string for any value.
    let p = unsafe { raw::ibv_event_type_str(kind) };
    if p.is_null() {
        return format!("event {}", kind as u32);
    }
    // SAFETY: a NUL-terminated static string.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}
