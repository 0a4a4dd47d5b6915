//! Failback against hand-built states: back to the preferred host once it is available, not
//! while it is in maintenance, never to a host of the same priority, and not with
//! `failback = false`.

use protocol::fleet::MigrationPurpose;
use protocol::spec::{NodeAffinity, VmSpec};

use super::plan;
use crate::state::{Command, FleetState};
use crate::test_world::{World, alpha};
use crate::views::host_views;

/// pve-a (priority 2), pve-b (priority 1), pve-c (not listed) of cluster alpha; `db` on pve-b.
fn world(failback: bool) -> World {
    let mut w = alpha();
    let mut spec = VmSpec::new("db", 1024);
    spec.placement.node_affinity = Some(NodeAffinity {
        nodes: [("pve-a".to_string(), 2), ("pve-b".to_string(), 1)].into(),
        strict: false,
        failback,
    });
    w.spec_on(spec, 2);
    w
}

fn planned(s: &FleetState, now: u64) -> Vec<Command> {
    plan(s, &host_views(s), now)
}

#[test]
fn a_vm_fails_back_to_the_host_its_affinity_prefers_once_available() {
    let mut w = world(true);
    w.ok(Command::SetMaintenance {
        id: 1,
        enable: true,
        now: 3,
    });
    assert!(planned(&w.state, 4).is_empty(), "pve-a is in maintenance");
    w.ok(Command::SetMaintenance {
        id: 1,
        enable: false,
        now: 5,
    });
    let cmds = planned(&w.state, 6);
    assert!(
        matches!(
            cmds.as_slice(),
            [Command::StartMigration {
                to: 1,
                purpose: MigrationPurpose::Failback,
                ..
            }]
        ),
        "{cmds:?}"
    );
    // On a host of the top priority: nothing more.
    w.ok(cmds[0].clone());
    w.end("db", Some("pve-a"), 7);
    assert!(planned(&w.state, 8).is_empty());
}

#[test]
fn no_failback_when_it_is_off() {
    let w = world(false);
    assert!(planned(&w.state, 4).is_empty());
}
