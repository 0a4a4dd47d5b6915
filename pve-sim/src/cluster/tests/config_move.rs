//! Scenario tests of moving a config to another node as pve-ha-manager does after fencing, and
//! of what a start on the new node finds: shared disks work, disks local to the old node fail
//! the start the way volume activation fails, and the VM stays stopped.

use super::support::fast;
use crate::Route;
use crate::faults::TaskFault;
use crate::node_power::NodePowerAction;

const V100: (&str, &str) = ("vmid", "100");

#[tokio::test]
async fn a_moved_config_is_read_at_the_new_node_and_missing_at_the_old() {
    let s = fast();
    s.create_vm("pve2", "100", "ceph").await;
    s.start("pve2", "100").await;
    let e = s.c.move_vm_config(100, "pve2", "pve3").unwrap_err();
    assert_eq!(
        (e.status, e.message.as_str()),
        (
            409,
            "VM 100 is running on node 'pve2' - its config cannot be moved"
        )
    );
    assert_eq!(s.c.vm_node(100).as_deref(), Some("pve2"));
    s.c.power_node("pve2", NodePowerAction::Off).unwrap();
    let before = s.c.vm_config_text(100).unwrap();
    s.c.move_vm_config(100, "pve2", "pve3").unwrap();
    assert_eq!(s.c.vm_node(100).as_deref(), Some("pve3"));
    assert_eq!(
        s.c.vm_config_text(100).unwrap(),
        before,
        "the file is renamed"
    );
    let conf = s.config("pve3", "100").await;
    assert_eq!(conf["scsi0"], "ceph:vm-100-disk-0,size=8G");
    let e = s.err(Route::VmConfigGet, &[("node", "pve2"), V100]).await;
    assert_eq!(
        (e.status, e.message.as_str()),
        (
            500,
            "Configuration file 'nodes/pve2/qemu-server/100.conf' does not exist"
        )
    );
    // Disks on shared storage are usable from the new node.
    s.start("pve3", "100").await;
    assert_eq!(s.c.vm_running(100), Some(true));
}

#[tokio::test]
async fn moves_are_refused_for_unknown_nodes_and_configs_elsewhere() {
    let s = fast();
    s.create_vm("pve2", "100", "ceph").await;
    let e = s.c.move_vm_config(100, "pve2", "pve9").unwrap_err();
    assert_eq!(
        (e.status, e.message.as_str()),
        (404, "no such cluster node 'pve9'")
    );
    let e = s.c.move_vm_config(100, "pve1", "pve3").unwrap_err();
    assert_eq!(
        (e.status, e.message.as_str()),
        (
            404,
            "Configuration file 'nodes/pve1/qemu-server/100.conf' does not exist"
        )
    );
    let e = s.c.move_vm_config(555, "pve2", "pve3").unwrap_err();
    assert_eq!(e.status, 404);
    assert_eq!(s.c.vm_node(100).as_deref(), Some("pve2"));
}

#[tokio::test]
async fn a_start_on_the_new_node_fails_for_disks_local_to_the_old_one() {
    let s = fast();
    s.create_vm("pve2", "100", "local-lvm").await;
    s.create_vm("pve2", "101", "local").await;
    for vmid in [100, 101] {
        s.c.move_vm_config(vmid, "pve2", "pve3").unwrap();
    }
    let upid = s.task(Route::VmStart, &[("node", "pve3"), V100]).await;
    assert_eq!(
        s.wait(&upid).await,
        "no such logical volume pve/vm-100-disk-0"
    );
    assert_eq!(
        s.log(&upid).await.last().unwrap(),
        "TASK ERROR: no such logical volume pve/vm-100-disk-0"
    );
    assert_eq!(s.c.vm_running(100), Some(false));
    assert_eq!(
        s.run(Route::VmStart, &[("node", "pve3"), ("vmid", "101")])
            .await,
        "volume 'local:101/vm-101-disk-0.raw' does not exist"
    );
    assert_eq!(s.c.vm_running(101), Some(false));
    // Moved back to the node holding the disk, it starts.
    s.c.move_vm_config(100, "pve3", "pve2").unwrap();
    s.start("pve2", "100").await;
}

#[tokio::test]
async fn an_injected_start_failure_leaves_the_vm_stopped_with_pves_log_text() {
    let s = fast();
    s.create_vm("pve1", "100", "ceph").await;
    s.faults.fail_task(TaskFault {
        vmid: Some(100),
        task_type: "qmstart".into(),
        message: "start failed: QEMU exited with code 1".into(),
        remaining: Some(1),
    });
    let upid = s.task(Route::VmStart, &[("node", "pve1"), V100]).await;
    assert_eq!(s.wait(&upid).await, "start failed: QEMU exited with code 1");
    assert_eq!(
        s.log(&upid).await.last().unwrap(),
        "TASK ERROR: start failed: QEMU exited with code 1"
    );
    assert_eq!(s.c.vm_running(100), Some(false));
    let status = s
        .ok(Route::VmStatusCurrent, &[("node", "pve1"), V100])
        .await;
    assert_eq!(status["status"], "stopped");
    // The fault was for one start: the next one works.
    s.start("pve1", "100").await;
}
