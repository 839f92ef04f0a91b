//! Packed rkeys and segment names of the mm transports: posix rkeys
//! (`{seg_id, owner, length}` and a directory), the file a posix segment id
//! and directory name, sysv rkeys (`{shmid u32, owner u64}`) and segment ids.
//! Every decoder reads the whole input.

use uct::transports::sm::mm::posix::rkey::{self as posix, BadName};
use uct::transports::sm::mm::sysv;

/// A path a peer made us open is absolute and free of `.`/`..` components,
/// and its last component is one we format.
fn check_path(path: &[u8], shm: bool, follow: bool) {
    assert!(!path.contains(&0));
    if follow {
        let s = std::str::from_utf8(path).expect("proc links are ASCII");
        let parts: Vec<&str> = s.split('/').collect();
        assert!(parts.len() == 5 && parts[0].is_empty() && parts[1] == "proc" && parts[3] == "fd", "{s}");
        assert!(parts[2].parse::<u64>().expect("pid") > 0);
        parts[4].parse::<u64>().expect("fd");
        return;
    }
    assert_eq!(path[0], b'/');
    let comps: Vec<&[u8]> = path[1..].split(|&b| b == b'/').collect();
    let last = comps.last().expect("a name");
    assert!(last.starts_with(b"ucx_shm_posix_") && last[14..].iter().all(u8::is_ascii_hexdigit));
    if shm {
        assert_eq!(comps.len(), 1);
    }
    for c in &comps {
        assert!(!c.is_empty() && *c != b"." && *c != b"..", "{path:?}");
    }
}

pub fn run(data: &[u8]) {
    // posix rkey
    match posix::parse_rkey(data) {
        Ok(r) => {
            let dir = r.dir.unwrap_or(&[]);
            assert_eq!(r.dir.is_some(), posix::needs_dir(r.seg_id));
            assert!(r.length > 0);
            let packed = posix::pack_rkey(r.seg_id, r.owner, r.length, dir);
            assert!(packed.len() <= data.len());
            assert_eq!(&packed[..], &data[..packed.len()], "pack(parse(x)) is x's prefix");
            assert_eq!(posix::parse_rkey(&packed), Ok(r));
            let (path, shm, follow) = posix::peer_file(r.seg_id, r.dir).expect("an accepted rkey names a file");
            check_path(path.as_bytes(), shm, follow);
        }
        Err(BadName::Dir) => {
            let tail = &data[24..];
            let dir = &tail[..tail.iter().position(|&b| b == 0).expect("a complete directory")];
            assert!(posix::check_dir(dir).is_err());
        }
        Err(_) => {}
    }
    // posix segment id and directory (as in an iface address: 8-byte id,
    // then a NUL-terminated directory)
    if let Some(id) = data.get(..8) {
        let seg_id = u64::from_ne_bytes(id.try_into().unwrap());
        let dir = data[8..].iter().position(|&b| b == 0).map(|n| &data[8..8 + n]);
        if let Ok((path, shm, follow)) = posix::peer_file(seg_id, dir) {
            check_path(path.as_bytes(), shm, follow);
            assert!(posix::check_seg_id(seg_id).is_ok());
        }
        if let Some(dir) = dir {
            if posix::check_dir(dir).is_ok() {
                assert!(dir.len() < posix::MAX_DIR && dir[0] == b'/');
                assert!(!dir.windows(4).any(|w| w == b"/../") && !dir.ends_with(b"/.."));
            }
        }
    }
    // sysv rkey and segment id
    match sysv::parse_rkey(data) {
        Ok((shmid, owner)) => {
            assert!(shmid >= 0);
            assert_eq!(&sysv::pack_rkey(shmid as u32, owner)[..], &data[..12]);
        }
        Err(_) => assert!(data.len() < 12 || u32::from_ne_bytes(data[..4].try_into().unwrap()) > i32::MAX as u32),
    }
    if let Some(id) = data.get(..8) {
        let seg_id = u64::from_ne_bytes(id.try_into().unwrap());
        match sysv::parse_seg_id(seg_id) {
            Ok(shmid) => assert!(shmid >= 0 && shmid as u64 == seg_id),
            Err(_) => assert!(seg_id > i32::MAX as u64),
        }
    }
}

