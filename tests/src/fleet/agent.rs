//! One node agent as a real `pvefleet-agent` process: joined with a token, configured for one
//! of its PVE backends, started, SIGKILLed and restarted. With the HTTPS and `pvesh` backends
//! its PVE host is a `pve-sim serve` process that outlives the agent, as a real host does.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::pve_node::PveNode;
use crate::sim_process::{ready_line, workspace_binary};

/// How the agent reaches its PVE node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PveAccess {
    /// `[pve] backend = "sim"`: a simulated node inside the agent process.
    Sim,
    /// `[pve] backend = "https"`: a `pve-sim serve` process, API token, CA file.
    Https,
    /// `[pve] backend = "pvesh"`: the `pvesh-sim` shim against a `pve-sim serve` process.
    Pvesh,
}

/// One host of a test fleet.
#[derive(Debug, Clone, PartialEq)]
pub struct HostOptions {
    /// The PVE node name.
    pub name: String,
    /// The agent's PVE backend.
    pub access: PveAccess,
    /// Labels placement matches.
    pub labels: BTreeMap<String, String>,
    /// Task duration multiplier of the simulated node (0 = instant).
    pub time_scale: f64,
    /// Seconds (before scaling) until a started guest reports its addresses.
    pub agent_ip_delay_secs: f64,
    /// The agent's heartbeat period.
    pub heartbeat_ms: u64,
    /// How often the agent collects its inventory (drift shows up at the next collection).
    pub inventory_ms: u64,
    /// Logical CPUs of a simulated node (`sim` backend; at the default 400 % CPU
    /// overcommit, four 1-vCPU VMs per CPU).
    pub cpus: u32,
}

impl HostOptions {
    /// A host named `name` reached through `access`, with instant tasks, a 500 ms beat and an
    /// inventory every second.
    pub fn new(name: impl Into<String>, access: PveAccess) -> HostOptions {
        HostOptions {
            name: name.into(),
            access,
            labels: BTreeMap::new(),
            time_scale: 0.0,
            agent_ip_delay_secs: 0.0,
            heartbeat_ms: 500,
            inventory_ms: 1000,
            cpus: 16,
        }
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
}

/// A `pvefleet-agent` process and what it needs to run again.
pub struct AgentProcess {
    /// The host's name.
    pub name: String,
    /// The agent's node id (from its ready line).
    pub node_id: u64,
    /// Its data directory.
    pub data_dir: PathBuf,
    /// Its configuration file.
    pub config: PathBuf,
    /// Its PVE host when that is a separate process (HTTPS and `pvesh` backends).
    pub pve: Option<PveNode>,
    env: Vec<(String, String)>,
    child: Option<Child>,
}

/// The agent's configuration file for `opts` (and the environment its backend needs).
fn write_config(
    opts: &HostOptions,
    data_dir: &Path,
    path: &Path,
    pve: Option<&PveNode>,
) -> Vec<(String, String)> {
    let mut env = Vec::new();
    let mut table = toml::Table::new();
    table.insert("data_dir".into(), data_dir.display().to_string().into());
    table.insert("host_name".into(), opts.name.clone().into());
    table.insert(
        "heartbeat_ms".into(),
        i64::try_from(opts.heartbeat_ms).expect("heartbeat").into(),
    );
    table.insert(
        "inventory_ms".into(),
        i64::try_from(opts.inventory_ms).expect("inventory").into(),
    );
    let labels: toml::Table = opts
        .labels
        .iter()
        .map(|(k, v)| (k.clone(), toml::Value::from(v.clone())))
        .collect();
    table.insert("labels".into(), labels.into());
    let mut backend = toml::Table::new();
    match (opts.access, pve) {
        (PveAccess::Sim, _) => {
            backend.insert("backend".into(), "sim".into());
            backend.insert("cpus".into(), i64::from(opts.cpus).into());
            backend.insert("memory_gib".into(), 64.into());
            backend.insert("time_scale".into(), opts.time_scale.into());
            backend.insert(
                "agent_ip_delay_secs".into(),
                opts.agent_ip_delay_secs.into(),
            );
        }
        (PveAccess::Https, Some(node)) => {
            backend.insert("backend".into(), "https".into());
            backend.insert("url".into(), node.url().into());
            backend.insert(
                "token_file".into(),
                node.sim.ready.token_file.display().to_string().into(),
            );
            backend.insert(
                "ca_file".into(),
                node.ca_file().display().to_string().into(),
            );
        }
        (PveAccess::Pvesh, Some(node)) => {
            backend.insert("backend".into(), "pvesh".into());
            backend.insert(
                "program".into(),
                workspace_binary("pvesh-sim").display().to_string().into(),
            );
            backend.insert("timeout_secs".into(), 120.into());
            env.push(("PVESIM_URL".into(), node.url()));
            env.push(("PVESIM_CA".into(), node.ca_file().display().to_string()));
            env.push((
                "PVESIM_PASSWORD_FILE".into(),
                node.sim.ready.password_file.display().to_string(),
            ));
        }
        (access, None) => panic!("{access:?} needs a PVE node process"),
    }
    table.insert("pve".into(), backend.into());
    std::fs::write(
        path,
        toml::to_string(&table).expect("agent config serializes"),
    )
    .expect("write the agent config");
    env
}

impl AgentProcess {
    /// Joins an agent for `opts` with `token` through `via` (a coordinator address), starting
    /// its PVE host process first when its backend needs one; the agent is not started.
    pub fn join(root: &Path, opts: &HostOptions, token: &str, via: &str) -> AgentProcess {
        let pve = match opts.access {
            PveAccess::Sim => None,
            PveAccess::Https | PveAccess::Pvesh => Some(PveNode::start(
                root,
                &opts.name,
                opts.time_scale,
                opts.agent_ip_delay_secs,
            )),
        };
        let data_dir = root.join(format!("agent-{}", opts.name));
        let out = Command::new(workspace_binary("pvefleet-agent"))
            .args(["join", token, via, "--data-dir"])
            .arg(&data_dir)
            .output()
            .expect("pvefleet-agent join runs");
        assert!(
            out.status.success(),
            "pvefleet-agent join for {} failed ({}):\n{}\n{}",
            opts.name,
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let config = root.join(format!("agent-{}.toml", opts.name));
        let env = write_config(opts, &data_dir, &config, pve.as_ref());
        AgentProcess {
            name: opts.name.clone(),
            node_id: 0,
            data_dir,
            config,
            pve,
            env,
            child: None,
        }
    }

    /// Starts `run` and waits for its ready line (it is connected to a coordinator).
    pub fn start(&mut self) {
        assert!(self.child.is_none(), "agent {} already running", self.name);
        let mut child = Command::new(workspace_binary("pvefleet-agent"))
            .arg("run")
            .arg("--config")
            .arg(&self.config)
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .env(
                "RUST_LOG",
                std::env::var("PVEFLEET_TEST_LOG").unwrap_or_else(|_| "warn".into()),
            )
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("pvefleet-agent run starts");
        let line = ready_line(&mut child, &format!("agent {}", self.name));
        let ready: serde_json::Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("agent {}: bad ready line {line:?}: {e}", self.name));
        self.node_id = ready["node_id"]
            .as_u64()
            .unwrap_or_else(|| panic!("agent {}: no node_id in {line}", self.name));
        self.child = Some(child);
    }

    /// Whether its process runs.
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.as_mut().map(|c| c.try_wait()), Some(Ok(None)))
    }

    /// The process id while it runs (for resource measurements).
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// SIGKILL: no shutdown, nothing flushed beyond what was durable.
    pub fn kill9(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// SIGTERM and a bounded wait for a clean exit.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = Command::new("kill")
                .args(["-TERM", &child.id().to_string()])
                .status();
            let deadline = Instant::now() + Duration::from_secs(30);
            while !matches!(child.try_wait(), Ok(Some(_))) {
                if Instant::now() > deadline {
                    let _ = child.kill();
                    let _ = child.wait();
                    panic!("agent {} did not stop on SIGTERM within 30 s", self.name);
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }
}

impl Drop for AgentProcess {
    fn drop(&mut self) {
        self.kill9();
    }
}
