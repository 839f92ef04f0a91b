//! `posix_get`: a rendezvous lane between two processes of this library
//! that reads the sender's buffer straight out of its posix segment (one
//! copy, by the receiver) instead of through the posix FIFO (two copies,
//! one by each side). An extension of this library, not in UCX.
//!
//! libucp moves a large message over `UCX_TLS=posix,self` as a rendezvous:
//! it offers the receiver a remote key of the sender's buffer for a lane
//! that can get, and with none it sends the data as 8 KiB active messages
//! through the FIFO. The posix memory domain cannot offer such a key
//! without breaking a C peer (libucp would then hand C peers keys of ours
//! they cannot use, and choose posix for RMA to memory they cannot map),
//! so the lane is a memory domain and transport of its own:
//!
//! - the transport is named `posix` (so `UCX_TLS=posix`, `sm` and `shm`
//!   enable it) on the device `memory_get` (`UCX_SHM_DEVICES` can leave
//!   it out). Its device address is the host's with a mark in it
//!   ([`crate::transports::sm::device_addr::pack_marked`]): UCX's check of
//!   a device address compares the whole first word, so a C peer never
//!   reaches it, and this transport reaches no C peer either;
//! - the memory domain registers any host memory (libucp requires that).
//!   Memory inside a segment a posix md of this process allocated gets a
//!   key naming that segment (its id, as the posix rkey has it); other
//!   memory gets a key that says so, which `uct_rkey_unpack` answers with
//!   `UCS_ERR_UNREACHABLE`, so libucp leaves the lane out for it and moves
//!   the data as before;
//! - the receiver maps the sender's segment the way posix maps a peer's
//!   FIFO (same ids, same access rules: no ptrace involved) and keeps the
//!   mapping for the next key that names the same file ([`attach`]); the
//!   get is a bounds-checked copy out of that mapping ([`iface`]).
//!
//! Buffers libucp allocates itself (`ucp_mem_map` with `UCP_MEM_MAP_ALLOCATE`,
//! as `ucx_perftest` allocates its buffers) come from the posix md when posix
//! is in use, so tag and stream messages sent from them qualify; plain
//! `malloc`ed buffers do not (they would need a cross-memory copy, cma's
//! way).

pub mod attach;
pub mod iface;
pub mod key;

use crate::abi::*;
use crate::core::component::{self, Component, IfaceOpen, MdDesc, MdOpen, TlDesc, TlDevice};
use crate::core::config::{self, embed, Table};
use crate::core::iface::IfaceParams;
use crate::core::md::{MdImpl, MdObj};
use crate::core::handles::Completion;
use crate::core::worker::WorkerObj;
use crate::transports::sm::mm::posix::{by_id, owned};
use crate::transports::sm::{SmIfaceConfig, SM_IFACE_TABLE};
use libc::c_void;
use once_cell::sync::Lazy;
use std::mem::offset_of;

/// The component and memory domain name.
pub const NAME: &str = "posix_get";
/// The transport name: posix's, so that selecting posix selects it.
pub const TL_NAME: &str = "posix";
/// The device: not posix's `memory`, so that UCT programs asking for
/// posix on `memory` get the FIFO transport, and so that libucp keeps the
/// two apart.
pub const DEVICE_NAME: &str = "memory_get";

/// The md settings: the common ones only.
#[repr(C)]
pub struct GetMdConfig {
    pub base: config::BaseMdConfig,
}

static MD_TABLE: Lazy<Table> =
    Lazy::new(|| Table::new(vec![embed(&config::BASE_MD_TABLE, offset_of!(GetMdConfig, base))]));

/// The interface settings: those of every shared-memory interface
/// (`UCX_POSIX_GET_BW`, ...).
static IFACE_TABLE: Lazy<Table> = Lazy::new(|| Table::new(vec![embed(&SM_IFACE_TABLE, 0)]));

/// A registration: the segment the memory lies in, if it lies in one.
struct Reg {
    magic: u64,
    seg: Option<owned::OwnedSeg>,
}

const REG_MAGIC: u64 = 0x7563_742d_7067_6574;

impl Reg {
    /// The registration behind a handle of this md (None for others).
    fn of<'a>(memh: uct_mem_h) -> Option<&'a Reg> {
        if memh.is_null() || memh as usize % std::mem::align_of::<Reg>() != 0 {
            return None;
        }
        // SAFETY: handles of this md are boxed `Reg`s, which start with the
        // magic word; libucp hands back only handles this md returned, and
        // a foreign handle fails the magic test.
        let r = unsafe { &*(memh as *const Reg) };
        (r.magic == REG_MAGIC).then_some(r)
    }
}

pub struct GetMd;

impl MdImpl for GetMd {
    fn query(&self, attr: &mut uct_md_attr_t) {
        crate::core::md::registers_host_memory(attr, key::PACKED_SIZE);
        // A registration is a look-up in a short list.
        attr.reg_cost.c = 50e-9;
        attr.reg_cost.m = 0.0;
    }

    fn reg_nonblock_mem_types(&self) -> u64 {
        1u64 << UCS_MEMORY_TYPE_HOST
    }

    fn mem_reg(&self, address: *mut c_void, length: usize, _flags: u32) -> Result<uct_mem_h, ucs_status_t> {
        // Only a segment this process made is offered: a forked child has
        // its parent's segments mapped too, under ids naming the parent,
        // and a reader checks that the id names the process it talks to.
        let me = u64::from(std::process::id());
        let seg = owned::containing(address as usize, length)
            .filter(|s| by_id::creator(s.seg_id).is_none_or(|pid| pid == me));
        Ok(Box::into_raw(Box::new(Reg { magic: REG_MAGIC, seg })) as uct_mem_h)
    }

    fn mem_dereg(&self, memh: uct_mem_h, _flags: u32, _comp: Completion) -> ucs_status_t {
        if Reg::of(memh).is_none() {
            crate::error!("{NAME} md: {memh:p} is not a registration of this memory domain");
            return UCS_ERR_INVALID_PARAM;
        }
        // SAFETY: checked above: a box made by mem_reg, freed once (libucp
        // deregisters a handle once).
        let mut r = unsafe { Box::from_raw(memh as *mut Reg) };
        r.magic = 0;
        UCS_OK
    }

    // The trait's contract: `buf` holds `rkey_packed_size` writable bytes.
    #[allow(clippy::not_unsafe_ptr_arg_deref)]
    fn mkey_pack(&self, memh: uct_mem_h, _flags: u32, buf: *mut u8) -> ucs_status_t {
        let Some(r) = Reg::of(memh) else {
            crate::error!("{NAME} md: {memh:p} is not a registration of this memory domain");
            return UCS_ERR_INVALID_PARAM;
        };
        let packed = key::pack(r.seg.as_ref());
        // SAFETY: the caller provides rkey_packed_size (PACKED_SIZE) bytes.
        unsafe { std::ptr::copy_nonoverlapping(packed.as_ptr(), buf, packed.len()) };
        UCS_OK
    }

    fn mem_query(&self, _address: *const c_void, _length: usize, attr: &mut uct_md_mem_attr_t) -> ucs_status_t {
        crate::core::md::host_mem_query(attr)
    }
}

struct GetOpen;

impl MdOpen for GetOpen {
    type Config = GetMdConfig;
    fn open(_c: &'static Component, _name: &str, _cfg: &GetMdConfig) -> Result<Box<dyn MdImpl>, ucs_status_t> {
        Ok(Box::new(GetMd))
    }
}

impl IfaceOpen for GetOpen {
    type Config = SmIfaceConfig;
    fn open(md: &MdObj, worker: &WorkerObj, params: &IfaceParams, cfg: &SmIfaceConfig)
            -> Result<uct_iface_h, ucs_status_t> {
        iface::open(md, worker, params, cfg)
    }
}

fn md_resources() -> Vec<String> {
    vec![NAME.to_string()]
}

fn query_devices(_md: &MdObj) -> Result<Vec<TlDevice>, ucs_status_t> {
    Ok(vec![TlDevice { name: DEVICE_NAME.to_string(), dev_type: UCT_DEVICE_TYPE_SHM,
                       sys_device: UCS_SYS_DEVICE_ID_UNKNOWN }])
}

static TLS: [TlDesc; 1] =
    [TlDesc::new::<GetOpen>(TL_NAME, c"posix_get transport", c"POSIX_GET_", &IFACE_TABLE, query_devices)];

fn rkey_unpack(buf: *const u8) -> Result<(uct_rkey_t, *mut c_void), ucs_status_t> {
    if buf.is_null() {
        crate::error!("{NAME}: rkey_unpack: the packed key is NULL");
        return Err(UCS_ERR_INVALID_PARAM);
    }
    // SAFETY: libucp hands in a key this component's md packed, which is
    // PACKED_SIZE bytes (its rkey_packed_size).
    let packed = unsafe { std::slice::from_raw_parts(buf, key::PACKED_SIZE) };
    key::unpack(packed)
}

fn rkey_release(rkey: uct_rkey_t, handle: *mut c_void) -> ucs_status_t {
    key::release(rkey, handle)
}

pub static COMPONENT: Component = Component {
    name: NAME,
    flags: || 0,
    md: MdDesc::new::<GetOpen>(c"posix_get memory domain", c"POSIX_GET_", &MD_TABLE),
    cm: None,
    md_resources,
    tls: &TLS,
    rkey_unpack,
    rkey_ptr: component::rkey_ptr_unsupported,
    rkey_release,
};
