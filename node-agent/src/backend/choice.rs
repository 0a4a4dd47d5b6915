//! Building the `pve::Client` the config asks for: the local HTTPS API with a token file, `pvesh`
//! as root, or a simulated node in process. The simulated node is named after the host, carries
//! the storages, bridges and templates a fresh PVE install with cloud images would have, and is
//! seeded from the host name so two agents never share MAC addresses or UUIDs.

use std::time::Duration;

use pve::https::{HttpsAuth, HttpsBackend, HttpsConfig, TlsVerify};
use pve::pvesh::{PveshBackend, PveshConfig};
use pve_sim::config::{NodeConfig, StorageConfig, TemplateConfig, TokenConfig};
use pve_sim::{Caller, Sim, SimConfig};
use sha2::{Digest, Sha256};

use super::sim::SimBackend;
use crate::config::{HttpsSettings, PveConfig, PveshSettings, SimSettings};

/// The templates every simulated node starts with: (VMID, name).
pub const SIM_TEMPLATES: [(u32, &str); 2] =
    [(9000, "debian-12-cloud"), (9001, "ubuntu-24.04-cloud")];

/// The PVE client of this host, with what the agent reports about it.
#[derive(Debug, Clone)]
pub struct PveBackend {
    /// The client (cheap to clone; shared by inventory and the executor).
    pub client: pve::Client,
    /// The PVE node name the agent acts on.
    pub node: String,
    /// The backend's name (`https`, `pvesh`, `sim`).
    pub kind: &'static str,
    /// The simulator behind a `sim` backend (for tests and tooling that act behind the API).
    pub sim: Option<Sim>,
}

/// Why the configured backend could not be built.
#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    /// The HTTPS backend refused its settings (unreadable or insecure token file, CA file...).
    #[error("PVE HTTPS backend: {0}")]
    Https(pve::PveError),
    /// The simulator refused the node it was asked to build.
    #[error("simulated PVE node '{node}': {reason}")]
    Sim {
        /// The node name.
        node: String,
        /// The simulator's reason.
        reason: String,
    },
    /// The URL in the settings is unusable.
    #[error("pve.url: {0}")]
    Url(String),
}

/// Builds the client for `config` acting on PVE node `node` (the host name).
pub fn connect(config: &PveConfig, node: &str) -> Result<PveBackend, BackendError> {
    match config {
        PveConfig::Https(https) => connect_https(https, node),
        PveConfig::Pvesh(pvesh) => Ok(connect_pvesh(pvesh, node)),
        PveConfig::Sim(sim) => connect_sim(sim, node),
    }
}

fn connect_https(settings: &HttpsSettings, node: &str) -> Result<PveBackend, BackendError> {
    let (host, port) = settings.host_port().map_err(BackendError::Url)?;
    let tls = match (&settings.ca_file, &settings.fingerprint) {
        (Some(ca), _) => TlsVerify::CaFile(ca.clone()),
        (None, Some(fp)) => TlsVerify::PinnedSha256(fp.clone()),
        (None, None) => TlsVerify::InsecureSkipVerify,
    };
    let auth = HttpsAuth::Token {
        token_file: settings.token_file.clone(),
    };
    let mut https = HttpsConfig::new(host, auth, tls);
    https.port = port;
    let backend = HttpsBackend::new(https).map_err(BackendError::Https)?;
    Ok(PveBackend {
        client: pve::Client::new(backend),
        node: node.to_string(),
        kind: "https",
        sim: None,
    })
}

fn connect_pvesh(settings: &PveshSettings, node: &str) -> PveBackend {
    let backend = PveshBackend::new(PveshConfig {
        program: settings.program.clone(),
        env: Vec::new(),
        timeout: Duration::from_secs(settings.timeout_secs),
    });
    PveBackend {
        client: pve::Client::new(backend),
        node: node.to_string(),
        kind: "pvesh",
        sim: None,
    }
}

fn connect_sim(settings: &SimSettings, node: &str) -> Result<PveBackend, BackendError> {
    let sim = Sim::new(sim_config(settings, node)).map_err(|e| BackendError::Sim {
        node: node.to_string(),
        reason: e.to_string(),
    })?;
    // As `pvesh` would: root@pam, so root-only options behave as on a real host.
    let backend = SimBackend::new(sim.clone(), Caller::root(), node);
    Ok(PveBackend {
        client: pve::Client::new(backend),
        node: node.to_string(),
        kind: "sim",
        sim: Some(sim),
    })
}

/// The single-node cluster a `sim` backend simulates for host `node`.
pub fn sim_config(settings: &SimSettings, node: &str) -> SimConfig {
    let local = |id: &str, kind: &str, content: &[&str], gib: u64| StorageConfig {
        id: id.into(),
        kind: kind.into(),
        content: content.iter().map(|c| (*c).to_string()).collect(),
        shared: false,
        total: gib << 30,
        nodes: Vec::new(),
    };
    let mut storages = vec![
        local(
            "local",
            "dir",
            &["iso", "vztmpl", "backup", "snippets"],
            100,
        ),
        local("local-lvm", "lvmthin", &["images", "rootdir"], 1024),
    ];
    if settings.ceph {
        storages.push(StorageConfig {
            shared: true,
            ..local("ceph", "rbd", &["images", "rootdir"], 4096)
        });
    }
    let templates = SIM_TEMPLATES
        .iter()
        .map(|(vmid, name)| TemplateConfig {
            vmid: *vmid,
            name: (*name).to_string(),
            node: node.to_string(),
            storage: "local-lvm".into(),
            disk_gib: 8,
            memory_mib: 2048,
            agent: true,
        })
        .collect();
    SimConfig {
        cluster_name: format!("sim-{node}"),
        version: SimConfig::default().version,
        nodes: vec![NodeConfig {
            name: node.to_string(),
            cpus: settings.cpus,
            memory: settings.memory_gib << 30,
            bridges: settings.bridges.clone(),
            ip: None,
        }],
        storages,
        templates,
        // Nobody logs in: the agent calls the simulator in process as root.
        tokens: Vec::<TokenConfig>::new(),
        root_password: String::new(),
        time_scale: settings.time_scale,
        agent_ip_delay_secs: settings.agent_ip_delay_secs,
        quirks: false,
        seed: seed_of(node),
    }
}

/// A seed that differs per host name and never changes for one.
fn seed_of(node: &str) -> u64 {
    let digest = Sha256::digest(node.as_bytes());
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(&digest[..8]);
    u64::from_le_bytes(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_simulated_node_is_named_after_the_host_with_its_settings() {
        let settings = SimSettings {
            cpus: 8,
            memory_gib: 32,
            ceph: true,
            ..SimSettings::default()
        };
        let c = sim_config(&settings, "hosta");
        assert_eq!(c.nodes.len(), 1);
        assert_eq!(
            (c.nodes[0].name.as_str(), c.nodes[0].cpus, c.nodes[0].memory),
            ("hosta", 8, 32 << 30)
        );
        let ids: Vec<_> = c.storages.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(ids, ["local", "local-lvm", "ceph"]);
        assert!(c.templates.iter().all(|t| t.node == "hosta"));
        let without = sim_config(&SimSettings::default(), "hosta");
        assert!(without.storages.iter().all(|s| s.id != "ceph"));
    }

    #[test]
    fn hosts_get_different_stable_seeds() {
        assert_eq!(seed_of("hosta"), seed_of("hosta"));
        assert_ne!(seed_of("hosta"), seed_of("hostb"));
    }

    #[test]
    fn a_sim_backend_builds_and_names_its_kind() {
        let b = connect(&PveConfig::Sim(SimSettings::default()), "hosta").unwrap();
        assert_eq!((b.kind, b.node.as_str()), ("sim", "hosta"));
        assert!(b.sim.is_some());
    }
}
