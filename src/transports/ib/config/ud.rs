//! The `ud_verbs` interface table (`UCX_UD_VERBS_*`) and what a UD
//! transport reads from it.
//!
//! Nesting (outermost first), as in UCX 1.13.1 (`ud_iface.c`,
//! `ud_iface_common.c`, `ud_verbs.c`):
//! - `UD_VERBS_`: [`UdVerbsIfaceConfig`], whose only row embeds the UD table
//!   under `UD_` (1.18+: with ud_verbs' own send overhead, see
//!   [`release::ud_verbs_ud_defaults()`]);
//! - [`UdIfaceConfig`]: the IB interface table under `IB_` (no overridden
//!   defaults: UD keeps `MAX_NUM_EPS=inf`, `SEG_SIZE=8K`,
//!   `RX_QUEUE_LEN=4096`), then [`UdIfaceCommonConfig`] under `UD_`, then
//!   UD's reliability settings (timeouts, timers, window);
//! - [`UdIfaceCommonConfig`]: the settings every UD flavour shares.
//!
//! So a key is found as `UCX_UD_VERBS_X`, `UCX_UD_X` or `UCX_IB_X`, the
//! most specific spelling winning, as for rc_verbs.

use super::{release, IbIfaceConfig, IB_IFACE_TABLE};
use crate::abi::*;
use crate::core::config::{embed_with_defaults, field, parser, Table};
use libc::{c_int, c_uint};
use once_cell::sync::Lazy;
use std::ffi::CStr;
use std::mem::offset_of;

/// The ud_verbs transport's config name and prefix (`UCX_UD_VERBS_*`).
pub const UD_VERBS_CONFIG_NAME: &CStr = c"ud_verbs transport";
pub const UD_VERBS_CONFIG_PREFIX: &CStr = c"UD_VERBS_";

/// Smallest and largest allowed `MAX_WINDOW` (packets a sender may have
/// unacknowledged per endpoint); the default is the largest.
pub const UD_MIN_WINDOW: u32 = 2;
pub const UD_MAX_WINDOW: u32 = 1025;
/// Sends posted between two signalled ones: the send queue must be longer
/// than this (`ud_def.h`, `ud_iface.c:463-468` at v1.13.1).
pub const UD_TX_MODERATION: u32 = 64;
/// Below this receive batch UCX warns that performance suffers.
pub const UD_RX_BATCH_MIN: u32 = 8;
/// The least retransmission back-off factor.
pub const UD_MIN_TIMER_BACKOFF: f64 = 1.0;

/// Settings shared by every UD transport (`UCX_UD_RX_QUEUE_LEN_INIT`).
#[repr(C)]
pub struct UdIfaceCommonConfig {
    /// Receive buffers posted when the interface is created, before it is
    /// activated (the rest of the queue follows on activation).
    pub rx_queue_len_init: c_uint,
}

/// The UD settings (`UCX_UD_*`) on top of the IB interface settings.
#[repr(C)]
pub struct UdIfaceConfig {
    pub ib: IbIfaceConfig,
    pub ud_common: UdIfaceCommonConfig,
    /// How long a closed connection is kept internally (seconds), so that
    /// late packets of the peer are still acknowledged.
    pub linger_timeout: f64,
    /// A peer that has not acknowledged for this long is unreachable (seconds).
    pub peer_timeout: f64,
    /// First retransmission timeout (seconds).
    pub timer_tick: f64,
    /// Each retransmission multiplies the timeout by this (at least 1).
    pub timer_backoff: f64,
    /// Period of the asynchronous timer (seconds).
    pub event_timer_tick: f64,
    /// Least interval between two solicited acknowledgement requests that
    /// wake up a peer not calling progress (seconds).
    pub min_poke_time: f64,
    /// On Ethernet, drop packets whose destination GID is not ours.
    pub dgid_check: c_int,
    /// Largest congestion-avoidance window (packets).
    pub max_window: c_uint,
    /// Most receive completions taken by one poll from the async context.
    pub rx_async_max_poll: c_uint,
}

/// The ud_verbs settings (`UCX_UD_VERBS_*`): UCX gives ud_verbs no keys of
/// its own, only the UD table embedded at offset 0.
#[repr(C)]
pub struct UdVerbsIfaceConfig {
    pub ud: UdIfaceConfig,
}

/// `UCX_UD_*` shared by every UD transport.
pub static UD_IFACE_COMMON_TABLE: Lazy<Table> = Lazy::new(|| {
    Table::new(vec![field(c"RX_QUEUE_LEN_INIT", c"128",
                          c"Receive buffers posted when the interface is created, before it is activated",
                          offset_of!(UdIfaceCommonConfig, rx_queue_len_init), parser::uint())])
});

/// `UCX_UD_*`: the UD interface table.
pub static UD_IFACE_TABLE: Lazy<Table> = Lazy::new(|| {
    Table::new(vec![
        embed_with_defaults(c"IB_", c"", &IB_IFACE_TABLE, offset_of!(UdIfaceConfig, ib)),
        embed_with_defaults(c"UD_", c"", &UD_IFACE_COMMON_TABLE, offset_of!(UdIfaceConfig, ud_common)),
        field(c"LINGER_TIMEOUT", c"5.0m",
              c"How long a closed connection is kept internally, to answer the peer's late packets",
              offset_of!(UdIfaceConfig, linger_timeout), parser::time()),
        field(c"TIMEOUT", c"30s", c"A peer that sends no acknowledgement for this long is considered unreachable",
              offset_of!(UdIfaceConfig, peer_timeout), parser::time()),
        field(c"TIMER_TICK", c"10ms", c"Timeout of the first retransmission",
              offset_of!(UdIfaceConfig, timer_tick), parser::time()),
        field(c"TIMER_BACKOFF", c"2.0", c"Factor by which each retransmission lengthens the timeout (at least 1.0)",
              offset_of!(UdIfaceConfig, timer_backoff), parser::double()),
        field(c"ASYNC_TIMER_TICK", c"100ms", c"Period of the asynchronous timer",
              offset_of!(UdIfaceConfig, event_timer_tick), parser::time()),
        field(c"MIN_POKE_TIME", c"250ms",
              c"Least interval between two acknowledgement requests with the solicited flag, which\n\
                wake up a peer that is not calling progress. Short intervals cost performance,\n\
                very long ones delay recovery from lost packets.",
              offset_of!(UdIfaceConfig, min_poke_time), parser::time()),
        field(c"ETH_DGID_CHECK", c"y",
              c"On Ethernet, drop received packets whose destination GID is not the interface's",
              offset_of!(UdIfaceConfig, dgid_check), parser::boolean()),
        field(c"MAX_WINDOW", c"1025", c"Largest congestion-avoidance window, from 2 to 1025 packets",
              offset_of!(UdIfaceConfig, max_window), parser::uint()),
        field(c"RX_ASYNC_MAX_POLL", c"64",
              c"Most receive completions taken per poll from the asynchronous context",
              offset_of!(UdIfaceConfig, rx_async_max_poll), parser::uint()),
    ])
});

/// `UCX_UD_VERBS_*`: the ud_verbs interface table.
pub static UD_VERBS_IFACE_TABLE: Lazy<Table> = Lazy::new(|| {
    Table::new(vec![embed_with_defaults(c"UD_", release::ud_verbs_ud_defaults(), &UD_IFACE_TABLE,
                                        offset_of!(UdVerbsIfaceConfig, ud))])
});

/// The reliability parameters of a UD interface, checked as UCX checks
/// them when it opens one (`ud_iface.c:463-536` at v1.13.1). Times are in
/// seconds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct UdParams {
    /// Send queue length (more than [`UD_TX_MODERATION`]).
    pub tx_qp_len: u32,
    /// Receive queue length.
    pub rx_queue_len: u32,
    /// Receive buffers posted at creation: `RX_QUEUE_LEN_INIT`, at most the
    /// queue length; the rest (the quota) is posted on activation.
    pub rx_initial: u32,
    /// Congestion-avoidance window limit.
    pub max_window: u32,
    pub peer_timeout: f64,
    pub linger_timeout: f64,
    pub min_poke_time: f64,
    pub timer_tick: f64,
    pub timer_backoff: f64,
    pub async_tick: f64,
    pub rx_async_max_poll: u32,
}

impl UdIfaceConfig {
    pub fn ib(&self) -> &IbIfaceConfig {
        &self.ib
    }
    /// Receive buffers posted at creation (`RX_QUEUE_LEN_INIT`, at most
    /// `RX_QUEUE_LEN`, `ud_iface.c:561-563`).
    pub fn rx_initial(&self) -> u32 {
        self.ud_common.rx_queue_len_init.min(self.ib.rx_queue_len())
    }
    /// Receive buffers posted on activation, after [`Self::rx_initial`].
    pub fn rx_quota(&self) -> u32 {
        self.ib.rx_queue_len() - self.rx_initial()
    }
    /// Bounce buffer size on a port of `mtu` bytes: the smaller of the two
    /// (a datagram never exceeds the path MTU, `ud_iface.c:478`).
    pub fn seg_size(&self, mtu: usize) -> usize {
        self.ib.seg_size().min(mtu)
    }
    /// `TIMEOUT`, seconds.
    pub fn peer_timeout(&self) -> f64 {
        self.peer_timeout
    }
    /// `LINGER_TIMEOUT`, seconds.
    pub fn linger_timeout(&self) -> f64 {
        self.linger_timeout
    }
    /// `MIN_POKE_TIME`, seconds.
    pub fn min_poke_time(&self) -> f64 {
        self.min_poke_time
    }
    /// `TIMER_TICK` (first retransmission timeout), seconds.
    pub fn timer_tick(&self) -> f64 {
        self.timer_tick
    }
    /// `TIMER_BACKOFF`.
    pub fn timer_backoff(&self) -> f64 {
        self.timer_backoff
    }
    /// `ASYNC_TIMER_TICK`, seconds.
    pub fn async_timer_tick(&self) -> f64 {
        self.event_timer_tick
    }
    /// `MAX_WINDOW`, unchecked (see [`Self::params`]).
    pub fn max_window(&self) -> u32 {
        self.max_window
    }
    pub fn rx_async_max_poll(&self) -> u32 {
        self.rx_async_max_poll
    }
    /// Whether received packets' destination GIDs are checked: only on
    /// RoCE ports, and only with `ETH_DGID_CHECK=y`.
    pub fn dgid_check(&self, is_roce: bool) -> bool {
        is_roce && self.dgid_check != 0
    }
    /// Whether the receive batch is below the size UCX warns about; warns
    /// (once per call) like the original does when an interface opens.
    pub fn warn_small_rx_batch(&self) -> bool {
        let batch = self.ib.rx_max_batch();
        if batch < UD_RX_BATCH_MIN {
            crate::warn!("receive batch {} is below {}: UD receive performance may suffer", batch, UD_RX_BATCH_MIN);
            return true;
        }
        false
    }
    /// The parameters, after UCX's checks in UCX's order: send queue longer
    /// than [`UD_TX_MODERATION`], window within [`UD_MIN_WINDOW`]..=
    /// [`UD_MAX_WINDOW`], timer tick above 0, back-off at least
    /// [`UD_MIN_TIMER_BACKOFF`], async tick above 0; otherwise an error line
    /// and `UCS_ERR_INVALID_PARAM`.
    pub fn params(&self) -> Result<UdParams, ucs_status_t> {
        let tx = self.ib.tx_queue_len();
        if tx <= UD_TX_MODERATION {
            crate::error!("UD send queue too short: TX_QUEUE_LEN={} must be above {}", tx, UD_TX_MODERATION);
            return Err(UCS_ERR_INVALID_PARAM);
        }
        if !(UD_MIN_WINDOW..=UD_MAX_WINDOW).contains(&self.max_window) {
            crate::error!("MAX_WINDOW={} is outside {}..{}", self.max_window, UD_MIN_WINDOW, UD_MAX_WINDOW);
            return Err(UCS_ERR_INVALID_PARAM);
        }
        // NaN is refused like a value out of range.
        if self.timer_tick.is_nan() || self.timer_tick <= 0.0 {
            crate::error!("TIMER_TICK must be above 0 (it is {})", self.timer_tick);
            return Err(UCS_ERR_INVALID_PARAM);
        }
        if self.timer_backoff.is_nan() || self.timer_backoff < UD_MIN_TIMER_BACKOFF {
            crate::error!("TIMER_BACKOFF must be at least {} (it is {})", UD_MIN_TIMER_BACKOFF, self.timer_backoff);
            return Err(UCS_ERR_INVALID_PARAM);
        }
        if self.event_timer_tick.is_nan() || self.event_timer_tick <= 0.0 {
            crate::error!("ASYNC_TIMER_TICK must be above 0 (it is {})", self.event_timer_tick);
            return Err(UCS_ERR_INVALID_PARAM);
        }
        Ok(UdParams {
            tx_qp_len: tx,
            rx_queue_len: self.ib.rx_queue_len(),
            rx_initial: self.rx_initial(),
            max_window: self.max_window,
            peer_timeout: self.peer_timeout,
            linger_timeout: self.linger_timeout,
            min_poke_time: self.min_poke_time,
            timer_tick: self.timer_tick,
            timer_backoff: self.timer_backoff,
            async_tick: self.event_timer_tick,
            rx_async_max_poll: self.rx_async_max_poll,
        })
    }
}

impl UdVerbsIfaceConfig {
    pub fn ud(&self) -> &UdIfaceConfig {
        &self.ud
    }
    pub fn ib(&self) -> &IbIfaceConfig {
        &self.ud.ib
    }
    /// Send and receive CQ lengths: the send and receive queue lengths
    /// (`ud_verbs.c:673-674`).
    pub fn cq_lens(&self) -> (u32, u32) {
        (self.ud.ib.tx_queue_len(), self.ud.ib.rx_queue_len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::config::{self, ConfigDesc, Parsed};
    use libc::c_void;

    static DESC: ConfigDesc = ConfigDesc::of::<UdVerbsIfaceConfig>(UD_VERBS_CONFIG_NAME, UD_VERBS_CONFIG_PREFIX,
                                                                   &UD_VERBS_IFACE_TABLE);

    /// The keys and defaults Debian's C UCX 1.13.1 prints for ud_verbs
    /// (`ucx_info -c | grep ^UCX_UD_VERBS_`).
    const UCX_1_13_LINES: &str = include_str!("../../../../tests/data/ucx-1.13.1-ud-verbs-config.txt");
    /// The keys of UCX 1.18.1's ud_verbs table, in order (from its sources).
    const UCX_1_18_KEYS: &str = include_str!("../../../../tests/data/ucx-1.18.1-ud-verbs-keys.txt");
    /// The lines C UCX 1.22.0 built with verbs prints (its ud_verbs lines
    /// among them); 1.19 adds `ROCE_REACHABILITY_MODE` after `ROCE_SUBNETS`.
    const UCX_1_22_LINES: &str = include_str!("../../../../tests/softrdma/expected/ucx_info-c.ib.c-1.22.0.txt");

    /// `opts` printed by libucs as `ucx_info -c` prints it.
    fn print(opts: *const c_void) -> String {
        // SAFETY: `opts` was parsed from the table printed.
        unsafe { crate::ucs::parser::print_opts(opts, Lazy::force(&UD_VERBS_IFACE_TABLE).as_ptr(), UD_VERBS_CONFIG_PREFIX) }
    }

    fn key_lines(text: &str) -> Vec<&str> {
        text.lines().filter(|l| l.starts_with("UCX_UD_VERBS_")).collect()
    }

    /// Every default parses through libucs, and the printed keys (1.13:
    /// with their values) are the original's, in its order.
    #[test]
    fn ud_verbs_table_matches_original() {
        let opts = config::read(&DESC, None).expect("ud_verbs table parses");
        let text = print(opts);
        let ours = key_lines(&text);
        let r = crate::ucs::release::running();
        if !r.since(14) {
            assert_eq!(ours, key_lines(UCX_1_13_LINES));
        }
        if r.since(22) {
            assert_eq!(ours, key_lines(UCX_1_22_LINES));
        }
        if r.since(18) {
            let names: Vec<&str> = ours.iter().map(|l| l.split('=').next().unwrap_or("")).collect();
            let mut want: Vec<&str> = UCX_1_18_KEYS.lines().filter(|l| !l.is_empty()).collect();
            if r.since(19) {
                let at = want.iter().position(|k| *k == "UCX_UD_VERBS_ROCE_SUBNETS").expect("1.18 key") + 1;
                want.insert(at, "UCX_UD_VERBS_ROCE_REACHABILITY_MODE");
            }
            assert_eq!(names, want);
            assert!(ours.iter().any(|l| l.starts_with("UCX_UD_VERBS_ALLOC=thp,mmap,heap")), "{text}");
        }
        // SAFETY: read above, not used after this.
        assert_eq!(unsafe { config::release(opts) }, UCS_OK);
    }

    /// The defaults as a UD transport reads them.
    #[test]
    fn ud_verbs_defaults() {
        let _ = UCX_1_13_LINES;
        let opts = config::read(&DESC, None).expect("ud_verbs table parses");
        // SAFETY: `opts` was just read from DESC and is released below.
        let c: &UdVerbsIfaceConfig = unsafe { Parsed::from_ptr(opts).expect("ours").as_typed() };
        let p = c.ud().params().expect("defaults pass UCX's checks");
        assert_eq!(p, UdParams { tx_qp_len: 256, rx_queue_len: 4096, rx_initial: 128, max_window: 1025,
                                 peer_timeout: 30.0, linger_timeout: 300.0, min_poke_time: 0.25, timer_tick: 0.01,
                                 timer_backoff: 2.0, async_tick: 0.1, rx_async_max_poll: 64 });
        assert_eq!(c.ud().rx_quota(), 4096 - 128);
        // The receive pool's chunk leaves room for buffers a user holds.
        assert_eq!(c.ib().rx_pool_grow(), 4506);
        assert_eq!((c.ud().seg_size(4096), c.ud().seg_size(1 << 20)), (4096, 8192));
        assert_eq!((c.ib().tx_min_inline(), c.ib().tx_min_sge(), c.ib().rx_max_batch()), (64, 5, 16));
        assert_eq!(c.ib().max_num_eps(), libc::c_ulong::MAX);
        assert_eq!(c.cq_lens(), (256, 4096));
        assert!(c.ud().dgid_check(true) && !c.ud().dgid_check(false));
        assert!(!c.ud().warn_small_rx_batch());
        assert_eq!(c.ib().check_pools(), Ok(()));
        // 1.18: ud_verbs' own interface overhead, 105 ns.
        if crate::ucs::release::running().since(18) {
            let o = &c.ib().send_overhead;
            assert_eq!((o.wqe_post.secs(), o.wqe_fetch.secs()), (Some(105e-9), Some(350e-9)));
        }
        // SAFETY: read above, not used after this.
        assert_eq!(unsafe { config::release(opts) }, UCS_OK);
    }

    /// Settings through the prefixes of the nesting (`UD_` for UD's rows,
    /// `IB_` or `UD_` for the IB part, as libucs matches names), and the
    /// checks.
    #[test]
    fn ud_verbs_settings_and_checks() {
        let opts = config::read(&DESC, None).expect("ud_verbs table parses");
        let set = |k: &CStr, v: &CStr| {
            // SAFETY: `opts` is live; the strings are NUL-terminated.
            let mut st = unsafe { config::modify(opts, k.as_ptr(), v.as_ptr()) };
            if st != UCS_OK {
                // From 1.17 a name may need the table's own prefix too.
                let full = std::ffi::CString::new([UD_VERBS_CONFIG_PREFIX.to_bytes(), k.to_bytes()].concat())
                    .expect("name");
                // SAFETY: as above.
                st = unsafe { config::modify(opts, full.as_ptr(), v.as_ptr()) };
            }
            st
        };
        // SAFETY: `opts` was read from DESC; released below.
        let c: &UdVerbsIfaceConfig = unsafe { Parsed::from_ptr(opts).expect("ours").as_typed() };
        assert_eq!(set(c"UD_TIMEOUT", c"2s"), UCS_OK);
        assert_eq!(set(c"UD_RX_QUEUE_LEN_INIT", c"8192"), UCS_OK);
        assert_eq!(set(c"IB_TX_QUEUE_LEN", c"1024"), UCS_OK);
        let p = c.ud().params().expect("valid");
        assert_eq!((p.peer_timeout, p.rx_initial, p.tx_qp_len), (2.0, 4096, 1024));
        assert_eq!(set(c"UD_MAX_WINDOW", c"1"), UCS_OK);
        assert_eq!(c.ud().params(), Err(UCS_ERR_INVALID_PARAM));
        assert_eq!(set(c"UD_MAX_WINDOW", c"2"), UCS_OK);
        assert_eq!(set(c"UD_TIMER_BACKOFF", c"0.5"), UCS_OK);
        assert_eq!(c.ud().params(), Err(UCS_ERR_INVALID_PARAM));
        assert_eq!(set(c"UD_TIMER_BACKOFF", c"1.0"), UCS_OK);
        assert_eq!(set(c"UD_TX_QUEUE_LEN", c"64"), UCS_OK);
        assert_eq!(c.ud().params(), Err(UCS_ERR_INVALID_PARAM));
        assert_ne!(set(c"UD_MAX_WINDOW", c"lots"), UCS_OK);
        // SAFETY: read above, not used after this.
        assert_eq!(unsafe { config::release(opts) }, UCS_OK);
    }
}
