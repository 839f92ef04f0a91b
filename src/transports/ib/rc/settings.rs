//! The interface settings read from `UCX_RC_VERBS_*` (with its `UCX_RC_*`
//! and `UCX_IB_*` parts, [`crate::transports::ib::config`]) into the plain
//! [`RcParams`] the transport works with. UCX's own checks at open (buffer
//! pools, flow-control thresholds) refuse bad values here with a log line.

use super::params::{FlushMode, RcParams};
use crate::abi::*;
use crate::transports::ib::config::{RcVerbsIfaceConfig, UNITS_AUTO, UNITS_INF};

fn units(v: libc::c_ulong) -> Option<usize> {
    (v != UNITS_AUTO).then_some(if v == UNITS_INF { usize::MAX } else { v as usize })
}

/// The settings of `cfg`, checked.
pub fn from_config(cfg: &RcVerbsIfaceConfig) -> Result<RcParams, ucs_status_t> {
    let ib = cfg.ib();
    let common = cfg.common();
    let rc = cfg.rc();
    ib.check_pools()?;
    // Only checked here: the transport derives the credits itself.
    rc.fc()?;
    let lid_path_bits = ib.lid_path_bits().first().map_or(0, |r| r.0 as u8);
    Ok(RcParams {
        tx_queue_len: ib.tx_queue_len,
        tx_max_wr: cfg.tx_max_wr,
        rx_queue_len: ib.rx_queue_len,
        seg_size: ib.seg_size,
        tx_min_inline: ib.tx_min_inline.min(u32::MAX as usize) as u32,
        tx_min_sge: ib.tx_min_sge,
        rx_max_batch: ib.rx_max_batch,
        rx_max_poll: ib.rx_max_poll,
        tx_max_poll: ib.tx_max_poll,
        tx_poll_always: common.tx_poll_always != 0,
        tx_bufs_grow: ib.tx_mp.bufs_grow,
        max_num_eps: units(ib.max_num_eps()).unwrap_or(usize::MAX),
        fc_enable: common.fc_enable != 0,
        fc_wnd_size: common.fc_wnd_size,
        fc_soft_thresh: rc.fc_soft_thresh,
        fc_hard_thresh: common.fc_hard_thresh,
        tx_cq_moderation: rc.tx_cq_moderation,
        tx_cq_len: rc.tx_cq_len,
        max_am_hdr: cfg.max_am_hdr,
        tx_inline_resp: ib.tx_inline_resp,
        timeout: common.timeout,
        retry_count: common.retry_count() as u32,
        rnr_timeout: common.rnr_timeout,
        rnr_retry_count: common.rnr_retry_count() as u32,
        path_mtu: ib.path_mtu().unwrap_or(0),
        sl: (ib.sl != UNITS_AUTO).then(|| ib.sl()),
        gid_index: None,
        max_rd_atomic: units(common.max_rd_atomic).map(|v| v.min(u32::MAX as usize) as u32),
        max_get_zcopy: units(common.max_get_zcopy as libc::c_ulong),
        fence: common.fence_mode(),
        flush_mode: match cfg.flush_mode {
            0 => FlushMode::RdmaWrite0,
            1 => FlushMode::FlowControl,
            _ => FlushMode::Auto,
        },
        hop_limit: ib.hop_limit(),
        traffic_class: ib.traffic_class(false),
        is_global: ib.force_global(),
        lid_path_bits,
    })
}
