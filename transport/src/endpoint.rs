//! `Endpoint`: one UDP socket with its TLS identity. A server endpoint accepts the services it
//! was built for (see `Server`) and also dials; a client endpoint only dials; a join client
//! dials the Join service without a certificate, trusting a pinned CA hash. A certificate
//! endpoint can swap its certificate for new connections (`reload`), so a renewed certificate
//! takes effect without dropping the connections already open.

use std::collections::HashMap;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock};
use std::time::Duration;

use crate::codes::{CLOSE_DONE, CLOSE_WRONG_PEER};
use crate::config::TransportConfig;
use crate::connection::Connection;
use crate::handshake::{dial, peer_of};
use crate::identity::PeerIdentity;
use crate::material::TlsMaterial;
use crate::pin::join_client_config;
use crate::service::Service;
use crate::{Role, TransportError, tls};

/// The server name join clients send; the pinned verifier ignores it.
const JOIN_SERVER_NAME: &str = "join.pvefleet";

/// A QUIC endpoint. Cheap to clone; clones share the socket.
#[derive(Clone, Debug)]
pub struct Endpoint {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    quic: quinn::Endpoint,
    /// Replaced whole by `reload`; a dial clones the configuration it needs and releases the
    /// lock before awaiting anything.
    clients: RwLock<Clients>,
    services: Vec<Service>,
    identity: Option<PeerIdentity>,
    cfg: TransportConfig,
    /// Whether a `Server` stopped accepting on this endpoint: `reload` must not turn accepting
    /// back on. The lock also orders `reload` against that stop.
    accepting_stopped: Mutex<bool>,
}

#[derive(Debug)]
enum Clients {
    /// One configuration per service (the ALPN is part of the TLS configuration).
    Mutual(HashMap<Service, quinn::ClientConfig>),
    Join(quinn::ClientConfig),
}

impl Endpoint {
    /// Binds `bind` and serves `services` (run a `Server` on it); it can also dial. Like every
    /// constructor, it must run inside a Tokio runtime (the socket is driven by it).
    pub fn server(
        bind: SocketAddr,
        tls: &TlsMaterial,
        services: &[Service],
        cfg: TransportConfig,
    ) -> Result<Endpoint, TransportError> {
        cfg.validate()?;
        let material = tls.parse()?;
        let server = tls::server_config(&material, services, &cfg)?;
        let quic = quinn::Endpoint::server(server, bind)
            .map_err(|source| TransportError::Bind { addr: bind, source })?;
        let clients = mutual_clients(&material, &cfg)?;
        let mut services = services.to_vec();
        services.sort();
        services.dedup();
        Ok(Self::from_parts(
            quic,
            clients,
            services,
            Some(material.identity),
            cfg,
        ))
    }

    /// A dialing-only endpoint on an ephemeral port of all interfaces.
    pub fn client(tls: &TlsMaterial, cfg: TransportConfig) -> Result<Endpoint, TransportError> {
        Self::client_on(any_local(), tls, cfg)
    }

    /// A dialing-only endpoint bound to `bind`.
    pub fn client_on(
        bind: SocketAddr,
        tls: &TlsMaterial,
        cfg: TransportConfig,
    ) -> Result<Endpoint, TransportError> {
        cfg.validate()?;
        let material = tls.parse()?;
        let clients = mutual_clients(&material, &cfg)?;
        let quic = bind_client(bind)?;
        Ok(Self::from_parts(
            quic,
            clients,
            Vec::new(),
            Some(material.identity),
            cfg,
        ))
    }

    /// A join client (no certificate) trusting servers whose chain holds the CA with SHA-256
    /// `ca_sha256` (see `ca_fingerprint`), on an ephemeral port of all interfaces.
    pub fn join_client(
        ca_sha256: [u8; 32],
        cfg: TransportConfig,
    ) -> Result<Endpoint, TransportError> {
        Self::join_client_on(any_local(), ca_sha256, cfg)
    }

    /// A join client bound to `bind`.
    pub fn join_client_on(
        bind: SocketAddr,
        ca_sha256: [u8; 32],
        cfg: TransportConfig,
    ) -> Result<Endpoint, TransportError> {
        cfg.validate()?;
        let clients = Clients::Join(join_client_config(ca_sha256, &cfg)?);
        let quic = bind_client(bind)?;
        Ok(Self::from_parts(quic, clients, Vec::new(), None, cfg))
    }

    fn from_parts(
        quic: quinn::Endpoint,
        clients: Clients,
        services: Vec<Service>,
        identity: Option<PeerIdentity>,
        cfg: TransportConfig,
    ) -> Endpoint {
        let inner = Inner {
            quic,
            clients: RwLock::new(clients),
            services,
            identity,
            cfg,
            accepting_stopped: Mutex::new(false),
        };
        Endpoint {
            inner: Arc::new(inner),
        }
    }

    /// The bound address (the actual port when bound to port 0).
    pub fn local_addr(&self) -> Result<SocketAddr, TransportError> {
        self.inner
            .quic
            .local_addr()
            .map_err(|source| TransportError::Bind {
                addr: any_local(),
                source,
            })
    }

    /// This endpoint's own certificate identity (`None` for a join client).
    pub fn identity(&self) -> Option<PeerIdentity> {
        self.inner.identity
    }

    /// The services this endpoint serves (empty for client endpoints).
    pub fn services(&self) -> &[Service] {
        &self.inner.services
    }

    /// The timeouts and limits this endpoint applies.
    pub fn config(&self) -> &TransportConfig {
        &self.inner.cfg
    }

    pub(crate) fn quic(&self) -> &quinn::Endpoint {
        &self.inner.quic
    }

    /// Dials `peer` at `addr` on `service`. TLS checks the server's certificate against the
    /// cluster CA and the dialed name `<role>-<id>.pvefleet`; then its identity must be `peer`.
    pub async fn connect(
        &self,
        addr: SocketAddr,
        peer: PeerIdentity,
        service: Service,
    ) -> Result<Connection, TransportError> {
        let config = match &*self.clients() {
            Clients::Mutual(configs) => configs
                .get(&service)
                .cloned()
                .ok_or(TransportError::Unsupported("dial this service"))?,
            Clients::Join(_) => {
                return Err(TransportError::Unsupported(
                    "dial with a certificate (join client)",
                ));
            }
        };
        let name = peer.names().dns;
        let quic = dial(
            &self.inner.quic,
            config,
            addr,
            &name,
            self.inner.cfg.connect_timeout,
        )
        .await?;
        let found = peer_of(&quic);
        if !matches!(found, Ok(Some(id)) if id == peer) {
            quic.close(CLOSE_WRONG_PEER.into(), b"not the node dialed");
            return Err(TransportError::WrongPeer {
                expected: peer,
                found: found.ok().flatten(),
            });
        }
        Ok(Connection::new(quic, Some(peer), service, &self.inner.cfg))
    }

    /// Dials the Join service of any coordinator at `addr` (join clients only).
    pub async fn connect_join(&self, addr: SocketAddr) -> Result<Connection, TransportError> {
        let config = match &*self.clients() {
            Clients::Join(config) => config.clone(),
            Clients::Mutual(_) => {
                return Err(TransportError::Unsupported("dial Join (not a join client)"));
            }
        };
        let deadline = self.inner.cfg.connect_timeout;
        let quic = dial(&self.inner.quic, config, addr, JOIN_SERVER_NAME, deadline).await?;
        // The pinned verifier already required a coordinator; read who it was.
        let found = peer_of(&quic)?.filter(|p| p.role == Role::Coordinator);
        if found.is_none() {
            quic.close(CLOSE_WRONG_PEER.into(), b"not a coordinator");
            return Err(TransportError::Identity(
                "join server is not a coordinator".into(),
            ));
        }
        Ok(Connection::new(quic, found, Service::Join, &self.inner.cfg))
    }

    /// Presents the certificate of `tls` on every connection made or accepted from now on, as
    /// a server and as a client, trusting the CA of `tls` (the cluster CA, as before). The
    /// connections already open keep the certificate they were made with and go on working.
    ///
    /// The new certificate must carry this endpoint's identity: a renewal, not another node.
    /// On any error nothing changes. Join clients have no certificate to reload.
    pub fn reload(&self, tls: &TlsMaterial) -> Result<(), TransportError> {
        let Some(identity) = self.inner.identity else {
            return Err(TransportError::Unsupported(
                "reload a certificate (join client)",
            ));
        };
        let material = tls.parse()?;
        if material.identity != identity {
            return Err(TransportError::Identity(format!(
                "a reloaded certificate must keep the endpoint's identity {identity}, not {}",
                material.identity
            )));
        }
        // Everything is built before anything is swapped, so a bad material changes nothing.
        let clients = mutual_clients(&material, &self.inner.cfg)?;
        let server = if self.inner.services.is_empty() {
            None
        } else {
            Some(tls::server_config(
                &material,
                &self.inner.services,
                &self.inner.cfg,
            )?)
        };
        let stopped = self.accepting_stopped();
        if let Some(server) = server
            && !*stopped
        {
            self.inner.quic.set_server_config(Some(server));
        }
        drop(stopped);
        *self
            .inner
            .clients
            .write()
            .unwrap_or_else(PoisonError::into_inner) = clients;
        Ok(())
    }

    /// Stops accepting new connections for good (a `Server` stopping); `reload` keeps it so.
    pub(crate) fn stop_accepting(&self) {
        let mut stopped = self.accepting_stopped();
        *stopped = true;
        self.inner.quic.set_server_config(None);
    }

    fn accepting_stopped(&self) -> MutexGuard<'_, bool> {
        // A flag cannot be left half-written by a panic elsewhere.
        self.inner
            .accepting_stopped
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn clients(&self) -> std::sync::RwLockReadGuard<'_, Clients> {
        self.inner
            .clients
            .read()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Closes every connection of this endpoint (clients' and server's) at once and waits up to
    /// `grace` for the peers to be told. Close `Connection`s and stop `Server`s first: this
    /// discards undelivered data.
    pub async fn close(&self, grace: Duration) {
        self.inner.quic.close(CLOSE_DONE.into(), b"endpoint closed");
        let _ = tokio::time::timeout(grace, self.inner.quic.wait_idle()).await;
    }
}

fn mutual_clients(
    material: &crate::material::ParsedMaterial,
    cfg: &TransportConfig,
) -> Result<Clients, TransportError> {
    let mut configs = HashMap::new();
    for service in Service::ALL {
        configs.insert(service, tls::client_config(material, service, cfg)?);
    }
    Ok(Clients::Mutual(configs))
}

/// The unspecified IPv6 address (dual-stack on Linux), port 0.
fn any_local() -> SocketAddr {
    (Ipv6Addr::UNSPECIFIED, 0).into()
}

fn bind_client(bind: SocketAddr) -> Result<quinn::Endpoint, TransportError> {
    match quinn::Endpoint::client(bind) {
        Ok(quic) => Ok(quic),
        // Hosts without IPv6 cannot bind `[::]`; fall back to IPv4 only.
        Err(_) if bind == any_local() => {
            let v4: SocketAddr = (Ipv4Addr::UNSPECIFIED, 0).into();
            quinn::Endpoint::client(v4).map_err(|source| TransportError::Bind { addr: v4, source })
        }
        Err(source) => Err(TransportError::Bind { addr: bind, source }),
    }
}

#[cfg(test)]
#[path = "endpoint_tests.rs"]
mod tests;
