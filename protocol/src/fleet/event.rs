//! The fleet's event log: what changed, when, and why, for `pvefleet events`. Sequence numbers
//! only grow, so a reader can follow the log with "events after N" even as old entries are
//! dropped from its bounded window.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::UnixMillis;

/// One entry of the event log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Event {
    /// Position in the log: 1 for the first event ever, then +1 each; never reused.
    pub seq: u64,
    /// When it happened (the proposer's clock).
    pub at: UnixMillis,
    /// Routine or worth attention.
    pub level: EventLevel,
    /// What kind of object it is about.
    pub kind: EventKind,
    /// The object's name or id.
    pub subject: String,
    /// What happened, for people.
    pub message: String,
}

/// How much an event deserves attention.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EventLevel {
    /// A normal change.
    Info,
    /// Something failed or needs the operator.
    Warning,
}

/// The kind of object an event is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    /// A VM.
    Vm,
    /// A PVE host.
    Host,
    /// A coordinator member.
    Member,
    /// A join token.
    Token,
    /// An IP pool.
    Pool,
    /// A VMID range.
    VmidRange,
    /// A virtual IP.
    Vip,
    /// The cluster settings.
    Settings,
    /// An operator identity (encoding v2 and later; see `admin::Events`'s encoding at v1).
    Admin,
}

impl EventKind {
    /// The snake-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::Vm => "vm",
            EventKind::Host => "host",
            EventKind::Member => "member",
            EventKind::Token => "token",
            EventKind::Pool => "pool",
            EventKind::VmidRange => "vmid_range",
            EventKind::Vip => "vip",
            EventKind::Settings => "settings",
            EventKind::Admin => "admin",
        }
    }
}

impl fmt::Display for EventKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
