//! The performance estimate of the verbs interfaces
//! (`uct_iface_estimate_perf` of rc_verbs and ud_verbs): per operation, the
//! sender's costs before and after posting, the receiver's, the bandwidth
//! (of the interface and of one path) and the latency, from the interface's
//! attributes and its send costs. What changed from release to release is
//! asked of [`super::release`].

use super::release::{self, SendCosts};
use crate::abi::*;

/// Operations that copy through a send buffer, and those that send from
/// the user's memory (an atomic fetch among them: it completes like one).
fn is_bcopy(op: uct_ep_operation_t) -> bool {
    matches!(op, UCT_EP_OP_AM_BCOPY | UCT_EP_OP_PUT_BCOPY | UCT_EP_OP_GET_BCOPY | UCT_EP_OP_EAGER_BCOPY)
}

fn is_zcopy(op: uct_ep_operation_t) -> bool {
    matches!(op, UCT_EP_OP_AM_ZCOPY | UCT_EP_OP_PUT_ZCOPY | UCT_EP_OP_GET_ZCOPY | UCT_EP_OP_ATOMIC_FETCH
                 | UCT_EP_OP_EAGER_ZCOPY)
}

/// Fill the fields `perf` asks for, for an interface with attributes
/// `attr`, send costs `costs`, on a port of speed code `speed`. The
/// maximal number of endpoints in flight is unlimited here (rc narrows it).
pub fn estimate(attr: &uct_iface_attr_t, costs: &SendCosts, speed: u32, perf: &mut uct_perf_attr_t) {
    let m = perf.field_mask;
    let op = (m & UCT_PERF_ATTR_FIELD_OPERATION != 0).then_some(perf.operation);
    let bcopy = op.is_some_and(is_bcopy);
    let zcopy = op.is_some_and(is_zcopy);
    if m & UCT_PERF_ATTR_FIELD_SEND_PRE_OVERHEAD != 0 {
        perf.send_pre_overhead = costs.wqe_post + if bcopy { costs.bcopy } else { 0.0 };
    }
    if m & UCT_PERF_ATTR_FIELD_SEND_POST_OVERHEAD != 0 {
        perf.send_post_overhead = costs.db + if zcopy { costs.cqe } else { 0.0 };
    }
    if m & UCT_PERF_ATTR_FIELD_RECV_OVERHEAD != 0 {
        perf.recv_overhead = attr.overhead;
    }
    if m & UCT_PERF_ATTR_FIELD_BANDWIDTH != 0 {
        perf.bandwidth = release::op_bandwidth(attr.bandwidth, attr.dev_num_paths, op, speed);
    }
    if m & UCT_PERF_ATTR_FIELD_PATH_BANDWIDTH != 0 {
        perf.path_bandwidth = uct_ppn_bandwidth_t {
            dedicated: 0.0,
            shared: release::path_bandwidth(attr.bandwidth.shared, op, speed),
        };
    }
    if m & UCT_PERF_ATTR_FIELD_LATENCY != 0 {
        perf.latency = attr.latency;
        if bcopy || zcopy {
            perf.latency.c += costs.wqe_fetch;
        }
    }
    if m & UCT_PERF_ATTR_FIELD_MAX_INFLIGHT_EPS != 0 {
        perf.max_inflight_eps = usize::MAX;
    }
    crate::core::release::perf_fill_extra(perf);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ucs::release::running;

    fn attr(bw: f64) -> uct_iface_attr_t {
        // SAFETY: all-zero is a valid uct_iface_attr_t.
        let mut a: uct_iface_attr_t = unsafe { std::mem::zeroed() };
        a.overhead = 75e-9;
        a.bandwidth = uct_ppn_bandwidth_t { dedicated: 0.0, shared: bw };
        a.latency = ucs_linear_func_t { c: 600e-9, m: 1e-9 };
        a.dev_num_paths = 1;
        a
    }

    fn ask(op: uct_ep_operation_t) -> uct_perf_attr_t {
        // SAFETY: all-zero is a valid uct_perf_attr_t.
        let mut p: uct_perf_attr_t = unsafe { std::mem::zeroed() };
        p.field_mask = UCT_PERF_ATTR_FIELD_OPERATION | UCT_PERF_ATTR_FIELD_SEND_PRE_OVERHEAD
            | UCT_PERF_ATTR_FIELD_SEND_POST_OVERHEAD | UCT_PERF_ATTR_FIELD_RECV_OVERHEAD
            | UCT_PERF_ATTR_FIELD_BANDWIDTH | UCT_PERF_ATTR_FIELD_PATH_BANDWIDTH | UCT_PERF_ATTR_FIELD_LATENCY
            | UCT_PERF_ATTR_FIELD_MAX_INFLIGHT_EPS;
        p.operation = op;
        p
    }

    const COSTS: SendCosts = SendCosts { wqe_post: 75e-9, bcopy: 5e-9, db: 40e-9, cqe: 20e-9, wqe_fetch: 350e-9 };

    #[test]
    fn costs_follow_the_operation() {
        let a = attr(10e9);
        let mut p = ask(UCT_EP_OP_AM_BCOPY);
        estimate(&a, &COSTS, 4, &mut p);
        assert_eq!((p.send_pre_overhead, p.send_post_overhead, p.recv_overhead), (75e-9 + 5e-9, 40e-9, 75e-9));
        assert_eq!((p.latency.c, p.latency.m), (600e-9 + 350e-9, 1e-9));
        assert_eq!(p.max_inflight_eps, usize::MAX);
        let mut p = ask(UCT_EP_OP_PUT_ZCOPY);
        estimate(&a, &COSTS, 4, &mut p);
        assert_eq!((p.send_pre_overhead, p.send_post_overhead), (75e-9, 40e-9 + 20e-9));
        assert_eq!(p.latency.c, 600e-9 + 350e-9);
        let mut p = ask(UCT_EP_OP_AM_SHORT);
        estimate(&a, &COSTS, 4, &mut p);
        assert_eq!((p.send_pre_overhead, p.send_post_overhead, p.latency.c), (75e-9, 40e-9, 600e-9));
        assert_eq!((p.bandwidth.shared, p.path_bandwidth.shared), (10e9, 10e9));
        // No operation named: neither bcopy nor zcopy.
        let mut p = ask(UCT_EP_OP_AM_BCOPY);
        p.field_mask &= !UCT_PERF_ATTR_FIELD_OPERATION;
        estimate(&a, &COSTS, 4, &mut p);
        assert_eq!((p.send_pre_overhead, p.latency.c), (75e-9, 600e-9));
    }

    #[test]
    fn reads_on_fast_ports_are_capped_by_release() {
        let r = running();
        // NDR: one path carries 95% of a read's bandwidth, at most 38 GB/s.
        let a = attr(48e9);
        let mut p = ask(UCT_EP_OP_GET_ZCOPY);
        estimate(&a, &COSTS, release::SPEED_NDR, &mut p);
        assert_eq!(p.bandwidth.shared, 48e9);
        assert_eq!(p.path_bandwidth.shared, 38e9);
        assert_eq!(release::path_bandwidth(20e9, Some(UCT_EP_OP_GET_BCOPY), release::SPEED_NDR), 20e9 * 0.95);
        assert_eq!(release::path_bandwidth(20e9, Some(UCT_EP_OP_PUT_ZCOPY), release::SPEED_NDR), 20e9);
        // get_short counts as a read from 1.20.
        let short = release::path_bandwidth(20e9, Some(UCT_EP_OP_GET_SHORT), release::SPEED_NDR);
        assert_eq!(short, if r.since(20) { 20e9 * 0.95 } else { 20e9 });
        // XDR (1.20): 40% per path, at most 35 GB/s; the interface
        // bandwidth of a read is 40% per path too.
        let a = attr(96e9);
        let mut p = ask(UCT_EP_OP_GET_ZCOPY);
        estimate(&a, &COSTS, release::SPEED_XDR, &mut p);
        if r.since(20) {
            assert_eq!((p.bandwidth.shared, p.path_bandwidth.shared), (96e9 * 0.4, 35e9));
        } else {
            assert_eq!((p.bandwidth.shared, p.path_bandwidth.shared), (96e9, 96e9));
        }
        let mut two = attr(96e9);
        two.dev_num_paths = 4;
        assert_eq!(release::op_bandwidth(two.bandwidth, 4, Some(UCT_EP_OP_GET_BCOPY), release::SPEED_XDR).shared,
                   96e9);
    }

    #[test]
    fn send_costs_by_release() {
        use crate::transports::ib::config::SendOverhead;
        use crate::transports::ib::release::SendOverheadValue;
        let r = running();
        let secs = |v: f64| SendOverheadValue(v.to_bits());
        let cfg = if r.since(18) {
            SendOverhead { bcopy: secs(1e-9), cqe: secs(2e-9), db: secs(3e-9), wqe_fetch: secs(4e-9),
                           wqe_post: secs(5e-9) }
        } else {
            let auto = SendOverheadValue(crate::core::config::TIME_AUTO);
            SendOverhead { bcopy: auto, cqe: auto, db: auto, wqe_fetch: auto, wqe_post: auto }
        };
        let c = release::send_costs(&cfg, 75e-9);
        let want = if r.since(18) {
            SendCosts { wqe_post: 5e-9, bcopy: 1e-9, db: 3e-9, cqe: 2e-9, wqe_fetch: 4e-9 }
        } else if r.since(14) {
            COSTS
        } else {
            SendCosts { wqe_post: 75e-9, bcopy: 0.0, db: 0.0, cqe: 0.0, wqe_fetch: 0.0 }
        };
        assert_eq!(c, want);
    }
}
