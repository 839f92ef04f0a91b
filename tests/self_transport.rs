//! The exported API driven from Rust, as a C caller would drive it: the
//! `self` transport end to end, configuration, memory allocation, and the
//! vtable's guarantees (no NULL slot, honest capability flags).

use std::ffi::{c_char, c_uint, c_void, CStr};
use std::ptr::{null, null_mut};
use ::uct::abi::*;
use ::uct::ffi::component::*;
use ::uct::ffi::config::*;
use ::uct::ffi::ep::*;
use ::uct::ffi::iface::*;
use ::uct::ffi::md::*;
use ::uct::ffi::mem::*;
use ::uct::ffi::worker::*;

mod common;
use common::*;

struct Fixture {
    async_: *mut ucs_async_context_t,
    worker: uct_worker_h,
    component: uct_component_h,
    md: uct_md_h,
    iface_config: *mut uct_iface_config_t,
    iface: uct_iface_h,
}

fn name_of(a: &[c_char]) -> String {
    // SAFETY: the array holds a NUL-terminated name.
    unsafe { CStr::from_ptr(a.as_ptr()) }.to_string_lossy().into_owned()
}

impl Fixture {
    fn new(seg_size: Option<&CStr>) -> Fixture {
        let (async_, worker) = new_worker();
        let component = common::component("self");
        let md = open_md(c"self", &[]);
        let settings: &[(&CStr, &CStr)] = match seg_size {
            Some(v) => &[(c"SEG_SIZE", v)],
            None => &[],
        };
        // SAFETY: `md` was just opened.
        let iface_config = unsafe { iface_config(md, c"self", settings) };
        let mut params = device_params(c"self", self_dev());
        params.field_mask |= UCT_IFACE_PARAM_FIELD_RX_HEADROOM;
        let mut iface = null_mut();
        // SAFETY: md, worker and configuration were just made; the
        // parameters point at static names; the out-pointer is a local.
        assert_eq!(unsafe { uct_iface_open(md, worker, &params, iface_config, &mut iface) }, UCS_OK);
        Fixture { async_, worker, component, md, iface_config, iface }
    }

    fn attr(&self) -> uct_iface_attr_t {
        // SAFETY: the fixture's interface is open until it drops.
        unsafe { iface_attr(self.iface) }
    }

    /// The interface's operations table.
    fn ops(&self) -> &uct_iface_ops_t {
        // SAFETY: the fixture's interface is open until it drops, and starts
        // with its operations table.
        unsafe { &(*self.iface).ops }
    }

    fn ep(&self) -> uct_ep_h {
        let mut addr = [0u8; 8];
        // SAFETY: the fixture's interface is open; its address is 8 bytes
        // long (iface_addr_len, checked by the capability test).
        assert_eq!(unsafe { uct_iface_get_address(self.iface, addr.as_mut_ptr() as *mut uct_iface_addr_t) }, UCS_OK);
        // SAFETY: plain data; all-zero means "no field set".
        let mut p: uct_ep_params_t = unsafe { std::mem::zeroed() };
        p.field_mask = UCT_EP_PARAM_FIELD_IFACE | UCT_EP_PARAM_FIELD_DEV_ADDR | UCT_EP_PARAM_FIELD_IFACE_ADDR;
        p.iface = self.iface;
        p.iface_addr = addr.as_ptr() as *const uct_iface_addr_t;
        let mut ep = null_mut();
        // SAFETY: the interface is open, `addr` outlives the call (the
        // device address is empty: its length is 0), the out-pointer is a
        // local.
        assert_eq!(unsafe { uct_ep_create(&p, &mut ep) }, UCS_OK);
        ep
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        // SAFETY: everything was opened in new() and is closed only here,
        // each object before the one it was made from.
        unsafe {
            uct_iface_close(self.iface);
            uct_config_release(self.iface_config as *mut c_void);
            uct_md_close(self.md);
            uct_worker_destroy(self.worker);
            ucs_async_context_destroy(self.async_);
        }
    }
}

#[derive(Default)]
struct Seen {
    messages: Vec<Vec<u8>>,
}

/// Active-message handler: `arg` is the test's `Seen`, alive and not
/// otherwise borrowed while the sends (which deliver at once) run.
unsafe extern "C" fn record(arg: *mut c_void, data: *mut c_void, length: usize, flags: c_uint) -> ucs_status_t {
    // SAFETY: `arg` was registered as a `*mut Seen` that outlives the sends.
    let seen = unsafe { &mut *(arg as *mut Seen) };
    assert_eq!(flags, 0, "self delivers inline data");
    // SAFETY: the transport passes `length` readable bytes at `data`.
    seen.messages.push(unsafe { std::slice::from_raw_parts(data as *const u8, length) }.to_vec());
    UCS_OK
}

/// Pack callback: `arg` points at the number of bytes to write.
unsafe extern "C" fn pack_abc(dest: *mut c_void, arg: *mut c_void) -> usize {
    // SAFETY: the test passes a pointer to a live usize.
    let n = unsafe { *(arg as *const usize) };
    // SAFETY: the transport gives a segment-sized buffer and the test asks
    // for less than a segment.
    let out = unsafe { std::slice::from_raw_parts_mut(dest as *mut u8, n) };
    for (i, b) in out.iter_mut().enumerate() {
        *b = b'a' + (i % 26) as u8;
    }
    n
}

#[test]
fn self_reports_the_1_13_1_capabilities() {
    let f = Fixture::new(None);
    let a = f.attr();
    assert_eq!(a.cap.flags, 0x11804000023b);
    assert_eq!(a.cap.am.max_short, 8192);
    assert_eq!(a.cap.am.max_bcopy, 8192);
    assert_eq!(a.cap.put.max_short, u32::MAX as usize);
    assert_eq!(a.cap.atomic64.op_flags, 0xf);
    assert_eq!(a.cap.atomic32.fop_flags, 0x3f);
    assert_eq!((a.device_addr_len, a.iface_addr_len, a.ep_addr_len), (0, 8, 0));
    assert_eq!(a.max_num_eps, usize::MAX);
    assert_eq!(a.dev_num_paths, 1);
}

#[test]
fn seg_size_is_configurable() {
    let f = Fixture::new(Some(c"4k"));
    assert_eq!(f.attr().cap.am.max_short, 4096);
}

#[test]
fn am_short_and_bcopy_reach_the_handler() {
    let f = Fixture::new(None);
    let ep = f.ep();
    let mut seen = Seen::default();
    let ops = f.ops();
    // SAFETY: the interface is open and `ep` is its live endpoint until the
    // destroy at the end; `seen` outlives every send (self delivers inside
    // the send call); the payloads and `n` outlive the calls that read
    // them; the refused sends read nothing.
    unsafe {
        assert_eq!(uct_iface_set_am_handler(f.iface, 7, Some(record), &mut seen as *mut Seen as *mut c_void, 0),
                   UCS_OK);
        let payload = *b"hello";
        let st = ops.ep_am_short.unwrap()(ep, 7, 0x1122334455667788, payload.as_ptr() as *const c_void, 5);
        assert_eq!(st, UCS_OK);
        let mut n: usize = 300;
        let len = ops.ep_am_bcopy.unwrap()(ep, 7, Some(pack_abc), &mut n as *mut usize as *mut c_void, 0);
        assert_eq!(len, 300);
        // A message too long for the segment is refused, not truncated.
        let big = vec![0u8; 9000];
        assert_eq!(ops.ep_am_short.unwrap()(ep, 7, 0, big.as_ptr() as *const c_void, 9000), UCS_ERR_INVALID_PARAM);
        assert_eq!(ops.ep_am_short.unwrap()(ep, 32, 0, null(), 0), UCS_ERR_INVALID_PARAM);
        uct_ep_destroy(ep);
    }
    assert_eq!(seen.messages.len(), 2);
    let mut want = 0x1122334455667788u64.to_ne_bytes().to_vec();
    want.extend_from_slice(b"hello");
    assert_eq!(seen.messages[0], want);
    assert_eq!(seen.messages[1].len(), 300);
    assert_eq!(&seen.messages[1][..3], b"abc");
}

#[test]
fn rma_and_atomics_through_an_rkey() {
    let f = Fixture::new(None);
    let ep = f.ep();
    let mut target = [0u64; 4];
    let ops = f.ops();
    // SAFETY: md, component and interface are the fixture's, open; `ep` is
    // live until the destroy at the end; `target` (32 bytes, 8-aligned) is
    // registered for the whole block and the remote operations only touch
    // it (the misaligned one is refused); `packed` has room for the packed
    // key (self's is empty: rkey_packed_size is 0); values and out-pointers
    // are locals.
    unsafe {
        let mut memh = null_mut();
        assert_eq!(uct_md_mem_reg(f.md, target.as_mut_ptr() as *mut c_void, 32, UCT_MD_MEM_ACCESS_ALL, &mut memh),
                   UCS_OK);
        let mut packed = [0u8; 1];
        assert_eq!(uct_md_mkey_pack(f.md, memh, packed.as_mut_ptr() as *mut c_void), UCS_OK);
        let mut bundle: uct_rkey_bundle_t = std::mem::zeroed();
        assert_eq!(::uct::ffi::md::uct_rkey_unpack(f.component, packed.as_ptr() as *const c_void, &mut bundle), UCS_OK);
        let base = target.as_mut_ptr() as u64;
        let v = 41u64.to_ne_bytes();
        assert_eq!(ops.ep_put_short.unwrap()(ep, v.as_ptr() as *const c_void, 8, base, bundle.rkey), UCS_OK);
        let mut old = 0u64;
        assert_eq!(ops.ep_atomic64_fetch.unwrap()(ep, UCT_ATOMIC_OP_ADD, 1, &mut old, base, bundle.rkey, null_mut()),
                   UCS_OK);
        assert_eq!((old, target[0]), (41, 42));
        assert_eq!(ops.ep_atomic_cswap64.unwrap()(ep, 42, 7, base, bundle.rkey, &mut old, null_mut()), UCS_OK);
        assert_eq!((old, target[0]), (42, 7));
        assert_eq!(ops.ep_atomic32_post.unwrap()(ep, UCT_ATOMIC_OP_XOR, 0xff, base + 8, bundle.rkey), UCS_OK);
        assert_eq!(target[1] & 0xffff_ffff, 0xff);
        // Opcodes that do not exist for post give a status, not a crash.
        assert_eq!(ops.ep_atomic64_post.unwrap()(ep, UCT_ATOMIC_OP_SWAP, 1, base, bundle.rkey), UCS_ERR_UNSUPPORTED);
        // Misaligned atomics are refused.
        assert_eq!(ops.ep_atomic64_post.unwrap()(ep, UCT_ATOMIC_OP_ADD, 1, base + 1, bundle.rkey), UCS_ERR_INVALID_PARAM);
        assert_eq!(ops.ep_flush.unwrap()(ep, 0, null_mut()), UCS_OK);
        assert_eq!(::uct::ffi::md::uct_rkey_release(f.component, &bundle), UCS_OK);
        assert_eq!(uct_md_mem_dereg(f.md, memh), UCS_OK);
        uct_ep_destroy(ep);
    }
}

#[test]
fn every_vtable_slot_is_callable_and_flags_are_honest() {
    let f = Fixture::new(None);
    let ep = f.ep();
    let ops = f.ops();
    // SAFETY: the table is 50 function-pointer slots (its 400 bytes are
    // asserted in the ABI layout checks), so it reads as 50 words.
    let slots: &[usize; 50] = unsafe { &*(ops as *const uct_iface_ops_t as *const [usize; 50]) };
    assert!(slots.iter().all(|&p| p != 0), "no vtable slot may be NULL");
    // SAFETY: interface and endpoint are live until the destroy at the end;
    // the unsupported operations return before reading their (NULL or
    // empty) arguments.
    unsafe {
        // Operations the flags do not claim answer UNSUPPORTED.
        assert_eq!(ops.ep_put_zcopy.unwrap()(ep, null(), 0, 0, 0, null_mut()), UCS_ERR_UNSUPPORTED);
        assert_eq!(ops.ep_get_short.unwrap()(ep, null_mut(), 0, 0, 0), UCS_ERR_UNSUPPORTED);
        assert_eq!(ops.ep_am_zcopy.unwrap()(ep, 0, null(), 0, null(), 0, 0, null_mut()), UCS_ERR_UNSUPPORTED);
        assert_eq!(ops.iface_event_arm.unwrap()(f.iface, 0), UCS_ERR_UNSUPPORTED);
        uct_ep_destroy(ep);
    }
    let flags = f.attr().cap.flags;
    assert_eq!(flags & (UCT_IFACE_FLAG_PUT_ZCOPY | UCT_IFACE_FLAG_GET_ZCOPY | UCT_IFACE_FLAG_AM_ZCOPY), 0);
}

#[test]
fn honest_flags_drop_claims_without_operations() {
    use ::uct::core::iface::{honest_flags, op, slot};
    let claimed = UCT_IFACE_FLAG_AM_SHORT | UCT_IFACE_FLAG_PUT_ZCOPY | UCT_IFACE_FLAG_CB_SYNC;
    let out = honest_flags(claimed, op(slot::EP_AM_SHORT));
    assert_eq!(out, UCT_IFACE_FLAG_AM_SHORT | UCT_IFACE_FLAG_CB_SYNC);
}

static ONESHOT_RUNS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
unsafe extern "C" fn oneshot(_arg: *mut c_void) -> c_uint {
    ONESHOT_RUNS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    1
}

#[test]
fn oneshot_progress_callback_runs_once() {
    let f = Fixture::new(None);
    let mut id: uct_worker_cb_id_t = UCS_CALLBACKQ_ID_NULL;
    // SAFETY: the fixture's worker is live; the callback ignores its NULL
    // argument; the id out-pointer is a local.
    unsafe {
        uct_worker_progress_register_safe(f.worker, Some(oneshot), null_mut(), UCS_CALLBACKQ_FLAG_ONESHOT, &mut id)
    };
    assert_ne!(id, UCS_CALLBACKQ_ID_NULL);
    // The inline uct_worker_progress walks fast_elems until a NULL cb;
    // walk it the same way here.
    for _ in 0..5 {
        // SAFETY: the fixture's worker is live and used from this thread.
        unsafe { worker_progress(f.worker) };
    }
    // A one-shot callback removes itself; its id must not be
    // unregistered afterwards (libucs asserts on stale ids).
    assert_eq!(ONESHOT_RUNS.load(std::sync::atomic::Ordering::SeqCst), 1);
}

#[test]
fn config_get_modify_and_unknown_keys() {
    let f = Fixture::new(None);
    // SAFETY: the fixture's configuration is live until it drops; keys and
    // values are C strings; `buf` is 64 bytes, the size passed.
    unsafe {
        let cfg = f.iface_config as *mut c_void;
        let mut buf = [0 as c_char; 64];
        assert_eq!(uct_config_get(cfg, c"SEG_SIZE".as_ptr(), buf.as_mut_ptr(), 64), UCS_OK);
        assert_eq!(name_of(&buf), "8K");
        assert_eq!(uct_config_modify(cfg, c"NO_SUCH_KEY".as_ptr(), c"1".as_ptr()), UCS_ERR_NO_ELEM);
        let key = config_key("SELF_", c"SEG_SIZE");
        assert_eq!(uct_config_modify(cfg, key.as_ptr(), c"banana".as_ptr()), UCS_ERR_INVALID_PARAM);
        // Neither failure changed the value.
        assert_eq!(uct_config_get(cfg, c"SEG_SIZE".as_ptr(), buf.as_mut_ptr(), 64), UCS_OK);
        assert_eq!(name_of(&buf), "8K");
        assert_eq!(uct_config_get(cfg, c"ALLOC".as_ptr(), buf.as_mut_ptr(), 64), UCS_OK);
        assert_eq!(name_of(&buf), "huge,thp,md,mmap,heap");
    }
}

#[test]
fn mem_alloc_methods() {
    for method in [UCT_ALLOC_METHOD_HEAP, UCT_ALLOC_METHOD_MMAP] {
        // SAFETY: the parameter and result structs are plain data (all-zero
        // valid) and locals; the allocation is at least 10000 bytes when it
        // succeeds (asserted before the write) and freed once; the refused
        // allocation leaves nothing to free.
        unsafe {
            let mut params: uct_mem_alloc_params_t = std::mem::zeroed();
            params.field_mask = UCT_MEM_ALLOC_PARAM_FIELD_NAME;
            params.name = c"test".as_ptr();
            let mut mem: uct_allocated_memory_t = std::mem::zeroed();
            assert_eq!(uct_mem_alloc(10000, &method, 1, &params, &mut mem), UCS_OK);
            assert_eq!(mem.method, method);
            assert!(mem.length >= 10000);
            std::ptr::write_bytes(mem.address as *mut u8, 0xab, 10000);
            assert_eq!(uct_mem_free(&mem), UCS_OK);
            assert_eq!(uct_mem_alloc(0, &method, 1, &params, &mut mem), UCS_ERR_INVALID_PARAM);
        }
    }
}

#[test]
fn iface_mem_alloc_registers_with_the_md() {
    let f = Fixture::new(None);
    // SAFETY: the fixture's interface is open; `mem` is plain data (all-zero
    // valid), a local, and freed once after a successful allocation.
    unsafe {
        let mut mem: uct_allocated_memory_t = std::mem::zeroed();
        assert_eq!(uct_iface_mem_alloc(f.iface, 4096, UCT_MD_MEM_ACCESS_ALL, c"buf".as_ptr(), &mut mem), UCS_OK);
        assert!(!mem.memh.is_null());
        assert_eq!(mem.md, f.md);
        uct_iface_mem_free(&mem);
    }
}

#[test]
fn a_foreign_iface_id_is_unreachable() {
    let f = Fixture::new(None);
    let mut addr = [0u8; 8];
    // SAFETY: the fixture's interface is open; its address is 8 bytes.
    assert_eq!(unsafe { uct_iface_get_address(f.iface, addr.as_mut_ptr() as *mut uct_iface_addr_t) }, UCS_OK);
    addr[0] ^= 0x5a;
    // SAFETY: plain data; all-zero means "no field set".
    let mut p: uct_ep_params_t = unsafe { std::mem::zeroed() };
    p.field_mask = UCT_EP_PARAM_FIELD_IFACE | UCT_EP_PARAM_FIELD_IFACE_ADDR;
    p.iface = f.iface;
    p.iface_addr = addr.as_ptr() as *const uct_iface_addr_t;
    let mut ep = null_mut();
    // SAFETY: the interface is open, `addr` outlives the call, the
    // out-pointer is a local.
    assert_eq!(unsafe { uct_ep_create(&p, &mut ep) }, UCS_ERR_UNREACHABLE);
    // SAFETY: as above; the device address is unused by self.
    assert_eq!(unsafe { uct_iface_is_reachable(f.iface, null_mut(), addr.as_ptr() as *const uct_iface_addr_t) }, 0);
}
