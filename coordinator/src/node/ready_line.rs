//! The line `pvefleet-coordinator run` prints once the member is ready: what the systemd
//! notifier waits for and what the launcher reads.

use raft::NodeId;
use serde::{Deserialize, Serialize};

/// What `pvefleet-coordinator run` prints on stdout once the member is ready (one JSON line).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReadyLine {
    /// The member's node id.
    pub node_id: NodeId,
    /// Its QUIC address.
    pub listen: String,
    /// Its local HTTP address.
    pub http: String,
    /// Its dashboard's HTTPS address, if it serves one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dashboard: Option<String>,
}
