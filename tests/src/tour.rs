//! A tour of every typed call the client has that the lifecycle does not make (other power
//! operations, async config, pending, template, snapshot config and delete, agent ping,
//! task log, migration precondition), so tests that look at every answer see every route.

use std::time::Duration;

use pve::Client;
use pve::calls::{
    CloneOptions, ConfigChanges, CreateOptions, RebootOptions, ResetOptions, ResumeOptions,
    ShutdownOptions, SnapshotOptions, StartOptions, StopOptions, SuspendOptions, TaskListFilter,
};

use crate::lifecycle::ScenarioError;

fn fail(step: &'static str) -> impl FnOnce(pve::PveError) -> ScenarioError {
    move |source| ScenarioError::Call {
        step,
        source: Box::new(source),
    }
}

/// Run the tour on `node`, cloning from `template` into `vmid`.
pub async fn tour(
    client: &Client,
    node: &str,
    template: u32,
    vmid: u32,
) -> Result<(), ScenarioError> {
    let t = Duration::from_secs(60);
    let opts = CloneOptions {
        name: Some("tour".into()),
        ..Default::default()
    };
    let upid = client
        .clone_vm(node, template, vmid, &opts)
        .await
        .map_err(fail("clone"))?;
    client
        .wait_task(&upid, t)
        .await
        .map_err(fail("clone task"))?;
    client
        .task_log(&upid, 0, 0)
        .await
        .map_err(fail("task log"))?;
    client
        .node_tasks(node, &TaskListFilter::default())
        .await
        .map_err(fail("task list"))?;

    let changes = ConfigChanges::new().cores(2);
    if let Some(upid) = client
        .update_vm_async(node, vmid, &changes, None)
        .await
        .map_err(fail("config post"))?
    {
        client
            .wait_task(&upid, t)
            .await
            .map_err(fail("config task"))?;
    }
    let upid = client
        .vm_start(node, vmid, &StartOptions::default())
        .await
        .map_err(fail("start"))?;
    client
        .wait_task(&upid, t)
        .await
        .map_err(fail("start task"))?;
    client
        .update_vm(node, vmid, &ConfigChanges::new().memory_mib(1024))
        .await
        .map_err(fail("pending change"))?;
    client
        .vm_pending(node, vmid)
        .await
        .map_err(fail("pending"))?;
    client
        .agent_ping(node, vmid)
        .await
        .map_err(fail("agent ping"))?;
    client
        .migrate_precondition(node, vmid, None)
        .await
        .map_err(fail("migrate precondition"))?;

    let snap = SnapshotOptions {
        vmstate: Some(true),
        description: Some("tour".into()),
    };
    let upid = client
        .create_snapshot(node, vmid, "tour", &snap)
        .await
        .map_err(fail("snapshot"))?;
    client
        .wait_task(&upid, t)
        .await
        .map_err(fail("snapshot task"))?;
    client
        .snapshot_config(node, vmid, "tour")
        .await
        .map_err(fail("snapshot config"))?;
    let upid = client
        .delete_snapshot(node, vmid, "tour", None)
        .await
        .map_err(fail("delsnapshot"))?;
    client
        .wait_task(&upid, t)
        .await
        .map_err(fail("delsnapshot task"))?;

    for (step, upid) in [
        (
            "suspend",
            client
                .vm_suspend(node, vmid, &SuspendOptions::default())
                .await,
        ),
        (
            "resume",
            client
                .vm_resume(node, vmid, &ResumeOptions::default())
                .await,
        ),
        (
            "reset",
            client.vm_reset(node, vmid, &ResetOptions::default()).await,
        ),
        (
            "reboot",
            client
                .vm_reboot(node, vmid, &RebootOptions::default())
                .await,
        ),
        (
            "shutdown",
            client
                .vm_shutdown(node, vmid, &ShutdownOptions::default())
                .await,
        ),
        (
            "stop",
            client.vm_stop(node, vmid, &StopOptions::default()).await,
        ),
    ] {
        let upid = upid.map_err(fail(step))?;
        client.wait_task(&upid, t).await.map_err(fail(step))?;
    }
    let upid = client
        .convert_to_template(node, vmid, None)
        .await
        .map_err(fail("template"))?;
    client
        .wait_task(&upid, t)
        .await
        .map_err(fail("template task"))?;

    // A VM made from scratch, with a new disk on the node's thin pool.
    let disk: pve::props::Disk = "local-lvm:4,discard=on,ssd=1"
        .parse()
        .map_err(fail("disk"))?;
    let net: pve::props::NetDevice = "virtio,bridge=vmbr0".parse().map_err(fail("net"))?;
    let config = ConfigChanges::new()
        .name("scratch")
        .memory_mib(512)
        .disk(pve::props::DiskBus::Scsi, 0, &disk)
        .net(0, &net);
    let upid = client
        .create_vm(node, vmid + 1, &config, &CreateOptions::default())
        .await
        .map_err(fail("create"))?;
    client
        .wait_task(&upid, t)
        .await
        .map_err(fail("create task"))?;
    Ok(())
}
