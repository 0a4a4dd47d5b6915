//! Join tokens: uses counted down atomically, refusals for every bad case, fresh node ids.

use protocol::Role;
use protocol::fleet::{Member, MemberRole, StoredToken, TokenRefusal};

use super::Fleet;
use crate::state::{Command, CommandReply, StateError};

const HOUR: u64 = 3600 * 1000;

fn hash(secret: u8) -> String {
    format!("{secret:02x}").repeat(32)
}

fn record(id: &str, secret: u8, uses: Option<u32>, created_at: u64) -> StoredToken {
    StoredToken {
        id: id.into(),
        secret_sha256: hash(secret),
        role: Role::Agent,
        created_at,
        expires_at: created_at + 24 * HOUR,
        uses_left: uses,
        revoked: false,
    }
}

fn use_token(id: &str, secret: u8, now: u64) -> Command {
    Command::UseToken {
        id: id.into(),
        secret_sha256: hash(secret),
        now,
    }
}

#[test]
fn a_token_allows_exactly_its_uses_each_with_a_new_node_id() {
    let mut f = Fleet::new();
    let t0 = f.now;
    f.ok(Command::AddMember {
        member: Member {
            id: 1,
            addr: "10.0.0.1:7000".into(),
            role: MemberRole::Voter,
        },
        now: t0,
    });
    f.ok(Command::AddTokenRecord {
        record: record("tok1", 7, Some(2), t0),
    });
    let mut ids = Vec::new();
    for left in [Some(1), Some(0)] {
        match f.ok(use_token("tok1", 7, t0 + 1)) {
            CommandReply::TokenAccepted { record, node_id } => {
                assert_eq!(record.uses_left, left);
                ids.push(node_id);
            }
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(
        ids,
        vec![2, 3],
        "ids above every known member, never repeated"
    );
    assert_eq!(
        f.err(use_token("tok1", 7, t0 + 2)),
        StateError::Token(TokenRefusal::UsedUp)
    );
    assert!(
        f.err(use_token("tok1", 7, t0 + 2))
            .to_string()
            .contains("used up"),
        "operator-readable"
    );
}

#[test]
fn unknown_tampered_revoked_and_expired_tokens_are_refused() {
    let mut f = Fleet::new();
    let t0 = f.now;
    f.ok(Command::AddTokenRecord {
        record: record("tok1", 7, Some(5), t0),
    });
    f.ok(Command::AddTokenRecord {
        record: record("tok2", 8, Some(5), t0),
    });
    f.ok(Command::RevokeToken {
        id: "tok2".into(),
        now: t0,
    });
    let table = [
        (
            "unknown id",
            use_token("nope", 7, t0 + 1),
            TokenRefusal::Unknown,
        ),
        (
            "wrong secret",
            use_token("tok1", 6, t0 + 1),
            TokenRefusal::Tampered,
        ),
        (
            "revoked",
            use_token("tok2", 8, t0 + 1),
            TokenRefusal::Revoked,
        ),
        (
            "expired",
            use_token("tok1", 7, t0 + 24 * HOUR),
            TokenRefusal::Expired,
        ),
        (
            "wrong secret of an expired token",
            use_token("tok1", 1, t0 + 24 * HOUR),
            TokenRefusal::Tampered,
        ),
    ];
    for (what, cmd, refusal) in table {
        assert_eq!(f.err(cmd), StateError::Token(refusal), "{what}");
    }
    assert_eq!(
        f.state.tokens()["tok1"].uses_left,
        Some(5),
        "refusals consume nothing"
    );
    assert!(matches!(
        f.ok(use_token("tok1", 7, t0 + 24 * HOUR - 1)),
        CommandReply::TokenAccepted { .. }
    ));
    assert!(matches!(
        f.err(Command::RevokeToken {
            id: "nope".into(),
            now: t0
        }),
        StateError::NotFound { .. }
    ));
}

#[test]
fn token_records_are_checked_unique_and_pruned_a_week_after_expiry() {
    let mut f = Fleet::new();
    let t0 = f.now;
    let mut bad = record("a.b", 1, Some(1), t0);
    assert!(matches!(
        f.err(Command::AddTokenRecord {
            record: bad.clone()
        }),
        StateError::Invalid(_)
    ));
    bad.id = "ab".into();
    bad.expires_at = t0;
    assert!(matches!(
        f.err(Command::AddTokenRecord { record: bad }),
        StateError::Invalid(_)
    ));
    f.ok(Command::AddTokenRecord {
        record: record("old", 1, Some(1), t0),
    });
    assert!(matches!(
        f.err(Command::AddTokenRecord {
            record: record("old", 1, Some(1), t0)
        }),
        StateError::Conflict(_)
    ));
    let later = t0 + 24 * HOUR + 7 * 24 * HOUR;
    f.ok(Command::AddTokenRecord {
        record: record("new1", 1, Some(1), later),
    });
    assert!(
        f.state.tokens().contains_key("old"),
        "kept up to a week after expiry"
    );
    f.ok(Command::AddTokenRecord {
        record: record("new2", 1, Some(1), later + 1),
    });
    assert!(!f.state.tokens().contains_key("old"), "dropped after");
    let view = f.state.view();
    assert_eq!(
        view.tokens
            .iter()
            .map(|t| t.id.as_str())
            .collect::<Vec<_>>(),
        ["new1", "new2"]
    );
}

#[test]
fn an_unlimited_token_stays_unlimited_and_hashes_are_hex() {
    let mut f = Fleet::new();
    let t0 = f.now;
    f.ok(Command::AddTokenRecord {
        record: record("multi", 0xab, None, t0),
    });
    for _ in 0..3 {
        match f.ok(use_token("multi", 0xab, t0 + 1)) {
            CommandReply::TokenAccepted { record, .. } => assert_eq!(record.uses_left, None),
            other => panic!("{other:?}"),
        }
    }
    let upper = Command::UseToken {
        id: "multi".into(),
        secret_sha256: hash(0xab).to_uppercase(),
        now: t0,
    };
    assert!(
        matches!(f.ok(upper), CommandReply::TokenAccepted { .. }),
        "hex compares without case"
    );
    let mut bad = record("nothex", 1, None, t0);
    bad.secret_sha256 = "xyz".into();
    match f.err(Command::AddTokenRecord { record: bad }) {
        StateError::Invalid(e) => assert_eq!(e.field, "secret_sha256"),
        other => panic!("{other}"),
    }
    let short = Command::UseToken {
        id: "multi".into(),
        secret_sha256: "03".into(),
        now: t0,
    };
    assert_eq!(f.err(short), StateError::Token(TokenRefusal::Tampered));
}
