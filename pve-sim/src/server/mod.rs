//! The HTTPS edge: one listener per simulated node, all sharing one [`Sim`].
//!
//! ```text
//!  TCP accept ─▶ (node down? hold the socket) ─▶ TLS (rustls, ring) ─▶ HTTP/1.1 (hyper)
//!    ─▶ handler: /api2/json/... ─▶ Sim pipeline        /_sim/... ─▶ control
//!                /_sim/mtunnel/{node}/{vmid} ─▶ migration tunnel (one command per request)
//! ```
//!
//! Lifecycle: [`Server::bind`] binds (port 0 is fine) and prepares TLS; [`BoundServer::run`]
//! serves until the cancellation token fires, then lets open connections finish for a moment.

mod body;
mod control;
mod handler;
mod params;
mod response;
mod tls;
mod tunnel;

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

pub use tls::{CertSource, TlsIdentity};

use crate::error::SimError;
use crate::sim::Sim;
use handler::Handler;

/// How long a TLS handshake may take.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// How long open connections get to finish after shutdown.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a client may take to send a request's whole header (and how long a kept-alive
/// connection may sit idle before its next request starts). Without it, one half-sent request
/// holds a connection and its task until shutdown.
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// One listener.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Address to bind (`127.0.0.1:0` in tests).
    pub listen: SocketAddr,
    /// The node this listener is (`localhost` in paths means this node).
    pub node: String,
    /// The TLS certificate.
    pub cert: CertSource,
}

/// A listener to be bound.
#[derive(Debug)]
pub struct Server {
    sim: Sim,
    config: ServerConfig,
}

/// A bound listener, ready to [`run`](BoundServer::run).
pub struct BoundServer {
    sim: Sim,
    node: String,
    header_read_timeout: Duration,
    listener: TcpListener,
    local_addr: SocketAddr,
    identity: TlsIdentity,
    acceptor: TlsAcceptor,
}

impl std::fmt::Debug for BoundServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BoundServer")
            .field("node", &self.node)
            .field("local_addr", &self.local_addr)
            .field("identity", &self.identity)
            .finish_non_exhaustive()
    }
}

impl Server {
    /// A listener for `config.node` serving `sim`.
    pub fn new(sim: Sim, config: ServerConfig) -> Self {
        Self { sim, config }
    }

    /// Prepare the certificate and bind the address.
    pub async fn bind(self) -> Result<BoundServer, SimError> {
        let node = self.config.node.clone();
        let identity = match self.config.cert {
            CertSource::SelfSigned { dir } => {
                TlsIdentity::self_signed(std::slice::from_ref(&node), dir.as_deref())?
            }
            CertSource::Files { cert, key } => TlsIdentity::from_files(&cert, &key)?,
            CertSource::Identity(identity) => identity,
        };
        let acceptor = TlsAcceptor::from(identity.server_config()?);
        self.sim.set_node_certificate(&node, identity.info());
        let addr = self.config.listen;
        let io_err = |source| SimError::Io {
            addr: addr.to_string(),
            source,
        };
        let listener = TcpListener::bind(addr).await.map_err(io_err)?;
        let local_addr = listener.local_addr().map_err(io_err)?;
        Ok(BoundServer {
            sim: self.sim,
            node,
            header_read_timeout: HEADER_READ_TIMEOUT,
            listener,
            local_addr,
            identity,
            acceptor,
        })
    }
}

impl BoundServer {
    /// The same listener with another limit on reading a request header than
    /// [`HEADER_READ_TIMEOUT`] (tests use a short one).
    pub fn with_header_read_timeout(mut self, limit: Duration) -> Self {
        self.header_read_timeout = limit;
        self
    }

    /// The bound address (with the real port when 0 was asked for).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The node this listener serves.
    pub fn node(&self) -> &str {
        &self.node
    }

    /// The TLS identity.
    pub fn identity(&self) -> &TlsIdentity {
        &self.identity
    }

    /// What clients must trust (PEM).
    pub fn ca_pem(&self) -> &str {
        self.identity.ca_pem()
    }

    /// The served certificate (PEM).
    pub fn cert_pem(&self) -> &str {
        self.identity.cert_pem()
    }

    /// SHA-256 fingerprint of the served certificate, `AA:BB:...`.
    pub fn fingerprint_sha256(&self) -> &str {
        self.identity.fingerprint_sha256()
    }

    /// The certificate file, when one was written or loaded.
    pub fn cert_path(&self) -> Option<&Path> {
        self.identity.cert_path()
    }

    /// Serve until `shutdown` fires.
    pub async fn run(self, shutdown: CancellationToken) -> Result<(), SimError> {
        let tracker = TaskTracker::new();
        let handler = Handler {
            sim: self.sim.clone(),
            node: self.node.clone(),
            shutdown: shutdown.clone(),
        };
        loop {
            let accepted = tokio::select! {
                _ = shutdown.cancelled() => break,
                accepted = self.listener.accept() => accepted,
            };
            let (stream, _peer) = match accepted {
                Ok(a) => a,
                Err(e) => {
                    // Transient (EMFILE, aborted handshakes): keep serving.
                    tracing::warn!(error = %e, node = %self.node, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            };
            let handler = handler.clone();
            let acceptor = self.acceptor.clone();
            let header_read_timeout = self.header_read_timeout;
            tracker.spawn(serve_connection(
                stream,
                acceptor,
                handler,
                header_read_timeout,
            ));
        }
        tracker.close();
        if tokio::time::timeout(DRAIN_TIMEOUT, tracker.wait())
            .await
            .is_err()
        {
            tracing::debug!(node = %self.node, "connections still open at shutdown");
        }
        Ok(())
    }
}

async fn serve_connection(
    stream: TcpStream,
    acceptor: TlsAcceptor,
    handler: Handler,
    header_read_timeout: Duration,
) {
    let shutdown = handler.shutdown.clone();
    if handler.sim.faults().node_down(&handler.node) {
        // Accept, then never answer (not even the TLS handshake), until shutdown.
        shutdown.cancelled().await;
        drop(stream);
        return;
    }
    let tls = tokio::select! {
        _ = shutdown.cancelled() => return,
        tls = tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)) => tls,
    };
    let Ok(Ok(tls)) = tls else {
        return;
    };
    let handler = Arc::new(handler);
    let service = service_fn(move |req| {
        let h = Handler::clone(&handler);
        async move { h.handle(req).await }
    });
    let conn = http1::Builder::new()
        .title_case_headers(true)
        // hyper applies the header timeout only with a timer.
        .timer(TokioTimer::new())
        .header_read_timeout(header_read_timeout)
        .serve_connection(TokioIo::new(tls), service);
    tokio::pin!(conn);
    tokio::select! {
        _ = conn.as_mut() => {}
        _ = shutdown.cancelled() => {
            conn.as_mut().graceful_shutdown();
            let _ = tokio::time::timeout(DRAIN_TIMEOUT, conn).await;
        }
    }
}
