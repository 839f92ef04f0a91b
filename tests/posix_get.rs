//! The `posix_get` rendezvous lane (`transports::sm::posix_get`) between two
//! real processes: this test binary runs itself again as the owner of the
//! memory (`helper`, selected by POSIX_GET_HELPER). The owner allocates a
//! posix segment, registers a buffer inside it and one outside on the
//! posix_get md, and prints both packed keys and its interface addresses;
//! on "again" (standard input) it frees the segment and allocates a new
//! one with another pattern, so that the reader must not use its mapping of
//! the old file.

use std::ffi::c_void;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::ptr::null_mut;
use ::uct::abi::*;
use ::uct::ffi::iface::*;
use ::uct::ffi::md::*;
use ::uct::transports::sm::posix_get::{attach, key};

mod common;
use common::*;

const LEN: usize = 1 << 20;
/// Where the registered buffer starts inside the segment.
const OFFSET: usize = 4096;

fn pattern(round: u8, k: usize) -> u8 {
    (k % 251) as u8 ^ round.wrapping_mul(0x35) ^ 0x5a
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}

/// A posix_get interface on a worker of its own.
struct Lane {
    md: uct_md_h,
    iface: uct_iface_h,
}

impl Lane {
    fn open() -> Lane {
        let (_async, worker) = new_worker();
        let md = open_md(c"posix_get", &[]);
        // SAFETY: md was just opened.
        let config = unsafe { iface_config(md, c"posix", &[]) };
        let p = device_params(c"posix", c"memory_get");
        let mut iface = null_mut();
        // SAFETY: md and worker are open, config was just read, the
        // parameters point at static names.
        assert_eq!(unsafe { uct_iface_open(md, worker, &p, config, &mut iface) }, UCS_OK);
        Lane { md, iface }
    }
}

/// The owner's side, when this binary is run as the helper.
#[test]
fn helper() {
    if std::env::var("POSIX_GET_HELPER").is_err() {
        return;
    }
    let lane = Lane::open();
    let posix = open_md(c"posix", &[]);
    // SAFETY: the interface is open.
    let (dev, addr) = unsafe { iface_addresses(lane.iface) };
    println!("ADDR {} {}", hex(&dev), hex(&addr));
    let plain = vec![7u8; LEN];
    let mut round = 0u8;
    let mut stdin = std::io::stdin().lock();
    loop {
        let mut len = LEN + 2 * OFFSET;
        let mut seg = null_mut();
        let mut memh = null_mut();
        // SAFETY: posix is open; the out-pointers are locals.
        assert_eq!(unsafe { uct_md_mem_alloc(posix, &mut len, &mut seg, 0, c"test".as_ptr(), &mut memh) }, UCS_OK);
        let buf = (seg as usize + OFFSET) as *mut u8;
        for k in 0..LEN {
            // SAFETY: inside the segment just allocated.
            unsafe { *buf.add(k) = pattern(round, k) };
        }
        let packed = |address: *mut c_void| {
            let mut reg = null_mut();
            // SAFETY: the md is open; the range is ours; out-pointer local.
            assert_eq!(unsafe { uct_md_mem_reg(lane.md, address, LEN, UCT_MD_MEM_ACCESS_ALL as _, &mut reg) }, UCS_OK);
            let mut k = vec![0u8; key::PACKED_SIZE];
            // SAFETY: the registration was just made; the buffer has the
            // md's rkey_packed_size.
            assert_eq!(unsafe { uct_md_mkey_pack(lane.md, reg, k.as_mut_ptr() as *mut c_void) }, UCS_OK);
            // SAFETY: made above, released once.
            assert_eq!(unsafe { uct_md_mem_dereg(lane.md, reg) }, UCS_OK);
            k
        };
        println!("KEY {} {} {}", buf as usize, hex(&packed(buf as *mut c_void)),
                 hex(&packed(plain.as_ptr() as *mut c_void)));
        std::io::stdout().flush().unwrap();
        let mut line = String::new();
        if stdin.read_line(&mut line).unwrap_or(0) == 0 || line.trim() != "again" {
            break;
        }
        // SAFETY: allocated above and no longer used.
        assert_eq!(unsafe { uct_md_mem_free(posix, memh) }, UCS_OK);
        round += 1;
    }
}

struct Owner {
    child: Child,
    stdin: ChildStdin,
    lines: std::io::Lines<BufReader<std::process::ChildStdout>>,
    dev: Vec<u8>,
    addr: Vec<u8>,
}

/// The keys of one round of the owner: the buffer's address, the key of
/// the buffer in the segment, the key of a buffer outside any segment.
struct Keys {
    addr: u64,
    inside: Vec<u8>,
    outside: Vec<u8>,
}

impl Owner {
    fn start() -> Owner {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "helper", "--nocapture", "--test-threads=1"])
            .env("POSIX_GET_HELPER", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("the helper runs");
        let stdin = child.stdin.take().unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let (dev, addr) = loop {
            let line = lines.next().expect("the helper's addresses").unwrap();
            if let Some(i) = line.find("ADDR ") {
                let f: Vec<&str> = line[i + 5..].split_whitespace().collect();
                break (unhex(f[0]), unhex(f[1]));
            }
        };
        Owner { child, stdin, lines, dev, addr }
    }

    fn keys(&mut self) -> Keys {
        loop {
            let line = self.lines.next().expect("the helper's keys").unwrap();
            if let Some(i) = line.find("KEY ") {
                let f: Vec<&str> = line[i + 4..].split_whitespace().collect();
                return Keys { addr: f[0].parse().unwrap(), inside: unhex(f[1]), outside: unhex(f[2]) };
            }
        }
    }

    fn again(&mut self) {
        writeln!(self.stdin, "again").unwrap();
        self.stdin.flush().unwrap();
    }
}

impl Drop for Owner {
    fn drop(&mut self) {
        // Ask the helper to stop rather than kill it: killed inside an
        // allocation (after "again"), it would leave its segment's file in
        // /dev/shm (the file is unlinked once sized). Killed only when it
        // does not end by itself.
        let _ = writeln!(self.stdin, "stop");
        let _ = self.stdin.flush();
        for _ in 0..500 {
            if !matches!(self.child.try_wait(), Ok(None)) {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn unpack(packed: &[u8]) -> Result<uct_rkey_bundle_t, ucs_status_t> {
    // SAFETY: plain data.
    let mut b: uct_rkey_bundle_t = unsafe { std::mem::zeroed() };
    // SAFETY: the component is ours; the buffer holds a packed key of its
    // size; the bundle is a local.
    match unsafe { uct_rkey_unpack(component("posix_get"), packed.as_ptr() as *const c_void, &mut b) } {
        UCS_OK => Ok(b),
        s => Err(s),
    }
}

fn release(b: &uct_rkey_bundle_t) {
    // SAFETY: a bundle unpack returned, released once.
    assert_eq!(unsafe { uct_rkey_release(component("posix_get"), b) }, UCS_OK);
}

/// `uct_ep_get_zcopy` of `dst.len()` bytes at the owner's `raddr`.
fn get(ep: Ep, dst: &mut [u8], raddr: u64, rkey: uct_rkey_t) -> ucs_status_t {
    let iov = uct_iov_t { buffer: dst.as_mut_ptr() as *mut c_void, length: dst.len(), memh: null_mut(), stride: 0,
                          count: 1 };
    // SAFETY: the endpoint is live; the iov names our buffer; the rkey is
    // one unpacked by this transport (or deliberately not, where the call
    // must refuse it).
    unsafe { ep.ops().ep_get_zcopy.unwrap()(ep.raw(), &iov, 1, raddr, rkey, null_mut()) }
}

#[test]
fn reads_the_owners_segment_and_only_inside_it() {
    if std::env::var("POSIX_GET_HELPER").is_ok() {
        return;
    }
    let lane = Lane::open();
    let mut owner = Owner::start();
    // SAFETY: the interface is open; the addresses are the peer's, as long
    // as our own (the same transport).
    let ep = unsafe { Ep::from_raw(connect_to_iface(lane.iface, &owner.dev, &owner.addr).expect("an endpoint")) };
    // An endpoint to another process (this one): the owner's keys name
    // the owner's segments, so they are refused there.
    // SAFETY: as above, with our own addresses.
    let other = unsafe {
        let (dev, addr) = iface_addresses(lane.iface);
        Ep::from_raw(connect_to_iface(lane.iface, &dev, &addr).expect("an endpoint to ourselves"))
    };
    let mut dst = vec![0u8; LEN];
    for round in 0..3u8 {
        let keys = owner.keys();
        // Memory outside any posix segment: the lane does not reach it.
        assert_eq!(unpack(&keys.outside).err(), Some(UCS_ERR_UNREACHABLE));
        let b = unpack(&keys.inside).expect("the segment's key unpacks");
        dst.fill(0);
        assert_eq!(get(ep, &mut dst, keys.addr, b.rkey), UCS_OK);
        assert!(dst.iter().enumerate().all(|(k, &v)| v == pattern(round, k)), "round {round}: wrong bytes");
        // A piece from the middle.
        let mut part = vec![0u8; 1000];
        assert_eq!(get(ep, &mut part, keys.addr + 12345, b.rkey), UCS_OK);
        assert!(part.iter().enumerate().all(|(k, &v)| v == pattern(round, k + 12345)));
        // Past the end of the segment, and before its start: refused.
        let end = keys.addr - OFFSET as u64 + (LEN + 2 * OFFSET) as u64;
        assert_eq!(get(ep, &mut part, end - 999, b.rkey), UCS_ERR_INVALID_PARAM);
        assert_eq!(get(ep, &mut part, keys.addr - OFFSET as u64 - 1, b.rkey), UCS_ERR_INVALID_PARAM);
        assert_eq!(get(ep, &mut part, u64::MAX - 10, b.rkey), UCS_ERR_INVALID_PARAM);
        // An rkey that is not one of ours.
        assert_eq!(get(ep, &mut part, keys.addr, 0), UCS_ERR_INVALID_PARAM);
        // The owner's key on an endpoint to another process.
        assert_eq!(get(other, &mut part, keys.addr, b.rkey), UCS_ERR_INVALID_PARAM);
        release(&b);
        // The mapping is kept for the next key of the same file...
        assert!(attach::kept() >= 1);
        // ...but the owner now frees the segment and makes another, most
        // likely under the same id (the same descriptor number): the next
        // round must read the new file.
        owner.again();
    }
    // SAFETY: made above, not used again.
    unsafe {
        ep.destroy();
        other.destroy();
    }
}

#[test]
fn forged_keys_are_refused_without_a_fault() {
    if std::env::var("POSIX_GET_HELPER").is_ok() {
        return;
    }
    let mut owner = Owner::start();
    let keys = owner.keys();
    let word = |k: &[u8], i: usize| u64::from_ne_bytes(k[i * 8..i * 8 + 8].try_into().unwrap());
    let forge = |w: [u64; 6]| w.iter().flat_map(|x| x.to_ne_bytes()).collect::<Vec<u8>>();
    let (kind, seg_id, owner_addr, length) =
        (word(&keys.inside, 0), word(&keys.inside, 1), word(&keys.inside, 2), word(&keys.inside, 3));
    let (dev, ino) = (word(&keys.inside, 4), word(&keys.inside, 5));
    // The real segment, claimed longer than its file: mapping past the end
    // of a file faults later, so the key is refused now.
    assert_eq!(unpack(&forge([kind, seg_id, owner_addr, length * 4, dev, ino])).err(), Some(UCS_ERR_UNREACHABLE));
    // The real segment, said to be another file (a name the owner gave a
    // new file since): refused, never read as the file it is now.
    assert_eq!(unpack(&forge([kind, seg_id, owner_addr, length, dev, ino ^ 1])).err(), Some(UCS_ERR_UNREACHABLE));
    // A file reached by a path (which needs a directory the key has no
    // room for), a proc link to pid 0, a descriptor the owner does not
    // have, an unknown kind, a zero length.
    assert_eq!(unpack(&forge([kind, 0x1234, owner_addr, length, dev, ino])).err(), Some(UCS_ERR_UNREACHABLE));
    assert_eq!(unpack(&forge([kind, (1 << 63) | (1 << 62) | (5 << 30), owner_addr, length, dev, ino])).err(),
               Some(UCS_ERR_UNREACHABLE));
    let no_fd = (seg_id & !(((1u64 << 30) - 1) << 30)) | (999_999 << 30);
    assert_eq!(unpack(&forge([kind, no_fd, owner_addr, length, dev, ino])).err(), Some(UCS_ERR_UNREACHABLE));
    assert_eq!(unpack(&forge([kind ^ 1, seg_id, owner_addr, length, dev, ino])).err(), Some(UCS_ERR_UNREACHABLE));
    assert_eq!(unpack(&forge([kind, seg_id, owner_addr, 0, dev, ino])).err(), Some(UCS_ERR_UNREACHABLE));
    // Once the genuine key has been unpacked (the mapping kept), a longer
    // claim or another file still is refused.
    let b = unpack(&keys.inside).expect("the genuine key");
    assert_eq!(unpack(&forge([kind, seg_id, owner_addr, length * 4, dev, ino])).err(), Some(UCS_ERR_UNREACHABLE));
    assert_eq!(unpack(&forge([kind, seg_id, owner_addr, length, dev ^ 1, ino])).err(), Some(UCS_ERR_UNREACHABLE));
    release(&b);
    // The genuine key still works after all that.
    let b = unpack(&keys.inside).expect("the genuine key");
    release(&b);
}

#[test]
fn reaches_only_its_own_kind() {
    if std::env::var("POSIX_GET_HELPER").is_ok() {
        return;
    }
    let lane = Lane::open();
    // SAFETY: the interface is open.
    let (dev, addr) = unsafe { iface_addresses(lane.iface) };
    // UCX's device check compares the first word with the host's id
    // (ucs_get_system_id); ours is marked, so a C peer never matches it.
    // SAFETY: a plain libucs query.
    let host = unsafe { ucs_get_system_id() } & !(1u64 << 63);
    assert_ne!(u64::from_ne_bytes(dev[..8].try_into().unwrap()) & !(1u64 << 63), host);
    // SAFETY: the addresses are the interface's own, as long as it said.
    assert_ne!(unsafe { uct_iface_is_reachable(lane.iface, dev.as_ptr() as *const _, addr.as_ptr() as *const _) }, 0);
    // A device address as posix (and the C original) packs it: refused.
    let mut plain = dev.clone();
    plain[..8].copy_from_slice(&(host | (u64::from_ne_bytes(dev[..8].try_into().unwrap()) & (1 << 63))).to_ne_bytes());
    // SAFETY: as above (same lengths).
    assert_eq!(unsafe { uct_iface_is_reachable(lane.iface, plain.as_ptr() as *const _, addr.as_ptr() as *const _) },
               0);
    // And posix itself does not reach our device address.
    let posix = open_md(c"posix", &[]);
    let (_a, worker) = new_worker();
    // SAFETY: posix is open.
    let config = unsafe { iface_config(posix, c"posix", &[]) };
    let p = device_params(c"posix", c"memory");
    let mut piface = null_mut();
    // SAFETY: as in Lane::open.
    assert_eq!(unsafe { uct_iface_open(posix, worker, &p, config, &mut piface) }, UCS_OK);
    // SAFETY: the posix interface is open.
    let (_pdev, paddr) = unsafe { iface_addresses(piface) };
    // SAFETY: our device address is at least as long as posix's.
    assert_eq!(unsafe { uct_iface_is_reachable(piface, dev.as_ptr() as *const _, paddr.as_ptr() as *const _) }, 0);
}

extern "C" {
    fn ucs_get_system_id() -> u64;
}
