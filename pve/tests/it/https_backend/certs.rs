//! Certificates for the test servers: self-signed node certificates, a cluster CA with a node
//! certificate it issued, fingerprints, and TLS acceptors.

use std::sync::Arc;

use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio_rustls::TlsAcceptor;

pub(crate) struct NodeCert {
    pub(crate) der: CertificateDer<'static>,
    pub(crate) key: Vec<u8>,
    pub(crate) pem: String,
}

pub(crate) fn ring() -> Arc<rustls::crypto::CryptoProvider> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    Arc::new(rustls::crypto::ring::default_provider())
}

pub(crate) fn self_signed(names: &[&str]) -> NodeCert {
    let names: Vec<String> = names.iter().map(|s| s.to_string()).collect();
    let ck = rcgen::generate_simple_self_signed(names).unwrap();
    NodeCert {
        der: ck.cert.der().clone(),
        key: ck.signing_key.serialize_der(),
        pem: ck.cert.pem(),
    }
}

/// A cluster CA (its PEM) and a node certificate it issued for 127.0.0.1.
pub(crate) fn ca_and_node() -> (String, NodeCert) {
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "Proxmox Virtual Environment");
    let ca_cert = params.self_signed(&ca_key).unwrap();
    let issuer = rcgen::Issuer::new(params, ca_key);
    let key = rcgen::KeyPair::generate().unwrap();
    let leaf = rcgen::CertificateParams::new(vec!["127.0.0.1".to_string(), "pve1".to_string()])
        .unwrap()
        .signed_by(&key, &issuer)
        .unwrap();
    (
        ca_cert.pem(),
        NodeCert {
            der: leaf.der().clone(),
            key: key.serialize_der(),
            pem: leaf.pem(),
        },
    )
}

pub(crate) fn fingerprint(der: &CertificateDer<'_>) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(der.as_ref())
        .iter()
        .map(|b| format!("{b:02X}"))
        .collect::<Vec<_>>()
        .join(":")
}

/// A TLS server presenting `cert`, signing the handshake with `key` (normally its own).
pub(crate) fn tls_acceptor(cert: &NodeCert, key: &[u8]) -> TlsAcceptor {
    let provider = ring();
    let signing = provider
        .key_provider
        .load_private_key(PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.to_vec())))
        .unwrap();
    let certified = rustls::sign::CertifiedKey::new(vec![cert.der.clone()], signing);
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_cert_resolver(Arc::new(rustls::sign::SingleCertAndKey::from(certified)));
    TlsAcceptor::from(Arc::new(config))
}
