//! Cluster-wide answers: `GET /version`, `GET /cluster/resources`, `GET /cluster/status`.

use serde::Deserialize;

use crate::de;

/// `GET /version`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Version {
    /// Full pve-manager version (`9.1.3`).
    #[serde(default, deserialize_with = "de::string_lenient")]
    pub version: String,
    /// Point release `x.y` (`9.1`).
    #[serde(default, deserialize_with = "de::string_lenient")]
    pub release: String,
    /// Short git revision.
    #[serde(default, deserialize_with = "de::string_lenient")]
    pub repoid: String,
    /// Default console viewer.
    #[serde(default)]
    pub console: Option<String>,
}

impl Version {
    /// The major release (`9` for `9.1`), from `release`, else from `version`.
    pub fn major(&self) -> Option<u32> {
        let text = if self.release.is_empty() {
            &self.version
        } else {
            &self.release
        };
        text.split('.').next()?.trim().parse().ok()
    }

    /// Whether the version-gated parameters of
    /// [`PVE9_ONLY_PARAMS`](crate::calls::PVE9_ONLY_PARAMS) may be sent.
    pub fn supports_pve9_params(&self) -> bool {
        self.major().is_some_and(|m| m >= 9)
    }
}

/// One entry of `GET /cluster/resources` (a VM, storage, node, pool or SDN object).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ClusterResource {
    /// `qemu/100`, `node/pve1`, `storage/pve1/local`.
    #[serde(default)]
    pub id: String,
    /// `node`, `storage`, `pool`, `qemu`, `lxc`, `openvz`, `sdn`, `network`.
    #[serde(rename = "type", default)]
    pub kind: String,
    /// Node the object lives on.
    #[serde(default)]
    pub node: Option<String>,
    /// VMID of guests.
    #[serde(default, deserialize_with = "de::opt_u32_lenient")]
    pub vmid: Option<u32>,
    /// Guest name.
    #[serde(default)]
    pub name: Option<String>,
    /// Status (`running`, `stopped`, `online`, `available`, ...).
    #[serde(default)]
    pub status: Option<String>,
    /// Guest is a template.
    #[serde(default, deserialize_with = "de::bool_lenient")]
    pub template: bool,
    /// Config lock of a guest.
    #[serde(default)]
    pub lock: Option<String>,
    /// Guest tags (`;`-separated).
    #[serde(default, deserialize_with = "de::opt_string_lenient")]
    pub tags: Option<String>,
    /// Pool of a guest.
    #[serde(default)]
    pub pool: Option<String>,
    /// HA state of a guest.
    #[serde(default)]
    pub hastate: Option<String>,
    /// Storage id.
    #[serde(default)]
    pub storage: Option<String>,
    /// Storage content types (comma-separated).
    #[serde(default)]
    pub content: Option<String>,
    /// Storage plugin type.
    #[serde(default)]
    pub plugintype: Option<String>,
    /// Storage is shared.
    #[serde(default, deserialize_with = "de::opt_bool_lenient")]
    pub shared: Option<bool>,
    /// CPU usage (fraction of `maxcpu`).
    #[serde(default, deserialize_with = "de::opt_f64_lenient")]
    pub cpu: Option<f64>,
    /// CPUs.
    #[serde(default, deserialize_with = "de::opt_f64_lenient")]
    pub maxcpu: Option<f64>,
    /// Memory used (bytes).
    #[serde(default, deserialize_with = "de::opt_u64_lenient")]
    pub mem: Option<u64>,
    /// Memory size (bytes).
    #[serde(default, deserialize_with = "de::opt_u64_lenient")]
    pub maxmem: Option<u64>,
    /// Disk or storage used (bytes).
    #[serde(default, deserialize_with = "de::opt_u64_lenient")]
    pub disk: Option<u64>,
    /// Disk or storage size (bytes).
    #[serde(default, deserialize_with = "de::opt_u64_lenient")]
    pub maxdisk: Option<u64>,
    /// Uptime (seconds).
    #[serde(default, deserialize_with = "de::opt_u64_lenient")]
    pub uptime: Option<u64>,
}

impl ClusterResource {
    /// Whether this is a QEMU VM.
    pub fn is_qemu(&self) -> bool {
        self.kind == "qemu"
    }
}

/// One entry of `GET /cluster/status`: the cluster itself or one member node.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct ClusterStatusEntry {
    /// `cluster` or `node/<name>`.
    #[serde(default)]
    pub id: String,
    /// Cluster or node name.
    #[serde(default, deserialize_with = "de::string_lenient")]
    pub name: String,
    /// `cluster` or `node`.
    #[serde(rename = "type", default)]
    pub kind: String,
    /// Node address.
    #[serde(default)]
    pub ip: Option<String>,
    /// Subscription level.
    #[serde(default)]
    pub level: Option<String>,
    /// The node answering.
    #[serde(default, deserialize_with = "de::opt_bool_lenient")]
    pub local: Option<bool>,
    /// Corosync node id.
    #[serde(default, deserialize_with = "de::opt_u32_lenient")]
    pub nodeid: Option<u32>,
    /// Node count (cluster entry).
    #[serde(default, deserialize_with = "de::opt_u32_lenient")]
    pub nodes: Option<u32>,
    /// Node is online.
    #[serde(default, deserialize_with = "de::opt_bool_lenient")]
    pub online: Option<bool>,
    /// Cluster has quorum (cluster entry).
    #[serde(default, deserialize_with = "de::opt_bool_lenient")]
    pub quorate: Option<bool>,
    /// Config version (cluster entry).
    #[serde(default, deserialize_with = "de::opt_u64_lenient")]
    pub version: Option<u64>,
}
