//! Connections: endpoints created towards a peer interface send a
//! connection request (CREQ) and learn the peer's ep id from its reply
//! (CREP); endpoints connected to a peer endpoint need no packet.
//!
//! Requests are matched by peer interface and connection sequence number
//! (`conn_sn`, counted per peer interface from 0 on each side): the n-th
//! endpoint we create towards a peer pairs with the n-th one the peer
//! creates towards us. A request that finds no endpoint creates a private
//! one (which our user's next endpoint towards that peer adopts); a
//! request that finds our endpoint still waiting for its reply is a
//! simultaneous connect.

use super::ep::{EpRef, EpState, Skb};
use super::iface::{PeerKey, UdIface};
use super::neth::{self, Ctl, Neth};
use super::proto;
use crate::abi::*;
use crate::core::iface::Iface;
use crate::core::handles::PeerAddr;
use crate::transports::ib::rc::addr::IbDevAddr;

pub fn peer_key(dev: &IbDevAddr, qpn: u32) -> PeerKey {
    if let Some(r) = &dev.roce {
        return (r.gid.to_vec(), qpn);
    }
    let mut k = dev.lid.to_le_bytes().to_vec();
    k.extend_from_slice(&dev.subnet_prefix);
    (k, qpn)
}

fn new_state(s: &UdIface, id: u32) -> EpState {
    EpState::new(id, s.p.max_window, s.p.timer_tick)
}

/// An endpoint for connect-to-ep (its peer comes with `connect_to_ep`).
pub fn create_unconnected(s: &UdIface) -> Result<EpRef, ucs_status_t> {
    let ep = s.insert_ep(|id| {
        let mut st = new_state(s, id);
        st.to_ep = true;
        st
    }).ok_or(UCS_ERR_NO_RESOURCE)?;
    crate::debug!("ud_verbs: created ep {} for connect-to-ep", ep.borrow().id);
    Ok(ep)
}

fn read_dev(s: &UdIface, dev: &PeerAddr<'_>) -> Result<IbDevAddr, ucs_status_t> {
    IbDevAddr::read(dev, s.dev_addr.len()).map_err(|e| {
        crate::error!("ud_verbs: bad device address: {}", e);
        UCS_ERR_INVALID_ADDR
    })
}

pub fn connect_to_ep(s: &UdIface, st: &mut EpState, dev: Option<PeerAddr<'_>>, ep_addr: Option<PeerAddr<'_>>)
                     -> ucs_status_t {
    let (Some(dev), Some(ep_addr)) = (dev, ep_addr) else {
        crate::error!("ud_verbs connect_to_ep: a device and an endpoint address are needed");
        return UCS_ERR_INVALID_PARAM;
    };
    let dev = match read_dev(s, &dev) {
        Ok(d) => d,
        Err(e) => return e,
    };
    let Some((qpn, ep_id)) = ep_addr.prefix(neth::EP_ADDR_LEN).and_then(neth::unpack_ep_addr) else {
        crate::error!("ud_verbs connect_to_ep: bad endpoint address");
        return UCS_ERR_INVALID_ADDR;
    };
    if st.dest_id.is_some() {
        crate::error!("ud_verbs connect_to_ep: ep {} is already connected", st.id);
        return UCS_ERR_ALREADY_EXISTS;
    }
    let peer = match s.peer(&dev, qpn) {
        Ok(p) => p,
        Err(e) => return e,
    };
    st.peer = Some(peer);
    st.dest_id = Some(ep_id);
    crate::debug!("ud_verbs: ep {} connected to lid {} qpn 0x{:x} ep {}", st.id, dev.lid, qpn, ep_id);
    UCS_OK
}

/// An endpoint towards a peer interface: adopt the private endpoint the
/// peer's request made, or create one and send our request.
pub fn create_to_iface(iface: &Iface<UdIface>, dev: &PeerAddr<'_>, iface_addr: &PeerAddr<'_>)
                       -> Result<EpRef, ucs_status_t> {
    let s = &iface.tl;
    let dev = read_dev(s, dev)?;
    let Some(qb) = iface_addr.prefix(neth::IFACE_ADDR_LEN) else {
        crate::error!("ud_verbs: bad interface address");
        return Err(UCS_ERR_INVALID_ADDR);
    };
    let qpn = neth::get24(qb);
    let key = peer_key(&dev, qpn);
    let sn = {
        let mut conn = s.conn.borrow_mut();
        let e = conn.entry(key.clone()).or_default();
        let sn = e.next_sn;
        e.next_sn = e.next_sn.saturating_add(1);
        if let Some(&id) = e.eps.get(&sn) {
            if let Some(ep) = s.ep(id) {
                let mut st = ep.borrow_mut();
                if st.private && st.closed_at.is_none() {
                    st.private = false;
                    crate::debug!("ud_verbs: ep {} (conn_sn {}) adopted from the peer's request", st.id, sn);
                    drop(st);
                    return Ok(ep);
                }
            }
        }
        sn
    };
    let peer = s.peer(&dev, qpn)?;
    let ep = s.insert_ep(|id| {
        let mut st = new_state(s, id);
        st.conn_sn = sn;
        st.peer = Some(peer);
        st
    }).ok_or(UCS_ERR_NO_RESOURCE)?;
    let id = ep.borrow().id;
    if let Some(e) = s.conn.borrow_mut().get_mut(&key) {
        e.eps.insert(sn, id);
    }
    {
        let mut st = ep.borrow_mut();
        if send_creq(s, &mut st).is_err() {
            st.owed.creq = true;
            s.queue_owed(&mut st);
        }
    }
    crate::debug!("ud_verbs: ep {} (conn_sn {}) connecting to lid {} qpn 0x{:x}", id, sn, dev.lid, qpn);
    Ok(ep)
}

/// Send our connection request (a window packet, psn 1).
pub fn send_creq(s: &UdIface, st: &mut EpState) -> Result<(), ucs_status_t> {
    if !s.has_tx() {
        return Err(UCS_ERR_NO_RESOURCE);
    }
    let Some(b) = s.tx_pool.get() else { return Err(UCS_ERR_NO_RESOURCE) };
    let h = Neth { ptype: neth::EP_NULL_ID | neth::CTL, psn: st.tx.psn, ack_psn: 0 }.pack();
    let ctl = neth::pack_creq(s.qpn, st.id, st.conn_sn, 0);
    let dev = s.dev_addr.pack();
    let len = neth::NETH_LEN + neth::CTL_LEN + dev.len();
    // SAFETY: `len` (51 on InfiniBand) fits a send buffer.
    unsafe {
        std::ptr::copy_nonoverlapping(h.as_ptr(), b.addr, h.len());
        std::ptr::copy_nonoverlapping(ctl.as_ptr(), b.addr.add(neth::NETH_LEN), ctl.len());
        std::ptr::copy_nonoverlapping(dev.as_ptr(), b.addr.add(neth::NETH_LEN + neth::CTL_LEN), dev.len());
    }
    let skb = Skb { psn: st.tx.psn, buf: b, len, zc: None };
    proto::send_skb(s, st, skb, false)?;
    st.owed.creq = false;
    Ok(())
}

/// Send our connection reply (a window packet asking for an ack).
pub fn send_crep(s: &UdIface, st: &mut EpState) -> Result<(), ucs_status_t> {
    let Some(dest) = st.dest_id else { return Ok(()) };
    if !s.has_tx() {
        return Err(UCS_ERR_NO_RESOURCE);
    }
    let Some(b) = s.tx_pool.get() else { return Err(UCS_ERR_NO_RESOURCE) };
    let h = Neth { ptype: dest | neth::ACK_REQ | neth::CTL, psn: st.tx.psn, ack_psn: 0 }.pack();
    let ctl = neth::pack_crep(st.id);
    // SAFETY: 48 bytes fit a send buffer.
    unsafe {
        std::ptr::copy_nonoverlapping(h.as_ptr(), b.addr, h.len());
        std::ptr::copy_nonoverlapping(ctl.as_ptr(), b.addr.add(neth::NETH_LEN), ctl.len());
    }
    let skb = Skb { psn: st.tx.psn, buf: b, len: neth::NETH_LEN + neth::CTL_LEN, zc: None };
    proto::send_skb(s, st, skb, false)?;
    st.owed.crep = false;
    Ok(())
}

/// A received connection request (`body`: after the network header).
pub fn rx_creq(iface: &Iface<UdIface>, n: &Neth, body: &[u8]) {
    let s = &iface.tl;
    let (qpn, ep_id, conn_sn) = match neth::parse_ctl(body) {
        Ok(Ctl::Creq { qpn, ep_id, conn_sn, .. }) => (qpn, ep_id, conn_sn),
        Ok(_) => {
            crate::debug!("ud_verbs: dropped a reply without destination");
            return;
        }
        Err(e) => {
            crate::debug!("ud_verbs: dropped a connection request: {}", e);
            return;
        }
    };
    let dev = match IbDevAddr::unpack(&body[neth::CTL_LEN..]) {
        Ok(d) if IbDevAddr::packed_len(body[neth::CTL_LEN]) <= body.len() - neth::CTL_LEN => d,
        Ok(_) => {
            crate::debug!("ud_verbs: dropped a connection request with a truncated device address");
            return;
        }
        Err(e) => {
            crate::debug!("ud_verbs: dropped a connection request: {}", e);
            return;
        }
    };
    if ep_id >= neth::EP_NULL_ID {
        crate::debug!("ud_verbs: dropped a connection request with ep id 0x{:x}", ep_id);
        return;
    }
    let key = peer_key(&dev, qpn);
    let found = s.conn.borrow().get(&key).and_then(|e| e.eps.get(&conn_sn).copied()).and_then(|id| s.ep(id));
    let ep = match found {
        Some(ep) => ep,
        None => {
            let peer = match s.peer(&dev, qpn) {
                Ok(p) => p,
                Err(_) => return,
            };
            let Some(ep) = s.insert_ep(|id| {
                let mut st = new_state(s, id);
                st.conn_sn = conn_sn;
                st.private = true;
                st.peer = Some(peer);
                st.dest_id = Some(ep_id);
                st.rx.head_sn = n.psn;
                st.owed.crep = true;
                st
            }) else {
                crate::diag!("ud_verbs: no endpoint id left for a connection request");
                return;
            };
            let id = ep.borrow().id;
            s.conn.borrow_mut().entry(key).or_default().eps.insert(conn_sn, id);
            crate::debug!("ud_verbs: private ep {} for the request of ep {} (conn_sn {})", id, ep_id, conn_sn);
            let mut st = ep.borrow_mut();
            s.queue_owed(&mut st);
            return;
        }
    };
    let mut st = ep.borrow_mut();
    match st.dest_id {
        None => {
            st.dest_id = Some(ep_id);
            st.rx.head_sn = n.psn;
            if neth::psn_lt(super::window::INITIAL_PSN, st.tx.psn) {
                // Our request went out: the peer's counts as its ack.
                proto::process_ack(iface, &mut st, super::window::INITIAL_PSN);
            }
            st.owed.crep = true;
            st.owed.creq = false;
            s.queue_owed(&mut st);
            crate::debug!("ud_verbs: simultaneous connect on ep {} (conn_sn {})", st.id, conn_sn);
        }
        Some(d) if d != ep_id => {
            crate::debug!("ud_verbs: dropped a connection request of ep {} for ep {} (connected to {})",
                          ep_id, st.id, d);
        }
        Some(_) => {
            // A retransmitted request: our reply is in the window and is
            // retransmitted by the timer.
            st.owed.creq = false;
        }
    }
}

/// A received connection reply on `st`.
pub fn rx_crep(iface: &Iface<UdIface>, st: &mut EpState, n: &Neth, body: &[u8]) {
    let s = &iface.tl;
    let src = match neth::parse_ctl(body) {
        Ok(Ctl::Crep { src_ep_id }) => src_ep_id,
        _ => {
            crate::debug!("ud_verbs: dropped a malformed control packet on ep {}", st.id);
            return;
        }
    };
    if neth::psn_lt(n.psn, st.rx.head_sn) {
        return;
    }
    if let Some(d) = st.dest_id {
        if d != src {
            crate::debug!("ud_verbs: dropped a reply of ep {} on ep {} (connected to {})", src, st.id, d);
            return;
        }
    }
    st.rx.head_sn = n.psn;
    st.dest_id = Some(src);
    if n.has(neth::ACK_REQ) {
        st.owed.ack = true;
        s.queue_owed(st);
    }
    s.schedule(st);
}
