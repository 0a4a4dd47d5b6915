//! Join token records: stored with the hash of their secret, consumed one use at a time inside
//! the state machine (so two nodes racing for a token's last use cannot both get it), each use
//! assigning the joining node a fresh id.

use protocol::fleet::{EventKind, StoredToken, TokenRefusal, UnixMillis, validate_token_record};
use protocol::spec::SpecError;

use super::vms::not_found;
use super::{CommandReply, FleetState, StateError};

/// Expired token records are kept this long (for `token ls`), then dropped.
const EXPIRED_TOKEN_RETENTION_MS: u64 = 7 * 24 * 3600 * 1000;

impl FleetState {
    pub(super) fn add_token(&mut self, record: StoredToken) -> Result<CommandReply, StateError> {
        validate_token_record(&record)?;
        check_lifetime(record.created_at, record.expires_at)?;
        if self.tokens.contains_key(&record.id) {
            return Err(StateError::Conflict(format!(
                "token {} already exists",
                record.id
            )));
        }
        let now = record.created_at;
        self.tokens
            .retain(|_, t| t.expires_at.saturating_add(EXPIRED_TOKEN_RETENTION_MS) >= now);
        let message = format!(
            "created for role {}: {}, expires at {} ms",
            record.role,
            uses_text(record.uses_left),
            record.expires_at
        );
        let id = record.id.clone();
        self.tokens.insert(id.clone(), record);
        self.info(now, EventKind::Token, id, message);
        Ok(CommandReply::Done)
    }

    pub(super) fn use_token(
        &mut self,
        id: &str,
        secret_sha256: &str,
        now: UnixMillis,
    ) -> Result<CommandReply, StateError> {
        let token = self
            .tokens
            .get(id)
            .ok_or(StateError::Token(TokenRefusal::Unknown))?;
        // The secret first: who cannot show it learns nothing about the token's state.
        if !same_hash(&token.secret_sha256, secret_sha256) {
            return Err(StateError::Token(TokenRefusal::Tampered));
        }
        if let Some(refusal) = token.refusal(now) {
            return Err(StateError::Token(refusal));
        }
        let node_id = self.allocate_node_id();
        let Some(token) = self.tokens.get_mut(id) else {
            return Err(StateError::Token(TokenRefusal::Unknown));
        };
        token.uses_left = token.uses_left.map(|n| n.saturating_sub(1));
        let record = token.clone();
        self.info(
            now,
            EventKind::Token,
            id,
            format!(
                "used: node {node_id} joins as {} ({} left)",
                record.role,
                uses_text(record.uses_left)
            ),
        );
        Ok(CommandReply::TokenAccepted { record, node_id })
    }

    pub(super) fn revoke_token(
        &mut self,
        id: &str,
        now: UnixMillis,
    ) -> Result<CommandReply, StateError> {
        let token = self
            .tokens
            .get_mut(id)
            .ok_or_else(|| not_found(EventKind::Token, id))?;
        if token.revoked {
            return Ok(CommandReply::Done);
        }
        token.revoked = true;
        self.info(now, EventKind::Token, id, "revoked");
        Ok(CommandReply::Done)
    }
}

/// `Ok` if a record expiring at `expires_at` outlives its creation at `created_at`.
pub(super) fn check_lifetime(
    created_at: UnixMillis,
    expires_at: UnixMillis,
) -> Result<(), StateError> {
    if expires_at <= created_at {
        return Err(SpecError::new(
            "expires_at",
            expires_at,
            format!("a time after created_at ({created_at})"),
        )
        .into());
    }
    Ok(())
}

/// Compares two hex hashes, ignoring case, in time independent of where they differ.
pub(super) fn same_hash(stored: &str, presented: &str) -> bool {
    stored.len() == presented.len()
        && stored
            .bytes()
            .zip(presented.bytes())
            .fold(0u8, |acc, (x, y)| {
                acc | (x.to_ascii_lowercase() ^ y.to_ascii_lowercase())
            })
            == 0
}

fn uses_text(uses: Option<u32>) -> String {
    uses.map_or_else(|| "unlimited uses".to_string(), |n| format!("{n} use(s)"))
}
