//! The wire format of one call: length-prefixed bincode frames (see the crate root for the
//! diagram). Pure functions on bytes plus one async frame reader, public so benchmarks and raw
//! stream users share exactly the code calls use.
//!
//! Three allocation guards matter because the Join service accepts unauthenticated peers:
//! `read_frame` refuses an announced length above the maximum before allocating, grows its
//! buffer with the bytes that arrive rather than the length announced (a peer may announce
//! the maximum and never send it), and `decode` caps bincode's own length-driven allocations
//! (a 10-byte body may claim a 4 GiB string).

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
    /// The request at its encoding version ([`crate::versioned_body`]).
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
    protocol::encoding::encode(value).map_err(|e| TransportError::Encode(e.to_string()))
}

/// Decodes a value that must use all of `bytes`, with bincode's length-driven allocations
/// capped ([`protocol::encoding::decode`]: at most [`AMPLIFICATION`] bytes of memory claimed
/// per byte of input), so a 10-byte body claiming a 4 GiB string is refused before anything
/// is allocated.
pub fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, TransportError> {
    protocol::encoding::decode(bytes).map_err(|e| TransportError::Decode(e.to_string()))
}

/// How many bytes of memory a decoded value may claim per byte of input.
pub use protocol::encoding::AMPLIFICATION;

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

/// A request frame for `request`, its body written at encoding `version`
/// ([`crate::versioned_body`]).
pub fn encode_request<R: crate::Rpc>(
    request: &R,
    version: protocol::Version,
    max: usize,
) -> Result<Vec<u8>, TransportError> {
    encode_request_once(request, version, max, None)
}

/// [`encode_request`], wrapped as call `once` ([`crate::once`]) when given.
pub fn encode_request_once<R: crate::Rpc>(
    request: &R,
    version: protocol::Version,
    max: usize,
    once: Option<protocol::RequestId>,
) -> Result<Vec<u8>, TransportError> {
    let body = crate::versioned_body::encode_request(request, version)?;
    let envelope = match once {
        None => RequestEnvelope {
            method: R::METHOD.to_string(),
            body,
        },
        Some(id) => RequestEnvelope {
            method: crate::once::ONCE_METHOD.to_string(),
            body: encode(&crate::once::OnceEnvelope {
                request: id,
                method: R::METHOD.to_string(),
                body,
            })?,
        },
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
///
/// The announced length is a claim, not a promise: the buffer grows with the bytes that
/// arrive (see [`READ_CHUNK`]), so a peer announcing `max` and sending little costs about what
/// it sent.
pub async fn read_frame<R: AsyncRead + Unpin>(
    reader: &mut R,
    max: usize,
) -> Result<Vec<u8>, TransportError> {
    let mut payload = Vec::new();
    read_frame_into(reader, max, &mut payload).await?;
    Ok(payload)
}

/// The first allocation for a frame's payload, and the least a full buffer grows by. Above it
/// the buffer doubles (amortised copying stays linear) but never past the announced length,
/// so the memory held is at most about twice what arrived, or this chunk.
pub const READ_CHUNK: usize = 16 * 1024;

/// `read_frame` into `payload` (cleared first). Separate so a test can look at the buffer a
/// read left behind when it was cut short.
pub(crate) async fn read_frame_into<R: AsyncRead + Unpin>(
    reader: &mut R,
    max: usize,
    payload: &mut Vec<u8>,
) -> Result<(), TransportError> {
    payload.clear();
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
    while payload.len() < len {
        if payload.len() == payload.capacity() {
            let target = payload
                .capacity()
                .saturating_mul(2)
                .max(READ_CHUNK)
                .min(len);
            payload.reserve_exact(target - payload.len());
        }
        let room = (payload.capacity() - payload.len()).min(len - payload.len());
        let read = (&mut *reader)
            .take(room as u64)
            .read_buf(payload)
            .await
            .map_err(|e| {
                TransportError::Stream(format!(
                    "reading a {len}-byte frame after {} bytes: {e}",
                    payload.len()
                ))
            })?;
        if read == 0 {
            return Err(TransportError::Stream(format!(
                "the stream ended after {} of a {len}-byte frame",
                payload.len()
            )));
        }
    }
    Ok(())
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
        #[derive(Debug, PartialEq, Serialize, Deserialize)]
        struct Echo(String, u64);
        impl crate::Rpc for Echo {
            const METHOD: &'static str = "echo";
            type Response = ();
        }
        let version = protocol::version::CURRENT;
        let frame = encode_request(&Echo("hi".into(), 7), version, 1024).unwrap();
        let payload = read_frame(&mut frame.as_slice(), 1024).await.unwrap();
        assert_eq!(payload.len() + HEADER_LEN, frame.len());
        let env: RequestEnvelope = decode(&payload).unwrap();
        assert_eq!(env.method, "echo");
        let (at, body) = crate::versioned_body::split(&env.body).unwrap();
        assert_eq!(at, version);
        assert_eq!(decode::<Echo>(body).unwrap(), Echo("hi".into(), 7));
    }

    #[tokio::test]
    async fn oversized_announced_length_is_refused_after_the_header_only() {
        let mut reader = Exactly(u32::MAX.to_be_bytes().to_vec());
        let err = read_frame(&mut reader, 1024).await.unwrap_err();
        assert!(
            matches!(err, TransportError::FrameTooLarge { len, max: 1024 } if len == u64::from(u32::MAX))
        );
    }

    /// Yields `data` in pieces of at most `piece` bytes, then never again (a peer that
    /// announced more and went quiet); records the largest buffer it was offered.
    struct Stalls {
        data: Vec<u8>,
        piece: usize,
        largest_offer: usize,
    }

    impl AsyncRead for Stalls {
        fn poll_read(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
            buf: &mut ReadBuf<'_>,
        ) -> Poll<std::io::Result<()>> {
            self.largest_offer = self.largest_offer.max(buf.remaining());
            if self.data.is_empty() {
                // Never woken: the read stays pending until the caller gives up.
                return Poll::Pending;
            }
            let n = buf.remaining().min(self.data.len()).min(self.piece);
            let rest = self.data.split_off(n);
            buf.put_slice(&self.data);
            self.data = rest;
            Poll::Ready(Ok(()))
        }
    }

    #[tokio::test]
    async fn a_frame_announced_at_the_maximum_but_never_sent_holds_only_what_arrived() {
        const MAX: usize = 64 * 1024 * 1024;
        for arrived in [0usize, 100, READ_CHUNK, 200_000, 3_000_000] {
            let mut data = u32::try_from(MAX).unwrap().to_be_bytes().to_vec();
            data.extend(std::iter::repeat_n(7u8, arrived));
            let mut reader = Stalls {
                data,
                piece: 1500,
                largest_offer: 0,
            };
            let mut payload = Vec::new();
            // The read can never finish; stop it once everything sent has been taken.
            let read = read_frame_into(&mut reader, MAX, &mut payload);
            let cut = tokio::time::timeout(std::time::Duration::from_millis(50), read).await;
            assert!(cut.is_err(), "a frame that never completes cannot be read");
            assert_eq!(payload.len(), arrived);
            let bound = (2 * arrived).max(READ_CHUNK);
            assert!(
                payload.capacity() <= bound,
                "{arrived} bytes arrived of {MAX} announced, yet {} were allocated",
                payload.capacity()
            );
            assert!(reader.largest_offer <= bound, "{}", reader.largest_offer);
        }
    }

    #[tokio::test]
    async fn frames_of_every_size_around_the_growth_steps_read_back_whole() {
        for len in [
            0,
            1,
            READ_CHUNK - 1,
            READ_CHUNK,
            READ_CHUNK + 1,
            5 * READ_CHUNK + 3,
        ] {
            let body: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
            let mut frame = u32::try_from(len).unwrap().to_be_bytes().to_vec();
            frame.extend_from_slice(&body);
            frame.extend_from_slice(b"next frame");
            let mut reader = frame.as_slice();
            let payload = read_frame(&mut reader, len.max(1)).await.unwrap();
            assert_eq!(payload, body, "{len}");
            // Not one byte past the frame is consumed.
            assert_eq!(reader, b"next frame");
        }
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
