//! Operator identities: ids drawn once, renewals bounded by the record, revocation by id and
//! final, and a v1 snapshot never silently drops them.

use protocol::version::{CURRENT, Version};

use super::Fleet;
use crate::state::{Command, CommandReply, StateError, decode_snapshot, encode_snapshot};

const DAY: u64 = 86_400_000;

fn add(id: Option<u64>, name: &str, expires_at: u64) -> Command {
    Command::AddAdmin {
        id,
        name: name.into(),
        issued_at: 1_000,
        expires_at,
        now: 1_000,
    }
}

fn added(reply: CommandReply) -> protocol::fleet::AdminRecord {
    match reply {
        CommandReply::AdminAdded { record } => record,
        other => panic!("{other:?}"),
    }
}

#[test]
fn renewals_stay_within_the_bound_fixed_when_the_admin_was_added() {
    let mut f = Fleet::new();
    // Default allowance 0: a renewal may not push the expiry at all.
    let init = added(f.ok(add(Some(1), "init", 30 * DAY)));
    assert_eq!(init.renew_until, 30 * DAY);
    let e = f.err(Command::RenewAdmin {
        id: 1,
        expires_at: 31 * DAY,
        now: 2,
    });
    assert!(
        matches!(&e, StateError::Conflict(m) if m.contains("renewed up to")),
        "{e}"
    );
    f.ok(Command::RenewAdmin {
        id: 1,
        expires_at: 30 * DAY,
        now: 2,
    });

    // With an allowance of 7 days, later admins may be renewed up to a week past their expiry.
    f.ok(Command::SetAdminRenewal {
        renewal_ms: 7 * DAY,
        now: 3,
    });
    let alice = added(f.ok(add(None, "alice", DAY)));
    assert_eq!((alice.id, alice.renew_until), (2, 8 * DAY));
    f.ok(Command::RenewAdmin {
        id: 2,
        expires_at: 8 * DAY,
        now: 4,
    });
    assert_eq!(f.state.admin(2).unwrap().expires_at, 8 * DAY);
    assert!(matches!(
        f.err(Command::RenewAdmin {
            id: 9,
            expires_at: DAY,
            now: 4
        }),
        StateError::NotFound { .. }
    ));
}

#[test]
fn revocation_is_by_id_final_and_covers_ids_never_recorded() {
    let mut f = Fleet::new();
    added(f.ok(add(Some(1), "init", 30 * DAY)));
    f.ok(Command::RevokeAdmin { id: 1, now: 5 });
    f.ok(Command::RevokeAdmin { id: 1, now: 6 }); // again: nothing changes
    assert_eq!(f.state.admin(1).unwrap().revoked_at, Some(5));
    assert!(
        f.state
            .admin_refusal(1)
            .unwrap()
            .contains("pvefleet admin add")
    );
    assert!(matches!(
        f.err(Command::RenewAdmin {
            id: 1,
            expires_at: DAY,
            now: 7
        }),
        StateError::Conflict(_)
    ));
    assert!(matches!(
        f.err(add(Some(1), "again", DAY)),
        StateError::Conflict(_)
    ));
    // An id issued outside the cluster (offline, with the CA key) is revocable too, and is
    // never drawn for a new admin afterwards.
    f.ok(Command::RevokeAdmin { id: 40, now: 8 });
    assert!(f.state.admin_refusal(40).is_some());
    let next = added(f.ok(add(None, "bob", DAY)));
    assert_eq!(next.id, 41);
    assert!(f.state.admin_refusal(41).is_none());
    assert!(matches!(f.err(add(None, "", DAY)), StateError::Conflict(_)));
    assert!(matches!(
        f.err(add(None, "late", 500)),
        StateError::Conflict(_)
    ));
}

#[test]
fn a_v1_snapshot_reads_into_an_empty_registry_and_is_never_written_over_admins() {
    let mut f = Fleet::new();
    let v1 = Version(1);
    let plain = encode_snapshot(&f.state, v1).unwrap();
    assert_eq!(decode_snapshot(&plain).unwrap(), f.state);
    added(f.ok(add(Some(1), "init", DAY)));
    let refused = encode_snapshot(&f.state, v1).unwrap_err();
    assert!(
        refused.to_string().contains("operator identities"),
        "{refused}"
    );
    let v2 = encode_snapshot(&f.state, CURRENT).unwrap();
    assert_eq!(decode_snapshot(&v2).unwrap(), f.state);
}
