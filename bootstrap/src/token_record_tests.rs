//! Token verification, table-driven: every refusal and the success, plus tampering.

use rand::SeedableRng;
use rand::rngs::StdRng;

use super::*;
use crate::token_policy::DEFAULT_TOKEN_TTL;

const CA: [u8; 32] = [0x11; 32];
const OTHER_CA: [u8; 32] = [0x22; 32];
const NOW: u64 = 1_800_000_000;

fn fresh(role: Role, uses: Option<u32>) -> (TokenRecord, JoinToken) {
    TokenRecord::new(
        role,
        DEFAULT_TOKEN_TTL,
        uses,
        CA,
        NOW,
        &mut StdRng::seed_from_u64(42),
    )
}

/// The token text with one of its four parts replaced.
fn with_part(token: &JoinToken, index: usize, value: &str) -> JoinToken {
    let text = token.to_string();
    let mut parts: Vec<&str> = text.split('.').collect();
    parts[index] = value;
    JoinToken::parse(&parts.join(".")).unwrap()
}

#[test]
fn verification_answers_the_role_or_names_the_refusal() {
    let (record, token) = fresh(Role::Agent, Some(2));
    let expired_at = record.expires_at;
    let revoked = TokenRecord {
        revoked: true,
        ..record.clone()
    };
    let used_up = TokenRecord {
        uses_left: Some(0),
        ..record.clone()
    };
    let other_id = TokenRecord {
        id: "zzzzzz".into(),
        ..record.clone()
    };
    let id = token.id().to_string();
    let wrong_secret = with_part(&token, 3, &"x".repeat(32));

    type Case<'a> = (
        &'a str,
        Option<&'a TokenRecord>,
        &'a JoinToken,
        [u8; 32],
        u64,
        Result<Role, TokenError>,
    );
    let cases: Vec<Case<'_>> = vec![
        ("valid", Some(&record), &token, CA, NOW, Ok(Role::Agent)),
        (
            "valid until the last second",
            Some(&record),
            &token,
            CA,
            expired_at - 1,
            Ok(Role::Agent),
        ),
        (
            "another cluster",
            Some(&record),
            &token,
            OTHER_CA,
            NOW,
            Err(TokenError::WrongCa {
                token_ca: hex::encode(CA),
                our_ca: hex::encode(OTHER_CA),
            }),
        ),
        (
            "no record",
            None,
            &token,
            CA,
            NOW,
            Err(TokenError::Unknown { id: id.clone() }),
        ),
        (
            "record of another id",
            Some(&other_id),
            &token,
            CA,
            NOW,
            Err(TokenError::Unknown { id: id.clone() }),
        ),
        (
            "wrong secret",
            Some(&record),
            &wrong_secret,
            CA,
            NOW,
            Err(TokenError::Tampered { id: id.clone() }),
        ),
        (
            "revoked",
            Some(&revoked),
            &token,
            CA,
            NOW,
            Err(TokenError::Revoked { id: id.clone() }),
        ),
        (
            "expired",
            Some(&record),
            &token,
            CA,
            expired_at,
            Err(TokenError::Expired {
                id: id.clone(),
                expired_at,
            }),
        ),
        (
            "used up",
            Some(&used_up),
            &token,
            CA,
            NOW,
            Err(TokenError::UsedUp { id: id.clone() }),
        ),
        // The secret is checked first: a wrong secret learns nothing about the record's state.
        (
            "revoked, wrong secret",
            Some(&revoked),
            &wrong_secret,
            CA,
            NOW,
            Err(TokenError::Tampered { id: id.clone() }),
        ),
    ];
    for (name, record, token, ca, now, expected) in cases {
        assert_eq!(verify(record, token, &ca, now), expected, "{name}");
    }
}

#[test]
fn every_refusal_says_what_to_do() {
    let errors = [
        TokenError::Malformed("x".into()),
        TokenError::WrongCa {
            token_ca: "a".into(),
            our_ca: "b".into(),
        },
        TokenError::Unknown {
            id: "abc123".into(),
        },
        TokenError::Tampered {
            id: "abc123".into(),
        },
        TokenError::Revoked {
            id: "abc123".into(),
        },
        TokenError::Expired {
            id: "abc123".into(),
            expired_at: 5,
        },
        TokenError::UsedUp {
            id: "abc123".into(),
        },
    ];
    for e in errors {
        assert!(e.to_string().contains("pvefleet token create"), "{e}");
    }
}

#[test]
fn tampered_tokens_are_refused() {
    let (record, token) = fresh(Role::Coordinator, None);
    // A changed secret.
    let secret = token.to_string().rsplit('.').next().unwrap().to_string();
    let flipped: String = secret
        .chars()
        .enumerate()
        .map(|(i, c)| {
            if i == 0 {
                if c == 'a' { 'b' } else { 'a' }
            } else {
                c
            }
        })
        .collect();
    let t = with_part(&token, 3, &flipped);
    assert!(matches!(
        verify(Some(&record), &t, &CA, NOW),
        Err(TokenError::Tampered { .. })
    ));
    // A changed CA hash: refused before the secret is even looked at.
    let t = with_part(&token, 1, &hex::encode(OTHER_CA));
    assert!(matches!(
        verify(Some(&record), &t, &CA, NOW),
        Err(TokenError::WrongCa { .. })
    ));
    // A changed id: no record under it, or another token's record whose secret differs.
    let t = with_part(&token, 2, "zzzzzz");
    assert!(matches!(
        verify(None, &t, &CA, NOW),
        Err(TokenError::Unknown { .. })
    ));
    let (other_record, _) = TokenRecord::new(
        Role::Agent,
        DEFAULT_TOKEN_TTL,
        None,
        CA,
        NOW,
        &mut StdRng::seed_from_u64(7),
    );
    let t = with_part(&token, 2, &other_record.id);
    assert!(matches!(
        verify(Some(&other_record), &t, &CA, NOW),
        Err(TokenError::Tampered { .. })
    ));
}

#[test]
fn a_corrupt_stored_hash_matches_nothing() {
    let (mut record, token) = fresh(Role::Agent, None);
    record.secret_sha256 = "not hex".into();
    assert!(matches!(
        verify(Some(&record), &token, &CA, NOW),
        Err(TokenError::Tampered { .. })
    ));
}

#[test]
fn record_stores_the_hash_never_the_secret() {
    let (record, token) = fresh(Role::Agent, Some(1));
    let secret = token.to_string().rsplit('.').next().unwrap().to_string();
    let stored = serde_json::to_string(&record).unwrap();
    assert!(!stored.contains(&secret));
    assert_eq!(record.secret_sha256, token.secret_sha256());
    assert_eq!(record.expires_at, NOW + 3600);
    assert_eq!(record.created_at, NOW);
    let back: TokenRecord = serde_json::from_str(&stored).unwrap();
    assert_eq!(back, record);
}

#[test]
fn consuming_counts_down_to_used_up() {
    let (mut record, token) = fresh(Role::Agent, Some(2));
    record.consume();
    assert_eq!(verify(Some(&record), &token, &CA, NOW), Ok(Role::Agent));
    record.consume();
    assert!(matches!(
        verify(Some(&record), &token, &CA, NOW),
        Err(TokenError::UsedUp { .. })
    ));
    record.consume();
    assert_eq!(record.uses_left, Some(0));

    let (mut unlimited, token) = fresh(Role::Agent, None);
    for _ in 0..1000 {
        unlimited.consume();
    }
    assert_eq!(verify(Some(&unlimited), &token, &CA, NOW), Ok(Role::Agent));
}
