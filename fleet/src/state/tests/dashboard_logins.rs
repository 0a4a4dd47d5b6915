//! Dashboard logins: a link redeemed once cluster-wide, refused when unknown, tampered, used,
//! expired, or minted by an admin since revoked; records pruned and bounded.

use protocol::fleet::{DashboardLogin, DashboardLoginRefusal};

use super::Fleet;
use crate::state::{Command, CommandReply, StateError};

const MINUTE: u64 = 60 * 1000;

fn hash(secret: u8) -> String {
    format!("{secret:02x}").repeat(32)
}

fn record(id: &str, secret: u8, issuer: u64, created_at: u64) -> DashboardLogin {
    DashboardLogin {
        id: id.into(),
        secret_sha256: hash(secret),
        issuer,
        read_only: false,
        created_at,
        expires_at: created_at + 15 * MINUTE,
        used: false,
    }
}

fn redeem(id: &str, secret: u8, now: u64) -> Command {
    Command::UseDashboardLogin {
        id: id.into(),
        secret_sha256: hash(secret),
        now,
    }
}

#[test]
fn a_login_is_redeemed_once_and_tells_who_minted_it() {
    let mut f = Fleet::new();
    let t0 = f.now;
    let mut ro = record("login1", 7, 3, t0);
    ro.read_only = true;
    f.ok(Command::AddDashboardLogin { record: ro });
    assert_eq!(
        f.ok(redeem("login1", 7, t0 + 1)),
        CommandReply::DashboardLoginAccepted {
            issuer: 3,
            read_only: true
        }
    );
    let again = f.err(redeem("login1", 7, t0 + 2));
    assert_eq!(
        again,
        StateError::DashboardLogin(DashboardLoginRefusal::Used)
    );
    assert!(again.to_string().contains("already used"), "{again}");
}

#[test]
fn unknown_tampered_and_expired_logins_are_refused_without_using_them() {
    let mut f = Fleet::new();
    let t0 = f.now;
    f.ok(Command::AddDashboardLogin {
        record: record("login1", 7, 3, t0),
    });
    let unknown = StateError::DashboardLogin(DashboardLoginRefusal::Unknown);
    assert_eq!(f.err(redeem("nope", 7, t0)), unknown);
    // A wrong secret reads as unknown: a guesser learns nothing about the login.
    assert_eq!(f.err(redeem("login1", 8, t0)), unknown);
    assert_eq!(
        f.err(redeem("login1", 7, t0 + 15 * MINUTE)),
        StateError::DashboardLogin(DashboardLoginRefusal::Expired)
    );
    // None of those used it.
    assert!(!f.state.dashboard_logins()["login1"].used);
}

#[test]
fn a_login_of_a_revoked_admin_opens_nothing() {
    let mut f = Fleet::new();
    let t0 = f.now;
    let admin = match f.ok(Command::AddAdmin {
        id: None,
        name: "alice".into(),
        issued_at: t0,
        expires_at: t0 + 1000 * MINUTE,
        now: t0,
    }) {
        CommandReply::AdminAdded { record } => record.id,
        other => panic!("{other:?}"),
    };
    f.ok(Command::AddDashboardLogin {
        record: record("login1", 7, admin, t0),
    });
    f.ok(Command::RevokeAdmin { id: admin, now: t0 });
    let e = f.err(redeem("login1", 7, t0 + 1));
    assert!(
        matches!(&e, StateError::Conflict(m) if m.contains("was revoked")),
        "{e}"
    );
    assert!(
        !f.state.dashboard_logins()["login1"].used,
        "a refusal changes nothing"
    );
}

#[test]
fn malformed_records_are_refused_and_old_ones_pruned() {
    let mut f = Fleet::new();
    let t0 = f.now;
    let mut backwards = record("a", 1, 1, t0);
    backwards.expires_at = t0;
    assert!(matches!(
        f.err(Command::AddDashboardLogin { record: backwards }),
        StateError::Invalid(_)
    ));
    let mut short = record("b", 1, 1, t0);
    short.secret_sha256 = "abc".into();
    assert!(matches!(
        f.err(Command::AddDashboardLogin { record: short }),
        StateError::Invalid(_)
    ));
    f.ok(Command::AddDashboardLogin {
        record: record("old", 1, 1, t0),
    });
    assert!(matches!(
        f.err(Command::AddDashboardLogin {
            record: record("old", 1, 1, t0)
        }),
        StateError::Conflict(_)
    ));
    // Two days later the expired record is gone.
    let later = t0 + 2 * 24 * 60 * MINUTE;
    f.ok(Command::AddDashboardLogin {
        record: record("new", 2, 1, later),
    });
    let ids: Vec<&String> = f.state.dashboard_logins().keys().collect();
    assert_eq!(ids, vec!["new"]);
}

#[test]
fn open_logins_are_bounded() {
    let mut f = Fleet::new();
    let t0 = f.now;
    for i in 0..300u64 {
        f.ok(Command::AddDashboardLogin {
            record: record(&format!("l{i:03}"), 1, 1, t0 + i),
        });
    }
    let logins = f.state.dashboard_logins();
    assert_eq!(logins.len(), 256);
    assert!(logins.contains_key("l299") && !logins.contains_key("l000"));
}
