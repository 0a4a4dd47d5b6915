//! Join tokens as the replicated state keeps them: only the SHA-256 of the secret, never the
//! secret itself (that lives in the token text the operator hands to the joining node).

use std::fmt;

use serde::{Deserialize, Serialize};

use super::UnixMillis;
use crate::identity::Role;
use crate::spec::validate::check;
use crate::spec::{SpecError, rules};

/// A join token's record (mirror of the bootstrap crate's record).
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredToken {
    /// The token's public id (the third part of `pvf1.<ca>.<id>.<secret>`).
    pub id: String,
    /// SHA-256 of the secret part, 64 lower-case hex digits (as the bootstrap crate writes it).
    pub secret_sha256: String,
    /// The role a node joining with it receives.
    pub role: Role,
    /// When it was created.
    pub created_at: UnixMillis,
    /// It is refused from this instant on.
    pub expires_at: UnixMillis,
    /// Joins it still allows; `None` = no limit before expiry.
    pub uses_left: Option<u32>,
    /// Revoked by an operator.
    pub revoked: bool,
}

impl fmt::Debug for StoredToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The hash is not the secret, but nothing reads it from logs either.
        f.debug_struct("StoredToken")
            .field("id", &self.id)
            .field("role", &self.role)
            .field("created_at", &self.created_at)
            .field("expires_at", &self.expires_at)
            .field("uses_left", &self.uses_left)
            .field("revoked", &self.revoked)
            .finish_non_exhaustive()
    }
}

impl StoredToken {
    /// The record without its hash, for listing.
    pub fn view(&self) -> TokenView {
        TokenView {
            id: self.id.clone(),
            role: self.role,
            created_at: self.created_at,
            expires_at: self.expires_at,
            uses_left: self.uses_left,
            revoked: self.revoked,
        }
    }

    /// Why the token cannot be used at `now` (ignoring the secret), or `None` if it can.
    pub fn refusal(&self, now: UnixMillis) -> Option<TokenRefusal> {
        if self.revoked {
            Some(TokenRefusal::Revoked)
        } else if now >= self.expires_at {
            Some(TokenRefusal::Expired)
        } else if self.uses_left == Some(0) {
            Some(TokenRefusal::UsedUp)
        } else {
            None
        }
    }
}

/// A token's record as listed (no hash).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenView {
    /// The token's public id.
    pub id: String,
    /// The role it grants.
    pub role: Role,
    /// When it was created.
    pub created_at: UnixMillis,
    /// When it expires.
    pub expires_at: UnixMillis,
    /// Joins it still allows; `None` = no limit before expiry.
    pub uses_left: Option<u32>,
    /// Revoked by an operator.
    pub revoked: bool,
}

/// Why a join token was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, thiserror::Error)]
#[serde(rename_all = "snake_case")]
pub enum TokenRefusal {
    /// No token with this id exists (never created, or pruned after expiring).
    #[error("unknown token: no token with this id exists; create one with `pvefleet token create`")]
    Unknown,
    /// Revoked by an operator.
    #[error("token revoked: an operator revoked it; create a new one")]
    Revoked,
    /// Past its expiry.
    #[error("token expired: create a new one with `pvefleet token create`")]
    Expired,
    /// No uses left.
    #[error("token used up: it allowed no more joins; create a new one")]
    UsedUp,
    /// The secret does not match the record.
    #[error("token tampered with: its secret does not match; check that it was copied whole")]
    Tampered,
}

/// Checks a token record's id (part of the dot-separated token text) and hash syntax.
pub fn validate_token_record(record: &StoredToken) -> Result<(), SpecError> {
    check("id", &record.id, &rules::TOKEN_ID)?;
    validate_secret_sha256(&record.secret_sha256)
}

/// `Ok` if `hash` is a SHA-256 as 64 lower-case hex digits (how a token's or a dashboard
/// login's secret is stored).
///
/// # Errors
/// A [`SpecError`] naming `secret_sha256` (with its length, never its value).
pub fn validate_secret_sha256(hash: &str) -> Result<(), SpecError> {
    if hash.len() != 64 || !hash.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        return Err(SpecError::new(
            "secret_sha256",
            format_args!("<{} characters>", hash.len()),
            "a SHA-256 as 64 lower-case hex digits",
        ));
    }
    Ok(())
}
