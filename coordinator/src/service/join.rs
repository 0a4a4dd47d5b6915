//! The Join service, on the leader: a node without a certificate presents a join token and a
//! CSR. The token is checked with bootstrap's rules (CA pin, secret, revoked, expiry, uses),
//! one use is consumed and the node's id assigned through Raft (atomically: two nodes racing
//! for a last use cannot both get it), then the CA issues the certificate. Followers answer
//! `NotLeader` with the leader's address (its Join service listens on the same port).
//!
//! Anyone can call this service, so a wrong token must cost no Raft work: the token is checked
//! first against the local state machine, and only a token that passes there gets the quorum
//! round of the linearizable check (which then catches a revocation or use the local copy has
//! not applied yet). See `docs/design/join-surface.md`.

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
        let token = JoinToken::parse(&req.token).map_err(|e| refused(&e))?;
        match self.leader().await {
            Ok(leader) if leader.id == self.node_id => {}
            Ok(_) => return Err(self.not_leader()),
            Err(e) => return Err(e),
        }
        self.check_token_locally(&token)?;
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

    /// Refuses a token the local state machine already proves wrong, without any Raft work.
    ///
    /// Every refusal but `Unknown` is final whatever the local copy misses: a token's CA hash,
    /// id and secret never change, and revoked, expired or used up never turn back. `Unknown`
    /// is final only once this leader applied an entry of its own term: every token created
    /// before its term is then applied here, and one created during it was applied here before
    /// its creator was told. Otherwise (just elected) the token goes on to the quorum check.
    fn check_token_locally(&self, token: &JoinToken) -> Result<(), RemoteError> {
        let (stored, founded) =
            self.read_local(|s| (s.tokens().get(token.id()).cloned(), !s.members().is_empty()))?;
        if !founded {
            // Answered after the quorum check, as before: "still being founded, retry".
            return Ok(());
        }
        let record = stored.as_ref().map(token_record);
        let now = Now::read();
        match bootstrap::verify(record.as_ref(), token, &self.ca.sha256(), now.secs()) {
            Ok(_) => Ok(()),
            Err(TokenError::Unknown { .. }) if !self.applied_own_term() => Ok(()),
            Err(e) => Err(refused(&e)),
        }
    }

    /// Whether the last entry applied here was written in the current term.
    fn applied_own_term(&self) -> bool {
        let metrics = self.raft.metrics();
        let m = metrics.borrow();
        m.last_applied
            .is_some_and(|applied| applied.leader_id.term == m.current_term)
    }
}
