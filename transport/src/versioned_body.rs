//! The body of a request or reply inside its frame: the encoding [`Version`] it is written at
//! (big-endian `u16`), then the value as that version lays it out ([`Rpc::encode_at`]). A
//! server reads the version first: one it does not support is refused with
//! [`RemoteCode::UnsupportedVersion`](crate::RemoteCode::UnsupportedVersion), naming the range
//! it reads, and the client sends the call again at the newest version both know. A reply is
//! written at the version of its request, so an older client always reads it.

use protocol::Rpc;
use protocol::encoding::EncodingError;
use protocol::version::Version;

use crate::TransportError;
use crate::remote_error::RemoteError;

/// Bytes of the version prefix.
const PREFIX_LEN: usize = 2;

fn prefixed(
    version: Version,
    value: Result<Vec<u8>, EncodingError>,
) -> Result<Vec<u8>, EncodingError> {
    let value = value?;
    let mut out = Vec::with_capacity(PREFIX_LEN + value.len());
    out.extend_from_slice(&version.0.to_be_bytes());
    out.extend_from_slice(&value);
    Ok(out)
}

/// The version a body is written at, and the value's bytes.
///
/// # Errors
/// [`TransportError::Decode`] if the body is shorter than its version prefix.
pub fn split(body: &[u8]) -> Result<(Version, &[u8]), TransportError> {
    match body.split_first_chunk::<PREFIX_LEN>() {
        Some((prefix, rest)) => Ok((Version(u16::from_be_bytes(*prefix)), rest)),
        None => Err(TransportError::Decode(
            "a body without its encoding version".to_string(),
        )),
    }
}

/// `req` as a body at `version`.
///
/// # Errors
/// [`TransportError::Encode`] if the request cannot be written at `version`.
pub fn encode_request<R: Rpc>(req: &R, version: Version) -> Result<Vec<u8>, TransportError> {
    prefixed(version, req.encode_at(version)).map_err(|e| TransportError::Encode(e.to_string()))
}

/// The request in `body`, refused as the caller should see it: a version this build does not
/// read (with the range it does) or bytes that are not such a request.
pub(crate) fn decode_request<R: Rpc>(body: &[u8]) -> Result<(R, Version), RemoteError> {
    let (version, bytes) =
        split(body).map_err(|e| RemoteError::bad_request(format!("{}: {e}", R::METHOD)))?;
    if !version.is_supported() {
        return Err(RemoteError::unsupported_version(version));
    }
    let request = R::decode_at(version, bytes).map_err(|e| {
        RemoteError::bad_request(format!(
            "{}: undecodable request at encoding {version}: {e}",
            R::METHOD
        ))
    })?;
    Ok((request, version))
}

/// A handler's response as a body at `version` (its request's).
pub(crate) fn encode_response<R: Rpc>(
    response: &R::Response,
    version: Version,
) -> Result<Vec<u8>, RemoteError> {
    prefixed(version, R::encode_response_at(response, version)).map_err(|e| {
        RemoteError::internal(format!(
            "{}: reply not writable at encoding {version}: {e}",
            R::METHOD
        ))
    })
}

/// The response in a reply body.
///
/// # Errors
/// [`TransportError::Decode`] if it is written at a version this build does not read or is
/// not such a response.
pub fn decode_response<R: Rpc>(body: &[u8]) -> Result<R::Response, TransportError> {
    let (version, bytes) = split(body)?;
    if !version.is_supported() {
        return Err(TransportError::Decode(format!(
            "{}: a reply at encoding {version}, which this build does not read",
            R::METHOD
        )));
    }
    R::decode_response_at(version, bytes).map_err(|e| TransportError::Decode(e.to_string()))
}

#[cfg(test)]
mod tests {
    use serde::{Deserialize, Serialize};

    use super::*;
    use crate::RemoteCode;
    use protocol::version::{CURRENT, VersionRange};

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Ping(u32);
    impl Rpc for Ping {
        const METHOD: &'static str = "ping";
        type Response = String;
    }

    #[test]
    fn a_request_and_its_reply_round_trip_at_their_version() {
        let body = encode_request(&Ping(7), CURRENT).unwrap();
        assert_eq!(split(&body).unwrap().0, CURRENT);
        let (ping, version) = decode_request::<Ping>(&body).unwrap();
        assert_eq!((ping, version), (Ping(7), CURRENT));
        let reply = encode_response::<Ping>(&"pong".to_string(), version).unwrap();
        assert_eq!(decode_response::<Ping>(&reply).unwrap(), "pong");
    }

    #[test]
    fn a_version_this_build_does_not_read_is_refused_with_the_range_it_does() {
        let newer = Version(CURRENT.0 + 1);
        let mut body = newer.0.to_be_bytes().to_vec();
        body.extend_from_slice(&[7]);
        let refused = decode_request::<Ping>(&body).unwrap_err();
        let this = VersionRange::this_build();
        assert_eq!(
            refused.code,
            RemoteCode::UnsupportedVersion {
                oldest: this.oldest.0,
                newest: this.newest.0
            }
        );
        assert!(decode_response::<Ping>(&body).is_err());
        assert!(split(&[1]).is_err(), "a body shorter than its prefix");
    }
}
