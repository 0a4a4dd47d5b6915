//! Node answers: `GET /nodes` and `GET /nodes/{node}/status`.

use serde::{Deserialize, Deserializer};

use crate::de;

/// One node of `GET /nodes`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct NodeEntry {
    /// Node name.
    #[serde(default, deserialize_with = "de::string_lenient")]
    pub node: String,
    /// `online`, `offline` or `unknown`.
    #[serde(default)]
    pub status: String,
    /// CPU usage (fraction).
    #[serde(default, deserialize_with = "de::opt_f64_lenient")]
    pub cpu: Option<f64>,
    /// CPUs.
    #[serde(default, deserialize_with = "de::opt_u32_lenient")]
    pub maxcpu: Option<u32>,
    /// Memory used (bytes).
    #[serde(default, deserialize_with = "de::opt_u64_lenient")]
    pub mem: Option<u64>,
    /// Memory size (bytes).
    #[serde(default, deserialize_with = "de::opt_u64_lenient")]
    pub maxmem: Option<u64>,
    /// Uptime (seconds).
    #[serde(default, deserialize_with = "de::opt_u64_lenient")]
    pub uptime: Option<u64>,
    /// Subscription level.
    #[serde(default)]
    pub level: Option<String>,
    /// SHA-256 fingerprint of the node's certificate (`AA:BB:...`).
    #[serde(default)]
    pub ssl_fingerprint: Option<String>,
    /// `node/<name>` (sent by PVE, not declared by the schema).
    #[serde(default)]
    pub id: Option<String>,
    /// `node` (sent by PVE, not declared by the schema).
    #[serde(rename = "type", default)]
    pub kind: Option<String>,
}

impl NodeEntry {
    /// Whether the cluster sees the node online.
    pub fn is_online(&self) -> bool {
        self.status == "online"
    }
}

/// Memory of a node (bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
pub struct NodeMemory {
    /// Total.
    #[serde(default, deserialize_with = "de::u64_lenient")]
    pub total: u64,
    /// Used.
    #[serde(default, deserialize_with = "de::u64_lenient")]
    pub used: u64,
    /// Free.
    #[serde(default, deserialize_with = "de::u64_lenient")]
    pub free: u64,
    /// Available for new allocations.
    #[serde(default, deserialize_with = "de::opt_u64_lenient")]
    pub available: Option<u64>,
}

/// Root filesystem of a node (bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
pub struct NodeRootfs {
    /// Total.
    #[serde(default, deserialize_with = "de::u64_lenient")]
    pub total: u64,
    /// Used.
    #[serde(default, deserialize_with = "de::u64_lenient")]
    pub used: u64,
    /// Free.
    #[serde(default, deserialize_with = "de::u64_lenient")]
    pub free: u64,
    /// Available to unprivileged users.
    #[serde(default, deserialize_with = "de::u64_lenient")]
    pub avail: u64,
}

/// CPU of a node.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
pub struct NodeCpuInfo {
    /// Model name.
    #[serde(default)]
    pub model: String,
    /// Logical CPUs.
    #[serde(default, deserialize_with = "de::u64_lenient")]
    pub cpus: u64,
    /// Cores per socket.
    #[serde(default, deserialize_with = "de::u64_lenient")]
    pub cores: u64,
    /// Sockets.
    #[serde(default, deserialize_with = "de::u64_lenient")]
    pub sockets: u64,
}

/// `GET /nodes/{node}/status`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct NodeStatus {
    /// CPU usage (fraction).
    #[serde(default, deserialize_with = "de::opt_f64_lenient")]
    pub cpu: Option<f64>,
    /// Memory.
    #[serde(default)]
    pub memory: NodeMemory,
    /// Root filesystem.
    #[serde(default)]
    pub rootfs: NodeRootfs,
    /// CPU.
    #[serde(default)]
    pub cpuinfo: NodeCpuInfo,
    /// `pve-manager/9.1.3/...`.
    #[serde(default)]
    pub pveversion: Option<String>,
    /// Load averages over 1, 5 and 15 minutes.
    #[serde(default, deserialize_with = "f64_list")]
    pub loadavg: Vec<f64>,
}

/// A list of numbers, each a number or numeric string (PVE sends `["0.10","0.05","0.01"]`).
fn f64_list<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<f64>, D::Error> {
    #[derive(Deserialize)]
    struct Item(#[serde(deserialize_with = "de::f64_lenient")] f64);
    let items = Option::<Vec<Item>>::deserialize(d)?;
    Ok(items
        .unwrap_or_default()
        .into_iter()
        .map(|Item(v)| v)
        .collect())
}
