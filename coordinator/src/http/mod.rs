//! The member's local HTTP port (hyper 1, HTTP/1.1, no TLS: bind it to loopback or a
//! management network): `GET /metrics` (OpenMetrics text), `/healthz`, `/readyz`.
//! The listener is injected (port 0 in tests); shutdown stops accepting and lets requests in
//! flight finish ([`connection`]).

pub(crate) mod connection;
pub(crate) mod health;
pub(crate) mod metrics;

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use hyper::body::{Body, Bytes, Frame, Incoming, SizeHint};
use hyper::header::CONTENT_TYPE;
use hyper::{Method, Request, Response, StatusCode};
use raft::types::Raft;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use self::health::Readiness;
use self::metrics::{Metrics, RaftSample};

/// How long a connection may take to send its request headers.
const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// How long requests in flight may take to finish at shutdown.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);
const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// A response body of one chunk.
struct OneChunk(Option<Bytes>);

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

/// The HTTP server of one member.
pub(crate) struct HttpServer {
    listener: TcpListener,
    raft: Raft,
    metrics: Arc<Metrics>,
}

impl HttpServer {
    pub(crate) fn new(listener: TcpListener, raft: Raft, metrics: Arc<Metrics>) -> HttpServer {
        HttpServer {
            listener,
            raft,
            metrics,
        }
    }

    /// Serves until `shutdown`, then waits (bounded) for requests in flight.
    pub(crate) async fn run(self, shutdown: CancellationToken) {
        let connections = TaskTracker::new();
        let state = Arc::new((self.raft, self.metrics));
        loop {
            let accepted = tokio::select! {
                () = shutdown.cancelled() => break,
                accepted = self.listener.accept() => accepted,
            };
            let stream = match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    // Out of descriptors and the like: pause rather than spin.
                    tracing::warn!(error = %e, "http accept failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            };
            let state = Arc::clone(&state);
            let shutdown = shutdown.clone();
            connections.spawn(async move {
                let answer = move |req: Request<Incoming>| {
                    let state = Arc::clone(&state);
                    async move { respond(&state.0, &state.1, &req).await }
                };
                connection::serve(stream, answer, HEADER_TIMEOUT, SHUTDOWN_GRACE, &shutdown).await;
            });
        }
        connections.close();
        let _ = tokio::time::timeout(SHUTDOWN_GRACE, connections.wait()).await;
    }
}

fn text(status: StatusCode, content_type: &str, body: String) -> Response<OneChunk> {
    let mut resp = Response::new(OneChunk(Some(Bytes::from(body))));
    *resp.status_mut() = status;
    if let Ok(v) = content_type.parse() {
        resp.headers_mut().insert(CONTENT_TYPE, v);
    }
    resp
}

async fn respond(raft: &Raft, metrics: &Metrics, req: &Request<Incoming>) -> Response<OneChunk> {
    const PLAIN: &str = "text/plain; charset=utf-8";
    if req.method() != Method::GET && req.method() != Method::HEAD {
        return text(StatusCode::METHOD_NOT_ALLOWED, PLAIN, "only GET\n".into());
    }
    match req.uri().path() {
        "/healthz" => text(StatusCode::OK, PLAIN, "ok\n".into()),
        "/readyz" => {
            let committed = raft
                .with_raft_state(|st| st.committed.map(|l| l.index))
                .await;
            let m = raft.metrics().borrow().clone();
            let decision = match committed {
                Ok(committed) => Readiness {
                    leader: m.current_leader,
                    committed,
                    applied: m.last_applied.map(|l| l.index),
                }
                .decide(),
                Err(e) => Err(format!("not ready: raft is not running: {e}")),
            };
            match decision {
                Ok(why) => text(StatusCode::OK, PLAIN, why + "\n"),
                Err(why) => text(StatusCode::SERVICE_UNAVAILABLE, PLAIN, why + "\n"),
            }
        }
        "/metrics" => {
            let committed = raft
                .with_raft_state(|st| st.committed.map(|l| l.index))
                .await
                .ok()
                .flatten();
            let m = raft.metrics().borrow().clone();
            metrics.observe(&RaftSample::from_metrics(&m, committed));
            metrics.observe_vips();
            match metrics.render() {
                Ok(body) => text(StatusCode::OK, OPENMETRICS, body),
                Err(_) => text(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    PLAIN,
                    "cannot encode metrics\n".into(),
                ),
            }
        }
        _ => text(
            StatusCode::NOT_FOUND,
            PLAIN,
            "not found: try /metrics, /healthz or /readyz\n".into(),
        ),
    }
}
