//! What an agent reports about its host: operating-system resources (sysinfo), the PVE node's
//! view (status, storages, bridges, templates) and the VMs on it, owned by the fleet or not.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

/// Everything an agent knows about its host.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Inventory {
    /// Operating-system view.
    pub resources: HostResources,
    /// The PVE node's own status.
    pub pve: PveNodeInfo,
    /// Storages usable on this node, by id.
    pub storages: Vec<StorageInfo>,
    /// Linux bridges of this node (`vmbr0`, ...).
    pub bridges: BTreeSet<String>,
    /// Templates on this node, by VMID.
    pub templates: Vec<TemplateInfo>,
    /// Every VM on this node (templates excluded), by VMID.
    pub vms: Vec<ObservedVm>,
}

/// Host resources as the operating system reports them (sysinfo).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostResources {
    /// Logical CPUs.
    pub cpus: u32,
    /// Total memory in bytes.
    pub memory_total_bytes: u64,
    /// Used memory in bytes.
    pub memory_used_bytes: u64,
    /// 1-, 5- and 15-minute load averages, in thousandths (1.5 = 1500).
    pub load_milli: [u32; 3],
    /// Mounted local disks.
    pub disks: Vec<DiskUsage>,
}

/// One mounted file system.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiskUsage {
    /// Mount point.
    pub mount: String,
    /// Size in bytes.
    pub total_bytes: u64,
    /// Available bytes.
    pub available_bytes: u64,
}

/// The PVE node's status (`GET /nodes/{node}/status`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PveNodeInfo {
    /// The PVE node name.
    pub node: String,
    /// `pve-manager` version (`9.1.1`).
    pub version: String,
    /// Logical CPUs PVE reports.
    pub cpus: u32,
    /// Memory PVE reports, in bytes.
    pub memory_total_bytes: u64,
    /// Memory in use, in bytes.
    pub memory_used_bytes: u64,
    /// Seconds since the node booted.
    pub uptime_secs: u64,
}

/// One storage as this node sees it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StorageInfo {
    /// Storage id (`local-lvm`).
    pub id: String,
    /// Storage type (`dir`, `lvmthin`, `rbd`, ...).
    pub kind: String,
    /// Content types it accepts (`images`, `snippets`, ...).
    pub content: BTreeSet<String>,
    /// Shared between nodes (migration without copying disks).
    pub shared: bool,
    /// Active and usable now.
    pub active: bool,
    /// Size in bytes.
    pub total_bytes: u64,
    /// Free bytes.
    pub available_bytes: u64,
}

/// One template on this node.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TemplateInfo {
    /// Its VMID.
    pub vmid: u32,
    /// Its VM name.
    pub name: String,
}

/// One VM on this node.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObservedVm {
    /// Its VMID.
    pub vmid: u32,
    /// Its VM name.
    pub name: String,
    /// Its PVE tags.
    pub tags: Vec<String>,
    /// Carries the fleet's ownership tag: the fleet may change it. Others are reported only.
    pub owned: bool,
    /// PVE's `status` (`running`, `stopped`, ...).
    pub status: String,
    /// A lock held on its config (`clone`, `backup`, ...), if any.
    pub lock: Option<String>,
    /// vCPUs PVE reports.
    pub cpus: u32,
    /// Configured memory in bytes.
    pub memory_bytes: u64,
}

impl ObservedVm {
    /// Whether PVE reports it running.
    pub fn is_running(&self) -> bool {
        self.status == "running"
    }
}
