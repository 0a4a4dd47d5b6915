//! What a simulated cluster looks like when it starts: nodes, storages, bridges, templates,
//! credentials and timing. Loaded from TOML by the `pve-sim` binary (`deny_unknown_fields`, so a
//! typo fails loudly) or built in code by tests.

use serde::{Deserialize, Serialize};

/// The whole simulated cluster.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SimConfig {
    /// Cluster name (`/cluster/status`, ticket responses).
    pub cluster_name: String,
    /// `pve-manager` version string reported by `/version` (`9.1.1`, or `8.4.1` to act as PVE 8).
    pub version: String,
    /// Nodes of the cluster.
    pub nodes: Vec<NodeConfig>,
    /// Storages (cluster-wide definitions; `nodes` restricts where a storage exists).
    pub storages: Vec<StorageConfig>,
    /// Templates present at start.
    pub templates: Vec<TemplateConfig>,
    /// API tokens accepted (`Authorization: PVEAPIToken=userid!tokenid=secret`).
    pub tokens: Vec<TokenConfig>,
    /// Password of `root@pam` for ticket logins (`POST /access/ticket`) and the `pvesh` shim.
    pub root_password: String,
    /// Multiplies every simulated task duration: 1.0 = realistic (a clone takes seconds),
    /// 0.0 = tasks finish as soon as they are scheduled.
    pub time_scale: f64,
    /// Seconds (before scaling) from VM start until its guest agent reports IP addresses.
    pub agent_ip_delay_secs: f64,
    /// Emit PVE's known type drift (`/cluster/nextid` and config `memory` as strings, counters
    /// as numeric strings) so client decoders are exercised.
    pub quirks: bool,
    /// Seed for MAC addresses, UUIDs and the error-rate dice, for reproducible runs.
    pub seed: u64,
}

/// One node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeConfig {
    /// Node name (`pve-node` format).
    pub name: String,
    /// Logical CPUs.
    #[serde(default = "default_cpus")]
    pub cpus: u32,
    /// Memory in bytes.
    #[serde(default = "default_memory")]
    pub memory: u64,
    /// Linux bridges (`vmbr0`, ...).
    #[serde(default = "default_bridges")]
    pub bridges: Vec<String>,
    /// Node address reported in `/cluster/status`.
    #[serde(default)]
    pub ip: Option<String>,
}

/// One storage definition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StorageConfig {
    /// Storage id (`local`, `local-lvm`, `ceph`, ...).
    pub id: String,
    /// Plugin type: `dir`, `lvmthin`, `zfspool`, `rbd`, `nfs`, ...
    #[serde(rename = "type")]
    pub kind: String,
    /// Content types (`images`, `rootdir`, `iso`, `vztmpl`, `backup`, `snippets`, `import`).
    pub content: Vec<String>,
    /// Shared between nodes (one pool of space; clones/migrations across nodes allowed).
    #[serde(default)]
    pub shared: bool,
    /// Capacity in bytes (per node for local storages).
    pub total: u64,
    /// Nodes where this storage exists; empty = all nodes.
    #[serde(default)]
    pub nodes: Vec<String>,
}

/// A template VM present at start.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TemplateConfig {
    /// VMID.
    pub vmid: u32,
    /// Name (`debian-12-cloud`).
    pub name: String,
    /// Node holding the config.
    pub node: String,
    /// Storage of its disk.
    pub storage: String,
    /// Disk size in GiB.
    #[serde(default = "default_template_disk")]
    pub disk_gib: u64,
    /// Memory in MiB.
    #[serde(default = "default_template_memory")]
    pub memory_mib: u64,
    /// Guest agent enabled in the template.
    #[serde(default = "default_true")]
    pub agent: bool,
}

/// An accepted API token.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenConfig {
    /// `user@realm`.
    pub userid: String,
    /// Token id (the part after `!`).
    pub tokenid: String,
    /// The secret (PVE uses a UUID).
    pub secret: String,
    /// Only `*.Audit` privileges.
    #[serde(default)]
    pub read_only: bool,
    /// Privileges the token lacks everywhere (`VM.Snapshot`, ...): requests needing one fail
    /// PVE's permission check, and `GET /access/permissions` does not list it. Empty: none.
    #[serde(default)]
    pub withheld: Vec<String>,
}

fn default_cpus() -> u32 {
    16
}
fn default_memory() -> u64 {
    64 << 30
}
fn default_bridges() -> Vec<String> {
    vec!["vmbr0".into()]
}
fn default_template_disk() -> u64 {
    8
}
fn default_template_memory() -> u64 {
    2048
}
fn default_true() -> bool {
    true
}

impl Default for SimConfig {
    /// Three nodes `pve1..pve3`, a local `dir` storage with snippets, a local `lvmthin`, a
    /// shared `rbd` storage, a Debian cloud template on the shared storage, one token
    /// `root@pam!fleet` and a realistic time scale.
    fn default() -> Self {
        let nodes = (1..=3)
            .map(|i| NodeConfig {
                name: format!("pve{i}"),
                cpus: default_cpus(),
                memory: default_memory(),
                bridges: vec!["vmbr0".into(), "vmbr1".into()],
                ip: Some(format!("192.0.2.{}", 10 + i)),
            })
            .collect();
        Self {
            cluster_name: "simcluster".into(),
            version: "9.1.1".into(),
            nodes,
            storages: vec![
                StorageConfig {
                    id: "local".into(),
                    kind: "dir".into(),
                    content: vec![
                        "iso".into(),
                        "vztmpl".into(),
                        "backup".into(),
                        "snippets".into(),
                        "images".into(),
                    ],
                    shared: false,
                    total: 100 << 30,
                    nodes: vec![],
                },
                StorageConfig {
                    id: "local-lvm".into(),
                    kind: "lvmthin".into(),
                    content: vec!["images".into(), "rootdir".into()],
                    shared: false,
                    total: 500 << 30,
                    nodes: vec![],
                },
                StorageConfig {
                    id: "ceph".into(),
                    kind: "rbd".into(),
                    content: vec!["images".into(), "rootdir".into()],
                    shared: true,
                    total: 4 << 40,
                    nodes: vec![],
                },
            ],
            templates: vec![TemplateConfig {
                vmid: 9000,
                name: "debian-12-cloud".into(),
                node: "pve1".into(),
                storage: "ceph".into(),
                disk_gib: default_template_disk(),
                memory_mib: default_template_memory(),
                agent: true,
            }],
            tokens: vec![TokenConfig {
                userid: "root@pam".into(),
                tokenid: "fleet".into(),
                secret: "3f8a4c1e-5b2d-4e6f-9a7b-1c2d3e4f5a6b".into(),
                read_only: false,
                withheld: vec![],
            }],
            root_password: "simulator".into(),
            time_scale: 1.0,
            agent_ip_delay_secs: 8.0,
            quirks: false,
            seed: 1,
        }
    }
}

impl SimConfig {
    /// The default cluster with tasks that finish immediately: for fast tests.
    pub fn fast() -> Self {
        Self {
            time_scale: 0.0,
            agent_ip_delay_secs: 0.0,
            ..Self::default()
        }
    }
}
