//! QUIC transport between pvefleet nodes: mutual TLS under the cluster CA, one ALPN per service,
//! typed request/response calls over length-prefixed bincode frames.
//!
//! # Trust
//!
//! Every certificate is issued by the cluster CA (see [`identity`] for the SAN convention) and
//! the CA is the only root either side trusts. A client dials a server with the server name
//! `<role>-<node_id>.pvefleet` of the node it means, so TLS proves it reached that node; after
//! the handshake the server's identity is compared with the one dialed ([`TransportError::WrongPeer`]).
//! The server reads the client certificate's role and admits it only on the services that role
//! may use ([`Service::admits`]); a refused client sees [`TransportError::Refused`] on its first
//! call. The Join service is the one exception: its clients have no certificate yet and trust
//! the server through the CA hash pinned in their join token ([`ca_fingerprint`]).
//!
//! ```text
//!  client endpoint                                      server endpoint
//!  ──────────────                                      ───────────────
//!  connect(addr, coordinator-3, Raft)
//!    QUIC + TLS 1.3, ALPN "pvefleet-raft/1", SNI "coordinator-3.pvefleet"
//!    ─────────────────────────────────────────────────▶ verify client cert (cluster CA)
//!    verify server cert (cluster CA, name)  ◀─────────  present cert chain (+ CA)
//!    server identity == coordinator-3 ?                 client role admitted on Raft ?
//!                                                       (else close CLOSE_REFUSED + reason)
//! ```
//!
//! # Wire format
//!
//! Each call is one bidirectional QUIC stream carrying exactly one request frame and one
//! response frame. A frame is a big-endian `u32` payload length followed by the payload, the
//! bincode 2 encoding (`config::standard()`, serde) of an envelope:
//!
//! ```text
//!  client ── stream n (bidi) ──────────────────────────────────────────▶ server
//!  ┌──────────────┬──────────────────────────────────────────────┐
//!  │ len: u32 BE  │ bincode RequestEnvelope                      │  then FIN
//!  │              │ { method: String, body: Vec<u8> }            │
//!  └──────────────┴──────────────────────────────────────────────┘
//!                   body = version: u16 BE ‖ R::encode_at(version), method = R::METHOD
//!
//!  client ◀───────────────────────────────────────────────── stream n ── server
//!  ┌──────────────┬──────────────────────────────────────────────┐
//!  │ len: u32 BE  │ bincode Result<Vec<u8>, RemoteError>         │  then FIN
//!  └──────────────┴──────────────────────────────────────────────┘
//!                   Ok = version ‖ R::encode_response_at(version), Err = the refusal
//! ```
//!
//! The version is the request's encoding ([`protocol::version`], [`versioned_body`]): a client
//! sends at the newest version it knows; a server that does not read it answers
//! [`RemoteCode::UnsupportedVersion`] with its range and the client, if it can, sends the call
//! again at the server's newest and keeps that version for the connection. A reply is at its
//! request's version. During a rolling upgrade old and new builds therefore always talk at the
//! newest version both read.
//!
//! Rules both sides apply ([`frame`]):
//! - a length above [`TransportConfig::max_frame`] is refused after reading the 4-byte header,
//!   before allocating: the server answers `BadRequest` and stops the stream
//!   ([`codes::STREAM_TOO_LARGE`]);
//! - decoding is bounded (bincode's length-driven allocations are capped) and must consume the
//!   whole payload;
//! - every call has a deadline ([`TransportConfig::call_timeout`]) on both sides; a server call
//!   that misses it (e.g. a peer stalled mid-frame) is reset ([`codes::STREAM_DEADLINE`]);
//! - an undecodable envelope or unknown method is answered with a [`RemoteError`]; a stream that
//!   ends mid-frame is reset ([`codes::STREAM_BAD_FRAME`]); the connection keeps serving;
//! - a frame's buffer grows with the bytes that arrive, never to the announced length at once.
//!
//! # Clients without a certificate
//!
//! A server meets them only on the Join service, and serves them under their own, small limits
//! ([`JoinLimits`], `TransportConfig::join`): KiB frames, two streams, a request deadline of
//! seconds, a fixed connection lifetime, a cap on such connections and a per-address budget of
//! attempts (over it, calls are answered `Unavailable`, which joiners retry). QUIC announces
//! stream and flow-control limits during the handshake, before the certificate is known, so
//! every client starts under these limits and a verified one is raised to the endpoint's own.
//! `docs/design/join-surface.md` gives the memory each limit bounds.
//!
//! # Lifecycles
//!
//! [`Connection::close`] waits for the replies of calls in flight before closing (QUIC's close
//! discards undelivered data); [`Server::run`] stops on its `CancellationToken`, lets calls in
//! flight answer, then closes its connections. Keep-alive is set below the idle timeout on both
//! ends. [`Endpoint::reload`] swaps the certificate (a renewal of the same identity) for the
//! connections made or accepted from then on; the open ones keep going.
//!
//! # Example
//!
//! ```no_run
//! # async fn demo(tls: transport::TlsMaterial, peer_addr: std::net::SocketAddr)
//! # -> Result<(), transport::TransportError> {
//! use transport::{Endpoint, PeerIdentity, Service, TransportConfig};
//! # #[derive(serde::Serialize, serde::Deserialize)] struct Ping;
//! # impl transport::Rpc for Ping { const METHOD: &'static str = "ping"; type Response = (); }
//! let endpoint = Endpoint::client(&tls, TransportConfig::default())?;
//! let conn = endpoint
//!     .connect(peer_addr, PeerIdentity::coordinator(3), Service::Raft)
//!     .await?;
//! let () = conn.call(&Ping).await?;
//! conn.close().await;
//! # Ok(()) }
//! ```

mod address_budget;
mod admission;
mod call;
pub mod codes;
mod config;
mod connection;
mod endpoint;
mod error;
pub mod frame;
mod handshake;
pub mod identity;
mod join_limits;
mod material;
pub mod once;
mod pin;
mod remote_error;
mod router;
mod server;
mod service;
mod tls;
pub mod versioned_body;

pub use config::TransportConfig;
pub use connection::Connection;
pub use endpoint::Endpoint;
pub use error::TransportError;
pub use identity::{CertNames, PeerIdentity, cert_names, peer_identity};
pub use join_limits::JoinLimits;
pub use material::TlsMaterial;
pub use pin::ca_fingerprint;
pub use protocol::{NodeId, Role, Rpc};
pub use remote_error::{RemoteCode, RemoteError};
pub use router::{Caller, Router};
pub use server::{Gate, Server};
pub use service::Service;
