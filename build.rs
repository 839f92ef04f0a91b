//! Build settings of the shared library.
//!
//! * Link: the SONAME of the C original, and libucs, whose callback queue,
//!   config parser and logger we reuse. Only functions every served release
//!   of libucs exports are linked; the others are looked up at load.
//! * Releases: the rows of `ucx-releases.txt` become the library's table of
//!   served releases (`$OUT_DIR/releases.rs`, included by
//!   `src/abi/release.rs`). Which one a process runs is found at run time.
//! * `UCT_RS_UCS_LIBDIR`: where to find the libucs.so to link against; by
//!   default the linker's search path (the system libucs).

fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libuct.so.0");
    println!("cargo:rerun-if-changed=build.rs");
    write_release_table();
    println!("cargo:rerun-if-env-changed=UCT_RS_UCS_LIBDIR");
    if let Ok(dir) = std::env::var("UCT_RS_UCS_LIBDIR") {
        if !dir.is_empty() {
            println!("cargo:rustc-link-search=native={dir}");
        }
    }
    println!("cargo:rustc-link-lib=dylib=ucs");
}

/// `$OUT_DIR/releases.rs`: the rows of `ucx-releases.txt` as
/// `crate::abi::release::ReleaseInfo` values (see that module).
fn write_release_table() {
    let manifest = std::env::var("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR");
    let path = std::path::Path::new(&manifest).join("ucx-releases.txt");
    println!("cargo:rerun-if-changed={}", path.display());
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut rows = String::new();
    let mut last_minor = 0u32;
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let cols: Vec<&str> = line.split_whitespace().collect();
        let bad = |why: &str| -> ! { panic!("ucx-releases.txt:{}: {why}: {line}", n + 1) };
        if cols.len() != 6 {
            bad("expected 6 columns (minor ref wheel sha256 marker scm)");
        }
        let minor: u32 = cols[0].parse().unwrap_or_else(|_| bad("minor is not a number"));
        if minor <= last_minor {
            bad("rows must be in increasing order of minor");
        }
        last_minor = minor;
        let parts: Vec<u32> = cols[1].split('.').map(|p| p.parse().unwrap_or_else(|_| bad("bad ref"))).collect();
        if parts.len() != 3 || parts[0] != 1 || parts[1] != minor {
            bad("ref must be 1.<minor>.<patch>");
        }
        let marker = match cols[4] {
            "-" => "None".to_string(),
            m if m.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') => format!("Some(c\"{m}\")"),
            _ => bad("marker is not a symbol name"),
        };
        rows.push_str(&format!(
            "    ReleaseInfo {{ release: Release::new({minor}, {}), marker: {marker} }},\n",
            parts[2]
        ));
    }
    let out = std::path::Path::new(&std::env::var("OUT_DIR").expect("OUT_DIR")).join("releases.rs");
    let code = format!("/// The rows of `ucx-releases.txt`, oldest first.\npub const KNOWN: &[ReleaseInfo] = &[\n{rows}];\n");
    std::fs::write(&out, code).unwrap_or_else(|e| panic!("{}: {e}", out.display()));
}
