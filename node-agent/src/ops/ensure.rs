//! Ensure: make the VM at the allocated VMID the fleet VM the spec describes. Level-based and
//! idempotent, so a re-run after a crash or a periodic resync is safe: it reads the VM, creates
//! it only when absent, changes only what differs (one config update guarded by the digest,
//! then disk resizes), restarts for pending changes only when the spec allows, and sets the
//! power state last. A VM PVE's own HA manager drives is refused before anything changes. A
//! relocation first takes the VM's configuration over from the fenced node (`take_over.rs`).

use std::time::Duration;

use protocol::agent::{CommandFailure, EnsureVm, FailureKind, VmObservation};
use protocol::spec::{DesiredState, RestartPolicy};
use pve::calls::ResizeOptions;
use pve::calls::task_list::{TaskListFilter, TaskSource};
use pve::props::{DiskSlot, SizeChange};
use pve::types::VmConfig;

use super::VmOps;
use super::desired::desired_vm;
use super::failure::{AtStep, Subject};
use super::observe::observe;
use super::ownership::{Ownership, ownership};
use super::plan::{ConfigPlan, plan};

/// Locks PVE holds while a VM is still being made: its config is a placeholder.
const CREATING_LOCKS: &[&str] = &["clone", "create"];

/// Ensures the VM; see the module documentation.
pub(super) async fn ensure(ops: &VmOps, cmd: &EnsureVm) -> Result<VmObservation, CommandFailure> {
    let s = Subject {
        name: &cmd.spec.name,
        vmid: cmd.vmid,
    };
    // Before anything changes (a take-over, the snippet, a create, the config): not a guest
    // of PVE's HA.
    ops.refuse_pve_ha(&s, "lookup").await?;
    if let Some(t) = &cmd.take_over {
        super::take_over::take_over(ops, &s, t).await?;
    }
    let found = ops.read_config(cmd.vmid).await.at(&s, "lookup")?;
    let want_running = cmd.spec.state == DesiredState::Running;
    if let Some(cfg) = &found {
        check_existing(ops, &s, cfg, want_running).await?;
    }
    let snippet = ops.write_user_data(cmd, &s).await?;
    let desired =
        desired_vm(cmd, snippet).map_err(|e| s.fail(FailureKind::Permanent, "configure", e))?;
    let cfg = match found {
        Some(cfg) => cfg,
        None => {
            ops.create(cmd, &desired, &s).await?;
            ops.read_config(cmd.vmid)
                .await
                .at(&s, "lookup")?
                .ok_or_else(|| {
                    s.fail(
                        FailureKind::Transient,
                        "lookup",
                        "the VM vanished right after it was created",
                    )
                })?
        }
    };
    let running = ops.is_running(&s).await?;
    let changes = plan(&desired, &cfg, running)
        .map_err(|e| s.fail(FailureKind::Permanent, "configure", e))?;
    apply(ops, &s, &cfg, &changes).await?;

    if running && want_running && cmd.spec.restart == RestartPolicy::Allowed {
        let pending = ops
            .client
            .vm_pending(&ops.node, cmd.vmid)
            .await
            .at(&s, "restart")?;
        let keys: Vec<&str> = pending
            .iter()
            .filter(|p| p.has_pending_change())
            .map(|p| p.key.as_str())
            .collect();
        if !keys.is_empty() {
            tracing::info!(
                vm = s.name,
                vmid = s.vmid,
                ?keys,
                "restarting to apply pending changes"
            );
            ops.restart(&s, ops.timeouts.shutdown_secs).await?;
        }
    }
    if want_running {
        ops.start_if_stopped(&s).await?;
    } else {
        ops.shut_down(&s, ops.timeouts.shutdown_secs).await?;
    }
    let ip_wait = if cmd.spec.agent {
        Duration::from_secs(u64::from(cmd.ip_wait_secs))
    } else {
        Duration::ZERO
    };
    observe(ops, &s, cmd.generation, ip_wait).await
}

/// A VM already at the VMID: still being created (retry later), left half-made (a creating
/// lock no task holds), ours, or someone else's.
async fn check_existing(
    ops: &VmOps,
    s: &Subject<'_>,
    cfg: &VmConfig,
    want_running: bool,
) -> Result<(), CommandFailure> {
    if let Some(lock) = cfg.lock().filter(|l| CREATING_LOCKS.contains(&l.as_str())) {
        let active = TaskListFilter {
            source: Some(TaskSource::Active),
            vmid: Some(s.vmid),
            ..TaskListFilter::default()
        };
        let (running, _) = ops
            .client
            .node_tasks(&ops.node, &active)
            .await
            .at(s, "lookup")?;
        if !running.is_empty() {
            return Err(s.fail(
                FailureKind::Transient,
                "lookup",
                format!("VM is locked ({lock}): a create or clone is still running; try again"),
            ));
        }
        // Left by a create or clone that did not finish: PVE refuses to start it ("VM is
        // locked"), and its HA counts that as a failed start (max_restart, max_relocate,
        // then error). So does the fleet: the failure is the start's when it is to run.
        return Err(s.fail(
            FailureKind::Permanent,
            if want_running { "start" } else { "lookup" },
            format!(
                "VM is locked ({lock}) and no task on node {} is making it: a create or clone \
                 did not finish and may have left it half-made; check it, then clear the lock \
                 (qm unlock {})",
                ops.node, s.vmid
            ),
        ));
    }
    match ownership(cfg, s.name) {
        Ownership::Owned => Ok(()),
        Ownership::Foreign(why) => Err(s.fail(
            FailureKind::NotOwned,
            "lookup",
            format!(
                "VMID {} on node {} holds another VM, left untouched: {why}",
                s.vmid, ops.node
            ),
        )),
    }
}

/// Applies a plan: one config update guarded by the digest read, then the disk resizes.
async fn apply(
    ops: &VmOps,
    s: &Subject<'_>,
    cfg: &VmConfig,
    changes: &ConfigPlan,
) -> Result<(), CommandFailure> {
    if changes.has_config_changes() {
        tracing::info!(
            vm = s.name,
            vmid = s.vmid,
            set = ?changes.set.keys().collect::<Vec<_>>(),
            delete = ?changes.delete,
            pending = ?changes.needs_restart,
            "updating VM config"
        );
        let update = changes.update(cfg.digest().as_deref());
        ops.client
            .update_vm(&ops.node, s.vmid, &update)
            .await
            .at(s, "configure")?;
    }
    for r in &changes.resizes {
        let slot: DiskSlot = r.slot.parse().at(s, "resize")?;
        tracing::info!(vm = s.name, vmid = s.vmid, slot = %r.slot, from = r.from_bytes, to = r.to_bytes, "growing disk");
        let upid = ops
            .client
            .resize_disk(
                &ops.node,
                s.vmid,
                slot,
                SizeChange::Set(r.to_bytes),
                &ResizeOptions::default(),
            )
            .await
            .at(s, "resize")?;
        ops.wait(&upid).await.at(s, "resize")?;
    }
    Ok(())
}
