//! The web dashboard every member can serve (off unless configured): server-rendered pages of
//! the fleet (overview, hosts, guests, VIPs, events, HA scenario runs), live over server-sent
//! events, with the CLI's actions behind a confirmation. It reads and acts only through the
//! member's own Admin handlers, as the admin whose one-time login opened the session, so it
//! shows the replicated truth and acts through the CLI's validated write path.
//!
//! ```text
//!  browser ─TLS─▶ Dashboard (hyper) ─▶ routes: session? csrf? ─▶ pages (askama) ◀─ Hub picture
//!                                                │ actions, login          ▲
//!                                                ▼                         │ Camera
//!                                     Router::call_local (Admin handlers: reads, writes via the leader)
//! ```
//!
//! Security: TLS only; every page, stream and action needs a session cookie
//! (`__Host-`, `Secure`, `HttpOnly`, `SameSite=Strict`) opened by redeeming a one-time login
//! (`pvefleet dashboard login`); forms that act carry the session's CSRF token; responses carry
//! a strict content security policy (no inline script or style) and templates escape every value.

mod actions;
mod app;
mod assets;
mod body;
mod detail_views;
mod forms;
mod live;
pub(crate) mod login_token;
mod pages;
mod routes;
mod scenarios;
mod sessions;
pub mod settings;
mod snapshot;
pub(crate) mod tls;
mod views;
#[cfg(test)]
mod views_tests;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use raft::store::MachineHandle;
use raft::types::Raft;
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use transport::Router;

use crate::machine::FleetMachine;
pub use settings::{DEFAULT_SCENARIO_DIR, DEFAULT_SESSION, DashboardCert, DashboardConfig};
pub use tls::DashboardTlsError;

use app::{App, reader};

/// How long a connection may take for its TLS handshake and request headers.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// How long requests in flight may take to finish at shutdown.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(3);

/// A bound dashboard, ready to serve.
pub(crate) struct Dashboard {
    listener: TcpListener,
    acceptor: TlsAcceptor,
    app: Arc<App>,
    hub: live::Hub,
    camera: snapshot::Camera,
    raft: Raft,
}

impl Dashboard {
    /// Binds `config.listen` with the member's TLS material (or the operator's files).
    pub(crate) async fn bind(
        config: &DashboardConfig,
        member_tls: &transport::TlsMaterial,
        parts: (Router, Raft, MachineHandle<FleetMachine>, u64),
    ) -> Result<Dashboard, crate::error::CoordinatorError> {
        let (router, raft, machine, member) = parts;
        let tls = match &config.cert {
            DashboardCert::Member => {
                tls::server_config(&member_tls.cert_chain_pem, &member_tls.key_pem)
            }
            DashboardCert::Files { cert, key } => tls::read_pem("certificate", cert)
                .and_then(|c| tls::server_config(&c, &tls::read_pem("key", key)?)),
        }
        .map_err(crate::error::CoordinatorError::DashboardTls)?;
        let listener = TcpListener::bind(config.listen).await.map_err(|source| {
            crate::error::CoordinatorError::HttpBind {
                addr: config.listen,
                source,
            }
        })?;
        let (hub, handle) = live::Hub::new();
        let camera = snapshot::Camera::new(router.clone(), reader());
        Ok(Dashboard {
            listener,
            acceptor: TlsAcceptor::from(tls),
            app: Arc::new(App {
                router,
                machine,
                sessions: sessions::Sessions::new(config.session),
                hub: handle,
                member,
                scenario_dir: config.scenario_dir.clone(),
                shutdown: CancellationToken::new(),
            }),
            hub,
            camera,
            raft,
        })
    }

    /// The address it listens on.
    pub(crate) fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Serves until `shutdown`, then waits (bounded) for requests in flight.
    pub(crate) async fn run(self, shutdown: CancellationToken) {
        let connections = TaskTracker::new();
        // The live streams end with the server.
        let streams = self.app.shutdown.clone();
        let server_down = shutdown.clone();
        connections.spawn(async move {
            server_down.cancelled().await;
            streams.cancel();
        });
        connections.spawn(self.hub.run(self.camera, self.raft, shutdown.clone()));
        loop {
            let accepted = tokio::select! {
                () = shutdown.cancelled() => break,
                accepted = self.listener.accept() => accepted,
            };
            let (stream, peer) = match accepted {
                Ok(a) => a,
                Err(e) => {
                    tracing::warn!(error = %e, "dashboard accept failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            };
            let app = Arc::clone(&self.app);
            let acceptor = self.acceptor.clone();
            let shutdown = shutdown.clone();
            connections.spawn(async move {
                let tls =
                    match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
                        Ok(Ok(tls)) => tls,
                        Ok(Err(e)) => {
                            tracing::debug!(%peer, error = %e, "dashboard TLS handshake failed");
                            return;
                        }
                        Err(_) => return,
                    };
                let respond = move |req| {
                    let app = Arc::clone(&app);
                    async move { routes::respond(&app, req, peer).await }
                };
                crate::http::connection::serve(
                    tls,
                    respond,
                    HANDSHAKE_TIMEOUT,
                    SHUTDOWN_GRACE,
                    &shutdown,
                )
                .await;
            });
        }
        connections.close();
        let _ = tokio::time::timeout(SHUTDOWN_GRACE, connections.wait()).await;
    }
}
