//! A move of a running (or stopped) VM to another host, as the leader records it (encoding
//! v2): asked by an operator (`pvefleet vm migrate`) or by the fleet (drain, home, failback,
//! rebalancing), carried out by agents through PVE's own migration, and over when the source
//! agent reports the outcome. Within a PVE cluster it is PVE's migration (live for a running
//! guest, local disks copied); to another PVE cluster or a standalone node, PVE's remote
//! migration with a token the target's agent mints for this move; a `recovery = recreate` VM
//! is rebuilt from its spec on the target instead ([`MoveKind`]). While it is under way the
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
    /// The host it goes to.
    pub to_host: NodeId,
    /// That host's PVE node name (PVE's `target`).
    pub to_node: String,
    /// Why it moves.
    pub purpose: MigrationPurpose,
    /// How it moves (decided by the state machine from the two hosts and the VM's recovery
    /// mode).
    pub kind: MoveKind,
    /// When it was asked.
    pub since: UnixMillis,
    /// When its source host was fenced or removed halfway (a move within a PVE cluster or a
    /// remote one): the VM may already run on the target, so it is not recovered until the
    /// target's agent said whether it arrived.
    pub source_lost_at: Option<UnixMillis>,
}

/// How a VM moves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MoveKind {
    /// Within one PVE cluster: PVE's migration on the source node (`qmigrate`), live when it
    /// runs, local disks copied.
    Local,
    /// To another PVE cluster or standalone node: PVE's remote migration
    /// (`remote_migrate`), live, disks copied, authenticated by a token the target's agent
    /// mints for this one move; the source VM is deleted once the target runs it.
    Remote,
    /// A `recovery = recreate` VM on another PVE cluster or standalone node: removed from its
    /// source, then built from its spec on the target (its disks are not carried).
    Recreate,
}

impl MoveKind {
    /// The kind in words (`live migration`, `remote migration`, `rebuilt on the target`).
    pub fn describe(self) -> &'static str {
        match self {
            MoveKind::Local => "migration within its PVE cluster",
            MoveKind::Remote => "remote migration to another PVE cluster",
            MoveKind::Recreate => "rebuilt from its spec on the target",
        }
    }
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
    /// Its affinity group (`together_with`) was found split: it joins the host most of the
    /// group runs on (PVE's positive resource affinity).
    Gather,
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
            MigrationPurpose::Gather => {
                format!("kept together: joining its affinity group on {to}, where most of it runs")
            }
        }
    }
}
