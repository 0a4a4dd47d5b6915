//! [`VmOps`]: VM operations on one PVE node, what every operation file works through: the
//! client, the node name, the snippet writer and the timeouts, with the reads and waits they
//! all use. The operations themselves are in their own files (`ops/mod.rs` lists them).

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use protocol::agent::{CommandFailure, FailureKind};
use pve::PveError;
use pve::calls::ConfigView;
use pve::types::VmConfig;

use super::cluster_fs::ClusterFs;
use super::failure::{AtStep, Subject};
use super::ownership::{self, Ownership};
use super::snippets::{FsSnippetWriter, SnippetWriter};
use super::timeouts::OpTimeouts;
use crate::fence::start_gate::{StartGate, StartPermit};
use crate::migration_address::MigrationAddress;

/// Runs VM operations on one PVE node.
#[derive(Debug, Clone)]
pub struct VmOps {
    pub(super) client: pve::Client,
    pub(super) node: String,
    pub(super) snippets: Arc<dyn SnippetWriter>,
    pub(super) timeouts: OpTimeouts,
    /// Closed while the agent fences: no guest starts then (docs/design/fencing-agent.md).
    pub(super) gate: StartGate,
    /// Whether an unreadable PVE HA resource list was warned about (`pve_ha.rs`).
    pub(super) ha_read_warned: Arc<AtomicBool>,
    /// How a relocated VM's configuration is taken over (`take_over.rs`).
    pub(super) cluster_fs: ClusterFs,
    /// Where sources of remote migrations reach this node (`None`: it takes none).
    pub(super) migration_address: Option<MigrationAddress>,
}

impl VmOps {
    /// Operations on `node` (this host's PVE node name) through `client`. User-data snippets
    /// are written into storage directories found in `/etc/pve/storage.cfg` (a real host);
    /// the lab platform sets its own writer with [`VmOps::with_snippets`].
    pub fn new(client: pve::Client, node: impl Into<String>) -> VmOps {
        VmOps {
            client,
            node: node.into(),
            snippets: Arc::new(FsSnippetWriter::default()),
            timeouts: OpTimeouts::default(),
            gate: StartGate::new(),
            ha_read_warned: Arc::new(AtomicBool::new(false)),
            cluster_fs: ClusterFs::Pmxcfs(PathBuf::from("/etc/pve")),
            migration_address: None,
        }
    }

    /// Takes remote migrations, reached by their sources at `address`.
    pub fn with_migration_address(mut self, address: Option<MigrationAddress>) -> VmOps {
        self.migration_address = address;
        self
    }

    /// Takes relocated VMs over through `fs` (the default: pmxcfs at `/etc/pve`).
    pub fn with_cluster_fs(mut self, fs: ClusterFs) -> VmOps {
        self.cluster_fs = fs;
        self
    }

    /// Starts guests only through `gate` (the agent's fencer closes it when the lease runs
    /// out). Without it the gate is always open.
    pub fn with_start_gate(mut self, gate: StartGate) -> VmOps {
        self.gate = gate;
        self
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

    /// The VM's config with pending values applied; `None` when no VM has `vmid` on this node.
    pub(super) async fn read_config(&self, vmid: u32) -> Result<Option<VmConfig>, PveError> {
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
    pub(super) async fn find_owned(
        &self,
        s: &Subject<'_>,
    ) -> Result<Option<VmConfig>, CommandFailure> {
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

    /// A permit to start `s`, held until its start is over; refused while the agent fences.
    pub(super) async fn start_permit(
        &self,
        s: &Subject<'_>,
        step: &str,
    ) -> Result<StartPermit, CommandFailure> {
        self.gate
            .admit()
            .await
            .map_err(|closed| s.fail(FailureKind::Transient, step, closed))
    }

    /// Waits for a task with the ordinary timeout.
    pub(super) async fn wait(&self, upid: &pve::Upid) -> Result<(), PveError> {
        self.client
            .wait_task(upid, self.timeouts.task)
            .await
            .map(|_| ())
    }
}
