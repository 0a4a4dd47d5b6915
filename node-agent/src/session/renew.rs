//! The agent renews its own certificate (agents never hold the CA key): at start and then every
//! check interval, `node.pem` is read; from two thirds of its life on, a CSR for the agent's
//! key goes to any coordinator member as a `renew` call on the Agent service (every member
//! holds the CA key, so no leader is needed). The answer must be for the same key and identity;
//! it is loaded into the endpoint (new connections present it, the open one carries on) and
//! then written over `node.pem`.
//!
//! ```text
//!  tick ─▶ node.pem due? ─no─▶ sleep
//!               │ yes
//!  node.key ─▶ CSR ─▶ RenewRequest ─▶ member 1, 2, … (first answer) ─▶ check_renewed
//!          ─▶ endpoint.reload ─▶ write node.pem (atomic)
//! ```
//!
//! The endpoint is reloaded before the file is written: if the write fails, the file is still
//! due at the next check and the renewal runs again.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bootstrap::paths::{read_public, read_secret, write_public};
use bootstrap::{BootstrapError, CertIdentity, JoinError, NodeDir, NodeKey, cert_identity};
use protocol::join::{RenewRequest, RenewResponse};
use tokio_util::sync::CancellationToken;
use transport::{Endpoint, PeerIdentity, Service, TlsMaterial, TransportError};

use super::link::resolve;
use super::targets::Target;

/// How often the certificate is checked (it lives 30 days and is renewed after 20).
pub const RENEW_CHECK: Duration = Duration::from_secs(3600);

/// Why a renewal did not happen this time.
#[derive(Debug, thiserror::Error)]
pub enum RenewError {
    /// A file could not be read or written, or a PEM text is unusable.
    #[error("{0}")]
    Files(#[from] BootstrapError),
    /// The certificate received is not for this agent's key or identity.
    #[error("{0}")]
    Check(#[from] JoinError),
    /// No member issued a certificate.
    #[error("no coordinator renewed the certificate: {0}")]
    Unanswered(String),
    /// The endpoint refused the new certificate.
    #[error("load the new certificate: {0}")]
    Reload(#[from] TransportError),
}

/// The agent's certificate renewal, run as one task of the agent.
#[derive(Debug)]
pub struct CertRenewal {
    /// The agent's endpoint (dials the members, presents the certificate).
    pub endpoint: Endpoint,
    /// Where `node.pem`, `node.key` and `ca.pem` are.
    pub dir: NodeDir,
    /// The members to ask, in order.
    pub members: Vec<Target>,
    /// Time between two checks.
    pub every: Duration,
}

impl CertRenewal {
    /// Checks now, then every `every`, until `stop` is cancelled.
    pub async fn run(self, stop: CancellationToken) {
        loop {
            match self.check(unix_now()).await {
                Ok(Some(new)) => tracing::info!(
                    not_after = new.not_after,
                    renew_at = new.renew_at(),
                    "renewed the agent certificate"
                ),
                Ok(None) => {}
                Err(e) => tracing::warn!(
                    error = %e,
                    retry_in_secs = self.every.as_secs(),
                    "cannot renew the agent certificate; retrying at the next check"
                ),
            }
            tokio::select! {
                () = stop.cancelled() => return,
                () = tokio::time::sleep(self.every) => {}
            }
        }
    }

    /// Renews the certificate if it is due at `now` (unix seconds); the new certificate's
    /// identity, or `None` when nothing was due.
    pub async fn check(&self, now: u64) -> Result<Option<CertIdentity>, RenewError> {
        let cert_path = self.dir.node_cert();
        let current = cert_identity(&read_public(&cert_path)?)?;
        if !current.needs_renewal(now) {
            return Ok(None);
        }
        let key_pem = read_secret(&self.dir.node_key())?;
        let key = NodeKey::from_pem(&key_pem)?;
        let request = RenewRequest {
            csr_pem: key.csr_pem()?,
        };
        let response = self.ask(&request).await?;
        // Also refuses a certificate naming someone else than this agent.
        let renewed = bootstrap::check_renewed(&key, &current, &response.cert_pem)?;
        let ca_pem = read_public(&self.dir.ca_cert())?;
        self.endpoint.reload(&TlsMaterial::new(
            ca_pem,
            response.cert_pem.clone(),
            key_pem,
        ))?;
        write_public(&cert_path, &response.cert_pem)?;
        Ok(Some(renewed))
    }

    /// The first member's answer.
    async fn ask(&self, request: &RenewRequest) -> Result<RenewResponse, RenewError> {
        let mut reasons = Vec::new();
        for member in &self.members {
            let answer = async {
                let addr = resolve(&member.addr).await?;
                let conn = self
                    .endpoint
                    .connect(addr, PeerIdentity::coordinator(member.id), Service::Agent)
                    .await
                    .map_err(|e| e.to_string())?;
                let answer = conn.call(request).await.map_err(|e| e.to_string());
                conn.close().await;
                answer
            };
            match answer.await {
                Ok(response) => return Ok(response),
                Err(reason) => reasons.push(format!("{member}: {reason}")),
            }
        }
        Err(RenewError::Unanswered(reasons.join("; ")))
    }
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
