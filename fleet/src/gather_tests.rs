//! Gathering split affinity groups against hand-built states: the members away from the host
//! most of the group runs on join it, the members of one host as one, ties go to the host
//! name first in order, and a group with a member already moving waits.

use protocol::fleet::MigrationPurpose;
use protocol::spec::VmSpec;

use super::plan;
use crate::state::{Command, FleetState};
use crate::test_world::alpha;
use crate::views::host_views;

fn planned(s: &FleetState, now: u64) -> Vec<(String, u64)> {
    plan(s, &host_views(s), now)
        .into_iter()
        .map(|c| match c {
            Command::StartMigration {
                name,
                to,
                purpose: MigrationPurpose::Gather,
                ..
            } => (name, to),
            other => panic!("{other:?}"),
        })
        .collect()
}

fn with(name: &str, partner: &str) -> VmSpec {
    let mut spec = VmSpec::new(name, 1024);
    spec.placement.together_with = vec![partner.to_string()];
    spec
}

#[test]
fn the_members_away_from_the_most_populated_host_join_it() {
    let mut w = alpha();
    w.vm("db", 1);
    w.spec_on(with("app", "db"), 1);
    w.spec_on(with("cache", "app"), 2);
    w.spec_on(with("queue", "cache"), 2);
    w.spec_on(with("web", "queue"), 1);
    // pve-a runs three of five: pve-b's two move there, as one.
    let moves = planned(&w.state, 3);
    assert_eq!(
        moves,
        vec![("cache".to_string(), 1), ("queue".to_string(), 1)]
    );
    for (name, _) in &moves {
        w.ok(Command::StartMigration {
            name: name.clone(),
            to: 1,
            purpose: MigrationPurpose::Gather,
            now: 3,
        });
    }
    // Moving: nothing more is started for the group meanwhile.
    assert!(planned(&w.state, 4).is_empty());
    w.end("cache", Some("pve-a"), 5);
    w.end("queue", Some("pve-a"), 5);
    assert!(planned(&w.state, 6).is_empty(), "together now");
}

#[test]
fn a_tie_goes_to_the_host_name_first_in_order() {
    let mut w = alpha();
    w.vm("x", 2);
    w.spec_on(with("y", "x"), 1);
    assert_eq!(planned(&w.state, 3), vec![("x".to_string(), 1)]);
    // A VM in no group is never moved.
    let mut w = alpha();
    w.vm("lone", 2);
    w.vm("other", 1);
    assert!(planned(&w.state, 3).is_empty());
}
