//! Scenario tests of clone (linked, full, cross-node, refusals, lock lifecycle) and template conversion.

use serde_json::Value;

use super::support::{fast, scaled};
use crate::Route;

const N1: (&str, &str) = ("node", "pve1");
const N2: (&str, &str) = ("node", "pve2");
const V100: (&str, &str) = ("vmid", "100");

#[tokio::test]
async fn template_clones_are_linked_with_new_identity() {
    let s = fast();
    let src = s.config("pve1", "9000").await;
    assert_eq!(
        s.run(Route::VmClone, &[N1, ("vmid", "9000"), ("newid", "101")])
            .await,
        "OK"
    );
    let c = s.config("pve1", "101").await;
    assert_eq!(c["scsi0"], "ceph:base-9000-disk-0/vm-101-disk-0,size=8G");
    assert_eq!(c["ide2"], "ceph:vm-101-cloudinit,media=cdrom");
    assert_eq!(c["name"], "Copy-of-VM-debian-12-cloud");
    assert!(c.get("template").is_none());
    assert!(c.get("lock").is_none());
    assert_ne!(c["net0"], src["net0"]);
    assert!(c["net0"].as_str().unwrap().ends_with(",bridge=vmbr0"));
    assert_ne!(c["smbios1"], src["smbios1"]);
    assert_ne!(c["vmgenid"], src["vmgenid"]);
    assert_eq!(c["memory"], src["memory"]);
    let content = s
        .ok(
            Route::StorageContent,
            &[N1, ("storage", "ceph"), ("vmid", "101")],
        )
        .await;
    let linked = content
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["volid"] == "ceph:base-9000-disk-0/vm-101-disk-0")
        .cloned()
        .unwrap();
    assert_eq!(linked["parent"], "base-9000-disk-0@__base__");
    // full clone of a normal VM to another storage, with a name
    s.create_vm("pve1", "100", "local-lvm").await;
    let log_upid = s
        .task(
            Route::VmClone,
            &[
                N1,
                V100,
                ("newid", "102"),
                ("storage", "local"),
                ("format", "qcow2"),
                ("name", "copy"),
            ],
        )
        .await;
    assert_eq!(s.wait(&log_upid).await, "OK");
    assert!(
        s.log(&log_upid)
            .await
            .contains(&"create full clone of drive scsi0 (local-lvm:vm-100-disk-0)".to_string())
    );
    let c = s.config("pve1", "102").await;
    assert_eq!(c["scsi0"], "local:102/vm-102-disk-0.qcow2,size=8G");
    assert_eq!(c["name"], "copy");
}

#[tokio::test]
async fn clone_refusals_match_pve() {
    let s = fast();
    s.create_vm("pve1", "100", "local-lvm").await;
    let cases: Vec<(Vec<(&str, &str)>, &str)> = vec![
        (
            vec![
                N1,
                ("vmid", "9000"),
                ("newid", "101"),
                ("storage", "local-lvm"),
            ],
            "parameter 'storage' not allowed for linked clones",
        ),
        (
            vec![N1, ("vmid", "9000"), ("newid", "101"), ("format", "raw")],
            "parameter 'format' not allowed for linked clones",
        ),
        (
            vec![N1, ("vmid", "9000"), ("newid", "100")],
            "unable to create VM 100: config file already exists",
        ),
        (
            vec![N1, V100, ("newid", "101"), ("target", "pve2")],
            "can't clone VM to node 'pve2' (VM uses local storage)",
        ),
        (
            vec![N1, V100, ("newid", "101"), ("target", "pve9")],
            "no such cluster node 'pve9'",
        ),
        (
            vec![N1, V100, ("newid", "101"), ("snapname", "x")],
            "snapshot 'x' does not exist",
        ),
        (
            vec![N1, V100, ("newid", "101"), ("full", "0")],
            "Linked clone feature is not supported for 'local-lvm:vm-100-disk-0' (scsi0)",
        ),
        (
            vec![N2, V100, ("newid", "101")],
            "unable to find configuration file for VM 100 on node 'pve2'",
        ),
        (
            vec![
                N1,
                V100,
                ("newid", "101"),
                ("storage", "local"),
                ("target", "pve2"),
            ],
            "can't clone to non-shared storage 'local'",
        ),
    ];
    for (pairs, msg) in cases {
        let e = s.err(Route::VmClone, &pairs).await;
        assert_eq!((e.status, e.message.as_str()), (500, msg), "{pairs:?}");
    }
    s.ok(Route::VmConfigPut, &[N1, V100, ("lock", "backup")])
        .await;
    let e = s.err(Route::VmClone, &[N1, V100, ("newid", "101")]).await;
    assert_eq!(e.message, "VM is locked (backup)");
}

#[tokio::test]
async fn clone_holds_the_clone_lock_on_the_new_vm_only_and_can_target_another_node() {
    let s = scaled(0.5);
    let upid = s
        .task(
            Route::VmClone,
            &[N1, ("vmid", "9000"), ("newid", "101"), ("target", "pve2")],
        )
        .await;
    let tmp = s.config("pve1", "101").await;
    assert_eq!(tmp["lock"], "clone");
    assert_eq!(tmp["description"], "qmclone temporary file");
    assert!(s.config("pve1", "9000").await.get("lock").is_none());
    let e = s
        .err(Route::VmClone, &[N1, ("vmid", "9000"), ("newid", "101")])
        .await;
    assert_eq!(
        e.message,
        "unable to create VM 101: config file already exists"
    );
    assert_eq!(s.wait(&upid).await, "OK");
    assert_eq!(s.c.vm_node(101).as_deref(), Some("pve2"));
    assert!(s.config("pve2", "101").await.get("lock").is_none());
    let e = s.err(Route::VmConfigGet, &[N1, ("vmid", "101")]).await;
    assert_eq!(
        e.message,
        "Configuration file 'nodes/pve1/qemu-server/101.conf' does not exist"
    );
}

#[tokio::test]
async fn failed_clone_removes_the_new_config() {
    let s = fast();
    s.faults.fail_task(crate::faults::TaskFault {
        vmid: Some(9000),
        task_type: "qmclone".into(),
        message:
            "clone failed: can't lock file '/var/lock/pve-manager/pve-storage-ceph' - got timeout"
                .into(),
        remaining: Some(1),
    });
    let status = s
        .run(Route::VmClone, &[N1, ("vmid", "9000"), ("newid", "101")])
        .await;
    assert!(status.starts_with("clone failed: "));
    assert!(s.c.vm_node(101).is_none());
    assert_eq!(
        s.ok(
            Route::StorageContent,
            &[N1, ("storage", "ceph"), ("vmid", "101")]
        )
        .await,
        Value::Array(vec![])
    );
}

#[tokio::test]
async fn template_conversion_and_its_refusals() {
    let s = fast();
    s.create_vm("pve1", "100", "local-lvm").await;
    s.start("pve1", "100").await;
    let e = s.err(Route::VmTemplate, &[N1, V100]).await;
    assert_eq!(
        e.message,
        "you can't convert a VM to template if VM is running"
    );
    assert_eq!(s.run(Route::VmStop, &[N1, V100]).await, "OK");
    assert_eq!(
        s.run(Route::SnapshotCreate, &[N1, V100, ("snapname", "s1")])
            .await,
        "OK"
    );
    let e = s.err(Route::VmTemplate, &[N1, V100]).await;
    assert_eq!(
        e.message,
        "unable to create template, because VM contains snapshots"
    );
    assert_eq!(
        s.run(Route::SnapshotDelete, &[N1, V100, ("snapname", "s1")])
            .await,
        "OK"
    );
    let upid = s.task(Route::VmTemplate, &[N1, V100]).await;
    assert_eq!(s.wait(&upid).await, "OK");
    let c = s.config("pve1", "100").await;
    assert_eq!(c["template"], Value::from(1));
    assert_eq!(c["scsi0"], "local-lvm:base-100-disk-0,size=8G");
    let e = s.err(Route::VmTemplate, &[N1, V100]).await;
    assert_eq!(e.message, "you can't convert a template to a template");
    assert_eq!(
        s.run(Route::SnapshotCreate, &[N1, V100, ("snapname", "s2")])
            .await,
        "you can't take a snapshot if it's a template"
    );
    assert_eq!(
        s.run(Route::VmClone, &[N1, V100, ("newid", "101")]).await,
        "OK"
    );
    assert_eq!(
        s.config("pve1", "101").await["scsi0"],
        "local-lvm:base-100-disk-0/vm-101-disk-0,size=8G"
    );
}
