//! The settings of an `rc_verbs` interface, in one plain struct, and where
//! they come from.
//!
//! UCX reads them from nested tables (`UCX_RC_VERBS_*`, `UCX_RC_*`,
//! `UCX_IB_*`, [`crate::transports::ib::config`]); the transport reads only
//! [`RcParams`]. [`RcParams::from_config`] fills it from those tables,
//! refusing bad values as UCX's checks at open do (buffer pools,
//! flow-control thresholds) with a log line; [`RcParams::default`] gives
//! UCX 1.13.1's defaults. The derived values (IB time codes, flow-control
//! thresholds, moderation) are computed here as the original computes them.

/// How `uct_ep_flush` makes sure unsignalled work completes
/// (`UCX_RC_VERBS_FLUSH_MODE`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlushMode {
    /// A zero-length RDMA WRITE (what `auto` picks on every device but
    /// Mellanox's old `mthca`).
    RdmaWrite0,
    /// A flow-control grant message.
    FlowControl,
    Auto,
}

/// Fence mode (`UCX_RC_FENCE`): weak (`auto`, `weak`: the next RDMA READ
/// or atomic after a fence carries `IBV_SEND_FENCE`) or none.
pub use crate::transports::ib::config::FenceMode;

// The IB codes of the QP's timers, computed as UCX computes them.
use crate::transports::ib::config::{qp_timeout_code, rnr_timer_code};
use crate::abi::ucs_status_t;
use crate::core::config::{UNITS_AUTO, UNITS_INF};
use crate::transports::ib::config::RcVerbsIfaceConfig;

/// Every setting the transport uses.
#[derive(Clone, Debug)]
pub struct RcParams {
    /// Send work requests per endpoint (`TX_QUEUE_LEN`, 256).
    pub tx_queue_len: u32,
    /// Cap on outstanding work requests per endpoint (`TX_MAX_WR`, inf):
    /// the QP depth is `min(tx_max_wr, tx_queue_len)`.
    pub tx_max_wr: u32,
    /// Receive buffers posted to the shared receive queue (`RX_QUEUE_LEN`,
    /// 4095).
    pub rx_queue_len: u32,
    /// Receive buffers per pool chunk: the queue plus 10 % (1024 under a
    /// queue of 1024), so that buffers a user holds do not make the pool
    /// grow while the queue is kept full (`RX_MAX_BUFS` bounds it).
    pub rx_pool_grow: u32,
    /// Size of a send or receive buffer, transport header included
    /// (`SEG_SIZE`, 8256).
    pub seg_size: usize,
    /// Inline data asked of every QP (`TX_MIN_INLINE`, 64); the device may
    /// grant more.
    pub tx_min_inline: u32,
    /// Scatter/gather entries asked of every QP (`TX_MIN_SGE`, 5).
    pub tx_min_sge: u32,
    /// Receive buffers posted per `ibv_post_srq_recv` (`RX_MAX_BATCH`, 16).
    pub rx_max_batch: u32,
    /// Receive completions polled per progress call (`RX_MAX_POLL`, 16).
    pub rx_max_poll: u32,
    /// Send completions polled per progress call (`TX_MAX_POLL`, 16).
    pub tx_max_poll: u32,
    /// Poll the send CQ even when receives were found (`TX_POLL_ALWAYS`, n).
    pub tx_poll_always: bool,
    /// Send buffers added when the send pool grows (`TX_BUFS_GROW`, 1024;
    /// used as the chunk size, capped).
    pub tx_bufs_grow: u32,
    /// Largest number of endpoints (`MAX_NUM_EPS`, 256), reported only.
    pub max_num_eps: usize,
    /// Flow control on (`FC_ENABLE`, y), window (`FC_WND_SIZE`, 512), and
    /// the soft/hard request thresholds as fractions of it (0.5 / 0.25).
    pub fc_enable: bool,
    pub fc_wnd_size: u32,
    pub fc_soft_thresh: f64,
    pub fc_hard_thresh: f64,
    /// At most this many unsignalled work requests in a row
    /// (`TX_CQ_MODERATION`, 64).
    pub tx_cq_moderation: u32,
    /// Send completion queue length (`TX_CQ_LEN`, 4096).
    pub tx_cq_len: u32,
    /// Largest AM header of am_zcopy, transport header excluded
    /// (`MAX_AM_HDR`, 128).
    pub max_am_hdr: usize,
    /// Inline response bytes (`TX_INLINE_RESP`, 64): get_zcopy starts above.
    pub tx_inline_resp: usize,
    /// Transport retry timeout, seconds (`TIMEOUT`, 1 s).
    pub timeout: f64,
    /// Transport retries (`RETRY_COUNT`, 7).
    pub retry_count: u32,
    /// RNR NAK timer, seconds (`RNR_TIMEOUT`, 1 ms).
    pub rnr_timeout: f64,
    /// RNR retries (`RNR_RETRY_COUNT`, 7).
    pub rnr_retry_count: u32,
    /// Path MTU as an `ibv_mtu` value, 0 for `default` (the port's active
    /// MTU).
    pub path_mtu: u32,
    /// Service level (`SL`), None for `auto` (0 on verbs).
    pub sl: Option<u8>,
    /// GID index (`UCX_IB_GID_INDEX`), None for `auto` (0).
    pub gid_index: Option<u8>,
    /// The RoCE settings (used on a RoCE port).
    pub roce: crate::transports::ib::roce::Settings,
    /// Outstanding RDMA READ/atomic operations (`MAX_RD_ATOMIC`), None for
    /// `auto` (the device's `max_qp_rd_atom`).
    pub max_rd_atomic: Option<u32>,
    /// Largest get_zcopy (`MAX_GET_ZCOPY`), None for `auto` (the port's
    /// `max_msg_sz`).
    pub max_get_zcopy: Option<usize>,
    /// Fence mode (`FENCE`, auto = weak).
    pub fence: FenceMode,
    /// Flush mode (`FLUSH_MODE`, auto).
    pub flush_mode: FlushMode,
    /// Hop limit and traffic class of global routes (`HOP_LIMIT` 255,
    /// `TRAFFIC_CLASS` auto = 0).
    pub hop_limit: u8,
    pub traffic_class: u8,
    /// Force global routing (`IS_GLOBAL`, n).
    pub is_global: bool,
    /// Source path bits (`LID_PATH_BITS`, 0).
    pub lid_path_bits: u8,
}

impl Default for RcParams {
    fn default() -> RcParams {
        RcParams {
            tx_queue_len: 256,
            tx_max_wr: u32::MAX,
            rx_queue_len: 4095,
            rx_pool_grow: 4505,
            seg_size: 8256,
            tx_min_inline: 64,
            tx_min_sge: 5,
            rx_max_batch: 16,
            rx_max_poll: 16,
            tx_max_poll: 16,
            tx_poll_always: false,
            tx_bufs_grow: 1024,
            max_num_eps: 256,
            fc_enable: true,
            fc_wnd_size: 512,
            fc_soft_thresh: 0.5,
            fc_hard_thresh: 0.25,
            tx_cq_moderation: 64,
            tx_cq_len: 4096,
            max_am_hdr: 128,
            tx_inline_resp: 64,
            timeout: 1.0,
            retry_count: 7,
            rnr_timeout: 1e-3,
            rnr_retry_count: 7,
            path_mtu: 0,
            sl: None,
            gid_index: None,
            roce: Default::default(),
            max_rd_atomic: None,
            max_get_zcopy: None,
            fence: FenceMode::Weak,
            flush_mode: FlushMode::Auto,
            hop_limit: 255,
            traffic_class: 0,
            is_global: false,
            lid_path_bits: 0,
        }
    }
}

/// A `UNITS` setting: None for "auto", `usize::MAX` for "inf".
fn units(v: libc::c_ulong) -> Option<usize> {
    (v != UNITS_AUTO).then_some(if v == UNITS_INF { usize::MAX } else { v as usize })
}

impl RcParams {
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
            rx_pool_grow: ib.rx_pool_grow(),
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
            roce: crate::transports::ib::roce::Settings::from_config(ib, None).map_err(|e| {
                crate::error!("rc_verbs: {e}");
                crate::abi::UCS_ERR_INVALID_PARAM
            })?,
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
}

/// Values derived from the settings, as the interface uses them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Derived {
    /// Work requests per QP.
    pub tx_qp_len: u32,
    /// Unsignalled work requests allowed in a row.
    pub tx_moderation: u32,
    /// Flow-control window and thresholds (credits).
    pub fc_wnd: i32,
    pub fc_soft: i32,
    pub fc_hard: i32,
    /// Receive buffers posted per batch.
    pub rx_batch: u32,
    pub timeout_code: u8,
    pub rnr_code: u8,
    pub retry: u8,
    pub rnr_retry: u8,
    /// Bytes of the am_zcopy header buffer (`max(MAX_AM_HDR, 8)`).
    pub short_desc_size: usize,
}

impl RcParams {
    /// The derived values, or why the settings are unusable.
    pub fn derive(&self) -> Result<Derived, String> {
        if self.seg_size < 16 {
            return Err(format!("segment size {} is too small", self.seg_size));
        }
        if self.tx_queue_len == 0 || self.rx_queue_len == 0 || self.tx_cq_len < 2 {
            return Err("queue lengths must be positive".into());
        }
        let tx_qp_len = self.tx_max_wr.min(self.tx_queue_len);
        let fc_wnd = self.fc_wnd_size.min(self.rx_queue_len) as i32;
        if self.fc_enable && fc_wnd == 0 {
            return Err("the flow-control window must be positive".into());
        }
        for (name, v) in [("soft", self.fc_soft_thresh), ("hard", self.fc_hard_thresh)] {
            if !(v > 0.0 && v < 1.0) {
                return Err(format!("FC {} threshold {} must be in (0, 1)", name, v));
            }
        }
        if self.fc_hard_thresh >= self.fc_soft_thresh {
            return Err("the FC hard threshold must be below the soft one".into());
        }
        let thresh = |f: f64| ((fc_wnd as f64 * f) as i32).max(1);
        let clamp7 = |v: u32, what: &str| {
            if v > 7 {
                crate::warn!("rc_verbs: {} {} is larger than 7, using 7", what, v);
            }
            v.min(7) as u8
        };
        Ok(Derived {
            tx_qp_len,
            tx_moderation: self.tx_cq_moderation.min(tx_qp_len / 4),
            fc_wnd,
            fc_soft: thresh(self.fc_soft_thresh),
            fc_hard: thresh(self.fc_hard_thresh),
            rx_batch: self.rx_max_batch.min(self.rx_queue_len / 4).max(1),
            timeout_code: qp_timeout_code(self.timeout),
            rnr_code: rnr_timer_code(self.rnr_timeout),
            retry: clamp7(self.retry_count, "retry count"),
            rnr_retry: clamp7(self.rnr_retry_count, "RNR retry count"),
            short_desc_size: self.max_am_hdr.max(8),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_derive_as_the_original() {
        let d = RcParams::default().derive().unwrap();
        assert_eq!(d.tx_qp_len, 256);
        assert_eq!(d.tx_moderation, 64);
        assert_eq!((d.fc_wnd, d.fc_soft, d.fc_hard), (512, 256, 128));
        assert_eq!(d.rx_batch, 16);
        assert_eq!(d.timeout_code, 18);
        assert_eq!(d.rnr_code, 13);
        assert_eq!((d.retry, d.rnr_retry), (7, 7));
        assert_eq!(d.short_desc_size, 128);
    }

    #[test]
    fn time_codes() {
        assert_eq!(qp_timeout_code(0.0), 1);
        assert_eq!(qp_timeout_code(4.096e-6 * 1024.0), 10);
        assert_eq!(qp_timeout_code(1e9), 0);
        assert_eq!(rnr_timer_code(0.01e-3), 1);
        assert_eq!(rnr_timer_code(1.1e-3), 13);
        assert_eq!(rnr_timer_code(1.2e-3), 14);
        assert_eq!(rnr_timer_code(10.0), 0);
    }

    #[test]
    fn bad_settings_refused() {
        let p = RcParams { fc_soft_thresh: 0.2, ..RcParams::default() };
        assert!(p.derive().is_err());
        let p = RcParams { seg_size: 4, ..RcParams::default() };
        assert!(p.derive().is_err());
        let p = RcParams { fc_wnd_size: 10_000, ..RcParams::default() };
        assert_eq!(p.derive().unwrap().fc_wnd, 4095);
    }
}
