//! VM operations on this host through the PVE API: ensure (create or clone, configure, power),
//! delete, power actions and snapshots. Only VMs carrying the fleet's ownership tag are ever
//! changed.

use protocol::agent::{
    CommandFailure, DeleteVm, EnsureVm, FailureKind, PowerOp, SnapshotInfo, SnapshotOp,
    VmObservation,
};

/// Runs VM operations on one PVE node.
#[derive(Debug, Clone)]
pub struct VmOps {
    client: pve::Client,
    node: String,
}

impl VmOps {
    /// Operations on `node` (this host's PVE node name) through `client`.
    pub fn new(client: pve::Client, node: impl Into<String>) -> VmOps {
        VmOps {
            client,
            node: node.into(),
        }
    }

    /// This host's PVE node name.
    pub fn node(&self) -> &str {
        &self.node
    }

    /// The PVE client.
    pub fn client(&self) -> &pve::Client {
        &self.client
    }

    /// Makes the VM exist with the spec's config and power state.
    pub async fn ensure(&self, cmd: &EnsureVm) -> Result<VmObservation, CommandFailure> {
        Err(unbuilt("ensure", &cmd.spec.name))
    }

    /// Stops, destroys and purges the VM; `Ok(false)` when it was already gone.
    pub async fn delete(&self, cmd: &DeleteVm) -> Result<bool, CommandFailure> {
        Err(unbuilt("delete", &cmd.name))
    }

    /// Runs a power action.
    pub async fn power(&self, cmd: &PowerOp) -> Result<VmObservation, CommandFailure> {
        Err(unbuilt("power", &cmd.name))
    }

    /// Runs a snapshot action; answers the snapshots after it.
    pub async fn snapshot(&self, cmd: &SnapshotOp) -> Result<Vec<SnapshotInfo>, CommandFailure> {
        Err(unbuilt("snapshot", &cmd.name))
    }
}

// Skeleton while the operations are being written (replaced before the issue lands).
fn unbuilt(step: &str, vm: &str) -> CommandFailure {
    CommandFailure {
        kind: FailureKind::Permanent,
        step: step.to_string(),
        message: format!("{step} of {vm}: not built yet"),
    }
}
