//! Renewing the admin certificate a client was configured with: before its first call, a client
//! made from a configuration checks the certificate. From two thirds of its life on it asks a
//! coordinator for a new one over the same key (`renew`), writes it over the configured `cert`
//! file and presents it from then on. While the old certificate is valid, a failed renewal is
//! only a warning; an expired one cannot be renewed over the network (the cluster refuses it)
//! and is an error that says how to get a new one.
//!
//! ```text
//!  from_config ─▶ cert state at now: current ─▶ nothing to do
//!                                    due ─────▶ first call: RenewRequest{CSR of admin.key}
//!                                    │            ─▶ check ─▶ write cert (atomic) ─▶ reload
//!                                    expired ─▶ Err(CertificateExpired)
//! ```

use std::fmt;
use std::path::PathBuf;

use bootstrap::paths::write_public;
use bootstrap::{BootstrapError, CertIdentity, JoinError, NodeKey, cert_identity};
use transport::{TlsMaterial, TransportError};

use crate::error::ClientError;
use bootstrap::cli_config::CliConfig;
use protocol::time::secs_to_millis;
use protocol::time::timestamp;

/// Where a certificate stands at a moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CertState {
    /// Less than two thirds into its life.
    Current,
    /// Due for renewal, still valid.
    Due,
    /// No longer valid.
    Expired,
}

/// The state of the certificate `id` at `now` (unix seconds).
pub(crate) fn cert_state(id: &CertIdentity, now: u64) -> CertState {
    if id.is_expired(now) {
        CertState::Expired
    } else if id.needs_renewal(now) {
        CertState::Due
    } else {
        CertState::Current
    }
}

/// A configured admin certificate that is due: what renewing it needs. `Debug` hides the key.
pub(crate) struct DueCertificate {
    /// The configured `cert` file, rewritten with the renewed certificate.
    pub(crate) cert_path: PathBuf,
    /// The cluster CA (PEM).
    pub(crate) ca_pem: String,
    /// The configured key (PEM), kept: the renewed certificate is for the same key.
    pub(crate) key_pem: String,
    /// The certificate being renewed.
    pub(crate) current: CertIdentity,
}

impl fmt::Debug for DueCertificate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DueCertificate")
            .field("cert_path", &self.cert_path)
            .field("current", &self.current)
            .field("key_pem", &"<redacted>")
            .finish()
    }
}

/// What to do with the certificate `config` names (read into `tls`) at `now`: `Some` when it
/// is due, an error when it expired. A certificate whose identity cannot be read is left to
/// the TLS handshake to judge.
pub(crate) fn plan(
    config: &CliConfig,
    tls: &TlsMaterial,
    now: u64,
) -> Result<Option<DueCertificate>, ClientError> {
    let Ok(current) = cert_identity(&tls.cert_chain_pem) else {
        return Ok(None);
    };
    match cert_state(&current, now) {
        CertState::Current => Ok(None),
        CertState::Expired => Err(ClientError::CertificateExpired {
            path: config.cert.clone(),
            expired_at: timestamp(secs_to_millis(current.not_after)),
        }),
        CertState::Due => Ok(Some(DueCertificate {
            cert_path: config.cert.clone(),
            ca_pem: tls.ca_pem.clone(),
            key_pem: tls.key_pem.clone(),
            current,
        })),
    }
}

/// Why a due certificate was not renewed (the old one stays in use).
#[derive(Debug, thiserror::Error)]
pub(crate) enum RenewalError {
    /// The key could not be read or the CSR made, or the file not written.
    #[error("{0}")]
    Files(#[from] BootstrapError),
    /// No coordinator renewed it.
    #[error("{0}")]
    Call(#[from] ClientError),
    /// The coordinator's certificate is not for this key or identity.
    #[error("the coordinator's answer was refused: {0}")]
    Check(#[from] JoinError),
    /// The new certificate could not be loaded.
    #[error("load the renewed certificate: {0}")]
    Reload(#[from] TransportError),
}

impl DueCertificate {
    /// A CSR for the configured key.
    pub(crate) fn csr_pem(&self) -> Result<(NodeKey, String), RenewalError> {
        let key = NodeKey::from_pem(&self.key_pem)?;
        let csr = key.csr_pem()?;
        Ok((key, csr))
    }

    /// Checks the certificate a coordinator issued, writes it over the configured file and
    /// returns the material to present from now on with its identity.
    pub(crate) fn accept(
        &self,
        key: &NodeKey,
        cert_pem: &str,
    ) -> Result<(TlsMaterial, CertIdentity), RenewalError> {
        let renewed = bootstrap::check_renewed(key, &self.current, cert_pem)?;
        let material = TlsMaterial::new(self.ca_pem.clone(), cert_pem, self.key_pem.clone());
        // Refused before the file is touched if transport cannot use it.
        material.identity()?;
        write_public(&self.cert_path, cert_pem)?;
        Ok((material, renewed))
    }
}

#[cfg(test)]
mod tests {
    use protocol::Role;

    use super::*;

    fn identity(not_before: u64, not_after: u64) -> CertIdentity {
        CertIdentity {
            role: Role::Admin,
            node_id: 1,
            not_before,
            not_after,
        }
    }

    #[test]
    fn a_certificate_is_due_from_two_thirds_of_its_life_until_it_expires() {
        let id = identity(0, 300);
        assert_eq!(cert_state(&id, 0), CertState::Current);
        assert_eq!(cert_state(&id, 199), CertState::Current);
        assert_eq!(cert_state(&id, 200), CertState::Due);
        assert_eq!(cert_state(&id, 300), CertState::Due);
        assert_eq!(cert_state(&id, 301), CertState::Expired);
    }
}
