//! The `self` transport: an interface that can only talk to itself, inside
//! one process. Active messages are delivered synchronously from the send
//! call; remote memory is the process's own, so an rkey is 0 and
//! `rkey + remote_addr` is the target address. (UCX 1.13.1:
//! `src/uct/sm/self/self.c`; what later releases changed is in
//! [`crate::transports::sm::release`].)

use crate::abi::*;
use crate::core::component::{self, Component, IfaceOpen, MdDesc, MdOpen, TlDesc, TlDevice};
use crate::core::config::{self, embed, field, parser, BaseIfaceConfig, BaseMdConfig, Table};
use crate::core::iface::checks::{self, Op};
use crate::core::iface::{EpParams, Ep, Iface, IfaceHeader, IfaceParams, Internal, Transport};
use crate::core::md::{FixedMemh, MdImpl, MdObj};
use crate::core::handles::*;
use crate::core::worker::WorkerObj;
use crate::transports::sm;
use crate::transports::sm::release;
use libc::c_void;
use once_cell::sync::Lazy;
use std::cell::{Cell, RefCell};
use std::mem::offset_of;

const DEVICE_PREFIX: &str = "memory";
const OVERHEAD: f64 = 10e-9;

#[repr(C)]
pub struct SelfMdConfig {
    base: BaseMdConfig,
    num_devices: libc::c_int,
}

#[repr(C)]
pub struct SelfIfaceConfig {
    base: BaseIfaceConfig,
    seg_size: usize,
}

static BASE_MD: &Lazy<Table> = &config::BASE_MD_TABLE;
static BASE_IFACE: &Lazy<Table> = &config::BASE_IFACE_TABLE;

static MD_TABLE: Lazy<Table> = Lazy::new(|| {
    Table::new(vec![
        embed(BASE_MD, offset_of!(SelfMdConfig, base)),
        field(c"NUM_DEVICES", c"1", c"Number of \"self\" devices to create",
              offset_of!(SelfMdConfig, num_devices), parser::int()),
    ])
});

static IFACE_TABLE: Lazy<Table> = Lazy::new(|| {
    Table::new(vec![
        embed(BASE_IFACE, offset_of!(SelfIfaceConfig, base)),
        field(c"SEG_SIZE", c"8k", c"Largest message the self transport sends",
              offset_of!(SelfIfaceConfig, seg_size), parser::memunits()),
    ])
});

static TLS: [TlDesc; 1] = [TlDesc::new::<SelfIface>("self", c"Self transport", c"SELF_", &IFACE_TABLE, query_devices)];

pub static COMPONENT: Component = Component {
    name: "self",
    flags: release::self_component_flags,
    md: MdDesc::new::<SelfMd>(c"Self memory domain", c"SELF_", &MD_TABLE),
    cm: None,
    md_resources: component::single_md_resource_self,
    tls: &TLS,
    rkey_unpack: component::rkey_unpack_zero,
    rkey_ptr: release::self_rkey_ptr,
    rkey_release: component::rkey_release_nop,
};

// ---------------------------------------------------------------------------
// Memory domain: registration is a formality, the memory is our own.

struct SelfMd {
    num_devices: usize,
}

/// The handle returned for registrations (any non-NULL value will do).
const SELF_MEMH: FixedMemh = FixedMemh { value: 0x5e1f, md: "self" };

impl MdImpl for SelfMd {
    fn reg_nonblock_mem_types(&self) -> u64 {
        // Registration records the range only: never blocks.
        1u64 << UCS_MEMORY_TYPE_HOST
    }

    fn query(&self, attr: &mut uct_md_attr_t) {
        crate::core::md::registers_host_memory(attr, 0);
    }
    fn mem_reg(&self, _address: *mut c_void, _length: usize, _flags: u32) -> Result<uct_mem_h, ucs_status_t> {
        Ok(SELF_MEMH.handle())
    }
    fn mem_dereg(&self, memh: uct_mem_h, flags: u32, _comp: Completion) -> ucs_status_t {
        if let Err(e) = SELF_MEMH.check(memh) {
            return e;
        }
        if flags != 0 {
            crate::error!("self md: deregistration flags {:#x} are not supported", flags);
            return UCS_ERR_INVALID_PARAM;
        }
        UCS_OK
    }
    fn mem_query(&self, _address: *const c_void, _length: usize, attr: &mut uct_md_mem_attr_t) -> ucs_status_t {
        crate::core::md::host_mem_query(attr)
    }
}

impl MdOpen for SelfMd {
    type Config = SelfMdConfig;
    fn open(_c: &'static Component, _name: &str, cfg: &SelfMdConfig) -> Result<Box<dyn MdImpl>, ucs_status_t> {
        md_open(cfg)
    }
}

fn md_open(cfg: &SelfMdConfig) -> Result<Box<dyn MdImpl>, ucs_status_t> {
    if cfg.num_devices < 0 {
        crate::error!("self md: NUM_DEVICES must not be negative (got {})", cfg.num_devices);
        return Err(UCS_ERR_INVALID_PARAM);
    }
    Ok(Box::new(SelfMd { num_devices: cfg.num_devices as usize }))
}

fn num_devices(md: &MdObj) -> usize {
    let any: &dyn std::any::Any = md.imp.as_ref();
    any.downcast_ref::<SelfMd>().map_or(0, |s| s.num_devices)
}

fn query_devices(md: &MdObj) -> Result<Vec<TlDevice>, ucs_status_t> {
    let n = num_devices(md);
    Ok((0..n)
        .map(|i| TlDevice { name: release::self_device_name(DEVICE_PREFIX, i, n), dev_type: UCT_DEVICE_TYPE_SELF,
                            sys_device: UCS_SYS_DEVICE_ID_UNKNOWN })
        .collect())
}

// ---------------------------------------------------------------------------
// Interface.

/// A message buffer with the payload placed at the requested alignment.
struct MsgBuf {
    words: Vec<u64>,
    start: usize,
}

impl MsgBuf {
    fn new(size: usize, align: usize, align_offset: usize) -> MsgBuf {
        let align = align.max(1);
        let mut words = vec![0u64; (size + align + align_offset).div_ceil(8) + 1];
        let base = words.as_mut_ptr() as usize;
        // Payload at `start` such that (payload + align_offset) % align == 0.
        let start = (align - (base + align_offset) % align) % align;
        MsgBuf { words, start }
    }
    #[inline(always)]
    fn bytes(&mut self, len: usize) -> &mut [u8] {
        // SAFETY: viewing our own u64 storage as bytes; `start + len` stays
        // within it because the buffer was sized for send_size + alignment
        // and every caller limits `len` to send_size.
        unsafe {
            std::slice::from_raw_parts_mut((self.words.as_mut_ptr() as *mut u8).add(self.start), len)
        }
    }
}

/// Messages up to this size are staged on the stack.
const SMALL: usize = 128;

#[inline(always)]
fn words_as_bytes(w: &mut [u64; SMALL / 8]) -> &mut [u8; SMALL] {
    // SAFETY: same size, and u8 has no alignment or validity requirements.
    unsafe { &mut *(w as *mut [u64; SMALL / 8] as *mut [u8; SMALL]) }
}

#[cold]
#[inline(never)]
/// Decode a self iface address: the interface id in its first 8 bytes
/// (None when there are fewer).
pub fn decode_iface_addr(bytes: &[u8]) -> Option<u64> {
    Some(u64::from_ne_bytes(bytes.get(..8)?.try_into().ok()?))
}

fn handler_status(id: u8, status: ucs_status_t) {
    crate::debug!("self: AM handler {} returned {} for inline data", id, status);
}

pub struct SelfIface {
    id: u64,
    send_size: usize,
    align: usize,
    align_offset: usize,
    /// The buffer used when no delivery is in progress (the common case).
    primary: Cell<Option<MsgBuf>>,
    /// More buffers, for handlers that send from inside a handler: nested
    /// deliveries never share a buffer.
    pool: RefCell<Vec<MsgBuf>>,
}

impl SelfIface {
    #[inline(always)]
    fn take(&self) -> MsgBuf {
        match self.primary.take() {
            Some(b) => b,
            None => self.take_slow(),
        }
    }
    #[cold]
    fn take_slow(&self) -> MsgBuf {
        self.pool.borrow_mut().pop().unwrap_or_else(|| MsgBuf::new(self.send_size, self.align, self.align_offset))
    }
    #[inline(always)]
    fn give(&self, b: MsgBuf) {
        if let Some(other) = self.primary.replace(Some(b)) {
            self.give_slow(other)
        }
    }
    #[cold]
    fn give_slow(&self, b: MsgBuf) {
        self.pool.borrow_mut().push(b)
    }
    /// Deliver `len` bytes of `buf` to the handler of `id`.
    #[inline(always)]
    fn deliver(hdr: &IfaceHeader, id: u8, buf: &mut MsgBuf, len: usize) {
        let status = hdr.invoke_am(id, buf.bytes(len), 0);
        if status != UCS_OK {
            handler_status(id, status);
        }
    }
}

impl Transport for SelfIface {
    type Ep = ();
    const NAME: &'static str = "self";
    /// Delivery happens inside the send call; there is nothing to poll.
    const HAS_PROGRESS: bool = false;

    fn query(iface: &Iface<Self>, attr: &mut uct_iface_attr_t) {
        let s = &iface.tl;
        attr.iface_addr_len = std::mem::size_of::<u64>();
        attr.device_addr_len = 0;
        attr.ep_addr_len = 0;
        attr.max_conn_priv = 0;
        attr.cap.flags = UCT_IFACE_FLAG_CONNECT_TO_IFACE | UCT_IFACE_FLAG_AM_SHORT | UCT_IFACE_FLAG_AM_BCOPY
            | UCT_IFACE_FLAG_PUT_SHORT | UCT_IFACE_FLAG_PUT_BCOPY | UCT_IFACE_FLAG_GET_BCOPY
            | UCT_IFACE_FLAG_ATOMIC_CPU | UCT_IFACE_FLAG_PENDING | UCT_IFACE_FLAG_CB_SYNC | UCT_IFACE_FLAG_EP_CHECK;
        attr.cap.atomic32.op_flags = sm::ATOMIC_POST_FLAGS;
        attr.cap.atomic64.op_flags = sm::ATOMIC_POST_FLAGS;
        attr.cap.atomic32.fop_flags = sm::ATOMIC_FETCH_FLAGS;
        attr.cap.atomic64.fop_flags = sm::ATOMIC_FETCH_FLAGS;

        attr.cap.put.max_short = u32::MAX as usize;
        attr.cap.put.max_bcopy = usize::MAX;
        attr.cap.put.opt_zcopy_align = 1;
        attr.cap.put.align_mtu = 1;
        attr.cap.put.max_iov = 1;
        attr.cap.get.max_bcopy = usize::MAX;
        attr.cap.get.opt_zcopy_align = 1;
        attr.cap.get.align_mtu = 1;
        attr.cap.get.max_iov = 1;
        attr.cap.am.max_short = s.send_size;
        attr.cap.am.max_bcopy = s.send_size;
        attr.cap.am.opt_zcopy_align = 1;
        attr.cap.am.align_mtu = 1;
        attr.cap.am.max_hdr = 0;
        attr.cap.am.max_iov = usize::MAX;

        attr.latency.c = 0.0;
        attr.latency.m = 0.0;
        // MiB/s as the release says, in bytes/s.
        attr.bandwidth.dedicated = release::self_bandwidth_mbs() * 1024.0 * 1024.0;
        attr.bandwidth.shared = 0.0;
        attr.overhead = OVERHEAD;
        attr.priority = 0;
    }

    fn ep_create(iface: &Iface<Self>, params: &EpParams<'_>) -> Result<(), ucs_status_t> {
        // A self iface address is 8 bytes (iface_addr_len).
        match params.iface_addr.and_then(|a| decode_iface_addr(a.bytes())) {
            None => {
                crate::error!("self: creating an endpoint needs UCT_EP_PARAM_FIELD_IFACE_ADDR (8 bytes)");
                Err(UCS_ERR_INVALID_PARAM)
            }
            Some(a) if a != iface.tl.id => {
                crate::error!("self: peer address {:#x} is not this interface", a);
                Err(UCS_ERR_UNREACHABLE)
            }
            Some(_) => Ok(()),
        }
    }

    fn get_address(iface: &Iface<Self>, out: AddrOut) -> ucs_status_t {
        out.write(&iface.tl.id.to_ne_bytes())
    }

    fn is_reachable(iface: &Iface<Self>, dev: Option<PeerAddr<'_>>, addr: Option<PeerAddr<'_>>) -> bool {
        Self::reachable(iface, dev, addr).is_ok()
    }

    fn reachable(iface: &Iface<Self>, _dev: Option<PeerAddr<'_>>, addr: Option<PeerAddr<'_>>) -> Result<(), String> {
        let Some(addr) = addr else { return Err(release::reason(|| "iface address is empty".into())) };
        // A self iface address is 8 bytes.
        match decode_iface_addr(addr.bytes()) {
            Some(a) if a == iface.tl.id => Ok(()),
            Some(a) => Err(release::reason(|| {
                format!("iface id and iface address differ ({} vs {})", iface.tl.id, a)
            })),
            None => Err(release::reason(|| "iface address is empty".into())),
        }
    }

    fn estimate_perf(iface: &Iface<Self>, perf: &mut uct_perf_attr_t) -> ucs_status_t {
        let status = crate::core::iface::default_estimate_perf(iface, perf);
        release::perf_flags(perf);
        status
    }

    crate::mapped_rma_ops! {
        #[inline(always)]
        fn am_short(iface: &Iface<Self>, _ep: &Ep<Self>, id: u8, header: u64, payload: &[u8]) -> ucs_status_t {
            if let Err(s) = checks::am_id(id) {
                return s;
            }
            let s = &iface.tl;
            let total = payload.len() + 8;
            if let Err(e) = checks::length::<Self>(Op::AmShort, total, s.send_size) {
                return e;
            }
            if total <= SMALL {
                // Small messages are staged on the stack: inline data is only
                // valid during the handler call, so no buffer outlives it.
                let mut small = [0u64; SMALL / 8];
                let b = words_as_bytes(&mut small);
                b[..8].copy_from_slice(&header.to_ne_bytes());
                b[8..total].copy_from_slice(payload);
                let status = iface.hdr.invoke_am(id, &mut b[..total], 0);
                if status != UCS_OK {
                    handler_status(id, status);
                }
                return UCS_OK;
            }
            let mut buf = s.take();
            let b = buf.bytes(total);
            b[..8].copy_from_slice(&header.to_ne_bytes());
            b[8..].copy_from_slice(payload);
            SelfIface::deliver(&iface.hdr, id, &mut buf, total);
            s.give(buf);
            UCS_OK
        }

        fn am_short_iov(iface: &Iface<Self>, _ep: &Ep<Self>, id: u8, iov: &[uct_iov_t]) -> ucs_status_t {
            if let Err(s) = checks::am_id(id) {
                return s;
            }
            let s = &iface.tl;
            let total = iov_total(iov);
            if let Err(e) = checks::length::<Self>(Op::AmShortIov, total, s.send_size) {
                return e;
            }
            let mut buf = s.take();
            let n = iov_gather(iov, buf.bytes(total));
            SelfIface::deliver(&iface.hdr, id, &mut buf, n);
            s.give(buf);
            UCS_OK
        }

        fn am_bcopy(iface: &Iface<Self>, _ep: &Ep<Self>, id: u8, pack: Pack, _flags: u32) -> isize {
            if let Err(s) = checks::am_id(id) {
                return s as isize;
            }
            let s = &iface.tl;
            let mut buf = s.take();
            let len = pack.pack_into(buf.bytes(s.send_size));
            if let Err(e) = checks::length::<Self>(Op::AmBcopy, len, s.send_size) {
                s.give(buf);
                return e as isize;
            }
            SelfIface::deliver(&iface.hdr, id, &mut buf, len);
            s.give(buf);
            len as isize
        }

        fn pending_add(_iface: &Iface<Self>, _ep: &Ep<Self>, _req: PendingReq, _flags: u32) -> ucs_status_t {
            // Sends never run out of resources, so there is never a reason to wait.
            UCS_ERR_BUSY
        }

        fn pending_purge(_iface: &Iface<Self>, _ep: &Ep<Self>, _cb: PurgeCb) {
            // Nothing is ever queued (see `pending_add`): nothing to purge.
        }

        fn ep_check(_iface: &Iface<Self>, _ep: &Ep<Self>, flags: u32, _comp: Completion) -> ucs_status_t {
            if flags != 0 {
                return UCS_ERR_INVALID_PARAM;
            }
            UCS_OK
        }
    }
}

static INTERNAL: crate::core::iface::InternalOps = Internal::<SelfIface>::OPS;

impl IfaceOpen for SelfIface {
    type Config = SelfIfaceConfig;
    fn open(md: &MdObj, worker: &WorkerObj, params: &IfaceParams, cfg: &SelfIfaceConfig)
            -> Result<uct_iface_h, ucs_status_t> {
        iface_open(md, worker, params, cfg)
    }
}

fn iface_open(md: &MdObj, worker: &WorkerObj, params: &IfaceParams, cfg: &SelfIfaceConfig)
              -> Result<uct_iface_h, ucs_status_t> {
    if params.open_mode & UCT_IFACE_OPEN_MODE_DEVICE == 0 {
        crate::error!("self transport supports only UCT_IFACE_OPEN_MODE_DEVICE");
        return Err(UCS_ERR_UNSUPPORTED);
    }
    let ndev = num_devices(md);
    let dev_ok = (0..ndev).any(|i| params.dev_name == release::self_device_name(DEVICE_PREFIX, i, ndev));
    if !dev_ok {
        crate::error!("self: no device named '{}'", params.dev_name);
        return Err(UCS_ERR_NO_DEVICE);
    }
    if worker.thread_mode == UCS_THREAD_MODE_MULTI {
        crate::error!("self transport does not support multi-threaded worker");
        return Err(UCS_ERR_INVALID_PARAM);
    }
    if cfg.seg_size < 8 || cfg.seg_size > u32::MAX as usize {
        crate::error!("self: SEG_SIZE {} is out of range [8, {}]", cfg.seg_size, u32::MAX);
        return Err(UCS_ERR_INVALID_PARAM);
    }
    let (align, align_offset) = match params.am_alignment {
        Some(a) if a > 1 => (a, if params.am_align_offset < cfg.seg_size { params.am_align_offset } else { 0 }),
        _ => (64, 0),
    };
    let id = crate::ucs::generate_uuid(worker as *const WorkerObj as u64 ^ cfg as *const _ as u64);
    let hdr = IfaceHeader::new(md, worker, params, &cfg.base, &INTERNAL);
    let tl = SelfIface { id, send_size: cfg.seg_size, align, align_offset, primary: Cell::new(None),
                         pool: RefCell::new(Vec::new()) };
    crate::debug!("created self iface id {:#x} send_size {}", id, cfg.seg_size);
    Ok(Iface::into_handle(hdr, tl))
}
