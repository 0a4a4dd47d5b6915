//! `pvefleet host maintenance enable|disable|status HOST` (encoding v2; a v1 member does not
//! know the method): a host into maintenance (the fleet drains its guests and VIPs), out of it
//! (the guests drained off it come back), and what is left to move.

use serde::{Deserialize, Serialize};

use crate::fleet::HostState;
use crate::rpc::Rpc;

/// What to do with the host's maintenance.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MaintenanceAction {
    /// Into maintenance (refused unless the host is online).
    Enable,
    /// Out of maintenance (refused unless the host is in maintenance).
    Disable,
    /// Only tell where the drain or the way back stands.
    Status,
}

/// `host maintenance ACTION HOST`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostMaintenance {
    /// The host, by name.
    pub host: String,
    /// What to do.
    pub action: MaintenanceAction,
}

/// A guest still on a host in maintenance, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GuestLeft {
    /// The VM.
    pub vm: String,
    /// Why it is still there (moving, retried shortly, no other node can take it...).
    pub why: String,
}

/// Where the host's maintenance stands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostMaintenanceReply {
    /// The host.
    pub host: String,
    /// Its state now.
    pub state: HostState,
    /// The guests still on it (while in maintenance).
    pub left: Vec<GuestLeft>,
    /// The guests drained off it that are to come back (while away), by name.
    pub away: Vec<String>,
}

impl Rpc for HostMaintenance {
    const METHOD: &'static str = "admin.host_maintenance";
    type Response = HostMaintenanceReply;
}
