//! The shared-memory family: the transports that reach only processes of
//! the same host, laid out as UCX 1.13.1 lays out `src/uct/sm`. [`self_`]
//! is the loopback interface of one process; [`mm`] holds the FIFO-based
//! `posix` and `sysv` transports, which map a peer's memory into this
//! process; [`cma`] moves data with Linux's cross-memory attach system calls
//! (UCX's `sm/scopy/cma`). This module keeps what they share: the
//! `UCX_<TL>_BW` interface settings, the device address naming the host (and
//! its IPC namespace), the atomic capability flags, and the put, get and
//! atomic operations over mapped memory.
//!
//! For self, posix and sysv an unpacked rkey is the offset between the
//! owner's address and our mapping, so the target of a put, get or atomic is
//! simply `rkey + remote_addr` (as `uct_sm_ep_put_short` and its siblings in
//! UCX's `src/uct/sm/base/sm_ep.c` compute it). These functions touch that
//! memory directly; the caller vouches for the range, as UCT requires of the
//! user of a remote key.
//!
//! The family makes no system call of its own: shared memory files,
//! mappings and SysV segments are [`crate::sys::shm`]'s, the cross-memory
//! copies [`crate::sys::vm`]'s, the mm wake-up socket a
//! [`crate::sys::socket::Socket`]. What stays `unsafe` here is the work on
//! the shared memory itself (FIFOs, descriptors, mapped rkeys, atomics),
//! each block with the reason it is sound.

pub mod cma;
pub mod get_lanes;
pub mod mm;
pub mod posix_get;
pub mod release;
pub mod self_;

use crate::abi::*;
use crate::core::config::{self, embed, field, parser, BaseIfaceConfig, Table};
use crate::core::handles::*;
use once_cell::sync::Lazy;
use std::mem::offset_of;

/// Settings of every shared-memory interface (`UCX_<TL>_BW`, plus the base).
#[repr(C)]
pub struct SmIfaceConfig {
    pub base: BaseIfaceConfig,
    pub bandwidth: f64,
}

pub static SM_IFACE_TABLE: Lazy<Table> = Lazy::new(|| {
    Table::new(vec![
        embed(&config::BASE_IFACE_TABLE, offset_of!(SmIfaceConfig, base)),
        field(c"BW", c"12179MBs", c"Effective memory bandwidth", offset_of!(SmIfaceConfig, bandwidth), parser::bw()),
    ])
});


/// [`transport_ops!`](crate::transport_ops) for transports whose rkeys map
/// the target (self, posix, sysv): the methods given, plus put, get and
/// atomics (32 and 64 bits) over mapped memory. Expands inside an
/// `impl Transport for X` block; an `offered_if` clause may come first.
#[macro_export]
macro_rules! mapped_rma_ops {
    ($($rest:tt)*) => {
        $crate::transport_ops! {
            atomics: [32, 64];
            $($rest)*

            fn put_short(_iface: &Iface<Self>, _ep: &Ep<Self>, data: &[u8], remote: Remote) -> ucs_status_t {
                $crate::transports::sm::put_short(data, remote)
            }

            fn put_bcopy(_iface: &Iface<Self>, _ep: &Ep<Self>, pack: Pack, remote: Remote) -> isize {
                $crate::transports::sm::put_bcopy(pack, remote)
            }

            fn get_bcopy(_iface: &Iface<Self>, _ep: &Ep<Self>, unpack: Unpack, length: usize, remote: Remote,
                         _comp: Completion) -> ucs_status_t {
                $crate::transports::sm::get_bcopy(unpack, length, remote)
            }

            fn atomic_post(_iface: &Iface<Self>, _ep: &Ep<Self>, op: AtomicOp, width: Width, value: u64,
                           remote: Remote) -> ucs_status_t {
                $crate::transports::sm::atomic_post(op, width, value, remote)
            }

            fn atomic_fetch(_iface: &Iface<Self>, _ep: &Ep<Self>, op: AtomicOp, width: Width, value: u64,
                            compare: u64, remote: Remote, result: FetchResult, _comp: Completion)
                            -> ucs_status_t {
                $crate::transports::sm::atomic_fetch(op, width, value, compare, remote, result)
            }
        }
    };
}

#[inline(always)]
pub fn put_short(data: &[u8], remote: Remote) -> ucs_status_t {
    // SAFETY: the caller names a live, writable, mapped range (UCT contract).
    unsafe { std::ptr::copy(data.as_ptr(), remote.mapped(), data.len()) };
    UCS_OK
}

#[inline(always)]
pub fn put_bcopy(pack: Pack, remote: Remote) -> isize {
    // SAFETY: as for put_short; the pack callback writes the message there.
    unsafe { pack.pack_raw(remote.mapped()) as isize }
}

#[inline(always)]
pub fn get_bcopy(unpack: Unpack, length: usize, remote: Remote) -> ucs_status_t {
    // SAFETY: the caller names a live, readable, mapped range.
    unsafe { unpack.unpack_raw(remote.mapped(), length) };
    UCS_OK
}

#[inline(always)]
fn aligned(target: *mut u8, width: Width) -> bool {
    let align = if width == Width::W64 { 8 } else { 4 };
    !target.is_null() && (target as usize) % align == 0
}

// Cold paths are `extern "C"`: they cannot unwind, so the hot callers need
// no unwind landing pad and can tail-call them without a stack frame.
#[cold]
#[inline(never)]
extern "C" fn misaligned(target: usize, align: usize) -> ucs_status_t {
    crate::error!("atomic target {:#x} is not a {}-byte aligned address", target, align);
    // Opaque to the optimiser: lets the hot path tail-call this.
    std::hint::black_box(UCS_ERR_INVALID_PARAM)
}

#[inline(always)]
pub fn atomic_post(op: AtomicOp, width: Width, value: u64, remote: Remote) -> ucs_status_t {
    let target = remote.mapped();
    if !aligned(target, width) {
        return misaligned(target as usize, if width == Width::W64 { 8 } else { 4 });
    }
    // SAFETY: aligned, non-null, mapped location (UCT contract).
    unsafe { cpu_atomic(target, op, width, value, 0) };
    UCS_OK
}

#[inline(always)]
pub fn atomic_fetch(op: AtomicOp, width: Width, value: u64, compare: u64, remote: Remote,
                    result: FetchResult) -> ucs_status_t {
    let target = remote.mapped();
    if !aligned(target, width) {
        return misaligned(target as usize, if width == Width::W64 { 8 } else { 4 });
    }
    // SAFETY: aligned, non-null, mapped location (UCT contract).
    result.store(unsafe { cpu_atomic(target, op, width, value, compare) });
    UCS_OK
}

/// The atomic capabilities of CPU-coherent transports.
pub const ATOMIC_POST_FLAGS: u64 =
    (1u64 << UCT_ATOMIC_OP_ADD) | (1u64 << UCT_ATOMIC_OP_AND) | (1u64 << UCT_ATOMIC_OP_OR) | (1u64 << UCT_ATOMIC_OP_XOR);
pub const ATOMIC_FETCH_FLAGS: u64 =
    ATOMIC_POST_FLAGS | (1u64 << UCT_ATOMIC_OP_SWAP) | (1u64 << UCT_ATOMIC_OP_CSWAP);

/// The device address of shared-memory transports: the host's identity
/// (system id, with bit 63 set and the IPC namespace id appended when not
/// in the default namespace), so that only processes on the same host (and
/// IPC namespace) are reachable. The namespace id is as wide as the
/// release's `ucs_sys_ns_t` ([`ucs::ns_len`](crate::ucs::ns_len): 8 bytes up
/// to 1.21, 4 from 1.22), so the address is 8 bytes, or 16 or 12.
pub mod device_addr {
    use crate::core::handles::PeerAddr;
    use crate::ucs;

    const FLAG_NS: u64 = 1 << 63;
    const ID_LEN: usize = 8;

    fn local() -> (u64, Option<u64>) {
        let id = ucs::system_id() & !FLAG_NS;
        match ucs::ns_unless_default(ucs::UCS_SYS_NS_TYPE_IPC) {
            None => (id, None),
            Some(ns) => (id | FLAG_NS, Some(ns)),
        }
    }

    pub fn len() -> usize {
        if local().1.is_some() { ID_LEN + ucs::ns_len() } else { ID_LEN }
    }

    pub fn pack() -> Vec<u8> {
        let (id, ns) = local();
        encode(id, ns, ucs::ns_len())
    }

    /// The first word of a peer's device address (its host identity).
    fn peer_id(dev: PeerAddr<'_>) -> Option<u64> {
        dev.read_at::<ID_LEN>(0).map(u64::from_ne_bytes)
    }

    /// The namespace id after the first word, read within the declared
    /// length.
    fn peer_ns(dev: PeerAddr<'_>) -> Option<u64> {
        let ns_len = ucs::ns_len();
        dev.prefix(ID_LEN + ns_len).and_then(|b| ucs::ns_decode(&b[ID_LEN..], ns_len))
    }

    /// Whether a peer's device address designates this host (and IPC
    /// namespace), read within the length we declared (a peer in another
    /// namespace kind fails the first word's test before the namespace id
    /// is read).
    pub fn same_host(dev: PeerAddr<'_>) -> bool {
        matches_local(peer_id(dev), || peer_ns(dev), local())
    }

    /// [`same_host`] with the reason when not (the text of
    /// `uct_iface_is_reachable_v2`, where the release gives one).
    pub fn check_host(dev: PeerAddr<'_>) -> Result<(), String> {
        explain(peer_id(dev), || peer_ns(dev), local())
    }

    /// A device address for transports that only peers of this library
    /// may reach: ours with `mark` (bit 63 clear, not 0) XORed into the
    /// first word. UCX's check compares that word with its own, so a C
    /// peer never finds it reachable, while [`check_host_marked`] undoes the
    /// mark.
    pub fn pack_marked(mark: u64) -> Vec<u8> {
        let mut v = pack();
        let w = u64::from_ne_bytes(v[..ID_LEN].try_into().expect("8 bytes")) ^ (mark & !FLAG_NS);
        v[..ID_LEN].copy_from_slice(&w.to_ne_bytes());
        v
    }

    /// [`check_host`] of an address packed by [`pack_marked`] with `mark`.
    pub fn check_host_marked(dev: PeerAddr<'_>, mark: u64) -> Result<(), String> {
        let mark = mark & !FLAG_NS;
        explain(peer_id(dev).map(|w| w ^ mark), || peer_ns(dev), local())
    }

    /// As [`matches_local`], saying why not: another host (or namespace
    /// kind) in the first word, another IPC namespace after it.
    pub fn explain(peer_id: Option<u64>, peer_ns: impl Fn() -> Option<u64>, local: (u64, Option<u64>))
                   -> Result<(), String> {
        if matches_local(peer_id, &peer_ns, local) {
            return Ok(());
        }
        let (id, ns) = local;
        let peer = peer_id.unwrap_or(0);
        Err(super::release::reason(|| match ns {
            // (hex while namespace ids were 64-bit, decimal from 1.22)
            Some(ns) if peer == id && ucs::ns_len() == 4 => {
                format!("different pid namespaces {} vs {}", ns, peer_ns().unwrap_or(0))
            }
            Some(ns) if peer == id => {
                format!("different pid namespaces {:x} vs {:x}", ns, peer_ns().unwrap_or(0))
            }
            _ => format!("different host id local {} vs {}", id, peer),
        }))
    }

    /// Whether a device address whose first word is `peer_id` and whose
    /// namespace id `peer_ns` reads names the host and IPC namespace
    /// `local` (the system id, with bit 63 set when a namespace id
    /// follows). Pure: `peer_ns` is only called when the first word matches
    /// and says a namespace id follows.
    pub fn matches_local(peer_id: Option<u64>, peer_ns: impl Fn() -> Option<u64>, local: (u64, Option<u64>))
                         -> bool {
        let (id, ns) = local;
        match peer_id {
            Some(peer) if peer == id => match ns {
                None => true,
                Some(ns) => peer_ns() == Some(ns),
            },
            _ => false,
        }
    }

    /// Decode a device address from its bytes: the system id word and, when
    /// its bit 63 says so, the IPC namespace id (`ns_len` bytes) after it.
    pub fn decode(bytes: &[u8], ns_len: usize) -> Option<(u64, Option<u64>)> {
        let id = u64::from_ne_bytes(bytes.get(..ID_LEN)?.try_into().expect("8 bytes"));
        if id & FLAG_NS != 0 {
            Some((id, Some(ucs::ns_decode(&bytes[ID_LEN..], ns_len)?)))
        } else {
            Some((id, None))
        }
    }

    /// Pack a device address of host `id` (bit 63 set when `ns` is given),
    /// the namespace id `ns_len` bytes wide.
    pub fn encode(id: u64, ns: Option<u64>, ns_len: usize) -> Vec<u8> {
        let mut v = id.to_ne_bytes().to_vec();
        if let Some(ns) = ns {
            ucs::ns_encode(&mut v, ns, ns_len);
        }
        v
    }
}

/// Both addresses of a peer, for reachability checks that need both; the
/// reason (in the release's words) when one is missing.
pub fn both_addrs<'a>(dev: Option<PeerAddr<'a>>, addr: Option<PeerAddr<'a>>)
                      -> Result<(PeerAddr<'a>, PeerAddr<'a>), String> {
    let Some(dev) = dev else { return Err(release::reason(|| "device address is empty".into())) };
    let Some(addr) = addr else { return Err(release::reason(|| "iface address is empty".into())) };
    Ok((dev, addr))
}

/// Most iov entries a zero-copy put/get over mapped memory accepts.
pub const MAX_IOV: usize = 16;

/// Zero-copy put over mapped memory: the iov entries land back to back at
/// the target. Completes before returning.
pub fn put_zcopy(iov: &[uct_iov_t], remote: Remote) -> ucs_status_t {
    let mut dst = remote.mapped();
    for e in iov {
        let stride = if e.stride == 0 { e.length } else { e.stride };
        for k in 0..e.count.max(1) as usize {
            // SAFETY: the caller's iov entry names readable local memory and
            // the target range is a live mapped region (UCT contract).
            unsafe {
                std::ptr::copy((e.buffer as *const u8).add(k * stride), dst, e.length);
                dst = dst.add(e.length);
            }
        }
    }
    UCS_OK
}

/// Zero-copy get over mapped memory into the iov entries, in order.
pub fn get_zcopy(iov: &[uct_iov_t], remote: Remote) -> ucs_status_t {
    let mut src = remote.mapped() as *const u8;
    for e in iov {
        let stride = if e.stride == 0 { e.length } else { e.stride };
        for k in 0..e.count.max(1) as usize {
            // SAFETY: as for put_zcopy, in the other direction.
            unsafe {
                std::ptr::copy(src, (e.buffer as *mut u8).add(k * stride), e.length);
                src = src.add(e.length);
            }
        }
    }
    UCS_OK
}
