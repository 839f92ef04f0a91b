//! One queued cma operation: the user's iov list, flattened, with a cursor,
//! moved to or from the peer one segment (one system call) at a time.
//!
//! As in UCX, an iov entry stands for `count * length` contiguous bytes at
//! `buffer` (the stride is not used) and empty entries are dropped. A
//! segment is at most `SEG_SIZE` bytes in at most [`SEG_IOV`] local pieces,
//! against one contiguous remote range. The cursor advances by what the
//! kernel really moved, so a short transfer is resumed where it stopped.
//! The copies are [`crate::sys::vm`]'s.

use crate::abi::*;
use crate::core::handles::Completion;
use crate::sys::vm::{self, RemoteIoVec};
use libc::{c_void, iovec, pid_t};

/// Local pieces per system call (UCX's `UCT_SM_MAX_IOV`).
pub const SEG_IOV: usize = 16;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Get,
    Put,
    /// A flush completion: completes when every operation queued before it
    /// on its endpoint is done.
    Flush,
}

impl Op {
    pub fn call_name(self) -> &'static str {
        match self {
            Op::Get => "process_vm_readv",
            Op::Put => "process_vm_writev",
            Op::Flush => "flush",
        }
    }
}

/// Why a segment failed.
#[derive(Debug)]
pub struct Failure {
    /// `errno` of the call (0 when the kernel moved nothing without error).
    pub errno: i32,
    pub ret: isize,
    /// The pieces of the failed call, for the log.
    pub detail: String,
}

/// A queued operation. Descriptors are recycled through the interface's
/// pool, so the iov storage is allocated once and reused.
pub struct Tx {
    pub op: Op,
    pub comp: Completion,
    pub ep: uct_ep_h,
    pub remote_addr: u64,
    iov: Vec<iovec>,
    index: usize,
    offset: usize,
}

impl Default for Tx {
    fn default() -> Self {
        Self::new()
    }
}

impl Tx {
    pub fn new() -> Tx {
        Tx { op: Op::Flush, comp: Completion::none(), ep: std::ptr::null_mut(), remote_addr: 0, iov: Vec::new(),
             index: 0, offset: 0 }
    }

    /// Load a put or get. Returns the number of bytes to move (0: nothing
    /// to do), or `UCS_ERR_INVALID_PARAM` when an entry's size overflows.
    pub fn load(&mut self, op: Op, iov: &[uct_iov_t], remote_addr: u64, comp: Completion,
                ep: uct_ep_h) -> Result<usize, ucs_status_t> {
        self.op = op;
        self.comp = comp;
        self.ep = ep;
        self.remote_addr = remote_addr;
        self.index = 0;
        self.offset = 0;
        self.iov.clear();
        let mut total = 0usize;
        for e in iov {
            let len = e.length.checked_mul(e.count as usize).ok_or(UCS_ERR_INVALID_PARAM)?;
            if len == 0 {
                continue;
            }
            total = total.checked_add(len).ok_or(UCS_ERR_INVALID_PARAM)?;
            self.iov.push(iovec { iov_base: e.buffer, iov_len: len });
        }
        Ok(total)
    }

    /// Load a flush completion.
    pub fn load_flush(&mut self, comp: Completion, ep: uct_ep_h) {
        self.op = Op::Flush;
        self.comp = comp;
        self.ep = ep;
        self.remote_addr = 0;
        self.iov.clear();
        self.index = 0;
        self.offset = 0;
    }

    /// Drop the references to user memory (the descriptor goes back to
    /// the pool).
    pub fn clear(&mut self) {
        self.comp = Completion::none();
        self.ep = std::ptr::null_mut();
        self.iov.clear();
    }

    /// The local range of a load with exactly one piece, as (address,
    /// length).
    pub fn single_local(&self) -> Option<(usize, usize)> {
        match self.iov.as_slice() {
            [e] => Some((e.iov_base as usize, e.iov_len)),
            _ => None,
        }
    }

    pub fn done(&self) -> bool {
        self.index >= self.iov.len()
    }

    /// Bytes still to move.
    pub fn remaining(&self) -> usize {
        self.iov.iter().skip(self.index).map(|e| e.iov_len).sum::<usize>() - self.offset
    }

    /// The local pieces of the next segment; returns (pieces, bytes).
    fn next_segment(&self, seg_size: usize, out: &mut [iovec; SEG_IOV]) -> (usize, usize) {
        let mut remain = seg_size;
        let mut n = 0;
        let mut offset = self.offset;
        for e in self.iov.iter().skip(self.index) {
            if remain == 0 || n == SEG_IOV {
                break;
            }
            let avail = e.iov_len - offset;
            let take = avail.min(remain);
            out[n] = iovec { iov_base: (e.iov_base as *mut u8).wrapping_add(offset) as *mut c_void, iov_len: take };
            n += 1;
            remain -= take;
            offset = 0;
        }
        (n, seg_size - remain)
    }

    /// Move the cursor over `bytes` transferred bytes.
    fn advance(&mut self, mut bytes: usize) {
        self.remote_addr = self.remote_addr.wrapping_add(bytes as u64);
        while bytes > 0 && self.index < self.iov.len() {
            let avail = self.iov[self.index].iov_len - self.offset;
            if bytes < avail {
                self.offset += bytes;
                return;
            }
            bytes -= avail;
            self.index += 1;
            self.offset = 0;
        }
    }

    /// Move one segment of at most `seg_size` bytes (> 0) between our
    /// memory and process `pid`. Returns the bytes moved.
    pub fn transfer(&mut self, pid: pid_t, seg_size: usize) -> Result<usize, Failure> {
        let mut local = [iovec { iov_base: std::ptr::null_mut(), iov_len: 0 }; SEG_IOV];
        let (n, bytes) = self.next_segment(seg_size, &mut local);
        let remote = [RemoteIoVec { base: self.remote_addr as usize, len: bytes }];
        // SAFETY (both calls): our pieces come from the caller's iov list,
        // which the UCT contract keeps valid (and, for a get, unused by the
        // caller) until the operation completes; the remote range lives in
        // the peer. Bad ranges on either side give EFAULT, not a fault.
        let result = match self.op {
            // SAFETY: see above.
            Op::Put => unsafe { vm::write_to(pid, &local[..n], &remote) },
            // SAFETY: see above.
            Op::Get => unsafe { vm::read_from(pid, &mut local[..n], &remote) },
            Op::Flush => Ok(0),
        };
        let (ret, errno) = match result {
            Ok(0) => (0, 0),
            Ok(moved) => {
                let moved = moved.min(bytes);
                self.advance(moved);
                return Ok(moved);
            }
            Err(err) => (-1, err as i32),
        };
        let pieces: Vec<String> = local[..n].iter().map(|v| format!("{:p}+{}", v.iov_base, v.iov_len)).collect();
        Err(Failure {
            errno,
            ret,
            detail: format!("{}(pid={} {{{}}}-->{{{:#x}+{}}})", self.op.call_name(), pid, pieces.join("|"),
                            self.remote_addr, bytes),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn iov(buf: &mut [u8], count: u32) -> uct_iov_t {
        uct_iov_t { buffer: buf.as_mut_ptr() as *mut c_void, length: buf.len(), memh: std::ptr::null_mut(), stride: 0,
                    count }
    }

    fn me() -> pid_t {
        crate::sys::getpid()
    }

    #[test]
    fn empty_entries_are_dropped() {
        let mut a = [1u8; 4];
        let mut b = [2u8; 0];
        let mut t = Tx::new();
        let total = t.load(Op::Put, &[iov(&mut a, 0), iov(&mut b, 1)], 0, Completion::none(),
                           std::ptr::null_mut()).unwrap();
        assert_eq!(total, 0);
        assert!(t.done());
    }

    #[test]
    fn segments_split_entries_and_cap_pieces() {
        let mut bufs: Vec<Vec<u8>> = (0..20).map(|i| vec![i as u8; 10]).collect();
        let list: Vec<uct_iov_t> = bufs.iter_mut().map(|b| iov(b, 1)).collect();
        let mut dst = vec![0u8; 200];
        let mut t = Tx::new();
        let total = t.load(Op::Put, &list, dst.as_mut_ptr() as u64, Completion::none(), std::ptr::null_mut())
            .unwrap();
        assert_eq!(total, 200);
        // 25-byte segments: 2.5 entries each.
        let mut moved = 0;
        while !t.done() {
            let n = t.transfer(me(), 25).unwrap();
            assert!(n <= 25);
            moved += n;
            assert_eq!(t.remaining(), 200 - moved);
        }
        assert_eq!(moved, 200);
        for (i, chunk) in dst.chunks(10).enumerate() {
            assert!(chunk.iter().all(|&x| x == i as u8), "chunk {i}");
        }
        // Big segments: limited by SEG_IOV pieces (16 entries = 160 bytes).
        let total = t.load(Op::Get, &list, dst.as_mut_ptr() as u64, Completion::none(), std::ptr::null_mut())
            .unwrap();
        assert_eq!(total, 200);
        assert_eq!(t.transfer(me(), 1 << 20).unwrap(), 160);
        assert_eq!(t.transfer(me(), 1 << 20).unwrap(), 40);
        assert!(t.done());
    }

    #[test]
    fn count_multiplies_length() {
        let mut src = [7u8; 12];
        let mut dst = [0u8; 12];
        let mut t = Tx::new();
        let mut e = iov(&mut src[..4], 3);
        e.stride = 100; // ignored, as in UCX
        assert_eq!(t.load(Op::Put, &[e], dst.as_mut_ptr() as u64, Completion::none(), std::ptr::null_mut()),
                   Ok(12));
        assert_eq!(t.transfer(me(), 64).unwrap(), 12);
        assert_eq!(dst, [7u8; 12]);
        let huge = uct_iov_t { buffer: src.as_mut_ptr() as *mut c_void, length: usize::MAX, memh: std::ptr::null_mut(),
                               stride: 0, count: 2 };
        assert_eq!(t.load(Op::Put, &[huge], 0, Completion::none(), std::ptr::null_mut()), Err(UCS_ERR_INVALID_PARAM));
    }

    #[test]
    fn bad_remote_address_is_a_failure() {
        let mut src = [7u8; 8];
        let mut t = Tx::new();
        t.load(Op::Put, &[iov(&mut src, 1)], 8, Completion::none(), std::ptr::null_mut()).unwrap();
        let f = t.transfer(me(), 64).unwrap_err();
        assert_eq!(f.errno, libc::EFAULT);
        assert!(f.detail.starts_with("process_vm_writev(pid="), "{}", f.detail);
        assert!(!t.done());
    }
}
