//! A simulated PVE cluster of several nodes served by one `pve-sim serve` process, each node on
//! its own loopback listener (`--per-node-listen 0`): the agents of its hosts each talk to
//! their own node, as on a real cluster, and share what a cluster shares — the cluster file
//! system (a dead node's configs can be moved or unlocked from another node), shared storage,
//! PVE's own HA resources.
//!
//! ```text
//!  agent pve-a ──https──▶ listener pve-a ─┐
//!  agent pve-b ──https──▶ listener pve-b ─┼─▶ one pve-sim process, one cluster model
//!  SimControl ──(any live listener)───────┘
//! ```
//!
//! Every node has `vmbr0` and `vmbr1`, its own `local` (directory, snippets) and `local-lvm`
//! (thin pool), and its own pair of cloud templates with cluster-unique VMIDs (node `i`:
//! `debian-12-cloud` = 9000 + 2i, `ubuntu-24.04-cloud` = 9001 + 2i); with `shared_storage` a
//! `shared` rbd storage for images is visible on all of them.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Duration;

use pve_sim::SimConfig;

use crate::binaries::Binaries;
use crate::error::LabError;
use crate::process::{Stderr, Stopped};
use crate::pve_node::{
    NodeAccess, SimServer, cloud_templates, local_storages, sim_node, sim_storage, write_sim_config,
};
use crate::sim_control::SimControl;

/// The id of the storage shared by every node of a cluster with `shared_storage`.
pub const SHARED_STORAGE: &str = "shared";
/// The VMID of node 0's first template; node `i`'s are `FIRST_TEMPLATE_VMID + 2i` and the next.
pub const FIRST_TEMPLATE_VMID: u32 = 9000;

/// One node of a simulated cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PveNodeOptions {
    /// Its name (the name of the agent's host that runs on it).
    pub name: String,
    /// Logical CPUs.
    pub cpus: u32,
    /// Memory in GiB.
    pub memory_gib: u64,
}

impl PveNodeOptions {
    /// A node named `name` with 16 CPUs and 64 GiB.
    pub fn new(name: impl Into<String>) -> PveNodeOptions {
        PveNodeOptions {
            name: name.into(),
            cpus: 16,
            memory_gib: 64,
        }
    }
}

/// A simulated cluster.
#[derive(Debug, Clone, PartialEq)]
pub struct PveClusterOptions {
    /// The cluster's name (PVE's `cluster_name`, and how the lab and its hosts refer to it).
    pub name: String,
    /// Its nodes, in order (node `i` gets the `i`-th pair of template VMIDs).
    pub nodes: Vec<PveNodeOptions>,
    /// Whether a `shared` storage (rbd, images) is visible on every node, so a guest's disks
    /// survive its node.
    pub shared_storage: bool,
    /// Task duration multiplier (0 = instant, 1 = like real PVE).
    pub time_scale: f64,
    /// Seconds (before scaling) until a started guest reports its addresses.
    pub agent_ip_delay_secs: f64,
}

impl PveClusterOptions {
    /// A cluster `name` of the nodes `nodes` (16 CPUs, 64 GiB each) with shared storage and
    /// instant tasks.
    pub fn new<S: Into<String>>(
        name: impl Into<String>,
        nodes: impl IntoIterator<Item = S>,
    ) -> PveClusterOptions {
        PveClusterOptions {
            name: name.into(),
            nodes: nodes.into_iter().map(PveNodeOptions::new).collect(),
            shared_storage: true,
            time_scale: 0.0,
            agent_ip_delay_secs: 0.0,
        }
    }

    /// The simulator's configuration.
    ///
    /// # Errors
    /// [`LabError::NoSuchPart`] for a cluster without nodes, with a node named twice, or with
    /// more nodes than template VMIDs and documentation addresses allow (200).
    pub fn sim_config(&self) -> Result<SimConfig, LabError> {
        let refuse =
            |why: String| LabError::NoSuchPart(format!("PVE cluster {}: {why}", self.name));
        if self.nodes.is_empty() {
            return Err(refuse("has no nodes".into()));
        }
        let mut seen = BTreeSet::new();
        if let Some(twice) = self.nodes.iter().find(|n| !seen.insert(n.name.as_str())) {
            return Err(refuse(format!("names node {} twice", twice.name)));
        }
        let mut nodes = Vec::new();
        let mut templates = Vec::new();
        for (i, node) in self.nodes.iter().enumerate() {
            let index = u8::try_from(i)
                .ok()
                .filter(|i| *i < 200)
                .ok_or_else(|| refuse(format!("has {} nodes, at most 200", self.nodes.len())))?;
            nodes.push(sim_node(&node.name, node.cpus, node.memory_gib, index));
            let first = FIRST_TEMPLATE_VMID + 2 * u32::from(index);
            templates.extend(cloud_templates(&node.name, first));
        }
        let mut storages = local_storages();
        if self.shared_storage {
            storages.push(sim_storage(
                SHARED_STORAGE,
                "rbd",
                &["images"],
                8 << 40,
                true,
            ));
        }
        Ok(SimConfig {
            cluster_name: self.name.clone(),
            nodes,
            storages,
            templates,
            time_scale: self.time_scale,
            agent_ip_delay_secs: self.agent_ip_delay_secs,
            ..SimConfig::default()
        })
    }
}

/// A running simulated cluster.
#[derive(Debug)]
pub struct PveCluster {
    /// Its name.
    pub name: String,
    /// Every node's own listener, `https://127.0.0.1:PORT` by node name.
    pub nodes: BTreeMap<String, String>,
    /// The simulator process.
    pub server: SimServer,
}

impl PveCluster {
    /// Writes the configuration of `opts` to `config_path` and serves it from `state_dir`,
    /// every node on its own listener; waits for the ready line.
    ///
    /// # Errors
    /// [`LabError`] for a refused configuration, an unwritable file, a simulator that does not
    /// start or does not list every node's listener.
    pub async fn start(
        bins: &Binaries,
        opts: &PveClusterOptions,
        config_path: &Path,
        state_dir: &Path,
        log: &Path,
        stderr: Stderr,
    ) -> Result<PveCluster, LabError> {
        let config = opts.sim_config()?;
        write_sim_config(&config, config_path)?;
        let args = vec![
            "--per-node-listen".to_string(),
            "0".to_string(),
            "--config".to_string(),
            config_path.display().to_string(),
        ];
        let what = format!("pve-sim cluster {}", opts.name);
        let server = SimServer::start(bins, &what, state_dir, &args, log, stderr).await?;
        let nodes: BTreeMap<String, String> = server
            .ready
            .nodes
            .iter()
            .map(|n| (n.node.clone(), format!("https://{}", n.listen)))
            .collect();
        if let Some(missing) = opts.nodes.iter().find(|n| !nodes.contains_key(&n.name)) {
            let name = missing.name.clone();
            server.stop(Duration::from_secs(5)).await;
            return Err(LabError::NotReady {
                what,
                problem: format!("listed no listener of node {name} in its ready line"),
                log: log.to_path_buf(),
                tail: String::new(),
            });
        }
        Ok(PveCluster {
            name: opts.name.clone(),
            nodes,
            server,
        })
    }

    /// `https://127.0.0.1:PORT` of node `node`'s own listener.
    pub fn url(&self, node: &str) -> Option<&str> {
        self.nodes.get(node).map(String::as_str)
    }

    /// How an agent on node `node` reaches it: its own listener, the simulator's credentials.
    pub fn access(&self, node: &str) -> Option<NodeAccess> {
        let url = self.url(node)?;
        let listen = url.strip_prefix("https://").unwrap_or(url);
        Some(NodeAccess::new(&self.server.ready, listen))
    }

    /// A client of the simulator's control endpoints over every node's listener.
    ///
    /// # Errors
    /// [`LabError::SimControl`] if the certificate or token file cannot be read.
    pub fn control(&self) -> Result<SimControl, LabError> {
        let listeners: Vec<(String, String)> = self
            .nodes
            .iter()
            .map(|(node, url)| (node.clone(), url.clone()))
            .collect();
        SimControl::new(
            &listeners,
            &self.server.ready.cert,
            &self.server.ready.token_file,
        )
    }

    /// Its process id.
    pub fn pid(&self) -> Option<u32> {
        self.server.pid()
    }

    /// SIGTERM, then SIGKILL after `grace`.
    pub async fn stop(self, grace: Duration) -> Stopped {
        self.server.stop(grace).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_node_gets_its_local_storages_and_its_own_templates() {
        let mut opts = PveClusterOptions::new("east", ["pve-a", "pve-b", "pve-c"]);
        opts.nodes[1].cpus = 8;
        let config = opts.sim_config().unwrap();
        assert_eq!(config.cluster_name, "east");
        let nodes: Vec<_> = config.nodes.iter().map(|n| n.name.as_str()).collect();
        assert_eq!(nodes, ["pve-a", "pve-b", "pve-c"]);
        assert_eq!(config.nodes[1].cpus, 8);
        assert_eq!(config.nodes[2].ip.as_deref(), Some("192.0.2.12"));
        let storages: Vec<_> = config
            .storages
            .iter()
            .map(|s| (s.id.as_str(), s.kind.as_str(), s.shared, s.nodes.is_empty()))
            .collect();
        assert_eq!(
            storages,
            [
                ("local", "dir", false, true),
                ("local-lvm", "lvmthin", false, true),
                ("shared", "rbd", true, true),
            ]
        );
        let templates: Vec<_> = config
            .templates
            .iter()
            .map(|t| (t.vmid, t.name.as_str(), t.node.as_str()))
            .collect();
        assert_eq!(
            templates,
            [
                (9000, "debian-12-cloud", "pve-a"),
                (9001, "ubuntu-24.04-cloud", "pve-a"),
                (9002, "debian-12-cloud", "pve-b"),
                (9003, "ubuntu-24.04-cloud", "pve-b"),
                (9004, "debian-12-cloud", "pve-c"),
                (9005, "ubuntu-24.04-cloud", "pve-c"),
            ]
        );
        // The simulator accepts it.
        pve_sim::Sim::new(config).unwrap();
    }

    #[test]
    fn a_cluster_without_shared_storage_has_only_local_ones() {
        let mut opts = PveClusterOptions::new("west", ["pve-a"]);
        opts.shared_storage = false;
        let config = opts.sim_config().unwrap();
        assert!(config.storages.iter().all(|s| !s.shared), "{config:?}");
    }

    #[test]
    fn clusters_without_nodes_or_with_a_node_named_twice_are_refused() {
        let e = PveClusterOptions::new("c", Vec::<String>::new())
            .sim_config()
            .unwrap_err()
            .to_string();
        assert!(e.contains("PVE cluster c") && e.contains("no nodes"), "{e}");
        let e = PveClusterOptions::new("c", ["a", "b", "a"])
            .sim_config()
            .unwrap_err()
            .to_string();
        assert!(e.contains("names node a twice"), "{e}");
    }
}
