//! The tcp connection manager's listener against hostile peers: a listener
//! opened through the exported API on 127.0.0.1 (ephemeral port), raw
//! sockets speaking (and breaking) its wire format. After every case: the
//! callbacks were called as the protocol allows (a connection request at
//! most once per connection and only for a whole, valid request; the
//! notify callback with UCS_OK only for a valid notification), the
//! process's descriptors are back to their count before the case, and a
//! well-behaved client still completes the whole exchange.
//!
//! One test function: the descriptor counts are per process, and the
//! cases must not overlap.

use std::ffi::{c_void, CStr};
use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::ptr::{null, null_mut};
use std::sync::Mutex;
use std::time::{Duration, Instant};
use ::uct::abi::*;
use ::uct::ffi::cm::*;
use ::uct::ffi::config::*;
use ::uct::ffi::ep::*;
use ::uct::ffi::worker::*;

mod common;
use common::*;

const HDR_LEN: usize = 16;
/// The handshake timeout the tests configure.
const TIMEOUT: Duration = Duration::from_millis(300);
const SERVER_DATA: &[u8] = b"server private data";

#[derive(Default)]
struct Seen {
    conn_req: usize,
    /// Private-data lengths the listener callback was given.
    req_lens: Vec<usize>,
    notify_ok: usize,
    notify_err: usize,
    disconnect: usize,
    /// Server endpoints created from requests (destroyed by each case).
    eps: Vec<usize>,
    /// Requests kept unanswered (mode `defer`).
    deferred: Vec<usize>,
    defer: bool,
    cm: usize,
}

static SEEN: Mutex<Option<Seen>> = Mutex::new(None);

fn seen<R>(f: impl FnOnce(&mut Seen) -> R) -> R {
    let mut g = SEEN.lock().unwrap_or_else(|e| e.into_inner());
    f(g.get_or_insert_with(Seen::default))
}

unsafe extern "C" fn on_notify(_ep: uct_ep_h, _arg: *mut c_void, args: *const uct_cm_ep_server_conn_notify_args_t) {
    // SAFETY: the library passes valid arguments for the call's duration.
    let status = unsafe { (*args).status };
    seen(|s| if status == UCS_OK { s.notify_ok += 1 } else { s.notify_err += 1 });
}

unsafe extern "C" fn on_disconnect(_ep: uct_ep_h, _arg: *mut c_void) {
    seen(|s| s.disconnect += 1);
}

fn server_ep_create(cm: uct_cm_h, req: uct_conn_request_h) -> Result<uct_ep_h, ucs_status_t> {
    // SAFETY: plain data; all-zero is "no field set".
    let mut p: uct_ep_params_t = unsafe { std::mem::zeroed() };
    p.field_mask = UCT_EP_PARAM_FIELD_CM | UCT_EP_PARAM_FIELD_CONN_REQUEST | UCT_EP_PARAM_FIELD_SOCKADDR_CB_FLAGS
        | UCT_EP_PARAM_FIELD_SOCKADDR_NOTIFY_CB_SERVER | UCT_EP_PARAM_FIELD_SOCKADDR_DISCONNECT_CB
        | UCT_EP_PARAM_FIELD_PRIV_DATA | UCT_EP_PARAM_FIELD_PRIV_DATA_LENGTH;
    p.cm = cm;
    p.conn_request = req;
    p.sockaddr_cb_flags = UCT_CB_FLAG_ASYNC;
    p.sockaddr_cb_server = Some(on_notify);
    p.disconnect_cb = Some(on_disconnect);
    p.private_data = SERVER_DATA.as_ptr() as *const c_void;
    p.private_data_length = SERVER_DATA.len();
    let mut ep = null_mut();
    // SAFETY: the parameters are complete for a server endpoint; `req`
    // came from the listener callback (or is refused by the library).
    match unsafe { uct_ep_create(&p, &mut ep) } {
        UCS_OK => Ok(ep),
        s => Err(s),
    }
}

unsafe extern "C" fn on_conn_request(_l: uct_listener_h, _arg: *mut c_void,
                                     args: *const uct_cm_listener_conn_request_args_t) {
    // SAFETY: the library passes valid arguments for the call's duration,
    // with the remote data filled (its field mask says so).
    let (req, len) = unsafe { ((*args).conn_request, (*(*args).remote_data).conn_priv_data_length) };
    let (defer, cm) = seen(|s| {
        s.conn_req += 1;
        s.req_lens.push(len);
        (s.defer, s.cm)
    });
    if defer {
        seen(|s| s.deferred.push(req as usize));
        return;
    }
    // (No lock held: the library may call back.)
    let r = server_ep_create(cm as uct_cm_h, req);
    seen(|s| match r {
        Ok(ep) => s.eps.push(ep as usize),
        Err(st) => panic!("server uct_ep_create failed: {st}"),
    });
}

struct Server {
    async_: *mut ucs_async_context_t,
    worker: uct_worker_h,
    cm: uct_cm_h,
    listener: uct_listener_h,
    addr: SocketAddr,
    max_priv: usize,
}

impl Server {
    fn new(settings: &[(&CStr, &CStr)]) -> Server {
        let (async_, worker) = new_worker();
        let comp = component("tcp");
        let mut cfg = null_mut();
        // SAFETY: a component of this library; the out-pointer is a local.
        assert_eq!(unsafe { uct_cm_config_read(comp, null(), null(), &mut cfg) }, UCS_OK);
        for (k, v) in settings {
            // SAFETY: `cfg` was just read.
            assert_eq!(unsafe { config_modify(cfg as *mut c_void, "TCP_CM_", k, v) }, UCS_OK, "{k:?}");
        }
        let mut cm = null_mut();
        // SAFETY: live worker, config of this component, local out-pointer.
        assert_eq!(unsafe { uct_cm_open(comp, worker, cfg, &mut cm) }, UCS_OK);
        // SAFETY: ours, not used again.
        unsafe { uct_config_release(cfg as *mut c_void) };
        // SAFETY: plain data.
        let mut attr: uct_cm_attr_t = unsafe { std::mem::zeroed() };
        attr.field_mask = UCT_CM_ATTR_FIELD_MAX_CONN_PRIV;
        // SAFETY: open CM, local attributes.
        assert_eq!(unsafe { uct_cm_query(cm, &mut attr) }, UCS_OK);
        seen(|s| s.cm = cm as usize);
        let sin = libc::sockaddr_in {
            sin_family: libc::AF_INET as libc::sa_family_t,
            sin_port: 0,
            sin_addr: libc::in_addr { s_addr: u32::from_ne_bytes([127, 0, 0, 1]) },
            sin_zero: [0; 8],
        };
        let lp = uct_listener_params_t {
            field_mask: UCT_LISTENER_PARAM_FIELD_CONN_REQUEST_CB,
            backlog: 0,
            conn_request_cb: Some(on_conn_request),
            user_data: null_mut(),
        };
        let mut listener = null_mut();
        // SAFETY: open CM; the address is a local sockaddr_in of that size.
        assert_eq!(unsafe {
            uct_listener_create(cm, &sin as *const _ as *const libc::sockaddr,
                                std::mem::size_of_val(&sin) as libc::socklen_t, &lp, &mut listener)
        }, UCS_OK);
        // SAFETY: plain data.
        let mut la: uct_listener_attr_t = unsafe { std::mem::zeroed() };
        la.field_mask = UCT_LISTENER_ATTR_FIELD_SOCKADDR;
        // SAFETY: live listener, local attributes.
        assert_eq!(unsafe { uct_listener_query(listener, &mut la) }, UCS_OK);
        // SAFETY: the listener is AF_INET, so the storage holds a sockaddr_in.
        let port = u16::from_be(unsafe { (*(&la.sockaddr as *const _ as *const libc::sockaddr_in)).sin_port });
        Server { async_, worker, cm, listener, addr: SocketAddr::from(([127, 0, 0, 1], port)), max_priv: attr.max_conn_priv }
    }

    fn progress(&self) {
        // SAFETY: the worker lives as long as the server; one thread.
        unsafe { worker_progress(self.worker) };
    }

    #[track_caller]
    fn progress_until(&self, what: &str, mut f: impl FnMut() -> bool) {
        let start = Instant::now();
        while !f() {
            self.progress();
            assert!(start.elapsed() < Duration::from_secs(10), "timed out waiting for {what}");
            std::thread::sleep(Duration::from_micros(200));
        }
    }

    fn progress_for(&self, d: Duration) {
        let start = Instant::now();
        while start.elapsed() < d {
            self.progress();
            std::thread::sleep(Duration::from_micros(200));
        }
    }

    /// Destroy the server endpoints the cases created.
    fn destroy_eps(&self) {
        let eps = seen(|s| std::mem::take(&mut s.eps));
        for ep in eps {
            // SAFETY: created by uct_ep_create and destroyed once.
            unsafe { uct_ep_destroy(ep as uct_ep_h) };
        }
    }

    /// Whether the server closed (or reset) the connection of `c`.
    fn closed_by_server(&self, c: &mut TcpStream) -> bool {
        c.set_nonblocking(true).unwrap();
        let mut b = [0u8; 256];
        let start = Instant::now();
        loop {
            self.progress();
            match c.read(&mut b) {
                Ok(0) => return true,
                Ok(_) => {}
                Err(e) if e.kind() == ErrorKind::WouldBlock => {}
                Err(_) => return true,
            }
            if start.elapsed() > Duration::from_secs(5) {
                return false;
            }
            std::thread::sleep(Duration::from_micros(200));
        }
    }

    /// Read one whole message of the server's from `c`.
    fn read_msg(&self, c: &mut TcpStream) -> (usize, i8, Vec<u8>) {
        c.set_nonblocking(true).unwrap();
        let mut buf = Vec::new();
        let mut b = [0u8; 4096];
        let start = Instant::now();
        loop {
            if buf.len() >= HDR_LEN {
                let len = u64::from_ne_bytes(buf[..8].try_into().unwrap()) as usize;
                if buf.len() >= HDR_LEN + len {
                    return (len, buf[8] as i8, buf[HDR_LEN..HDR_LEN + len].to_vec());
                }
            }
            self.progress();
            match c.read(&mut b) {
                Ok(0) => panic!("server closed the connection after {} bytes", buf.len()),
                Ok(n) => buf.extend_from_slice(&b[..n]),
                Err(e) if e.kind() == ErrorKind::WouldBlock => std::thread::sleep(Duration::from_micros(200)),
                Err(e) => panic!("read: {e}"),
            }
            assert!(start.elapsed() < Duration::from_secs(10), "no answer from the server");
        }
    }

    /// A well-behaved client, all through: request, answer, notification,
    /// then its disconnect.
    #[track_caller]
    fn legit_client(&self) {
        let before = seen(|s| (s.conn_req, s.notify_ok, s.disconnect));
        let mut c = TcpStream::connect(self.addr).unwrap();
        c.write_all(&msg(b"legit client data", 0)).unwrap();
        let (_, status, data) = self.read_msg(&mut c);
        assert_eq!((status, data.as_slice()), (0, SERVER_DATA));
        assert_eq!(seen(|s| (s.conn_req, s.req_lens.last().copied())), (before.0 + 1, Some(17)));
        c.write_all(&msg(&[], 0)).unwrap();
        self.progress_until("the notification", || seen(|s| s.notify_ok) == before.1 + 1);
        drop(c);
        self.progress_until("the disconnect", || seen(|s| s.disconnect) == before.2 + 1);
        self.destroy_eps();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.destroy_eps();
        // SAFETY: created in `new`, destroyed once, in reverse order.
        unsafe {
            uct_listener_destroy(self.listener);
            uct_cm_close(self.cm);
            uct_worker_destroy(self.worker);
            ucs_async_context_destroy(self.async_);
        }
    }
}

/// A message in the sockcm wire format: header {length, status} + data.
fn msg(data: &[u8], status: i8) -> Vec<u8> {
    let mut v = vec![0u8; HDR_LEN];
    v[..8].copy_from_slice(&(data.len() as u64).to_ne_bytes());
    v[8] = status as u8;
    v.extend_from_slice(data);
    v
}

/// A header announcing `length` bytes, without them.
fn hdr(length: u64, status: i8) -> Vec<u8> {
    let mut v = vec![0u8; HDR_LEN];
    v[..8].copy_from_slice(&length.to_ne_bytes());
    v[8] = status as u8;
    v
}

/// SO_LINGER {on, 0}: closing sends a reset.
fn set_linger_zero(c: &TcpStream) {
    use std::os::fd::AsRawFd;
    let l = libc::linger { l_onoff: 1, l_linger: 0 };
    // SAFETY: a live socket; the option value is a local of its size.
    let r = unsafe {
        libc::setsockopt(c.as_raw_fd(), libc::SOL_SOCKET, libc::SO_LINGER, &l as *const _ as *const c_void,
                         std::mem::size_of_val(&l) as libc::socklen_t)
    };
    assert_eq!(r, 0);
}

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").map(|d| d.count()).unwrap_or(0)
}

fn rss_kb() -> usize {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines().find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1)).and_then(|v| v.parse().ok()).unwrap_or(0)
}

/// Run `case` and check the callbacks (how many connection requests and
/// successful notifications it may cause), the descriptors afterwards, and
/// a legitimate client.
#[track_caller]
fn check_case(srv: &Server, name: &str, (conn_req, notify_ok): (usize, usize), case: impl FnOnce(&Server)) {
    let fds = open_fds();
    let before = seen(|s| (s.conn_req, s.notify_ok));
    case(srv);
    srv.destroy_eps();
    // The server may still be closing what the case left.
    let start = Instant::now();
    while open_fds() > fds && start.elapsed() < TIMEOUT * 4 {
        srv.progress();
        std::thread::sleep(Duration::from_millis(1));
    }
    let after = seen(|s| (s.conn_req, s.notify_ok));
    assert_eq!(after.0 - before.0, conn_req, "{name}: connection requests");
    assert_eq!(after.1 - before.1, notify_ok, "{name}: notify callbacks with UCS_OK");
    assert_eq!(open_fds(), fds, "{name}: descriptors back to their count");
    srv.legit_client();
    assert_eq!(open_fds(), fds, "{name}: descriptors after the legitimate client");
    eprintln!("case ok: {name}");
}

#[test]
fn listener_survives_hostile_peers() {
    handshake_timeout_setting();
    let srv = Server::new(&[(c"HANDSHAKE_TIMEOUT", c"300ms")]);
    let max = srv.max_priv;
    assert!(max >= 2048, "max_conn_priv {max}");
    srv.legit_client();

    check_case(&srv, "length one over the maximum", (0, 0), |srv| {
        let mut c = TcpStream::connect(srv.addr).unwrap();
        c.write_all(&hdr(max as u64 + 1, 0)).unwrap();
        assert!(srv.closed_by_server(&mut c));
    });
    check_case(&srv, "length 2^64-1", (0, 0), |srv| {
        let mut c = TcpStream::connect(srv.addr).unwrap();
        c.write_all(&hdr(u64::MAX, 0)).unwrap();
        assert!(srv.closed_by_server(&mut c));
    });
    check_case(&srv, "the maximum is allowed", (1, 0), |srv| {
        let mut c = TcpStream::connect(srv.addr).unwrap();
        c.write_all(&msg(&vec![7u8; max], 0)).unwrap();
        let (_, status, _) = srv.read_msg(&mut c);
        assert_eq!(status, 0);
        assert_eq!(seen(|s| s.req_lens.last().copied()), Some(max));
    });
    check_case(&srv, "request with an error status", (0, 0), |srv| {
        let mut c = TcpStream::connect(srv.addr).unwrap();
        c.write_all(&msg(b"abc", UCS_ERR_REJECTED)).unwrap();
        assert!(srv.closed_by_server(&mut c));
    });
    check_case(&srv, "truncated header, then close", (0, 0), |srv| {
        let mut c = TcpStream::connect(srv.addr).unwrap();
        c.write_all(&hdr(100, 0)[..7]).unwrap();
        srv.progress_for(Duration::from_millis(20));
    });
    check_case(&srv, "truncated private data, then close", (0, 0), |srv| {
        let mut c = TcpStream::connect(srv.addr).unwrap();
        let m = msg(&[1u8; 100], 0);
        c.write_all(&m[..HDR_LEN + 40]).unwrap();
        srv.progress_for(Duration::from_millis(20));
    });
    check_case(&srv, "stalled in the header: handshake timeout", (0, 0), |srv| {
        let mut c = TcpStream::connect(srv.addr).unwrap();
        c.write_all(&hdr(100, 0)[..5]).unwrap();
        srv.progress_for(TIMEOUT / 3);
        let t = Instant::now();
        assert!(srv.closed_by_server(&mut c));
        assert!(t.elapsed() < TIMEOUT * 3, "closed after {:?}", t.elapsed());
    });
    check_case(&srv, "stalled in the private data: handshake timeout", (0, 0), |srv| {
        let mut c = TcpStream::connect(srv.addr).unwrap();
        c.write_all(&msg(&[1u8; 100], 0)[..HDR_LEN + 99]).unwrap();
        assert!(srv.closed_by_server(&mut c));
    });
    check_case(&srv, "silent: handshake timeout", (0, 0), |srv| {
        let mut c = TcpStream::connect(srv.addr).unwrap();
        assert!(srv.closed_by_server(&mut c));
    });
    check_case(&srv, "data right after the request", (0, 0), |srv| {
        let mut c = TcpStream::connect(srv.addr).unwrap();
        let mut m = msg(b"request", 0);
        m.extend_from_slice(b"junk");
        c.write_all(&m).unwrap();
        assert!(srv.closed_by_server(&mut c));
    });
    check_case(&srv, "two requests in one write", (0, 0), |srv| {
        let mut c = TcpStream::connect(srv.addr).unwrap();
        let mut m = msg(b"first", 0);
        m.extend_from_slice(&msg(b"second", 0));
        c.write_all(&m).unwrap();
        assert!(srv.closed_by_server(&mut c));
    });
    check_case(&srv, "data while the request waits for its answer", (1, 0), |srv| {
        seen(|s| s.defer = true);
        let mut c = TcpStream::connect(srv.addr).unwrap();
        c.write_all(&msg(b"request", 0)).unwrap();
        srv.progress_until("the request", || !seen(|s| s.deferred.is_empty()));
        c.write_all(&msg(b"second request", 0)).unwrap();
        assert!(srv.closed_by_server(&mut c));
        seen(|s| s.defer = false);
        let req = seen(|s| s.deferred.pop()).unwrap();
        // The request is spent: the endpoint cannot be created any more.
        assert!(server_ep_create(srv.cm, req as uct_conn_request_h).is_err());
    });
    check_case(&srv, "a second request instead of the notification", (1, 0), |srv| {
        let n = seen(|s| s.notify_err);
        let mut c = TcpStream::connect(srv.addr).unwrap();
        c.write_all(&msg(b"request", 0)).unwrap();
        srv.read_msg(&mut c);
        c.write_all(&msg(b"request again", 0)).unwrap();
        assert!(srv.closed_by_server(&mut c));
        assert_eq!(seen(|s| s.notify_err), n + 1, "the notify callback reports the failure");
    });
    check_case(&srv, "notification with an error status", (1, 0), |srv| {
        let mut c = TcpStream::connect(srv.addr).unwrap();
        c.write_all(&msg(b"request", 0)).unwrap();
        srv.read_msg(&mut c);
        c.write_all(&msg(&[], UCS_ERR_NO_MEMORY)).unwrap();
        assert!(srv.closed_by_server(&mut c));
    });
    {
        let (ok, disc) = seen(|s| (s.notify_ok, s.disconnect));
        let mut c = TcpStream::connect(srv.addr).unwrap();
        c.write_all(&msg(b"request", 0)).unwrap();
        srv.read_msg(&mut c);
        let mut two = msg(&[], 0);
        two.extend_from_slice(&msg(&[], 0));
        c.write_all(&two).unwrap();
        assert!(srv.closed_by_server(&mut c));
        assert_eq!(seen(|s| (s.notify_ok, s.disconnect)), (ok + 1, disc + 1), "second notification");
        drop(c);
        srv.destroy_eps();
        srv.legit_client();
        eprintln!("case ok: second notification");
    }
    check_case(&srv, "connect-and-drop flood", (0, 0), |srv| {
        for _ in 0..200 {
            drop(TcpStream::connect(srv.addr).unwrap());
        }
        srv.progress_for(Duration::from_millis(100));
    });
    check_case(&srv, "reset flood", (0, 0), |srv| {
        for i in 0..100 {
            let c = TcpStream::connect(srv.addr).unwrap();
            set_linger_zero(&c);
            if i % 2 == 0 {
                (&c).write_all(&hdr(50, 0)).unwrap();
            }
            drop(c);
        }
        srv.progress_for(Duration::from_millis(100));
    });
    check_case(&srv, "half-open flood (one legitimate client among them)", (1, 1), |srv| {
        let mut cs = Vec::new();
        for i in 0..200u64 {
            let mut c = TcpStream::connect(srv.addr).unwrap();
            // Every other one announces the most private data and sends
            // one byte of it: nothing is allocated for what never came.
            if i % 2 == 0 {
                let mut h = hdr(max as u64, 0);
                h.push(1);
                c.write_all(&h).unwrap();
            }
            cs.push(c);
        }
        let rss0 = rss_kb();
        srv.progress_for(TIMEOUT / 3);
        let grown = rss_kb().saturating_sub(rss0);
        eprintln!("half-open flood: {} connections accepted, RSS +{} KB", cs.len(), grown);
        assert!(grown < 200 * 2, "RSS grew {grown} KB for 200 pending connections");
        // While they wait, a legitimate client is served.
        srv.legit_client();
        for c in &mut cs {
            assert!(srv.closed_by_server(c));
        }
        for c in &cs {
            let _ = c.shutdown(Shutdown::Both);
        }
    });
}

fn handshake_timeout_setting() {
    let comp = component("tcp");
    for (v, ok) in [(c"5s", true), (c"inf", true), (c"auto", true), (c"10ms", true), (c"banana", false)] {
        let mut cfg = null_mut();
        // SAFETY: a component of this library; the out-pointer is a local.
        assert_eq!(unsafe { uct_cm_config_read(comp, null(), null(), &mut cfg) }, UCS_OK);
        let key = config_key("TCP_CM_", c"HANDSHAKE_TIMEOUT");
        // SAFETY: `cfg` was just read; key and value are C strings.
        let r = unsafe { uct_config_modify(cfg as *mut c_void, key.as_ptr(), v.as_ptr()) };
        assert_eq!(r == UCS_OK, ok, "{v:?}");
        // SAFETY: ours, not used again.
        unsafe { uct_config_release(cfg as *mut c_void) };
    }
}
