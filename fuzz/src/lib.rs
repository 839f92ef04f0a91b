//! Fuzz targets of uct-rs: each module's `run` feeds bytes to decoders of
//! outside input and checks their invariants.
pub mod mm_fifo;
pub mod mm_rkey;
pub mod sm_addr;

/// Replay every file of `fuzz/corpus/NAME` and `fuzz/regressions/NAME`
/// through `run`.
#[cfg(test)]
pub(crate) fn replay(name: &str, run: fn(&[u8])) -> usize {
    let mut n = 0;
    for dir in ["corpus", "regressions"] {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(dir).join(name);
        let Ok(entries) = std::fs::read_dir(&path) else { continue };
        for e in entries {
            let data = std::fs::read(e.expect("entry").path()).expect("read");
            run(&data);
            n += 1;
        }
    }
    n
}
