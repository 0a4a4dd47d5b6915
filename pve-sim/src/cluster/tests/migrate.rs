//! Scenario tests of migration: preconditions, sync refusals, the migrate lock, local disks, dead targets.

use serde_json::Value;

use super::support::{fast, scaled};
use crate::Route;

const N1: (&str, &str) = ("node", "pve1");
const N2: (&str, &str) = ("node", "pve2");
const V100: (&str, &str) = ("vmid", "100");

#[tokio::test]
async fn migration_checks_and_moves_config_and_local_disks() {
    let s = fast();
    s.create_vm("pve1", "100", "local-lvm").await;
    let e = s
        .err(Route::VmMigrate, &[N1, V100, ("target", "pve1")])
        .await;
    assert_eq!(
        (e.status, e.errors["target"].as_str()),
        (400, "target is local node.")
    );
    let e = s
        .err(Route::VmMigrate, &[N1, V100, ("target", "pve9")])
        .await;
    assert_eq!(e.message, "no such cluster node 'pve9'");
    let pre = s.ok(Route::VmMigrateCheck, &[N1, V100]).await;
    assert_eq!(pre["running"], Value::from(0));
    assert_eq!(pre["allowed_nodes"], serde_json::json!(["pve2", "pve3"]));
    assert_eq!(pre["local_disks"][0]["volid"], "local-lvm:vm-100-disk-0");
    s.start("pve1", "100").await;
    let e = s
        .err(Route::VmMigrate, &[N1, V100, ("target", "pve2")])
        .await;
    assert_eq!(e.message, "can't migrate running VM without --online");
    let upid = s
        .task(
            Route::VmMigrate,
            &[N1, V100, ("target", "pve2"), ("online", "1")],
        )
        .await;
    assert_eq!(s.wait(&upid).await, "migration aborted");
    let log = s.log(&upid).await;
    assert!(
        log.iter().any(|l| l
            .ends_with("can't live migrate attached local disks without with-local-disks option")),
        "{log:?}"
    );
    assert!(s.config("pve1", "100").await.get("lock").is_none());
    let upid = s
        .task(
            Route::VmMigrate,
            &[
                N1,
                V100,
                ("target", "pve2"),
                ("online", "1"),
                ("with-local-disks", "1"),
            ],
        )
        .await;
    assert_eq!(s.wait(&upid).await, "OK");
    assert!(
        s.log(&upid)
            .await
            .iter()
            .any(|l| l.contains("migration finished successfully"))
    );
    assert_eq!(s.c.vm_node(100).as_deref(), Some("pve2"));
    assert_eq!(s.c.vm_running(100), Some(true));
    assert_eq!(
        s.ok(Route::StorageContent, &[N1, ("storage", "local-lvm")])
            .await,
        Value::Array(vec![])
    );
    let on2 = s
        .ok(
            Route::StorageContent,
            &[N2, ("storage", "local-lvm"), ("vmid", "100")],
        )
        .await;
    assert_eq!(on2.as_array().unwrap().len(), 1);
    let e = s.err(Route::VmStatusCurrent, &[N1, V100]).await;
    assert_eq!(
        e.message,
        "Configuration file 'nodes/pve1/qemu-server/100.conf' does not exist"
    );
    // offline migration of a template on shared storage
    assert_eq!(
        s.run(
            Route::VmMigrate,
            &[N1, ("vmid", "9000"), ("target", "pve3")]
        )
        .await,
        "OK"
    );
    assert_eq!(s.c.vm_node(9000).as_deref(), Some("pve3"));
}

#[tokio::test]
async fn migration_holds_the_migrate_lock() {
    let s = scaled(0.25);
    let upid = s
        .task(
            Route::VmMigrate,
            &[N1, ("vmid", "9000"), ("target", "pve2")],
        )
        .await;
    assert_eq!(s.config("pve1", "9000").await["lock"], "migrate");
    let e = s
        .err(
            Route::VmMigrate,
            &[N1, ("vmid", "9000"), ("target", "pve3")],
        )
        .await;
    assert_eq!(e.message, "VM is locked (migrate)");
    let e = s
        .err(Route::VmClone, &[N1, ("vmid", "9000"), ("newid", "101")])
        .await;
    assert_eq!(e.message, "VM is locked (migrate)");
    assert_eq!(s.wait(&upid).await, "OK");
    assert!(s.config("pve2", "9000").await.get("lock").is_none());
}

#[tokio::test]
async fn migration_to_a_dead_node_aborts() {
    let s = fast();
    s.faults.set_node_down("pve2", true);
    assert_eq!(
        s.run(
            Route::VmMigrate,
            &[N1, ("vmid", "9000"), ("target", "pve2")]
        )
        .await,
        "migration aborted"
    );
    assert_eq!(s.c.vm_node(9000).as_deref(), Some("pve1"));
}
