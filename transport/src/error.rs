//! `TransportError`: every way setting up an endpoint, dialing a peer or making a call can fail,
//! named for the failed step so callers can decide (retry, redial, report to the operator).

use std::net::SocketAddr;
use std::time::Duration;

use crate::identity::PeerIdentity;
use crate::remote_error::RemoteError;

/// A transport failure. `Remote` is the only variant that carries a handler's own answer; all
/// others mean the call did not complete (or never started).
#[derive(Debug, thiserror::Error)]
pub enum TransportError {
    /// The PEM certificates or key could not be read.
    #[error("TLS material: {0}")]
    Material(String),
    /// rustls refused to build a configuration from the material.
    #[error("TLS configuration: {0}")]
    Tls(#[from] rustls::Error),
    /// The transport settings are inconsistent (e.g. keep-alive not below the idle timeout).
    #[error("transport configuration: {0}")]
    Config(String),
    /// The UDP socket could not be bound.
    #[error("bind {addr}: {source}")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// The OS error.
        source: std::io::Error,
    },
    /// A certificate does not carry a valid pvefleet identity.
    #[error("certificate identity: {0}")]
    Identity(String),
    /// Dialing failed before or during the handshake (unreachable, bad ALPN, protocol error).
    #[error("connect to {addr}: {reason}")]
    Connect {
        /// The address dialed.
        addr: SocketAddr,
        /// What went wrong.
        reason: String,
    },
    /// The handshake did not finish within the connect timeout.
    #[error("connect to {addr}: no handshake within {after:?}")]
    ConnectTimeout {
        /// The address dialed.
        addr: SocketAddr,
        /// The connect timeout.
        after: Duration,
    },
    /// This side refused the peer's certificate (unknown CA, expired, wrong name or pin).
    #[error("the certificate of {addr} was refused: {reason}")]
    PeerCertificate {
        /// The peer's address.
        addr: SocketAddr,
        /// The verifier's reason.
        reason: String,
    },
    /// The peer refused us: our certificate (TLS alert) or our role on this service.
    #[error("refused by the peer: {reason}")]
    Refused {
        /// The peer's reason, as it sent it.
        reason: String,
    },
    /// The handshake succeeded but the peer is not the node that was dialed.
    #[error("dialed {expected} but reached {}", found.map_or_else(|| "a peer without identity".to_string(), |p| p.to_string()))]
    WrongPeer {
        /// Who we meant to reach.
        expected: PeerIdentity,
        /// Who answered.
        found: Option<PeerIdentity>,
    },
    /// The call got no complete reply within its deadline.
    #[error("{method}: no reply within {after:?}")]
    Timeout {
        /// The request's method name.
        method: &'static str,
        /// The deadline that expired.
        after: Duration,
    },
    /// A frame is larger than the configured maximum; it was not sent or not read.
    #[error("frame of {len} bytes exceeds the {max}-byte maximum")]
    FrameTooLarge {
        /// The frame's (announced) length.
        len: u64,
        /// The configured maximum.
        max: usize,
    },
    /// A value could not be encoded with bincode.
    #[error("encode: {0}")]
    Encode(String),
    /// A frame or body could not be decoded.
    #[error("decode: {0}")]
    Decode(String),
    /// The connection died (idle timeout, peer closed or reset it).
    #[error("connection lost: {0}")]
    ConnectionLost(String),
    /// The call's stream failed (reset or stopped by the peer, ended before a full frame).
    #[error("stream: {0}")]
    Stream(String),
    /// The handler answered with a refusal.
    #[error(transparent)]
    Remote(#[from] RemoteError),
    /// The connection or endpoint is closing: no new calls.
    #[error("connection is closing")]
    Closed,
    /// The endpoint was not built for this operation (e.g. `connect` on a join client).
    #[error("this endpoint cannot {0}")]
    Unsupported(&'static str),
}
