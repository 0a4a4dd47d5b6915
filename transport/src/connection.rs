//! `Connection`: the client side of one QUIC connection to one verified peer. Each call is one
//! bidirectional stream (request frame, finish, response frame), so calls run concurrently
//! without head-of-line blocking, and each has a deadline. `close` waits for the calls in
//! flight before closing, because QUIC's close discards data not yet delivered.

use std::fmt;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU16, Ordering};
use std::time::Duration;

use protocol::version::{self, Version};

use tokio_util::task::TaskTracker;

use crate::codes::{CLOSE_DONE, STREAM_TOO_LARGE, classify};
use crate::config::TransportConfig;
use crate::frame::{self, ResponseEnvelope};
use crate::identity::PeerIdentity;
use crate::remote_error::{RemoteCode, RemoteError};
use crate::service::Service;
use crate::versioned_body;
use crate::{Rpc, TransportError};

/// A connection to a peer on one service. Cheap to clone; clones share the connection (and
/// `close` on any clone closes it for all).
#[derive(Clone)]
pub struct Connection {
    inner: Arc<Inner>,
}

struct Inner {
    quic: quinn::Connection,
    peer: Option<PeerIdentity>,
    service: Service,
    /// Counts calls in flight; closed by `close` so no new call starts.
    calls: TaskTracker,
    call_timeout: Duration,
    max_frame: usize,
    /// The encoding version calls are sent at: this build's newest until the peer says it
    /// reads only older ones (a rolling upgrade), then the newest both know.
    speak: AtomicU16,
}

impl fmt::Debug for Connection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Connection")
            .field("service", &self.inner.service)
            .field("peer", &self.inner.peer)
            .field("addr", &self.inner.quic.remote_address())
            .field("in_flight", &self.inner.calls.len())
            .finish()
    }
}

impl Connection {
    pub(crate) fn new(
        quic: quinn::Connection,
        peer: Option<PeerIdentity>,
        service: Service,
        cfg: &TransportConfig,
    ) -> Self {
        let inner = Inner {
            quic,
            peer,
            service,
            calls: TaskTracker::new(),
            call_timeout: cfg.call_timeout,
            max_frame: cfg.max_frame,
            speak: AtomicU16::new(version::CURRENT.0),
        };
        Self {
            inner: Arc::new(inner),
        }
    }

    /// Calls `req` on the peer with the endpoint's call timeout.
    pub async fn call<R: Rpc>(&self, req: &R) -> Result<R::Response, TransportError> {
        self.call_with_timeout(req, self.inner.call_timeout).await
    }

    /// Calls `req` on the peer; no reply within `deadline` is `TransportError::Timeout`.
    pub async fn call_with_timeout<R: Rpc>(
        &self,
        req: &R,
        deadline: Duration,
    ) -> Result<R::Response, TransportError> {
        let _in_flight = self.inner.calls.token();
        // Checked after taking the token: `close` either sees this call or refuses it.
        if self.inner.calls.is_closed() {
            return Err(TransportError::Closed);
        }
        let started = tokio::time::Instant::now();
        let speak = self.speaks();
        // Admin calls made as a request (a client's call, or a member forwarding one) carry
        // its id, so the leader applies their writes once ([`crate::once`]).
        let once = (self.service() == Service::Admin)
            .then(crate::once::current)
            .flatten();
        let outcome = match self.call_at(req, speak, deadline, once).await {
            // An older server: the same call, unwrapped.
            Err(TransportError::Remote(RemoteError {
                code: RemoteCode::UnknownMethod,
                message,
            })) if once.is_some() && message.contains(crate::once::ONCE_METHOD) => {
                let left = deadline.saturating_sub(started.elapsed());
                return self.call_at(req, speak, left, None).await;
            }
            other => other,
        };
        match outcome {
            Err(TransportError::Remote(RemoteError {
                code: RemoteCode::UnsupportedVersion { newest, .. },
                message,
            })) => {
                let theirs = Version(newest);
                if theirs >= speak || !theirs.is_supported() {
                    // Nothing both ends read: the operator must upgrade one of them.
                    return Err(TransportError::Remote(RemoteError::new(
                        RemoteCode::UnsupportedVersion {
                            oldest: newest,
                            newest,
                        },
                        message,
                    )));
                }
                self.inner.speak.store(theirs.0, Ordering::Relaxed);
                tracing::debug!(peer = ?self.inner.peer, %theirs, "peer reads an older encoding; speaking it");
                let left = deadline.saturating_sub(started.elapsed());
                self.call_at(req, theirs, left, once).await
            }
            other => other,
        }
    }

    /// The encoding version this connection's calls are sent at.
    pub fn speaks(&self) -> Version {
        Version(self.inner.speak.load(Ordering::Relaxed))
    }

    async fn call_at<R: Rpc>(
        &self,
        req: &R,
        version: Version,
        deadline: Duration,
        once: Option<protocol::RequestId>,
    ) -> Result<R::Response, TransportError> {
        let request = frame::encode_request_once(req, version, self.inner.max_frame, once)?;
        let payload = tokio::time::timeout(deadline, self.exchange(&request))
            .await
            .map_err(|_| TransportError::Timeout {
                method: R::METHOD,
                after: deadline,
            })??;
        let outcome: ResponseEnvelope = frame::decode(&payload)?;
        versioned_body::decode_response::<R>(&outcome?)
    }

    /// One stream: send the request frame, finish, read the response frame.
    async fn exchange(&self, request: &[u8]) -> Result<Vec<u8>, TransportError> {
        let (mut send, mut recv) = self
            .inner
            .quic
            .open_bi()
            .await
            .map_err(|e| classify(&e, self.remote_address()))?;
        match send.write_all(request).await {
            // The server stops reading a request it refuses (too large) and still answers.
            Ok(()) | Err(quinn::WriteError::Stopped(_)) => {}
            Err(e) => return Err(self.explain(TransportError::Stream(e.to_string()))),
        }
        // Already finished or reset only when the server stopped us; its answer follows.
        let _ = send.finish();
        match frame::read_frame(&mut recv, self.inner.max_frame).await {
            Ok(payload) => Ok(payload),
            Err(e @ TransportError::FrameTooLarge { .. }) => {
                let _ = recv.stop(STREAM_TOO_LARGE.into());
                Err(e)
            }
            Err(e) => Err(self.explain(e)),
        }
    }

    /// A stream error on a dead connection is explained by why the connection died.
    fn explain(&self, error: TransportError) -> TransportError {
        match self.inner.quic.close_reason() {
            Some(reason) => classify(&reason, self.remote_address()),
            None => error,
        }
    }

    /// The peer's certificate identity (the node dialed; for join clients, the coordinator).
    pub fn peer(&self) -> Option<PeerIdentity> {
        self.inner.peer
    }

    /// The service this connection speaks.
    pub fn service(&self) -> Service {
        self.inner.service
    }

    /// The peer's UDP address.
    pub fn remote_address(&self) -> SocketAddr {
        self.inner.quic.remote_address()
    }

    /// The current round-trip time estimate (for metrics and benchmarks).
    pub fn rtt(&self) -> Duration {
        self.inner.quic.rtt()
    }

    /// Calls in flight on this connection (all clones).
    pub fn in_flight(&self) -> usize {
        self.inner.calls.len()
    }

    /// Why the connection is dead, or `None` while it is usable; callers that cache
    /// connections redial when this is `Some`.
    pub fn closed_reason(&self) -> Option<TransportError> {
        let reason = self.inner.quic.close_reason()?;
        Some(classify(&reason, self.remote_address()))
    }

    /// The underlying QUIC connection, for raw streams (tests, benchmarks, future streaming);
    /// it bypasses framing, deadlines and the in-flight count.
    pub fn quic(&self) -> &quinn::Connection {
        &self.inner.quic
    }

    /// Graceful close: refuses new calls, waits until every call in flight has its reply (or
    /// its own deadline expired), then closes the connection. No reply is lost.
    pub async fn close(self) {
        self.inner.calls.close();
        self.inner.calls.wait().await;
        self.inner.quic.close(CLOSE_DONE.into(), b"done");
    }
}
