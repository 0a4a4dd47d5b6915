//! Host liveness (docs/design/fencing.md): from what the leader heard of each host's agent,
//! which hosts have become unreachable and which are proven fenced, and what a host that beats
//! again becomes.
//!
//! ```text
//!  online ── no beat for unreachable_after ──▶ unreachable ── fence proof ──▶ fenced
//!    ▲                                            │                             │
//!    └──────────── a beat (heartbeats resumed) ───┘                             │
//!    └──────────── a beat (back after fencing: a new lease, guests stay where they are) ─┘
//! ```
//!
//! **The fence proof** (safety rules 2 and 3). An agent's lease ends `lease` after the send time
//! of its last acknowledged beat, on its own clock, and the agent has stopped its HA guests
//! before that end (or its guard resets the host at that end). This member acknowledged that
//! beat after it arrived, so in real time the lease ends at most `lease × (1 + drift)` after
//! this member's acknowledgement. A beat some other leader acknowledged was acknowledged before
//! this member's election (that leader confirmed its quorum after the beat arrived, and a
//! member of that quorum voted for this member only later), so it ends at most as long after
//! this member started leading. Hence, with `margin` for the scheduling of this decision:
//!
//! ```text
//!  fenced at  max(last acknowledgement by this member, start of this leadership)
//!             + lease × (1 + drift) + margin
//! ```
//!
//! Nothing here reads a clock: the caller passes the leader's monotonic milliseconds.

use std::collections::BTreeMap;

use protocol::NodeId;
use protocol::fleet::{Host, HostState};

/// The timing of liveness decisions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LivenessConfig {
    /// The lease granted with each acknowledged beat, in milliseconds.
    pub lease_ms: u64,
    /// Silence after which a host is shown unreachable (nothing moves yet).
    pub unreachable_after_ms: u64,
    /// How much faster than this member's clock an agent's clock may run out a lease, in
    /// thousandths.
    pub drift_permille: u64,
    /// Added to the wait for the time between the decision and its effects.
    pub margin_ms: u64,
}

impl LivenessConfig {
    /// The defaults: a 10 s lease, unreachable after 3 missed one-second beats, 5 % drift and a
    /// 0.5 s margin (fenced 11 s after the last acknowledgement).
    pub const DEFAULT: LivenessConfig = LivenessConfig {
        lease_ms: protocol::timing::HOST_LEASE_MS,
        unreachable_after_ms: protocol::timing::UNREACHABLE_AFTER_MS,
        drift_permille: 50,
        margin_ms: 500,
    };

    /// How long after the last acknowledgement (or the start of the leadership) a silent host
    /// is proven fenced: `lease × (1 + drift) + margin`.
    pub fn fence_wait_ms(&self) -> u64 {
        let drift = self.lease_ms.saturating_mul(self.drift_permille) / 1000;
        self.lease_ms
            .saturating_add(drift)
            .saturating_add(self.margin_ms)
    }

    /// How long after an election a host that this leader has not heard beat yet, but heard
    /// by another way, is still not shown unreachable: agents find a new leader only once their
    /// beat to the old one timed out (up to 5 s) and a follower named the new one. Half the
    /// lease: such a host, if it never beats, is still shown unreachable well before the fence
    /// proof can hold, which counts from the election regardless.
    pub fn new_leader_grace_ms(&self) -> u64 {
        self.lease_ms / 2
    }

    /// Checks the knobs against each other: a host must be shown unreachable before it can be
    /// fenced, and the drift must stay plausible.
    pub fn check(&self) -> Result<(), String> {
        if self.unreachable_after_ms == 0 || self.unreachable_after_ms >= self.lease_ms {
            return Err(format!(
                "unreachable_after ({} ms) must be above 0 and below the lease ({} ms)",
                self.unreachable_after_ms, self.lease_ms
            ));
        }
        if self.drift_permille > 500 {
            return Err(format!(
                "drift ({} ‰) must be at most 500 ‰",
                self.drift_permille
            ));
        }
        Ok(())
    }
}

/// What the leader heard of one host's agent, on its monotonic clock (milliseconds).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sighting {
    /// When its last beat arrived.
    pub last_beat_ms: u64,
    /// When this member last acknowledged one of its beats (granted it a lease).
    pub last_ack_ms: Option<u64>,
}

/// The leader's clock and leadership.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Watch {
    /// When this member started leading.
    pub leading_since_ms: u64,
    /// Now.
    pub now_ms: u64,
    /// Hosts whose agent this member heard just now by another way than a beat (every agent
    /// renews its VIP leases with every member, leader or not, at least every second): alive
    /// and connected, only not beating this leader yet.
    pub heard_elsewhere: std::collections::BTreeSet<NodeId>,
}

/// One decided change of a host's state (committed as `SetHostLiveness`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transition {
    /// The host.
    pub host: NodeId,
    /// The state it was decided from (the command's compare-and-set).
    pub expected: HostState,
    /// The new state.
    pub to: HostState,
    /// Why, in words an operator reads in `host ls` and the events.
    pub reason: String,
}

/// The liveness transitions due now, in host order.
///
/// Online and joining hosts silent for `unreachable_after` become unreachable; unreachable
/// hosts become fenced once the fence proof holds (module docs). Hosts in maintenance are
/// left to the operator; fenced and removed hosts change only when they beat again
/// ([`back_online`]). `holds` are the leases of hosts that left cleanly (the state's leaving
/// records, in ms): such a host's lease is counted as the longer of its hold and the
/// heartbeat lease, so a frozen host is not fenced before its hold ends.
pub fn plan(
    hosts: &BTreeMap<NodeId, Host>,
    seen: &BTreeMap<NodeId, Sighting>,
    holds: &BTreeMap<NodeId, u64>,
    watch: &Watch,
    cfg: &LivenessConfig,
) -> Vec<Transition> {
    let mut out = Vec::new();
    for host in hosts.values() {
        let sighting = seen.get(&host.id);
        let held;
        let cfg = match holds.get(&host.id) {
            Some(&hold) if hold > cfg.lease_ms => {
                held = LivenessConfig {
                    lease_ms: hold,
                    ..*cfg
                };
                &held
            }
            _ => cfg,
        };
        match host.state {
            HostState::Online | HostState::Joining => {
                let elsewhere = watch.heard_elsewhere.contains(&host.id);
                if let Some(reason) = silence(sighting, elsewhere, watch, cfg) {
                    out.push(Transition {
                        host: host.id,
                        expected: host.state,
                        to: HostState::Unreachable,
                        reason,
                    });
                }
            }
            HostState::Unreachable => {
                if let Some(reason) = fence_proof(sighting, watch, cfg) {
                    out.push(Transition {
                        host: host.id,
                        expected: HostState::Unreachable,
                        to: HostState::Fenced,
                        reason,
                    });
                }
            }
            HostState::Fenced | HostState::Maintenance | HostState::Removed => {}
        }
    }
    out
}

/// Why the host counts as unreachable now, if it does.
///
/// A host that has not beaten this leader yet but is `heard_elsewhere` gets the new leader's
/// grace ([`LivenessConfig::new_leader_grace_ms`]): an election must never bring a healthy,
/// connected host near a fence. A host that did beat this leader and stopped gets none: one
/// whose beats fail while its renewals get through is in trouble all the same (its lease
/// runs out), and its guests must be recovered.
fn silence(
    sighting: Option<&Sighting>,
    heard_elsewhere: bool,
    watch: &Watch,
    cfg: &LivenessConfig,
) -> Option<String> {
    let (from, heard) = match sighting {
        Some(s) => (s.last_beat_ms, true),
        None => (watch.leading_since_ms, false),
    };
    let silent = watch.now_ms.saturating_sub(from);
    if silent < cfg.unreachable_after_ms
        || (!heard && heard_elsewhere && silent < cfg.new_leader_grace_ms())
    {
        return None;
    }
    Some(if heard {
        format!(
            "no heartbeat for {} (unreachable after {})",
            secs(silent),
            secs(cfg.unreachable_after_ms)
        )
    } else {
        format!(
            "no heartbeat since this coordinator became leader {} ago",
            secs(silent)
        )
    })
}

/// Why the host's lease has provably ended now, if it has.
fn fence_proof(sighting: Option<&Sighting>, watch: &Watch, cfg: &LivenessConfig) -> Option<String> {
    let acked = sighting.and_then(|s| s.last_ack_ms);
    let from = acked.map_or(watch.leading_since_ms, |a| a.max(watch.leading_since_ms));
    let since = watch.now_ms.saturating_sub(from);
    if since < cfg.fence_wait_ms() {
        return None;
    }
    let wait = format!(
        "lease {} + {} % drift + {} margin",
        secs(cfg.lease_ms),
        permille_as_percent(cfg.drift_permille),
        secs(cfg.margin_ms)
    );
    Some(match acked {
        Some(_) => format!(
            "lease expired: the last lease was granted {} ago ({wait}); the agent stopped its HA \
             guests before its end or its guard reset the host",
            secs(since)
        ),
        None => format!(
            "lease expired: no lease granted since this coordinator became leader {} ago \
             ({wait}); any earlier lease has ended",
            secs(since)
        ),
    })
}

/// What a host that beats again (and was acknowledged) becomes: online from joining,
/// unreachable or fenced; `None` when nothing changes (online, maintenance, removed).
pub fn back_online(host: NodeId, state: HostState) -> Option<Transition> {
    let reason = match state {
        HostState::Joining => "reporting: first inventory received",
        HostState::Unreachable => "heartbeats resumed",
        HostState::Fenced => {
            "back after fencing: a new lease; guests recovered elsewhere stay there"
        }
        HostState::Online | HostState::Maintenance | HostState::Removed => return None,
    };
    Some(Transition {
        host,
        expected: state,
        to: HostState::Online,
        reason: reason.to_string(),
    })
}

/// Milliseconds as seconds with one decimal (`3.2 s`).
fn secs(ms: u64) -> String {
    format!("{}.{} s", ms / 1000, (ms % 1000) / 100)
}

/// Thousandths as a percentage (`5`, `2.5`).
fn permille_as_percent(permille: u64) -> String {
    if permille.is_multiple_of(10) {
        (permille / 10).to_string()
    } else {
        format!("{}.{}", permille / 10, permille % 10)
    }
}

#[cfg(test)]
mod tests;
