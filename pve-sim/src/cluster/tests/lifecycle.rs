//! Scenario tests of create, power operations, tasks (UPIDs, logs, lists, interrupts, faults,
//! dead nodes) and destroy.

use std::time::Duration;

use serde_json::Value;

use super::support::{eventually, fast, scaled};
use crate::cluster::tasks::task::Upid;
use crate::faults::TaskFault;
use crate::{Caller, Route};

const N1: (&str, &str) = ("node", "pve1");
const V100: (&str, &str) = ("vmid", "100");

#[tokio::test]
async fn create_adds_pve_defaults_and_refuses_a_taken_vmid() {
    let s = fast();
    s.create_vm("pve1", "100", "local-lvm").await;
    let c = s.config("pve1", "100").await;
    assert_eq!(c["scsi0"], "local-lvm:vm-100-disk-0,size=8G");
    assert_eq!(c["boot"], "order=scsi0;net0");
    assert!(
        c["meta"]
            .as_str()
            .unwrap()
            .starts_with("creation-qemu=9.2.0,ctime=")
    );
    assert!(c["smbios1"].as_str().unwrap().starts_with("uuid="));
    assert_eq!(c["vmgenid"].as_str().unwrap().len(), 36);
    assert!(c.get("lock").is_none());
    let e = s.err(Route::VmCreate, &[("node", "pve2"), V100]).await;
    assert_eq!(
        (e.status, e.message.as_str()),
        (
            500,
            "unable to create VM 100 - VM 100 already exists on node 'pve1'"
        )
    );
    let e = s
        .err(
            Route::VmCreate,
            &[N1, ("vmid", "101"), ("scsi0", "local-lvm:8"), ("pool", "p")],
        )
        .await;
    assert_eq!(e.errors["pool"], "pool 'p' does not exist");
    s.ok(Route::VmCreate, &[N1, ("vmid", "102"), ("tags", "b;a;b")])
        .await;
    assert_eq!(s.config("pve1", "102").await["tags"], "a;b");
    let upid = s
        .task(Route::VmCreate, &[N1, ("vmid", "103"), ("ha-managed", "1")])
        .await;
    assert_eq!(s.wait(&upid).await, "WARNINGS: 1");
    let log = s.log(&upid).await;
    assert_eq!(
        log[0],
        "WARN: HA is not simulated - vm:103 was not added as HA resource"
    );
    assert_eq!(log.last().unwrap(), "TASK WARNINGS: 1");
}

#[tokio::test]
async fn without_quorum_create_start_clone_and_migrate_are_refused() {
    let s = fast();
    s.create_vm("pve1", "100", "local-lvm").await;
    s.faults.set_node_down("pve2", true);
    s.start("pve1", "100").await;
    s.faults.set_node_down("pve3", true);
    let calls: [(Route, Vec<(&str, &str)>); 4] = [
        (Route::VmCreate, vec![N1, ("vmid", "101")]),
        (Route::VmStart, vec![N1, V100]),
        (Route::VmClone, vec![N1, ("vmid", "9000"), ("newid", "101")]),
        (
            Route::VmMigrate,
            vec![N1, V100, ("target", "pve2"), ("online", "1")],
        ),
    ];
    for (route, pairs) in calls {
        let e = s.err(route, &pairs).await;
        assert_eq!(e.message, "cluster not ready - no quorum?", "{route:?}");
    }
    assert_eq!(s.run(Route::VmStop, &[N1, V100]).await, "OK");
}

#[tokio::test]
async fn create_lock_is_written_before_the_upid_and_removed_at_the_end() {
    let s = scaled(0.25);
    let upid = s
        .task(Route::VmCreate, &[N1, V100, ("scsi0", "local-lvm:8")])
        .await;
    assert_eq!(s.config("pve1", "100").await["lock"], "create");
    assert_eq!(s.status(&upid).await["status"], "running");
    assert_eq!(s.wait(&upid).await, "OK");
    assert!(s.config("pve1", "100").await.get("lock").is_none());
}

#[tokio::test]
async fn failed_create_removes_the_config_and_frees_disks() {
    let s = fast();
    let upid = s
        .task(
            Route::VmCreate,
            &[
                N1,
                V100,
                ("scsi0", "local-lvm:8"),
                ("scsi1", "local-lvm:0,import-from=ceph:vm-1-disk-0"),
            ],
        )
        .await;
    assert_eq!(
        s.wait(&upid).await,
        "unable to create VM 100 - cannot import from 'ceph:vm-1-disk-0' - could not get size of ceph:vm-1-disk-0"
    );
    assert!(s.c.vm_config_text(100).is_none());
    let content = s
        .ok(Route::StorageContent, &[N1, ("storage", "local-lvm")])
        .await;
    assert_eq!(content, Value::Array(vec![]));
    s.faults.fail_task(TaskFault {
        vmid: Some(101),
        task_type: "qmcreate".into(),
        message: "boom".into(),
        remaining: None,
    });
    assert_eq!(
        s.run(
            Route::VmCreate,
            &[N1, ("vmid", "101"), ("scsi0", "local-lvm:8")]
        )
        .await,
        "boom"
    );
    assert!(s.c.vm_node(101).is_none());
}

#[tokio::test]
async fn create_with_start_forks_a_start_task() {
    let s = fast();
    let upid = s
        .task(
            Route::VmCreate,
            &[N1, V100, ("scsi0", "local-lvm:8"), ("start", "1")],
        )
        .await;
    assert_eq!(s.wait(&upid).await, "OK");
    assert!(
        s.log(&upid)
            .await
            .contains(&"Execute autostart".to_string())
    );
    assert_eq!(s.c.vm_running(100), Some(true));
    let tasks = s
        .ok(Route::NodeTasks, &[N1, ("typefilter", "qmstart")])
        .await;
    assert_eq!(tasks.as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn power_operations_fail_sync_or_in_the_task_as_pve_does() {
    let s = fast();
    s.create_vm("pve1", "100", "local-lvm").await;
    // stopped VM
    assert_eq!(s.run(Route::VmStop, &[N1, V100]).await, "OK");
    assert_eq!(s.run(Route::VmShutdown, &[N1, V100]).await, "OK");
    for route in [
        Route::VmReboot,
        Route::VmReset,
        Route::VmSuspend,
        Route::VmResume,
    ] {
        let e = s.err(route, &[N1, V100]).await;
        assert_eq!(
            (e.status, e.message.as_str()),
            (500, "VM 100 not running"),
            "{route:?}"
        );
    }
    // missing config: sync for reboot/reset/suspend, task errors for start/stop
    for route in [Route::VmReboot, Route::VmReset, Route::VmSuspend] {
        let e = s.err(route, &[("node", "pve2"), V100]).await;
        assert_eq!(
            e.message, "unable to find configuration file for VM 100 on node 'pve2'",
            "{route:?}"
        );
    }
    assert_eq!(
        s.run(Route::VmStart, &[("node", "pve2"), V100]).await,
        "Configuration file 'nodes/pve2/qemu-server/100.conf' does not exist"
    );
    assert_eq!(
        s.run(Route::VmStop, &[("node", "pve2"), V100]).await,
        "unable to find configuration file for VM 100 on node 'pve2'"
    );
    // running VM
    s.start("pve1", "100").await;
    assert_eq!(
        s.run(Route::VmStart, &[N1, V100]).await,
        "VM 100 already running"
    );
    assert_eq!(s.run(Route::VmSuspend, &[N1, V100]).await, "OK");
    let cur = s.ok(Route::VmStatusCurrent, &[N1, V100]).await;
    assert_eq!(
        (cur["status"].as_str(), cur["qmpstatus"].as_str()),
        (Some("running"), Some("paused"))
    );
    let e = s.err(Route::VmShutdown, &[N1, V100]).await;
    assert_eq!(e.message, "VM is paused - cannot shutdown");
    let e = s.err(Route::VmReboot, &[N1, V100]).await;
    assert_eq!(e.message, "VM is paused - cannot shutdown");
    assert_eq!(s.run(Route::VmResume, &[N1, V100]).await, "OK");
    assert_eq!(s.run(Route::VmReboot, &[N1, V100]).await, "OK");
    assert_eq!(s.run(Route::VmReset, &[N1, V100]).await, "OK");
    // locked VM: task errors, skiplock is root-only
    s.ok(Route::VmConfigPut, &[N1, V100, ("lock", "backup")])
        .await;
    assert_eq!(
        s.run(Route::VmShutdown, &[N1, V100]).await,
        "VM is locked (backup)"
    );
    assert_eq!(
        s.run(Route::VmStop, &[N1, V100, ("skiplock", "1")]).await,
        "OK"
    );
    assert_eq!(
        s.run(Route::VmStart, &[N1, V100]).await,
        "VM is locked (backup)"
    );
    let token = super::support::Sim {
        caller: Caller::token("root@pam", "fleet"),
        ..fast()
    };
    let e = token
        .err(Route::VmStart, &[N1, V100, ("skiplock", "1")])
        .await;
    assert_eq!(e.errors["skiplock"], "Only root may use this option.");
    // a shutdown the guest cannot finish in time fails, unless forced
    s.ok(
        Route::VmConfigPut,
        &[N1, V100, ("delete", "lock"), ("skiplock", "1")],
    )
    .await;
    s.start("pve1", "100").await;
    assert_eq!(
        s.run(Route::VmShutdown, &[N1, V100, ("timeout", "1")])
            .await,
        "VM quit/powerdown failed - got timeout"
    );
    assert_eq!(s.c.vm_running(100), Some(true));
    assert_eq!(
        s.run(
            Route::VmShutdown,
            &[N1, V100, ("timeout", "1"), ("forceStop", "1")]
        )
        .await,
        "OK"
    );
    assert_eq!(s.c.vm_running(100), Some(false));
    // templates never start
    assert_eq!(
        s.run(Route::VmStart, &[N1, ("vmid", "9000")]).await,
        "you can't start a vm if it's a template"
    );
}

#[tokio::test]
async fn start_checks_snippets_and_bridges() {
    let s = fast();
    s.create_vm("pve1", "100", "local-lvm").await;
    s.ok(
        Route::VmConfigPut,
        &[N1, V100, ("cicustom", "user=local:snippets/u.yaml")],
    )
    .await;
    assert_eq!(
        s.run(Route::VmStart, &[N1, V100]).await,
        "volume 'local:snippets/u.yaml' does not exist"
    );
    // local storage: the snippet must be on the VM's node
    s.c.write_snippet("pve2", "local", "u.yaml", "#cloud-config\n")
        .unwrap();
    assert_eq!(
        s.run(Route::VmStart, &[N1, V100]).await,
        "volume 'local:snippets/u.yaml' does not exist"
    );
    let volid =
        s.c.write_snippet("pve1", "local", "u.yaml", "#cloud-config\n")
            .unwrap();
    assert_eq!(volid, "local:snippets/u.yaml");
    assert!(
        s.c.write_snippet("pve1", "local-lvm", "u.yaml", "x")
            .is_err()
    );
    s.ok(
        Route::VmConfigPut,
        &[N1, V100, ("net1", "virtio,bridge=vmbr9")],
    )
    .await;
    assert_eq!(
        s.run(Route::VmStart, &[N1, V100]).await,
        "bridge 'vmbr9' does not exist"
    );
    s.ok(Route::VmConfigPut, &[N1, V100, ("delete", "net1")])
        .await;
    s.start("pve1", "100").await;
}

#[tokio::test]
async fn upids_name_the_owner_node_and_the_caller() {
    let mut s = fast();
    s.create_vm("pve2", "100", "local-lvm").await;
    s.caller = Caller::token("root@pam", "fleet");
    let upid = s.task(Route::VmStart, &[("node", "pve2"), V100]).await;
    let u = Upid::decode(&upid).unwrap();
    assert_eq!(
        (
            u.node.as_str(),
            u.kind.as_str(),
            u.id.as_str(),
            u.user.as_str()
        ),
        ("pve2", "qmstart", "100", "root@pam!fleet")
    );
    let re = regex_like(&upid);
    assert!(re, "{upid}");
    let st = s.status(&upid).await;
    assert_eq!(st["user"], "root@pam");
    assert_eq!(st["tokenid"], "fleet");
    assert_eq!(st["exitstatus"], "OK");
    assert_eq!(st["pid"], Value::from(u.pid));
    let clone = s
        .task(Route::VmClone, &[N1, ("vmid", "9000"), ("newid", "101")])
        .await;
    let u = Upid::decode(&clone).unwrap();
    assert_eq!(
        (u.node.as_str(), u.kind.as_str(), u.id.as_str()),
        ("pve1", "qmclone", "9000")
    );
    // unknown, unparsable, other node
    let e = s
        .err(
            Route::TaskStatus,
            &[
                N1,
                (
                    "upid",
                    "UPID:pve1:00000001:00000002:00000003:qmstart:100:root@pam:",
                ),
            ],
        )
        .await;
    assert_eq!(e.errors["upid"], "no such task");
    let e = s.err(Route::TaskStatus, &[N1, ("upid", "garbage")]).await;
    assert_eq!(e.errors["upid"], "unable to parse worker upid");
    let e = s.err(Route::TaskLog, &[N1, ("upid", &upid)]).await;
    assert_eq!(e.errors["upid"], "no such task");
}

/// `^UPID:node:8hex:8-9hex:8hex:type:id:user:$` without a regex dependency.
fn regex_like(upid: &str) -> bool {
    let f: Vec<&str> = upid.split(':').collect();
    f.len() == 9
        && f[0] == "UPID"
        && f[2].len() == 8
        && (8..=9).contains(&f[3].len())
        && f[4].len() == 8
        && [f[2], f[3], f[4]].iter().all(|h| {
            h.chars()
                .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_lowercase())
        })
        && f[8].is_empty()
}

#[tokio::test]
async fn task_log_pages_and_ends_with_the_status_line() {
    let s = fast();
    let upid = s
        .task(
            Route::VmCreate,
            &[
                N1,
                V100,
                ("scsi0", "local-lvm:8"),
                ("ide2", "local-lvm:cloudinit"),
            ],
        )
        .await;
    let all = s.log(&upid).await;
    assert_eq!(all.last().unwrap(), "TASK OK");
    assert!(
        all.iter()
            .any(|l| l == "scsi0: successfully created disk 'local-lvm:vm-100-disk-0,size=8G'")
    );
    let r = s
        .call(
            Route::TaskLog,
            &[N1, ("upid", &upid), ("start", "1"), ("limit", "2")],
        )
        .await
        .unwrap();
    assert_eq!(r.total, Some(all.len() as u64));
    let page = r.data.as_array().unwrap();
    assert_eq!(page.len(), 2);
    assert_eq!(page[0]["n"], 2);
    assert_eq!(page[0]["t"], Value::from(all[1].as_str()));
}

#[tokio::test]
async fn running_task_can_be_interrupted_without_effect() {
    let s = scaled(0.5);
    let upid = s
        .task(Route::VmClone, &[N1, ("vmid", "9000"), ("newid", "101")])
        .await;
    assert_eq!(s.config("pve1", "101").await["lock"], "clone");
    assert_eq!(
        s.ok(Route::TaskStop, &[N1, ("upid", &upid)]).await,
        Value::Null
    );
    assert_eq!(s.wait(&upid).await, "received interrupt");
    assert_eq!(
        s.log(&upid).await.last().unwrap(),
        "TASK ERROR: received interrupt"
    );
    assert!(s.c.vm_node(101).is_none());
    // stopping a finished task is fine
    assert_eq!(
        s.ok(Route::TaskStop, &[N1, ("upid", &upid)]).await,
        Value::Null
    );
}

#[tokio::test]
async fn a_dead_node_freezes_its_tasks_until_it_is_back() {
    let s = scaled(0.2);
    s.create_vm("pve2", "100", "local-lvm").await;
    let upid = s.task(Route::VmStart, &[("node", "pve2"), V100]).await;
    s.faults.set_node_down("pve2", true);
    // Longer than the whole (scaled, 0.3 s) start: a live node would have finished it.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(s.status(&upid).await["status"], "running");
    assert_eq!(s.c.vm_running(100), Some(false));
    s.faults.set_node_down("pve2", false);
    assert_eq!(s.wait(&upid).await, "OK");
    assert_eq!(s.c.vm_running(100), Some(true));
}

#[tokio::test]
async fn injected_task_failures_end_the_task_without_effect() {
    let s = fast();
    s.create_vm("pve1", "100", "local-lvm").await;
    s.faults.fail_task(TaskFault {
        vmid: Some(100),
        task_type: "qmstart".into(),
        message: "boom".into(),
        remaining: Some(1),
    });
    let upid = s.task(Route::VmStart, &[N1, V100]).await;
    assert_eq!(s.wait(&upid).await, "boom");
    assert_eq!(s.log(&upid).await.last().unwrap(), "TASK ERROR: boom");
    assert_eq!(s.c.vm_running(100), Some(false));
    s.start("pve1", "100").await;
}

#[tokio::test]
async fn node_task_list_filters_and_counts() {
    let s = scaled(0.5);
    s.create_vm("pve1", "100", "local-lvm").await;
    assert_eq!(
        s.run(Route::VmStart, &[N1, ("vmid", "9000")]).await,
        "you can't start a vm if it's a template"
    );
    let running = s.task(Route::VmStart, &[N1, V100]).await;
    let list = |r: crate::Reply| (r.total.unwrap(), r.data.as_array().unwrap().clone());
    let (total, items) = list(s.call(Route::NodeTasks, &[N1]).await.unwrap());
    assert_eq!(total, 2, "archive: finished only");
    assert_eq!(items[0]["type"], "qmstart", "newest first");
    assert!(items[0]["endtime"].is_u64());
    let (total, items) = list(
        s.call(Route::NodeTasks, &[N1, ("source", "active")])
            .await
            .unwrap(),
    );
    assert_eq!(
        (total, items[0]["upid"].as_str()),
        (1, Some(running.as_str()))
    );
    assert_eq!(items[0]["status"], "RUNNING");
    let (total, _) = list(
        s.call(Route::NodeTasks, &[N1, ("source", "all")])
            .await
            .unwrap(),
    );
    assert_eq!(total, 3);
    let (total, _) = list(
        s.call(Route::NodeTasks, &[N1, ("errors", "1")])
            .await
            .unwrap(),
    );
    assert_eq!(total, 1);
    let (total, _) = list(
        s.call(Route::NodeTasks, &[N1, ("vmid", "100"), ("source", "all")])
            .await
            .unwrap(),
    );
    assert_eq!(total, 2);
    let (total, items) = list(
        s.call(
            Route::NodeTasks,
            &[N1, ("statusfilter", "ok"), ("limit", "1")],
        )
        .await
        .unwrap(),
    );
    assert_eq!((total, items.len()), (1, 1));
    let (total, _) = list(s.call(Route::NodeTasks, &[("node", "pve2")]).await.unwrap());
    assert_eq!(total, 0);
    let cluster = s.ok(Route::ClusterTasks, &[]).await;
    assert_eq!(cluster.as_array().unwrap().len(), 3);
    s.wait(&running).await;
}

#[tokio::test]
async fn destroy_checks_protection_running_locks_and_linked_clones() {
    let s = fast();
    s.create_vm("pve1", "100", "local-lvm").await;
    s.ok(Route::VmConfigPut, &[N1, V100, ("protection", "1")])
        .await;
    let e = s.err(Route::VmDestroy, &[N1, V100]).await;
    assert_eq!(e.message, "can't remove VM 100 - protection mode enabled");
    s.ok(Route::VmConfigPut, &[N1, V100, ("delete", "protection")])
        .await;
    s.start("pve1", "100").await;
    let e = s.err(Route::VmDestroy, &[N1, V100]).await;
    assert_eq!(e.message, "VM 100 is running - destroy failed");
    assert_eq!(s.run(Route::VmStop, &[N1, V100]).await, "OK");
    s.ok(Route::VmConfigPut, &[N1, V100, ("lock", "backup")])
        .await;
    assert_eq!(
        s.run(Route::VmDestroy, &[N1, V100]).await,
        "VM is locked (backup)"
    );
    let e = s.err(Route::VmDestroy, &[("node", "pve2"), V100]).await;
    assert_eq!(
        e.message,
        "Configuration file 'nodes/pve2/qemu-server/100.conf' does not exist"
    );
    let upid = s
        .task(
            Route::VmDestroy,
            &[N1, V100, ("skiplock", "1"), ("purge", "1")],
        )
        .await;
    assert_eq!(s.wait(&upid).await, "OK");
    let log = s.log(&upid).await;
    assert!(
        log.contains(&"  Logical volume \"vm-100-disk-0\" successfully removed.".to_string()),
        "{log:?}"
    );
    assert!(log.contains(&"purging VM 100 from related configurations..".to_string()));
    assert!(s.c.vm_node(100).is_none());
    assert_eq!(
        s.ok(Route::StorageContent, &[N1, ("storage", "local-lvm")])
            .await,
        Value::Array(vec![])
    );
    // a template whose base volume a linked clone uses
    assert_eq!(
        s.run(Route::VmClone, &[N1, ("vmid", "9000"), ("newid", "101")])
            .await,
        "OK"
    );
    assert_eq!(
        s.run(Route::VmDestroy, &[N1, ("vmid", "9000")]).await,
        "base volume 'ceph:base-9000-disk-0' is still in use by linked cloned"
    );
    assert_eq!(s.run(Route::VmDestroy, &[N1, ("vmid", "101")]).await, "OK");
    assert_eq!(s.run(Route::VmDestroy, &[N1, ("vmid", "9000")]).await, "OK");
    let ceph = s
        .ok(Route::StorageContent, &[N1, ("storage", "ceph")])
        .await;
    assert_eq!(ceph, Value::Array(vec![]));
}

#[tokio::test]
async fn set_vm_running_changes_state_behind_the_back() {
    let s = fast();
    s.create_vm("pve1", "100", "local-lvm").await;
    assert!(s.c.set_vm_running(100, true));
    assert_eq!(
        s.ok(Route::VmStatusCurrent, &[N1, V100]).await["status"],
        "running"
    );
    assert!(s.c.set_vm_running(100, false));
    assert!(!s.c.set_vm_running(555, true));
    assert_eq!(s.c.vm_running(100), Some(false));
}

#[tokio::test]
async fn the_start_after_create_runs_after_the_create_task() {
    let s = scaled(0.2);
    let upid = s
        .task(
            Route::VmCreate,
            &[N1, V100, ("scsi0", "local-lvm:8"), ("start", "1")],
        )
        .await;
    assert_eq!(s.c.vm_running(100), Some(false));
    assert_eq!(s.wait(&upid).await, "OK");
    eventually(|| s.c.vm_running(100) == Some(true)).await;
}
