//! Moving a fleet VM to another node of this host's PVE cluster with PVE's own migration
//! (`qmigrate`, the source node's task): live when the guest runs, its local disks copied.
//! Idempotent, so a command re-sent by a new leader (or found in doubt after a restart of the
//! agent) reports where the VM is instead of failing:
//!
//! ```text
//!  GET /cluster/resources ─ VMID on the target ─▶ done (a re-run)
//!       │ here                  │ elsewhere / nowhere ─▶ failure, nothing touched
//!       ▼
//!  owned by the fleet? not under PVE's HA? ─▶ POST .../migrate {target, online, with-local-disks}
//!       ▼
//!  wait for the task ─ failed ─▶ failure with PVE's task log tail (the VM stays here)
//!       ▼
//!  on the target node, running as before
//! ```

use protocol::agent::{CommandFailure, FailureKind, MigrateOp};
use pve::calls::{MigrateOptions, ResourceType};

use super::VmOps;
use super::failure::{AtStep, Subject};

/// Where the VM is after the move, and whether it runs there.
pub(super) async fn migrate(
    ops: &VmOps,
    cmd: &MigrateOp,
) -> Result<(String, bool), CommandFailure> {
    const STEP: &str = "migrate";
    let s = Subject {
        name: &cmd.name,
        vmid: cmd.vmid,
    };
    if cmd.target == ops.node {
        return Err(s.fail(
            FailureKind::Permanent,
            STEP,
            format!("the target {} is this node", cmd.target),
        ));
    }
    let resources = ops
        .client
        .cluster_resources(Some(ResourceType::Vm))
        .await
        .at(&s, "lookup")?;
    let found = resources
        .iter()
        .find(|r| r.is_qemu() && r.vmid == Some(cmd.vmid));
    let node = found.and_then(|r| r.node.as_deref()).unwrap_or_default();
    if node == cmd.target {
        let running = found.is_some_and(|r| r.status.as_deref() == Some("running"));
        return Ok((node.to_string(), running));
    }
    if node != ops.node {
        return Err(s.fail(
            FailureKind::NotFound,
            "lookup",
            if node.is_empty() {
                "the VM is nowhere in the PVE cluster".to_string()
            } else {
                format!(
                    "the VM is on node {node}, neither on this node ({}) nor on the target {}",
                    ops.node, cmd.target
                )
            },
        ));
    }
    ops.find_owned(&s).await?.ok_or_else(|| {
        s.fail(
            FailureKind::NotFound,
            "lookup",
            format!("no VM {} on node {}", cmd.vmid, ops.node),
        )
    })?;
    ops.refuse_pve_ha(&s, STEP).await?;
    let running = ops.is_running(&s).await?;
    let opts = MigrateOptions {
        online: running.then_some(true),
        with_local_disks: Some(true),
        ..MigrateOptions::default()
    };
    let upid = ops
        .client
        .migrate_vm(&ops.node, cmd.vmid, &cmd.target, &opts)
        .await
        .at(&s, STEP)?;
    tracing::info!(vm = s.name, vmid = s.vmid, target = %cmd.target, online = running, "migrating");
    // A migration copies memory and local disks: as long as a full clone may take.
    ops.client
        .wait_task(&upid, ops.timeouts.create)
        .await
        .at(&s, STEP)?;
    Ok((cmd.target.clone(), running))
}
