//! Migrations in the state machine: what may start one (a placed, idle VM on an online host,
//! to another online node of its PVE cluster), what closes it (only the target node the agent
//! reported makes the target the VM's host), and a source host fenced mid-move.

use protocol::NodeId;
use protocol::fleet::{Capacity, HostState, MoveKind, PVE_CLUSTER_LABEL};
use protocol::spec::{HaSpec, RecoveryMode, VmSpec};
use protocol::version::Version;

use super::Fleet;
use crate::state::{Command, StateError, decode_snapshot, encode_snapshot};

fn host(f: &mut Fleet, id: NodeId, name: &str, cluster: Option<&str>) {
    let mut labels = protocol::spec::Labels::new();
    if let Some(c) = cluster {
        labels.insert(PVE_CLUSTER_LABEL.to_string(), c.to_string());
    }
    f.ok(Command::RegisterHost {
        id,
        name: name.into(),
        labels,
        capacity: Capacity {
            cpus: 16,
            memory_mib: 65_536,
        },
        now: 1,
    });
    f.ok(Command::SetHostState {
        id,
        state: HostState::Online,
        now: 1,
    });
}

/// Hosts 1 and 2 in PVE cluster alpha, 3 standalone; VM `web` on host 1 with a VMID.
fn fleet() -> Fleet {
    let mut f = Fleet::new();
    f.range("main", 100, 199);
    host(&mut f, 1, "pve-a", Some("alpha"));
    host(&mut f, 2, "pve-b", Some("alpha"));
    host(&mut f, 3, "solo", None);
    f.put_vm(VmSpec::new("web", 512));
    f.ok(Command::ScheduleVm {
        name: "web".into(),
        host: Some(1),
        expected: None,
        now: 2,
    });
    f.vmid("web").unwrap();
    f
}

fn start(to: NodeId) -> Command {
    Command::StartMigration {
        name: "web".into(),
        to,
        purpose: protocol::fleet::MigrationPurpose::Operator,
        now: 5,
    }
}

fn end(node: Option<&str>) -> Command {
    Command::EndMigration {
        name: "web".into(),
        node: node.map(str::to_string),
        message: "done".into(),
        now: 6,
    }
}

fn refused(f: &mut Fleet, cmd: Command, want: &str) {
    match f.err(cmd) {
        StateError::Conflict(m) => assert!(m.contains(want), "{m}"),
        other => panic!("{other}"),
    }
}

#[test]
fn a_migration_starts_only_for_a_placed_idle_vm_to_another_online_host() {
    let mut f = fleet();
    refused(&mut f, start(1), "is on pve-a already");
    f.ok(Command::SetHostState {
        id: 2,
        state: HostState::Maintenance,
        now: 3,
    });
    refused(&mut f, start(2), "which is maintenance, not online");
    f.ok(Command::SetHostState {
        id: 2,
        state: HostState::Online,
        now: 3,
    });
    f.put_vm(VmSpec::new("new", 512));
    match f.err(Command::StartMigration {
        name: "new".into(),
        to: 2,
        purpose: protocol::fleet::MigrationPurpose::Operator,
        now: 5,
    }) {
        StateError::Conflict(m) => assert!(m.contains("not placed"), "{m}"),
        other => panic!("{other}"),
    }
    f.ok(start(2));
    assert_eq!(
        f.state
            .migration("web")
            .map(|m| (m.to_node.as_str(), m.kind)),
        Some(("pve-b", MoveKind::Local))
    );
    refused(&mut f, start(2), "already moving from pve-a to pve-b");
    // The VM stays on its host until the agent reports the move.
    assert_eq!(f.state.vm("web").unwrap().assignment.host, Some(1));
}

#[test]
fn only_the_target_node_reported_moves_the_vm_and_a_failure_leaves_it_with_a_warning() {
    let mut f = fleet();
    f.ok(start(2));
    f.ok(end(None));
    assert_eq!(f.state.vm("web").unwrap().assignment.host, Some(1));
    assert!(f.state.migration("web").is_none());
    let last = f.state.events_after(0, None).pop().unwrap();
    assert!(
        last.message.contains("failed, it stays on pve-a"),
        "{}",
        last.message
    );
    // Seen on some other node than the target: not moved either.
    f.ok(start(2));
    f.ok(end(Some("pve-x")));
    assert_eq!(f.state.vm("web").unwrap().assignment.host, Some(1));
    f.ok(start(2));
    f.ok(end(Some("pve-b")));
    assert_eq!(f.state.vm("web").unwrap().assignment.host, Some(2));
    let last = f.state.events_after(0, None).pop().unwrap();
    assert!(
        last.message.starts_with("migrated from pve-a to pve-b"),
        "{}",
        last.message
    );
    // A late duplicate result changes nothing.
    f.ok(end(Some("pve-a")));
    assert_eq!(f.state.vm("web").unwrap().assignment.host, Some(2));
}

#[test]
fn the_kind_of_a_move_follows_the_clusters_and_the_recovery_mode() {
    // Out of its PVE cluster (to a standalone node): PVE's remote migration.
    let mut f = fleet();
    f.ok(start(3));
    assert_eq!(f.state.migration("web").unwrap().kind, MoveKind::Remote);
    // A `recovery = recreate` VM is rebuilt there instead; within its cluster it migrates.
    let mut f = fleet();
    let mut spec = VmSpec::new("web", 512);
    spec.ha = HaSpec {
        recovery: Some(RecoveryMode::Recreate),
        ..HaSpec::started()
    };
    f.put_vm(spec);
    f.ok(start(3));
    assert_eq!(f.state.migration("web").unwrap().kind, MoveKind::Recreate);
    f.ok(end(Some("solo")));
    let rec = f.state.vm("web").unwrap();
    assert_eq!(
        (rec.assignment.host, rec.status.current_host),
        (Some(3), None)
    );
    f.ok(start(1));
    assert_eq!(f.state.migration("web").unwrap().kind, MoveKind::Recreate);
}

#[test]
fn a_rebuild_whose_source_is_fenced_midway_is_the_recoverys() {
    let mut f = fleet();
    let mut spec = VmSpec::new("web", 512);
    spec.ha = HaSpec {
        recovery: Some(RecoveryMode::Recreate),
        ..HaSpec::started()
    };
    f.put_vm(spec);
    f.ok(start(3));
    fence(&mut f, 1);
    assert!(f.state.migration("web").is_none());
}

fn fence(f: &mut Fleet, id: NodeId) {
    for (expected, state) in [
        (HostState::Online, HostState::Unreachable),
        (HostState::Unreachable, HostState::Fenced),
    ] {
        f.ok(Command::SetHostLiveness {
            id,
            expected,
            state,
            reason: "test".into(),
            now: 7,
        });
    }
}

#[test]
fn a_source_host_fenced_mid_move_keeps_the_migration_until_the_target_answers() {
    let mut f = fleet();
    f.ok(start(2));
    let refused = encode_snapshot(&f.state, Version(1)).unwrap_err();
    assert!(
        refused.to_string().contains("encoding v1 cannot"),
        "{refused}"
    );
    let v2 = encode_snapshot(&f.state, protocol::version::MIGRATION).unwrap();
    assert_eq!(decode_snapshot(&v2).unwrap(), f.state);
    fence(&mut f, 1);
    // PVE may have moved it already: kept, marked, until pve-b's agent answers.
    assert_eq!(f.state.migration("web").unwrap().source_lost_at, Some(7));
    let last = f.state.events_after(0, None).pop().unwrap();
    assert!(
        last.message
            .contains("not recovered until pve-b's agent says"),
        "{}",
        last.message
    );
    assert_eq!(f.state.vm("web").unwrap().assignment.host, Some(1));
    // The target fenced too: whatever arrived there was stopped with it; the recovery's.
    fence(&mut f, 2);
    assert!(f.state.migration("web").is_none());
    let last = f.state.events_after(0, None).pop().unwrap();
    assert!(
        last.message.contains("abandoned: pve-b is fenced"),
        "{}",
        last.message
    );
}
