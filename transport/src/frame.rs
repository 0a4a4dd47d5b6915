//! The wire format of one call: length-prefixed bincode frames (see the crate root for the
//! diagram). Pure functions on bytes plus one async frame reader, public so benchmarks and raw
//! stream users share exactly the code calls use.
//!
//! Two allocation guards matter because the Join service accepts unauthenticated peers:
//! `read_frame` refuses an announced length above the maximum before allocating, and `decode`
//! caps bincode's own length-driven allocations (a 10-byte body may claim a 4 GiB string).

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncRead, AsyncReadExt};

use crate::TransportError;
use crate::remote_error::RemoteError;

/// Bytes of the big-endian `u32` length that starts every frame.
pub const HEADER_LEN: usize = 4;

/// The payload of a request frame.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RequestEnvelope {
    /// `Rpc::METHOD` of the request.
    pub method: String,
    /// The bincode encoding of the request value.
    pub body: Vec<u8>,
}

/// The payload of a response frame: the bincode encoding of the response value, or the
/// handler's refusal.
pub type ResponseEnvelope = Result<Vec<u8>, RemoteError>;

fn bincode_config() -> bincode::config::Configuration {
    bincode::config::standard()
}

/// Encodes a value with bincode (standard configuration).
pub fn encode<T: Serialize + ?Sized>(value: &T) -> Result<Vec<u8>, TransportError> {
    bincode::serde::encode_to_vec(value, bincode_config())
        .map_err(|e| TransportError::Encode(e.to_string()))
}

/// Decodes a value that must use all of `bytes`.
///
/// bincode allocates containers from the lengths it reads, and its limit counts the memory a
/// container claims (elements × their in-memory size), not wire bytes. The decoder therefore
/// runs with a limit of [`AMPLIFICATION`] times the input (at least 64 KiB), rounded up to a
/// bucket: a compact but valid value (structs with many defaults, maps of small entries) fits,
/// while a few bytes claiming a terabyte are refused before anything is allocated.
pub fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, TransportError> {
    let n = bytes.len();
    let (value, used) =
        decode_bucketed(bytes).map_err(|e| TransportError::Decode(e.to_string()))?;
    if used != n {
        return Err(TransportError::Decode(format!(
            "{} trailing bytes after the value",
            n - used
        )));
    }
    Ok(value)
}

/// How many bytes of memory a decoded value may claim per byte of input.
pub const AMPLIFICATION: usize = 64;

/// `decode_limited` with the smallest limit bucket covering `AMPLIFICATION` × `bytes.len()`
/// (limits are const generics).
fn decode_bucketed<T: DeserializeOwned>(
    bytes: &[u8],
) -> Result<(T, usize), bincode::error::DecodeError> {
    let needed = bytes.len().saturating_mul(AMPLIFICATION);
    macro_rules! first_fitting {
        ($($limit:expr),+) => {{
            $(if needed <= $limit {
                return decode_limited::<T, { $limit }>(bytes);
            })+
            Err(bincode::error::DecodeError::LimitExceeded)
        }};
    }
    const KIB: usize = 1 << 10;
    const MIB: usize = 1 << 20;
    const GIB: usize = 1 << 30;
    first_fitting!(
        64 * KIB,
        256 * KIB,
        MIB,
        4 * MIB,
        16 * MIB,
        64 * MIB,
        256 * MIB,
        GIB,
        4 * GIB,
        16 * GIB,
        usize::MAX
    )
}

fn decode_limited<T: DeserializeOwned, const LIMIT: usize>(
    bytes: &[u8],
) -> Result<(T, usize), bincode::error::DecodeError> {
    bincode::serde::decode_from_slice(bytes, bincode_config().with_limit::<LIMIT>())
}

/// One frame: the big-endian length of the bincode encoding of `value`, then the encoding.
/// Refused (nothing to send) if the payload is over `max`.
pub fn encode_frame<T: Serialize + ?Sized>(
    value: &T,
    max: usize,
) -> Result<Vec<u8>, TransportError> {
    let mut out = vec![0u8; HEADER_LEN];
    bincode::serde::encode_into_std_write(value, &mut out, bincode_config())
        .map_err(|e| TransportError::Encode(e.to_string()))?;
    let len = out.len() - HEADER_LEN;
    let too_large = || TransportError::FrameTooLarge {
        len: len as u64,
        max,
    };
    if len > max {
        return Err(too_large());
    }
    let prefix = u32::try_from(len).map_err(|_| too_large())?;
    out[..HEADER_LEN].copy_from_slice(&prefix.to_be_bytes());
    Ok(out)
}

/// A request frame for `method` with `request` as its body.
pub fn encode_request<T: Serialize + ?Sized>(
    method: &str,
    request: &T,
    max: usize,
) -> Result<Vec<u8>, TransportError> {
    let envelope = RequestEnvelope {
        method: method.to_string(),
        body: encode(request)?,
    };
    encode_frame(&envelope, max)
}

/// A response frame for a handler's outcome (already encoded on success).
pub fn encode_response(outcome: &ResponseEnvelope, max: usize) -> Result<Vec<u8>, TransportError> {
    encode_frame(outcome, max)
}

/// Reads one frame's payload. An announced length over `max` is refused after reading only
/// the 4-byte header, before any allocation; I/O failures and a stream ending mid-frame are
/// `Stream` errors.
pub async fn read_frame<R: AsyncRead + Unpin>(
    reader: &mut R,
    max: usize,
) -> Result<Vec<u8>, TransportError> {
    let mut header = [0u8; HEADER_LEN];
    reader
        .read_exact(&mut header)
        .await
        .map_err(|e| TransportError::Stream(format!("reading the frame header: {e}")))?;
    let announced = u32::from_be_bytes(header);
    let len = usize::try_from(announced).unwrap_or(usize::MAX);
    if len > max {
        return Err(TransportError::FrameTooLarge {
            len: u64::from(announced),
            max,
        });
    }
    let mut payload = vec![0u8; len];
    reader
        .read_exact(&mut payload)
        .await
        .map_err(|e| TransportError::Stream(format!("reading a {len}-byte frame: {e}")))?;
    Ok(payload)
}

#[cfg(test)]
mod tests {
    use std::pin::Pin;
    use std::task::{Context, Poll};

    use tokio::io::ReadBuf;

    use super::*;

    /// Yields `data`, then fails the test if read again: proves a reader stopped in time.
    struct Exactly(Vec<u8>);

    impl AsyncRead for Exactly {
        fn poll_read(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
            buf: &mut ReadBuf<'_>,
        ) -> Poll<std::io::Result<()>> {
            assert!(
                !self.0.is_empty(),
                "read past the data it was allowed to read"
            );
            let n = buf.remaining().min(self.0.len());
            let rest = self.0.split_off(n);
            buf.put_slice(&self.0);
            self.0 = rest;
            Poll::Ready(Ok(()))
        }
    }

    #[tokio::test]
    async fn request_frames_round_trip() {
        let frame = encode_request("echo", &("hi".to_string(), 7u64), 1024).unwrap();
        let payload = read_frame(&mut frame.as_slice(), 1024).await.unwrap();
        assert_eq!(payload.len() + HEADER_LEN, frame.len());
        let env: RequestEnvelope = decode(&payload).unwrap();
        assert_eq!(env.method, "echo");
        assert_eq!(
            decode::<(String, u64)>(&env.body).unwrap(),
            ("hi".to_string(), 7)
        );
    }

    #[tokio::test]
    async fn oversized_announced_length_is_refused_after_the_header_only() {
        let mut reader = Exactly(u32::MAX.to_be_bytes().to_vec());
        let err = read_frame(&mut reader, 1024).await.unwrap_err();
        assert!(
            matches!(err, TransportError::FrameTooLarge { len, max: 1024 } if len == u64::from(u32::MAX))
        );
    }

    #[test]
    fn oversized_values_are_not_framed() {
        let err = encode_frame(&vec![1u8; 100], 50).unwrap_err();
        assert!(matches!(err, TransportError::FrameTooLarge { max: 50, .. }));
    }

    #[tokio::test]
    async fn a_stream_ending_mid_frame_is_a_stream_error() {
        let mut bytes = 10u32.to_be_bytes().to_vec();
        bytes.extend_from_slice(b"abc");
        let err = read_frame(&mut bytes.as_slice(), 1024).await.unwrap_err();
        assert!(matches!(err, TransportError::Stream(_)));
    }

    #[test]
    fn compact_values_that_claim_much_more_memory_than_wire_bytes_decode() {
        // Structs full of defaults and maps of small entries encode to a few bytes each
        // but claim their whole in-memory size: a real PoolList reply looked like this.
        #[derive(serde::Serialize, serde::Deserialize, PartialEq, Debug, Default)]
        struct Wide {
            a: Option<String>,
            b: Option<String>,
            c: Vec<String>,
            d: Option<u64>,
            e: std::collections::BTreeMap<String, String>,
        }
        let value: std::collections::BTreeMap<std::net::IpAddr, Wide> = (0..600u32)
            .map(|i| (std::net::IpAddr::from(i.to_be_bytes()), Wide::default()))
            .collect();
        let bytes = encode(&value).unwrap();
        assert_eq!(
            decode::<std::collections::BTreeMap<std::net::IpAddr, Wide>>(&bytes).unwrap(),
            value
        );
        let many: Vec<Wide> = (0..2000).map(|_| Wide::default()).collect();
        assert_eq!(decode::<Vec<Wide>>(&encode(&many).unwrap()).unwrap(), many);
    }

    #[test]
    fn a_huge_claimed_string_is_refused_without_allocating_it() {
        // bincode standard varint: 0xFD then a u64 length: a 2^40-byte string in 9 bytes.
        let mut bytes = vec![0xFD];
        bytes.extend_from_slice(&(1u64 << 40).to_le_bytes());
        assert!(matches!(
            decode::<String>(&bytes),
            Err(TransportError::Decode(m)) if m.contains("LimitExceeded")
        ));
        let env = RequestEnvelope {
            method: "m".into(),
            body: vec![],
        };
        let mut good = encode(&env).unwrap();
        assert_eq!(decode::<RequestEnvelope>(&good).unwrap(), env);
        good.push(0);
        assert!(
            matches!(decode::<RequestEnvelope>(&good), Err(TransportError::Decode(m)) if m.contains("trailing"))
        );
    }

    #[test]
    fn large_values_decode_under_the_limit_buckets() {
        for n in [0, 1000, 5000, 300_000, 5_000_000] {
            let s = "x".repeat(n);
            assert_eq!(decode::<String>(&encode(&s).unwrap()).unwrap().len(), n);
        }
    }
}
