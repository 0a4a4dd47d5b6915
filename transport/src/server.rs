//! `Server`: accepts connections on a server endpoint, admits each by the rule of its service
//! (role from the client certificate, none only on Join), and serves every stream as a call on
//! its own task. Shutdown stops accepting, lets calls in flight answer, then closes.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::TransportError;
use crate::call::{CallLimits, serve_call};
use crate::codes::{CLOSE_REFUSED, CLOSE_SHUTDOWN};
use crate::endpoint::Endpoint;
use crate::handshake::{peer_of, service_of};
use crate::identity::PeerIdentity;
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
        let connections = TaskTracker::new();
        loop {
            tokio::select! {
                biased;
                () = shutdown.cancelled() => break,
                incoming = quic.accept() => match incoming {
                    Some(incoming) => {
                        let task = serve_connection(
                            incoming,
                            Arc::clone(&self.router),
                            self.endpoint.clone(),
                            self.gate.clone(),
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

async fn serve_connection(
    incoming: quinn::Incoming,
    router: Arc<Router>,
    endpoint: Endpoint,
    gate: Option<Gate>,
    shutdown: CancellationToken,
) {
    let addr = incoming.remote_address();
    let cfg = endpoint.config();
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
    let admitted = service_of(&conn)
        .ok_or_else(|| "no pvefleet ALPN negotiated".to_string())
        .and_then(|service| {
            let peer = peer_of(&conn).map_err(|e| e.to_string())?;
            service.authorize(peer.map(|p| p.role))?;
            check_gate(gate.as_ref(), peer.as_ref())?;
            Ok(Caller {
                service,
                peer,
                addr,
            })
        });
    let caller = match admitted {
        Ok(caller) => caller,
        Err(reason) => {
            tracing::warn!(%addr, %reason, "connection refused");
            conn.close(CLOSE_REFUSED.into(), reason.as_bytes());
            return;
        }
    };
    tracing::debug!(%addr, service = %caller.service, peer = ?caller.peer, "connection admitted");
    let limits = CallLimits {
        deadline: cfg.call_timeout,
        max_frame: cfg.max_frame,
    };
    let calls = TaskTracker::new();
    let shutting_down = loop {
        tokio::select! {
            biased;
            () = shutdown.cancelled() => break true,
            stream = conn.accept_bi() => match stream {
                Ok((send, recv)) => {
                    if let Err(reason) = check_gate(gate.as_ref(), caller.peer.as_ref()) {
                        tracing::warn!(%addr, %reason, "peer refused on an open connection");
                        conn.close(CLOSE_REFUSED.into(), reason.as_bytes());
                        break false;
                    }
                    calls.spawn(serve_call(send, recv, caller.clone(), Arc::clone(&router), limits));
                }
                // Closed by the client or lost: the calls in flight end on their own.
                Err(_) => break false,
            },
        }
    };
    calls.close();
    calls.wait().await;
    if shutting_down {
        conn.close(CLOSE_SHUTDOWN.into(), b"server shutting down");
    }
}

fn check_gate(gate: Option<&Gate>, peer: Option<&PeerIdentity>) -> Result<(), String> {
    match (gate, peer) {
        (Some(gate), Some(peer)) => gate(peer),
        _ => Ok(()),
    }
}
