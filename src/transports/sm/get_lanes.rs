//! Which get lanes of this library a worker has open, for the performance
//! estimate of `posix_get`.
//!
//! libucp splits a rendezvous read over every lane whose bandwidth is
//! within `UCX_MULTI_LANE_MAX_RATIO` (4) of the fastest (from 1.16 its
//! protocols use `uct_iface_estimate_perf`; 1.14 and 1.15 take two
//! rendezvous rails by `uct_iface_query`). Between two processes of
//! this library, over `posix,cma`, that is `posix_get` and cma: both copies
//! are then made by the receiving core one after the other, and below 1 MiB
//! each part is too small for cma's split read (a 256 KiB `tag_bw` ran at
//! four fifths of cma alone; from 1 MiB the split was faster, but only for
//! buffers libucp allocated from posix, which `malloc`ed buffers and the
//! default allocation order with sysv selected are not).
//! While a cma interface is open on the same worker, `posix_get` therefore
//! reports a sixteenth of cma's bandwidth (it is listed after cma, so that
//! libucp has opened cma when it queries `posix_get`), which keeps cma the one
//! rendezvous lane, as it is on 1.13. Without cma,
//! `posix_get` estimates its own bandwidth.

use std::sync::Mutex;

/// Open cma interfaces: (worker address, bandwidth reported), one entry per
/// interface.
static CMA_IFACES: Mutex<Vec<(usize, f64)>> = Mutex::new(Vec::new());

/// How far below cma's bandwidth `posix_get` puts its estimate (beyond
/// libucp's default ratio of 4, and any ratio up to 16 a user sets).
pub const BELOW_CMA: f64 = 16.0;

fn list() -> std::sync::MutexGuard<'static, Vec<(usize, f64)>> {
    CMA_IFACES.lock().unwrap_or_else(|e| e.into_inner())
}

/// A cma interface reporting `bandwidth` opened on `worker`.
pub fn cma_opened(worker: usize, bandwidth: f64) {
    list().push((worker, bandwidth));
}

/// One cma interface of `worker` that reported `bandwidth` closed.
pub fn cma_closed(worker: usize, bandwidth: f64) {
    let mut l = list();
    if let Some(i) = l.iter().position(|&(w, b)| w == worker && b == bandwidth) {
        l.swap_remove(i);
    }
}

/// The bandwidth `posix_get` estimates on `worker`: its own, or a
/// sixteenth of the fastest cma interface open there if that is lower.
pub fn posix_get_bandwidth(worker: usize, own: f64) -> f64 {
    let cma = list().iter().filter(|&&(w, _)| w == worker).map(|&(_, b)| b).reduce(f64::max);
    match cma {
        Some(b) => own.min(b / BELOW_CMA),
        None => own,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn follows_the_cma_interfaces_of_the_worker() {
        let (w1, w2) = (0x1000usize, 0x2000usize);
        assert_eq!(posix_get_bandwidth(w1, 8e9), 8e9);
        cma_opened(w1, 11e9);
        cma_opened(w1, 16e9);
        assert_eq!(posix_get_bandwidth(w1, 8e9), 1e9);
        assert_eq!(posix_get_bandwidth(w2, 8e9), 8e9, "another worker's cma does not count");
        cma_closed(w1, 16e9);
        assert_eq!(posix_get_bandwidth(w1, 8e9), 11e9 / BELOW_CMA);
        cma_closed(w1, 11e9);
        assert_eq!(posix_get_bandwidth(w1, 8e9), 8e9);
    }
}
