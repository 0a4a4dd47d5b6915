//! `TlsMaterial`: a node's PEM trust anchor, certificate chain and private key, and their
//! parsing into DER once per endpoint. The key never appears in `Debug` output or errors.

use std::fmt;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

use crate::TransportError;
use crate::identity::{PeerIdentity, peer_identity};

/// What a node needs for mutual TLS: the cluster CA, its own chain and key (all PEM).
#[derive(Clone, PartialEq, Eq)]
pub struct TlsMaterial {
    /// The cluster CA certificate(s): the only roots trusted, on both sides.
    pub ca_pem: String,
    /// This node's leaf certificate first, then any intermediates.
    pub cert_chain_pem: String,
    /// This node's private key (PKCS#8, SEC1 or PKCS#1).
    pub key_pem: String,
}

impl fmt::Debug for TlsMaterial {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsMaterial")
            .field("ca_pem", &format_args!("<{} bytes>", self.ca_pem.len()))
            .field(
                "cert_chain_pem",
                &format_args!("<{} bytes>", self.cert_chain_pem.len()),
            )
            .field("key_pem", &format_args!("<redacted>"))
            .finish()
    }
}

/// `TlsMaterial` decoded to DER, with the identity its leaf certificate carries.
pub(crate) struct ParsedMaterial {
    pub(crate) roots: Vec<CertificateDer<'static>>,
    pub(crate) chain: Vec<CertificateDer<'static>>,
    pub(crate) key: PrivateKeyDer<'static>,
    pub(crate) identity: PeerIdentity,
}

impl TlsMaterial {
    /// Material from the three PEM texts.
    pub fn new(
        ca_pem: impl Into<String>,
        cert_chain_pem: impl Into<String>,
        key_pem: impl Into<String>,
    ) -> Self {
        Self {
            ca_pem: ca_pem.into(),
            cert_chain_pem: cert_chain_pem.into(),
            key_pem: key_pem.into(),
        }
    }

    /// The identity this material's leaf certificate carries.
    pub fn identity(&self) -> Result<PeerIdentity, TransportError> {
        Ok(self.parse()?.identity)
    }

    pub(crate) fn parse(&self) -> Result<ParsedMaterial, TransportError> {
        let roots = parse_certs(&self.ca_pem, "ca_pem")?;
        let chain = parse_certs(&self.cert_chain_pem, "cert_chain_pem")?;
        // Only say which field failed: the key's bytes must never reach a log.
        let key = PrivateKeyDer::from_pem_slice(self.key_pem.as_bytes())
            .map_err(|_| TransportError::Material("key_pem: no readable private key".into()))?;
        let leaf = chain
            .first()
            .ok_or_else(|| TransportError::Material("cert_chain_pem: no certificate".into()))?;
        let identity = peer_identity(leaf)?;
        Ok(ParsedMaterial {
            roots,
            chain,
            key,
            identity,
        })
    }
}

/// Every certificate in a PEM text; at least one.
pub(crate) fn parse_certs(
    pem: &str,
    field: &str,
) -> Result<Vec<CertificateDer<'static>>, TransportError> {
    let certs = CertificateDer::pem_slice_iter(pem.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| TransportError::Material(format!("{field}: {e}")))?;
    if certs.is_empty() {
        return Err(TransportError::Material(format!("{field}: no certificate")));
    }
    Ok(certs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_never_shows_the_key() {
        let m = TlsMaterial::new("ca", "chain", "-----BEGIN PRIVATE KEY-----secret");
        let shown = format!("{m:?}");
        assert!(!shown.contains("secret"), "{shown}");
        assert!(shown.contains("<redacted>"));
    }

    #[test]
    fn empty_or_garbage_pem_is_a_material_error() {
        assert!(
            matches!(parse_certs("", "ca_pem"), Err(TransportError::Material(m)) if m.starts_with("ca_pem"))
        );
        let m = TlsMaterial::new("x", "y", "z");
        assert!(matches!(m.parse(), Err(TransportError::Material(_))));
    }
}
