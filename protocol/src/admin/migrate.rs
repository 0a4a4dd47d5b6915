//! `pvefleet vm migrate NAME [--to HOST]`: move a VM to another node of its PVE cluster
//! (encoding v2; a v1 member does not know the method). The leader records the migration and
//! answers at once; the move itself is the source agent's, and `vm ls` shows it under way.

use serde::{Deserialize, Serialize};

use super::PlacementVerdict;
use crate::rpc::Rpc;

/// Move `name`; `to`: the target host's name, or `None` for the scheduler's choice among the
/// other online nodes of its PVE cluster (then among the other hosts of the fleet).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VmMigrate {
    /// The VM's name.
    pub name: String,
    /// The target host, by name.
    pub to: Option<String>,
}

/// The migration recorded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VmMigrateReply {
    /// The host it leaves.
    pub from: String,
    /// The host it goes to.
    pub to: String,
    /// Why that host, when the scheduler chose it (`best of 2 eligible hosts`); empty for `--to`.
    pub chosen: String,
    /// The newest event's sequence number when it was recorded: the outcome is an event after it.
    pub since_event_seq: u64,
}

impl Rpc for VmMigrate {
    const METHOD: &'static str = "admin.vm_migrate";
    type Response = VmMigrateReply;
}

/// `vm migrate NAME [--to HOST] --dry-run`: where the VM would move and how every other node of
/// its PVE cluster was judged, without moving anything (encoding v2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VmMigratePlan {
    /// The VM's name.
    pub name: String,
    /// The target host asked for, by name.
    pub to: Option<String>,
}

/// The move as it would be made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VmMigratePlanReply {
    /// The VM.
    pub vm: String,
    /// The host it would go to; `None`: it cannot move now ([`Self::why`] says why).
    pub to: Option<String>,
    /// Why that host (`best of 2 eligible hosts`), or why it cannot move.
    pub why: String,
    /// The other members of its affinity group, which would move with it.
    pub with: Vec<String>,
    /// Every other node of its PVE cluster as the move judges it (empty when it cannot move).
    pub verdicts: Vec<PlacementVerdict>,
}

impl Rpc for VmMigratePlan {
    const METHOD: &'static str = "admin.vm_migrate_plan";
    type Response = VmMigratePlanReply;
}
