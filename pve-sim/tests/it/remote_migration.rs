//! Remote migration between two simulated clusters served over HTTPS in this process: a
//! running VM moved with a least-privilege token and a pinned fingerprint, offline, without
//! `delete`, and its failures (missing privileges, wrong fingerprint, injected fault, dead
//! target, interrupt, VMID clash).

// Test helpers outside #[test] functions may unwrap: a panic is the failure report.
#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use pve_sim::faults::TaskFault;
use pve_sim::node_power::NodePowerAction;
use serde_json::Value;

use crate::common::TOKEN;
use crate::common::clusters::{
    MIGRATOR, clusters, endpoint, fingerprint, has_line, migrate, migration_token, running_vm,
    source_untouched, target_volumes,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_vm_moves_to_the_other_cluster_with_a_least_privilege_token() {
    let (a, b) = clusters(0.0).await;
    running_vm(&a).await;
    let token = migration_token(&b, MIGRATOR, None).await;
    let fp = fingerprint(&b).await;
    let before = a.ok("GET", "/nodes/pve1/qemu/100/config", &[]).await;
    let upid = migrate(&a, &endpoint(&b, &token, &fp), &[("delete", "1")]).await;
    assert!(upid.contains(":qmigrate:100:root@pam!fleet:"), "{upid}");
    let (status, log) = a.wait(&upid).await;
    assert_eq!(status, "OK", "{log:#?}");
    for line in [
        "remote: started tunnel worker 'UPID:pveb1:",
        "local WS tunnel version: 2",
        "starting migration of VM 100 to node 'pveb1' (127.0.0.1)",
        "found local disk 'local-lvm:vm-100-disk-0' (attached)",
        "mapped: net0 from vmbr0 to vmbr1",
        "Allocating volume for drive 'scsi0' on remote storage 'local'..",
        "volume 'local-lvm:vm-100-disk-0' is 'local:100/vm-100-disk-0.raw' on the target",
        "starting online/live migration on unix:/run/qemu-server/100.migrate",
        "migration status: completed",
        "migration finished successfully (duration 00:00:0",
    ] {
        assert!(has_line(&log, line), "{line} missing in {log:#?}");
    }
    assert_eq!(log.last().unwrap(), "TASK OK");

    let conf = b.ok("GET", "/nodes/pveb1/qemu/100/config", &[]).await;
    assert_eq!(conf["name"], "web1");
    assert_eq!(conf["memory"], before["memory"]);
    assert_eq!(conf["cores"], before["cores"]);
    assert_eq!(conf["smbios1"], before["smbios1"]);
    assert_eq!(conf["lock"], Value::Null, "unlocked: {conf}");
    assert_eq!(
        conf["scsi0"],
        "local:100/vm-100-disk-0.raw,format=raw,size=8G"
    );
    let mac = before["net0"].as_str().unwrap().replace("vmbr0", "vmbr1");
    assert_eq!(conf["net0"], mac);
    let current = b
        .ok("GET", "/nodes/pveb1/qemu/100/status/current", &[])
        .await;
    assert_eq!(current["status"], "running");
    assert_eq!(
        current["qmpstatus"], "running",
        "resumed after the switchover"
    );
    let vols = target_volumes(&b).await;
    assert_eq!(vols.len(), 1);
    assert_eq!(vols[0]["volid"], "local:100/vm-100-disk-0.raw");
    assert_eq!(vols[0]["size"], 8u64 << 30);
    let tasks = b
        .ok("GET", "/nodes/pveb1/tasks?typefilter=qmtunnel", &[])
        .await;
    assert_eq!(tasks[0]["status"], "OK", "{tasks}");
    assert_eq!(tasks[0]["user"], "mig@pve");
    assert_eq!(tasks[0]["tokenid"], "m100");

    assert_eq!(a.s.sim.vm_config_text(100), None, "deleted on the source");
    let left: Vec<Value> = a
        .ok("GET", "/nodes/pve1/storage/local-lvm/content", &[])
        .await
        .as_array()
        .unwrap()
        .iter()
        .filter(|v| v["vmid"] == 100)
        .cloned()
        .collect();
    assert!(left.is_empty(), "source volume freed: {left:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_vm_moves_offline_under_another_vmid() {
    let (a, b) = clusters(0.0).await;
    running_vm(&a).await;
    assert_eq!(a.run("/nodes/pve1/qemu/100/status/stop", &[]).await, "OK");
    let fp = fingerprint(&b).await;
    let root = endpoint(&b, TOKEN, &fp);
    let upid = a
        .ok(
            "POST",
            "/nodes/pve1/qemu/100/remote_migrate",
            &[
                ("target-endpoint", &root),
                ("target-storage", "local"),
                ("target-bridge", "vmbr1"),
                ("target-vmid", "200"),
                ("online", "1"),
            ],
        )
        .await;
    let (status, log) = a.wait(upid.as_str().unwrap()).await;
    assert_eq!(status, "OK", "{log:#?}");
    assert!(has_line(&log, "copying local disk images"));
    assert!(has_line(
        &log,
        "volume 'local-lvm:vm-100-disk-0' is 'local:200/vm-200-disk-0.raw' on the target"
    ));
    assert!(!has_line(&log, "online/live"), "{log:#?}");
    let conf = b.ok("GET", "/nodes/pveb1/qemu/200/config", &[]).await;
    assert_eq!(conf["scsi0"], "local:200/vm-200-disk-0.raw,size=8G");
    assert_eq!(conf["lock"], Value::Null);
    assert_eq!(b.s.sim.vm_running(200), Some(false));
    assert_eq!(b.s.sim.vm_node(100), None);
    assert_eq!(a.s.sim.vm_running(100), Some(false));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_delete_the_source_stays_stopped_and_locked() {
    let (a, b) = clusters(0.0).await;
    running_vm(&a).await;
    let token = migration_token(&b, MIGRATOR, None).await;
    let fp = fingerprint(&b).await;
    let (status, log) = a
        .wait(&migrate(&a, &endpoint(&b, &token, &fp), &[]).await)
        .await;
    assert_eq!(status, "OK", "{log:#?}");
    assert_eq!(a.s.sim.vm_running(100), Some(false));
    let conf = a.ok("GET", "/nodes/pve1/qemu/100/config", &[]).await;
    assert_eq!(conf["lock"], "migrate");
    assert_eq!(conf["scsi0"], "local-lvm:vm-100-disk-0,size=8G", "kept");
    assert_eq!(b.s.sim.vm_running(100), Some(true));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_without_sys_incoming_is_refused_and_leaves_nothing_on_the_target() {
    let (a, b) = clusters(0.0).await;
    running_vm(&a).await;
    let privs = MIGRATOR.replace("Sys.Incoming,", "");
    let token = migration_token(&b, &privs, None).await;
    let fp = fingerprint(&b).await;
    let (status, log) = a
        .wait(&migrate(&a, &endpoint(&b, &token, &fp), &[]).await)
        .await;
    assert_eq!(status, "migration aborted");
    assert!(
        has_line(
            &log,
            "ERROR: migration aborted (duration 00:00:00): 403 Permission check failed (/, Sys.Incoming)"
        ),
        "{log:#?}"
    );
    assert_eq!(b.s.sim.vm_config_text(100), None);
    assert!(target_volumes(&b).await.is_empty());
    source_untouched(&a).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_config_is_written_with_the_tokens_privileges_as_update_vm_api_checks_them() {
    let (a, b) = clusters(0.0).await;
    running_vm(&a).await;
    let privs = MIGRATOR.replace("VM.Config.Memory,", "");
    let token = migration_token(&b, &privs, None).await;
    let fp = fingerprint(&b).await;
    let (status, log) = a
        .wait(&migrate(&a, &endpoint(&b, &token, &fp), &[]).await)
        .await;
    assert_eq!(status, "migration aborted");
    assert!(
        has_line(
            &log,
            "failed to handle 'config' command - 403 Permission check failed (/vms/100, VM.Config.Memory)"
        ),
        "{log:#?}"
    );
    assert!(has_line(&log, "aborting phase 1 - cleanup resources"));
    assert_eq!(b.s.sim.vm_config_text(100), None, "quit with cleanup");
    assert!(target_volumes(&b).await.is_empty());
    source_untouched(&a).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_fingerprint_fails_before_any_request_reaches_the_target() {
    let (a, b) = clusters(0.0).await;
    running_vm(&a).await;
    let token = migration_token(&b, MIGRATOR, None).await;
    let fp = fingerprint(&b).await;
    // Any request B processes consumes this rule: it stays only if none arrived.
    b.s.sim.faults().drop_responses("GET", "/", 1);
    b.s.sim.faults().drop_responses("POST", "/", 1);
    let first = if fp.starts_with("00") { "11" } else { "00" };
    let wrong = format!("{first}{}", &fp[2..]);
    let (status, body) = a
        .call(
            "POST",
            "/nodes/pve1/qemu/100/remote_migrate",
            &[
                ("target-endpoint", &endpoint(&b, &token, &wrong)),
                ("target-storage", "local-lvm:local"),
                ("target-bridge", "vmbr0:vmbr1"),
                ("online", "1"),
            ],
        )
        .await;
    assert_eq!(status, 500);
    assert_eq!(
        body["message"],
        format!("fingerprint '{fp}' not verified, abort!\n")
    );
    assert_eq!(
        b.s.sim.faults().snapshot().drop_responses.len(),
        2,
        "B saw nothing"
    );
    // Without a fingerprint the (empty) system trust store decides: the same refusal.
    let no_pin = format!(
        "host=127.0.0.1,port={},apitoken=PVEAPIToken={token}",
        b.s.addr.port()
    );
    let (status, body) = a
        .call(
            "POST",
            "/nodes/pve1/qemu/100/remote_migrate",
            &[
                ("target-endpoint", &no_pin),
                ("target-storage", "local-lvm:local"),
                ("target-bridge", "vmbr0:vmbr1"),
                ("online", "1"),
            ],
        )
        .await;
    assert_eq!(status, 500);
    assert_eq!(
        body["message"],
        format!("fingerprint '{fp}' not verified, abort!\n")
    );
    assert_eq!(b.s.sim.faults().snapshot().drop_responses.len(), 2);
    source_untouched(&a).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fault_before_the_switchover_cleans_the_target_and_keeps_the_source_running() {
    let (a, b) = clusters(0.0).await;
    running_vm(&a).await;
    let token = migration_token(&b, MIGRATOR, None).await;
    let fp = fingerprint(&b).await;
    a.s.sim.faults().fail_task(TaskFault {
        vmid: Some(100),
        task_type: "qmigrate".into(),
        message: "injected failure".into(),
        remaining: Some(1),
    });
    let (status, log) = a
        .wait(&migrate(&a, &endpoint(&b, &token, &fp), &[]).await)
        .await;
    assert_eq!(status, "migration problems", "{log:#?}");
    for line in [
        "all 'mirror' jobs are ready",
        "ERROR: online migrate failure - injected failure",
        "aborting phase 2 - cleanup resources",
        "migrate_cancel",
        "ERROR: migration finished with problems (duration 00:00:0",
    ] {
        assert!(has_line(&log, line), "{line} missing in {log:#?}");
    }
    assert!(!has_line(&log, "migration status: completed"));
    assert_eq!(log.last().unwrap(), "TASK ERROR: migration problems");
    assert!(
        a.s.sim.faults().snapshot().failing_tasks.is_empty(),
        "consumed once"
    );
    source_untouched(&a).await;
    assert_eq!(b.s.sim.vm_config_text(100), None, "target VM destroyed");
    assert!(target_volumes(&b).await.is_empty(), "target volume freed");
    let tasks = b
        .ok("GET", "/nodes/pveb1/tasks?typefilter=qmtunnel", &[])
        .await;
    let (_, tunnel_log) = b.wait(tasks[0]["upid"].as_str().unwrap()).await;
    assert!(
        has_line(
            &tunnel_log,
            "freeing volume 'local:100/vm-100-disk-0.raw' as part of cleanup"
        ),
        "{tunnel_log:#?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_target_that_dies_midway_fails_the_task_in_bounded_time() {
    let (a, b) = clusters(0.2).await;
    // A cloud-init image is copied before the disks are mirrored: the time to pull the plug.
    running_vm(&a).await;
    a.run("/nodes/pve1/qemu/100/status/stop", &[]).await;
    a.ok(
        "PUT",
        "/nodes/pve1/qemu/100/config",
        &[("ide2", "local-lvm:cloudinit")],
    )
    .await;
    assert_eq!(a.run("/nodes/pve1/qemu/100/status/start", &[]).await, "OK");
    let privs = format!("{MIGRATOR},VM.Config.Cloudinit,VM.Config.CDROM");
    let token = migration_token(&b, &privs, None).await;
    let fp = fingerprint(&b).await;
    a.s.sim.set_remote_timeout(Duration::from_millis(300));
    let upid = migrate(&a, &endpoint(&b, &token, &fp), &[]).await;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let log = a
            .ok("GET", &format!("/nodes/pve1/tasks/{upid}/log?limit=0"), &[])
            .await;
        if log.to_string().contains("copying local disk images") {
            break;
        }
        assert!(Instant::now() < deadline, "{log}");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    b.s.sim.power_node("pveb1", NodePowerAction::Off).unwrap();
    let started = Instant::now();
    let (status, log) = a.wait(&upid).await;
    assert!(started.elapsed() < Duration::from_secs(5), "bounded");
    // Normally while the cloud-init image is copied (phase 1); on a very slow machine maybe
    // only when the VM is to start on the target (phase 2): either way before the switchover.
    let cleanup = match status.as_str() {
        "migration aborted" => "aborting phase 1 - cleanup resources",
        "migration problems" => "aborting phase 2 - cleanup resources",
        other => panic!("{other}: {log:#?}"),
    };
    assert!(has_line(&log, cleanup), "{log:#?}");
    assert!(
        has_line(&log, "reading from tunnel failed: got timeout"),
        "{log:#?}"
    );
    let conf = a.ok("GET", "/nodes/pve1/qemu/100/config", &[]).await;
    assert_eq!(conf["lock"], Value::Null);
    assert_eq!(a.s.sim.vm_running(100), Some(true));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupted_migration_cleans_up_the_target() {
    let (a, b) = clusters(0.5).await;
    running_vm(&a).await;
    let token = migration_token(&b, MIGRATOR, None).await;
    let fp = fingerprint(&b).await;
    let upid = migrate(&a, &endpoint(&b, &token, &fp), &[]).await;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let log = a
            .ok("GET", &format!("/nodes/pve1/tasks/{upid}/log?limit=0"), &[])
            .await;
        if log.to_string().contains("drive mirror is starting") {
            break;
        }
        assert!(Instant::now() < deadline, "{log}");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    a.ok("DELETE", &format!("/nodes/pve1/tasks/{upid}"), &[])
        .await;
    let (status, _) = a.wait(&upid).await;
    assert_eq!(status, "received interrupt");
    source_untouched(&a).await;
    let deadline = Instant::now() + Duration::from_secs(10);
    while b.s.sim.vm_config_text(100).is_some() {
        assert!(Instant::now() < deadline, "target not cleaned up");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(target_volumes(&b).await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_vmid_taken_on_the_target_fails_the_task_and_changes_nothing() {
    let (a, b) = clusters(0.0).await;
    running_vm(&a).await;
    assert_eq!(
        b.run("/nodes/pveb1/qemu", &[("vmid", "100"), ("name", "other")])
            .await,
        "OK"
    );
    let token = migration_token(&b, MIGRATOR, None).await;
    let fp = fingerprint(&b).await;
    let (status, log) = a
        .wait(&migrate(&a, &endpoint(&b, &token, &fp), &[]).await)
        .await;
    assert_eq!(status, "migration aborted");
    assert!(
        has_line(
            &log,
            "ERROR: vmid: unable to create empty VM config - VM 100 already exists on node 'pveb1'"
        ),
        "{log:#?}"
    );
    source_untouched(&a).await;
    let other = b.ok("GET", "/nodes/pveb1/qemu/100/config", &[]).await;
    assert_eq!(other["name"], "other");
}
