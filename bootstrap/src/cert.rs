//! Reading certificates back: the identity a leaf certificate carries, its validity window,
//! when to renew it, and the SHA-256 fingerprint a join token pins.

use protocol::{NodeId, Role};
use sha2::{Digest, Sha256};
use x509_parser::certificate::X509Certificate;
use x509_parser::extensions::GeneralName;

use crate::error::BootstrapError;
use crate::names::{cert_names, parse_identity_uri};

/// Who a certificate names and when it is valid (unix seconds, both ends inclusive).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CertIdentity {
    /// The role it grants.
    pub role: Role,
    /// The holder's node id.
    pub node_id: NodeId,
    /// Valid from.
    pub not_before: u64,
    /// Valid until.
    pub not_after: u64,
}

impl CertIdentity {
    /// When the holder should ask for a new certificate: two thirds into its life, leaving a
    /// third of it to retry through a partition or a leader change.
    pub fn renew_at(&self) -> u64 {
        let life = self.not_after.saturating_sub(self.not_before);
        self.not_before
            .saturating_add(life / 3 * 2 + life % 3 * 2 / 3)
    }

    /// Whether the certificate is at or past [`renew_at`](Self::renew_at).
    pub fn needs_renewal(&self, now: u64) -> bool {
        now >= self.renew_at()
    }

    /// Whether the certificate is no longer valid at `now`.
    pub fn is_expired(&self, now: u64) -> bool {
        now > self.not_after
    }
}

/// The identity in a leaf certificate (PEM). Refuses a certificate without exactly one pvefleet
/// URI SAN, or whose DNS SAN does not match that URI.
pub fn cert_identity(cert_pem: &str) -> Result<CertIdentity, BootstrapError> {
    let der = certificate_der(cert_pem, "the node certificate")?;
    let cert = parse_der(&der, "the node certificate")?;
    identity_of(&cert)
}

/// Whether a leaf certificate (PEM) is two thirds or more into its life at `now`.
pub fn needs_renewal(cert_pem: &str, now: u64) -> Result<bool, BootstrapError> {
    Ok(cert_identity(cert_pem)?.needs_renewal(now))
}

/// When a certificate (PEM, leaf or CA) expires, in unix seconds.
pub fn certificate_not_after(cert_pem: &str) -> Result<u64, BootstrapError> {
    let der = certificate_der(cert_pem, "the certificate")?;
    Ok(validity_of(&parse_der(&der, "the certificate")?).1)
}

/// SHA-256 of a certificate's DER encoding: what a join token pins for the cluster CA.
pub fn certificate_sha256(cert_pem: &str) -> Result<[u8; 32], BootstrapError> {
    Ok(sha256(&certificate_der(cert_pem, "the CA certificate")?))
}

pub(crate) fn sha256(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

/// The DER inside a single `CERTIFICATE` PEM block.
pub(crate) fn certificate_der(pem: &str, what: &'static str) -> Result<Vec<u8>, BootstrapError> {
    let bad = |reason: String| BootstrapError::BadCertificate { what, reason };
    let (rest, block) = x509_parser::pem::parse_x509_pem(pem.trim_start().as_bytes())
        .map_err(|e| bad(format!("no PEM block ({e})")))?;
    if block.label != "CERTIFICATE" {
        return Err(bad(format!(
            "the PEM block is a '{}', not a 'CERTIFICATE'",
            block.label
        )));
    }
    if !rest.iter().all(u8::is_ascii_whitespace) {
        return Err(bad(
            "more than one PEM block; expected exactly one certificate".into(),
        ));
    }
    Ok(block.contents)
}

pub(crate) fn parse_der<'a>(
    der: &'a [u8],
    what: &'static str,
) -> Result<X509Certificate<'a>, BootstrapError> {
    let (rest, cert) =
        x509_parser::parse_x509_certificate(der).map_err(|e| BootstrapError::BadCertificate {
            what,
            reason: e.to_string(),
        })?;
    if !rest.is_empty() {
        return Err(BootstrapError::BadCertificate {
            what,
            reason: "trailing bytes after the certificate".into(),
        });
    }
    Ok(cert)
}

/// `(not_before, not_after)` in unix seconds; a date before 1970 reads as 0.
pub(crate) fn validity_of(cert: &X509Certificate<'_>) -> (u64, u64) {
    let v = cert.validity();
    let secs = |t: i64| u64::try_from(t).unwrap_or(0);
    (
        secs(v.not_before.timestamp()),
        secs(v.not_after.timestamp()),
    )
}

fn identity_of(cert: &X509Certificate<'_>) -> Result<CertIdentity, BootstrapError> {
    let no = |reason: String| BootstrapError::NoIdentity { reason };
    let san = cert
        .subject_alternative_name()
        .map_err(|e| no(format!("unreadable subject alternative names: {e}")))?
        .ok_or_else(|| no("no subject alternative names".into()))?;
    let mut uris = Vec::new();
    let mut dns = Vec::new();
    for name in &san.value.general_names {
        match name {
            GeneralName::URI(u) => uris.push(*u),
            GeneralName::DNSName(d) => dns.push(*d),
            _ => {}
        }
    }
    let ours: Vec<_> = uris.iter().filter_map(|u| parse_identity_uri(u)).collect();
    let (role, node_id) = match ours.as_slice() {
        [one] => *one,
        [] => return Err(no(format!("no urn:pvefleet URI among {uris:?}"))),
        _ => return Err(no(format!("several identities {uris:?}"))),
    };
    let expected = cert_names(role, node_id).dns;
    if !dns.contains(&expected.as_str()) {
        return Err(no(format!(
            "the DNS names {dns:?} do not include {expected}, which the URI requires"
        )));
    }
    let (not_before, not_after) = validity_of(cert);
    Ok(CertIdentity {
        role,
        node_id,
        not_before,
        not_after,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn identity(not_before: u64, not_after: u64) -> CertIdentity {
        CertIdentity {
            role: Role::Agent,
            node_id: 1,
            not_before,
            not_after,
        }
    }

    #[test]
    fn renewal_is_due_at_two_thirds_of_the_life() {
        let id = identity(1000, 1000 + 30 * 86_400);
        assert_eq!(id.renew_at(), 1000 + 20 * 86_400);
        assert!(!id.needs_renewal(1000 + 20 * 86_400 - 1));
        assert!(id.needs_renewal(1000 + 20 * 86_400));
        // Rounding never pushes renewal past two thirds.
        assert_eq!(identity(0, 10).renew_at(), 6);
        assert_eq!(identity(0, 11).renew_at(), 7);
    }

    #[test]
    fn expiry_is_after_not_after_inclusive() {
        let id = identity(0, 100);
        assert!(!id.is_expired(100));
        assert!(id.is_expired(101));
    }

    #[test]
    fn a_degenerate_window_needs_renewal_and_does_not_overflow() {
        assert!(identity(500, 100).needs_renewal(500));
        assert_eq!(identity(u64::MAX - 1, u64::MAX).renew_at(), u64::MAX - 1);
    }

    #[test]
    fn non_certificate_pem_is_refused_with_its_label() {
        let pem = "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n";
        let err = cert_identity(pem).unwrap_err().to_string();
        assert!(err.contains("PRIVATE KEY"), "{err}");
        assert!(cert_identity("hello").is_err());
    }
}
