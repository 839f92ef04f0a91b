//! Tests of the posix mapper: configuration, attributes, and segments
//! shared with a peer process in each naming mode (proc link, shm_open
//! name, directory path), plus forged keys and full or huge-page-less
//! directories.

use super::file::*;
use super::*;
use std::os::unix::fs::MetadataExt;
use crate::core::config::ConfigDesc;
use crate::transports::sm::mm::test_support::{check, fill, hex, run_peer, unhex, Cfg, PEER_ENV};


static DESC: ConfigDesc = ConfigDesc {
    name: c"posix memory domain",
    prefix: c"POSIX_",
    table: &POSIX_MD_TABLE,
    size: std::mem::size_of::<PosixMdConfig>(),
};

fn posix(settings: &[(&CStr, &CStr)]) -> Posix {
    let cfg = Cfg::read(&DESC, settings);
    Posix::from_config(cfg.get::<PosixMdConfig>()).expect("posix mapper")
}

fn pack(m: &Posix, seg: &Segment) -> Vec<u8> {
    let mut buf = vec![0xa5u8; m.rkey_packed_size() + 16];
    m.mkey_pack(seg, buf.as_mut_ptr());
    assert!(buf[m.rkey_packed_size()..].iter().all(|&b| b == 0xa5), "mkey_pack wrote past its size");
    buf.truncate(m.rkey_packed_size());
    buf
}

fn shm_files() -> Vec<String> {
    std::fs::read_dir("/dev/shm").map_or_else(|_| Vec::new(), |d| {
        d.filter_map(|e| e.ok()).map(|e| e.file_name().to_string_lossy().into_owned())
         .filter(|n| n.starts_with(FILE_PREFIX)).collect()
    })
}

/// A private directory for the name-mode tests (removed on drop).
struct TempDir(std::path::PathBuf);
impl TempDir {
    fn new(base: &str, tag: &str) -> TempDir {
        let p = std::path::PathBuf::from(format!("{base}/uct-rs-test-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&p).expect("mkdir");
        TempDir(p)
    }
    fn cstr(&self) -> CString {
        CString::new(self.0.to_str().expect("utf8")).expect("cstr")
    }
    fn entries(&self) -> usize {
        std::fs::read_dir(&self.0).map_or(0, |d| d.count())
    }
}
impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn config_names_and_defaults() {
    let cfg = Cfg::read(&DESC, &[]);
    let c = cfg.get::<PosixMdConfig>();
    assert_eq!(c.hugetlb_mode as u32, UCS_TRY);
    assert_eq!(c.use_proc_link, 1);
    // SAFETY: parsed string.
    assert_eq!(unsafe { CStr::from_ptr(c.dir) }, c"/dev/shm");
    let text = cfg.print(&POSIX_MD_TABLE, c"POSIX_");
    let lines: Vec<&str> = text.lines().filter(|l| l.starts_with("UCX_")).collect();
    let mut want = vec!["UCX_POSIX_HUGETLB_MODE=try", "UCX_POSIX_DIR=/dev/shm"];
    if !release::posix_shm_min_size_fields(0).is_empty() {
        want.push("UCX_POSIX_SHM_MIN_SIZE=16M");
    }
    want.push("UCX_POSIX_USE_PROC_LINK=y");
    assert_eq!(lines, want, "{text}");
    // Sub-table fields answer with and without their prefix; ternary rejects "auto".
    let cfg = Cfg::read(&DESC, &[(c"MM_HUGETLB_MODE", c"n"), (c"USE_PROC_LINK", c"n")]);
    assert_eq!(cfg.get::<PosixMdConfig>().hugetlb_mode as u32, UCS_NO);
    assert_eq!(cfg.get::<PosixMdConfig>().use_proc_link, 0);
    let cfg = Cfg::read(&DESC, &[(c"MM_HUGETLB_MODE", c"y")]);
    assert_eq!(cfg.get::<PosixMdConfig>().hugetlb_mode as u32, UCS_YES);
    // SAFETY: valid config, NUL-terminated strings.
    let status = unsafe { config::modify(cfg.opts, c"MM_HUGETLB_MODE".as_ptr(), c"auto".as_ptr()) };
    assert_ne!(status, UCS_OK);
}

#[test]
fn attributes() {
    let m = posix(&[]);
    let expect = shm::fs_available(c"/dev/shm").expect("statvfs");
    let got = m.max_alloc();
    assert!(got.abs_diff(expect) <= 64 << 20, "max_alloc {got} vs statvfs {expect}");
    if m.pid_ns_default {
        assert_eq!(m.rkey_packed_size(), 24);
        assert!(m.iface_addr_extra().is_empty());
    } else {
        // The PID namespace id, as wide as the release's `ucs_sys_ns_t`.
        assert_eq!(m.rkey_packed_size(), 24 + ucs::ns_len());
        assert_eq!(m.iface_addr_extra().len(), ucs::ns_len());
    }
    let m = posix(&[(c"USE_PROC_LINK", c"n")]);
    assert_eq!(m.rkey_packed_size(), 24);
    assert!(m.iface_addr_extra().is_empty());
    let m = posix(&[(c"USE_PROC_LINK", c"n"), (c"DIR", c"/tmp")]);
    assert_eq!(m.rkey_packed_size(), 24 + 5);
    assert_eq!(m.iface_addr_extra(), b"/tmp\0");
    assert_eq!(m.iface_addr_extra_len(), 5);
    let m = posix(&[(c"DIR", c"/nonexistent-uct-rs")]);
    assert_eq!(m.max_alloc(), 0);
}

#[test]
fn reachability() {
    let m = posix(&[]);
    let ns_len = ucs::ns_len();
    let ns_bytes = |id: u64| {
        let mut v = Vec::new();
        ucs::ns_encode(&mut v, id, ns_len);
        v
    };
    let own = ns_bytes(m.pid_ns);
    // Where the release opens the peer's file to decide, these made-up
    // ids name no file and are unreachable.
    let opens = release::posix_reach_opens_segment();
    assert_eq!(m.is_reachable(FLAG_PROCFS | 1234, &[]), m.pid_ns_default && !opens);
    assert_eq!(m.is_reachable(FLAG_PROCFS | FLAG_PID_NS | 1234, &own), !opens);
    assert!(!m.is_reachable(FLAG_PROCFS | FLAG_PID_NS | 1234, &ns_bytes(m.pid_ns ^ 1)));
    assert!(!m.is_reachable(FLAG_PROCFS | FLAG_PID_NS | 1234, &own[..ns_len - 1]));
}

/// The peer side: unpack the rkey (and attach by id), check the owner's
/// pattern, answer with our own.
#[test]
fn peer_posix() {
    let Ok(mode) = std::env::var(PEER_ENV) else { return };
    if mode != "posix" {
        return;
    }
    let rkey_buf = unhex(&std::env::var("RKEY").expect("RKEY"));
    let extra = unhex(&std::env::var("EXTRA").expect("EXTRA"));
    let len: usize = std::env::var("LEN").expect("LEN").parse().expect("len");
    let seg_id = u64::from_ne_bytes(rkey_buf[..8].try_into().expect("8"));
    let owner = u64::from_ne_bytes(rkey_buf[8..16].try_into().expect("8"));

    // SAFETY: a posix rkey packed by the parent.
    let (rkey, handle) = unsafe { Posix::unpack(rkey_buf.as_ptr()) }.expect("unpack");
    let local = owner.wrapping_add(rkey as u64) as *mut u8;
    assert!(check(local, len, 1), "owner's pattern not visible through the rkey");

    // Attach by segment id, as the FIFO code does, with the peer's config.
    let m = posix(&[]);
    assert!(m.is_reachable(seg_id, &extra));
    let rseg = m.attach(seg_id, len, &extra).expect("attach");
    assert!(check(rseg.address as *const u8, len, 1));
    fill(rseg.address as *mut u8, len / 2, 2);
    m.detach(&rseg);
    // What was written through one mapping shows through the other.
    assert!(check(local, len / 2, 2));
    fill(local.wrapping_add(len / 2), len - len / 2, 3);
    assert_eq!(Posix::release(rkey, handle), UCS_OK);
}

fn roundtrip(m: &Posix, len: usize) -> Segment {
    let seg = m.alloc(len, std::ptr::null_mut(), false, "test").expect("alloc");
    assert!(seg.length >= len && seg.length % page_size() == 0);
    fill(seg.address as *mut u8, len, 1);
    let rkey = pack(m, &seg);
    assert_eq!(u64::from_ne_bytes(rkey[..8].try_into().unwrap()), seg.seg_id);
    assert_eq!(u64::from_ne_bytes(rkey[8..16].try_into().unwrap()), seg.address as u64);
    assert_eq!(u64::from_ne_bytes(rkey[16..24].try_into().unwrap()), seg.length as u64);
    run_peer("transports::sm::mm::posix::tests::peer_posix",
             &[(PEER_ENV, "posix".into()), ("RKEY", hex(&rkey)), ("EXTRA", hex(&m.iface_addr_extra())),
               ("LEN", len.to_string())]);
    assert!(check(seg.address as *const u8, len / 2, 2), "peer's writes (attach) not visible");
    assert!(check((seg.address as *const u8).wrapping_add(len / 2), len - len / 2, 3),
            "peer's writes (rkey) not visible");
    seg
}

#[test]
fn proc_link_segment_shared_with_peer() {
    let m = posix(&[]);
    let len = 3 * page_size() + 100;
    let seg = roundtrip(&m, len);
    assert_ne!(seg.seg_id & FLAG_PROCFS, 0);
    assert_ne!(seg.seg_id & FLAG_SHM_OPEN, 0);
    assert_eq!(seg.seg_id & FLAG_HUGETLB, 0, "tmpfs cannot give huge pages");
    assert_eq!(seg.seg_id & FLAG_PID_NS != 0, !m.pid_ns_default);
    let (pid, fd) = procfs_split(seg.seg_id);
    assert_eq!(pid, std::process::id() as u64);
    // The name is gone already; only the descriptor keeps the file.
    let link = std::fs::read_link(format!("/proc/self/fd/{fd}")).expect("fd link");
    let link = link.to_string_lossy().into_owned();
    assert!(link.contains(FILE_PREFIX) && link.ends_with("(deleted)"), "{link}");
    assert_eq!(seg.fd.as_ref().expect("the segment keeps its descriptor").as_raw_fd() as u64, fd);
    let st = std::fs::metadata(format!("/proc/self/fd/{fd}")).expect("stat through the fd link");
    assert_eq!(st.nlink(), 0);
    assert_eq!(st.len() as usize, seg.length);
    assert_eq!(m.free(seg), UCS_OK);
    // Closed (the number may have been reused by another test, but not for this file).
    let after = std::fs::read_link(format!("/proc/self/fd/{fd}")).map(|p| p.to_string_lossy().into_owned());
    assert_ne!(after.ok().as_deref(), Some(link.as_str()));
}

#[test]
fn shm_open_name_segment_shared_with_peer() {
    let m = posix(&[(c"USE_PROC_LINK", c"n")]);
    let seg = roundtrip(&m, 10000);
    assert_eq!(seg.seg_id & FLAGS_MASK, FLAG_SHM_OPEN);
    let name = format!("{FILE_PREFIX}{:x}", seg.seg_id & MMID_MASK);
    assert!(shm_files().contains(&name));
    assert_eq!(m.free(seg), UCS_OK);
    assert!(!shm_files().contains(&name), "{name} left in /dev/shm");
}

#[test]
fn directory_segment_shared_with_peer() {
    let dir = TempDir::new("/dev/shm", "dir");
    let d = dir.cstr();
    let m = posix(&[(c"USE_PROC_LINK", c"n"), (c"DIR", &d)]);
    assert!(!m.use_shm_open);
    let seg = roundtrip(&m, 5000);
    assert_eq!(seg.seg_id & FLAGS_MASK, 0);
    let rkey = pack(&m, &seg);
    assert_eq!(&rkey[24..], d.as_bytes_with_nul());
    assert_eq!(dir.entries(), 1);
    assert_eq!(m.free(seg), UCS_OK);
    assert_eq!(dir.entries(), 0);
}

#[test]
fn same_process_attach_and_fixed_address() {
    let m = posix(&[]);
    // Reserve a range, then place a segment there.
    let len = 4 * page_size();
    let at = shm::reserve_address_space(len).expect("reserve").as_ptr();
    let seg = m.alloc(len, at, true, "fixed").expect("fixed alloc");
    assert_eq!(seg.address, at);
    fill(seg.address as *mut u8, len, 9);
    let rseg = m.attach(seg.seg_id, len, &m.iface_addr_extra()).expect("attach own");
    assert_ne!(rseg.address, seg.address);
    assert!(check(rseg.address as *const u8, len, 9));
    fill(rseg.address as *mut u8, 100, 4);
    assert!(check(seg.address as *const u8, 100, 4));
    m.detach(&rseg);
    assert_eq!(m.free(seg), UCS_OK);
}

#[test]
fn bad_rkeys_and_ids() {
    let m = posix(&[]);
    let mut rkey = [0u8; 24 + 8];
    let put = |rkey: &mut [u8], seg_id: u64, addr: u64, len: u64| {
        rkey[..8].copy_from_slice(&seg_id.to_ne_bytes());
        rkey[8..16].copy_from_slice(&addr.to_ne_bytes());
        rkey[16..24].copy_from_slice(&len.to_ne_bytes());
    };
    // A proc link to a process/fd that does not exist.
    put(&mut rkey, FLAG_PROCFS | procfs_id(PROCFS_FIELD_MASK, 999_999), 0x1000, 4096);
    // SAFETY: a 32-byte buffer holding a forged rkey.
    assert_eq!(unsafe { Posix::unpack(rkey.as_ptr()) }.unwrap_err(), UCS_ERR_SHMEM_SEGMENT);
    // An shm name that does not exist.
    put(&mut rkey, FLAG_SHM_OPEN | 0x0dea_dbee, 0x1000, 4096);
    // SAFETY: as above, a forged rkey of the buffer's size.
    assert_eq!(unsafe { Posix::unpack(rkey.as_ptr()) }.unwrap_err(), UCS_ERR_SHMEM_SEGMENT);
    // A directory file that does not exist (rkey ends with "" dir).
    put(&mut rkey, 0x1234, 0x1000, 4096);
    // SAFETY: as above.
    assert_eq!(unsafe { Posix::unpack(rkey.as_ptr()) }.unwrap_err(), UCS_ERR_SHMEM_SEGMENT);
    // Zero length.
    put(&mut rkey, FLAG_SHM_OPEN | 0x1234, 0x1000, 0);
    // SAFETY: as above.
    assert_eq!(unsafe { Posix::unpack(rkey.as_ptr()) }.unwrap_err(), UCS_ERR_INVALID_PARAM);
    assert_eq!(Posix::release(0, std::ptr::null_mut()), UCS_ERR_INVALID_PARAM);
    assert_eq!(m.attach(FLAG_SHM_OPEN | 0x77, 4096, &[]).unwrap_err(), UCS_ERR_SHMEM_SEGMENT);
    assert_eq!(m.attach(0x77, 4096, &[]).unwrap_err(), UCS_ERR_SHMEM_SEGMENT);
    assert_eq!(m.attach(FLAG_PROCFS | procfs_id(1, 0), 0, &[]).unwrap_err(), UCS_ERR_INVALID_PARAM);

    // A real segment, but a length beyond its end: refused instead of a
    // mapping that would fault.
    let seg = m.alloc(8192, std::ptr::null_mut(), false, "short").expect("alloc");
    let mut good = pack(&m, &seg);
    good[16..24].copy_from_slice(&(1u64 << 30).to_ne_bytes());
    // SAFETY: a packed rkey of this mapper, its length field edited.
    assert_eq!(unsafe { Posix::unpack(good.as_ptr()) }.unwrap_err(), UCS_ERR_SHMEM_SEGMENT);
    assert_eq!(m.attach(seg.seg_id, 1 << 30, &[]).unwrap_err(), UCS_ERR_SHMEM_SEGMENT);
    good[16..24].copy_from_slice(&u64::MAX.to_ne_bytes());
    // SAFETY: as above.
    assert_eq!(unsafe { Posix::unpack(good.as_ptr()) }.unwrap_err(), UCS_ERR_SHMEM_SEGMENT);
    assert_eq!(m.free(seg), UCS_OK);
}

#[test]
fn full_directory_is_no_memory() {
    // A private directory on the same tmpfs: its size limit applies, and
    // a leftover file would be easy to see.
    let dir = TempDir::new("/dev/shm", "full");
    let d = dir.cstr();
    for proc_link in [c"y", c"n"] {
        let m = posix(&[(c"DIR", &d), (c"USE_PROC_LINK", proc_link)]);
        let avail = shm::fs_available(&d).expect("statvfs");
        if avail == 0 {
            return; // an unlimited (or full) tmpfs: nothing to fill
        }
        let too_big = (avail as usize).saturating_add(1 << 30);
        assert_eq!(m.alloc(too_big, std::ptr::null_mut(), false, "huge").unwrap_err(), UCS_ERR_NO_MEMORY);
        assert_eq!(dir.entries(), 0, "file left behind");
    }
}

#[test]
fn hugetlb_modes() {
    // tmpfs files cannot be mapped with MAP_HUGETLB: "try" falls back,
    // "y" fails and leaves nothing behind.
    let dir = TempDir::new("/dev/shm", "huge");
    let d = dir.cstr();
    for proc_link in [c"y", c"n"] {
        let m = posix(&[(c"DIR", &d), (c"USE_PROC_LINK", proc_link), (c"MM_HUGETLB_MODE", c"try")]);
        let seg = m.alloc(4 << 20, std::ptr::null_mut(), false, "try").expect("try");
        assert_eq!(seg.seg_id & FLAG_HUGETLB, 0);
        assert_eq!(m.free(seg), UCS_OK);
        let m = posix(&[(c"DIR", &d), (c"USE_PROC_LINK", proc_link), (c"MM_HUGETLB_MODE", c"y")]);
        assert!(m.alloc(4 << 20, std::ptr::null_mut(), false, "yes").is_err());
        assert_eq!(dir.entries(), 0);
    }
    let m = posix(&[(c"MM_HUGETLB_MODE", c"n")]);
    let seg = m.alloc(4096, std::ptr::null_mut(), false, "no").expect("n");
    assert_eq!(m.free(seg), UCS_OK);
}
