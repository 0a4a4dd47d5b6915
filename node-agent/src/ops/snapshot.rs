//! Snapshots of a fleet VM: create (with the RAM state only when the VM runs and it is asked
//! for), list, roll back (starting the VM after it when asked and the snapshot has no RAM
//! state, which PVE resumes by itself), delete. Every action answers the list after it,
//! without PVE's `current` pseudo-entry.

use protocol::agent::{CommandFailure, FailureKind, SnapshotAction, SnapshotInfo, SnapshotOp};
use pve::calls::SnapshotOptions;
use pve::types::SnapshotEntry;

use super::VmOps;
use super::failure::{AtStep, Subject};

fn info(e: SnapshotEntry) -> SnapshotInfo {
    SnapshotInfo {
        name: e.name,
        description: e.description,
        parent: e.parent.filter(|p| !p.is_empty()),
        taken_at: e.snaptime.filter(|t| *t > 0),
        vmstate: e.vmstate,
    }
}

impl VmOps {
    async fn snapshot_entries(
        &self,
        s: &Subject<'_>,
    ) -> Result<Vec<SnapshotEntry>, CommandFailure> {
        let all = self
            .client
            .snapshots(&self.node, s.vmid)
            .await
            .at(s, "snapshots")?;
        Ok(all.into_iter().filter(|e| !e.is_current()).collect())
    }

    async fn owned_or_missing(&self, s: &Subject<'_>) -> Result<(), CommandFailure> {
        match self.find_owned(s).await? {
            Some(_) => Ok(()),
            None => Err(s.fail(
                FailureKind::NotFound,
                "lookup",
                format!("no VM {} on node {}", s.vmid, self.node),
            )),
        }
    }

    async fn snapshot_entry(
        &self,
        s: &Subject<'_>,
        name: &str,
        step: &str,
    ) -> Result<SnapshotEntry, CommandFailure> {
        self.snapshot_entries(s)
            .await?
            .into_iter()
            .find(|e| e.name == name)
            .ok_or_else(|| {
                s.fail(
                    FailureKind::Permanent,
                    step,
                    format!("the VM has no snapshot '{name}'"),
                )
            })
    }
}

/// Runs a snapshot action and answers the snapshot list after it.
pub(super) async fn snapshot(
    ops: &VmOps,
    cmd: &SnapshotOp,
) -> Result<Vec<SnapshotInfo>, CommandFailure> {
    let s = Subject {
        name: &cmd.name,
        vmid: cmd.vmid,
    };
    ops.owned_or_missing(&s).await?;
    let long = ops.timeouts.create;
    match &cmd.action {
        SnapshotAction::Create {
            snapshot,
            description,
            vmstate,
        } => {
            let running = ops.is_running(&s).await?;
            let opts = SnapshotOptions {
                vmstate: (*vmstate && running).then_some(true),
                description: Some(description.clone()).filter(|d| !d.is_empty()),
            };
            let upid = ops
                .client
                .create_snapshot(&ops.node, cmd.vmid, snapshot, &opts)
                .await
                .at(&s, "snapshot")?;
            ops.client.wait_task(&upid, long).await.at(&s, "snapshot")?;
        }
        SnapshotAction::List => {}
        SnapshotAction::Rollback { snapshot, start } => {
            let entry = ops.snapshot_entry(&s, snapshot, "rollback").await?;
            // A snapshot with RAM comes back running: that is a start.
            let _permit = if entry.vmstate {
                Some(ops.start_permit(&s, "rollback").await?)
            } else {
                None
            };
            let upid = ops
                .client
                .rollback_snapshot(&ops.node, cmd.vmid, snapshot, None)
                .await
                .at(&s, "rollback")?;
            ops.client.wait_task(&upid, long).await.at(&s, "rollback")?;
            // Started here rather than by PVE's `start` flag, which forks a separate task the
            // answer would not wait for.
            if *start && !entry.vmstate {
                ops.start_if_stopped(&s).await?;
            }
        }
        SnapshotAction::Delete { snapshot } => {
            ops.snapshot_entry(&s, snapshot, "delete-snapshot").await?;
            let upid = ops
                .client
                .delete_snapshot(&ops.node, cmd.vmid, snapshot, None)
                .await
                .at(&s, "delete-snapshot")?;
            ops.client
                .wait_task(&upid, long)
                .await
                .at(&s, "delete-snapshot")?;
        }
    }
    Ok(ops
        .snapshot_entries(&s)
        .await?
        .into_iter()
        .map(info)
        .collect())
}

/// `Some(true)` when the snapshot exists and is complete, `Some(false)` when a snapshot task
/// left it half done, `None` when it does not exist.
pub(super) async fn snapshot_state(
    ops: &VmOps,
    name: &str,
    vmid: u32,
    snapshot: &str,
) -> Result<Option<bool>, CommandFailure> {
    let s = Subject { name, vmid };
    ops.owned_or_missing(&s).await?;
    Ok(ops
        .snapshot_entries(&s)
        .await?
        .into_iter()
        .find(|e| e.name == snapshot)
        .map(|e| !e.is_incomplete()))
}
