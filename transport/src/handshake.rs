//! What a finished QUIC handshake proved: the negotiated service (ALPN) and the peer's
//! certificate identity, plus dialing with a deadline. Both ends use these after the handshake
//! to apply the rules TLS alone cannot express (role per service, node id dialed).

use std::net::SocketAddr;
use std::time::Duration;

use rustls::pki_types::CertificateDer;

use crate::TransportError;
use crate::codes::classify;
use crate::identity::{PeerIdentity, peer_identity};
use crate::service::Service;

/// The service the client and server agreed on; `None` if no known ALPN was negotiated.
pub(crate) fn service_of(conn: &quinn::Connection) -> Option<Service> {
    let data = conn.handshake_data()?;
    let data = data
        .downcast::<quinn::crypto::rustls::HandshakeData>()
        .ok()?;
    Service::from_alpn(data.protocol.as_deref()?)
}

/// The identity of the peer's certificate; `Ok(None)` if it presented none (join clients).
pub(crate) fn peer_of(conn: &quinn::Connection) -> Result<Option<PeerIdentity>, TransportError> {
    let Some(any) = conn.peer_identity() else {
        return Ok(None);
    };
    let chain = any
        .downcast::<Vec<CertificateDer<'static>>>()
        .map_err(|_| TransportError::Identity("peer identity is not a certificate chain".into()))?;
    match chain.first() {
        Some(leaf) => peer_identity(leaf).map(Some),
        None => Ok(None),
    }
}

/// When the peer's certificate expires (unix seconds), if it presented one.
pub(crate) fn peer_not_after(conn: &quinn::Connection) -> Option<u64> {
    let chain = conn
        .peer_identity()?
        .downcast::<Vec<CertificateDer<'static>>>()
        .ok()?;
    let (_, cert) = x509_parser::parse_x509_certificate(chain.first()?).ok()?;
    u64::try_from(cert.validity().not_after.timestamp()).ok()
}

/// Dials `addr` as `server_name` and finishes the handshake within `deadline`.
///
/// With TLS 1.3 the client finishes first: a server that refuses *our* certificate is only
/// noticed on the first call (as `Refused`), while a bad *server* certificate fails here.
pub(crate) async fn dial(
    endpoint: &quinn::Endpoint,
    config: quinn::ClientConfig,
    addr: SocketAddr,
    server_name: &str,
    deadline: Duration,
) -> Result<quinn::Connection, TransportError> {
    let connecting = endpoint
        .connect_with(config, addr, server_name)
        .map_err(|e| TransportError::Connect {
            addr,
            reason: e.to_string(),
        })?;
    match tokio::time::timeout(deadline, connecting).await {
        Err(_) => Err(TransportError::ConnectTimeout {
            addr,
            after: deadline,
        }),
        Ok(Err(e)) => Err(match classify(&e, addr) {
            TransportError::ConnectionLost(reason) => TransportError::Connect { addr, reason },
            other => other,
        }),
        Ok(Ok(conn)) => Ok(conn),
    }
}
