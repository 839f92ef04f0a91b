//! The tcp socket connection manager ("sockcm") of UCX 1.13.1, on the wire
//! identical to the C original (`src/uct/tcp/sockcm/` in UCX): one TCP
//! connection per client/server pair, every message a 16-byte header
//! (`length` as a native size_t at offset 0, `status` as one byte at offset
//! 8, padding up to 16) followed by `length` bytes of private data.
//!
//! Exchange: the client connects (non-blocking), reports the local device
//! through `cm_resolve_cb` (or packs at once with `sockaddr_pack_cb`) and
//! sends {len, OK}+data; the server accepts, reads it and hands a connection
//! request to the listener's callback; the server's `uct_ep_create` answers
//! {len, OK}+data (or `uct_listener_reject` answers {0, REJECTED}); the
//! client reports the answer through its connect callback and confirms with
//! `uct_cm_client_ep_conn_notify` ({0, OK}), which the server reports
//! through its notify callback. `uct_ep_disconnect` is `shutdown(SHUT_WR)`;
//! the peer sees the end of the stream and calls its disconnect callback.
//!
//! Events are handled where UCX's CM handles them: on libucs's async
//! thread, for the worker's async context, so that a process sleeping on
//! the worker's event descriptor is woken by its connections (`watch`); a
//! worker whose context is polled or signal-driven has the CM's sockets
//! polled from its progress instead. State is kept under one mutex per CM
//! that is never held while a user callback runs, so callbacks may call
//! back into the CM (create, destroy, reject, connect, notify) freely.
//!
//! - `cm`: configuration, `uct_cm_open`, `uct_cm_query`, closing.
//! - `listener`: listening sockets, accepting, rejecting.
//! - `ep`: endpoint creation (client and server), the endpoint state
//!   machine and the endpoint operations.
//! - `proto`: the message header and the protocol's rules as pure
//!   functions (what a state may receive, the checks of a header, one step
//!   of the receive side); public for the fuzz target `sockcm_wire`.
//! - `sockio`: sending and receiving messages on the sockets.
//! - `progress`: handling socket events and running the user callbacks;
//!   the progress callback of a polled context.
//! - `watch`: the CM's epoll set on the async thread.
//! - `state`: the CM's tables of endpoints and listeners, state flags, and
//!   the setup of its sockets (options, checked user addresses, the device
//!   of a connection).
//!
//! The peer is not trusted (uct-rs goes beyond UCX here): a header over
//! the maximum or with a status its message may not carry, bytes where no
//! message is due, a second request or notification, a connection cut
//! short: the connection is closed with a log line and the listener keeps
//! serving. An accepted connection that has not delivered its request
//! within `UCX_TCP_CM_HANDSHAKE_TIMEOUT` is closed; a listener whose
//! `accept` runs out of descriptors pauses briefly instead of spinning.
//!
//! Sockets are [`crate::sys::socket::Socket`]s owned by the endpoint's or
//! listener's state: they close when the state is dropped.

mod cm;
mod ep;
mod listener;
mod progress;
#[doc(hidden)]
pub mod proto;
mod sockio;
mod state;
mod watch;

pub use cm::{SockCmConfig, CM};
pub use state::{SockCmEp, SockCmTl};
pub use proto::HDR_LEN;
