#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails by panicking
//! Snapshots against a simulated PVE node: RAM state only for a running VM, the list without
//! PVE's `current` entry, rollback starting the VM when asked, delete, and clear refusals.

use crate::ops_support;

use ops_support::{ensure_cmd, harness, web_spec};
use protocol::agent::{FailureKind, SnapshotAction, SnapshotOp};
use protocol::spec::DesiredState;

fn op(action: SnapshotAction) -> SnapshotOp {
    SnapshotOp {
        name: "web-1".into(),
        vmid: 101,
        action,
    }
}

fn create(name: &str, vmstate: bool) -> SnapshotOp {
    op(SnapshotAction::Create {
        snapshot: name.into(),
        description: format!("{name} snapshot"),
        vmstate,
    })
}

#[tokio::test]
async fn snapshots_are_taken_listed_rolled_back_and_deleted() {
    let h = harness();
    h.ops
        .ensure(&ensure_cmd(web_spec("web-1"), 101))
        .await
        .unwrap();

    let list = h.ops.snapshot(&create("with-ram", true)).await.unwrap();
    assert_eq!(list.len(), 1, "no 'current' entry: {list:?}");
    assert_eq!(list[0].name, "with-ram");
    assert_eq!(list[0].description, "with-ram snapshot");
    assert!(list[0].vmstate, "a running VM keeps its RAM");
    assert!(list[0].taken_at.is_some());

    h.sim.set_vm_running(101, false);
    let list = h.ops.snapshot(&create("disk-only", true)).await.unwrap();
    let disk_only = list.iter().find(|s| s.name == "disk-only").unwrap();
    assert!(!disk_only.vmstate, "a stopped VM has no RAM to save");
    assert_eq!(disk_only.parent.as_deref(), Some("with-ram"));

    let listed = h.ops.snapshot(&op(SnapshotAction::List)).await.unwrap();
    assert_eq!(listed, list);

    let list = h
        .ops
        .snapshot(&op(SnapshotAction::Rollback {
            snapshot: "disk-only".into(),
            start: true,
        }))
        .await
        .unwrap();
    assert_eq!(list.len(), 2);
    assert_eq!(
        h.sim.vm_running(101),
        Some(true),
        "started after the rollback"
    );

    let list = h
        .ops
        .snapshot(&op(SnapshotAction::Delete {
            snapshot: "disk-only".into(),
        }))
        .await
        .unwrap();
    let names: Vec<&str> = list.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["with-ram"]);
}

#[tokio::test]
async fn rollback_without_start_leaves_the_vm_stopped() {
    let h = harness();
    let mut spec = web_spec("web-1");
    spec.state = DesiredState::Stopped;
    h.ops.ensure(&ensure_cmd(spec, 101)).await.unwrap();
    h.ops.snapshot(&create("base", false)).await.unwrap();
    h.ops
        .snapshot(&op(SnapshotAction::Rollback {
            snapshot: "base".into(),
            start: false,
        }))
        .await
        .unwrap();
    assert_eq!(h.sim.vm_running(101), Some(false));
}

#[tokio::test]
async fn unknown_snapshots_and_vms_are_refused_clearly() {
    let h = harness();
    let err = h.ops.snapshot(&op(SnapshotAction::List)).await.unwrap_err();
    assert_eq!(err.kind, FailureKind::NotFound);

    h.ops
        .ensure(&ensure_cmd(web_spec("web-1"), 101))
        .await
        .unwrap();
    for action in [
        SnapshotAction::Rollback {
            snapshot: "nope".into(),
            start: false,
        },
        SnapshotAction::Delete {
            snapshot: "nope".into(),
        },
    ] {
        let err = h.ops.snapshot(&op(action)).await.unwrap_err();
        assert_eq!(err.kind, FailureKind::Permanent);
        assert!(err.message.contains("'nope'"), "{}", err.message);
    }
}
