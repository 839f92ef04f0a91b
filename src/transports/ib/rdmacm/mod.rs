//! The `rdmacm` component: UCX's connection manager over librdmacm (RDMA
//! CM), what libucp's client/server API (`ucp_listener_create`,
//! `ucp_ep_create` by address) uses first on an RDMA host.
//!
//! librdmacm carries the exchange: the client resolves the server's
//! address and route (which also picks the local RDMA device and port,
//! told to the user through the resolve callback), then connects with at
//! most 56 bytes of private data; the server's listener sees a connection
//! request, and the server endpoint accepts it with its own private data
//! (or `uct_listener_reject` rejects it); the client reports the answer
//! through its connect callback and confirms with `rdma_establish`
//! (`uct_cm_client_ep_conn_notify`), which the server sees as ESTABLISHED
//! (notify callback). `uct_ep_disconnect` is `rdma_disconnect`; the peer
//! sees DISCONNECTED (disconnect callback). No QP is attached to a CM id:
//! the QP number a connection carries is the one of a dummy UD QP, as the
//! original's on devices without reserved QP numbers. The private data
//! starts with a 2-byte header (length, status) as the original's, so the
//! two interoperate; the device address each side reports for its peer is
//! built from the connection's QP attributes (`rdma_init_qp_attr`), as the
//! original builds it.
//!
//! Events are read from the CM's event channel on libucs's async thread
//! for the worker's async context (or, for a polled context, from the
//! worker's progress) with the context blocked, copied and acknowledged
//! at once; the user's callbacks run with no lock of ours held.
//!
//! The peer is not trusted: private data shorter than its header, a
//! header claiming more bytes than arrived, a request with an error status
//! or an answer with a status outside UCX's range is refused with a log
//! line (the request rejected, the endpoint failed).
//!
//! - `cm`: settings, `uct_cm_open`, query, closing, listeners.
//! - `state`: the CM's tables, the endpoint flags, the deferred calls.
//! - `events`: reading the channel and what each event means.
//! - `ep`: endpoint creation and the endpoint operations.
//! - `devaddr`: the peer's device address from the connection.

mod cm;
mod devaddr;
mod ep;
mod events;
mod state;

pub use cm::{RdmaCmConfig, COMPONENT, NAME};
pub use state::{RdmaCmEp, RdmaCmTl};
