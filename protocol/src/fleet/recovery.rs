//! The recovery of a VM whose host was fenced, as the leader records it (encoding v2): where it
//! came from, how it is brought back, where it goes, and why it waits when no host is eligible.
//! One entry per VM while the recovery is under way; it ends when the VM reached its desired
//! power state on the new host (or its old host came back before a new one was found).

use serde::{Deserialize, Serialize};

use super::UnixMillis;
use crate::identity::NodeId;
use crate::spec::RecoveryMode;

/// A VM being recovered from a fenced host.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Recovery {
    /// The fenced host the VM was on.
    pub from_host: NodeId,
    /// That host's PVE node name (whose directory in the cluster filesystem holds the VM's
    /// configuration, for a relocation).
    pub from_node: String,
    /// How the VM is brought back.
    pub mode: RecoveryMode,
    /// The host it was placed on; `None` while no host is eligible (it waits, and every round
    /// tries again).
    pub to_host: Option<NodeId>,
    /// Why it waits, or what was decided.
    pub message: String,
    /// When the recovery began.
    pub since: UnixMillis,
    /// When the entry last changed.
    pub updated_at: UnixMillis,
}

impl Recovery {
    /// Whether the VM still waits for an eligible host.
    pub fn is_waiting(&self) -> bool {
        self.to_host.is_none()
    }
}

/// What an agent does before it ensures a VM relocated onto its host: take the configuration
/// over from the fenced node's directory of the same PVE cluster (same VMID, same disks).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TakeOver {
    /// The fenced node whose directory holds the configuration.
    pub from_node: String,
}

/// The host label an agent sets from PVE's `/cluster/status`: the name of the PVE cluster its
/// node belongs to (absent on a standalone node). A relocation stays within one PVE cluster;
/// placement rules may match it as any other label.
pub const PVE_CLUSTER_LABEL: &str = "pvefleet.io/pve-cluster";

/// The failed starts of an HA `started` VM (encoding v2), which PVE HA's `max_restart` and
/// `max_relocate` bound: retried on its host, then moved to the best host not tried yet, then
/// given up (`error`) until the operator disables and re-enables it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StartFailures {
    /// The host the failures below happened on.
    pub host: NodeId,
    /// Failed starts on that host in a row.
    pub failures: u32,
    /// Hosts the VM was moved away from after failing there (each relocation adds one).
    pub tried: Vec<NodeId>,
    /// Set when the fleet gave up: why (PVE HA's `error` state).
    pub error: Option<String>,
    /// The last failure's message.
    pub last_message: String,
    /// When the entry last changed.
    pub updated_at: UnixMillis,
}
