//! The fuzz targets of uct-rs, one module per target, each with
//! `pub fn run(data: &[u8])`: it feeds the bytes to the decoders it covers
//! and asserts their invariants (a panic is a finding). The binaries in
//! fuzz_targets/ hand libFuzzer's inputs to `run`; tests/replay.rs hands it
//! every file of corpus/NAME/ and regressions/NAME/.
//!
//! A target is added with one `pub mod NAME;` line here (the table
//! [`TARGETS`] is generated from these lines by build.rs), the module
//! src/NAME.rs, the binary fuzz_targets/NAME.rs, its `[[bin]]` entry in
//! Cargo.toml and seed files in corpus/NAME/.

pub mod mm_fifo;
pub mod mm_rkey;
pub mod sm_addr;
pub mod sockcm_wire;
pub mod tcp_addr;
pub mod tcp_conn;
pub mod tcp_frames;

/// A target's entry point.
pub type Run = fn(&[u8]);

include!(concat!(env!("OUT_DIR"), "/targets.rs"));
