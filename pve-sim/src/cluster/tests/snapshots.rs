//! Scenario tests of snapshots: tree, reserved names, RAM state, rollback, delete, locks, storage support.

use serde_json::Value;

use super::support::{fast, scaled};
use crate::Route;

const N1: (&str, &str) = ("node", "pve1");
const V100: (&str, &str) = ("vmid", "100");

#[tokio::test]
async fn snapshots_form_a_tree_and_rollback_restores_config_and_ram() {
    let s = fast();
    s.create_vm("pve1", "100", "local-lvm").await;
    for (name, msg) in [
        (
            "current",
            "unable to use snapshot name 'current' (reserved name)",
        ),
        (
            "PENDING",
            "unable to use snapshot name 'pending' (reserved name)",
        ),
    ] {
        let e = s
            .err(Route::SnapshotCreate, &[N1, V100, ("snapname", name)])
            .await;
        assert_eq!(e.message, msg);
    }
    assert_eq!(
        s.run(
            Route::SnapshotCreate,
            &[N1, V100, ("snapname", "s1"), ("description", "first")]
        )
        .await,
        "OK"
    );
    s.ok(Route::VmConfigPut, &[N1, V100, ("cores", "4")]).await;
    s.start("pve1", "100").await;
    assert_eq!(
        s.run(
            Route::SnapshotCreate,
            &[N1, V100, ("snapname", "s2"), ("vmstate", "1")]
        )
        .await,
        "OK"
    );
    assert_eq!(
        s.run(Route::SnapshotCreate, &[N1, V100, ("snapname", "s2")])
            .await,
        "snapshot name 's2' already used"
    );
    let list = s.ok(Route::SnapshotList, &[N1, V100]).await;
    let items = list.as_array().unwrap();
    let by = |n: &str| items.iter().find(|i| i["name"] == n).cloned().unwrap();
    assert_eq!(items.last().unwrap()["name"], "current");
    assert_eq!(by("current")["description"], "You are here!");
    assert_eq!(by("current")["parent"], "s2");
    assert_eq!(by("current")["running"], Value::from(1));
    assert_eq!(by("s2")["parent"], "s1");
    assert_eq!(by("s2")["vmstate"], Value::from(1));
    assert_eq!(by("s1")["vmstate"], Value::from(0));
    assert_eq!(by("s1")["description"], "first");
    assert!(by("s1").get("parent").is_none());
    let snapcfg = s
        .ok(Route::SnapshotConfig, &[N1, V100, ("snapname", "s2")])
        .await;
    assert_eq!(snapcfg["cores"], Value::from(4));
    assert_eq!(snapcfg["vmstate"], "local-lvm:vm-100-state-s2");
    assert!(s.c.vm_config_text(100).unwrap().contains("\n[s1]\n"));
    // rollback to s1 stops the VM and restores cores; s1 has no RAM so it stays stopped
    assert_eq!(
        s.run(Route::SnapshotRollback, &[N1, V100, ("snapname", "s1")])
            .await,
        "OK"
    );
    assert_eq!(s.c.vm_running(100), Some(false));
    let c = s.config("pve1", "100").await;
    assert!(c.get("cores").is_none());
    assert_eq!(c["parent"], "s1");
    // rollback to s2 resumes from RAM
    assert_eq!(
        s.run(Route::SnapshotRollback, &[N1, V100, ("snapname", "s2")])
            .await,
        "OK"
    );
    assert_eq!(s.c.vm_running(100), Some(true));
    assert_eq!(s.config("pve1", "100").await["cores"], Value::from(4));
    // delete s1: s2 is re-parented
    assert_eq!(
        s.run(Route::SnapshotDelete, &[N1, V100, ("snapname", "s1")])
            .await,
        "OK"
    );
    let list = s.ok(Route::SnapshotList, &[N1, V100]).await;
    let s2 = list
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["name"] == "s2")
        .cloned()
        .unwrap();
    assert!(s2.get("parent").is_none());
    assert_eq!(
        s.run(Route::SnapshotDelete, &[N1, V100, ("snapname", "nope")])
            .await,
        "snapshot 'nope' does not exist"
    );
    assert_eq!(
        s.run(Route::SnapshotRollback, &[N1, V100, ("snapname", "nope")])
            .await,
        "snapshot 'nope' does not exist"
    );
    // rollback with start=1 forks a start
    assert_eq!(s.run(Route::VmStop, &[N1, V100]).await, "OK");
    assert_eq!(
        s.run(Route::SnapshotCreate, &[N1, V100, ("snapname", "s3")])
            .await,
        "OK"
    );
    assert_eq!(
        s.run(
            Route::SnapshotRollback,
            &[N1, V100, ("snapname", "s3"), ("start", "1")]
        )
        .await,
        "OK"
    );
    assert_eq!(s.c.vm_running(100), Some(true));
}

#[tokio::test]
async fn snapshot_operations_hold_their_locks() {
    let s = scaled(0.3);
    s.create_vm("pve1", "100", "local-lvm").await;
    let upid = s
        .task(Route::SnapshotCreate, &[N1, V100, ("snapname", "s1")])
        .await;
    assert_eq!(s.config("pve1", "100").await["lock"], "snapshot");
    let list = s.ok(Route::SnapshotList, &[N1, V100]).await;
    assert_eq!(list[0]["snapstate"], "prepare");
    assert_eq!(
        s.run(Route::VmStart, &[N1, V100]).await,
        "VM is locked (snapshot)"
    );
    assert_eq!(s.wait(&upid).await, "OK");
    let upid = s
        .task(Route::SnapshotRollback, &[N1, V100, ("snapname", "s1")])
        .await;
    assert_eq!(s.config("pve1", "100").await["lock"], "rollback");
    assert_eq!(s.wait(&upid).await, "OK");
    let upid = s
        .task(Route::SnapshotDelete, &[N1, V100, ("snapname", "s1")])
        .await;
    assert_eq!(s.config("pve1", "100").await["lock"], "snapshot-delete");
    assert_eq!(s.wait(&upid).await, "OK");
    assert!(s.config("pve1", "100").await.get("lock").is_none());
}

#[tokio::test]
async fn snapshots_need_snapshot_capable_storage() {
    let s = fast();
    s.create_vm("pve1", "100", "local").await;
    assert_eq!(
        s.config("pve1", "100").await["scsi0"],
        "local:100/vm-100-disk-0.raw,size=8G"
    );
    assert_eq!(
        s.run(Route::SnapshotCreate, &[N1, V100, ("snapname", "s1")])
            .await,
        "snapshot feature is not available"
    );
    assert!(s.config("pve1", "100").await.get("lock").is_none());
}

#[tokio::test]
async fn snapshot_operations_and_template_refuse_a_locked_vm() {
    let s = fast();
    s.create_vm("pve1", "100", "local-lvm").await;
    assert_eq!(
        s.run(Route::SnapshotCreate, &[N1, V100, ("snapname", "s1")])
            .await,
        "OK"
    );
    s.ok(Route::VmConfigPut, &[N1, V100, ("lock", "backup")])
        .await;
    let task_errors = [
        (Route::SnapshotCreate, "s2"),
        (Route::SnapshotDelete, "s1"),
        (Route::SnapshotRollback, "s1"),
    ];
    for (route, name) in task_errors {
        assert_eq!(
            s.run(route, &[N1, V100, ("snapname", name)]).await,
            "VM is locked (backup)",
            "{route:?}"
        );
    }
    let e = s.err(Route::VmTemplate, &[N1, V100]).await;
    assert_eq!(
        (e.status, e.message.as_str()),
        (500, "VM is locked (backup)")
    );
    let digest = s.config("pve1", "100").await["digest"].clone();
    assert_eq!(
        s.run(
            Route::VmResize,
            &[N1, V100, ("disk", "scsi0"), ("size", "+1G")]
        )
        .await,
        "VM is locked (backup)"
    );
    assert_eq!(s.config("pve1", "100").await["digest"], digest);
}
