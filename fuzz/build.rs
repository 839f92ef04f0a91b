//! Generates the table of targets (`TARGETS` in lib.rs) from the
//! `pub mod NAME;` lines of src/lib.rs, so that a new target is replayed by
//! `cargo test` without being listed a second time.
use std::{env, fs, path::Path};

fn main() {
    println!("cargo:rerun-if-changed=src/lib.rs");
    let lib = fs::read_to_string("src/lib.rs").expect("read src/lib.rs");
    let mut table = String::from("/// Every target: (name, its `run`).\n");
    table.push_str("pub const TARGETS: &[(&str, Run)] = &[\n");
    for line in lib.lines() {
        let Some(rest) = line.trim().strip_prefix("pub mod ") else { continue };
        let Some(name) = rest.strip_suffix(';') else { continue };
        let name = name.trim();
        table.push_str(&format!("    (\"{name}\", crate::{name}::run),\n"));
    }
    table.push_str("];\n");
    let out = Path::new(&env::var("OUT_DIR").expect("OUT_DIR")).join("targets.rs");
    fs::write(out, table).expect("write targets.rs");
}
