//! Response types of the typed calls, one file per API area.
//!
//! Every numeric and boolean field decodes leniently ([`crate::de`]): PVE does not validate its
//! output, so numbers arrive as strings (`"vmid":"506"`, `"memory":"2048"`, nextid `"100"`)
//! and booleans as `0`/`1`/`""`. Unknown fields are ignored; optional fields default. No type
//! uses `#[serde(flatten)]`, so [`crate::fields::struct_fields`] can list exactly the fields each
//! one reads for the schema-conformance test. The one open map is [`VmConfig`].

pub mod access;
pub mod agent;
pub mod cluster;
pub mod ha;
pub mod migrate;
pub mod network;
pub mod nodes;
pub mod snapshots;
pub mod storage;
pub mod tasks;
pub mod vm;
pub mod vm_config;

#[cfg(test)]
mod drift_tests;

pub use access::TicketInfo;
pub use agent::{AgentInterface, AgentInterfaces, AgentIpAddress, UsableIp};
pub use cluster::{ClusterResource, ClusterStatusEntry, Version};
pub use ha::HaResource;
pub use migrate::{BlockingHaResource, LocalDisk, MigratePrecondition, NotAllowedNode};
pub use network::NetworkInterface;
pub use nodes::{NodeCpuInfo, NodeEntry, NodeMemory, NodeRootfs, NodeStatus};
pub use snapshots::SnapshotEntry;
pub use storage::{StorageEntry, StorageStatus, StorageVolume};
pub use tasks::{ClusterTaskEntry, NodeTaskEntry};
pub use vm::{VmHaStatus, VmListEntry, VmStatus};
pub use vm_config::{PendingEntry, VmConfig};

/// Top-level response fields read although the schema's `returns` does not declare them, as
/// `(path template, field)`. Each is sent by real PVE servers; the reason is on its line.
pub const UNDECLARED_FIELDS_READ: &[(&str, &str)] = &[
    // `pvesh get /nodes` output carries `id: node/<name>` and `type: node` (NOTES §8.1).
    ("/nodes", "id"),
    ("/nodes", "type"),
    // Set to 1 when the ticket is only a half-ticket awaiting TFA (NOTES §2.2).
    ("/access/ticket", "NeedTFA"),
    // Snapshot list entries in `prepare`/`delete` state carry `snapstate`; the final `current`
    // entry carries `running` and `digest` (NOTES §3.4).
    ("/nodes/{node}/qemu/{vmid}/snapshot", "snapstate"),
    ("/nodes/{node}/qemu/{vmid}/snapshot", "running"),
    ("/nodes/{node}/qemu/{vmid}/snapshot", "digest"),
    // The cluster task index holds the same fields as a node's task list; the schema lists
    // only `upid` (pve-manager `API2/Cluster.pm` tasks handler).
    ("/cluster/tasks", "node"),
    ("/cluster/tasks", "type"),
    ("/cluster/tasks", "id"),
    ("/cluster/tasks", "user"),
    ("/cluster/tasks", "status"),
    ("/cluster/tasks", "starttime"),
    ("/cluster/tasks", "endtime"),
    // HA resource entries are the resource's config plus `sid`, `type` and `digest`
    // (pve-ha-manager `API2/HA/Resources.pm` index); the schema lists only `sid`.
    ("/cluster/ha/resources", "type"),
    ("/cluster/ha/resources", "state"),
    // Token tasks split the user: `user: root@pam` plus `tokenid` (NOTES §4.2); read by
    // `crate::tasks::TaskStatus`.
    ("/nodes/{node}/tasks/{upid}/status", "tokenid"),
];
