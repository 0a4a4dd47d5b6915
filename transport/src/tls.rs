//! rustls and quinn configurations for mutual TLS under the cluster CA. Every builder gets the
//! ring provider explicitly, so nothing depends on a process-wide default (which panics when two
//! providers are linked in). TLS 1.3 only (QUIC requires it); no session resumption, so every
//! connection presents and verifies a full certificate.

use std::sync::Arc;

use quinn::crypto::rustls::{QuicClientConfig, QuicServerConfig};
use rustls::RootCertStore;
use rustls::client::Resumption;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::CertificateDer;
use rustls::server::{NoServerSessionStorage, WebPkiClientVerifier};

use crate::TransportError;
use crate::config::TransportConfig;
use crate::material::ParsedMaterial;
use crate::service::Service;

/// The only crypto provider pvefleet uses.
pub(crate) fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn root_store(roots: &[CertificateDer<'static>]) -> Result<RootCertStore, TransportError> {
    let mut store = RootCertStore::empty();
    for ca in roots {
        store.add(ca.clone())?;
    }
    Ok(store)
}

/// The server side of an endpoint: the node's certificate (with the CA appended, so join
/// clients can find the CA their token pins), client certificates verified against the cluster
/// CA only, one ALPN per served service.
///
/// With `Join` among the services the verifier must also let certificate-less clients finish
/// the handshake; the server then admits them on the Join ALPN only (`Service::authorize`).
pub(crate) fn server_config(
    material: &ParsedMaterial,
    services: &[Service],
    cfg: &TransportConfig,
) -> Result<quinn::ServerConfig, TransportError> {
    if services.is_empty() {
        return Err(TransportError::Config(
            "a server needs at least one service".into(),
        ));
    }
    let provider = provider();
    let roots = Arc::new(root_store(&material.roots)?);
    let mut verifier = WebPkiClientVerifier::builder_with_provider(roots, provider.clone());
    if services.contains(&Service::Join) {
        verifier = verifier.allow_unauthenticated();
    }
    let verifier = verifier
        .build()
        .map_err(|e| TransportError::Material(format!("client verifier: {e}")))?;

    let mut chain = material.chain.clone();
    for ca in &material.roots {
        if !chain.contains(ca) {
            chain.push(ca.clone());
        }
    }
    let mut tls = rustls::ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])?
        .with_client_cert_verifier(verifier)
        .with_single_cert(chain, material.key.clone_key())?;
    tls.alpn_protocols = services.iter().map(|s| s.alpn().to_vec()).collect();
    tls.session_storage = Arc::new(NoServerSessionStorage {});
    tls.send_tls13_tickets = 0;

    let quic = QuicServerConfig::try_from(tls)
        .map_err(|e| TransportError::Config(format!("QUIC server crypto: {e}")))?;
    let mut server = quinn::ServerConfig::with_crypto(Arc::new(quic));
    server.transport_config(cfg.quic_server()?);
    Ok(server)
}

/// A client configuration for one service: the server must chain to the cluster CA and match
/// the dialed name; this node's certificate is presented.
pub(crate) fn client_config(
    material: &ParsedMaterial,
    service: Service,
    cfg: &TransportConfig,
) -> Result<quinn::ClientConfig, TransportError> {
    let roots = root_store(&material.roots)?;
    let mut tls = rustls::ClientConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])?
        .with_root_certificates(roots)
        .with_client_auth_cert(material.chain.clone(), material.key.clone_key())?;
    finish_client(&mut tls, service);
    quic_client(tls, cfg)
}

/// ALPN and resumption settings every client configuration shares.
pub(crate) fn finish_client(tls: &mut rustls::ClientConfig, service: Service) {
    tls.alpn_protocols = vec![service.alpn().to_vec()];
    tls.resumption = Resumption::disabled();
}

/// Wraps a rustls client configuration for QUIC with the endpoint's transport parameters.
pub(crate) fn quic_client(
    tls: rustls::ClientConfig,
    cfg: &TransportConfig,
) -> Result<quinn::ClientConfig, TransportError> {
    let quic = QuicClientConfig::try_from(tls)
        .map_err(|e| TransportError::Config(format!("QUIC client crypto: {e}")))?;
    let mut client = quinn::ClientConfig::new(Arc::new(quic));
    client.transport_config(cfg.quic_client()?);
    Ok(client)
}
