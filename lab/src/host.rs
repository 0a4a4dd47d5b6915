//! One host of a lab: the options of its node agent and how it reaches PVE (and, for the VIP
//! testbed, the network namespace it runs in and how it holds VIPs), and the agent's
//! configuration file (`pvefleet-agent run --config FILE`) written from them.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

use crate::error::LabError;
use crate::layout::{host_name, host_zone};
use crate::pve_node::NodeAccess;

/// How an agent reaches its PVE node, a `pve-sim serve` process (its own, or its simulated
/// cluster's) as pveproxy on a host: the agent runs on the `lab` platform and knows nothing
/// else of the simulator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PveAccess {
    /// `[pve] backend = "https"`: the API over HTTPS, API token, CA file.
    Https,
    /// `[pve] backend = "pvesh"`: the `pvesh-sim` shim against a `pve-sim serve` process.
    Pvesh,
}

/// How an agent holds the VIPs granted to its host (`vip_holding` in its configuration).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VipHolding {
    /// The agent's default: only simulated on the `lab` platform.
    Auto,
    /// Always on the host's interfaces: the namespace testbed, simulated PVE and real
    /// addresses.
    Host,
    /// Never on an interface.
    Simulated,
}

impl VipHolding {
    /// Its value in the agent's configuration.
    pub fn as_str(self) -> &'static str {
        match self {
            VipHolding::Auto => "auto",
            VipHolding::Host => "host",
            VipHolding::Simulated => "simulated",
        }
    }
}

/// One host of a lab.
#[derive(Debug, Clone, PartialEq)]
pub struct HostOptions {
    /// The PVE node name.
    pub name: String,
    /// The agent's PVE backend.
    pub access: PveAccess,
    /// Labels placement matches.
    pub labels: BTreeMap<String, String>,
    /// Task duration multiplier of the simulated node (0 = instant, 1 = like real PVE).
    pub time_scale: f64,
    /// Seconds (before scaling) until a started guest reports its addresses.
    pub agent_ip_delay_secs: f64,
    /// The agent's heartbeat period.
    pub heartbeat_ms: u64,
    /// How often the agent collects its inventory; `None`: the agent's default.
    pub inventory_ms: Option<u64>,
    /// Logical CPUs of the simulated node.
    pub cpus: u32,
    /// Its memory in GiB.
    pub memory_gib: u64,
    /// The network namespace its agent runs in (made by the caller, reaching the members);
    /// `None`: the lab's own. Its PVE process listens on the lab's loopback, forwarded into
    /// the namespace ([`crate::loopback_forward`]).
    pub netns: Option<String>,
    /// How its agent holds VIPs; `None`: the agent's default on the `lab` platform, recorded
    /// only (the machine's network is never touched).
    pub vip_holding: Option<VipHolding>,
    /// The agent is a release older than the `platform` key (the rolling-upgrade test's
    /// pinned release): its configuration leaves out `platform`, `vip_holding` and `[fence]`,
    /// which such a release refuses (it neither fences nor holds VIPs). Rewrite the
    /// configuration without it ([`crate::Lab::rewrite_agent_config`]) before starting a newer
    /// agent on the same host.
    pub pre_platform_release: bool,
    /// The simulated PVE cluster ([`crate::Lab::add_pve_cluster`]) whose node named like this
    /// host its agent talks to (https or pvesh backend), instead of a `pve-sim` process of its
    /// own; `None`: a one-node simulator of its own when its backend needs one.
    pub pve_cluster: Option<String>,
    /// The address its agent's QUIC connections leave from (`bind_address` in its
    /// configuration; [`crate::Lab::host_address`] in a partition testbed); `None`: any.
    pub bind_address: Option<IpAddr>,
    /// Privileges the agent's API token lacks on its own simulator ([`PveAccess::Https`]
    /// and [`PveAccess::Pvesh`] outside a simulated cluster): a token as an operator may
    /// have set it up short of one.
    pub withheld_privileges: Vec<String>,
    /// More environment for the agent's process (e.g. libfaketime's, to skew its clock).
    pub agent_env: Vec<(String, String)>,
}

impl HostOptions {
    /// A host named `name` reached through `access`, with instant tasks, a 500 ms beat and an
    /// inventory every second (what tests want: things happen at once).
    pub fn new(name: impl Into<String>, access: PveAccess) -> HostOptions {
        HostOptions {
            name: name.into(),
            access,
            labels: BTreeMap::new(),
            time_scale: 0.0,
            agent_ip_delay_secs: 0.0,
            heartbeat_ms: 500,
            inventory_ms: Some(1000),
            cpus: 16,
            memory_gib: 64,
            netns: None,
            vip_holding: None,
            pre_platform_release: false,
            pve_cluster: None,
            bind_address: None,
            withheld_privileges: Vec::new(),
            agent_env: Vec::new(),
        }
    }

    /// Its agent's API token lacks `privileges` everywhere.
    pub fn withholding(mut self, privileges: &[&str]) -> HostOptions {
        self.withheld_privileges = privileges.iter().map(|p| (*p).to_string()).collect();
        self
    }

    /// Its agent runs with `key=value` in its environment as well.
    pub fn with_agent_env(mut self, key: &str, value: &str) -> HostOptions {
        self.agent_env.push((key.to_string(), value.to_string()));
        self
    }

    /// The `i`-th demo host (`pve-a`, `pve-b`, ..., zones `a` and `b` in turn), its PVE a
    /// `pve-sim` process of its own, with tasks `speed` times faster than real PVE and the guest agent reporting
    /// addresses 8 s (before scaling) after a start, as a cloud image's boot would.
    pub fn demo(i: u32, speed: u32) -> HostOptions {
        let mut host = HostOptions::new(host_name(i), PveAccess::Https).label("zone", host_zone(i));
        host.time_scale = 1.0 / f64::from(speed.max(1));
        host.agent_ip_delay_secs = 8.0;
        host.heartbeat_ms = 1000;
        host.inventory_ms = None;
        host
    }

    /// The same host with tasks taking `time_scale` of their real PVE duration.
    pub fn time_scale(mut self, time_scale: f64) -> HostOptions {
        self.time_scale = time_scale;
        self
    }

    /// The same host with a label.
    pub fn label(mut self, key: &str, value: &str) -> HostOptions {
        self.labels.insert(key.into(), value.into());
        self
    }

    /// The same host with its agent in the network namespace `netns`.
    pub fn in_netns(mut self, netns: impl Into<String>) -> HostOptions {
        self.netns = Some(netns.into());
        self
    }

    /// The same host with its agent holding VIPs as `holding` says.
    pub fn with_vip_holding(mut self, holding: VipHolding) -> HostOptions {
        self.vip_holding = Some(holding);
        self
    }

    /// The same host as node `self.name` of the simulated PVE cluster `cluster`.
    pub fn in_pve_cluster(mut self, cluster: impl Into<String>) -> HostOptions {
        self.pve_cluster = Some(cluster.into());
        self
    }

    /// The same host with its agent dialling from `address`.
    pub fn with_bind_address(mut self, address: IpAddr) -> HostOptions {
        self.bind_address = Some(address);
        self
    }
}

/// An agent's configuration file and the environment its backend needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentFiles {
    /// The configuration file.
    pub config: PathBuf,
    /// Environment variables for `pvefleet-agent run` (the `pvesh` shim's target).
    pub env: Vec<(String, String)>,
}

/// Writes the configuration of the agent of `opts` to `path`: its data directory, host name,
/// beat and inventory periods, labels, how it holds VIPs and the address it dials from (each
/// if said), and the `[pve]` table of its backend (`pve` is how it reaches its simulated node,
/// needed by the https and pvesh backends; `pvesh_program` the shim).
///
/// # Errors
/// [`LabError::Write`], or [`LabError::NoSuchPart`] if the backend needs a PVE process that
/// is missing.
pub fn write_agent_config(
    opts: &HostOptions,
    data_dir: &Path,
    path: &Path,
    pve: Option<&NodeAccess>,
    pvesh_program: Option<&Path>,
) -> Result<AgentFiles, LabError> {
    let int = |n: u64| toml::Value::Integer(i64::try_from(n).unwrap_or(i64::MAX));
    let mut env = Vec::new();
    let mut table = toml::Table::new();
    table.insert("data_dir".into(), data_dir.display().to_string().into());
    table.insert("host_name".into(), opts.name.clone().into());
    table.insert("heartbeat_ms".into(), int(opts.heartbeat_ms));
    if let Some(ms) = opts.inventory_ms {
        table.insert("inventory_ms".into(), int(ms));
    }
    let labels: toml::Table = opts
        .labels
        .iter()
        .map(|(k, v)| (k.clone(), toml::Value::from(v.clone())))
        .collect();
    table.insert("labels".into(), labels.into());
    // The lab platform: the agent resets its node, takes VM configurations over and writes
    // snippets through the simulator's control API, and records VIPs without touching an
    // interface (unless the caller asks for real holding, in a namespace of its own). A
    // release older than the key refuses it, and has neither fencing nor VIP holding.
    if !opts.pre_platform_release {
        table.insert("platform".into(), "lab".into());
        if let Some(holding) = opts.vip_holding {
            table.insert("vip_holding".into(), holding.as_str().into());
        }
    }
    // Only when set: agents older than the key refuse it.
    if let Some(address) = opts.bind_address {
        table.insert("bind_address".into(), address.to_string().into());
    }
    let mut backend = toml::Table::new();
    let missing = || {
        LabError::NoSuchPart(format!(
            "host {}: its {:?} backend needs a PVE process",
            opts.name, opts.access
        ))
    };
    match opts.access {
        PveAccess::Https => {
            let node = pve.ok_or_else(missing)?;
            backend.insert("backend".into(), "https".into());
            backend.insert("url".into(), node.url.clone().into());
            backend.insert(
                "token_file".into(),
                node.token_file.display().to_string().into(),
            );
            backend.insert("ca_file".into(), node.cert.display().to_string().into());
            // Other clusters' simulated nodes reach this one where the agent does (loopback).
            if let Some(addr) = node.url.strip_prefix("https://") {
                backend.insert(
                    "migration_address".into(),
                    addr.trim_end_matches('/').to_string().into(),
                );
            }
        }
        PveAccess::Pvesh => {
            let node = pve.ok_or_else(missing)?;
            let program = pvesh_program.ok_or_else(missing)?;
            backend.insert("backend".into(), "pvesh".into());
            backend.insert("program".into(), program.display().to_string().into());
            backend.insert("timeout_secs".into(), 120.into());
            env.push(("PVESIM_URL".into(), node.url.clone()));
            env.push(("PVESIM_CA".into(), node.cert.display().to_string()));
            env.push((
                "PVESIM_PASSWORD_FILE".into(),
                node.password_file.display().to_string(),
            ));
        }
    }
    table.insert("pve".into(), backend.into());
    let write = |source| LabError::Write {
        path: path.to_path_buf(),
        source,
    };
    let text = toml::to_string(&table).map_err(|e| write(std::io::Error::other(e)))?;
    std::fs::write(path, text).map_err(write)?;
    Ok(AgentFiles {
        config: path.to_path_buf(),
        env: env
            .into_iter()
            .chain(opts.agent_env.iter().cloned())
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn access() -> NodeAccess {
        NodeAccess {
            url: "https://127.0.0.1:40002".into(),
            cert: "/lab/pve/pve-b/cert.pem".into(),
            token_file: "/lab/pve/pve-b/token".into(),
            password_file: "/lab/pve/pve-b/root-password".into(),
        }
    }

    #[test]
    fn the_demo_host_configuration_names_the_host_its_zone_and_the_lab_platform() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("pve-b.toml");
        let data_dir = tmp.path().join("pve-b");
        let files = write_agent_config(
            &HostOptions::demo(1, 10),
            &data_dir,
            &path,
            Some(&access()),
            None,
        )
        .unwrap();
        assert!(files.env.is_empty());
        let back: toml::Table = std::fs::read_to_string(&path).unwrap().parse().unwrap();
        assert_eq!(back["host_name"].as_str(), Some("pve-b"));
        assert_eq!(back["labels"]["zone"].as_str(), Some("b"));
        assert_eq!(back["platform"].as_str(), Some("lab"));
        assert_eq!(back["pve"]["backend"].as_str(), Some("https"));
        assert!(!back.contains_key("inventory_ms"));
        // The lab platform's default (`auto`) only records VIPs: the machine's network is
        // never touched, and nothing is written.
        assert!(!back.contains_key("vip_holding"), "{back:?}");
        assert_eq!(back["data_dir"].as_str(), Some(data_dir.to_str().unwrap()));
        // The platform's defaults fence by simulation only (`reset = "auto"`).
        assert!(!back.contains_key("fence"), "{back:?}");
    }

    #[test]
    fn a_testbed_host_holds_its_vips_on_the_host_with_simulated_pve() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("h1.toml");
        let opts = HostOptions::new("h1", PveAccess::Https)
            .in_netns("pvf-1-0-h1")
            .with_vip_holding(VipHolding::Host);
        write_agent_config(&opts, tmp.path(), &path, Some(&access()), None).unwrap();
        let back: toml::Table = std::fs::read_to_string(&path).unwrap().parse().unwrap();
        assert_eq!(back["vip_holding"].as_str(), Some("host"));
        assert_eq!(back["platform"].as_str(), Some("lab"));
    }

    #[test]
    fn a_release_before_the_platform_key_gets_none_of_the_newer_keys() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("h1.toml");
        let mut opts =
            HostOptions::new("h1", PveAccess::Https).with_vip_holding(VipHolding::Simulated);
        opts.pre_platform_release = true;
        write_agent_config(&opts, tmp.path(), &path, Some(&access()), None).unwrap();
        let back: toml::Table = std::fs::read_to_string(&path).unwrap().parse().unwrap();
        for key in ["platform", "vip_holding", "fence", "bind_address"] {
            assert!(!back.contains_key(key), "{key}: {back:?}");
        }
    }

    #[test]
    fn a_cluster_node_is_reached_at_its_own_listener_from_the_bind_address() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("pve-b.toml");
        let opts = HostOptions::new("pve-b", PveAccess::Https)
            .in_pve_cluster("east")
            .with_bind_address("127.0.1.2".parse().unwrap());
        let access = NodeAccess {
            url: "https://127.0.0.1:40002".into(),
            cert: "/lab/pve/east/cert.pem".into(),
            token_file: "/lab/pve/east/token".into(),
            password_file: "/lab/pve/east/root-password".into(),
        };
        write_agent_config(&opts, tmp.path(), &path, Some(&access), None).unwrap();
        let back: toml::Table = std::fs::read_to_string(&path).unwrap().parse().unwrap();
        assert_eq!(back["bind_address"].as_str(), Some("127.0.1.2"));
        assert_eq!(back["pve"]["backend"].as_str(), Some("https"));
        assert_eq!(back["pve"]["url"].as_str(), Some("https://127.0.0.1:40002"));
        assert_eq!(
            back["pve"]["token_file"].as_str(),
            Some("/lab/pve/east/token")
        );
        assert_eq!(
            back["pve"]["ca_file"].as_str(),
            Some("/lab/pve/east/cert.pem")
        );
        // Without an address the key is left out: older agents refuse keys they do not know.
        write_agent_config(
            &HostOptions::demo(0, 1),
            tmp.path(),
            &path,
            Some(&access),
            None,
        )
        .unwrap();
        let back: toml::Table = std::fs::read_to_string(&path).unwrap().parse().unwrap();
        assert!(!back.contains_key("bind_address"), "{back:?}");
    }

    #[test]
    fn a_backend_that_needs_a_pve_process_refuses_without_one() {
        let tmp = tempfile::tempdir().unwrap();
        let opts = HostOptions::new("h1", PveAccess::Https);
        let e = write_agent_config(&opts, tmp.path(), &tmp.path().join("h1.toml"), None, None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("needs a PVE process"), "{e}");
    }
}
