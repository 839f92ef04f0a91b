//! The `sysv` mapper: System V shared memory. A segment is `shmget`
//! (IPC_PRIVATE) memory, attached by its creator and removed (IPC_RMID) at
//! once: Linux keeps a removed segment attachable by id until its last
//! detach, so it never outlives the processes using it. The segment id is
//! the shmid; the packed rkey is `{shmid u32, owner address u64}`, packed,
//! 12 bytes, as in UCX 1.13.1's `src/uct/sm/mm/sysv/mm_sysv.c`. The
//! `shmget`/`shmat`/`shmdt`/`shmctl` calls are those of [`crate::sys::shm`].

use super::mapper::{Mapper, RemoteSeg, RkeyOps, Segment};
use super::util::{align_up, huge_page_size, os_error_text, page_size, HugetlbMode, HUGETLB_MODE_DOC};
use crate::abi::*;
use crate::core::config::{self, embed, embed_prefixed, field, parser, BaseMdConfig, Table};
use crate::sys::{shm, Errno};
use libc::{c_int, c_void};
use once_cell::sync::Lazy;
use std::mem::offset_of;
use std::ptr::NonNull;

/// The parsed `sysv` memory-domain options (our own layout).
#[repr(C)]
pub struct SysvMdConfig {
    pub base: BaseMdConfig,
    /// `ucs_ternary_auto_value_t`: `UCS_NO`, `UCS_YES` or `UCS_TRY`.
    pub hugetlb_mode: c_int,
}

/// The `MM_` sub-table, embedded at offset 0.
static MM_MD_TABLE: Lazy<Table> = Lazy::new(|| {
    Table::new(vec![
        embed(&config::BASE_MD_TABLE, offset_of!(SysvMdConfig, base)),
        field(c"HUGETLB_MODE", c"try", HUGETLB_MODE_DOC, offset_of!(SysvMdConfig, hugetlb_mode),
              parser::ternary()),
    ])
});

/// The table of the `sysv` component's md config (prefix `SYSV_`).
pub static SYSV_MD_TABLE: Lazy<Table> = Lazy::new(|| Table::new(vec![embed_prefixed(c"MM_", &MM_MD_TABLE, 0)]));

/// Owner read/write, group read/write.
const SEGMENT_MODE: c_int = 0o660;
/// `{shmid u32, owner address u64}`, packed.
const PACKED_RKEY_SIZE: usize = 12;

/// Attach a segment by id anywhere in our address space.
fn attach_id(shmid: c_int) -> Result<*mut c_void, ucs_status_t> {
    match shm::shmat(shmid) {
        Ok(addr) => {
            crate::trace!("attached sysv segment {shmid} at {addr:p}");
            Ok(addr.as_ptr())
        }
        Err(err) => {
            crate::error!("shmat(shmid={shmid}) failed: {}", os_error_text(err));
            Err(UCS_ERR_SHMEM_SEGMENT)
        }
    }
}

/// Detach an attachment. Callers pass an address `shmat` returned, and
/// nothing of theirs uses the attachment afterwards.
fn detach_addr(address: *mut c_void) -> ucs_status_t {
    let r = match NonNull::new(address) {
        // SAFETY: an attachment of ours, no longer used (see above).
        Some(a) => unsafe { shm::shmdt(a) },
        None => Err(Errno::EINVAL),
    };
    if let Err(err) = r {
        crate::warn!("shmdt({address:p}) failed: {}", os_error_text(err));
        return UCS_ERR_INVALID_PARAM;
    }
    UCS_OK
}

pub struct Sysv {
    hugetlb_mode: HugetlbMode,
}

impl Sysv {
    pub fn from_config(cfg: &SysvMdConfig) -> Result<Sysv, ucs_status_t> {
        Ok(Sysv { hugetlb_mode: HugetlbMode::from_config(cfg.hugetlb_mode)? })
    }

    /// One attempt: create, attach (at `at` when `fixed`), remove the id.
    fn create(&self, length: usize, at: *mut c_void, fixed: bool, huge: bool, name: &str)
              -> Result<Segment, ucs_status_t> {
        let size = if huge {
            let Some(huge_page) = huge_page_size() else {
                crate::debug!("the system has no huge pages");
                return Err(UCS_ERR_NO_MEMORY);
            };
            let size = align_up(length, huge_page).ok_or(UCS_ERR_NO_MEMORY)?;
            // Rounding up to a huge page must not more than double the size.
            if size / 2 >= length {
                return Err(UCS_ERR_EXCEEDS_LIMIT);
            }
            size
        } else {
            align_up(length, page_size()).ok_or(UCS_ERR_NO_MEMORY)?
        };

        let shmid = shm::shmget_private(size, SEGMENT_MODE, huge).map_err(|err| {
            let text = format!("shmget(size={size}, flags=0x{:x}) for {name} failed: {}",
                               shm::shmget_flags(SEGMENT_MODE, huge), os_error_text(err));
            match err {
                // Huge pages missing or not allowed: expected, "try" falls back.
                Errno::ENOMEM | Errno::EPERM if huge => {
                    crate::debug!("{text}");
                    UCS_ERR_NO_MEMORY
                }
                Errno::ENOMEM | Errno::EPERM | Errno::ENOSPC | Errno::EINVAL => {
                    crate::error!("{text}");
                    UCS_ERR_NO_MEMORY
                }
                _ => {
                    crate::error!("{text}");
                    UCS_ERR_SHMEM_SEGMENT
                }
            }
        })?;

        let (hint, shm_flags) = if fixed { (at, libc::SHM_REMAP) } else { (std::ptr::null_mut(), 0) };
        let attached = if fixed {
            // A fixed attach at NULL is refused, as shmat refuses SHM_REMAP
            // without an address.
            match NonNull::new(at) {
                // SAFETY: with a fixed placement the caller of
                // `uct_md_mem_alloc` gave up the range at `at`.
                Some(at) => unsafe { shm::shmat_at(shmid, at) },
                None => Err(Errno::EINVAL),
            }
        } else {
            shm::shmat(shmid)
        };
        // Remove the id now: the attachment keeps the segment alive (and
        // attachable by id on Linux) and the kernel frees it with the last detach.
        if let Err(err) = shm::shm_remove(shmid) {
            crate::warn!("shmctl(IPC_RMID, shmid={shmid}) failed: {}", os_error_text(err));
        }
        let addr = match attached {
            Ok(addr) => addr.as_ptr(),
            Err(Errno::ENOMEM) => return Err(UCS_ERR_NO_MEMORY),
            Err(err) => {
                crate::error!("shmat(shmid={shmid}, address={hint:p}, flags=0x{shm_flags:x}) failed: {}",
                              os_error_text(err));
                return Err(UCS_ERR_SHMEM_SEGMENT);
            }
        };
        crate::debug!("allocated sysv shared memory {name} at {addr:p} length {size} shmid {shmid}");
        Ok(Segment { seg_id: shmid as u64, address: addr, length: size, fd: None })
    }
}

impl Mapper for Sysv {
    type MdConfig = SysvMdConfig;
    fn from_md_config(cfg: &SysvMdConfig) -> Result<Sysv, ucs_status_t> {
        Sysv::from_config(cfg)
    }

    fn max_alloc(&self) -> u64 {
        crate::transports::sm::release::sysv_max_alloc()
    }

    fn rkey_packed_size(&self) -> usize {
        PACKED_RKEY_SIZE
    }

    fn alloc(&self, length: usize, address: *mut c_void, fixed: bool, name: &str) -> Result<Segment, ucs_status_t> {
        if length == 0 {
            return Err(UCS_ERR_INVALID_PARAM);
        }
        let mut status = UCS_ERR_UNSUPPORTED;
        if self.hugetlb_mode != HugetlbMode::No {
            match self.create(length, address, fixed, true, name) {
                Ok(seg) => return Ok(seg),
                Err(s) => {
                    crate::debug!("sysv: no huge-page segment of {length} bytes");
                    status = s;
                }
            }
        }
        if self.hugetlb_mode != HugetlbMode::Yes {
            match self.create(length, address, fixed, false, name) {
                Ok(seg) => return Ok(seg),
                Err(s) => status = s,
            }
        }
        crate::error!("failed to allocate {length} bytes of sysv shared memory for {name}");
        Err(status)
    }

    fn free(&self, seg: Segment) -> ucs_status_t {
        detach_addr(seg.address)
    }

    fn iface_addr_extra(&self) -> Vec<u8> {
        Vec::new()
    }

    fn iface_addr_extra_len(&self) -> usize {
        0
    }

    fn is_reachable(&self, _seg_id: u64, _extra: &[u8]) -> bool {
        true
    }

    fn attach(&self, seg_id: u64, length: usize, _extra: &[u8]) -> Result<RemoteSeg, ucs_status_t> {
        let Ok(shmid) = parse_seg_id(seg_id) else {
            crate::error!("invalid sysv segment id 0x{seg_id:x}");
            return Err(UCS_ERR_SHMEM_SEGMENT);
        };
        let address = attach_id(shmid)?;
        // A segment smaller than the peer says would fault on access; one
        // whose size we cannot learn is refused as well.
        let size = match shm::shm_size(shmid) {
            Ok(size) => size,
            Err(err) => {
                crate::error!("shmctl(IPC_STAT, shmid={shmid}) failed: {}", os_error_text(err));
                detach_addr(address);
                return Err(UCS_ERR_SHMEM_SEGMENT);
            }
        };
        if size < length {
            crate::error!("sysv segment {shmid} has {size} bytes, {length} requested");
            detach_addr(address);
            return Err(UCS_ERR_SHMEM_SEGMENT);
        }
        Ok(RemoteSeg { address, length: size })
    }

    fn creator(&self, seg_id: u64) -> Option<i64> {
        let shmid = c_int::try_from(seg_id).ok()?;
        shm::shm_stat(shmid).ok().map(|ds| ds.shm_cpid as i64)
    }

    fn detach(&self, seg: &RemoteSeg) {
        detach_addr(seg.address);
    }

    // The trait's contract: `buf` holds `rkey_packed_size()` writable bytes.
    #[allow(clippy::not_unsafe_ptr_arg_deref)]
    fn mkey_pack(&self, seg: &Segment, buf: *mut u8) {
        let packed = pack_rkey(seg.seg_id as u32, seg.address as u64);
        // SAFETY: the caller provides `rkey_packed_size()` (12) bytes at `buf`.
        unsafe { std::ptr::copy_nonoverlapping(packed.as_ptr(), buf, PACKED_RKEY_SIZE) };
    }
}

/// Decode a packed sysv rkey (`{shmid u32, owner address u64}`): the shmid
/// (a non-negative `int`) and the owner's address.
pub fn parse_rkey(packed: &[u8]) -> Result<(c_int, u64), &'static str> {
    let b = packed.get(..PACKED_RKEY_SIZE).ok_or("shorter than 12 bytes")?;
    let shmid = u32::from_ne_bytes(b[..4].try_into().map_err(|_| "short")?);
    let owner = u64::from_ne_bytes(b[4..].try_into().map_err(|_| "short")?);
    let shmid = c_int::try_from(shmid).map_err(|_| "shmid out of range")?;
    Ok((shmid, owner))
}

/// Decode a sysv segment id (a FIFO's, from an iface address, or a
/// descriptor's, from a FIFO element): a non-negative `int`.
pub fn parse_seg_id(seg_id: u64) -> Result<c_int, &'static str> {
    c_int::try_from(seg_id).map_err(|_| "segment id out of range")
}

/// Pack a sysv rkey (the inverse of [`parse_rkey`]).
pub fn pack_rkey(shmid: u32, owner: u64) -> [u8; PACKED_RKEY_SIZE] {
    let mut packed = [0u8; PACKED_RKEY_SIZE];
    packed[..4].copy_from_slice(&shmid.to_ne_bytes());
    packed[4..].copy_from_slice(&owner.to_ne_bytes());
    packed
}

impl RkeyOps for Sysv {
    unsafe fn unpack(buf: *const u8) -> Result<(uct_rkey_t, *mut c_void), ucs_status_t> {
        if buf.is_null() {
            return Err(UCS_ERR_INVALID_PARAM);
        }
        // SAFETY: the caller guarantees a 12-byte packed sysv rkey at `buf`.
        let packed = unsafe { std::slice::from_raw_parts(buf, PACKED_RKEY_SIZE) };
        let (shmid, owner) = parse_rkey(packed).map_err(|why| {
            crate::error!("sysv: bad rkey: {why}");
            UCS_ERR_SHMEM_SEGMENT
        })?;
        let address = attach_id(shmid)?;
        Ok(((address as u64).wrapping_sub(owner) as uct_rkey_t, address))
    }

    fn release(_rkey: uct_rkey_t, handle: *mut c_void) -> ucs_status_t {
        if handle.is_null() {
            return UCS_ERR_INVALID_PARAM;
        }
        detach_addr(handle)
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{check, fill, hex, run_peer, unhex, Cfg, PEER_ENV};
    use super::*;
    use crate::core::config::ConfigDesc;

    static DESC: ConfigDesc = ConfigDesc {
        name: c"sysv memory domain",
        prefix: c"SYSV_",
        table: &SYSV_MD_TABLE,
        size: std::mem::size_of::<SysvMdConfig>(),
    };

    fn sysv(settings: &[(&std::ffi::CStr, &std::ffi::CStr)]) -> Sysv {
        let cfg = Cfg::read(&DESC, settings);
        Sysv::from_config(cfg.get::<SysvMdConfig>()).expect("sysv mapper")
    }

    fn pack(m: &Sysv, seg: &Segment) -> Vec<u8> {
        let mut buf = vec![0xa5u8; 32];
        m.mkey_pack(seg, buf.as_mut_ptr());
        assert!(buf[12..].iter().all(|&b| b == 0xa5));
        buf.truncate(12);
        buf
    }

    const SHM_DEST: u16 = 0o1000;

    /// (exists, marked for destruction, attach count).
    fn segment_state(shmid: c_int) -> Option<(bool, u64)> {
        shm::shm_stat(shmid).ok().map(|ds| (ds.shm_perm.mode & SHM_DEST != 0, ds.shm_nattch))
    }

    /// The `ipcs -m` line of `shmid`, if ipcs is installed and lists it.
    fn ipcs_line(shmid: c_int) -> Option<Option<String>> {
        let out = std::process::Command::new("ipcs").arg("-m").output().ok()?;
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        Some(text.lines().find(|l| l.split_whitespace().nth(1) == Some(&shmid.to_string())).map(str::to_owned))
    }

    #[test]
    fn config_names_and_defaults() {
        let cfg = Cfg::read(&DESC, &[]);
        assert_eq!(cfg.get::<SysvMdConfig>().hugetlb_mode as u32, UCS_TRY);
        let text = cfg.print(&SYSV_MD_TABLE, c"SYSV_");
        let lines: Vec<&str> = text.lines().filter(|l| l.starts_with("UCX_")).collect();
        assert_eq!(lines, ["UCX_SYSV_HUGETLB_MODE=try"], "{text}");
        let cfg = Cfg::read(&DESC, &[(c"MM_HUGETLB_MODE", c"no")]);
        assert_eq!(cfg.get::<SysvMdConfig>().hugetlb_mode as u32, UCS_NO);
        let m = sysv(&[]);
        assert_eq!(m.max_alloc(), crate::transports::sm::release::sysv_max_alloc());
        assert_eq!(m.rkey_packed_size(), 12);
        assert!(m.iface_addr_extra().is_empty() && m.iface_addr_extra_len() == 0);
        assert!(m.is_reachable(1, &[]));
    }

    #[test]
    fn peer_sysv() {
        let Ok(mode) = std::env::var(PEER_ENV) else { return };
        if mode != "sysv" {
            return;
        }
        let rkey_buf = unhex(&std::env::var("RKEY").expect("RKEY"));
        let len: usize = std::env::var("LEN").expect("LEN").parse().expect("len");
        let shmid = u32::from_ne_bytes(rkey_buf[..4].try_into().expect("4")) as u64;
        let owner = u64::from_ne_bytes(rkey_buf[4..12].try_into().expect("8"));
        // SAFETY: a sysv rkey packed by the parent.
        let (rkey, handle) = unsafe { Sysv::unpack(rkey_buf.as_ptr()) }.expect("unpack");
        let local = owner.wrapping_add(rkey as u64) as *mut u8;
        assert_eq!(local as *mut c_void, handle);
        assert!(check(local, len, 1));
        let m = sysv(&[]);
        let rseg = m.attach(shmid, len, &[]).expect("attach by id");
        assert!(check(rseg.address as *const u8, len, 1));
        fill(rseg.address as *mut u8, len / 2, 2);
        m.detach(&rseg);
        assert!(check(local, len / 2, 2));
        fill(local.wrapping_add(len / 2), len - len / 2, 3);
        assert_eq!(Sysv::release(rkey, handle), UCS_OK);
    }

    #[test]
    fn segment_shared_with_peer_and_removed() {
        let m = sysv(&[]);
        let len = 2 * page_size() + 1;
        let seg = m.alloc(len, std::ptr::null_mut(), false, "test").expect("alloc");
        assert_eq!(seg.length, 3 * page_size());
        let shmid = seg.seg_id as c_int;
        // Removed at once, still attached by us.
        assert_eq!(segment_state(shmid), Some((true, 1)));
        if let Some(line) = ipcs_line(shmid) {
            let line = line.expect("ipcs lists the live segment");
            assert!(line.contains("dest"), "{line}");
        }
        fill(seg.address as *mut u8, len, 1);
        let rkey = pack(&m, &seg);
        assert_eq!(u32::from_ne_bytes(rkey[..4].try_into().unwrap()), shmid as u32);
        assert_eq!(u64::from_ne_bytes(rkey[4..].try_into().unwrap()), seg.address as u64);
        run_peer("transports::sm::mm::sysv::tests::peer_sysv",
                 &[(PEER_ENV, "sysv".into()), ("RKEY", hex(&rkey)), ("LEN", len.to_string())]);
        assert!(check(seg.address as *const u8, len / 2, 2));
        assert!(check((seg.address as *const u8).wrapping_add(len / 2), len - len / 2, 3));
        assert_eq!(m.free(seg), UCS_OK);
        // Gone with the last detach.
        assert_eq!(segment_state(shmid), None);
        if let Some(line) = ipcs_line(shmid) {
            assert_eq!(line, None);
        }
    }

    #[test]
    fn same_process_attach_and_fixed_address() {
        let m = sysv(&[(c"MM_HUGETLB_MODE", c"n")]);
        let len = 4 * page_size();
        // A reservation of ours, replaced by the fixed attach below.
        let at = shm::reserve_address_space(len).expect("reserve").as_ptr();
        let seg = m.alloc(len, at, true, "fixed").expect("fixed alloc");
        assert_eq!(seg.address, at);
        fill(at as *mut u8, len, 5);
        let rseg = m.attach(seg.seg_id, len, &[]).expect("attach own");
        assert!(check(rseg.address as *const u8, len, 5));
        let shmid = seg.seg_id as c_int;
        assert_eq!(segment_state(shmid), Some((true, 2)));
        m.detach(&rseg);
        assert_eq!(m.free(seg), UCS_OK);
        assert_eq!(segment_state(shmid), None);
    }

    #[test]
    fn bad_rkeys_and_ids() {
        let m = sysv(&[]);
        let mut rkey = [0u8; 12];
        rkey[..4].copy_from_slice(&0x7fff_fff0u32.to_ne_bytes());
        // SAFETY: a 12-byte forged rkey.
        assert_eq!(unsafe { Sysv::unpack(rkey.as_ptr()) }.unwrap_err(), UCS_ERR_SHMEM_SEGMENT);
        rkey[..4].copy_from_slice(&u32::MAX.to_ne_bytes());
        // SAFETY: as above.
        assert_eq!(unsafe { Sysv::unpack(rkey.as_ptr()) }.unwrap_err(), UCS_ERR_SHMEM_SEGMENT);
        assert_eq!(m.attach(0x7fff_fff0, 4096, &[]).unwrap_err(), UCS_ERR_SHMEM_SEGMENT);
        assert_eq!(m.attach(1 << 40, 4096, &[]).unwrap_err(), UCS_ERR_SHMEM_SEGMENT);
        assert_eq!(Sysv::release(0, std::ptr::null_mut()), UCS_ERR_INVALID_PARAM);
        // A live segment attached with a length beyond its end.
        let seg = m.alloc(4096, std::ptr::null_mut(), false, "short").expect("alloc");
        assert_eq!(m.attach(seg.seg_id, 1 << 20, &[]).unwrap_err(), UCS_ERR_SHMEM_SEGMENT);
        assert_eq!(segment_state(seg.seg_id as c_int), Some((true, 1)), "failed attach left a mapping");
        assert_eq!(m.free(seg), UCS_OK);
    }

    #[test]
    fn hugetlb_modes() {
        let reserved = std::fs::read_to_string("/proc/sys/vm/nr_hugepages")
            .ok().and_then(|s| s.trim().parse::<u64>().ok()).unwrap_or(0);
        let m = sysv(&[(c"MM_HUGETLB_MODE", c"try")]);
        let seg = m.alloc(4 << 20, std::ptr::null_mut(), false, "try").expect("try");
        assert_eq!(m.free(seg), UCS_OK);
        // A small request would more than double with a huge page: regular pages.
        let seg = m.alloc(4096, std::ptr::null_mut(), false, "small").expect("small");
        assert_eq!(seg.length, page_size());
        assert_eq!(m.free(seg), UCS_OK);
        if reserved == 0 {
            let m = sysv(&[(c"MM_HUGETLB_MODE", c"y")]);
            assert!(m.alloc(4 << 20, std::ptr::null_mut(), false, "yes").is_err());
        }
    }
}
