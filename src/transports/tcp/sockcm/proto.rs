//! The sockcm protocol as pure functions: the message header, what an
//! endpoint in a given state may receive, and the decision taken on the
//! bytes received so far of the current message. No I/O and no global
//! state: `sockio` reads from the socket and calls [`step`]; the fuzz target
//! `sockcm_wire` drives the same functions.
//!
//! A message is a 16-byte header (the private-data length as a native
//! size_t at offset 0, a status byte at offset 8, padding) followed by that
//! many bytes. The exchange allows exactly these messages:
//! - client to server: the connection request ({len, OK} + private data),
//!   then, once the server's answer arrived, the notification ({0, OK});
//! - server to client: one answer, {len, OK} + private data or
//!   {0, UCS_ERR_REJECTED}.
//!
//! Anything else (a length over the CM's maximum, a status the message may
//! not carry, a notification with data, bytes where no message is due, a
//! second request or notification) is a [`Violation`]: the connection is
//! closed. The peer is never trusted: nothing is allocated for a message
//! before its header passed these checks.

use crate::abi::*;

/// Size of the message header: size_t length, u8 status, padding.
pub const HDR_LEN: usize = 16;

/// Endpoint state flags (`EpState::flags`), the input of [`expect`] and
/// [`step`].
pub mod st {
    pub const SERVER: u32 = 1 << 0;
    pub const CLIENT: u32 = 1 << 1;
    pub const SERVER_CREATED: u32 = 1 << 2;
    pub const PACKED: u32 = 1 << 3;
    pub const DATA_SENT: u32 = 1 << 5;
    pub const DATA_RECEIVED: u32 = 1 << 6;
    pub const CLIENT_CONNECTED: u32 = 1 << 7;
    pub const SERVER_NOTIFIED: u32 = 1 << 8;
    pub const NOTIFY_CALLED: u32 = 1 << 9;
    pub const DISCONNECTING: u32 = 1 << 11;
    pub const DISCONNECTED: u32 = 1 << 12;
    pub const FAILED: u32 = 1 << 13;
    pub const UPPER_CB_FAILED: u32 = 1 << 15;
    pub const REJECT_CALLED: u32 = 1 << 16;
    pub const RESOLVED: u32 = 1 << 19;
    pub const CONN_REQ_GIVEN: u32 = 1 << 20;
}

/// A decoded header, not yet checked against anything.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    pub length: u64,
    pub status: ucs_status_t,
}

/// The header at the start of `b`, or None when `b` is shorter than one.
pub fn decode_header(b: &[u8]) -> Option<Header> {
    let h = b.get(..HDR_LEN)?;
    let mut len = [0u8; 8];
    len.copy_from_slice(&h[..8]);
    Some(Header { length: u64::from_ne_bytes(len), status: h[8] as ucs_status_t })
}

/// A whole message: the header for `data` and `status`, then `data`.
pub fn encode_msg(data: &[u8], status: ucs_status_t) -> Vec<u8> {
    let mut v = vec![0u8; HDR_LEN + data.len()];
    v[..8].copy_from_slice(&(data.len() as u64).to_ne_bytes());
    v[8] = status as u8;
    v[HDR_LEN..].copy_from_slice(data);
    v
}

/// The message an endpoint may receive next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expect {
    /// Server, nothing received yet: the client's connection request.
    Request,
    /// Server that answered: the client's notification (no data).
    Notify,
    /// Client that sent its request: the server's answer.
    Answer,
    /// No message is due: any byte is a violation (the end of the stream
    /// is not, it is the peer going away).
    Nothing,
}

/// What the peer did wrong.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Violation {
    /// Bytes arrived where the protocol allows none (data after the
    /// request, a second request or notification, an early answer).
    Unexpected(Expect),
    /// The header announces more private data than the CM allows.
    TooLong { length: u64, max: usize },
    /// A status this message may not carry.
    BadStatus { expect: Expect, status: ucs_status_t },
    /// A notification or a rejection that carries data.
    DataNotAllowed { expect: Expect, length: u64 },
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            Violation::Unexpected(_) => {
                f.write_str("bytes arrived where the protocol allows none (data after a message, a second request \
                             or notification)")
            }
            Violation::TooLong { length, max } => {
                write!(f, "the header announces {} bytes of private data, at most {} are allowed", length, max)
            }
            Violation::BadStatus { expect, status } => write!(f, "status {} is not allowed in {}", status, expect.name()),
            Violation::DataNotAllowed { expect, length } => {
                write!(f, "{} carries {} bytes of data, none are allowed", expect.name(), length)
            }
        }
    }
}

impl Expect {
    /// How the message (or its absence) is named in log lines.
    pub fn name(self) -> &'static str {
        match self {
            Expect::Request => "the connection request",
            Expect::Notify => "the connection notification",
            Expect::Answer => "the server's answer",
            Expect::Nothing => "no message due",
        }
    }
}

/// The message an endpoint with state `flags` may receive next.
pub fn expect(flags: u32) -> Expect {
    if flags & (st::FAILED | st::REJECT_CALLED) != 0 {
        Expect::Nothing
    } else if flags & st::SERVER != 0 {
        if flags & (st::CONN_REQ_GIVEN | st::SERVER_CREATED | st::DATA_RECEIVED) == 0 {
            Expect::Request
        } else if flags & (st::SERVER_CREATED | st::DATA_SENT) == st::SERVER_CREATED | st::DATA_SENT
            && flags & st::SERVER_NOTIFIED == 0
        {
            Expect::Notify
        } else {
            Expect::Nothing
        }
    } else if flags & st::CLIENT != 0 && flags & st::DATA_SENT != 0 && flags & st::CLIENT_CONNECTED == 0 {
        Expect::Answer
    } else {
        Expect::Nothing
    }
}

/// The decision on the bytes `rx` received so far of the next message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Parse<'a> {
    /// Read this many more bytes (never 0) before deciding again.
    Need(usize),
    /// A whole message: `rx[..consumed]`, with `data` its private data.
    Message { status: ucs_status_t, data: &'a [u8], consumed: usize },
    /// Close the connection.
    Bad(Violation),
}

/// Decide on `rx`, the bytes received of the message `expect` names, with
/// at most `max` bytes of private data allowed. The checks run as soon as
/// the header is complete, so a bad length is refused before any of its
/// data is read.
pub fn parse(expect: Expect, rx: &[u8], max: usize) -> Parse<'_> {
    if expect == Expect::Nothing {
        return if rx.is_empty() { Parse::Need(1) } else { Parse::Bad(Violation::Unexpected(expect)) };
    }
    let Some(h) = decode_header(rx) else { return Parse::Need(HDR_LEN - rx.len()) };
    if h.length > max as u64 {
        return Parse::Bad(Violation::TooLong { length: h.length, max });
    }
    match expect {
        // The clients of UCX 1.13.1 and ours only ever send UCS_OK.
        Expect::Request | Expect::Notify if h.status != UCS_OK => {
            return Parse::Bad(Violation::BadStatus { expect, status: h.status });
        }
        Expect::Notify if h.length != 0 => return Parse::Bad(Violation::DataNotAllowed { expect, length: h.length }),
        Expect::Answer if h.status != UCS_OK && h.status != UCS_ERR_REJECTED => {
            return Parse::Bad(Violation::BadStatus { expect, status: h.status });
        }
        Expect::Answer if h.status == UCS_ERR_REJECTED && h.length != 0 => {
            return Parse::Bad(Violation::DataNotAllowed { expect, length: h.length });
        }
        _ => {}
    }
    // (length <= max: no overflow.)
    let total = HDR_LEN + h.length as usize;
    if rx.len() < total {
        return Parse::Need(total - rx.len());
    }
    Parse::Message { status: h.status, data: &rx[HDR_LEN..total], consumed: total }
}

/// What an endpoint does with a decision of [`parse`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event<'a> {
    /// Read this many more bytes.
    Need(usize),
    /// Server: hand the request with this private data to the listener.
    ConnRequest(&'a [u8]),
    /// Server: call the notify callback with this status.
    Notify(ucs_status_t),
    /// Client: call the connect callback with the server's data.
    Connected(&'a [u8]),
    /// Client: the server rejected the request.
    Rejected,
    /// Close the connection.
    Close(Violation),
}

/// One step of an endpoint's receive side: the event the bytes `rx` of the
/// next message cause in state `flags`, and the flags after it (unchanged
/// for `Need` and `Close`, which `fail` handles). A request is given once
/// and a notification is reported once: after either, the state expects
/// something else.
pub fn step(flags: u32, rx: &[u8], max: usize) -> (Event<'_>, u32) {
    let e = expect(flags);
    match parse(e, rx, max) {
        Parse::Need(n) => (Event::Need(n), flags),
        Parse::Bad(v) => (Event::Close(v), flags),
        Parse::Message { status, data, .. } => match e {
            Expect::Request => (Event::ConnRequest(data), flags | st::DATA_RECEIVED | st::CONN_REQ_GIVEN),
            Expect::Notify => (Event::Notify(status), flags | st::DATA_RECEIVED | st::SERVER_NOTIFIED),
            Expect::Answer if status == UCS_ERR_REJECTED => (Event::Rejected, flags | st::DATA_RECEIVED),
            Expect::Answer => (Event::Connected(data), flags | st::DATA_RECEIVED | st::CLIENT_CONNECTED),
            // (`parse` refuses every byte when nothing is due.)
            Expect::Nothing => (Event::Close(Violation::Unexpected(e)), flags),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAX: usize = 2064;

    #[test]
    fn request_then_notify() {
        let req = encode_msg(b"hello", UCS_OK);
        let f = st::SERVER;
        assert_eq!(step(f, &req[..3], MAX).0, Event::Need(HDR_LEN - 3));
        assert_eq!(step(f, &req[..HDR_LEN], MAX).0, Event::Need(5));
        let (ev, f) = step(f, &req, MAX);
        assert_eq!(ev, Event::ConnRequest(b"hello"));
        // The same bytes again before the answer: a violation.
        assert_eq!(step(f, &req[..1], MAX).0, Event::Close(Violation::Unexpected(Expect::Nothing)));
        let f = f | st::SERVER_CREATED | st::DATA_SENT;
        let n = encode_msg(&[], UCS_OK);
        let (ev, f) = step(f, &n, MAX);
        assert_eq!(ev, Event::Notify(UCS_OK));
        assert!(matches!(step(f, &n, MAX).0, Event::Close(_)));
    }

    #[test]
    fn bad_headers() {
        let mut big = encode_msg(&[], UCS_OK);
        big[..8].copy_from_slice(&(MAX as u64 + 1).to_ne_bytes());
        assert_eq!(parse(Expect::Request, &big, MAX),
                   Parse::Bad(Violation::TooLong { length: MAX as u64 + 1, max: MAX }));
        big[..8].copy_from_slice(&u64::MAX.to_ne_bytes());
        assert!(matches!(parse(Expect::Request, &big, MAX), Parse::Bad(Violation::TooLong { .. })));
        let rej = encode_msg(b"x", UCS_ERR_REJECTED);
        assert!(matches!(parse(Expect::Request, &rej, MAX), Parse::Bad(Violation::BadStatus { .. })));
        assert!(matches!(parse(Expect::Answer, &rej, MAX), Parse::Bad(Violation::DataNotAllowed { .. })));
        let n = encode_msg(b"x", UCS_OK);
        assert!(matches!(parse(Expect::Notify, &n, MAX), Parse::Bad(Violation::DataNotAllowed { .. })));
        assert_eq!(step(st::CLIENT | st::DATA_SENT, &encode_msg(&[], UCS_ERR_REJECTED), MAX).0, Event::Rejected);
        // A client that has not sent its request expects nothing.
        assert!(matches!(step(st::CLIENT, &n, MAX).0, Event::Close(_)));
        assert!(matches!(step(st::SERVER | st::REJECT_CALLED, &n, MAX).0, Event::Close(_)));
    }
}
