//! The Join service, on the leader: a node without a certificate presents a join token and a
//! CSR. The token is checked with bootstrap's rules (CA pin, secret, revoked, expiry, uses),
//! one use is consumed and the node's id assigned through Raft (atomically: two nodes racing
//! for a last use cannot both get it), then the CA issues the certificate. Followers answer
//! `NotLeader` with the leader's address (its Join service listens on the same port).

use bootstrap::ca::DEFAULT_LEAF_VALIDITY;
use bootstrap::{JoinToken, TokenError};
use protocol::Role;
use protocol::fleet::validate_member_addr;
use protocol::join::{JoinRequest, JoinResponse};
use transport::RemoteError;

use super::Ctx;
use super::errors::{state_error, unexpected};
use crate::tokens::{refusal_error, token_record};
use fleet::state::{Command, CommandReply, StateError};
use protocol::time::Now;

fn refused(e: &TokenError) -> RemoteError {
    RemoteError::unauthorized(e.to_string())
}

impl Ctx {
    /// Admits a node (this member must lead).
    pub(crate) async fn join(&self, req: &JoinRequest) -> Result<JoinResponse, RemoteError> {
        match self.leader().await {
            Ok(leader) if leader.id == self.node_id => {}
            Ok(_) => return Err(self.not_leader()),
            Err(e) => return Err(e),
        }
        let token = JoinToken::parse(&req.token).map_err(|e| refused(&e))?;
        // The record as of now, confirmed with a quorum, so the check below is not against a
        // stale copy (the state machine checks again when the use is applied).
        self.confirm_linearizable().await?;
        let (stored, founded) =
            self.read_local(|s| (s.tokens().get(token.id()).cloned(), !s.members().is_empty()))?;
        if !founded {
            return Err(RemoteError::unavailable(
                "the cluster is still being founded (its first member is not recorded yet); retry",
            ));
        }
        let now = Now::read();
        let record = stored.as_ref().map(token_record);
        let role = bootstrap::verify(record.as_ref(), &token, &self.ca.sha256(), now.secs())
            .map_err(|e| refused(&e))?;
        // Everything the request could fail on is checked before a use is spent.
        if role == Role::Coordinator {
            let addr = req.addr.as_deref().unwrap_or_default();
            validate_member_addr(addr).map_err(|e| {
                RemoteError::bad_request(format!("a coordinator must say where it listens: {e}"))
            })?;
        }
        self.ca
            .issue(&req.csr_pem, role, 0, DEFAULT_LEAF_VALIDITY, now.secs())
            .map_err(|e| RemoteError::bad_request(e.to_string()))?;

        let used = self
            .propose_raw(&Command::UseToken {
                id: token.id().to_string(),
                secret_sha256: token.secret_sha256(),
                now: now.millis,
            })
            .await?;
        let node_id = match used {
            Ok(CommandReply::TokenAccepted { node_id, .. }) => node_id,
            Ok(other) => return Err(unexpected("join", &other)),
            // The token changed since it was checked (a concurrent join used it up, an
            // operator revoked it): told with bootstrap's message all the same.
            Err(StateError::Token(refusal)) => {
                let stored = self.read_local(|s| s.tokens().get(token.id()).cloned())?;
                return Err(refused(&refusal_error(
                    refusal,
                    token.id(),
                    stored.as_ref(),
                )));
            }
            Err(e) => return Err(state_error(e)),
        };
        let cert_pem = self
            .ca
            .issue(
                &req.csr_pem,
                role,
                node_id,
                DEFAULT_LEAF_VALIDITY,
                now.secs(),
            )
            .map_err(|e| {
                RemoteError::internal(format!("issue the certificate of node {node_id}: {e}"))
            })?;
        let members = self.read_local(|s| {
            s.members()
                .values()
                .map(|m| (m.id, m.addr.clone()))
                .collect()
        })?;
        tracing::info!(node_id, %role, "node joined");
        Ok(JoinResponse {
            node_id,
            cert_pem,
            ca_pem: self.ca.cert_pem().to_string(),
            cluster_id: self.cluster_id.clone(),
            members,
            ca_key_pem: (role == Role::Coordinator).then(|| self.ca.key_pem().to_string()),
        })
    }
}
