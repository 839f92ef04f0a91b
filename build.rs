//! Link settings for the shared library: the SONAME of the C original and
//! the distro's libucs, whose callback queue, config parser and logger we reuse.
fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libuct.so.0");
    println!("cargo:rustc-link-lib=dylib=ucs");
    println!("cargo:rerun-if-changed=build.rs");
}
