//! Replays every checked-in input through its target's `run`: the files of
//! corpus/NAME/ and regressions/NAME/ for every target in
//! `uct_fuzz::TARGETS`. Plain `cargo test`, no fuzzer needed. Also checks
//! that each target has all its pieces (binary, `[[bin]]` entry, seeds) and
//! that no corpus or regression directory belongs to no target.

use std::collections::BTreeSet;
use std::panic;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The files of `dir`, sorted; none when it does not exist.
fn files(dir: &Path) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut v: Vec<PathBuf> = rd.filter_map(|e| e.ok()).map(|e| e.path()).filter(|p| p.is_file()).collect();
    v.sort();
    v
}

fn subdirs(dir: &Path) -> BTreeSet<String> {
    let Ok(rd) = std::fs::read_dir(dir) else { return BTreeSet::new() };
    rd.filter_map(|e| e.ok())
        .filter(|e| e.path().is_dir())
        .filter_map(|e| e.file_name().into_string().ok())
        .collect()
}

#[test]
fn every_input_replays() {
    // Keep the report readable: a failing input prints its path below, the
    // panic message once through the default hook.
    let mut failed = Vec::new();
    let mut count = 0usize;
    for &(name, run) in uct_fuzz::TARGETS {
        for kind in ["corpus", "regressions"] {
            for path in files(&root().join(kind).join(name)) {
                let data = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                count += 1;
                if panic::catch_unwind(|| run(&data)).is_err() {
                    failed.push(path);
                }
            }
        }
    }
    for p in &failed {
        eprintln!("FAIL {}", p.display());
    }
    assert!(failed.is_empty(), "{} of {count} inputs failed (paths above)", failed.len());
    assert!(count > 0);
}

#[test]
fn every_target_is_complete() {
    let manifest = std::fs::read_to_string(root().join("Cargo.toml")).expect("Cargo.toml");
    let mut problems = Vec::new();
    let names: BTreeSet<String> = uct_fuzz::TARGETS.iter().map(|t| t.0.to_string()).collect();
    assert_eq!(names.len(), uct_fuzz::TARGETS.len(), "a target is listed twice in src/lib.rs");
    for name in &names {
        if !root().join("fuzz_targets").join(format!("{name}.rs")).is_file() {
            problems.push(format!("{name}: no fuzz_targets/{name}.rs"));
        }
        let bin = format!("name = \"{name}\"");
        let path = format!("path = \"fuzz_targets/{name}.rs\"");
        if !manifest.contains(&bin) || !manifest.contains(&path) {
            problems.push(format!("{name}: no [[bin]] entry in Cargo.toml"));
        }
        if files(&root().join("corpus").join(name)).is_empty() {
            problems.push(format!("{name}: no seed files in corpus/{name}/"));
        }
    }
    if let Ok(rd) = std::fs::read_dir(root().join("fuzz_targets")) {
        for e in rd.filter_map(|e| e.ok()) {
            let file = e.file_name().into_string().unwrap_or_default();
            let stem = file.strip_suffix(".rs").unwrap_or(&file);
            if !names.contains(stem) {
                problems.push(format!("fuzz_targets/{file}: no `pub mod {stem};` in src/lib.rs"));
            }
        }
    }
    for kind in ["corpus", "regressions"] {
        for d in subdirs(&root().join(kind)) {
            if !names.contains(&d) {
                problems.push(format!("{kind}/{d}/: no target of that name in src/lib.rs"));
            }
        }
    }
    for p in &problems {
        eprintln!("{p}");
    }
    assert!(problems.is_empty(), "{} problems (above)", problems.len());
}
