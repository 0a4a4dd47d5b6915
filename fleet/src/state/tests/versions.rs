//! The cluster version: raised only when every member reads it, never lowered, and forgotten
//! with a removed member.

use protocol::fleet::{Member, MemberRole};
use protocol::version::{CURRENT, OLDEST, Version, VersionRange};

use super::Fleet;
use crate::state::{Command, StateError, next_cluster_version};

fn member(id: u64) -> Command {
    Command::AddMember {
        member: Member {
            id,
            addr: format!("10.0.0.{id}:7000"),
            role: MemberRole::Voter,
        },
        now: 1,
    }
}

fn report(id: u64, oldest: u16, newest: u16) -> Command {
    Command::ReportVersions {
        id,
        versions: VersionRange {
            oldest: Version(oldest),
            newest: Version(newest),
        },
        now: 2,
    }
}

fn raise(version: Version) -> Command {
    Command::SetClusterVersion { version, now: 3 }
}

#[test]
fn the_cluster_version_rises_only_once_every_member_reads_it() {
    let mut f = Fleet::new();
    assert_eq!(f.state.cluster_version(), OLDEST);
    for id in 1..=3 {
        f.ok(member(id));
    }
    // A newer build on two members out of three: nothing to raise yet.
    let newer = Version(OLDEST.0 + 1);
    f.ok(report(1, OLDEST.0, newer.0));
    f.ok(report(2, OLDEST.0, newer.0));
    assert_eq!(
        next_cluster_version(&f.state),
        None,
        "member 3 has not reported"
    );
    f.ok(report(3, OLDEST.0, OLDEST.0));
    assert_eq!(
        next_cluster_version(&f.state),
        None,
        "member 3 reads only {OLDEST}"
    );
    let why = f.err(raise(newer));
    assert!(
        matches!(&why, StateError::Conflict(m) if m.contains("member(s) 3")),
        "{why}"
    );
    assert_eq!(f.state.cluster_version(), OLDEST);

    // Member 3 upgraded: the leader would raise, if this build reads the new version.
    f.ok(report(3, OLDEST.0, newer.0));
    let next = next_cluster_version(&f.state);
    if newer <= CURRENT {
        assert_eq!(next, Some(newer));
        f.ok(raise(newer));
        assert_eq!(f.state.cluster_version(), newer);
        let down = f.err(raise(OLDEST));
        assert!(matches!(&down, StateError::Conflict(m) if m.contains("never goes down")));
    } else {
        assert_eq!(next, None, "this build cannot write {newer}");
    }
}

#[test]
fn reports_come_only_from_members_and_a_removed_member_is_forgotten() {
    let mut f = Fleet::new();
    assert!(matches!(
        f.err(report(9, 1, 1)),
        StateError::NotFound { .. }
    ));
    f.ok(member(1));
    f.ok(member(2));
    f.ok(report(1, 1, 1));
    assert!(matches!(f.err(report(1, 2, 1)), StateError::Conflict(_)));
    assert_eq!(f.state.member_versions().len(), 1);
    f.ok(Command::RemoveMember { id: 1, now: 4 });
    assert!(f.state.member_versions().is_empty());
    // Member 2 never reported, so nothing may be raised on its behalf.
    assert_eq!(next_cluster_version(&f.state), None);
    // Raising to the current version is a no-op, whatever the reports say.
    f.ok(raise(f.state.cluster_version()));
}
