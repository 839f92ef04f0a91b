//! The `ib` md's registration methods, opened directly with each choice of
//! [`MdParams`] (the exported API only gives the release's default): the
//! registration cache over libucs of the release built for, direct
//! registration, the fallback when the cache cannot be made, and no usable
//! method at all.
//!
//! Needs an RDMA device: run under `tests/softrdma/run.sh` (the soft
//! device). Without one every test returns at once (and says so).
#![cfg(feature = "verbs")]

use ::uct::abi::*;
use ::uct::core::md::MdImpl;
use ::uct::core::handles::Completion;
use ::uct::transports::ib::md::{IbMd, MdParams, RcacheParams, RegMethod, DIRECT_REG_COST};
use libc::c_void;

fn device() -> Option<String> {
    let d = ::uct::transports::ib::device::usable_devices().into_iter().next();
    if d.is_none() {
        eprintln!("no RDMA device: nothing tested (run under tests/softrdma/run.sh)");
    }
    d
}

fn open(methods: &[RegMethod], rcache: RcacheParams) -> Result<IbMd, ucs_status_t> {
    let dev = device().expect("device");
    IbMd::open(&dev, Some(false), &MdParams { reg_methods: methods.to_vec(), rcache, ..MdParams::default() })
}

fn cost(md: &IbMd) -> (f64, f64) {
    // SAFETY: all-zero is a valid uct_md_attr_t.
    let mut a: uct_md_attr_t = unsafe { std::mem::zeroed() };
    md.query(&mut a);
    (a.reg_cost.c, a.reg_cost.m)
}

fn rkey(md: &IbMd, h: uct_mem_h) -> u64 {
    let mut b = [0u8; 8];
    assert_eq!(md.mkey_pack(h, 0, b.as_mut_ptr()), UCS_OK);
    u64::from_ne_bytes(b)
}

struct Map(*mut c_void, usize);

impl Map {
    fn new(at: *mut c_void, len: usize) -> Map {
        let fixed = if at.is_null() { 0 } else { libc::MAP_FIXED };
        // SAFETY: an anonymous mapping (MAP_FIXED only over our own).
        let p = unsafe {
            libc::mmap(at, len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | fixed,
                       -1, 0)
        };
        assert_ne!(p, libc::MAP_FAILED);
        Map(p, len)
    }
    fn at(&self, off: usize) -> *mut c_void {
        (self.0 as usize + off) as *mut c_void
    }
}

impl Drop for Map {
    fn drop(&mut self) {
        // SAFETY: our mapping.
        unsafe { libc::munmap(self.0, self.1) };
    }
}

#[test]
fn cache_returns_the_same_keys_until_unmapped() {
    if device().is_none() {
        return;
    }
    let md = open(&[RegMethod::Rcache, RegMethod::Direct], RcacheParams::default()).unwrap();
    assert!(md.uses_cache());
    assert_eq!(cost(&md).1, 0.0);
    assert!(cost(&md).0 < 1e-6);
    let map = Map::new(std::ptr::null_mut(), 4 * 4096);
    let h1 = md.mem_reg(map.at(40), 100, 0).unwrap();
    let h2 = md.mem_reg(map.at(40), 100, 0).unwrap();
    assert_eq!(h1, h2);
    let k = rkey(&md, h1);
    // SAFETY: a live handle of this md.
    assert!(unsafe { ::uct::transports::ib::md::memh_lkey(h1) }.is_some());
    assert_eq!(md.mem_dereg(h1, 0, Completion::none()), UCS_OK);
    assert_eq!(md.mem_dereg(h2, 0, Completion::none()), UCS_OK);
    assert_eq!(md.mem_dereg(h2, 0, Completion::none()), UCS_ERR_INVALID_PARAM);
    assert_eq!(md.mem_advise(h2, map.at(40), 100, 0), UCS_ERR_INVALID_PARAM);
    // Released but still cached: the same keys again.
    let h3 = md.mem_reg(map.at(48), 16, 0).unwrap();
    assert_eq!((h3, rkey(&md, h3)), (h1, k));
    assert_eq!(md.mem_dereg(h3, 0, Completion::none()), UCS_OK);
    // A new mapping at the same address: a new registration.
    let base = map.0;
    drop(map);
    let map = Map::new(base, 4 * 4096);
    assert_eq!(map.0, base);
    let h4 = md.mem_reg(map.at(40), 100, 0).unwrap();
    assert_ne!(rkey(&md, h4), k);
    // Closed with h4 held: the md gives it back itself.
    drop(md);
}

#[test]
fn direct_registration_is_one_per_call() {
    if device().is_none() {
        return;
    }
    let md = open(&[RegMethod::Direct], RcacheParams::default()).unwrap();
    assert!(!md.uses_cache());
    assert_eq!(cost(&md), DIRECT_REG_COST);
    let map = Map::new(std::ptr::null_mut(), 4096);
    let h1 = md.mem_reg(map.at(0), 100, 0).unwrap();
    let h2 = md.mem_reg(map.at(0), 100, 0).unwrap();
    assert_ne!(h1, h2);
    assert_ne!(rkey(&md, h1), rkey(&md, h2));
    assert_eq!(md.mem_dereg(h1, 0, Completion::none()), UCS_OK);
    assert_eq!(md.mem_dereg(h1, 0, Completion::none()), UCS_ERR_INVALID_PARAM);
    drop(md); // h2 still held: warned and deregistered
}

#[test]
fn bad_cache_settings_fall_back_to_direct() {
    if device().is_none() {
        return;
    }
    let md = open(&[RegMethod::Rcache, RegMethod::Odp, RegMethod::Direct],
                  RcacheParams { alignment: 24, ..RcacheParams::default() }).unwrap();
    assert!(!md.uses_cache());
    assert_eq!(cost(&md), DIRECT_REG_COST);
}

#[test]
fn no_usable_method_fails_the_open() {
    if device().is_none() {
        return;
    }
    assert_eq!(open(&[RegMethod::Odp], RcacheParams::default()).err(), Some(UCS_ERR_INVALID_PARAM));
}

#[test]
fn release_default() {
    if device().is_none() {
        return;
    }
    let dev = device().unwrap();
    let md = IbMd::open(&dev, Some(false), &MdParams::default()).unwrap();
    if ::uct::ucs::release::running().since(16) {
        assert!(!md.uses_cache());
        assert_eq!(cost(&md), DIRECT_REG_COST);
    } else {
        assert!(md.uses_cache());
        assert_eq!(cost(&md), (180e-9, 0.0));
    }
}

#[test]
fn method_names() {
    assert_eq!(RegMethod::parse("RCache"), Some(RegMethod::Rcache));
    assert_eq!(RegMethod::parse("odp"), Some(RegMethod::Odp));
    assert_eq!(RegMethod::parse("direct"), Some(RegMethod::Direct));
    assert_eq!(RegMethod::parse("Direct"), None);
    assert_eq!(RegMethod::parse("mt"), None);
}
