//! A host going down cleanly (encoding v2): an agent stopped by systemd says why on its beats
//! ([`LeaveKind`]), and the leader answers with what the fleet's shutdown policy makes of it
//! ([`LeaveAnswer`]): frozen in place under a long lease, drained first, or failed over.

use serde::{Deserialize, Serialize};

/// Why the agent stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LeaveKind {
    /// Only the agent restarts (a package upgrade, `systemctl restart`): the host and its
    /// guests keep running.
    Restart,
    /// The host reboots.
    Reboot,
    /// The host powers off (or halts).
    PowerOff,
}

impl LeaveKind {
    /// The kind in words (`a reboot`).
    pub fn describe(self) -> &'static str {
        match self {
            LeaveKind::Restart => "an agent restart",
            LeaveKind::Reboot => "a reboot",
            LeaveKind::PowerOff => "a power-off",
        }
    }
}

/// What the fleet does with a leaving host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LeaveAction {
    /// Its guests stay, frozen: the host is not fenced nor its guests recovered until the hold
    /// lease ends; started again when it is back.
    Freeze,
    /// It is drained first (a maintenance that ends when it is back), then frozen like
    /// [`LeaveAction::Freeze`] for whatever could not move.
    Drain,
    /// Nothing special: fenced once its lease ends, its HA guests recovered elsewhere.
    Failover,
}

/// The leader's answer to a leaving agent, on the heartbeat's acknowledgement.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeaveAnswer {
    /// What the fleet does.
    pub action: LeaveAction,
    /// The agent may go now (the ack's lease is the hold lease); `false`: keep beating (a
    /// drain is under way).
    pub go: bool,
    /// Managed guests still on the host.
    pub left: u32,
    /// In words, for the agent's log.
    pub message: String,
}
