//! Bodies for hyper: a response body of one chunk, and reading a request body with a limit.

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use hyper::body::{Body, Bytes, Frame, Incoming, SizeHint};

/// A response body sent in one piece (or empty).
#[derive(Debug, Default)]
pub(crate) struct OneChunk(Option<Bytes>);

impl OneChunk {
    /// A body with these bytes (an empty vector gives an empty body).
    pub(crate) fn new(bytes: Vec<u8>) -> Self {
        if bytes.is_empty() {
            Self(None)
        } else {
            Self(Some(Bytes::from(bytes)))
        }
    }
}

impl Body for OneChunk {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        Poll::Ready(self.0.take().map(|b| Ok(Frame::data(b))))
    }

    fn is_end_stream(&self) -> bool {
        self.0.is_none()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.0.as_ref().map_or(0, |b| b.len() as u64))
    }
}

/// Why a request body could not be read.
#[derive(Debug)]
pub(crate) enum ReadError {
    /// More than the limit arrived.
    TooLarge,
    /// The connection failed while reading.
    Io,
}

/// Read a whole request body, refusing more than `limit` bytes.
pub(crate) async fn read_body(mut body: Incoming, limit: usize) -> Result<Vec<u8>, ReadError> {
    let mut out = Vec::new();
    loop {
        let frame = std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await;
        match frame {
            None => return Ok(out),
            Some(Err(_)) => return Err(ReadError::Io),
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    if out.len() + data.len() > limit {
                        return Err(ReadError::TooLarge);
                    }
                    out.extend_from_slice(&data);
                }
            }
        }
    }
}
