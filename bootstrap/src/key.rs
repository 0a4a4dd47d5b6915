//! A node's private key, generated where it is used: only a certificate signing request (CSR)
//! ever leaves the node, never the key.

use std::fmt;

use rcgen::{CertificateParams, DistinguishedName, DnType, KeyPair, PublicKeyData};

use crate::cert::{certificate_der, parse_der};
use crate::error::{BootstrapError, crypto};

/// An ECDSA P-256 key pair. Its `Debug` shows only the public key.
pub struct NodeKey {
    pair: KeyPair,
    pem: String,
}

impl NodeKey {
    /// A fresh key from the operating system's CSPRNG.
    pub fn generate() -> Result<NodeKey, BootstrapError> {
        let pair = KeyPair::generate().map_err(crypto("generate a node key"))?;
        let pem = pair.serialize_pem();
        Ok(NodeKey { pair, pem })
    }

    /// A key read back from its PKCS#8 PEM (as written by [`private_key_pem`](Self::private_key_pem)).
    pub fn from_pem(pem: &str) -> Result<NodeKey, BootstrapError> {
        let pair = KeyPair::from_pem(pem).map_err(crypto("read a private key"))?;
        Ok(NodeKey {
            pair,
            pem: pem.to_string(),
        })
    }

    /// The private key as PKCS#8 PEM. Secret: write it only with mode 0600, never log it.
    pub fn private_key_pem(&self) -> &str {
        &self.pem
    }

    /// A CSR proving possession of this key. It carries no names: the CA decides the identity.
    pub fn csr_pem(&self) -> Result<String, BootstrapError> {
        let mut params = CertificateParams::default();
        params.distinguished_name = DistinguishedName::new();
        params
            .distinguished_name
            .push(DnType::CommonName, "pvefleet node key");
        params
            .serialize_request(&self.pair)
            .and_then(|csr| csr.pem())
            .map_err(crypto("make a certificate signing request"))
    }

    /// Whether `cert_pem` certifies this key's public key.
    pub fn matches_certificate(&self, cert_pem: &str) -> Result<bool, BootstrapError> {
        let der = certificate_der(cert_pem, "the node certificate")?;
        let cert = parse_der(&der, "the node certificate")?;
        Ok(cert.public_key().raw == self.pair.subject_public_key_info().as_slice())
    }

    #[cfg(test)]
    pub(crate) fn pair(&self) -> &KeyPair {
        &self.pair
    }
}

impl fmt::Debug for NodeKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NodeKey")
            .field("public_key", &hex::encode(self.pair.public_key_raw()))
            .field("private_key", &"<redacted>")
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_never_shows_the_private_key() {
        let key = NodeKey::generate().unwrap();
        let shown = format!("{key:?}");
        assert!(shown.contains("<redacted>"));
        assert!(!shown.contains("PRIVATE KEY"));
        let body: String = key.private_key_pem().lines().nth(1).unwrap().to_string();
        assert!(!shown.contains(&body));
    }

    #[test]
    fn key_round_trips_through_pem() {
        let key = NodeKey::generate().unwrap();
        let back = NodeKey::from_pem(key.private_key_pem()).unwrap();
        assert_eq!(back.pair().public_key_raw(), key.pair().public_key_raw());
    }

    #[test]
    fn csr_verifies_and_carries_the_key() {
        let key = NodeKey::generate().unwrap();
        let csr =
            rcgen::CertificateSigningRequestParams::from_pem(&key.csr_pem().unwrap()).unwrap();
        assert_eq!(csr.public_key.der_bytes(), key.pair().public_key_raw());
    }
}
