//! Failback against hand-built states: back to the preferred host once it is available, not
//! while it is in maintenance, never to a host of the same priority, and not with
//! `failback = false`.

use protocol::agent::StorageInfo;
use protocol::fleet::{Capacity, HostFacts, HostState, MigrationPurpose, PVE_CLUSTER_LABEL};
use protocol::spec::{NodeAffinity, VmSpec};

use super::plan;
use crate::state::{Command, CommandReply, FleetState};
use crate::views::host_views;

fn ok(state: &mut FleetState, index: &mut u64, cmd: Command) {
    *index += 1;
    let reply = state.apply(*index, cmd);
    assert!(!matches!(reply, CommandReply::Refused(_)), "{reply:?}");
}

/// pve-a (priority 2), pve-b (priority 1), pve-c (2) of cluster alpha; `db` on pve-b.
fn world(failback: bool) -> (FleetState, u64) {
    let mut s = FleetState::new();
    let mut i = 0;
    ok(
        &mut s,
        &mut i,
        Command::PutVmidRange {
            spec: protocol::spec::VmidRangeSpec {
                name: "main".into(),
                start: 100,
                end: 199,
            },
            now: 1,
        },
    );
    for (id, name) in [(1, "pve-a"), (2, "pve-b"), (3, "pve-c")] {
        ok(
            &mut s,
            &mut i,
            Command::RegisterHost {
                id,
                name: name.into(),
                labels: [(PVE_CLUSTER_LABEL.to_string(), "alpha".to_string())].into(),
                capacity: Capacity {
                    cpus: 32,
                    memory_mib: 131_072,
                },
                now: 1,
            },
        );
        ok(
            &mut s,
            &mut i,
            Command::SetHostFacts {
                id,
                facts: Box::new(HostFacts {
                    pve_version: "9.1.1".into(),
                    storages: vec![StorageInfo {
                        id: "local-lvm".into(),
                        kind: "lvmthin".into(),
                        content: ["images".to_string()].into(),
                        active: true,
                        total_bytes: 1 << 42,
                        available_bytes: 1 << 42,
                        ..StorageInfo::default()
                    }],
                    ..HostFacts::default()
                }),
            },
        );
        ok(
            &mut s,
            &mut i,
            Command::SetHostState {
                id,
                state: HostState::Online,
                now: 1,
            },
        );
    }
    let mut spec = VmSpec::new("db", 1024);
    spec.placement.node_affinity = Some(NodeAffinity {
        nodes: [("pve-a".to_string(), 2), ("pve-b".to_string(), 1)].into(),
        strict: false,
        failback,
    });
    ok(&mut s, &mut i, Command::apply_vm(spec, 2));
    ok(
        &mut s,
        &mut i,
        Command::ScheduleVm {
            name: "db".into(),
            host: Some(2),
            expected: None,
            now: 2,
        },
    );
    ok(
        &mut s,
        &mut i,
        Command::AllocateVmid {
            vm: "db".into(),
            avoid: vec![],
            now: 2,
        },
    );
    (s, i)
}

#[test]
fn a_vm_fails_back_to_the_host_its_affinity_prefers_once_available() {
    let (mut s, mut i) = world(true);
    ok(
        &mut s,
        &mut i,
        Command::SetMaintenance {
            id: 1,
            enable: true,
            now: 3,
        },
    );
    assert!(
        plan(&s, &host_views(&s), 4).is_empty(),
        "pve-a is in maintenance"
    );
    ok(
        &mut s,
        &mut i,
        Command::SetMaintenance {
            id: 1,
            enable: false,
            now: 5,
        },
    );
    let cmds = plan(&s, &host_views(&s), 6);
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
    ok(&mut s, &mut i, cmds[0].clone());
    ok(
        &mut s,
        &mut i,
        Command::EndMigration {
            name: "db".into(),
            node: Some("pve-a".into()),
            message: "running on pve-a".into(),
            now: 7,
        },
    );
    assert!(plan(&s, &host_views(&s), 8).is_empty());
}

#[test]
fn no_failback_when_it_is_off() {
    let (s, _) = world(false);
    assert!(plan(&s, &host_views(&s), 4).is_empty());
}
