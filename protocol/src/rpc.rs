//! Typed request/response: a request type names its response, so a call site cannot send a
//! request and decode the wrong answer (`impl Rpc for Heartbeat { type Response = HeartbeatAck; }`).
//! `transport` carries any `Rpc` over QUIC; this crate only declares the pairs.

use serde::Serialize;
use serde::de::DeserializeOwned;

/// A request with its response type and a stable method name.
pub trait Rpc: Serialize + DeserializeOwned + Send + Sync + 'static {
    /// The method's name on the wire; unique per ALPN, never reused for another shape.
    const METHOD: &'static str;
    /// What the server answers.
    type Response: Serialize + DeserializeOwned + Send + Sync + 'static;
}
