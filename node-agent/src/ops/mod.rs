//! VM operations on this host through the PVE API: ensure (create or clone, configure, power),
//! delete, power actions and snapshots. Only VMs carrying the fleet's ownership tag are ever
//! changed.
//!
//! ```text
//!  ensure: read config ─▶ owned? ─▶ user-data snippet ─▶ desired (pure) ─▶ clone | create
//!            ─▶ plan(desired, config) (pure) ─▶ one PUT with the digest ─▶ resizes
//!            ─▶ pending? restart if allowed ─▶ power state ─▶ guest IPs ─▶ observation
//! ```
//!
//! Decisions are pure ([`desired`], [`plan`], [`notes`], ownership, failure classes); this
//! module and its effect files only read PVE, call the plan's changes and wait for tasks.

mod cloud_init;
mod create;
mod delete;
pub mod desired;
mod ensure;
mod failure;
pub mod hotplug;
pub mod notes;
mod observe;
mod ownership;
pub mod plan;
mod power;
mod snapshot;
pub mod snippets;

use std::sync::Arc;
use std::time::Duration;

use protocol::agent::{
    CommandFailure, DeleteVm, EnsureVm, FailureKind, PowerOp, SnapshotInfo, SnapshotOp,
    VmObservation,
};
use pve::PveError;
use pve::calls::ConfigView;
use pve::types::VmConfig;

use failure::{AtStep, Subject};
use ownership::Ownership;

pub use snippets::{FsSnippetWriter, SimSnippetWriter, SnippetError, SnippetWriter};

/// How long the agent waits for PVE tasks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpTimeouts {
    /// Clone and create (a full clone copies whole disks).
    pub create: Duration,
    /// Other tasks (start, stop, resize, destroy, snapshots).
    pub task: Duration,
    /// Guest shutdown before a hard stop, when the command gives none (ensure, delete).
    pub shutdown_secs: u32,
}

impl Default for OpTimeouts {
    fn default() -> Self {
        Self {
            create: Duration::from_secs(30 * 60),
            task: Duration::from_secs(10 * 60),
            shutdown_secs: 60,
        }
    }
}

/// Runs VM operations on one PVE node.
#[derive(Debug, Clone)]
pub struct VmOps {
    client: pve::Client,
    node: String,
    snippets: Arc<dyn SnippetWriter>,
    timeouts: OpTimeouts,
}

impl VmOps {
    /// Operations on `node` (this host's PVE node name) through `client`. User-data snippets
    /// are written into storage directories found in `/etc/pve/storage.cfg` (a real host);
    /// simulation mode sets [`SimSnippetWriter`] with [`VmOps::with_snippets`].
    pub fn new(client: pve::Client, node: impl Into<String>) -> VmOps {
        VmOps {
            client,
            node: node.into(),
            snippets: Arc::new(FsSnippetWriter::default()),
            timeouts: OpTimeouts::default(),
        }
    }

    /// Writes user-data snippets with `writer`.
    pub fn with_snippets(mut self, writer: Arc<dyn SnippetWriter>) -> VmOps {
        self.snippets = writer;
        self
    }

    /// Waits for tasks as `timeouts` say.
    pub fn with_timeouts(mut self, timeouts: OpTimeouts) -> VmOps {
        self.timeouts = timeouts;
        self
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

    /// The VM's config with pending values applied; `None` when no VM has `vmid` on this node.
    async fn read_config(&self, vmid: u32) -> Result<Option<VmConfig>, PveError> {
        match self
            .client
            .vm_config(&self.node, vmid, &ConfigView::WithPending)
            .await
        {
            Ok(cfg) => Ok(Some(cfg)),
            Err(e) if e.is_missing_config() => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The config of the fleet VM `s`; `None` when absent, `NotOwned` when someone else's.
    async fn find_owned(&self, s: &Subject<'_>) -> Result<Option<VmConfig>, CommandFailure> {
        let Some(cfg) = self.read_config(s.vmid).await.at(s, "lookup")? else {
            return Ok(None);
        };
        match ownership::ownership(&cfg, s.name) {
            Ownership::Owned => Ok(Some(cfg)),
            Ownership::Foreign(why) => Err(s.fail(
                FailureKind::NotOwned,
                "lookup",
                format!(
                    "VMID {} on node {} holds another VM: {why}",
                    s.vmid, self.node
                ),
            )),
        }
    }

    /// Waits for a task with the ordinary timeout.
    async fn wait(&self, upid: &pve::Upid) -> Result<(), PveError> {
        self.client
            .wait_task(upid, self.timeouts.task)
            .await
            .map(|_| ())
    }
}
