//! The cluster certificate authority: one self-signed CA per cluster (ECDSA P-256, about ten
//! years), which signs short-lived leaf certificates carrying the identity convention of
//! [`crate::names`]. Its key lives only on coordinators, in a 0600 file.

use std::fmt;
use std::time::Duration;

use protocol::{NodeId, Role};
use rand::RngCore;
use rcgen::{
    BasicConstraints, CertificateParams, CertificateSigningRequestParams, DistinguishedName,
    DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair, KeyUsagePurpose, PublicKeyData,
    SanType, SerialNumber,
};
use time::OffsetDateTime;

use crate::cert::{certificate_der, parse_der, sha256, validity_of};
use crate::csr_key;
use crate::error::{BootstrapError, crypto};
use crate::names::cert_names;

/// How long the cluster CA is valid: ten years (with leap days).
pub const CA_VALIDITY: Duration = Duration::from_secs(3652 * 86_400);

/// How long a node certificate is valid by default; nodes renew at two thirds of it.
pub const DEFAULT_LEAF_VALIDITY: Duration = Duration::from_secs(30 * 86_400);

/// How far back `not_before` is set, so a peer whose clock is a little behind accepts a
/// certificate issued just now.
pub const CLOCK_SKEW_ALLOWANCE: Duration = Duration::from_secs(300);

/// The cluster CA: its certificate and signing key. `Debug` hides the key.
pub struct ClusterCa {
    issuer: Issuer<'static, KeyPair>,
    cert_pem: String,
    cert_der: Vec<u8>,
    key_pem: String,
    not_after: u64,
}

impl ClusterCa {
    /// A new CA for `cluster_id`, valid from `now` (unix seconds) for [`CA_VALIDITY`].
    pub fn create(cluster_id: &str, now: u64) -> Result<ClusterCa, BootstrapError> {
        let mut params = CertificateParams::default();
        params.distinguished_name = DistinguishedName::new();
        params
            .distinguished_name
            .push(DnType::OrganizationName, "pvefleet");
        params.distinguished_name.push(
            DnType::CommonName,
            format!("pvefleet cluster CA {cluster_id}"),
        );
        // Path length 0: the CA signs leaves only, never another CA.
        params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        params.serial_number = Some(random_serial());
        params.not_before = at(now.saturating_sub(CLOCK_SKEW_ALLOWANCE.as_secs()))?;
        params.not_after = at(now.saturating_add(CA_VALIDITY.as_secs()))?;
        let key = KeyPair::generate().map_err(crypto("generate the CA key"))?;
        let cert = params
            .self_signed(&key)
            .map_err(crypto("self-sign the CA certificate"))?;
        let key_pem = key.serialize_pem();
        let cert_pem = cert.pem();
        let cert_der = cert.der().to_vec();
        Ok(ClusterCa {
            issuer: Issuer::new(params, key),
            cert_pem,
            cert_der,
            key_pem,
            not_after: now.saturating_add(CA_VALIDITY.as_secs()),
        })
    }

    /// The CA read back from `ca.pem` and `ca.key`. Refuses a key that is not the certificate's.
    pub fn load(cert_pem: &str, key_pem: &str) -> Result<ClusterCa, BootstrapError> {
        let cert_der = certificate_der(cert_pem, "the CA certificate")?;
        let cert = parse_der(&cert_der, "the CA certificate")?;
        if !cert.is_ca() {
            return Err(BootstrapError::BadCertificate {
                what: "the CA certificate",
                reason: "it is not a CA certificate (no basicConstraints CA:true)".into(),
            });
        }
        let key = KeyPair::from_pem(key_pem).map_err(crypto("read the CA key"))?;
        if cert.public_key().raw != key.subject_public_key_info().as_slice() {
            return Err(BootstrapError::KeyMismatch {
                key: "the CA key",
                cert: "the CA certificate",
            });
        }
        let (_, not_after) = validity_of(&cert);
        let issuer = Issuer::from_ca_cert_der(&cert_der.as_slice().into(), key)
            .map_err(crypto("read the CA certificate's issuer fields"))?;
        Ok(ClusterCa {
            issuer,
            cert_pem: cert_pem.to_string(),
            cert_der,
            key_pem: key_pem.to_string(),
            not_after,
        })
    }

    /// The CA certificate (PEM), given to every node.
    pub fn cert_pem(&self) -> &str {
        &self.cert_pem
    }

    /// The CA private key (PEM). Secret: write it only with mode 0600, never log it.
    pub fn key_pem(&self) -> &str {
        &self.key_pem
    }

    /// SHA-256 of the CA certificate's DER: what join tokens pin.
    pub fn sha256(&self) -> [u8; 32] {
        sha256(&self.cert_der)
    }

    /// When the CA itself expires (unix seconds); no leaf outlives it.
    pub fn not_after(&self) -> u64 {
        self.not_after
    }

    /// Signs a certificate for `role`/`node_id` over the key in `csr_pem`, valid from `now` for
    /// `validity` (cut at the CA's own expiry).
    ///
    /// Every name and extension in the CSR is ignored: the CSR only proves that the requester
    /// holds the key, and the identity is the one the cluster decided.
    pub fn issue(
        &self,
        csr_pem: &str,
        role: Role,
        node_id: NodeId,
        validity: Duration,
        now: u64,
    ) -> Result<String, BootstrapError> {
        let csr = CertificateSigningRequestParams::from_pem(csr_pem).map_err(|e| {
            BootstrapError::BadCsr {
                // A weak key fails the signature check too; say so rather than "invalid".
                reason: csr_key::key_problem(csr_pem).unwrap_or_else(|| e.to_string()),
            }
        })?;
        self.issue_for(&csr.public_key, role, node_id, validity, now)
    }

    fn issue_for(
        &self,
        public_key: &impl PublicKeyData,
        role: Role,
        node_id: NodeId,
        validity: Duration,
        now: u64,
    ) -> Result<String, BootstrapError> {
        if now >= self.not_after {
            return Err(BootstrapError::CannotIssue {
                reason: format!(
                    "the cluster CA expired at {} (unix seconds); the cluster needs a new CA",
                    self.not_after
                ),
            });
        }
        if validity.as_secs() == 0 {
            return Err(BootstrapError::CannotIssue {
                reason: "a validity of zero seconds".into(),
            });
        }
        let names = cert_names(role, node_id);
        let mut params = CertificateParams::default();
        params.distinguished_name = DistinguishedName::new();
        params
            .distinguished_name
            .push(DnType::OrganizationName, "pvefleet");
        params
            .distinguished_name
            .push(DnType::CommonName, names.dns.clone());
        params.subject_alt_names = vec![
            SanType::DnsName(
                names
                    .dns
                    .try_into()
                    .map_err(crypto("encode the DNS name"))?,
            ),
            SanType::URI(
                names
                    .uri
                    .try_into()
                    .map_err(crypto("encode the identity URI"))?,
            ),
        ];
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        // webpki checks serverAuth on servers and clientAuth on clients; every node is both.
        params.extended_key_usages = vec![
            ExtendedKeyUsagePurpose::ServerAuth,
            ExtendedKeyUsagePurpose::ClientAuth,
        ];
        params.use_authority_key_identifier_extension = true;
        // rcgen's default serial is a hash of the public key: a renewal with the same key would
        // repeat it, and serials must be unique per issuer.
        params.serial_number = Some(random_serial());
        params.not_before = at(now.saturating_sub(CLOCK_SKEW_ALLOWANCE.as_secs()))?;
        params.not_after = at(now.saturating_add(validity.as_secs()).min(self.not_after))?;
        let cert = params
            .signed_by(public_key, &self.issuer)
            .map_err(crypto("sign the node certificate"))?;
        Ok(cert.pem())
    }
}

impl fmt::Debug for ClusterCa {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClusterCa")
            .field("sha256", &hex::encode(self.sha256()))
            .field("not_after", &self.not_after)
            .field("key", &"<redacted>")
            .finish()
    }
}

fn at(unix: u64) -> Result<OffsetDateTime, BootstrapError> {
    i64::try_from(unix)
        .ok()
        .and_then(|s| OffsetDateTime::from_unix_timestamp(s).ok())
        .filter(|t| t.year() <= 9999)
        .ok_or(BootstrapError::TimeOutOfRange(unix))
}

/// 16 random bytes, top bit clear so the DER integer stays positive without padding.
fn random_serial() -> SerialNumber {
    let mut bytes = [0u8; 16];
    rand::rng().fill_bytes(&mut bytes);
    bytes[0] &= 0x7f;
    SerialNumber::from_slice(&bytes)
}

#[cfg(test)]
#[path = "ca_tests.rs"]
mod tests;
