//! A simulated PVE host outside any agent: a `pve-sim serve` process on a free loopback port
//! with its state in the lab's directory, serving one node named like the host with the
//! fleet's two cloud templates. It outlives its agent, as a real host does, so a test can kill
//! and restart the agent, look at the host through the real PVE API, and change it behind the
//! fleet's back.
//!
//! The configuration helpers here ([`sim_node`], [`local_storages`], [`cloud_templates`]) also
//! build the simulated clusters of [`crate::pve_cluster`].

use std::path::{Path, PathBuf};
use std::time::Duration;

use pve_sim::SimConfig;
use pve_sim::config::{NodeConfig, StorageConfig, TemplateConfig};
use tokio::process::Command;

use crate::binaries::{Binaries, PVE_SIM};
use crate::error::LabError;
use crate::process::{Process, Stderr, Stopped};
use crate::sim_control::SimControl;

/// How long `pve-sim serve` may take to print its ready line.
const READY_WAIT: Duration = Duration::from_secs(60);

/// What `pve-sim serve` prints when it is ready.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
pub struct SimReady {
    /// `127.0.0.1:PORT`.
    pub listen: String,
    /// The node answering on that address.
    pub node: String,
    /// The server certificate (PEM) to trust.
    pub cert: PathBuf,
    /// Its SHA-256 fingerprint, `AA:BB:...`.
    pub fingerprint: String,
    /// The file holding `root@pam!fleet=SECRET` (mode 0600).
    pub token_file: PathBuf,
    /// The file holding the root password (mode 0600).
    pub password_file: PathBuf,
    /// Every node's own listener (`--per-node-listen`); empty without it.
    #[serde(default)]
    pub nodes: Vec<SimNodeListen>,
}

/// One node's own listener of a simulator serving several (`"nodes"` of its ready line).
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
pub struct SimNodeListen {
    /// The node it answers as.
    pub node: String,
    /// `127.0.0.1:PORT`.
    pub listen: String,
}

/// How a client reaches one simulated node: its listener and the simulator's credentials.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeAccess {
    /// `https://127.0.0.1:PORT` of the node's listener.
    pub url: String,
    /// The server certificate (PEM) to trust.
    pub cert: PathBuf,
    /// The file holding `root@pam!fleet=SECRET`.
    pub token_file: PathBuf,
    /// The file holding the root password.
    pub password_file: PathBuf,
}

impl NodeAccess {
    /// The node listening on `listen` of the simulator that printed `ready`.
    pub fn new(ready: &SimReady, listen: &str) -> NodeAccess {
        NodeAccess {
            url: format!("https://{listen}"),
            cert: ready.cert.clone(),
            token_file: ready.token_file.clone(),
            password_file: ready.password_file.clone(),
        }
    }
}

impl SimReady {
    /// `https://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("https://{}", self.listen)
    }

    /// The host part of the listen address.
    pub fn host(&self) -> &str {
        self.listen.rsplit_once(':').map_or("127.0.0.1", |(h, _)| h)
    }

    /// The port of the listen address.
    pub fn port(&self) -> u16 {
        self.listen
            .rsplit_once(':')
            .and_then(|(_, p)| p.parse().ok())
            .unwrap_or(0)
    }
}

/// A running `pve-sim serve` process.
#[derive(Debug)]
pub struct SimServer {
    /// Its ready line.
    pub ready: SimReady,
    process: Process,
}

impl SimServer {
    /// Starts `pve-sim serve --listen 127.0.0.1:0 --state-dir STATE ARGS...` with its log in
    /// `log` and waits for its ready line.
    ///
    /// # Errors
    /// [`LabError`] naming the simulator and its log.
    pub async fn start(
        bins: &Binaries,
        what: &str,
        state_dir: &Path,
        args: &[String],
        log: &Path,
        stderr: Stderr,
    ) -> Result<SimServer, LabError> {
        let mut cmd = Command::new(bins.path(PVE_SIM)?);
        cmd.arg("serve")
            .args(["--listen", "127.0.0.1:0", "--state-dir"])
            .arg(state_dir)
            .args(args);
        let (process, line) = Process::start(what, cmd, log, stderr, READY_WAIT).await?;
        let ready = serde_json::from_str(&line).map_err(|e| LabError::NotReady {
            what: what.to_string(),
            problem: format!("printed {line:?} instead of its JSON ready line ({e})"),
            log: log.to_path_buf(),
            tail: String::new(),
        })?;
        Ok(SimServer { ready, process })
    }

    /// Its process id.
    pub fn pid(&self) -> Option<u32> {
        self.process.pid()
    }

    /// SIGTERM, then SIGKILL after `grace`.
    pub async fn stop(self, grace: Duration) -> Stopped {
        self.process.stop(grace).await
    }
}

/// One simulated PVE host: its name and its simulator process.
#[derive(Debug)]
pub struct PveNode {
    /// The node's name (its agent's host name).
    pub name: String,
    /// The simulator.
    pub server: SimServer,
}

/// The simulated node: `cpus` CPUs, 64 GiB, `vmbr0` and `vmbr1`, a `local` directory storage
/// with snippets and a `local-lvm` thin pool holding `debian-12-cloud` (9000) and
/// `ubuntu-24.04-cloud` (9001).
pub fn node_config(name: &str, cpus: u32, time_scale: f64, agent_ip_delay_secs: f64) -> SimConfig {
    SimConfig {
        cluster_name: format!("{name}-cluster"),
        nodes: vec![sim_node(name, cpus, 64, 0)],
        storages: local_storages(),
        templates: cloud_templates(name, 9000),
        time_scale,
        agent_ip_delay_secs,
        ..SimConfig::default()
    }
}

/// The `i`-th node of a simulated cluster (0 for a one-node one): `cpus` CPUs, `memory_gib`
/// GiB, `vmbr0` and `vmbr1`, and an address it reports (never dialled) from the RFC 5737
/// documentation range, `192.0.2.(10 + i)`.
pub fn sim_node(name: &str, cpus: u32, memory_gib: u64, i: u8) -> NodeConfig {
    NodeConfig {
        name: name.into(),
        cpus,
        memory: memory_gib.saturating_mul(1 << 30),
        bridges: vec!["vmbr0".into(), "vmbr1".into()],
        ip: Some(format!("192.0.2.{}", 10u16 + u16::from(i))),
    }
}

/// A storage of `kind` holding `content`, `total` bytes (per node unless `shared`), on every
/// node.
pub fn sim_storage(
    id: &str,
    kind: &str,
    content: &[&str],
    total: u64,
    shared: bool,
) -> StorageConfig {
    StorageConfig {
        id: id.into(),
        kind: kind.into(),
        content: content.iter().map(|c| (*c).to_string()).collect(),
        shared,
        total,
        nodes: vec![],
    }
}

/// What every simulated node has on its own: a `local` directory storage (ISOs, templates,
/// backups, snippets, images; 200 GiB) and a `local-lvm` thin pool (images; 2 TiB).
pub fn local_storages() -> Vec<StorageConfig> {
    vec![
        sim_storage(
            "local",
            "dir",
            &["iso", "vztmpl", "backup", "snippets", "images"],
            200 << 30,
            false,
        ),
        sim_storage(
            "local-lvm",
            "lvmthin",
            &["images", "rootdir"],
            2 << 40,
            false,
        ),
    ]
}

/// The fleet's two cloud templates on node `node`'s `local-lvm`: `debian-12-cloud` as
/// `first_vmid` and `ubuntu-24.04-cloud` as `first_vmid + 1` (templates are per node in PVE:
/// a cluster gives each node its own pair of VMIDs).
pub fn cloud_templates(node: &str, first_vmid: u32) -> Vec<TemplateConfig> {
    let template = |vmid: u32, name: &str| TemplateConfig {
        vmid,
        name: name.into(),
        node: node.into(),
        storage: "local-lvm".into(),
        disk_gib: 8,
        memory_mib: 2048,
        agent: true,
    };
    vec![
        template(first_vmid, "debian-12-cloud"),
        template(first_vmid.saturating_add(1), "ubuntu-24.04-cloud"),
    ]
}

impl PveNode {
    /// Writes `config` to `config_path` and serves it from `state_dir`.
    ///
    /// # Errors
    /// [`LabError`] if the file cannot be written or the simulator does not start.
    pub async fn start(
        bins: &Binaries,
        name: &str,
        config: &SimConfig,
        config_path: &Path,
        state_dir: &Path,
        log: &Path,
        stderr: Stderr,
    ) -> Result<PveNode, LabError> {
        write_sim_config(config, config_path)?;
        let args = vec!["--config".to_string(), config_path.display().to_string()];
        let what = format!("pve-sim {name}");
        let server = SimServer::start(bins, &what, state_dir, &args, log, stderr).await?;
        Ok(PveNode {
            name: name.to_string(),
            server,
        })
    }

    /// `https://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        self.server.ready.url()
    }

    /// The certificate to trust.
    pub fn ca_file(&self) -> &Path {
        &self.server.ready.cert
    }

    /// How an agent or a test reaches the node.
    pub fn access(&self) -> NodeAccess {
        NodeAccess::new(&self.server.ready, &self.server.ready.listen)
    }

    /// A client of the simulator's control endpoints (`/_sim/...`) and its cluster view.
    ///
    /// # Errors
    /// [`LabError::SimControl`] if the certificate or token file cannot be read.
    pub fn control(&self) -> Result<SimControl, LabError> {
        SimControl::new(
            &[(self.name.clone(), self.url())],
            &self.server.ready.cert,
            &self.server.ready.token_file,
        )
    }
}

/// Writes `config` as the TOML `pve-sim serve --config` reads.
///
/// # Errors
/// [`LabError::Write`].
pub(crate) fn write_sim_config(config: &SimConfig, path: &Path) -> Result<(), LabError> {
    let write = |source| LabError::Write {
        path: path.to_path_buf(),
        source,
    };
    let text = toml::to_string(config).map_err(|e| write(std::io::Error::other(e)))?;
    std::fs::write(path, text).map_err(write)
}
