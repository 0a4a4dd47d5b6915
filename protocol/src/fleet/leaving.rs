//! A host that went down cleanly, as the leader records it (encoding v2) before it answers the
//! agent: while the record exists every leader counts the host's lease as the record's hold,
//! not the heartbeat lease, so no leader fences the host while the agent may still rely on the
//! hold it was granted (docs/design/maintenance.md, "Shutdown policy").

use serde::{Deserialize, Serialize};

use super::UnixMillis;
use crate::agent::{LeaveAction, LeaveKind};

/// A host leaving, or back and waiting for its hold to pass.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Leaving {
    /// Why its agent stopped.
    pub kind: LeaveKind,
    /// What the fleet does.
    pub action: LeaveAction,
    /// The session (`Heartbeat::boot_id`) of the agent that left: a beat of another one is
    /// the host back.
    pub boot_id: u64,
    /// The lease the leaving agent may be granted, in ms (the freeze).
    pub hold_ms: u64,
    /// The fleet put the host into maintenance for it (the `migrate` policy): the
    /// maintenance ends when the host is back.
    pub drained: bool,
    /// When the agent said it leaves.
    pub since: UnixMillis,
    /// The host is back (a beat of another agent session was seen); the record goes once a
    /// hold lease granted before can no longer run.
    pub returned: bool,
}
