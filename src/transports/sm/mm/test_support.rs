//! Test-only (compiled under `cfg(test)`): helpers of the posix and sysv
//! mapper tests, which need the crate's internals and so stay unit tests:
//! byte patterns, hex strings for passing keys through the environment,
//! running one test of this binary as the peer process, and reading a
//! memory-domain config.

use crate::abi::*;
use crate::core::config::{self, ConfigDesc, Table};
use libc::c_void;
use once_cell::sync::Lazy;
use std::ffi::CStr;
use std::process::Command;

/// Environment variable that turns a `peer_*` test into the peer process.
pub(crate) const PEER_ENV: &str = "UCT_RS_MM_TEST_PEER";

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

pub(crate) fn unhex(s: &str) -> Vec<u8> {
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex")).collect()
}

pub(crate) fn fill(p: *mut u8, len: usize, seed: u8) {
    // SAFETY: tests pass mappings of at least `len` bytes.
    let s = unsafe { std::slice::from_raw_parts_mut(p, len) };
    for (i, b) in s.iter_mut().enumerate() {
        *b = (i as u8).wrapping_mul(7).wrapping_add(seed).wrapping_add((i >> 8) as u8);
    }
}

pub(crate) fn check(p: *const u8, len: usize, seed: u8) -> bool {
    // SAFETY: tests pass mappings of at least `len` bytes.
    let s = unsafe { std::slice::from_raw_parts(p, len) };
    s.iter().enumerate().all(|(i, &b)| b == (i as u8).wrapping_mul(7).wrapping_add(seed).wrapping_add((i >> 8) as u8))
}

/// Run the test `name` of this binary as a peer process with `env`.
pub(crate) fn run_peer(name: &str, env: &[(&str, String)]) {
    let exe = std::env::current_exe().expect("test binary");
    let mut cmd = Command::new(exe);
    cmd.args([name, "--exact", "--nocapture", "--test-threads=1"]);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("spawn peer");
    let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "peer {name} failed: {}\n{text}", out.status);
    assert!(text.contains("1 passed"), "peer {name} did not run:\n{text}");
}

pub(crate) struct Cfg {
    pub(crate) opts: *mut c_void,
}

impl Cfg {
    pub(crate) fn read(desc: &ConfigDesc, settings: &[(&CStr, &CStr)]) -> Cfg {
        let opts = config::read(desc, None).expect("config read");
        for (k, v) in settings {
            // SAFETY: `opts` came from config::read; strings are NUL-terminated.
            let mut status = unsafe { config::modify(opts, k.as_ptr(), v.as_ptr()) };
            if status != UCS_OK {
                // From 1.17 a name is matched with the table's prefix.
                let full = std::ffi::CString::new([desc.prefix.to_bytes(), k.to_bytes()].concat()).expect("name");
                // SAFETY: as above.
                status = unsafe { config::modify(opts, full.as_ptr(), v.as_ptr()) };
            }
            assert_eq!(status, UCS_OK, "set {k:?}");
        }
        Cfg { opts }
    }
    pub(crate) fn get<T>(&self) -> &T {
        // SAFETY: the options block was parsed from T's table.
        unsafe { &*(self.opts as *const T) }
    }
    /// The options as `ucx_info -c` prints them (`UCX_<prefix>NAME=value` lines).
    pub(crate) fn print(&self, table: &Lazy<Table>, prefix: &CStr) -> String {
        // SAFETY: the tests pass the table the options block was read from.
        unsafe { crate::ucs::parser::print_opts(self.opts, Lazy::force(table).as_ptr(), prefix) }
    }
}

impl Drop for Cfg {
    fn drop(&mut self) {
        // SAFETY: `opts` came from config::read and is released once.
        unsafe { config::release(self.opts) };
    }
}
