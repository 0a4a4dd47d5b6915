//! A move of a running (or stopped) VM to another node of its PVE cluster, as the leader
//! records it (encoding v2): asked by an operator (`pvefleet vm migrate`), carried out by the
//! agent of the source host through PVE's own migration (live for a running guest, its local
//! disks copied), and over when that agent reports the outcome. While it is under way the
//! fleet sends the VM nothing else, so no ensure races the move.

use serde::{Deserialize, Serialize};

use super::UnixMillis;
use crate::identity::NodeId;

/// A VM being moved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Migration {
    /// The host it runs on.
    pub from_host: NodeId,
    /// That host's PVE node name.
    pub from_node: String,
    /// The host it goes to (a node of the same PVE cluster).
    pub to_host: NodeId,
    /// That host's PVE node name (PVE's `target`).
    pub to_node: String,
    /// Why it moves.
    pub purpose: MigrationPurpose,
    /// When it was asked.
    pub since: UnixMillis,
}

/// Why a VM moves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MigrationPurpose {
    /// An operator asked (`pvefleet vm migrate`).
    Operator,
    /// Its host is in maintenance: the fleet drains it, and remembers the host as the VM's
    /// home once it moved.
    Drain,
    /// Its host's maintenance is over: the fleet brings it back home.
    Home,
    /// A host its node affinity prefers to its own is available again (PVE's failback).
    Failback,
    /// Automatic rebalancing evens out the load of its PVE cluster.
    Rebalance,
}

impl MigrationPurpose {
    /// The purpose in words, for events (`draining pve-a for maintenance`).
    pub fn describe(self, from: &str, to: &str) -> String {
        match self {
            MigrationPurpose::Operator => "asked by an operator".to_string(),
            MigrationPurpose::Drain => format!("draining {from} for maintenance"),
            MigrationPurpose::Home => format!("back home to {to} after its maintenance"),
            MigrationPurpose::Failback => {
                format!("failback to {to}, which its node affinity prefers")
            }
            MigrationPurpose::Rebalance => {
                format!("rebalancing: {from} is busier than {to}")
            }
        }
    }
}
