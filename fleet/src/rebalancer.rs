//! Automatic rebalancing (`[settings.rebalance] enabled = true`), as a pure decision the leader
//! takes on every reconciler pass: at most one [`Command::StartMigration`] for
//! [`MigrationPurpose::Rebalance`], and the hold it keeps in memory until the next pass.
//!
//! The rules, each a guard against a migration storm (docs/design/maintenance.md,
//! "Rebalancing"):
//! - **Threshold and hold**: a PVE cluster is acted on only once its imbalance
//!   ([`crate::rebalance::cluster_imbalance`]) has stayed over `threshold_pct` on every pass for
//!   `hold_s`; a pass under it forgets the hold, so a spike shorter than the hold moves nothing.
//! - **Calm**: a cluster with a host not online (down, fenced, in maintenance), a migration that
//!   is not rebalancing's own, or a recovery under way is left alone and its hold forgotten:
//!   its load is about to change by other means, and judging it now would fight them.
//! - **One move in flight**, fleet-wide (the state machine refuses a second one, whatever a
//!   leader believes); the hold survives the move, so a cluster still out of balance when it
//!   ends gets the next move at once, and one back in balance stops.
//! - **Margin**: a move must lower the imbalance by `min_gain_pct`: every move lowers it, so
//!   rebalancing converges and never moves a guest back and forth under a steady load.
//! - **Rules**: the move is [`crate::rebalance::plan_in`]'s first, so it passes every filter and
//!   placement rule, and a pinned guest, an HA `ignored` one, or one waiting to go home is never
//!   moved.
//!
//! The hold is the leader's memory only: a new leader starts it again, which can only delay a
//! move.

use std::collections::BTreeMap;

use protocol::fleet::{HostState, MigrationPurpose, PVE_CLUSTER_LABEL, UnixMillis};

#[cfg(test)]
#[path = "rebalancer_tests.rs"]
mod tests;

use crate::rebalance::{self, RebalanceConfig};
use crate::scheduler::HostView;
use crate::state::{Command, FleetState};

/// Since when each PVE cluster has been out of balance, on the leader's monotonic clock (ms).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Hold {
    since: BTreeMap<String, u64>,
}

impl Hold {
    /// Since when `cluster` has been out of balance, if it is.
    pub fn since(&self, cluster: &str) -> Option<u64> {
        self.since.get(cluster).copied()
    }
}

/// One pass's decision.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    /// The hold to keep until the next pass.
    pub hold: Hold,
    /// The move to start now, if any.
    pub command: Option<Command>,
}

/// The decision of one pass at `mono_ms` (the hold's clock) and `now` (the command's time).
pub fn decide(
    state: &FleetState,
    views: &[HostView],
    hold: &Hold,
    mono_ms: u64,
    now: UnixMillis,
) -> Decision {
    let settings = &state.settings().rebalance;
    if !settings.enabled {
        return Decision {
            hold: Hold::default(),
            command: None,
        };
    }
    let cfg = RebalanceConfig {
        threshold_pct: f64::from(settings.threshold_pct),
        min_gain_pct: f64::from(settings.min_gain_pct),
        max_moves: 1,
    };
    let hold_ms = u64::from(settings.hold_s) * 1000;
    let in_flight = state
        .migrations()
        .values()
        .any(|m| m.purpose == MigrationPurpose::Rebalance);
    let mut next = Hold::default();
    let mut command = None;
    for cluster in rebalance::clusters(views) {
        let disturbed = match disturbance(state, views, &cluster) {
            Disturbance::None => false,
            Disturbance::OwnMove => {
                // Rebalancing's own move: its hold is spent. A cluster still out of balance
                // when the move ends waits a whole new hold before the next one (PVE's auto
                // rebalance counts its rounds again), so a storm cannot build up move on move.
                continue;
            }
            Disturbance::Other => true,
        };
        let out =
            rebalance::cluster_imbalance(views, &cluster).is_some_and(|i| i > cfg.threshold_pct);
        if disturbed || !out {
            continue;
        }
        let since = hold.since(&cluster).unwrap_or(mono_ms);
        next.since.insert(cluster.clone(), since);
        if in_flight || command.is_some() || mono_ms.saturating_sub(since) < hold_ms {
            continue;
        }
        let Some(m) = rebalance::plan_in(state, views.to_vec(), &cfg, Some(&cluster))
            .into_iter()
            .next()
        else {
            continue;
        };
        let Some(to) = views.iter().find(|v| v.name == m.to).map(|v| v.id) else {
            continue;
        };
        command = Some(Command::StartMigration {
            name: m.vm,
            to,
            purpose: MigrationPurpose::Rebalance,
            now,
        });
    }
    Decision {
        hold: next,
        command,
    }
}

/// What keeps a cluster from being judged.
enum Disturbance {
    /// Nothing: it is calm.
    None,
    /// Only rebalancing's own move.
    OwnMove,
    /// A host not online, another migration, a recovery.
    Other,
}

fn disturbance(state: &FleetState, views: &[HostView], cluster: &str) -> Disturbance {
    let in_cluster = |h: &protocol::NodeId| {
        state
            .hosts()
            .get(h)
            .is_some_and(|h| h.labels.get(PVE_CLUSTER_LABEL).map(String::as_str) == Some(cluster))
    };
    let hosts_calm = views
        .iter()
        .filter(|v| v.labels.get(PVE_CLUSTER_LABEL).map(String::as_str) == Some(cluster))
        .all(|v| v.state == HostState::Online);
    let recovering = state.recoveries().keys().any(|name| {
        state
            .vm(name)
            .and_then(|r| r.assignment.host)
            .is_some_and(|h| in_cluster(&h))
    });
    if !hosts_calm || recovering {
        return Disturbance::Other;
    }
    let mut own = false;
    for m in state.migrations().values() {
        if in_cluster(&m.from_host) || in_cluster(&m.to_host) {
            if m.purpose != MigrationPurpose::Rebalance {
                return Disturbance::Other;
            }
            own = true;
        }
    }
    if own {
        Disturbance::OwnMove
    } else {
        Disturbance::None
    }
}
