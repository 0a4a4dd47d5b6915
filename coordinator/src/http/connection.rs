//! One HTTP/1.1 connection of the member's servers (the local metrics port and the dashboard):
//! served until the client closes it, or, at shutdown, ended gracefully (requests in flight
//! answered, bounded by a grace period).

use std::convert::Infallible;
use std::future::Future;
use std::time::Duration;

use hyper::body::{Body, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_util::sync::CancellationToken;

/// Serves `io` with `respond` until it closes or `shutdown` (then at most `grace` more), with
/// `header_timeout` for each request's headers.
pub(crate) async fn serve<I, F, Fut, B>(
    io: I,
    respond: F,
    header_timeout: Duration,
    grace: Duration,
    shutdown: &CancellationToken,
) where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    F: Fn(Request<Incoming>) -> Fut + Send + 'static,
    Fut: Future<Output = Response<B>> + Send + 'static,
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let service = service_fn(move |req| {
        let answer = respond(req);
        async move { Ok::<_, Infallible>(answer.await) }
    });
    let mut builder = http1::Builder::new();
    builder
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(header_timeout);
    let conn = builder.serve_connection(TokioIo::new(io), service);
    tokio::pin!(conn);
    tokio::select! {
        _ = conn.as_mut() => {}
        () = shutdown.cancelled() => {
            conn.as_mut().graceful_shutdown();
            let _ = tokio::time::timeout(grace, conn).await;
        }
    }
}
