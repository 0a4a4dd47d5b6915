//! One simulated PVE host outside the agent: a `pve-sim serve` process serving a single node
//! named like the host, with the fleet's two cloud templates, so a test can look at the host
//! (and change it behind the fleet's back) through the real PVE API while its agent runs, dies
//! and restarts.

use std::path::{Path, PathBuf};
use std::time::Duration;

use pve::Client;
use pve::https::{HttpsAuth, HttpsBackend, HttpsConfig, TlsVerify};
use pve_sim::SimConfig;
use pve_sim::config::{NodeConfig, StorageConfig, TemplateConfig};

use crate::sim_process::SimProcess;

/// A `pve-sim serve` process acting as one PVE host.
pub struct PveNode {
    /// The node's name (the agent's host name).
    pub name: String,
    /// The process and its ready line.
    pub sim: SimProcess,
}

/// The simulated node: 16 CPUs, 64 GiB, `vmbr0` and `vmbr1`, a `local` directory storage with
/// snippets and a `local-lvm` thin pool holding `debian-12-cloud` (9000) and
/// `ubuntu-24.04-cloud` (9001).
pub fn node_config(name: &str, time_scale: f64, agent_ip_delay_secs: f64) -> SimConfig {
    let storage = |id: &str, kind: &str, content: &[&str], total: u64| StorageConfig {
        id: id.into(),
        kind: kind.into(),
        content: content.iter().map(|c| c.to_string()).collect(),
        shared: false,
        total,
        nodes: vec![],
    };
    let template = |vmid: u32, tname: &str| TemplateConfig {
        vmid,
        name: tname.into(),
        node: name.into(),
        storage: "local-lvm".into(),
        disk_gib: 8,
        memory_mib: 2048,
        agent: true,
    };
    SimConfig {
        cluster_name: format!("{name}-cluster"),
        nodes: vec![NodeConfig {
            name: name.into(),
            cpus: 16,
            memory: 64 << 30,
            bridges: vec!["vmbr0".into(), "vmbr1".into()],
            ip: Some("192.0.2.10".into()),
        }],
        storages: vec![
            storage(
                "local",
                "dir",
                &["iso", "vztmpl", "backup", "snippets", "images"],
                200 << 30,
            ),
            storage("local-lvm", "lvmthin", &["images", "rootdir"], 2 << 40),
        ],
        templates: vec![
            template(9000, "debian-12-cloud"),
            template(9001, "ubuntu-24.04-cloud"),
        ],
        time_scale,
        agent_ip_delay_secs,
        ..SimConfig::default()
    }
}

impl PveNode {
    /// Writes the node's configuration into `dir` and serves it.
    pub fn start(dir: &Path, name: &str, time_scale: f64, agent_ip_delay_secs: f64) -> PveNode {
        let path = dir.join(format!("pve-sim-{name}.toml"));
        let text = toml::to_string(&node_config(name, time_scale, agent_ip_delay_secs))
            .expect("simulator config serializes");
        std::fs::write(&path, text).expect("write the simulator config");
        let sim = SimProcess::start(&["--config", path.to_str().expect("utf-8 path")]);
        PveNode {
            name: name.to_string(),
            sim,
        }
    }

    /// `https://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("https://{}", self.sim.ready.listen)
    }

    /// The certificate to trust.
    pub fn ca_file(&self) -> &PathBuf {
        &self.sim.ready.cert
    }

    /// A PVE API client for the node (API token, CA file): how a test looks behind the
    /// fleet's back.
    pub fn client(&self) -> Client {
        let mut cfg = HttpsConfig::new(
            self.sim.host(),
            HttpsAuth::Token {
                token_file: self.sim.ready.token_file.clone(),
            },
            TlsVerify::CaFile(self.sim.ready.cert.clone()),
        );
        cfg.port = self.sim.port();
        cfg.timeout = Duration::from_secs(20);
        Client::new(HttpsBackend::new(cfg).expect("https backend"))
    }
}
