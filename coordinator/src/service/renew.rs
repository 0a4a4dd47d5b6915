//! The `renew` request on the Admin and Agent services: an authenticated node or operator asks
//! for a fresh certificate. Any member answers it (every coordinator holds the CA key; nothing
//! goes through Raft). The identity comes from the certificate the caller connected with,
//! never from the request: the CSR only proves that the caller holds the new key.
//!
//! ```text
//!  caller (mTLS: role R, id N) ── RenewRequest{csr} ──▶ member
//!     revoked N (agents, coordinators)? ─yes─▶ Unauthorized
//!     CA issues (R, N, default validity) for the CSR's key ──▶ RenewResponse{cert}
//! ```

use std::sync::Arc;

use bootstrap::BootstrapError;
use bootstrap::ca::DEFAULT_LEAF_VALIDITY;
use protocol::join::{RenewRequest, RenewResponse};
use transport::{Caller, PeerIdentity, RemoteError, Router, Rpc, Service};

use super::Ctx;
use crate::gate;
use protocol::time::Now;

/// The services `renew` is served on: each certificate holder renews where it connects.
const SERVICES: [Service; 2] = [Service::Admin, Service::Agent];

/// Registers `renew` on the Admin and Agent services.
pub(crate) fn register(router: &mut Router, ctx: &Arc<Ctx>) {
    for service in SERVICES {
        let ctx = Arc::clone(ctx);
        router.handle(service, move |caller: Caller, req: RenewRequest| {
            let ctx = Arc::clone(&ctx);
            async move {
                let outcome = ctx.renew(&caller, &req);
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
    pub(crate) fn renew(
        &self,
        caller: &Caller,
        req: &RenewRequest,
    ) -> Result<RenewResponse, RemoteError> {
        let peer = renewal_identity(caller)?;
        // The transport gate already refuses revoked ids; asked again so that a renewal can
        // never outlive a removal that raced the call.
        let revoked = self.read_local(|s| s.is_node_revoked(peer.node_id))?;
        gate::decide(&peer, revoked).map_err(RemoteError::unauthorized)?;
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

#[cfg(test)]
mod tests {
    use protocol::Role;
    use transport::RemoteCode;

    use super::*;

    #[test]
    fn the_renewed_identity_is_the_callers_certificate_and_none_is_refused() {
        let admin = PeerIdentity::new(Role::Admin, 4);
        let caller = Caller {
            service: Service::Admin,
            peer: Some(admin),
            addr: "127.0.0.1:9".parse().unwrap(),
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
