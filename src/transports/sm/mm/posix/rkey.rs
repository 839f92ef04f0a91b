//! What a peer sends that names a posix segment, decoded without touching
//! the file system: a packed rkey (`{seg_id, owner address, length}` and,
//! for a file reached by path outside `/dev/shm`, the directory and its
//! NUL), a segment id (from an rkey, an iface address or a FIFO element),
//! and the file those name. Pure functions: bytes in, a value or a reason
//! out.
//!
//! UCX 1.13.1 (`src/uct/sm/mm/posix/mm_posix.c`) opens whatever path the
//! peer's directory and id make. Here the directory must be an absolute
//! path of plain components (no `.` or `..`, no empty component, no control
//! bytes) shorter than `PATH_MAX`, a proc-link id must name a positive pid,
//! and the file name itself is always one this code formats from the id.

use super::file::{file_path, procfs_split, shm_name, FLAG_PROCFS, FLAG_SHM_OPEN, PACKED_RKEY_SIZE};
use std::ffi::CString;

/// A decoded posix rkey.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PosixRkey<'a> {
    pub seg_id: u64,
    /// The owner's address of the segment's first byte.
    pub owner: u64,
    pub length: u64,
    /// The directory of a file reached by path (without its NUL).
    pub dir: Option<&'a [u8]>,
}

/// Why a posix rkey, segment id or directory is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BadName {
    /// Fewer bytes than the fixed part, or a directory without its NUL.
    Truncated,
    /// The length does not fit this process's address space, or is 0.
    Length(u64),
    /// A proc-link id whose pid is 0.
    Pid(u64),
    /// The directory is not an absolute path of plain components.
    Dir,
    /// A file reached by path, but no directory is given.
    NoDir,
}

impl std::fmt::Display for BadName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BadName::Truncated => write!(f, "truncated"),
            BadName::Length(l) => write!(f, "segment length {l}"),
            BadName::Pid(id) => write!(f, "proc-link id {id:#x} names no process"),
            BadName::Dir => write!(f, "directory is not a plain absolute path"),
            BadName::NoDir => write!(f, "no directory for a segment reached by path"),
        }
    }
}

/// Whether a segment id names its file by path in a directory (neither a
/// proc link nor a `shm_open` name).
pub fn needs_dir(seg_id: u64) -> bool {
    seg_id & (FLAG_SHM_OPEN | FLAG_PROCFS) == 0
}

/// The longest directory accepted from a peer (PATH_MAX, NUL included).
pub const MAX_DIR: usize = libc::PATH_MAX as usize;

/// Check a directory a peer names (an rkey's or an iface address's).
pub fn check_dir(dir: &[u8]) -> Result<(), BadName> {
    if dir.len() >= MAX_DIR || dir.first() != Some(&b'/') || dir.iter().any(|&b| b < 0x20 || b == 0x7f) {
        return Err(BadName::Dir);
    }
    // "/" alone is fine; otherwise every component is a plain name (one
    // trailing slash is tolerated).
    let body = &dir[1..];
    if body.is_empty() {
        return Ok(());
    }
    let body = body.strip_suffix(b"/").unwrap_or(body);
    if body.is_empty() || body.split(|&b| b == b'/').any(|c| c.is_empty() || c == b"." || c == b"..") {
        return Err(BadName::Dir);
    }
    Ok(())
}

/// Decode a packed posix rkey from `packed` (which may hold more bytes
/// after it).
pub fn parse_rkey(packed: &[u8]) -> Result<PosixRkey<'_>, BadName> {
    let fixed = packed.get(..PACKED_RKEY_SIZE).ok_or(BadName::Truncated)?;
    let word = |i: usize| u64::from_ne_bytes(fixed[8 * i..8 * i + 8].try_into().expect("8 bytes"));
    let (seg_id, owner, length) = (word(0), word(1), word(2));
    if length == 0 || usize::try_from(length).is_err() {
        return Err(BadName::Length(length));
    }
    let dir = if needs_dir(seg_id) {
        let tail = &packed[PACKED_RKEY_SIZE..];
        let n = tail.iter().take(MAX_DIR).position(|&b| b == 0).ok_or(BadName::Truncated)?;
        let dir = &tail[..n];
        check_dir(dir)?;
        Some(dir)
    } else {
        None
    };
    check_seg_id(seg_id)?;
    Ok(PosixRkey { seg_id, owner, length, dir })
}

/// Pack a posix rkey (the inverse of [`parse_rkey`]).
pub fn pack_rkey(seg_id: u64, owner: u64, length: u64, dir: &[u8]) -> Vec<u8> {
    let mut packed = Vec::with_capacity(PACKED_RKEY_SIZE + dir.len() + 1);
    packed.extend_from_slice(&seg_id.to_ne_bytes());
    packed.extend_from_slice(&owner.to_ne_bytes());
    packed.extend_from_slice(&length.to_ne_bytes());
    if needs_dir(seg_id) {
        packed.extend_from_slice(dir);
        packed.push(0);
    }
    packed
}

/// Check a segment id a peer names.
pub fn check_seg_id(seg_id: u64) -> Result<(), BadName> {
    if seg_id & FLAG_PROCFS != 0 && procfs_split(seg_id).0 == 0 {
        return Err(BadName::Pid(seg_id));
    }
    Ok(())
}

/// The pid inside a proc-link id, None for other ids.
pub fn procfs_pid(seg_id: u64) -> Option<u64> {
    (seg_id & FLAG_PROCFS != 0).then(|| procfs_split(seg_id).0)
}

/// The file a peer's segment id (and directory) names: the path, and
/// whether it is a `shm_open` name (else a path to `open`), and whether the
/// last component may be a symbolic link (only the `/proc/<pid>/fd/<fd>`
/// links, which are the way such a segment is reached).
pub fn peer_file(seg_id: u64, dir: Option<&[u8]>) -> Result<(CString, bool, bool), BadName> {
    check_seg_id(seg_id)?;
    if seg_id & FLAG_PROCFS != 0 {
        let (pid, fd) = procfs_split(seg_id);
        return Ok((CString::new(format!("/proc/{pid}/fd/{fd}")).expect("no NUL"), false, true));
    }
    let mmid = seg_id & super::file::MMID_MASK;
    if seg_id & FLAG_SHM_OPEN != 0 {
        return Ok((shm_name(mmid), true, false));
    }
    let dir = dir.ok_or(BadName::NoDir)?;
    check_dir(dir)?;
    // "/tmp/" and "/tmp" name the same file; "/" gives "/ucx_shm_posix_..".
    let dir = dir.strip_suffix(b"/").unwrap_or(dir);
    Ok((file_path(dir, mmid).ok_or(BadName::Dir)?, false, false))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directories() {
        for ok in [&b"/"[..], b"/dev/shm", b"/tmp/x/", b"/a..b/.c"] {
            assert_eq!(check_dir(ok), Ok(()), "{ok:?}");
        }
        for bad in [&b""[..], b"dev/shm", b"/tmp/../etc", b"/..", b"/.", b"/a//b", b"/a/./b", b"/a\nb",
                    b"/a/b//", b"//", b"///"] {
            assert_eq!(check_dir(bad), Err(BadName::Dir), "{bad:?}");
        }
        assert_eq!(check_dir(&[b'/'; MAX_DIR]), Err(BadName::Dir));
    }

    #[test]
    fn rkeys_and_files() {
        let by_path = 0x1234u64;
        let packed = pack_rkey(by_path, 0x7000, 4096, b"/tmp/shm");
        let r = parse_rkey(&packed).expect("rkey");
        assert_eq!(r, PosixRkey { seg_id: by_path, owner: 0x7000, length: 4096, dir: Some(&b"/tmp/shm"[..]) });
        let (path, shm, follow) = peer_file(r.seg_id, r.dir).expect("file");
        assert_eq!((path.as_bytes(), shm, follow), (&b"/tmp/shm/ucx_shm_posix_1234"[..], false, false));
        assert_eq!(parse_rkey(&pack_rkey(by_path, 0, 4096, b"/tmp/../etc")), Err(BadName::Dir));
        assert_eq!(parse_rkey(&packed[..packed.len() - 1]), Err(BadName::Truncated));
        assert_eq!(parse_rkey(&packed[..20]), Err(BadName::Truncated));
        assert_eq!(parse_rkey(&pack_rkey(by_path, 0, 0, b"/tmp")), Err(BadName::Length(0)));
        let shm_id = FLAG_SHM_OPEN | 0xabc;
        let packed = pack_rkey(shm_id, 1, 2, b"ignored");
        assert_eq!(packed.len(), PACKED_RKEY_SIZE);
        assert_eq!(peer_file(shm_id, None).expect("shm").0.as_bytes(), b"/ucx_shm_posix_abc");
        let proc_id = FLAG_PROCFS | FLAG_SHM_OPEN | 42 | (7 << 30);
        assert_eq!(peer_file(proc_id, None).expect("proc").0.as_bytes(), b"/proc/42/fd/7");
        assert_eq!(procfs_pid(proc_id), Some(42));
        assert_eq!(procfs_pid(shm_id), None);
        assert_eq!(peer_file(FLAG_PROCFS | (7 << 30), None), Err(BadName::Pid(FLAG_PROCFS | (7 << 30))));
        assert_eq!(peer_file(by_path, None), Err(BadName::NoDir));
        assert_eq!(peer_file(by_path, Some(b"/")).expect("root").0.as_bytes(), b"/ucx_shm_posix_1234");
        assert_eq!(peer_file(by_path, Some(b"/tmp/")).expect("slash").0.as_bytes(), b"/tmp/ucx_shm_posix_1234");
    }
}
