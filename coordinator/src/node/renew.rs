//! A member renews its own certificate: coordinators hold the cluster CA key, so no request
//! leaves the node. At start and then every `RunConfig::renew_check`, the certificate on disk
//! is checked; from two thirds of its life on, a new one is issued for the same key and
//! identity, loaded into the endpoint (new connections present it, open ones carry on), and
//! written over `node.pem`. A failure is logged and tried again at the next check: a third of
//! the certificate's life is left for that.
//!
//! ```text
//!  tick ─▶ node.pem due? ─no─▶ sleep
//!               │ yes
//!               ▼
//!  node.key ─▶ CSR ─▶ CA issues (coordinator, own id, default validity)
//!          ─▶ endpoint.reload ─▶ write node.pem (atomic)
//! ```
//!
//! The endpoint is reloaded before the file is written: if the write fails, the file is still
//! due at the next check and the renewal runs again; the other order could leave a renewed file
//! that is no longer due while the endpoint still presents the old certificate.

use std::sync::Arc;
use std::time::Duration;

use bootstrap::ca::DEFAULT_LEAF_VALIDITY;
use bootstrap::paths::{read_public, read_secret, write_public};
use bootstrap::{BootstrapError, CertIdentity, JoinError, NodeDir, NodeKey, cert_identity};
use protocol::Role;
use tokio_util::sync::CancellationToken;
use transport::{Endpoint, TlsMaterial, TransportError};

use crate::service::Ctx;
use protocol::time::Now;

/// The shortest pause between two checks, whatever the configuration says.
const MIN_CHECK: Duration = Duration::from_secs(1);

/// Why a renewal did not happen this time.
#[derive(Debug, thiserror::Error)]
pub(crate) enum RenewError {
    /// A file could not be read or written, or the CA refused to issue.
    #[error("{0}")]
    Files(#[from] BootstrapError),
    /// The issued certificate is not for this node's key or identity.
    #[error("{0}")]
    Check(#[from] JoinError),
    /// The endpoint refused the new certificate.
    #[error("load the new certificate: {0}")]
    Reload(#[from] TransportError),
}

/// The member's certificate renewal, run as one task of the member.
pub(crate) struct SelfRenewal {
    /// The CA and the member's node id.
    pub(crate) ctx: Arc<Ctx>,
    /// The member's endpoint (server and client).
    pub(crate) endpoint: Endpoint,
    /// Where `node.pem` and `node.key` are.
    pub(crate) dir: NodeDir,
    /// Time between two checks.
    pub(crate) every: Duration,
}

impl SelfRenewal {
    /// Checks now, then every `every`, until `stop` is cancelled.
    pub(crate) async fn run(self, stop: CancellationToken) {
        let every = self.every.max(MIN_CHECK);
        loop {
            match self.check(Now::read().secs()) {
                Ok(Some(new)) => tracing::info!(
                    node_id = self.ctx.node_id,
                    not_after = new.not_after,
                    renew_at = new.renew_at(),
                    "renewed the node certificate"
                ),
                Ok(None) => {}
                Err(e) => tracing::warn!(
                    node_id = self.ctx.node_id,
                    error = %e,
                    retry_in_secs = every.as_secs(),
                    "cannot renew the node certificate; retrying at the next check"
                ),
            }
            tokio::select! {
                () = stop.cancelled() => return,
                () = tokio::time::sleep(every) => {}
            }
        }
    }

    /// Renews the certificate if it is due at `now`; the new certificate's identity, or `None`
    /// when nothing was due.
    pub(crate) fn check(&self, now: u64) -> Result<Option<CertIdentity>, RenewError> {
        let cert_path = self.dir.node_cert();
        let current = cert_identity(&read_public(&cert_path)?)?;
        if !current.needs_renewal(now) {
            return Ok(None);
        }
        let key_pem = read_secret(&self.dir.node_key())?;
        let key = NodeKey::from_pem(&key_pem)?;
        let ca = &self.ctx.ca;
        let cert_pem = ca.issue(
            &key.csr_pem()?,
            Role::Coordinator,
            self.ctx.node_id,
            DEFAULT_LEAF_VALIDITY,
            now,
        )?;
        // Also refuses a node.pem that names someone else than this member.
        let renewed = bootstrap::check_renewed(&key, &current, &cert_pem)?;
        self.endpoint
            .reload(&TlsMaterial::new(ca.cert_pem(), cert_pem.clone(), key_pem))?;
        write_public(&cert_path, &cert_pem)?;
        Ok(Some(renewed))
    }
}
