//! `pvefleet vm migrate NAME [--to HOST]`: move a VM to another node of its PVE cluster
//! (encoding v2; a v1 member does not know the method). The leader records the migration and
//! answers at once; the move itself is the source agent's, and `vm ls` shows it under way.

use serde::{Deserialize, Serialize};

use crate::rpc::Rpc;

/// Move `name`; `to`: the target host's name, or `None` for the scheduler's choice among the
/// other online nodes of its PVE cluster.
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
