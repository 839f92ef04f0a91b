//! The peer's IB device address, as the original rdmacm CM reports it to
//! the user: built from the attributes RDMA CM gives a QP of the
//! connection for RTR (`rdma_init_qp_attr`) and the local port's link
//! layer. The format is the ib interface's device address
//! (`rc::addr`), here always with the path MTU, and with the GID index the
//! connection uses when it is globally routed:
//! - RoCE: the peer's GID with the version "any" (RDMA CM already found the
//!   peer reachable);
//! - InfiniBand, routed: the LID, the GID's interface id and subnet prefix;
//! - InfiniBand, local: the LID and our own port's subnet prefix (GID 0),
//!   so that the reachability check sees the same subnet.

use crate::abi::*;
use crate::sys::verbs::cm::{CmId, RtrAttr};
use crate::transports::ib::rc::addr::{FLAG_ETH, FLAG_GID_INDEX, FLAG_IF_ID, FLAG_PATH_MTU, FLAG_SUBNET16,
                                      FLAG_SUBNET64, LINK_LOCAL_PREFIX};
use crate::transports::ib::roce::{Version, VERSION_SHIFT};

/// `IBV_LINK_LAYER_ETHERNET`.
const LINK_LAYER_ETHERNET: u8 = 2;

/// What the device address of the peer holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Parts {
    pub eth: bool,
    pub lid: u16,
    /// The GID packed (RoCE: whole; IB: interface id and/or prefix).
    pub gid: [u8; 16],
    pub gid_index: Option<u8>,
    /// IB: pack the interface id (routed).
    pub if_id: bool,
    pub path_mtu: u8,
}

/// The parts of the peer's address from a connection's RTR attributes;
/// `own_gid0` gives our port's GID 0 (asked only for a local IB peer).
pub(super) fn parts(a: &RtrAttr, eth: bool, own_gid0: impl FnOnce() -> Result<[u8; 16], ucs_status_t>)
                    -> Result<Parts, ucs_status_t> {
    let path_mtu = u8::try_from(a.path_mtu).map_err(|_| UCS_ERR_INVALID_PARAM)?;
    let mut p = Parts { eth, lid: a.dlid, gid: [0; 16], gid_index: None, if_id: false, path_mtu };
    if a.is_global {
        p.gid_index = Some(a.sgid_index);
        p.gid = a.dgid;
        p.if_id = !eth;
    } else if !eth {
        p.gid = own_gid0()?;
        p.gid_index = Some(0);
    } else {
        // RoCE is always routed; RDMA CM gave no GRH.
        return Err(UCS_ERR_INVALID_PARAM);
    }
    Ok(p)
}

/// Pack `p` in the ib device address format.
pub(super) fn pack(p: &Parts) -> Vec<u8> {
    let mut out = vec![0u8];
    let mut flags = 0u8;
    if p.eth {
        flags |= FLAG_ETH | ((Version::Any as u8) << VERSION_SHIFT);
        out.extend_from_slice(&p.gid);
    } else {
        out.extend_from_slice(&p.lid.to_ne_bytes());
        if p.if_id {
            flags |= FLAG_IF_ID;
            out.extend_from_slice(&p.gid[8..]);
        }
        let prefix: [u8; 8] = p.gid[..8].try_into().unwrap_or(LINK_LOCAL_PREFIX);
        if prefix[0] == 0xfe && prefix[1] == 0xc0 && prefix[2..6] == [0, 0, 0, 0] {
            flags |= FLAG_SUBNET16;
            out.extend_from_slice(&prefix[6..8]);
        } else if prefix != LINK_LOCAL_PREFIX {
            flags |= FLAG_SUBNET64;
            out.extend_from_slice(&prefix);
        }
    }
    flags |= FLAG_PATH_MTU;
    out.push(p.path_mtu);
    if let Some(g) = p.gid_index {
        flags |= FLAG_GID_INDEX;
        out.push(g);
    }
    out[0] = flags;
    out
}

/// The device address of the peer of connection `id`, with the failure
/// logged.
pub(super) fn of(id: &CmId) -> Result<Vec<u8>, ucs_status_t> {
    let a = id.rtr_attr().map_err(|e| {
        crate::diag!("rdmacm: rdma_init_qp_attr ({}) failed: {}", super::state::addrs_of(id), e.desc());
        UCS_ERR_CONNECTION_RESET
    })?;
    let eth = id.link_layer().map_err(|e| {
        crate::error!("rdmacm: ibv_query_port of {} failed: {}", dev_name(id), e.desc());
        UCS_ERR_IO_ERROR
    })? == LINK_LAYER_ETHERNET;
    let own = || {
        id.port_gid(0).map_err(|e| {
            crate::error!("rdmacm: ibv_query_gid({} index 0) failed: {}", dev_name(id), e.desc());
            UCS_ERR_IO_ERROR
        })
    };
    let p = parts(&a, eth, own).inspect_err(|_| {
        crate::diag!("rdmacm: {}: unusable path (global {}, mtu {})", super::state::addrs_of(id), a.is_global,
                     a.path_mtu);
    })?;
    crate::debug!("rdmacm: {}: peer lid {} global {} sgid_index {} mtu {}", super::state::addrs_of(id), a.dlid,
                  a.is_global, a.sgid_index, a.path_mtu);
    Ok(pack(&p))
}

/// "device:port" of an id, as the user is told (empty when unbound).
pub(super) fn dev_name(id: &CmId) -> String {
    id.device().map_or_else(String::new, |(name, _, port)| format!("{}:{}", name, port))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transports::ib::rc::addr::IbDevAddr;

    fn attr(global: bool) -> RtrAttr {
        let mut dgid = [0u8; 16];
        dgid[..8].copy_from_slice(&[0xfe, 0xc0, 0, 0, 0, 0, 0x12, 0x34]);
        dgid[8..].copy_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8]);
        RtrAttr { is_global: global, dlid: 7, dgid, sgid_index: 3, path_mtu: 4 }
    }

    #[test]
    fn ib_local_packs_our_prefix_and_index_0() {
        let mine = [0xfeu8, 0x80, 0, 0, 0, 0, 0, 0, 9, 9, 9, 9, 9, 9, 9, 9];
        let p = parts(&attr(false), false, || Ok(mine)).unwrap();
        let b = pack(&p);
        assert_eq!(b[0], FLAG_PATH_MTU | FLAG_GID_INDEX);
        let a = IbDevAddr::unpack(&b).unwrap();
        assert_eq!((a.lid, a.path_mtu, a.gid_index, a.if_id, a.subnet_prefix), (7, 4, Some(0), None, LINK_LOCAL_PREFIX));
        assert_eq!(b.len(), IbDevAddr::packed_len(b[0]));
    }

    #[test]
    fn ib_routed_packs_the_peer_gid() {
        let p = parts(&attr(true), false, || panic!("not asked")).unwrap();
        let b = pack(&p);
        assert_eq!(b[0], FLAG_IF_ID | FLAG_SUBNET16 | FLAG_PATH_MTU | FLAG_GID_INDEX);
        let a = IbDevAddr::unpack(&b).unwrap();
        assert_eq!(a.if_id, Some([1, 2, 3, 4, 5, 6, 7, 8]));
        assert_eq!(a.subnet_prefix, [0xfe, 0xc0, 0, 0, 0, 0, 0x12, 0x34]);
        assert_eq!(a.gid_index, Some(3));
    }

    #[test]
    fn roce_packs_the_gid_with_any_version() {
        let mut a = attr(true);
        a.dgid = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 2];
        let b = pack(&parts(&a, true, || panic!("not asked")).unwrap());
        let u = IbDevAddr::unpack(&b).unwrap();
        let r = u.roce.expect("a RoCE address");
        assert_eq!((r.gid, r.version, r.ipv6), (a.dgid, Version::Any, false));
        assert_eq!(u.gid_index, Some(3));
        assert!(parts(&attr(false), true, || panic!("not asked")).is_err());
    }
}
