//! Scenario tests of config locks left behind by a dead node: a lock set behind the API is
//! what PVE's reads and checks see, an unknown value or VM is refused, and root clears it from
//! the directory of a node that is powered off.

use serde_json::Value;

use super::support::{Sim, fast};
use crate::Route;
use crate::node_power::NodePowerAction;

const V100: (&str, &str) = ("vmid", "100");

/// The `/cluster/resources?type=vm` entry of `vmid`.
async fn resource(s: &Sim, vmid: u32) -> Value {
    let list = s.ok(Route::ClusterResources, &[("type", "vm")]).await;
    list.as_array()
        .unwrap()
        .iter()
        .find(|e| e["vmid"] == vmid)
        .cloned()
        .unwrap_or_else(|| panic!("VM {vmid} not in {list}"))
}

#[tokio::test]
async fn a_lock_set_behind_the_api_is_read_and_enforced_until_cleared() {
    let s = fast();
    s.create_vm("pve2", "100", "ceph").await;
    s.c.set_vm_lock(100, Some("backup")).unwrap();
    assert_eq!(s.config("pve2", "100").await["lock"], "backup");
    assert!(s.c.vm_config_text(100).unwrap().contains("lock: backup\n"));
    assert_eq!(resource(&s, 100).await["lock"], "backup");
    // qemu-server checks the lock inside the start worker.
    assert_eq!(
        s.run(Route::VmStart, &[("node", "pve2"), V100]).await,
        "VM is locked (backup)"
    );
    assert_eq!(s.c.vm_running(100), Some(false));
    s.c.set_vm_lock(100, None).unwrap();
    assert!(s.config("pve2", "100").await.get("lock").is_none());
    assert!(resource(&s, 100).await.get("lock").is_none());
    s.start("pve2", "100").await;
}

#[tokio::test]
async fn locks_are_refused_for_unknown_vms_and_values_pve_does_not_know() {
    let s = fast();
    s.create_vm("pve2", "100", "ceph").await;
    let e = s.c.set_vm_lock(555, Some("backup")).unwrap_err();
    assert_eq!(
        (e.status, e.message.as_str()),
        (404, "VM 555 does not exist")
    );
    let e = s.c.set_vm_lock(100, Some("vacation")).unwrap_err();
    assert_eq!(
        (e.status, e.message.as_str()),
        (
            400,
            "lock: value 'vacation' does not have a value in the enumeration 'backup, clone, \
             create, migrate, rollback, snapshot, snapshot-delete, suspending, suspended, copy, \
             disk, fstrim, mounted'"
        )
    );
    assert!(s.config("pve2", "100").await.get("lock").is_none());
    for lock in ["migrate", "snapshot-delete", "mounted"] {
        s.c.set_vm_lock(100, Some(lock)).unwrap();
        assert_eq!(s.config("pve2", "100").await["lock"], lock);
    }
}

#[tokio::test]
async fn root_clears_the_lock_of_a_config_on_a_powered_off_node() {
    let s = fast();
    s.create_vm("pve2", "100", "ceph").await;
    s.start("pve2", "100").await;
    s.c.set_vm_lock(100, Some("migrate")).unwrap();
    s.c.power_node("pve2", NodePowerAction::Off).unwrap();
    // A live node lists the dead node's VM with its node and its lock; its run state is
    // unknown (pvestatd of pve2 sends nothing), and the VM does not run.
    let entry = resource(&s, 100).await;
    assert_eq!(entry["node"], "pve2");
    assert_eq!(entry["lock"], "migrate");
    assert_eq!(entry["status"], "unknown");
    assert_eq!(s.c.vm_running(100), Some(false));

    let e = s.c.clear_vm_lock(100, "pve9").unwrap_err();
    assert_eq!(
        (e.status, e.message.as_str()),
        (404, "no such cluster node 'pve9'")
    );
    let e = s.c.clear_vm_lock(100, "pve3").unwrap_err();
    assert_eq!(
        (e.status, e.message.as_str()),
        (
            404,
            "Configuration file 'nodes/pve3/qemu-server/100.conf' does not exist"
        )
    );
    assert_eq!(
        s.c.clear_vm_lock(100, "pve2").unwrap().as_deref(),
        Some("migrate")
    );
    assert!(!s.c.vm_config_text(100).unwrap().contains("lock:"));
    assert!(resource(&s, 100).await.get("lock").is_none());
    assert_eq!(
        s.c.clear_vm_lock(100, "pve2").unwrap(),
        None,
        "nothing left"
    );

    // Unlocked, the config can be moved and the VM started elsewhere (HA recovery).
    s.c.move_vm_config(100, "pve2", "pve3").unwrap();
    s.start("pve3", "100").await;
    assert_eq!(resource(&s, 100).await["node"], "pve3");
}
