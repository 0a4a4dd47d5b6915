//! VM operations on this host through the PVE API: ensure (create or clone, configure, power),
//! delete, power actions and snapshots. Only VMs carrying the fleet's ownership tag are ever
//! changed.
//!
//! ```text
//!  ensure: take over (relocation) ─▶ read config ─▶ owned? ─▶ not PVE HA? ─▶ user-data snippet ─▶ desired (pure) ─▶ clone | create
//!            ─▶ plan(desired, config) (pure) ─▶ one PUT with the digest ─▶ resizes
//!            ─▶ pending? restart if allowed ─▶ power state ─▶ guest IPs ─▶ observation
//! ```
//!
//! Decisions are pure ([`desired`], [`plan`], [`notes`], ownership, failure classes); this
//! module and its effect files only read PVE, call the plan's changes and wait for tasks.

mod cloud_init;
pub mod cluster_fs;
mod create;
mod delete;
pub mod desired;
mod ensure;
mod failure;
pub mod hotplug;
mod migrate;
pub mod notes;
mod observe;
mod ownership;
pub mod plan;
mod plan_error;
mod power;
mod pve_ha;
pub mod remote_move;
mod snapshot;
pub mod snippets;
mod take_over;
mod timeouts;
mod vm_ops;

use protocol::agent::{
    CloseTargetOp, CommandFailure, DeleteVm, EnsureVm, MigrateOp, OpenTargetOp, PowerOp,
    RemoteEndpoint, RemoteMigrateOp, SnapshotInfo, SnapshotOp, VmObservation,
};

pub use snippets::{FsSnippetWriter, SnippetError, SnippetWriter};
pub use timeouts::OpTimeouts;
pub use vm_ops::VmOps;

// The operations themselves, each in its effect file; `VmOps` (vm_ops.rs) is what they share.
impl VmOps {
    /// Makes the VM exist with the spec's config and power state.
    pub async fn ensure(&self, cmd: &EnsureVm) -> Result<VmObservation, CommandFailure> {
        ensure::ensure(self, cmd).await
    }

    /// Stops, destroys and purges the VM; `Ok(false)` when it was already gone.
    pub async fn delete(&self, cmd: &DeleteVm) -> Result<bool, CommandFailure> {
        delete::delete(self, cmd).await
    }

    /// Runs a power action.
    pub async fn power(&self, cmd: &PowerOp) -> Result<VmObservation, CommandFailure> {
        power::power(self, cmd).await
    }

    /// Moves the VM to another node of the PVE cluster; answers the node it is on after the
    /// move and whether it runs there.
    pub async fn migrate(&self, cmd: &MigrateOp) -> Result<(String, bool), CommandFailure> {
        migrate::migrate(self, cmd).await
    }

    /// Mints the migration token of a VM arriving here from another PVE cluster.
    pub async fn open_target(&self, cmd: &OpenTargetOp) -> Result<RemoteEndpoint, CommandFailure> {
        remote_move::open_target(self, cmd).await
    }

    /// Deletes that token; answers whether the VM arrived here and runs.
    pub async fn close_target(&self, cmd: &CloseTargetOp) -> Result<(bool, bool), CommandFailure> {
        remote_move::close_target(self, cmd).await
    }

    /// Moves the VM to another PVE cluster; answers the target node and whether it runs.
    pub async fn remote_migrate(
        &self,
        cmd: &RemoteMigrateOp,
    ) -> Result<(String, bool), CommandFailure> {
        remote_move::remote_migrate(self, cmd).await
    }

    /// Runs a snapshot action; answers the snapshots after it.
    pub async fn snapshot(&self, cmd: &SnapshotOp) -> Result<Vec<SnapshotInfo>, CommandFailure> {
        snapshot::snapshot(self, cmd).await
    }

    /// Whether the VM `name` at `vmid` has a complete snapshot `snapshot`: what an agent
    /// checks after a crash during a snapshot create. `None` when the snapshot is absent.
    pub async fn snapshot_state(
        &self,
        name: &str,
        vmid: u32,
        snapshot: &str,
    ) -> Result<Option<bool>, CommandFailure> {
        snapshot::snapshot_state(self, name, vmid, snapshot).await
    }
}
