//! TLS trust for the HTTPS backend: how the PVE node's certificate is checked.
//!
//! PVE nodes present either a self-signed certificate or one issued by the cluster CA
//! (`/etc/pve/pve-root-ca.pem`), made out to the node's name and addresses. The operator picks
//! one of three policies explicitly ([`TlsVerify`]); there is no default, so turning
//! verification off cannot happen by omission. Only the `ring` crypto provider is used.

use std::fmt;
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, verify_tls12_signature, verify_tls13_signature};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};
use sha2::{Digest, Sha256};

use crate::error::PveError;

/// How the server certificate is verified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TlsVerify {
    /// Trust exactly the certificates in this PEM file (the cluster CA
    /// `/etc/pve/pve-root-ca.pem`, or the node's self-signed certificate). The certificate
    /// must also be valid for the configured host name or IP address.
    CaFile(PathBuf),
    /// Accept the server iff the SHA-256 of its certificate (DER) is this fingerprint, written
    /// as PVE shows it (`ssl_fingerprint`, `AA:BB:...`, any case, colons optional). The host
    /// name is not checked (PVE certificates name the node, not the address used).
    PinnedSha256(String),
    /// Accept any certificate. Only for throw-away labs: anyone on the path can read the API
    /// token. A warning is logged when a backend is built with it.
    InsecureSkipVerify,
}

/// The rustls configuration (ring provider) for `verify`.
pub(crate) fn client_config(verify: &TlsVerify) -> Result<ClientConfig, PveError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| PveError::Config(format!("TLS setup: {e}")))?;
    let config = match verify {
        TlsVerify::CaFile(path) => builder
            .with_root_certificates(load_roots(path)?)
            .with_no_client_auth(),
        TlsVerify::PinnedSha256(text) => {
            let expected = parse_fingerprint(text)?;
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(PinnedCertVerifier::new(
                    Some(expected),
                    provider,
                )))
                .with_no_client_auth()
        }
        TlsVerify::InsecureSkipVerify => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(PinnedCertVerifier::new(None, provider)))
            .with_no_client_auth(),
    };
    Ok(config)
}

/// Read the trusted certificates of a PEM file.
fn load_roots(path: &Path) -> Result<RootCertStore, PveError> {
    let shown = path.display();
    let file = std::fs::File::open(path)
        .map_err(|e| PveError::Config(format!("cannot read the CA file {shown}: {e}")))?;
    let certs = rustls_pemfile::certs(&mut BufReader::new(file))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| PveError::Config(format!("CA file {shown} is not valid PEM: {e}")))?;
    if certs.is_empty() {
        return Err(PveError::Config(format!(
            "CA file {shown} holds no CERTIFICATE block"
        )));
    }
    let mut roots = RootCertStore::empty();
    for cert in certs {
        roots
            .add(cert)
            .map_err(|e| PveError::Config(format!("CA file {shown}: unusable certificate: {e}")))?;
    }
    Ok(roots)
}

/// Parse a SHA-256 fingerprint: 32 bytes in hex, either case, optionally colon-separated.
pub(crate) fn parse_fingerprint(text: &str) -> Result<[u8; 32], PveError> {
    let bad = || {
        PveError::Config(format!(
            "pinned fingerprint `{text}` is not a SHA-256 fingerprint \
             (32 hex bytes such as `AA:BB:...`, as in the node's `ssl_fingerprint`)"
        ))
    };
    let hex_digits: String = text.trim().chars().filter(|c| *c != ':').collect();
    if hex_digits.len() != 64 {
        return Err(bad());
    }
    let mut out = [0u8; 32];
    hex::decode_to_slice(&hex_digits, &mut out).map_err(|_| bad())?;
    Ok(out)
}

/// `AA:BB:...` in upper case, as PVE shows fingerprints.
pub(crate) fn format_fingerprint(bytes: &[u8]) -> String {
    bytes
        .iter()
        .map(|b| format!("{b:02X}"))
        .collect::<Vec<_>>()
        .join(":")
}

/// SHA-256 of a certificate's DER encoding.
pub(crate) fn cert_fingerprint(cert: &CertificateDer<'_>) -> [u8; 32] {
    Sha256::digest(cert.as_ref()).into()
}

/// The server's certificate did not have the pinned fingerprint.
#[derive(Debug, thiserror::Error)]
#[error("server certificate SHA-256 fingerprint {seen} does not match the pinned {expected}")]
struct FingerprintMismatch {
    seen: String,
    expected: String,
}

/// Accepts the end-entity certificate by its SHA-256 fingerprint (or, with `expected: None`,
/// any certificate), and still checks that the server holds the certificate's key by verifying
/// the handshake signatures.
pub(crate) struct PinnedCertVerifier {
    expected: Option<[u8; 32]>,
    provider: Arc<CryptoProvider>,
}

impl fmt::Debug for PinnedCertVerifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PinnedCertVerifier")
            .field(
                "expected",
                &self.expected.as_ref().map(|e| format_fingerprint(e)),
            )
            .finish()
    }
}

impl PinnedCertVerifier {
    /// A verifier pinning `expected` (`None`: accept any certificate).
    pub(crate) fn new(expected: Option<[u8; 32]>, provider: Arc<CryptoProvider>) -> Self {
        Self { expected, provider }
    }
}

impl ServerCertVerifier for PinnedCertVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let Some(expected) = self.expected else {
            return Ok(ServerCertVerified::assertion());
        };
        let seen = cert_fingerprint(end_entity);
        if seen == expected {
            Ok(ServerCertVerified::assertion())
        } else {
            let mismatch = FingerprintMismatch {
                seen: format_fingerprint(&seen),
                expected: format_fingerprint(&expected),
            };
            Err(rustls::Error::InvalidCertificate(CertificateError::Other(
                rustls::OtherError(Arc::new(mismatch)),
            )))
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
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
        verify_tls13_signature(
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

#[cfg(test)]
mod tests {
    use super::*;

    fn cert(name: &str) -> CertificateDer<'static> {
        rcgen::generate_simple_self_signed(vec![name.to_string()])
            .unwrap()
            .cert
            .der()
            .clone()
    }

    fn pinned(expected: Option<[u8; 32]>) -> PinnedCertVerifier {
        PinnedCertVerifier::new(expected, Arc::new(rustls::crypto::ring::default_provider()))
    }

    fn check(v: &PinnedCertVerifier, c: &CertificateDer<'_>) -> Result<(), rustls::Error> {
        let name = ServerName::try_from("pve1").unwrap();
        v.verify_server_cert(c, &[], &name, &[], UnixTime::now())
            .map(|_| ())
    }

    #[test]
    fn fingerprints_parse_in_any_case_with_or_without_colons() {
        let bytes: Vec<u8> = (0u8..32).map(|i| i * 7).collect();
        let upper = format_fingerprint(&bytes);
        assert_eq!(parse_fingerprint(&upper).unwrap().to_vec(), bytes);
        assert_eq!(
            parse_fingerprint(&upper.to_lowercase()).unwrap().to_vec(),
            bytes
        );
        assert_eq!(
            parse_fingerprint(&upper.replace(':', "")).unwrap().to_vec(),
            bytes
        );
        assert_eq!(
            parse_fingerprint(&format!(" {upper}\n")).unwrap().to_vec(),
            bytes
        );
    }

    #[test]
    fn malformed_fingerprints_are_config_errors() {
        let short = format_fingerprint(&[0xAB; 20]);
        let long = format_fingerprint(&[0xAB; 33]);
        let not_hex = format!("ZZ{}", &format_fingerprint(&[0xAB; 32])[2..]);
        for text in ["", "AA:BB", short.as_str(), long.as_str(), not_hex.as_str()] {
            assert!(
                matches!(parse_fingerprint(text), Err(PveError::Config(_))),
                "{text}"
            );
        }
    }

    #[test]
    fn pinned_verifier_accepts_only_the_pinned_certificate() {
        let good = cert("pve1");
        let other = cert("pve1");
        let v = pinned(Some(cert_fingerprint(&good)));
        assert!(check(&v, &good).is_ok());
        let err = check(&v, &other).unwrap_err().to_string();
        assert!(
            err.contains(&format_fingerprint(&cert_fingerprint(&other))),
            "{err}"
        );
        assert!(
            err.contains(&format_fingerprint(&cert_fingerprint(&good))),
            "{err}"
        );
    }

    #[test]
    fn pinned_verifier_ignores_the_host_name() {
        let c = cert("pve1.example");
        let v = pinned(Some(cert_fingerprint(&c)));
        let ip = ServerName::try_from("192.0.2.10").unwrap();
        assert!(
            v.verify_server_cert(&c, &[], &ip, &[], UnixTime::now())
                .is_ok()
        );
    }

    #[test]
    fn insecure_verifier_accepts_any_certificate() {
        let v = pinned(None);
        assert!(check(&v, &cert("a")).is_ok());
        assert!(check(&v, &cert("b")).is_ok());
    }

    #[test]
    fn ca_file_without_certificates_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ca.pem");
        std::fs::write(&path, "not pem\n").unwrap();
        let err = client_config(&TlsVerify::CaFile(path)).unwrap_err();
        assert!(
            matches!(err, PveError::Config(ref m) if m.contains("no CERTIFICATE")),
            "{err}"
        );
    }

    #[test]
    fn every_policy_builds_a_config() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ca.pem");
        let ck = rcgen::generate_simple_self_signed(vec!["pve1".to_string()]).unwrap();
        std::fs::write(&path, ck.cert.pem()).unwrap();
        assert!(client_config(&TlsVerify::CaFile(path)).is_ok());
        let fp = format_fingerprint(&cert_fingerprint(ck.cert.der()));
        assert!(client_config(&TlsVerify::PinnedSha256(fp)).is_ok());
        assert!(client_config(&TlsVerify::InsecureSkipVerify).is_ok());
    }
}
