//! `Server`: accepts connections on a server endpoint, admits each by the rule of its service
//! (role from the client certificate, none only on Join), and serves every stream as a call on
//! its own task. Shutdown stops accepting, lets calls in flight answer, then closes.
//!
//! Two kinds of connection get two sets of limits. Every connection starts under the Join
//! limits (they are what the handshake announced, see `TransportConfig`). A client whose
//! certificate was verified gets this endpoint's own stream limit and receive window right
//! after the handshake. A client without one (admitted on Join only) keeps the small limits,
//! needs a slot and an attempt from its address's budget (`Admission`), has each call charged
//! to that budget too, and is closed at the end of its lifetime.
//!
//! ```text
//!  Incoming ──handshake slot?──no──▶ refused (QUIC CONNECTION_REFUSED)
//!     │ yes, handshake within connect_timeout
//!     ▼
//!  certificate ──yes──▶ role/gate ok? ──▶ raise limits ──▶ calls (max_frame, call_timeout)
//!     │ no (Join)
//!     ▼
//!  slot free? ──no──▶ closed CLOSE_REFUSED "busy"
//!     │ yes
//!  budget left? ──no──▶ every call answered Unavailable "too many join attempts", closed soon
//!     │ yes
//!     ▼
//!  calls (join.max_frame, join.request_timeout, join.call_timeout; one attempt each)
//!  until join.connection_lifetime ──▶ closed CLOSE_EXPIRED
//! ```

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::OwnedSemaphorePermit;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::TransportError;
use crate::admission::{Admission, Unauthenticated};
use crate::call::{CallLimits, refuse_call, serve_call};
use crate::codes::{CLOSE_EXPIRED, CLOSE_REFUSED, CLOSE_SHUTDOWN};
use crate::endpoint::Endpoint;
use crate::handshake::{peer_of, service_of};
use crate::identity::PeerIdentity;
use crate::remote_error::RemoteError;
use crate::router::{Caller, Router};

/// Serves a `Router` on an `Endpoint` built with `Endpoint::server`.
pub struct Server {
    endpoint: Endpoint,
    router: Arc<Router>,
    gate: Option<Gate>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("endpoint", &self.endpoint)
            .field("gated", &self.gate.is_some())
            .finish_non_exhaustive()
    }
}

/// A decision on a peer beyond what its certificate proves (e.g. a removed member whose
/// certificate is still valid): `Err(reason)` refuses it.
pub type Gate = Arc<dyn Fn(&PeerIdentity) -> Result<(), String> + Send + Sync>;

impl Server {
    /// A server for `router`'s handlers on `endpoint`.
    pub fn new(endpoint: Endpoint, router: Router) -> Server {
        Server {
            endpoint,
            router: Arc::new(router),
            gate: None,
        }
    }

    /// Also refuse peers `gate` rejects: checked when a connection is admitted and again for
    /// every call on it, so a peer refused later loses its open connections too.
    pub fn with_gate(mut self, gate: Gate) -> Server {
        self.gate = Some(gate);
        self
    }

    /// Serves until `shutdown` is cancelled (or the endpoint is closed). Then it refuses new
    /// connections, waits for the calls in flight to answer (each within its deadline), closes
    /// the connections it accepted, and returns. The endpoint stays usable for dialing.
    pub async fn run(self, shutdown: CancellationToken) -> Result<(), TransportError> {
        if self.endpoint.services().is_empty() {
            return Err(TransportError::Unsupported("serve (built as a client)"));
        }
        let quic = self.endpoint.quic().clone();
        let serving = Arc::new(Serving {
            admission: Admission::new(self.endpoint.config()),
            router: self.router,
            endpoint: self.endpoint.clone(),
            gate: self.gate,
        });
        let connections = TaskTracker::new();
        loop {
            tokio::select! {
                biased;
                () = shutdown.cancelled() => break,
                incoming = quic.accept() => match incoming {
                    Some(incoming) => {
                        let Some(handshake) = serving.admission.handshake() else {
                            tracing::debug!(
                                addr = %incoming.remote_address(),
                                "max_handshakes under way: connection attempt refused"
                            );
                            incoming.refuse();
                            continue;
                        };
                        let task = serve_connection(
                            incoming,
                            handshake,
                            Arc::clone(&serving),
                            shutdown.clone(),
                        );
                        connections.spawn(task);
                    }
                    None => break,
                },
            }
        }
        self.endpoint.stop_accepting();
        connections.close();
        connections.wait().await;
        Ok(())
    }
}

/// What every connection task of one `Server::run` shares.
struct Serving {
    router: Arc<Router>,
    endpoint: Endpoint,
    gate: Option<Gate>,
    admission: Admission,
}

/// How one admitted connection is served.
struct Session {
    limits: CallLimits,
    /// When the connection is closed whatever it does (clients without a certificate).
    lifetime: Option<Duration>,
    /// Set for a client over its budget: every call gets this refusal.
    throttled: Option<String>,
    /// The unauthenticated slot, released when the connection ends.
    _slot: Option<OwnedSemaphorePermit>,
}

/// Why a connection's stream loop ended.
enum End {
    Shutdown,
    Expired(Duration),
    Refused,
    Gone,
}

async fn serve_connection(
    incoming: quinn::Incoming,
    handshake: OwnedSemaphorePermit,
    serving: Arc<Serving>,
    shutdown: CancellationToken,
) {
    let addr = incoming.remote_address();
    let cfg = serving.endpoint.config();
    let conn = match tokio::time::timeout(cfg.connect_timeout, incoming).await {
        Ok(Ok(conn)) => conn,
        Ok(Err(e)) => {
            tracing::debug!(%addr, error = %e, "handshake failed");
            return;
        }
        Err(_) => {
            tracing::debug!(%addr, "handshake timed out");
            return;
        }
    };
    drop(handshake);
    let caller = match admit(&conn, addr, serving.gate.as_ref()) {
        Ok(caller) => caller,
        Err(reason) => {
            tracing::warn!(%addr, %reason, "connection refused");
            conn.close(CLOSE_REFUSED.into(), reason.as_bytes());
            return;
        }
    };
    let Some(session) = session_for(&conn, &caller, &serving) else {
        return;
    };
    tracing::debug!(%addr, service = %caller.service, peer = ?caller.peer, "connection admitted");
    let lifetime = async {
        match session.lifetime {
            Some(after) => tokio::time::sleep(after).await,
            None => std::future::pending().await,
        }
    };
    tokio::pin!(lifetime);
    let calls = TaskTracker::new();
    let end = loop {
        tokio::select! {
            biased;
            () = shutdown.cancelled() => break End::Shutdown,
            () = &mut lifetime => break End::Expired(session.lifetime.unwrap_or_default()),
            stream = conn.accept_bi() => match stream {
                Ok((send, recv)) => {
                    if let Err(reason) = check_gate(serving.gate.as_ref(), caller.peer.as_ref()) {
                        tracing::warn!(%addr, %reason, "peer refused on an open connection");
                        conn.close(CLOSE_REFUSED.into(), reason.as_bytes());
                        break End::Refused;
                    }
                    let refusal = match (&session.throttled, caller.peer) {
                        (Some(reason), _) => Some(reason.clone()),
                        (None, None) => serving.admission.spend(addr.ip()).err(),
                        (None, Some(_)) => None,
                    };
                    let limits = session.limits;
                    match refusal {
                        None => {
                            let router = Arc::clone(&serving.router);
                            calls.spawn(serve_call(send, recv, caller.clone(), router, limits));
                        }
                        Some(reason) => {
                            tracing::debug!(%addr, %reason, "join attempt refused");
                            let refusal = RemoteError::unavailable(reason);
                            let (deadline, max) = (limits.request_deadline, limits.max_frame);
                            calls.spawn(refuse_call(send, recv, refusal, deadline, max));
                        }
                    }
                }
                // Closed by the client or lost: the calls in flight end on their own.
                Err(_) => break End::Gone,
            },
        }
    };
    calls.close();
    calls.wait().await;
    match end {
        End::Shutdown => conn.close(CLOSE_SHUTDOWN.into(), b"server shutting down"),
        End::Expired(after) => {
            let reason = format!(
                "a connection without a certificate lasts at most {after:?} \
                 (join.connection_lifetime); reconnect to call again"
            );
            conn.close(CLOSE_EXPIRED.into(), reason.as_bytes());
        }
        End::Refused | End::Gone => {}
    }
}

/// The service and caller of a finished handshake, or the reason to refuse it.
fn admit(
    conn: &quinn::Connection,
    addr: SocketAddr,
    gate: Option<&Gate>,
) -> Result<Caller, String> {
    let service = service_of(conn).ok_or_else(|| "no pvefleet ALPN negotiated".to_string())?;
    let peer = peer_of(conn).map_err(|e| e.to_string())?;
    let cert_not_after = crate::handshake::peer_not_after(conn);
    service.authorize(peer.map(|p| p.role))?;
    check_gate(gate, peer.as_ref())?;
    Ok(Caller {
        service,
        peer,
        addr,
        cert_not_after,
    })
}

/// The limits an admitted connection is served with; `None` if it was closed instead (no
/// slot for another client without a certificate).
fn session_for(conn: &quinn::Connection, caller: &Caller, serving: &Serving) -> Option<Session> {
    let cfg = serving.endpoint.config();
    if caller.peer.is_some() {
        let (streams, window) = cfg.authenticated_streams();
        conn.set_max_concurrent_bi_streams(streams);
        conn.set_receive_window(window);
        return Some(Session {
            limits: CallLimits {
                deadline: cfg.call_timeout,
                request_deadline: cfg.call_timeout,
                max_frame: cfg.max_frame,
            },
            lifetime: None,
            throttled: None,
            _slot: None,
        });
    }
    let join = &cfg.join;
    let limits = CallLimits {
        deadline: join.call_timeout,
        request_deadline: join.request_timeout,
        max_frame: join.max_frame,
    };
    let (slot, throttled, lifetime) = match serving.admission.unauthenticated(caller.addr.ip()) {
        Unauthenticated::Admitted(slot) => (slot, None, join.connection_lifetime),
        // Long enough to open a stream and read the refusal, no longer.
        Unauthenticated::Throttled(slot, reason) => (slot, Some(reason), join.request_timeout),
        Unauthenticated::Full(reason) => {
            // Debug, not warn: a flood would otherwise flood the log too.
            tracing::debug!(addr = %caller.addr, %reason, "connection without a certificate refused");
            conn.close(CLOSE_REFUSED.into(), reason.as_bytes());
            return None;
        }
    };
    Some(Session {
        limits,
        lifetime: Some(lifetime),
        throttled,
        _slot: Some(slot),
    })
}

fn check_gate(gate: Option<&Gate>, peer: Option<&PeerIdentity>) -> Result<(), String> {
    match (gate, peer) {
        (Some(gate), Some(peer)) => gate(peer),
        _ => Ok(()),
    }
}
