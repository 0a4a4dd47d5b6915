//! Trust for a node that has no certificate yet: its join token pins the SHA-256 of the cluster
//! CA certificate (DER), and the join client accepts a server only if the server's chain holds
//! a CA with that hash, the leaf chains to it, and the leaf names a coordinator (kubeadm's
//! `--discovery-token-ca-cert-hash`, k3s's secure token). The server name is not checked: the
//! joiner may dial any coordinator.

use std::fmt;
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::server::ParsedCertificate;
use rustls::{CertificateError, DigitallySignedStruct, OtherError, RootCertStore, SignatureScheme};
use sha2::{Digest, Sha256};

use crate::config::TransportConfig;
use crate::identity::peer_identity;
use crate::material::parse_certs;
use crate::service::Service;
use crate::tls::{finish_client, provider, quic_client};
use crate::{Role, TransportError};

/// The pin of a CA: SHA-256 of the first certificate in `ca_pem` (DER). Join tokens carry it.
pub fn ca_fingerprint(ca_pem: &str) -> Result<[u8; 32], TransportError> {
    let certs = parse_certs(ca_pem, "ca_pem")?;
    certs
        .first()
        .map(|ca| sha256(ca))
        .ok_or_else(|| TransportError::Material("ca_pem: no certificate".into()))
}

fn sha256(der: &[u8]) -> [u8; 32] {
    Sha256::digest(der).into()
}

/// The client configuration of the Join service: no client certificate, server pinned by CA hash.
pub(crate) fn join_client_config(
    ca_sha256: [u8; 32],
    cfg: &TransportConfig,
) -> Result<quinn::ClientConfig, TransportError> {
    let provider = provider();
    let verifier = PinnedCaVerifier {
        pin: ca_sha256,
        provider: provider.clone(),
    };
    let mut tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(verifier))
        .with_no_client_auth();
    finish_client(&mut tls, Service::Join);
    quic_client(tls, cfg)
}

/// Why a pinned verification failed; its `Debug` is the message rustls shows.
struct PinRefusal(String);

impl fmt::Debug for PinRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Display for PinRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for PinRefusal {}

fn refuse(message: String) -> rustls::Error {
    let other = OtherError(Arc::new(PinRefusal(message)));
    rustls::Error::InvalidCertificate(CertificateError::Other(other))
}

#[derive(Debug)]
struct PinnedCaVerifier {
    pin: [u8; 32],
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for PinnedCaVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let ca = intermediates
            .iter()
            .find(|c| sha256(c) == self.pin)
            .ok_or_else(|| {
                refuse(format!(
                    "no certificate in the server's chain has the pinned CA hash {}",
                    hex::encode(self.pin)
                ))
            })?;
        let mut roots = RootCertStore::empty();
        roots.add(ca.clone().into_owned())?;
        let others: Vec<_> = intermediates.iter().filter(|c| *c != ca).cloned().collect();
        let leaf = ParsedCertificate::try_from(end_entity)?;
        rustls::client::verify_server_cert_signed_by_trust_anchor(
            &leaf,
            &roots,
            &others,
            now,
            self.provider.signature_verification_algorithms.all,
        )?;
        let id = peer_identity(end_entity).map_err(|e| refuse(e.to_string()))?;
        if id.role != Role::Coordinator {
            return Err(refuse(format!("join server is {id}, not a coordinator")));
        }
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}
