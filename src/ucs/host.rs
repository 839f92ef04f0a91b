//! What libucs knows about this host and its processes, as safe calls:
//! the CPU clock rate (libucs's time values count its clocks), the host
//! and namespace identities that addresses carry (a namespace id is 8 bytes
//! wide up to 1.21, 4 from 1.22: [`ns_len`]), process start times and
//! unique ids; and, from 1.16, the system device behind a network device.

use super::{ucs_generate_uuid, ucs_get_cpu_clocks_per_sec, ucs_get_system_id, ucs_sys_get_ns,
            ucs_sys_get_proc_create_time, ucs_sys_ns_is_default};
use libc::c_uint;

/// CPU clocks per second, the unit of libucs's time values.
pub fn clocks_per_sec() -> f64 {
    // SAFETY: a libucs query without arguments.
    unsafe { ucs_get_cpu_clocks_per_sec() }
}

/// A libucs time value (CPU clocks) in seconds.
pub fn clocks_to_secs(t: u64) -> f64 {
    t as f64 / clocks_per_sec()
}

/// libucs's identity of this host (from the boot id and host name).
pub fn system_id() -> u64 {
    // SAFETY: a libucs query without arguments.
    unsafe { ucs_get_system_id() }
}

/// A unique 64-bit id mixed from `seed`, the time and the process.
pub fn generate_uuid(seed: u64) -> u64 {
    // SAFETY: a libucs function of a plain value.
    unsafe { ucs_generate_uuid(seed) }
}

/// Whether this process is in the host's default namespace of `ns_type`
/// (one of the `UCS_SYS_NS_TYPE_*` values).
pub fn ns_is_default(ns_type: c_uint) -> bool {
    // SAFETY: a libucs query of a plain value (an unknown type is refused
    // there, not read out of bounds).
    unsafe { ucs_sys_ns_is_default(ns_type) != 0 }
}

/// How many bytes a namespace id takes in an address, as the running
/// release's libucs defines `ucs_sys_ns_t`: an `ino_t` (8 bytes) up to
/// 1.21, a `uint32_t` (4 bytes) from 1.22. Every address field holding a
/// namespace id has this width.
pub fn ns_len() -> usize {
    ns_len_of(super::release::running())
}

/// [`ns_len`] of a given release.
pub const fn ns_len_of(release: crate::abi::release::Release) -> usize {
    if release.since(22) { 4 } else { 8 }
}

/// This process's namespace of `ns_type`, as libucs reports it: its inode
/// number, cut to the 32 bits that libucs returns from 1.22 on.
pub fn ns_id(ns_type: c_uint) -> u64 {
    // SAFETY: as in `ns_is_default`.
    let raw = unsafe { ucs_sys_get_ns(ns_type) };
    // From 1.22 the function returns a 32-bit value: the upper half of the
    // 64-bit register it comes back in is not defined.
    ns_truncate(raw, ns_len())
}

/// `id` as a namespace id of `len` bytes holds it (its low bytes).
pub const fn ns_truncate(id: u64, len: usize) -> u64 {
    if len >= 8 { id } else { id & ((1u64 << (8 * len)) - 1) }
}

/// Append namespace id `id` in an address's layout: `len` bytes ([`ns_len`]:
/// 8 or 4), native byte order.
pub fn ns_encode(out: &mut Vec<u8>, id: u64, len: usize) {
    if len == 4 {
        out.extend_from_slice(&(id as u32).to_ne_bytes());
    } else {
        out.extend_from_slice(&id.to_ne_bytes());
    }
}

/// Read a namespace id of `len` bytes ([`ns_len`]) from the start of `b`;
/// None when `b` is shorter.
pub fn ns_decode(b: &[u8], len: usize) -> Option<u64> {
    if len == 4 {
        b.get(..4).map(|w| u64::from(u32::from_ne_bytes(w.try_into().expect("4 bytes"))))
    } else {
        b.get(..8).map(|w| u64::from_ne_bytes(w.try_into().expect("8 bytes")))
    }
}

/// This process's namespace of `ns_type` when it is not the host's
/// default one (addresses carry it only then).
pub fn ns_unless_default(ns_type: c_uint) -> Option<u64> {
    (!ns_is_default(ns_type)).then(|| ns_id(ns_type))
}

/// When process `pid` started (libucs reads `/proc/<pid>/stat`; 0 when it
/// cannot), to tell a live process from a later one with the same pid.
// (c_ulong is u64 here, narrower on 32-bit targets.)
#[allow(clippy::useless_conversion)]
pub fn proc_create_time(pid: libc::pid_t) -> u64 {
    // SAFETY: a libucs query of a plain value.
    u64::from(unsafe { ucs_sys_get_proc_create_time(pid) })
}

/// The system device and PCI bandwidth behind network device `if_name`, as
/// UCX's tcp transport finds them from 1.16 on (the device stays in
/// libucs's topology table); `name_priority` ranks the name among those of
/// the same device. None when libucs lacks those calls (before 1.16).
pub fn netif_topology(if_name: &std::ffi::CStr, name_priority: c_uint)
                      -> Option<(crate::abi::ucs_sys_device_t, f64)> {
    use super::optional as o;
    use libc::c_char;
    let ucs_netif_get_lowest_device_path = o::netif_get_lowest_device_path()?;
    let ucs_topo_resolve_sysfs_path = o::topo_resolve_sysfs_path()?;
    let ucs_topo_get_sysfs_dev = o::topo_get_sysfs_dev()?;
    let ucs_topo_get_pci_bw = o::topo_get_pci_bw()?;
    let mut lowest = vec![0 as c_char; libc::PATH_MAX as usize];
    let mut resolved = vec![0 as c_char; libc::PATH_MAX as usize];
    // SAFETY: NUL-terminated name; both buffers hold PATH_MAX bytes, the
    // size libucs writes at most; the path returned points into `resolved`
    // (or is NULL, which the topology calls accept).
    unsafe {
        let sysfs = if ucs_netif_get_lowest_device_path(if_name.as_ptr(), lowest.as_mut_ptr(), lowest.len())
            == crate::abi::UCS_OK
        {
            ucs_topo_resolve_sysfs_path(lowest.as_ptr(), resolved.as_mut_ptr())
        } else {
            std::ptr::null()
        };
        Some((ucs_topo_get_sysfs_dev(if_name.as_ptr(), sysfs, name_priority),
              ucs_topo_get_pci_bw(if_name.as_ptr(), sysfs)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::release::Release;

    #[test]
    fn ns_width_by_release() {
        assert_eq!(ns_len_of(Release::new(13, 1)), 8);
        assert_eq!(ns_len_of(Release::new(21, 0)), 8);
        assert_eq!(ns_len_of(Release::new(22, 0)), 4);
    }

    #[test]
    fn ns_round_trip_in_both_widths() {
        let id = 0x1234_5678_f000_0001u64;
        for len in [4, 8] {
            let mut v = vec![0xaa];
            ns_encode(&mut v, id, len);
            assert_eq!(v.len(), 1 + len);
            assert_eq!(ns_decode(&v[1..], len), Some(ns_truncate(id, len)));
            assert_eq!(ns_decode(&v[1..len], len), None, "one byte short");
        }
        assert_eq!(ns_truncate(id, 4), 0xf000_0001);
        assert_eq!(ns_truncate(id, 8), id);
        assert_eq!(&{ let mut v = Vec::new(); ns_encode(&mut v, 4026531836, 4); v }[..],
                   &4026531836u32.to_ne_bytes());
    }
}
