//! What the transports read from the parsed ib interface settings, in the
//! form they use it: effective lengths and limits, the IB encodings of the
//! timeouts, flow-control thresholds. The rules are UCX 1.13.1's (facts
//! from `ib_iface.c`, `ib_device.c`, `rc_iface.c`, `rc_verbs_iface.c` at
//! v1.13.1, cited next to each); messages are our own.

use super::{release, IbIfaceConfig, MpoolConfig, RcIfaceCommonConfig, RcIfaceConfig, RcVerbsIfaceConfig, HEX_AUTO};
use crate::core::config::{UNITS_AUTO, UNITS_INF};
use crate::abi::*;

/// The most an IB retry counter can hold (3 bits); larger settings are
/// lowered to it with a warning (`rc_iface.c:514-524`).
pub const MAX_RETRY_COUNT: u32 = 7;
/// The number of codes of the 5-bit IB timer fields.
const FABRIC_TIME_CODES: usize = 32;

/// Receiver-not-ready delays in milliseconds by IB code (the IBA's table of
/// the RNR NAK timer field); code 0 is the longest, 655.36 ms.
const RNR_TIMER_MS: [f64; FABRIC_TIME_CODES] = [
    655.36, 0.01, 0.02, 0.03, 0.04, 0.06, 0.08, 0.12, 0.16, 0.24, 0.32, 0.48, 0.64, 0.96, 1.28, 1.92, 2.56, 3.84,
    5.12, 7.68, 10.24, 15.36, 20.48, 30.72, 40.96, 61.44, 81.92, 122.88, 163.84, 245.76, 327.68, 491.52,
];

/// The IB code of a transport (ACK) timeout of `t` seconds: the timeout is
/// 4.096 µs · 2^code, so code = log2(t / 4.096 µs) rounded to the nearest
/// integer; below 1 it is 1, and 31 or more gives 0, which means "no
/// timeout" (`ib_device.c:1223-1235`). 1 s gives 18 (1.07 s).
pub fn qp_timeout_code(t: f64) -> u8 {
    let exp = (t / 4.096e-6).log2();
    if exp.is_nan() || exp < 1.0 {
        return 1;
    }
    let code = (exp + 0.5) as i64;
    if code >= FABRIC_TIME_CODES as i64 {
        0
    } else {
        code as u8
    }
}

/// The IB code of a receiver-not-ready delay of `t` seconds: the first code
/// (from 1, in increasing delay) whose next code's delay is at least `t`
/// picks whichever of the two is nearer (ties go up); longer than every
/// table entry gives 0, the longest delay (`ib_device.c:1237-1261`).
/// 1 ms gives 13 (0.96 ms).
pub fn rnr_timer_code(t: f64) -> u8 {
    let ms = t * 1000.0;
    for (idx, &cur) in RNR_TIMER_MS.iter().enumerate().skip(1) {
        let next = (idx + 1) % FABRIC_TIME_CODES;
        if ms <= RNR_TIMER_MS[next] {
            let mid = (cur + RNR_TIMER_MS[next]) * 0.5;
            return if ms < mid { idx as u8 } else { next as u8 };
        }
    }
    0
}

/// A retry count as the QP takes it: at most [`MAX_RETRY_COUNT`], larger
/// settings lowered with a warning naming the key.
pub fn retry_limit(key: &str, configured: u32) -> u8 {
    if configured > MAX_RETRY_COUNT {
        crate::warn!("{}: {} is more than the IB maximum, {} is used", key, configured, MAX_RETRY_COUNT);
        return MAX_RETRY_COUNT as u8;
    }
    configured as u8
}

fn check_pool(what: &str, mp: &MpoolConfig) -> Result<(), ucs_status_t> {
    crate::core::config::check_pool_limits(what, mp.bufs_grow.max(1), mp.max_bufs)
}

impl IbIfaceConfig {
    /// Send queue length of each QP (`TX_QUEUE_LEN`).
    pub fn tx_queue_len(&self) -> u32 {
        self.tx_queue_len
    }
    /// Receive queue length (`RX_QUEUE_LEN`; 4095 for RC by default).
    pub fn rx_queue_len(&self) -> u32 {
        self.rx_queue_len
    }
    /// Bounce buffer size (`SEG_SIZE`; 8256 for RC by default).
    pub fn seg_size(&self) -> usize {
        self.seg_size
    }
    /// Inline space requested per send work request (`TX_MIN_INLINE`).
    pub fn tx_min_inline(&self) -> usize {
        self.tx_min_inline
    }
    /// Scatter/gather entries requested per send work request.
    pub fn tx_min_sge(&self) -> u32 {
        self.tx_min_sge
    }
    /// `TX_INLINE_RESP` (rc_verbs: the least get zcopy is this plus one).
    pub fn tx_inline_resp(&self) -> usize {
        self.tx_inline_resp
    }
    pub fn tx_max_poll(&self) -> u32 {
        self.tx_max_poll
    }
    pub fn rx_max_poll(&self) -> u32 {
        self.rx_max_poll
    }
    /// Receives re-posted per batch: `RX_MAX_BATCH`, at most a quarter of the
    /// receive queue (`ib_iface.c:1438-1439`).
    pub fn rx_max_batch(&self) -> u32 {
        self.rx_max_batch.min(self.rx_queue_len / 4)
    }
    /// Receive buffers the pool grows by: 1024 for queues under 1024, else
    /// the queue length plus 10 %, bounded by `RX_MAX_BUFS` read as unsigned
    /// (`ib_iface.c:265-271`).
    pub fn rx_pool_grow(&self) -> u32 {
        if self.rx_queue_len < 1024 {
            1024
        } else {
            let want = (1.1 * self.rx_queue_len as f64 + 0.5) as i64;
            (want as u64).min(self.rx_mp.max_bufs as u32 as u64) as u32
        }
    }
    /// The buffer pool settings checked as UCX checks them at open.
    pub fn check_pools(&self) -> Result<(), ucs_status_t> {
        check_pool("send", &self.tx_mp)?;
        check_pool("receive", &self.rx_mp)
    }
    /// (largest chunk, growth factor) of the send and receive pools.
    pub fn pool_growth(&self) -> ((usize, f64), (usize, f64)) {
        (release::pool_growth(&self.tx_mp), release::pool_growth(&self.rx_mp))
    }
    /// Most endpoints (`MAX_NUM_EPS`; 256 for RC), `u64::MAX` for "inf".
    pub fn max_num_eps(&self) -> libc::c_ulong {
        self.base.max_num_eps
    }
    /// The configured path MTU as an `ibv_mtu` code (2 = 512 ... 5 = 4096),
    /// `None` for "default" (then the port's active MTU is used). UCX adds
    /// `IBV_MTU_512 - "512"'s index` = 2 - 1 to the table index
    /// (`ib_iface.c:1347-1356`).
    pub fn path_mtu(&self) -> Option<u32> {
        (self.path_mtu != 0).then_some(self.path_mtu + 1)
    }
    /// Service level: "auto" is 0 (`ib_iface.c:1371-1379`).
    pub fn sl(&self) -> u8 {
        if self.sl == UNITS_AUTO {
            0
        } else {
            self.sl as u8
        }
    }
    /// Traffic class: "auto" is 106 on RoCEv2 and 0 elsewhere
    /// (`ib_iface.c:1481-1486`).
    pub fn traffic_class(&self, roce_v2: bool) -> u8 {
        if self.traffic_class == UNITS_AUTO {
            if roce_v2 {
                106
            } else {
                0
            }
        } else {
            self.traffic_class as u8
        }
    }
    pub fn hop_limit(&self) -> u8 {
        self.hop_limit as u8
    }
    /// The partition key asked for, `None` for "auto" (the first table entry
    /// with full membership). Values above 0x7fff are refused at open
    /// (`ib_iface.c:825-830`).
    pub fn pkey(&self) -> Option<u32> {
        (self.pkey.value != HEX_AUTO as u32).then_some(self.pkey.value)
    }
    /// Paths per peer pair, `None` for "auto".
    pub fn num_paths(&self) -> Option<libc::c_ulong> {
        (self.num_paths != UNITS_AUTO).then_some(self.num_paths)
    }
    /// The LID path bit ranges, as (first, last).
    pub fn lid_path_bits(&self) -> Vec<(u32, u32)> {
        if self.lid_path_bits.items.is_null() {
            return Vec::new();
        }
        // SAFETY: libucs filled `items` with `count` ranges.
        let r = unsafe { std::slice::from_raw_parts(self.lid_path_bits.items, self.lid_path_bits.count as usize) };
        r.iter().map(|x| (x.first, x.last)).collect()
    }
    /// Global routing forced by IS_GLOBAL or by a site-local/global
    /// ADDR_TYPE (`ib_iface.c`, global addressing decision).
    pub fn force_global(&self) -> bool {
        self.is_global != 0 || self.addr_type == 1 || self.addr_type == 2
    }
}

/// Fence modes (`FENCE`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FenceMode {
    None,
    Weak,
}

/// The flow-control parameters of an RC interface.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FcParams {
    pub enabled: bool,
    /// Credits per endpoint: `min(FC_WND_SIZE, RX_QUEUE_LEN)`, or
    /// `i16::MAX` with flow control off.
    pub wnd_size: i32,
    /// Window left at which a hard request is sent: `max(wnd · hard, 1)`.
    pub hard_thresh: i32,
    /// Window left at which a soft request is sent: `max(wnd · soft, 1)`.
    pub soft_thresh: i32,
}

impl RcIfaceCommonConfig {
    pub fn ib(&self) -> &IbIfaceConfig {
        &self.ib
    }
    /// IB code of `TIMEOUT` (18 for the default 1 s).
    pub fn timeout_code(&self) -> u8 {
        qp_timeout_code(self.timeout)
    }
    /// IB code of `RNR_TIMEOUT` (13 for the default 1 ms).
    pub fn rnr_timer_code(&self) -> u8 {
        rnr_timer_code(self.rnr_timeout)
    }
    pub fn retry_count(&self) -> u8 {
        retry_limit("RETRY_COUNT", self.retry_count)
    }
    pub fn rnr_retry_count(&self) -> u8 {
        retry_limit("RNR_RETRY_COUNT", self.rnr_retry_count)
    }
    /// Outstanding reads/atomics per QP given the device's `max_qp_rd_atom`:
    /// "auto" takes the device's; more than it is refused with
    /// `UCS_ERR_INVALID_PARAM` (`rc_iface.c:526-553`).
    pub fn max_rd_atomic(&self, device_max: u32) -> Result<u32, ucs_status_t> {
        let v = self.max_rd_atomic;
        if v == UNITS_AUTO {
            Ok(device_max)
        } else if v <= device_max as libc::c_ulong {
            Ok(v as u32)
        } else {
            let shown = if v == UNITS_INF { "inf".to_string() } else { v.to_string() };
            crate::error!("MAX_RD_ATOMIC={} is more than the device allows ({})", shown, device_max);
            Err(UCS_ERR_INVALID_PARAM)
        }
    }
    /// Largest get zcopy given the port's `max_msg_sz`: "auto" takes it,
    /// a larger setting is lowered to it with a warning (`rc_iface.c:600-609`).
    pub fn max_get_zcopy(&self, port_max_msg: u32) -> u32 {
        let v = self.max_get_zcopy as libc::c_ulong;
        if v == UNITS_AUTO {
            port_max_msg
        } else if v <= port_max_msg as libc::c_ulong {
            v as u32
        } else {
            crate::warn!("MAX_GET_ZCOPY lowered to the port's largest message, {}", port_max_msg);
            port_max_msg
        }
    }
    /// Read bytes in flight allowed, `None` for no limit ("inf" or "auto").
    pub fn max_get_bytes(&self) -> Option<usize> {
        let v = self.tx_num_get_bytes as libc::c_ulong;
        (v != UNITS_AUTO && v != UNITS_INF).then_some(self.tx_num_get_bytes)
    }
    /// Checks `ECE` (1.14+) on `device`, which like every device of this
    /// library has no ECE: only a value keeping the device's default is
    /// accepted ([`release::ece_usable_without_support`]), any other is
    /// `UCS_ERR_INVALID_PARAM` (`rc_iface.c`, interface init).
    pub fn check_ece(&self, device: &str) -> Result<(), ucs_status_t> {
        if release::ece_usable_without_support(self.ece) {
            return Ok(());
        }
        crate::error!("{}: ECE 0x{:x} cannot be set: the device does not support ECE", device, self.ece);
        Err(UCS_ERR_INVALID_PARAM)
    }
    /// The fence mode rc_verbs uses: "auto" and "weak" are weak
    /// (`rc_verbs_iface.c:302-311`).
    pub fn fence_mode(&self) -> FenceMode {
        if self.fence == 0 {
            FenceMode::None
        } else {
            FenceMode::Weak
        }
    }
}

impl RcIfaceConfig {
    pub fn common(&self) -> &RcIfaceCommonConfig {
        &self.common
    }
    /// Send CQ length (`TX_CQ_LEN`).
    pub fn tx_cq_len(&self) -> u32 {
        self.tx_cq_len
    }
    /// The flow-control parameters, after UCX's checks: the hard threshold
    /// strictly between 0 and 1, the soft one above the hard one and below 1;
    /// otherwise `UCS_ERR_INVALID_PARAM` (`rc_iface.c:327-347,626-634,700-712`).
    pub fn fc(&self) -> Result<FcParams, ucs_status_t> {
        let c = &self.common;
        let (hard, soft) = (c.fc_hard_thresh, self.fc_soft_thresh);
        if hard <= 0.0 || hard >= 1.0 || hard.is_nan() {
            crate::error!("FC_HARD_THRESH must be above 0 and below 1 (it is {})", hard);
            return Err(UCS_ERR_INVALID_PARAM);
        }
        if soft <= hard || soft >= 1.0 || soft.is_nan() {
            crate::error!("FC_SOFT_THRESH must be above FC_HARD_THRESH and below 1 (soft {}, hard {})", soft, hard);
            return Err(UCS_ERR_INVALID_PARAM);
        }
        if c.fc_enable == 0 {
            return Ok(FcParams { enabled: false, wnd_size: i16::MAX as i32, hard_thresh: 0, soft_thresh: 0 });
        }
        let wnd = c.fc_wnd_size.min(c.ib.rx_queue_len).min(i32::MAX as u32) as i32;
        let part = |f: f64| ((wnd as f64 * f) as i32).max(1);
        Ok(FcParams { enabled: true, wnd_size: wnd, hard_thresh: part(hard), soft_thresh: part(soft) })
    }
}

impl RcVerbsIfaceConfig {
    pub fn rc(&self) -> &RcIfaceConfig {
        &self.rc
    }
    pub fn common(&self) -> &RcIfaceCommonConfig {
        &self.rc.common
    }
    pub fn ib(&self) -> &IbIfaceConfig {
        &self.rc.common.ib
    }
    /// Work requests in flight per QP: `min(TX_MAX_WR, TX_QUEUE_LEN)`
    /// (`rc_verbs_iface.c:294-295`); 256 by default.
    pub fn tx_max_wr(&self) -> u32 {
        self.tx_max_wr.min(self.ib().tx_queue_len)
    }
    /// Most unsignalled sends in a row: `min(TX_CQ_MODERATION,
    /// tx_max_wr / 4)` (`rc_verbs_iface.c:296-297`); 64 by default.
    pub fn tx_moderation(&self) -> u32 {
        self.rc.tx_cq_moderation.min(self.tx_max_wr() / 4)
    }
    /// Size of the short descriptors (AM header space): `MAX_AM_HDR`, at
    /// least the 1-byte RC header and the 8-byte atomic result
    /// (`rc_verbs_iface.c:317-320`); 128 by default.
    pub fn short_desc_size(&self) -> usize {
        self.max_am_hdr.max(1).max(8)
    }
    /// Whether flushes are sent as flow-control messages: `fc`, or `auto`
    /// on mthca devices (`rc_verbs_iface.c:323-330`).
    pub fn flush_by_fc(&self, device_name: &str) -> bool {
        match self.flush_mode {
            0 => false,
            1 => true,
            _ => device_name.starts_with("mthca"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeout_codes() {
        assert_eq!(qp_timeout_code(1.0), 18);
        assert_eq!(qp_timeout_code(1e-9), 1);
        assert_eq!(qp_timeout_code(1e9), 0);
        assert_eq!(qp_timeout_code(4.096e-6 * 4.0), 2);
    }

    #[test]
    fn rnr_codes() {
        assert_eq!(rnr_timer_code(1e-3), 13);
        assert_eq!(rnr_timer_code(0.96e-3), 13);
        assert_eq!(rnr_timer_code(1.2e-3), 14);
        assert_eq!(rnr_timer_code(0.0), 1);
        assert_eq!(rnr_timer_code(1.0), 0);
        assert_eq!(rnr_timer_code(0.5), 31);
    }

    /// The defaults, parsed by libucs through the tables, as the transports
    /// read them (the figures of UCX 1.13.1's rc_verbs on a default port).
    #[test]
    fn rc_verbs_defaults() {
        use crate::core::config::{self, ConfigDesc, Parsed};
        use crate::transports::ib::config::{IbMdConfig, RelaxedOrder, IB_MD_TABLE, RC_VERBS_IFACE_TABLE};
        static DESC: ConfigDesc = ConfigDesc::of::<RcVerbsIfaceConfig>(c"rc_verbs transport", c"RC_VERBS_",
                                                                       &RC_VERBS_IFACE_TABLE);
        static MD: ConfigDesc = ConfigDesc::of::<IbMdConfig>(c"IB memory domain", c"IB_", &IB_MD_TABLE);
        let opts = config::read(&DESC, None).expect("rc_verbs table parses");
        // SAFETY: `opts` was just read from DESC and is released below.
        let c: &RcVerbsIfaceConfig = unsafe { Parsed::from_ptr(opts).expect("ours").as_typed() };
        assert_eq!((c.ib().tx_queue_len(), c.ib().rx_queue_len(), c.ib().seg_size()), (256, 4095, 8256));
        assert_eq!((c.ib().tx_min_inline(), c.ib().tx_inline_resp(), c.ib().tx_min_sge()), (64, 64, 5));
        assert_eq!((c.ib().rx_max_batch(), c.ib().max_num_eps()), (16, 256));
        assert_eq!(c.ib().rx_pool_grow(), 4505);
        assert_eq!(crate::transports::ib::rc::params::RcParams::from_config(c).map(|p| p.rx_pool_grow), Ok(4505));
        assert_eq!((c.ib().path_mtu(), c.ib().sl(), c.ib().pkey(), c.ib().num_paths()), (None, 0, None, None));
        assert_eq!(c.ib().traffic_class(true), 106);
        assert_eq!((c.tx_max_wr(), c.tx_moderation(), c.short_desc_size()), (256, 64, 128));
        assert_eq!((c.common().timeout_code(), c.common().rnr_timer_code()), (18, 13));
        assert_eq!((c.common().retry_count(), c.common().rnr_retry_count()), (7, 7));
        assert_eq!(c.common().max_rd_atomic(16), Ok(16));
        assert_eq!(c.common().max_get_zcopy(1 << 30), 1 << 30);
        assert_eq!(c.common().max_get_bytes(), None);
        assert_eq!(c.common().fence_mode(), FenceMode::Weak);
        assert_eq!(c.rc().tx_cq_len(), 4096);
        assert_eq!(c.rc().fc(), Ok(FcParams { enabled: true, wnd_size: 512, hard_thresh: 128, soft_thresh: 256 }));
        assert!(!c.flush_by_fc("softrdma0") && c.flush_by_fc("mthca0"));
        assert_eq!(c.ib().check_pools(), Ok(()));
        // the default ECE keeps the device's default: an interface opens on
        // a device without ECE; "inf" or a value asks for more and is
        // refused there ("auto" keeps the default from 1.14, and 0 up to
        // 1.21)
        assert_eq!(c.common().check_ece("softrdma0"), Ok(()));
        let r = crate::ucs::release::running();
        if r.since(14) {
            assert!(release::ece_usable_without_support(crate::core::config::UNITS_AUTO));
            assert_eq!(release::ece_usable_without_support(0), !r.since(22));
            assert!(!release::ece_usable_without_support(crate::core::config::UNITS_INF));
            assert!(!release::ece_usable_without_support(5));
        }
        // SAFETY: read above, not used after this.
        assert_eq!(unsafe { config::release(opts) }, UCS_OK);

        let opts = config::read(&MD, None).expect("ib md table parses");
        // SAFETY: as above.
        let m: &IbMdConfig = unsafe { Parsed::from_ptr(opts).expect("ours").as_typed() };
        assert_eq!(m.relaxed_order(), RelaxedOrder::Auto);
        assert_eq!(m.fork_init(), Some(false));
        assert_eq!(m.gid_index(), None);
        assert_eq!(m.subnet_prefix(), None);
        assert_eq!(m.reg_cost().0, 16e-6);
        if release::md_table_has_reg_methods() {
            let mut want = vec!["rcache".to_string(), "odp".into(), "direct".into()];
            if crate::ucs::release::running().since(15) {
                want.remove(1);
            }
            assert_eq!((m.reg_methods(), m.rcache.addr_align), (want, 16));
        }
        // SAFETY: as above.
        assert_eq!(unsafe { config::release(opts) }, UCS_OK);
    }
}
