//! Join tokens between the two crates that model them: `bootstrap::TokenRecord` counts time in
//! unix SECONDS (certificates do), the replicated `protocol::fleet::StoredToken` in unix
//! MILLISECONDS (every time in the fleet model does). This file is where a token record
//! becomes the other (the units' conversions are in `protocol::time`).

use bootstrap::{TokenError, TokenRecord};
use protocol::fleet::{StoredToken, TokenRefusal};
use protocol::time::{MILLIS_PER_SECOND, millis_to_secs, secs_to_millis};

/// The record bootstrap made, as the replicated state stores it.
pub fn stored_token(record: &TokenRecord) -> StoredToken {
    StoredToken {
        id: record.id.clone(),
        secret_sha256: record.secret_sha256.clone(),
        role: record.role,
        created_at: secs_to_millis(record.created_at),
        expires_at: secs_to_millis(record.expires_at),
        uses_left: record.uses_left,
        revoked: record.revoked,
    }
}

/// The replicated record as bootstrap verifies it. The expiry is rounded UP to a whole second,
/// so bootstrap never calls a token expired that the state machine still accepts (records made
/// by [`stored_token`] are whole seconds anyway).
pub fn token_record(stored: &StoredToken) -> TokenRecord {
    TokenRecord {
        id: stored.id.clone(),
        secret_sha256: stored.secret_sha256.clone(),
        role: stored.role,
        created_at: millis_to_secs(stored.created_at),
        expires_at: stored.expires_at.div_ceil(MILLIS_PER_SECOND),
        uses_left: stored.uses_left,
        revoked: stored.revoked,
    }
}

/// The state machine's refusal of token `id` told with bootstrap's message, so an operator
/// reads the same text whichever check caught the token (`stored` is the record, if known).
pub fn refusal_error(refusal: TokenRefusal, id: &str, stored: Option<&StoredToken>) -> TokenError {
    let id = id.to_string();
    match refusal {
        TokenRefusal::Unknown => TokenError::Unknown { id },
        TokenRefusal::Revoked => TokenError::Revoked { id },
        TokenRefusal::Expired => TokenError::Expired {
            id,
            expired_at: stored.map_or(0, |s| token_record(s).expires_at),
        },
        TokenRefusal::UsedUp => TokenError::UsedUp { id },
        TokenRefusal::Tampered => TokenError::Tampered { id },
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use protocol::Role;
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    use super::*;

    const NOW_SECS: u64 = 1_800_000_000;

    fn record() -> TokenRecord {
        let (record, _token) = TokenRecord::new(
            Role::Coordinator,
            Duration::from_secs(3600),
            Some(2),
            [7u8; 32],
            NOW_SECS,
            &mut StdRng::seed_from_u64(1),
        );
        record
    }

    #[test]
    fn seconds_become_milliseconds_in_the_replicated_record() {
        let stored = stored_token(&record());
        assert_eq!(stored.created_at, NOW_SECS * 1000);
        assert_eq!(stored.expires_at, (NOW_SECS + 3600) * 1000);
        assert_eq!(stored.uses_left, Some(2));
        assert_eq!(stored.role, Role::Coordinator);
    }

    #[test]
    fn a_record_round_trips_through_the_replicated_form() {
        let original = record();
        assert_eq!(token_record(&stored_token(&original)), original);
    }

    #[test]
    fn a_partial_second_expiry_rounds_up_so_bootstrap_is_never_stricter() {
        let mut stored = stored_token(&record());
        stored.expires_at += 1;
        assert_eq!(token_record(&stored).expires_at, NOW_SECS + 3600 + 1);
        stored.created_at += 999;
        assert_eq!(token_record(&stored).created_at, NOW_SECS);
    }

    #[test]
    fn refusals_are_told_with_bootstraps_messages() {
        let stored = stored_token(&record());
        let expired = refusal_error(TokenRefusal::Expired, "abc123", Some(&stored));
        assert_eq!(
            expired,
            TokenError::Expired {
                id: "abc123".into(),
                expired_at: NOW_SECS + 3600
            }
        );
        let used = refusal_error(TokenRefusal::UsedUp, "abc123", None).to_string();
        assert!(used.contains("has been used as many times"), "{used}");
        let revoked = refusal_error(TokenRefusal::Revoked, "abc123", None).to_string();
        assert!(revoked.contains("was revoked"), "{revoked}");
    }
}
