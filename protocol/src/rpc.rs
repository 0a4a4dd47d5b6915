//! Typed request/response: a request type names its response, so a call site cannot send a
//! request and decode the wrong answer (`impl Rpc for Heartbeat { type Response = HeartbeatAck; }`).
//! `transport` carries any `Rpc` over QUIC; this crate only declares the pairs and how each is
//! encoded at each [`Version`].

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::encoding::{self, EncodingError};
use crate::version::Version;

/// A request with its response type, a stable method name and its encoding per version.
///
/// The transport calls the `*_at` methods only with a version this build supports
/// ([`Version::is_supported`]). Their defaults encode the current layout at every version,
/// which is right for a type (and everything it contains) unchanged since
/// [`version::OLDEST`](crate::version::OLDEST). A type whose layout changes overrides them
/// with an explicit decoder (and encoder) for each older version, and the golden encodings
/// checked in per version prove it.
pub trait Rpc: Serialize + DeserializeOwned + Send + Sync + 'static {
    /// The method's name on the wire; unique per ALPN, never reused for another shape.
    const METHOD: &'static str;
    /// What the server answers.
    type Response: Serialize + DeserializeOwned + Send + Sync + 'static;

    /// The request as a reader of `version` decodes it.
    ///
    /// # Errors
    /// [`EncodingError`] if the value cannot be written at `version`.
    fn encode_at(&self, version: Version) -> Result<Vec<u8>, EncodingError> {
        let _ = version;
        encoding::encode(self)
    }

    /// A request written at `version`.
    ///
    /// # Errors
    /// [`EncodingError::Decode`] if the bytes are not such a request.
    fn decode_at(version: Version, bytes: &[u8]) -> Result<Self, EncodingError> {
        let _ = version;
        encoding::decode(bytes)
    }

    /// The response as a reader of `version` decodes it.
    ///
    /// # Errors
    /// [`EncodingError`] if the value cannot be written at `version`.
    fn encode_response_at(
        response: &Self::Response,
        version: Version,
    ) -> Result<Vec<u8>, EncodingError> {
        let _ = version;
        encoding::encode(response)
    }

    /// A response written at `version`.
    ///
    /// # Errors
    /// [`EncodingError::Decode`] if the bytes are not such a response.
    fn decode_response_at(version: Version, bytes: &[u8]) -> Result<Self::Response, EncodingError> {
        let _ = version;
        encoding::decode(bytes)
    }
}
