//! The dashboard's response body: one chunk (pages, assets, refusals) or a stream of chunks
//! (the server-sent events of a live page), ended when its sender is dropped.

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use hyper::body::{Body, Bytes, Frame, SizeHint};
use tokio::sync::mpsc;

/// A response body.
pub(crate) enum DashBody {
    /// One chunk, then the end.
    Full(Option<Bytes>),
    /// Chunks as they come.
    Stream(mpsc::Receiver<Bytes>),
}

impl DashBody {
    pub(crate) fn full(bytes: impl Into<Bytes>) -> DashBody {
        DashBody::Full(Some(bytes.into()))
    }
}

impl Body for DashBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match self.get_mut() {
            DashBody::Full(chunk) => Poll::Ready(chunk.take().map(|b| Ok(Frame::data(b)))),
            DashBody::Stream(rx) => rx.poll_recv(cx).map(|c| c.map(|b| Ok(Frame::data(b)))),
        }
    }

    fn is_end_stream(&self) -> bool {
        matches!(self, DashBody::Full(None))
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            DashBody::Full(chunk) => {
                SizeHint::with_exact(chunk.as_ref().map_or(0, |b| b.len() as u64))
            }
            DashBody::Stream(_) => SizeHint::default(),
        }
    }
}
