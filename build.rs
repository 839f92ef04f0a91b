//! Build settings of the shared library.
//!
//! * Link: the SONAME of the C original, and libucs, whose callback queue,
//!   config parser and logger we reuse.
//! * ABI: which UCX release the library is binary-compatible with. UCX keeps
//!   the SONAME `libuct.so.0` across releases while the UCT ABI changes, so
//!   the release is chosen at build time with a cargo feature (`ucx-1-18`;
//!   none means 1.13, Debian 12's). The choice becomes cfg flags named after
//!   the release that introduced a change: building for 1.18 sets
//!   `ucx_since_1_14` ... `ucx_since_1_18`, so code written for "changed in
//!   1.16" needs no edit when a later release is added. Adding a release is
//!   one row in RELEASES (and a feature in Cargo.toml), plus whatever really
//!   changed in it.
//! * `UCT_RS_UCS_LIBDIR`: where to find the libucs.so to link against (the
//!   one of the chosen release, e.g. an unpacked UCX wheel); by default the
//!   linker's search path (the system libucs).

/// Releases we build for: (cargo feature, major, minor, patch of the
/// reference release whose headers and binaries the tests use).
const RELEASES: &[(&str, u32, u32, u32)] = &[
    ("", 1, 13, 1),          // the default: Debian 12 (bookworm)
    ("ucx-1-18", 1, 18, 1),  // Debian 13, Fedora 43, conda-forge, PyPI
];

/// cfg names `ucx_since_1_N` exist for every minor up to this one (so that
/// `check-cfg` accepts them all, also for releases not in the table yet).
const LAST_KNOWN_MINOR: u32 = 22;

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

    let chosen: Vec<_> = RELEASES
        .iter()
        .filter(|r| !r.0.is_empty())
        .filter(|r| std::env::var_os(feature_env(r.0)).is_some())
        .collect();
    let release = match chosen.as_slice() {
        [] => RELEASES[0],
        [one] => **one,
        many => {
            let names: Vec<_> = many.iter().map(|r| r.0).collect();
            panic!("uct-rs: choose one UCX ABI feature, not several: {names:?}");
        }
    };
    let (_, major, minor, patch) = release;
    for m in 14..=LAST_KNOWN_MINOR {
        println!("cargo:rustc-check-cfg=cfg(ucx_since_1_{m})");
        if m <= minor {
            println!("cargo:rustc-cfg=ucx_since_1_{m}");
        }
    }
    println!("cargo:rustc-env=UCT_RS_UCX_ABI={major}.{minor}");
    println!("cargo:rustc-env=UCT_RS_UCX_RELEASE={major}.{minor}.{patch}");
}

fn feature_env(feature: &str) -> String {
    format!("CARGO_FEATURE_{}", feature.to_uppercase().replace('-', "_"))
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
