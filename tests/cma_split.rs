//! The split gets of cma (`transports::sm::cma::assist`) between two real
//! processes: this test binary runs itself again as the owner of the memory
//! (`helper`, selected by CMA_SPLIT_HELPER), which prints the address of a
//! 1 MiB buffer with a known pattern.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use uct::transports::sm::cma::assist::{self, Outcome, SLOTS};

const LEN: usize = 1 << 20;

fn pattern(k: usize) -> u8 {
    (k % 251) as u8 ^ 0x5a
}

/// The owner's side, when this binary is run as the helper.
#[test]
fn helper() {
    let Ok(mode) = std::env::var("CMA_SPLIT_HELPER") else { return };
    let buf: Vec<u8> = (0..LEN).map(pattern).collect();
    let own = match mode.as_str() {
        "serve" | "idle" => Some(assist::own().expect("a ring")),
        "garbage" => {
            let fd = uct::sys::shm::memfd(c"uct-rs-cma-assist").expect("memfd");
            uct::sys::shm::ftruncate(&fd, 1 << 16).expect("ftruncate");
            std::mem::forget(fd);
            None
        }
        _ => None,
    };
    println!("ADDR {}", buf.as_ptr() as usize);
    let t0 = std::time::Instant::now();
    while t0.elapsed().as_secs() < 20 {
        match (&own, mode.as_str()) {
            (Some(o), "serve") => {
                o.serve();
            }
            _ => std::thread::sleep(std::time::Duration::from_millis(1)),
        }
    }
}

struct Helper {
    child: Child,
    addr: u64,
}

impl Helper {
    fn start(mode: &str) -> Helper {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "helper", "--nocapture", "--test-threads=1"])
            .env("CMA_SPLIT_HELPER", mode)
            .stdout(Stdio::piped())
            .spawn()
            .expect("the helper runs");
        let out = child.stdout.take().unwrap();
        let mut addr = 0;
        for line in BufReader::new(out).lines() {
            let line = line.unwrap();
            // (the harness may print on the same line first)
            if let Some(at) = line.find("ADDR ") {
                addr = line[at + 5..].trim().parse().unwrap();
                break;
            }
        }
        assert_ne!(addr, 0, "the helper printed its buffer");
        Helper { child, addr }
    }
    fn pid(&self) -> i32 {
        self.child.id() as i32
    }
    /// The helper's ring, which must check out.
    fn peer(&self) -> assist::Peer {
        assist::attach(self.pid(), start_time(self.pid())).expect("the helper's ring checks out")
    }
}

impl Drop for Helper {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_time(pid: i32) -> u64 {
    assist::start_time(pid)
}

fn me() -> (i32, u64) {
    let pid = uct::sys::getpid();
    (pid, start_time(pid))
}

#[test]
fn a_serving_owner_puts_the_second_half() {
    let h = Helper::start("serve");
    let peer = h.peer();
    let (pid, start) = me();
    for round in 0..20u64 {
        let mut dst = vec![0u8; LEN];
        let half = LEN / 2;
        let k = peer.post(dst.as_mut_ptr() as usize + half, h.addr + half as u64, LEN - half, pid, start)
            .expect("a free slot");
        // Give the owner the time our own half would take (and more: the
        // machine may be loaded), then collect.
        let t0 = std::time::Instant::now();
        while peer.served() < round + 1 && t0.elapsed().as_secs() < 10 {
            std::thread::sleep(std::time::Duration::from_micros(200));
        }
        assert_eq!(peer.finish(k, None), Outcome::Served, "round {round}");
        assert!(dst[..half].iter().all(|&b| b == 0), "round {round}: the first half is ours to read");
        assert!(dst[half..].iter().enumerate().all(|(i, &b)| b == pattern(half + i)), "round {round}");
    }
    assert!(peer.served() >= 20);
}

#[test]
fn an_owner_that_does_not_serve_costs_only_the_fallback() {
    let h = Helper::start("idle");
    let peer = h.peer();
    let (pid, start) = me();
    let mut dst = vec![0u8; LEN];
    // More requests than slots: each is taken back, so slots never run out.
    for _ in 0..SLOTS * 2 {
        let k = peer.post(dst.as_mut_ptr() as usize, h.addr, LEN, pid, start).expect("a free slot");
        assert_eq!(peer.finish(k, None), Outcome::NotServed);
    }
    assert!(dst.iter().all(|&b| b == 0));
    assert_eq!(peer.served(), 0);
}

#[test]
fn a_request_without_the_secret_is_refused() {
    let h = Helper::start("serve");
    let peer = assist::Peer::without_secret(h.pid(), start_time(h.pid())).expect("the ring opens");
    let (pid, start) = me();
    let mut dst = vec![0u8; LEN];
    for _ in 0..5 {
        let k = peer.post(dst.as_mut_ptr() as usize, h.addr, LEN, pid, start).expect("a free slot");
        // Time to serve it if the owner would (it must not).
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert_ne!(peer.finish(k, None), Outcome::Served);
    }
    assert!(dst.iter().all(|&b| b == 0), "nothing was written");
    assert_eq!(peer.served(), 0);
}

#[test]
fn a_request_from_a_wrong_start_time_is_refused() {
    let h = Helper::start("serve");
    let peer = h.peer();
    let (pid, start) = me();
    let mut dst = vec![0u8; LEN];
    let k = peer.post(dst.as_mut_ptr() as usize, h.addr, LEN, pid, start + 1).expect("a free slot");
    std::thread::sleep(std::time::Duration::from_millis(20));
    assert_ne!(peer.finish(k, None), Outcome::Served);
    assert_eq!(peer.served(), 0);
    assert!(dst.iter().all(|&b| b == 0), "nothing was written");
}

#[test]
fn no_ring_a_garbage_ring_or_a_wrong_start_time_is_not_attached() {
    let plain = Helper::start("none");
    assert!(assist::attach(plain.pid(), start_time(plain.pid())).is_none(), "a process without a ring");
    let bad = Helper::start("garbage");
    assert!(assist::attach(bad.pid(), start_time(bad.pid())).is_none(), "a ring that does not check out");
    let h = Helper::start("idle");
    assert!(assist::attach(h.pid(), start_time(h.pid()) + 1).is_none(), "another process's start time");
    assert!(assist::attach(uct::sys::getpid(), me().1).is_none(), "ourselves");
}
