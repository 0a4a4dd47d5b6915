//! What the replicated state stores about a join token (never its secret), and the pure check
//! of a presented token against it.

use std::time::Duration;

use protocol::Role;
use serde::{Deserialize, Serialize};

use crate::token::{JoinToken, TokenError};

/// A join token as the cluster remembers it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenRecord {
    /// The token's public id (6 characters `[a-z0-9]`).
    pub id: String,
    /// SHA-256 of the secret, hex.
    pub secret_sha256: String,
    /// The role a node joining with it receives.
    pub role: Role,
    /// When it was created (unix seconds).
    pub created_at: u64,
    /// When it stops being accepted (unix seconds).
    pub expires_at: u64,
    /// How many more joins it allows; `None` for no limit before expiry.
    pub uses_left: Option<u32>,
    /// Whether an operator revoked it.
    pub revoked: bool,
}

impl TokenRecord {
    /// A new token for the cluster whose CA hash is `ca_sha256`: the record to store and the
    /// token to show the operator once. The terms (`ttl`, `uses`) come from
    /// [`token_terms`](crate::token_policy::token_terms). `uses` of `Some(0)` makes a token that is already used up.
    ///
    /// Ids are random (36^6); the caller refuses to store a record whose id already exists.
    pub fn new(
        role: Role,
        ttl: Duration,
        uses: Option<u32>,
        ca_sha256: [u8; 32],
        now: u64,
        rng: &mut (impl rand::CryptoRng + ?Sized),
    ) -> (TokenRecord, JoinToken) {
        let token = JoinToken::generate(ca_sha256, rng);
        let record = TokenRecord {
            id: token.id().to_string(),
            secret_sha256: token.secret_sha256(),
            role,
            created_at: now,
            expires_at: now.saturating_add(ttl.as_secs()),
            uses_left: uses,
            revoked: false,
        };
        (record, token)
    }

    /// Counts one successful join (the state machine applies this with the join).
    pub fn consume(&mut self) {
        self.uses_left = self.uses_left.map(|n| n.saturating_sub(1));
    }
}

/// Checks a presented token against the record stored under its id (`None` if there is none)
/// and this cluster's CA hash; answers the role to grant.
///
/// The secret is checked before anything about the record is revealed, so only a holder of the
/// secret learns whether a token is revoked, expired or used up.
pub fn verify(
    record: Option<&TokenRecord>,
    token: &JoinToken,
    our_ca_sha256: &[u8; 32],
    now: u64,
) -> Result<Role, TokenError> {
    let id = || token.id().to_string();
    if token.ca_sha256() != *our_ca_sha256 {
        return Err(TokenError::WrongCa {
            token_ca: hex::encode(token.ca_sha256()),
            our_ca: hex::encode(our_ca_sha256),
        });
    }
    let Some(record) = record.filter(|r| r.id == token.id()) else {
        return Err(TokenError::Unknown { id: id() });
    };
    // A corrupt stored hash matches nothing (all-zero is no SHA-256 output anyone can aim at
    // without a preimage).
    let mut stored = [0u8; 32];
    if hex::decode_to_slice(&record.secret_sha256, &mut stored).is_err() {
        stored = [0u8; 32];
    }
    if !constant_time_eq(&stored, &token.secret_digest()) {
        return Err(TokenError::Tampered { id: id() });
    }
    if record.revoked {
        return Err(TokenError::Revoked { id: id() });
    }
    if now >= record.expires_at {
        return Err(TokenError::Expired {
            id: id(),
            expired_at: record.expires_at,
        });
    }
    if record.uses_left == Some(0) {
        return Err(TokenError::UsedUp { id: id() });
    }
    Ok(record.role)
}

/// Compares digests without an early exit, so timing does not reveal how many leading bytes of
/// a guessed secret's hash were right.
fn constant_time_eq(a: &[u8; 32], b: &[u8; 32]) -> bool {
    let diff = a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y));
    std::hint::black_box(diff) == 0
}

#[cfg(test)]
#[path = "token_record_tests.rs"]
mod tests;
