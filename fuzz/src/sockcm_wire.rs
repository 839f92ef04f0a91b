//! `sockcm_wire`: the tcp connection manager's message decoding and the
//! receive side of its state machine (`uct::transports::tcp::sockcm::proto`).
//!
//! Input: byte 0 picks the private-data maximum, byte 1 the simulated
//! choices (read chunk sizes, whether the server answers a request), the
//! rest is what the peer sends. Checked:
//! - `parse`, for every kind of expected message, on the whole input and on
//!   prefixes: a decided message lies inside the input and is re-encoded
//!   to the same bytes (padding aside); an undecided input asks for more
//!   bytes, never beyond header + maximum; a refusal stays a refusal when
//!   more bytes follow; each message kind carries only what it may;
//! - `step`, driving a server and a client endpoint through the stream as
//!   the library does: a connection request is given at most once, and
//!   only first; a notification is reported at most once, with UCS_OK,
//!   only after the server answered; a client connects at most once.

use uct::abi::{ucs_status_t, UCS_ERR_REJECTED, UCS_OK};
use uct::transports::tcp::sockcm::proto::{decode_header, encode_msg, parse, st, step, Event, Expect, Parse,
                                          Violation, HDR_LEN};

const MAXES: [usize; 4] = [0, 7, 2064, 65536 + 16];
const KINDS: [Expect; 4] = [Expect::Request, Expect::Notify, Expect::Answer, Expect::Nothing];

pub fn run(data: &[u8]) {
    let (max, ctl, bytes) = match data {
        [a, b, rest @ ..] => (MAXES[(*a & 3) as usize], *b, rest),
        _ => (MAXES[2], 0, data),
    };
    for e in KINDS {
        check_parse(e, bytes, max);
    }
    run_server(bytes, max, ctl);
    run_client(bytes, max, ctl);
}

/// The invariants of one `parse` decision on `rx` and its neighbours.
fn check_parse(e: Expect, rx: &[u8], max: usize) {
    let p = parse(e, rx, max);
    match p {
        Parse::Need(n) => {
            assert!(n > 0, "{e:?}: Need(0)");
            assert!(rx.len() + n <= HDR_LEN + max, "{e:?}: asks for {n} more after {} (max {max})", rx.len());
            if !rx.is_empty() {
                // A prefix of an undecided input is undecided too.
                let q = parse(e, &rx[..rx.len() - 1], max);
                assert!(matches!(q, Parse::Need(m) if m == n + 1 || rx.len() - 1 < HDR_LEN), "{e:?}: {q:?}");
            }
        }
        Parse::Message { status, data, consumed } => {
            assert!(consumed <= rx.len() && consumed == HDR_LEN + data.len(), "{e:?}: consumed {consumed}");
            assert!(data.len() <= max, "{e:?}: {} bytes of data, max {max}", data.len());
            assert_eq!(data, &rx[HDR_LEN..consumed]);
            let h = decode_header(rx).expect("a message has a header");
            assert_eq!((h.length, h.status), (data.len() as u64, status));
            check_kind(e, status, data.len());
            // Re-encoding gives the same header fields and data, and is
            // decided the same way.
            let again = encode_msg(data, status);
            assert_eq!(&again[..9], &rx[..9]);
            assert_eq!(&again[HDR_LEN..], data);
            assert_eq!(parse(e, &again, max), Parse::Message { status, data, consumed });
            // Bytes after the message do not change it (the caller reads
            // exactly one message at a time).
            if consumed < rx.len() {
                assert_eq!(parse(e, &rx[..consumed], max), p);
            }
            // One byte short is undecided.
            assert_eq!(parse(e, &rx[..consumed - 1], max),
                       Parse::Need(if consumed - 1 < HDR_LEN { HDR_LEN - (consumed - 1) } else { 1 }));
        }
        Parse::Bad(v) => {
            check_violation(e, rx, max, v);
            // Decided on what is there: more bytes do not save it.
            let mut more = rx.to_vec();
            more.push(0);
            assert_eq!(parse(e, &more, max), p, "{e:?}: refusal not stable");
        }
    }
}

/// What each kind of message may carry.
fn check_kind(e: Expect, status: ucs_status_t, len: usize) {
    match e {
        Expect::Request => assert_eq!(status, UCS_OK),
        Expect::Notify => assert_eq!((status, len), (UCS_OK, 0)),
        Expect::Answer => {
            assert!(status == UCS_OK || (status == UCS_ERR_REJECTED && len == 0), "answer {status} {len}")
        }
        Expect::Nothing => panic!("a message where none is due"),
    }
}

/// A refusal is justified by the bytes.
fn check_violation(e: Expect, rx: &[u8], max: usize, v: Violation) {
    match v {
        Violation::Unexpected(k) => assert!(k == Expect::Nothing && e == Expect::Nothing && !rx.is_empty()),
        Violation::TooLong { length, max: m } => {
            assert_eq!(m, max);
            assert!(length > max as u64);
            assert_eq!(decode_header(rx).map(|h| h.length), Some(length));
        }
        Violation::BadStatus { expect, status } => {
            assert_eq!(expect, e);
            assert_eq!(decode_header(rx).map(|h| h.status), Some(status));
            assert!(status != UCS_OK || e == Expect::Nothing);
        }
        Violation::DataNotAllowed { expect, length } => {
            assert_eq!(expect, e);
            assert!(length > 0 && length <= max as u64);
        }
    }
    let _ = v.to_string();
}

/// Feeds `bytes` to `step` in chunks of at most `chunk` bytes, as the
/// receive loop does; calls `on` for each event other than `Need`, which
/// returns the flags to go on with (None: stop).
fn drive(mut flags: u32, bytes: &[u8], max: usize, chunk: usize, mut on: impl FnMut(Event<'_>, u32) -> Option<u32>) {
    let mut rx: Vec<u8> = Vec::new();
    let mut pos = 0;
    loop {
        let (ev, next) = step(flags, &rx, max);
        match ev {
            Event::Need(n) => {
                assert!(rx.len() + n <= HDR_LEN + max);
                if pos == bytes.len() {
                    return;
                }
                let k = n.min(chunk).min(bytes.len() - pos);
                rx.extend_from_slice(&bytes[pos..pos + k]);
                pos += k;
            }
            Event::Close(_) => {
                assert_eq!(next, flags);
                return;
            }
            ev => {
                assert!(rx.len() <= HDR_LEN + max);
                match on(ev, next) {
                    Some(f) => flags = f,
                    None => return,
                }
                rx.clear();
            }
        }
    }
}

fn run_server(bytes: &[u8], max: usize, ctl: u8) {
    let chunk = 1 + (ctl as usize & 0x1f) * 37;
    let answer = ctl & 0x20 == 0;
    let (mut requests, mut notifies) = (0, 0);
    drive(st::SERVER, bytes, max, chunk, |ev, flags| match ev {
        Event::ConnRequest(d) => {
            assert!(d.len() <= max);
            assert_eq!((requests, notifies), (0, 0), "request after a request or notification");
            assert!(flags & st::CONN_REQ_GIVEN != 0);
            requests += 1;
            // The user answers (create, data sent) or keeps the request.
            Some(if answer { flags | st::SERVER_CREATED | st::PACKED | st::DATA_SENT } else { flags })
        }
        Event::Notify(s) => {
            assert_eq!(s, UCS_OK);
            assert_eq!((requests, notifies), (1, 0), "notification out of order");
            assert!(answer && flags & st::SERVER_NOTIFIED != 0);
            notifies += 1;
            Some(flags)
        }
        other => panic!("server got {other:?}"),
    });
    assert!(requests <= 1 && notifies <= requests);
}

fn run_client(bytes: &[u8], max: usize, ctl: u8) {
    let chunk = 1 + (ctl as usize >> 3) * 11;
    // Without DATA_SENT the client has not sent its request: nothing is due.
    let sent = ctl & 0x40 == 0;
    let mut flags = st::CLIENT | st::RESOLVED | st::PACKED;
    if sent {
        flags |= st::DATA_SENT;
    }
    let mut answers = 0;
    drive(flags, bytes, max, chunk, |ev, flags| {
        assert!(sent, "a client that sent nothing got {ev:?}");
        answers += 1;
        assert_eq!(answers, 1);
        match ev {
            Event::Connected(d) => {
                assert!(d.len() <= max && flags & st::CLIENT_CONNECTED != 0);
                Some(flags)
            }
            // (`fail` ends the endpoint.)
            Event::Rejected => None,
            other => panic!("client got {other:?}"),
        }
    });
}
