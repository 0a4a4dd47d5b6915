//! `GET /nodes/{node}/qemu/{vmid}/migrate`: whether and where a VM can be migrated.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::de;

/// A local disk that would have to move with the VM.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct LocalDisk {
    /// Volume id.
    #[serde(default)]
    pub volid: String,
    /// Size (bytes).
    #[serde(default, deserialize_with = "de::u64_lenient")]
    pub size: u64,
    /// Is a CD-ROM.
    #[serde(default, deserialize_with = "de::bool_lenient")]
    pub cdrom: bool,
    /// Is referenced only as `unused<n>`.
    #[serde(default, deserialize_with = "de::bool_lenient")]
    pub is_unused: bool,
}

/// An HA resource that blocks a target node.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct BlockingHaResource {
    /// HA resource id (`vm:101`).
    #[serde(default)]
    pub sid: String,
    /// Why (`resource-affinity`).
    #[serde(default)]
    pub cause: String,
}

/// Why a node is not a possible target.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
pub struct NotAllowedNode {
    /// Storages the VM uses that the node lacks.
    #[serde(default)]
    pub unavailable_storages: Vec<String>,
    /// HA resources that forbid the node.
    #[serde(rename = "blocking-ha-resources", default)]
    pub blocking_ha_resources: Vec<BlockingHaResource>,
}

/// Migration preconditions of one VM.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct MigratePrecondition {
    /// The VM runs (an online migration is needed).
    #[serde(default, deserialize_with = "de::bool_lenient")]
    pub running: bool,
    /// Nodes the VM may go to.
    #[serde(default)]
    pub allowed_nodes: Vec<String>,
    /// Nodes it may not go to, and why.
    #[serde(default)]
    pub not_allowed_nodes: BTreeMap<String, NotAllowedNode>,
    /// Local disks that would be copied (`with-local-disks`).
    #[serde(default)]
    pub local_disks: Vec<LocalDisk>,
    /// Local resources that prevent migration (`hostpci0`, `usb0`, ...).
    #[serde(default)]
    pub local_resources: Vec<String>,
    /// Mapped resources (PCI/USB mappings).
    #[serde(rename = "mapped-resources", default)]
    pub mapped_resources: Vec<String>,
}

impl MigratePrecondition {
    /// Whether `target` is an allowed target node.
    pub fn allows(&self, target: &str) -> bool {
        self.allowed_nodes.iter().any(|n| n == target)
    }
}
