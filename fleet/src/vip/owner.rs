//! Who should own a VIP: the leader's pure decision, from the replicated owner and what the
//! agents report (each eligible host: its interface exists and its health checks are up) and
//! whether the owner still renews its lease. The decision only *chooses*; safety (never two
//! holders) is the lease's job ([`super::lease`]), so a decision taken on a stale view can
//! delay a move but never make a second holder.
//!
//! Rules, keepalived's where it has one:
//! - a VIP with no owner goes to the best eligible host (`Initial`);
//! - an owner that stopped renewing loses it to the best eligible host (`OwnerLost`), or to
//!   nobody if none is eligible;
//! - an owner that is no longer eligible (interface gone, check failed) hands it to the best
//!   eligible host (`HealthFailed`); if there is none it keeps it, as a keepalived master whose
//!   track script fails keeps the address when no backup can take it;
//! - with preemption on, a host preferred over the owner takes it back once it has been
//!   eligible for the preemption delay (`Preempted`); off (the default) the owner keeps it, so
//!   a VIP does not bounce when a preferred host flaps.
//!
//! "Best" is the highest priority, then the lowest host id, so every leader picks the same host.

use std::fmt;

use protocol::NodeId;
use protocol::fleet::UnixMillis;

/// One host that may hold the VIP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Candidate {
    /// The host.
    pub host: NodeId,
    /// Its preference (higher wins).
    pub priority: u32,
    /// Its interface exists and its checks are up, as its agent last reported.
    pub eligible: bool,
    /// Since when it has been eligible without a break (for preemption).
    pub eligible_since: UnixMillis,
}

/// What the leader knows of one VIP.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VipView {
    /// The replicated owner.
    pub owner: Option<NodeId>,
    /// Whether the owner renewed its lease within the last lease (its agent is alive).
    pub owner_renewing: bool,
    /// The hosts the spec allows, with what their agents report.
    pub candidates: Vec<Candidate>,
    /// Preemption delay, or `None` when preemption is off.
    pub preempt_after_ms: Option<u64>,
}

/// Why the owner changes (each change is an event with this reason).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MoveReason {
    /// The VIP had no owner.
    Initial,
    /// The owner stopped renewing its lease.
    OwnerLost,
    /// The owner is no longer eligible.
    HealthFailed,
    /// A preferred host is eligible again.
    Preempted,
}

impl fmt::Display for MoveReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            MoveReason::Initial => "no owner yet",
            MoveReason::OwnerLost => "owner lost (stopped renewing its lease)",
            MoveReason::HealthFailed => "owner no longer eligible (interface or health check)",
            MoveReason::Preempted => "preempted by a preferred host",
        })
    }
}

/// The leader's decision for one VIP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Nothing changes.
    Keep,
    /// Hand the VIP to `to`.
    Move {
        /// The new owner.
        to: NodeId,
        /// Why.
        reason: MoveReason,
    },
    /// Nobody can hold it: the owner is lost and no host is eligible.
    Unassign,
}

fn best<'a>(candidates: impl Iterator<Item = &'a Candidate>) -> Option<&'a Candidate> {
    candidates
        .filter(|c| c.eligible)
        .min_by_key(|c| (std::cmp::Reverse(c.priority), c.host))
}

/// The decision for `view` at `now`.
pub fn decide(view: &VipView, now: UnixMillis) -> Decision {
    let Some(owner) = view.owner else {
        return best(view.candidates.iter()).map_or(Decision::Keep, |c| Decision::Move {
            to: c.host,
            reason: MoveReason::Initial,
        });
    };
    let others = || view.candidates.iter().filter(move |c| c.host != owner);
    if !view.owner_renewing {
        return best(others()).map_or(Decision::Unassign, |c| Decision::Move {
            to: c.host,
            reason: MoveReason::OwnerLost,
        });
    }
    let mine = view.candidates.iter().find(|c| c.host == owner);
    if !mine.is_some_and(|c| c.eligible) {
        return best(others()).map_or(Decision::Keep, |c| Decision::Move {
            to: c.host,
            reason: MoveReason::HealthFailed,
        });
    }
    let (Some(delay), Some(mine)) = (view.preempt_after_ms, mine) else {
        return Decision::Keep;
    };
    match best(others()) {
        Some(c) if c.priority > mine.priority && now.saturating_sub(c.eligible_since) >= delay => {
            Decision::Move {
                to: c.host,
                reason: MoveReason::Preempted,
            }
        }
        _ => Decision::Keep,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(host: NodeId, priority: u32, eligible: bool) -> Candidate {
        Candidate {
            host,
            priority,
            eligible,
            eligible_since: 1_000,
        }
    }

    fn view(owner: Option<NodeId>, renewing: bool, candidates: Vec<Candidate>) -> VipView {
        VipView {
            owner,
            owner_renewing: renewing,
            candidates,
            preempt_after_ms: None,
        }
    }

    fn moved(to: NodeId, reason: MoveReason) -> Decision {
        Decision::Move { to, reason }
    }

    #[test]
    fn an_unowned_vip_goes_to_the_preferred_eligible_host_the_same_on_every_leader() {
        let hosts = vec![host(3, 100, true), host(2, 100, true), host(1, 200, false)];
        assert_eq!(
            decide(&view(None, false, hosts), 5_000),
            moved(2, MoveReason::Initial),
            "the ineligible favourite is skipped; ties go to the lowest id"
        );
        assert_eq!(
            decide(&view(None, false, vec![host(1, 9, false)]), 0),
            Decision::Keep
        );
    }

    #[test]
    fn a_lost_owner_is_replaced_or_the_vip_unassigned() {
        let hosts = vec![host(1, 200, true), host(2, 100, true)];
        assert_eq!(
            decide(&view(Some(1), false, hosts.clone()), 0),
            moved(2, MoveReason::OwnerLost)
        );
        assert_eq!(
            decide(
                &view(
                    Some(1),
                    false,
                    vec![host(1, 200, true), host(2, 100, false)]
                ),
                0
            ),
            Decision::Unassign
        );
        assert_eq!(decide(&view(Some(1), true, hosts), 0), Decision::Keep);
    }

    #[test]
    fn an_ineligible_owner_hands_over_when_someone_can_take_it_and_keeps_it_otherwise() {
        let failing = vec![host(1, 200, false), host(2, 100, true)];
        assert_eq!(
            decide(&view(Some(1), true, failing), 0),
            moved(2, MoveReason::HealthFailed)
        );
        let alone = vec![host(1, 200, false), host(2, 100, false)];
        assert_eq!(decide(&view(Some(1), true, alone), 0), Decision::Keep);
        // An owner the spec no longer lists is not eligible.
        assert_eq!(
            decide(&view(Some(9), true, vec![host(2, 1, true)]), 0),
            moved(2, MoveReason::HealthFailed)
        );
    }

    #[test]
    fn preemption_is_off_by_default_and_waits_its_delay_when_on() {
        let hosts = vec![host(1, 100, true), host(2, 200, true)];
        let mut v = view(Some(1), true, hosts);
        assert_eq!(
            decide(&v, 1_000_000),
            Decision::Keep,
            "no bouncing by default"
        );
        v.preempt_after_ms = Some(30_000);
        assert_eq!(decide(&v, 1_000 + 29_999), Decision::Keep);
        assert_eq!(decide(&v, 1_000 + 30_000), moved(2, MoveReason::Preempted));
        // Only a strictly preferred host preempts.
        v.candidates[1].priority = 100;
        assert_eq!(decide(&v, 1_000_000), Decision::Keep);
    }
}
