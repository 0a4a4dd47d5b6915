//! The `renew` request on the Admin and Agent services: an authenticated node or operator asks
//! for a fresh certificate. The identity comes from the certificate the caller connected with,
//! never from the request: the CSR only proves that the caller holds the new key.
//!
//! Agents and coordinators are renewed by any member (every coordinator holds the CA key;
//! nothing goes through Raft). Admins, once the cluster is at encoding v2, are renewed by the
//! leader only: the new expiry is bounded by the admin's record (`renew_until`, fixed when the
//! admin was added: by default its first expiry, so a renewal rotates the key and keeps the
//! expiry) and recorded through Raft. An admin issued before v2 is recorded at its first
//! renewal, with its current certificate's expiry as the base of its bound.
//!
//! ```text
//!  caller (mTLS: role R, id N) ── RenewRequest{csr} ──▶ member
//!     revoked N? ─yes─▶ Unauthorized (with how to get a new identity)
//!     R = admin, cluster ≥ v2: leader ─▶ record (or AddAdmin) ─▶ expiry = min(now + 30 d,
//!        renew_until) ─▶ not later than the current one? ─▶ Unauthorized (bound reached)
//!        ─▶ CA issues ─▶ RenewAdmin{N, expiry} ─▶ RenewResponse{cert}
//!     otherwise: CA issues (R, N, default validity) ──▶ RenewResponse{cert}
//! ```

use std::sync::Arc;
use std::time::Duration;

use bootstrap::BootstrapError;
use bootstrap::ca::DEFAULT_LEAF_VALIDITY;
use protocol::join::{RenewRequest, RenewResponse};
use transport::{Caller, PeerIdentity, RemoteError, Router, Rpc, Service};

use super::Ctx;
use super::errors::unexpected;
use crate::gate;
use fleet::state::{Command, CommandReply, FleetState};
use protocol::Role;
use protocol::time::{Now, millis_to_secs, secs_to_millis, timestamp};
use protocol::version::ADMINS;

/// The services `renew` is served on: each certificate holder renews where it connects.
const SERVICES: [Service; 2] = [Service::Admin, Service::Agent];

/// Registers `renew` on the Admin and Agent services.
pub(crate) fn register(router: &mut Router, ctx: &Arc<Ctx>) {
    for service in SERVICES {
        let ctx = Arc::clone(ctx);
        router.handle(service, move |caller: Caller, req: RenewRequest| {
            let ctx = Arc::clone(&ctx);
            async move {
                let outcome = ctx.renew(&caller, &req).await;
                ctx.metrics.admin_call(RenewRequest::METHOD, &outcome);
                outcome
            }
        });
    }
}

/// Who the renewed certificate is for: the caller's own certificate identity. Only Join has
/// callers without a certificate, and `renew` is not served there.
pub(crate) fn renewal_identity(caller: &Caller) -> Result<PeerIdentity, RemoteError> {
    caller.peer.ok_or_else(|| {
        RemoteError::unauthorized(
            "renew needs the current certificate: connect with it (a node without one joins \
             with a token)",
        )
    })
}

/// A refusal of the CA as the caller should see it: a bad CSR is the caller's to fix.
fn issue_error(e: BootstrapError) -> RemoteError {
    match e {
        e @ BootstrapError::BadCsr { .. } => RemoteError::bad_request(e.to_string()),
        e => RemoteError::internal(format!("issue the renewed certificate: {e}")),
    }
}

impl Ctx {
    /// Issues a certificate for the caller's identity over the key of `req`'s CSR.
    pub(crate) async fn renew(
        &self,
        caller: &Caller,
        req: &RenewRequest,
    ) -> Result<RenewResponse, RemoteError> {
        let peer = renewal_identity(caller)?;
        // The transport gate already refuses revoked ids; asked again so that a renewal can
        // never outlive a removal that raced the call.
        let standing = self.read_local(|s| gate::standing(s, &peer))?;
        gate::decide(&peer, &standing).map_err(RemoteError::unauthorized)?;
        if peer.role == Role::Admin && self.read_local(FleetState::cluster_version)? >= ADMINS {
            return self.renew_admin(caller, peer, req).await;
        }
        let cert_pem = self
            .ca
            .issue(
                &req.csr_pem,
                peer.role,
                peer.node_id,
                DEFAULT_LEAF_VALIDITY,
                Now::read().secs(),
            )
            .map_err(issue_error)?;
        tracing::info!(peer = %peer, addr = %caller.addr, "renewed a certificate");
        Ok(RenewResponse { cert_pem })
    }
}

/// A renewal that leaves less than this much validity is refused as "bound reached".
const MIN_RENEWAL: Duration = Duration::from_secs(60);

impl Ctx {
    /// Renews an admin within its record's bound and records the new expiry (on the leader).
    async fn renew_admin(
        &self,
        caller: &Caller,
        peer: PeerIdentity,
        req: &RenewRequest,
    ) -> Result<RenewResponse, RemoteError> {
        if self.leader().await?.id != self.node_id {
            return Err(self.not_leader());
        }
        self.confirm_linearizable().await?;
        let id = peer.node_id;
        let now = Now::read();
        let current_ms = caller.cert_not_after.map(secs_to_millis);
        let record = match self.read_local(|s| s.admin(id).cloned())? {
            Some(record) => record,
            None => {
                let expires_at = current_ms.ok_or_else(|| {
                    RemoteError::unauthorized("renew needs the current certificate")
                })?;
                let add = Command::AddAdmin {
                    id: Some(id),
                    name: "recorded at its first renewal".to_string(),
                    issued_at: now.millis,
                    expires_at,
                    now: now.millis,
                };
                match self.propose(&add).await? {
                    CommandReply::AdminAdded { record } => record,
                    other => return Err(unexpected(RenewRequest::METHOD, &other)),
                }
            }
        };
        let wanted = now
            .millis
            .saturating_add(duration_millis(DEFAULT_LEAF_VALIDITY));
        let not_after_ms = wanted.min(record.renew_until);
        let no_later = current_ms.is_some_and(|current| not_after_ms <= current);
        if no_later || not_after_ms < now.millis.saturating_add(duration_millis(MIN_RENEWAL)) {
            return Err(RemoteError::unauthorized(format!(
                "admin {id} ({}) cannot be renewed past {}, the bound set when it was added: \
                 its certificate stays valid until it expires. Ask an operator for a new \
                 identity (`pvefleet admin add NAME`)",
                record.name,
                timestamp(record.renew_until)
            )));
        }
        let validity = Duration::from_secs(millis_to_secs(not_after_ms).saturating_sub(now.secs()));
        let cert_pem = self
            .ca
            .issue(&req.csr_pem, Role::Admin, id, validity, now.secs())
            .map_err(issue_error)?;
        let renewed = Command::RenewAdmin {
            id,
            expires_at: secs_to_millis(now.secs() + validity.as_secs()),
            now: now.millis,
        };
        self.propose(&renewed).await?;
        tracing::info!(peer = %peer, addr = %caller.addr, "renewed an admin certificate within its bound");
        Ok(RenewResponse { cert_pem })
    }
}

fn duration_millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use transport::RemoteCode;

    use super::*;

    #[test]
    fn the_renewed_identity_is_the_callers_certificate_and_none_is_refused() {
        let admin = PeerIdentity::new(Role::Admin, 4);
        let caller = Caller {
            service: Service::Admin,
            peer: Some(admin),
            addr: "127.0.0.1:9".parse().unwrap(),
            cert_not_after: Some(1_800_000_000),
        };
        assert_eq!(renewal_identity(&caller).unwrap(), admin);
        let anonymous = Caller {
            peer: None,
            ..caller
        };
        let refused = renewal_identity(&anonymous).unwrap_err();
        assert_eq!(refused.code, RemoteCode::Unauthorized);
    }

    #[test]
    fn a_bad_csr_is_the_callers_error_and_anything_else_the_members() {
        let bad = issue_error(BootstrapError::BadCsr {
            reason: "garbage".into(),
        });
        assert_eq!(bad.code, RemoteCode::BadRequest);
        assert!(bad.message.contains("garbage"), "{}", bad.message);
        let expired = issue_error(BootstrapError::CannotIssue {
            reason: "the cluster CA expired".into(),
        });
        assert_eq!(expired.code, RemoteCode::Internal);
    }
}
