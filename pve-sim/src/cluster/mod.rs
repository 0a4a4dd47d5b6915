//! The cluster model: nodes, storages, volumes, VMs with their raw config text, and worker
//! tasks, behaving as PVE does behind its API.
//!
//! ```text
//!  edge (validated Route + Params + Caller)
//!      │
//!      ▼
//!  Cluster::dispatch ──▶ reads (status, lists)            ─┐
//!                   ├─▶ sync checks ──▶ Inner::start_task  │ all under one State lock
//!                   │                      │ begin → (scaled time) → finish / abort
//!                   │                      ▼               │
//!                   └─▶ config updates   tasks (UPID, log) ┘
//! ```
//!
//! Sync errors come back as [`ApiError`]s; errors PVE raises inside the worker end the task
//! with `TASK ERROR: <msg>` instead, exactly as NOTES §7 lists them.

mod agent;
mod bootstrap;
mod clock;
mod config;
mod drive;
mod ha_resources;
mod ids;
mod inner;
mod mtunnel;
mod network;
mod node_power;
mod ops;
mod power;
mod reads;
mod remote_migration;
mod request;
mod resources;
mod state;
mod storage_reads;
mod tasks;
mod vm;
mod vm_status;
mod volumes;

#[cfg(test)]
mod tests;

use std::sync::{Arc, Mutex};

use crate::certificate::CertificateInfo;
use crate::faults::Faults;
use crate::ha::{HaError, HaResource};
use crate::node_power::NodePowerAction;
use crate::{ApiError, Params, Reply, Route, SimConfig, SimError};
use inner::Inner;

pub(crate) use request::Request;

/// The default limit on each request a remote migration sends to the target cluster: a dead
/// target fails the task instead of hanging it.
const REMOTE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// The simulated cluster; cheap to clone (shared state).
#[derive(Clone)]
pub(crate) struct Cluster {
    inner: Arc<Inner>,
}

impl Cluster {
    /// Build the cluster a config describes.
    pub(crate) fn new(config: &SimConfig, faults: Arc<Faults>) -> Result<Self, SimError> {
        if !(config.time_scale >= 0.0 && config.time_scale.is_finite()) {
            return Err(SimError::Config(format!(
                "time_scale must be >= 0, got {}",
                config.time_scale
            )));
        }
        let state = bootstrap::initial_state(config)?;
        Ok(Self {
            inner: Arc::new(Inner {
                state: Mutex::new(state),
                jobs: Mutex::default(),
                faults,
                time_scale: config.time_scale,
                agent_ip_delay: config.agent_ip_delay_secs.max(0.0),
                quirks: config.quirks,
                version: config.version.clone(),
                cluster_name: config.cluster_name.clone(),
                tunnel_key: rand::random(),
                remote_timeout: Mutex::new(REMOTE_TIMEOUT),
            }),
        })
    }

    /// Handle one API call (every route but `POST /access/ticket` and the `/access` methods,
    /// which are the edge's and the access model's).
    pub(crate) async fn dispatch(
        &self,
        route: Route,
        p: &Params,
        req: &Request<'_>,
    ) -> Result<Reply, ApiError> {
        let cx = &self.inner;
        let caller = req.caller;
        match route {
            Route::AccessTicket
            | Route::AccessPermissions
            | Route::UserCreate
            | Route::TokenCreate
            | Route::TokenDelete
            | Route::RoleCreate
            | Route::RoleUpdate
            | Route::AclUpdate => Err(ApiError::status(
                501,
                format!(
                    "Method '{} {}' not implemented",
                    route.method().as_str(),
                    route.template()
                ),
            )),
            Route::Version => Ok(reads::version(cx)),
            Route::ClusterResources => resources::cluster_resources(cx, p),
            Route::ClusterStatus => Ok(reads::cluster_status(cx, req.local_node)),
            Route::ClusterNextid => reads::nextid(cx, p),
            Route::ClusterTasks => Ok(tasks::api::cluster_tasks(cx)),
            Route::HaResourceList => Ok(ha_resources::list(cx, p)),
            Route::HaResourceRead => ha_resources::read(cx, p),
            Route::Nodes => Ok(reads::nodes(cx)),
            Route::NodeStatus => reads::node_status(cx, p),
            Route::NodeCertificates => reads::certificates(cx, p),
            Route::VmList => vm_status::list(cx, p),
            Route::VmCreate => ops::create::create(cx, p, caller),
            Route::VmDestroy => ops::destroy::destroy(cx, p, caller),
            Route::VmConfigGet => config::read::config(cx, p),
            Route::VmConfigPost => ops::config::post(cx, p, caller).await,
            Route::VmConfigPut => ops::config::put(cx, p, caller),
            Route::VmPending => config::read::pending(cx, p),
            Route::VmStatusCurrent => vm_status::current(cx, p),
            Route::VmStart => ops::power::start(cx, p, caller),
            Route::VmStop => ops::power::stop(cx, p, caller),
            Route::VmShutdown => ops::power::shutdown(cx, p, caller),
            Route::VmReboot => ops::power::reboot(cx, p, caller),
            Route::VmReset => ops::power::reset(cx, p, caller),
            Route::VmSuspend => ops::power::suspend(cx, p, caller),
            Route::VmResume => ops::power::resume(cx, p, caller),
            Route::VmClone => ops::clone::clone_vm(cx, p, caller),
            Route::VmResize => ops::resize::resize(cx, p, caller),
            Route::VmTemplate => ops::template::template(cx, p, caller),
            Route::VmMigrateCheck => ops::migrate::precondition(cx, p),
            Route::VmMigrate => ops::migrate::migrate(cx, p, caller),
            Route::VmRemoteMigrate => ops::remote_migrate::remote_migrate(cx, p, caller).await,
            Route::VmMtunnel => mtunnel::endpoint::open(cx, p, req),
            Route::SnapshotList => ops::snapshot::list(cx, p),
            Route::SnapshotCreate => ops::snapshot::create(cx, p, caller),
            Route::SnapshotDelete => ops::snapshot::delete(cx, p, caller),
            Route::SnapshotConfig => config::read::snapshot_config(cx, p),
            Route::SnapshotRollback => ops::snapshot::rollback(cx, p, caller),
            Route::AgentNetwork => agent::network_get_interfaces(cx, p).await,
            Route::AgentPing => agent::ping(cx, p).await,
            Route::NodeTasks => tasks::api::node_tasks(cx, p),
            Route::TaskStop => tasks::api::stop(cx, p),
            Route::TaskStatus => tasks::api::status(cx, p),
            Route::TaskLog => tasks::api::log(cx, p),
            Route::StorageList => storage_reads::list(cx, p),
            Route::StorageStatus => storage_reads::status(cx, p),
            Route::StorageContent => storage_reads::content(cx, p),
            Route::NetworkList => network::list(cx, p),
        }
    }

    /// Node names in config order.
    pub(crate) fn node_names(&self) -> Vec<String> {
        self.inner
            .state()
            .nodes
            .iter()
            .map(|n| n.name.clone())
            .collect()
    }

    /// Whether `node` is a cluster member.
    pub(crate) fn has_node(&self, node: &str) -> bool {
        self.inner.state().node(node).is_some()
    }

    /// The raw `/etc/pve/qemu-server/<vmid>.conf` text.
    pub(crate) fn vm_config_text(&self, vmid: u32) -> Option<String> {
        self.inner.state().vms.get(&vmid).map(|vm| vm.conf.render())
    }

    /// The node holding the VM's config.
    pub(crate) fn vm_node(&self, vmid: u32) -> Option<String> {
        self.inner.state().vms.get(&vmid).map(|vm| vm.node.clone())
    }

    /// Whether the VM's QEMU process runs.
    pub(crate) fn vm_running(&self, vmid: u32) -> Option<bool> {
        self.inner.state().vms.get(&vmid).map(|vm| vm.run.running)
    }

    /// Start or stop a VM "behind the fleet's back" (no task, no checks, pending kept);
    /// `false` if there is no such VM.
    pub(crate) fn set_vm_running(&self, vmid: u32, running: bool) -> bool {
        let mut st = self.inner.state();
        let Some(node) = st.vms.get(&vmid).map(|vm| vm.node.clone()) else {
            return false;
        };
        if running {
            power::mark_running(&mut st, &node, vmid);
        } else {
            power::mark_stopped(&mut st, vmid);
        }
        true
    }

    /// Power `node` off, on or through a reset; the VMs that stopped.
    pub(crate) fn power_node(
        &self,
        node: &str,
        action: NodePowerAction,
    ) -> Result<Vec<u32>, ApiError> {
        node_power::power(&self.inner, node, action)
    }

    /// Move a stopped VM's config from `from`'s directory to `to`'s (HA recovery).
    pub(crate) fn move_vm_config(&self, vmid: u32, from: &str, to: &str) -> Result<(), ApiError> {
        config::relocate::move_config(&self.inner, vmid, from, to)
    }

    /// Set or clear a VM's `lock:` line behind the API (a backup or migration cut short).
    pub(crate) fn set_vm_lock(&self, vmid: u32, lock: Option<&str>) -> Result<(), ApiError> {
        config::lock::set_lock(&self.inner, vmid, lock)
    }

    /// Remove the `lock:` line of the config in `node`'s directory, whatever the node's power
    /// state; the value it had.
    pub(crate) fn clear_vm_lock(&self, vmid: u32, node: &str) -> Result<Option<String>, ApiError> {
        config::lock::clear_lock(&self.inner, vmid, node)
    }

    /// Replace PVE's HA resources; the stored configuration.
    pub(crate) fn set_ha_resources(
        &self,
        list: Vec<HaResource>,
    ) -> Result<Vec<HaResource>, HaError> {
        ha_resources::set(&self.inner, list)
    }

    /// PVE's HA resources, in sid order.
    pub(crate) fn ha_resources(&self) -> Vec<HaResource> {
        ha_resources::get(&self.inner)
    }

    /// Record the certificate `node`'s listener serves (`/nodes` reports its fingerprint as
    /// `ssl_fingerprint`, which clients may pin; `certificates/info` the rest).
    pub(crate) fn set_node_certificate(&self, node: &str, info: &CertificateInfo) {
        let mut st = self.inner.state();
        if let Some(n) = st.nodes.iter_mut().find(|n| n.name == node) {
            n.ssl_fingerprint = Some(info.fingerprint.clone());
            n.certificate = Some(info.clone());
        }
    }

    /// One command of an open migration tunnel (`mtunnel`), as `Sim::tunnel_command`.
    pub(crate) fn tunnel_command(
        &self,
        req: &Request<'_>,
        vmid: u32,
        ticket: &str,
        socket: &str,
        command: &serde_json::Value,
    ) -> Result<serde_json::Value, ApiError> {
        mtunnel::commands::handle(&self.inner, req, vmid, ticket, socket, command)
    }

    /// How long each request of a remote migration to the target cluster may take.
    pub(crate) fn set_remote_timeout(&self, limit: std::time::Duration) {
        *self
            .inner
            .remote_timeout
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = limit;
    }

    /// Store a snippet file on `storage` (which must hold `snippets` and exist on `node`),
    /// returning its volid `storage:snippets/<filename>`.
    pub(crate) fn write_snippet(
        &self,
        node: &str,
        storage: &str,
        filename: &str,
        content: &str,
    ) -> Result<String, ApiError> {
        let mut st = self.inner.state();
        if st.node(node).is_none() {
            return Err(ApiError::internal(format!("no such cluster node '{node}'")));
        }
        let scfg = st
            .storages
            .check_enabled(storage, node)
            .map_err(ApiError::internal)?;
        if !scfg.content.contains("snippets") {
            return Err(ApiError::internal(format!(
                "storage '{storage}' does not support content type 'snippets'"
            )));
        }
        if filename.is_empty() || filename.contains('/') || filename.starts_with('.') {
            return Err(ApiError::param(
                "filename",
                format!("invalid filename '{filename}'"),
            ));
        }
        Ok(st
            .storages
            .put_snippet(storage, node, filename, content, clock::now_unix()))
    }
}
