//! The leader's VIP pass: from the replicated state and what the agents told this member (who
//! renews, who claims which VIP, who is ready for which), the ownership changes to commit. Pure:
//! the coordinator's VIP manager gathers the [`Sightings`] and proposes the [`Move`]s.
//!
//! ```text
//!  state (VIPs, owners, epochs, hosts) ─┐
//!  sightings (renewals, claims, ready) ─┼─▶ per VIP: VipView ─▶ owner::decide ─▶ Move
//!  now, config ─────────────────────────┘
//! ```
//!
//! A candidate is a host the VIP's spec admits (by name; all hosts when the list is empty),
//! online in the state, whose agent renewed within a lease, is not stopping, and reported the
//! VIP ready ([`standings`] says why a host is not). Its
//! preference is its place in the spec's host list (first = preferred); with no list, every
//! host is equal and the lowest id wins. The owner counts as renewing while it claimed the
//! VIP at its epoch within `lost_after_ms`, and during `grant_grace_ms` after this member first
//! saw that epoch (a new owner learns of its grant at its next renewal).

use std::collections::{BTreeMap, BTreeSet};

use protocol::NodeId;
use protocol::fleet::{HostState, Vip};

use super::owner::{Candidate, Decision, VipView, decide};
use crate::state::FleetState;

/// What this member heard from the agents, on its monotonic clock (ms).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sightings {
    /// Per host: when its agent last renewed (any renewal, owner or not).
    pub renewed_at: BTreeMap<NodeId, u64>,
    /// Per (VIP, host): the last claim heard from the host, `(epoch, at)` (an owner claims
    /// its epoch, its standby the next).
    pub claims: BTreeMap<(String, NodeId), (u64, u64)>,
    /// Per (host, VIP): since when the host has reported it ready without a break.
    pub ready_since: BTreeMap<(NodeId, String), u64>,
    /// Per VIP: the epoch this member saw first and when (the grant grace counts from there).
    pub epoch_seen: BTreeMap<String, (u64, u64)>,
    /// Hosts whose agent is stopping: not candidates, and their VIPs are handed over.
    pub leaving: BTreeSet<NodeId>,
    /// Per VIP: the holder and epoch that released it (a stopped or moved-away owner).
    pub released: BTreeMap<String, (NodeId, u64)>,
    /// Per (host, VIP): why the host's agent says it cannot hold it.
    pub not_ready: BTreeMap<(NodeId, String), String>,
    /// Hosts whose agent only simulates holding.
    pub simulated: BTreeSet<NodeId>,
    /// Per VIP: whom this member vouches for now, `(holder, epoch)` (its own promises).
    pub vouched: BTreeMap<String, (NodeId, u64)>,
    /// Per (VIP, host): the last claim in which the host said it holds the VIP, `(epoch, at)`
    /// (an owner's or a standby's); a claim saying it does not removes it.
    pub holding: BTreeMap<(String, NodeId), (u64, u64)>,
}

impl Sightings {
    /// Whether `owner` claimed `vip` at `epoch` within `within_ms` of `now`.
    pub fn claimed(&self, vip: &str, owner: NodeId, epoch: u64, now: u64, within_ms: u64) -> bool {
        self.claims
            .get(&(vip.to_string(), owner))
            .is_some_and(|&(e, at)| e == epoch && now.saturating_sub(at) < within_ms)
    }

    /// Whether `host` said it holds `vip` at `epoch` in a claim within `within_ms` of `now`
    /// (and said nothing else since).
    pub fn holds(&self, vip: &str, host: NodeId, epoch: u64, now: u64, within_ms: u64) -> bool {
        self.holding
            .get(&(vip.to_string(), host))
            .is_some_and(|&(e, at)| e == epoch && now.saturating_sub(at) < within_ms)
    }

    /// Whether `vip`'s standby has taken it over: this member vouches for it at the next
    /// epoch, or it said it holds it there (a majority vouched for it).
    pub fn standby_took_over(&self, vip: &Vip, now: u64, within_ms: u64) -> Option<NodeId> {
        let name = &vip.spec.name;
        let next = vip.epoch + 1;
        vip.standby.filter(|&s| {
            self.vouched.get(name) == Some(&(s, next)) || self.holds(name, s, next, now, within_ms)
        })
    }
}

/// The manager's timing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ManageConfig {
    /// A host whose agent has not renewed for this long is not a candidate.
    pub alive_within_ms: u64,
    /// An owner that has not claimed its VIP for this long is lost (three renewals missed:
    /// the new owner is then committed before the old promises end, and takes over the moment
    /// the members may vouch for it).
    pub lost_after_ms: u64,
    /// How long a newly granted owner has to send its first claim.
    pub grant_grace_ms: u64,
    /// An owner whose claims say it has not held its VIP for this long, at an epoch known for
    /// longer than this plus the time a new owner may wait for the old promises (a lease and
    /// the drift wait), counts as lost: it asks, but a majority does not vouch for it (it is cut
    /// off from most members), so nobody holds the VIP.
    pub stuck_after_ms: u64,
    /// How long an unowned VIP waits for a host preferred over the best ready one to report
    /// its readiness (an agent with nothing to hold renews only every second): the first owner
    /// follows the spec's host order, as keepalived's first election follows priorities.
    pub first_owner_wait_ms: u64,
}

impl ManageConfig {
    /// The defaults, for the default lease (400 ms, renewals every 100 ms).
    pub const DEFAULT: ManageConfig = ManageConfig {
        alive_within_ms: 400,
        lost_after_ms: 300,
        grant_grace_ms: 400,
        stuck_after_ms: 1_000,
        first_owner_wait_ms: 1_500,
    };
}

/// One ownership change to commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Move {
    /// The VIP.
    pub vip: String,
    /// The new owner (`None`: nobody can hold it).
    pub to: Option<NodeId>,
    /// The epoch the decision was taken at (the commit is a compare-and-set on it).
    pub expected_epoch: u64,
    /// Why, for the event.
    pub reason: String,
}

/// The reason of a move after the owner released the VIP.
pub const RELEASED: &str = "released by its owner";
/// The reason of a move away from an owner whose agent is stopping.
pub const HANDED_OVER: &str = "handed over (its owner's agent is stopping)";
/// The reason of a move to the standby that took the VIP over.
pub const STANDBY_TOOK_OVER: &str =
    "owner lost (stopped renewing its lease): its standby took over";
/// The reason when the owner's host went into maintenance: handed over while it still holds
/// it (the same graceful move as an agent that stops).
pub const MAINTENANCE: &str = "owner's host is in maintenance: handed over";
/// The reason of a move away from an owner that asks but cannot hold its VIP.
pub const STUCK: &str =
    "owner cannot hold it (it renews, but a majority of members does not vouch for it)";
/// The reason when nobody can take a lost VIP.
pub const UNASSIGNED: &str =
    "owner lost (stopped renewing its lease) and no other host is eligible";

/// One host's standing for one VIP.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Standing {
    /// The host.
    pub host: NodeId,
    /// Its name.
    pub name: String,
    /// Its preference (higher wins).
    pub priority: u32,
    /// Why it cannot be handed the VIP now; `None` when it can.
    pub why_not: Option<String>,
    /// Since when it has been ready without a break (for preemption).
    pub ready_since: Option<u64>,
}

/// Every host `vip`'s spec admits, preferred first, with whether it could be handed the VIP
/// at `now` and why not.
pub fn standings(
    state: &FleetState,
    vip: &Vip,
    seen: &Sightings,
    now: u64,
    cfg: &ManageConfig,
) -> Vec<Standing> {
    let name = &vip.spec.name;
    let mut all: Vec<Standing> = state
        .hosts()
        .values()
        .filter_map(|h| {
            let priority = vip.spec.admits(&h.name, &h.effective_labels())?;
            let ready_since = seen.ready_since.get(&(h.id, name.clone())).copied();
            let why_not = if h.state != HostState::Online {
                Some(format!("host is {}", h.state))
            } else if seen.leaving.contains(&h.id) {
                Some("its agent is stopping".to_string())
            } else if let Some(at) = seen.renewed_at.get(&h.id) {
                let quiet = now.saturating_sub(*at);
                if quiet >= cfg.alive_within_ms {
                    Some(format!("its agent has not renewed for {quiet} ms"))
                } else if ready_since.is_none() {
                    Some(
                        seen.not_ready
                            .get(&(h.id, name.clone()))
                            .cloned()
                            .unwrap_or_else(|| "its agent does not report it ready".into()),
                    )
                } else {
                    None
                }
            } else {
                Some("its agent has not renewed since this member started".to_string())
            };
            Some(Standing {
                host: h.id,
                name: h.name.clone(),
                priority,
                why_not,
                ready_since,
            })
        })
        .collect();
    all.sort_by_key(|s| (std::cmp::Reverse(s.priority), s.host));
    all
}

/// A VIP's standby to commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StandbyChange {
    /// The VIP.
    pub vip: String,
    /// The new standby.
    pub standby: Option<NodeId>,
    /// The epoch it was chosen at.
    pub expected_epoch: u64,
}

/// The standbys to commit at `now`: for each owned VIP whose owner is renewing, the host the
/// owner would be replaced by (the best eligible other host), when it differs from the
/// recorded one. A VIP whose owner is not renewing keeps its standby (it may be taking over).
pub fn standbys(
    state: &FleetState,
    seen: &Sightings,
    now: u64,
    cfg: &ManageConfig,
) -> Vec<StandbyChange> {
    let mut changes = Vec::new();
    for (name, vip) in state.vips() {
        let Some(owner) = vip.owner else { continue };
        let took_over = seen
            .standby_took_over(vip, now, cfg.lost_after_ms)
            .is_some();
        if took_over || !seen.claimed(name, owner, vip.epoch, now, cfg.lost_after_ms) {
            continue;
        }
        let best = standings(state, vip, seen, now, cfg)
            .into_iter()
            .filter(|s| s.host != owner && s.why_not.is_none())
            .min_by_key(|s| (std::cmp::Reverse(s.priority), s.host))
            .map(|s| s.host);
        if best != vip.standby {
            changes.push(StandbyChange {
                vip: name.clone(),
                standby: best,
                expected_epoch: vip.epoch,
            });
        }
    }
    changes
}

/// The changes to commit at `now` (this member's monotonic ms).
pub fn plan(state: &FleetState, seen: &Sightings, now: u64, cfg: &ManageConfig) -> Vec<Move> {
    let within = |at: Option<&u64>, ms: u64| at.is_some_and(|&t| now.saturating_sub(t) < ms);
    let mut moves = Vec::new();
    for (name, vip) in state.vips() {
        // When this member first saw the current epoch: the last ownership change, as far as
        // this leadership knows.
        let epoch_at = seen
            .epoch_seen
            .get(name)
            .filter(|(epoch, _)| *epoch == vip.epoch)
            .map(|(_, at)| *at);
        let candidates: Vec<Candidate> = standings(state, vip, seen, now, cfg)
            .into_iter()
            .map(|s| Candidate {
                host: s.host,
                priority: s.priority,
                eligible: s.why_not.is_none(),
                // Preemption counts from the later of its readiness and the last move: a VIP
                // that just moved (its preferred owner lost it) does not bounce back at once.
                eligible_since: s.ready_since.unwrap_or(now).max(epoch_at.unwrap_or(0)),
            })
            .collect();
        let released = vip
            .owner
            .is_some_and(|owner| seen.released.get(name) == Some(&(owner, vip.epoch)));
        let granted = epoch_at.as_ref();
        // Asking without holding for longer than a new owner ever waits for its majority.
        let stuck = vip.owner.is_some_and(|owner| {
            let settle = cfg.stuck_after_ms + cfg.grant_grace_ms + cfg.alive_within_ms;
            granted.is_some_and(|&at| now.saturating_sub(at) >= settle)
                && !seen.holds(name, owner, vip.epoch, now, cfg.stuck_after_ms)
                && seen.claimed(name, owner, vip.epoch, now, cfg.lost_after_ms)
        });
        let owner_renewing = !released
            && !stuck
            && vip.owner.is_some_and(|owner| {
                seen.claimed(name, owner, vip.epoch, now, cfg.lost_after_ms)
                    || within(granted, cfg.grant_grace_ms)
            });
        let leaving = vip.owner.is_some_and(|o| seen.leaving.contains(&o));
        // The standby may already hold it (members vouch for it once the owner's promise
        // lapsed, leader or not): record that, rather than hand it to a third host that would
        // wait for the standby's lease in turn. Known from this member's own promise, or from
        // the standby saying it holds it (a majority without this member).
        if vip.owner.is_some()
            && let Some(standby) = seen.standby_took_over(vip, now, cfg.lost_after_ms)
        {
            moves.push(Move {
                vip: name.clone(),
                to: Some(standby),
                expected_epoch: vip.epoch,
                reason: STANDBY_TOOK_OVER.into(),
            });
            continue;
        }
        // No owner yet: a preferred host whose agent is alive but has not said whether it is
        // ready (it learns of the VIP at its next renewal) is waited for, a little.
        if vip.owner.is_none() && within(epoch_at.as_ref(), cfg.first_owner_wait_ms) {
            let order = |c: &Candidate| (std::cmp::Reverse(c.priority), c.host);
            let best = candidates
                .iter()
                .filter(|c| c.eligible)
                .min_by_key(|c| order(c));
            let unheard = candidates.iter().any(|c| {
                best.is_some_and(|b| order(c) < order(b))
                    && within(seen.renewed_at.get(&c.host), cfg.alive_within_ms)
                    && !seen.ready_since.contains_key(&(c.host, name.clone()))
                    && !seen.not_ready.contains_key(&(c.host, name.clone()))
            });
            if unheard {
                continue;
            }
        }
        let view = VipView {
            owner: vip.owner,
            owner_renewing,
            candidates,
            preempt_after_ms: vip
                .spec
                .preempt
                .then(|| vip.spec.preempt_delay_secs.saturating_mul(1000)),
        };
        let draining = vip.owner.is_some_and(|o| {
            state
                .hosts()
                .get(&o)
                .is_some_and(|h| h.state == HostState::Maintenance)
        });
        let (to, reason) = match (decide(&view, now), released, leaving || draining) {
            (Decision::Keep, _, _) => continue,
            (Decision::Move { to, .. }, true, _) => (Some(to), RELEASED.into()),
            (Decision::Unassign, true, _) => (None, RELEASED.into()),
            (Decision::Move { to, .. }, false, true) if draining => (Some(to), MAINTENANCE.into()),
            (Decision::Move { to, .. }, false, true) => (Some(to), HANDED_OVER.into()),
            (Decision::Move { to, .. }, false, false) if stuck => (Some(to), STUCK.into()),
            (Decision::Move { to, reason }, false, false) => (Some(to), reason.to_string()),
            (Decision::Unassign, false, _) => (None, UNASSIGNED.into()),
        };
        moves.push(Move {
            vip: name.clone(),
            to,
            expected_epoch: vip.epoch,
            reason,
        });
    }
    moves
}

#[cfg(test)]
mod tests {
    use protocol::fleet::Capacity;
    use protocol::spec::VipSpecV1;

    use super::*;
    use crate::state::{Command, CommandReply};

    const CFG: ManageConfig = ManageConfig::DEFAULT;

    struct Fleet {
        state: FleetState,
        index: u64,
    }

    impl Fleet {
        /// Hosts 11 (pve-a), 12 (pve-b), 13 (pve-c) online; VIP `api` over `hosts`.
        fn new(hosts: &[&str]) -> Fleet {
            let mut f = Fleet {
                state: FleetState::new(),
                index: 0,
            };
            for (id, name) in [(11, "pve-a"), (12, "pve-b"), (13, "pve-c")] {
                f.ok(Command::RegisterHost {
                    id,
                    name: name.into(),
                    labels: Default::default(),
                    capacity: Capacity::default(),
                    now: 1,
                });
                f.ok(Command::SetHostState {
                    id,
                    state: HostState::Online,
                    now: 1,
                });
            }
            f.ok(Command::PutVip {
                spec: VipSpecV1 {
                    name: "api".into(),
                    address: "10.0.0.10/24".into(),
                    interface: "vmbr0".into(),
                    hosts: hosts.iter().map(|h| (*h).to_string()).collect(),
                },
                now: 1,
            });
            f
        }

        fn ok(&mut self, cmd: Command) {
            self.index += 1;
            let reply = self.state.apply(self.index, cmd);
            assert!(!matches!(reply, CommandReply::Refused(_)), "{reply:?}");
        }

        fn own(&mut self, m: &Move) {
            self.ok(Command::MoveVip {
                name: m.vip.clone(),
                owner: m.to,
                expected_epoch: m.expected_epoch,
                reason: m.reason.clone(),
                now: 2,
            });
        }
    }

    /// Every host alive and ready at `at`.
    fn all_ready(at: u64) -> Sightings {
        let mut s = Sightings::default();
        for h in [11, 12, 13] {
            s.renewed_at.insert(h, at);
            s.ready_since.insert((h, "api".into()), at);
        }
        s
    }

    #[test]
    fn the_first_listed_ready_host_gets_an_unowned_vip() {
        let f = Fleet::new(&["pve-c", "pve-a"]);
        let moves = plan(&f.state, &all_ready(1_000), 1_050, &CFG);
        assert_eq!(
            moves,
            vec![Move {
                vip: "api".into(),
                to: Some(13),
                expected_epoch: 0,
                reason: "no owner yet".into()
            }]
        );
        // pve-b is not listed: it is never chosen, even alone.
        let mut seen = Sightings::default();
        seen.renewed_at.insert(12, 1_000);
        seen.ready_since.insert((12, "api".into()), 1_000);
        assert_eq!(plan(&f.state, &seen, 1_050, &CFG), vec![]);
    }

    #[test]
    fn a_host_whose_agent_went_quiet_or_is_not_ready_is_not_a_candidate() {
        let f = Fleet::new(&[]);
        let mut seen = all_ready(1_000);
        seen.renewed_at.insert(11, 500); // quiet for 550 ms at 1_050
        seen.ready_since.remove(&(12, "api".to_string()));
        let moves = plan(&f.state, &seen, 1_050, &CFG);
        assert_eq!(moves[0].to, Some(13), "{moves:?}");
    }

    #[test]
    fn an_owner_keeps_the_vip_while_it_claims_and_loses_it_three_renewals_after_its_last() {
        let mut f = Fleet::new(&[]);
        let moves = plan(&f.state, &all_ready(1_000), 1_000, &CFG);
        f.own(&moves[0]);
        assert_eq!(f.state.vips()["api"].owner, Some(11));
        let mut seen = all_ready(2_000);
        // Granted at 1_000 as this member saw it, never claimed: the grace runs out.
        seen.epoch_seen.insert("api".into(), (1, 1_000));
        assert_eq!(plan(&f.state, &seen, 1_399, &CFG), vec![]);
        let lost = plan(&f.state, &seen, 1_400, &CFG);
        assert_eq!(lost[0].to, Some(12));
        assert_eq!(lost[0].reason, "owner lost (stopped renewing its lease)");
        // Claiming at its epoch keeps it, for `lost_after_ms` after the last claim.
        seen.claims.insert(("api".into(), 11), (1, 1_900));
        assert_eq!(plan(&f.state, &seen, 2_199, &CFG), vec![]);
        assert_eq!(plan(&f.state, &seen, 2_200, &CFG)[0].to, Some(12));
        // A claim at an older epoch is not a claim of this grant.
        seen.claims.insert(("api".into(), 11), (0, 2_150));
        assert_eq!(plan(&f.state, &seen, 2_200, &CFG)[0].to, Some(12));
    }

    #[test]
    fn a_lost_owner_with_nobody_to_take_over_is_unassigned_and_an_unready_one_kept() {
        let mut f = Fleet::new(&["pve-a"]);
        let moves = plan(&f.state, &all_ready(1_000), 1_000, &CFG);
        f.own(&moves[0]);
        let mut seen = all_ready(1_000);
        seen.claims.insert(("api".into(), 11), (1, 1_000));
        // Its interface went away but nobody else is listed: it keeps the VIP.
        seen.ready_since.remove(&(11, "api".to_string()));
        assert_eq!(plan(&f.state, &seen, 1_100, &CFG), vec![]);
        let gone = plan(&f.state, &seen, 1_300, &CFG);
        assert_eq!(gone[0].to, None);
        assert_eq!(gone[0].expected_epoch, 1);
    }

    #[test]
    fn an_owner_that_is_not_ready_hands_over_to_a_ready_host() {
        let mut f = Fleet::new(&[]);
        let moves = plan(&f.state, &all_ready(1_000), 1_000, &CFG);
        f.own(&moves[0]);
        let mut seen = all_ready(1_000);
        seen.claims.insert(("api".into(), 11), (1, 1_000));
        seen.ready_since.remove(&(11, "api".to_string()));
        let m = plan(&f.state, &seen, 1_100, &CFG);
        assert_eq!(m[0].to, Some(12));
        assert_eq!(
            m[0].reason,
            "owner no longer eligible (interface or health check)"
        );
    }

    #[test]
    fn an_owner_whose_host_goes_into_maintenance_hands_over_and_it_is_never_chosen() {
        let mut f = Fleet::new(&[]);
        let moves = plan(&f.state, &all_ready(1_000), 1_000, &CFG);
        f.own(&moves[0]);
        assert_eq!(moves[0].to, Some(11));
        f.ok(Command::SetHostState {
            id: 11,
            state: HostState::Maintenance,
            now: 2,
        });
        let mut seen = all_ready(1_000);
        seen.claims.insert(("api".into(), 11), (1, 1_000));
        let m = plan(&f.state, &seen, 1_100, &CFG);
        assert_eq!(m[0].to, Some(12));
        assert_eq!(m[0].reason, MAINTENANCE);
    }

    #[test]
    fn a_leaving_owner_hands_over_and_a_leaving_host_is_never_chosen() {
        let mut f = Fleet::new(&[]);
        let mut seen = all_ready(1_000);
        seen.leaving.insert(11);
        let first = plan(&f.state, &seen, 1_000, &CFG);
        assert_eq!(first[0].to, Some(12), "pve-a is leaving: {first:?}");
        f.own(&first[0]);
        seen.claims.insert(("api".into(), 12), (1, 1_000));
        assert_eq!(plan(&f.state, &seen, 1_050, &CFG), vec![]);
        seen.leaving.insert(12);
        let moved = plan(&f.state, &seen, 1_050, &CFG);
        assert_eq!(moved[0].to, Some(13));
        assert_eq!(moved[0].reason, HANDED_OVER);
        // With nobody else ready it keeps it until it releases (or stops renewing).
        seen.ready_since.remove(&(13, "api".to_string()));
        assert_eq!(plan(&f.state, &seen, 1_050, &CFG), vec![]);
    }

    #[test]
    fn a_released_vip_moves_at_once_and_only_a_release_of_this_grant_counts() {
        let mut f = Fleet::new(&[]);
        let first = plan(&f.state, &all_ready(1_000), 1_000, &CFG);
        f.own(&first[0]);
        let mut seen = all_ready(1_000);
        seen.claims.insert(("api".into(), 11), (1, 1_000));
        seen.released.insert("api".into(), (11, 0));
        assert_eq!(plan(&f.state, &seen, 1_010, &CFG), vec![], "an older grant");
        seen.released.insert("api".into(), (11, 1));
        let moved = plan(&f.state, &seen, 1_010, &CFG);
        assert_eq!(
            (moved[0].to, moved[0].reason.as_str()),
            (Some(12), RELEASED)
        );
        seen.ready_since.clear();
        let gone = plan(&f.state, &seen, 1_010, &CFG);
        assert_eq!((gone[0].to, gone[0].reason.as_str()), (None, RELEASED));
    }

    #[test]
    fn labels_narrow_the_candidates_and_preemption_follows_the_spec() {
        let mut f = Fleet::new(&["pve-c", "pve-b", "pve-a"]);
        let mut spec = f.state.vips()["api"].spec.clone();
        spec.labels = [("zone".to_string(), "b".to_string())].into();
        f.ok(Command::ApplyVip {
            spec: spec.clone(),
            now: 2,
        });
        // No host carries zone=b: nobody may hold it.
        assert_eq!(plan(&f.state, &all_ready(1_000), 1_000, &CFG), vec![]);
        spec.labels.clear();
        spec.preempt = true;
        spec.preempt_delay_secs = 10;
        f.ok(Command::ApplyVip { spec, now: 3 });
        // pve-c (preferred) is not ready yet: pve-b gets it.
        let mut seen = all_ready(1_000);
        seen.ready_since.remove(&(13, "api".to_string()));
        let first = plan(&f.state, &seen, 1_000, &CFG);
        assert_eq!(first[0].to, Some(12));
        f.own(&first[0]);
        seen.claims.insert(("api".into(), 12), (1, 20_000));
        seen.renewed_at.insert(13, 20_000);
        seen.renewed_at.insert(12, 20_000);
        seen.ready_since.insert((13, "api".into()), 15_000);
        assert_eq!(
            plan(&f.state, &seen, 20_000, &CFG),
            vec![],
            "ready for 5 s only"
        );
        for h in [12, 13] {
            seen.renewed_at.insert(h, 24_990);
        }
        seen.claims.insert(("api".into(), 12), (1, 24_990));
        let back = plan(&f.state, &seen, 25_000, &CFG);
        assert_eq!(
            (back[0].to, back[0].reason.as_str()),
            (Some(13), "preempted by a preferred host")
        );
    }

    #[test]
    fn the_standby_is_the_best_other_ready_host_and_a_standby_vouched_for_is_recorded() {
        let mut f = Fleet::new(&["pve-a", "pve-b", "pve-c"]);
        let first = plan(&f.state, &all_ready(1_000), 1_000, &CFG);
        f.own(&first[0]);
        let mut seen = all_ready(1_000);
        // Not before the owner claims it: it may be taken over by then.
        assert_eq!(standbys(&f.state, &seen, 1_010, &CFG), vec![]);
        seen.claims.insert(("api".into(), 11), (1, 1_000));
        let chosen = standbys(&f.state, &seen, 1_010, &CFG);
        assert_eq!(
            chosen,
            vec![StandbyChange {
                vip: "api".into(),
                standby: Some(12),
                expected_epoch: 1
            }]
        );
        f.ok(Command::SetVipStandby {
            name: "api".into(),
            standby: Some(12),
            expected_epoch: 1,
        });
        assert_eq!(standbys(&f.state, &seen, 1_010, &CFG), vec![]);
        // pve-b is no longer ready: pve-c stands by instead.
        seen.ready_since.remove(&(12, "api".to_string()));
        assert_eq!(standbys(&f.state, &seen, 1_010, &CFG)[0].standby, Some(13));
        // This member vouches for the standby at the next epoch: it took over, the leader
        // records it even though the owner still asks (its claims are refused).
        seen.vouched.insert("api".into(), (12, 2));
        let moved = plan(&f.state, &seen, 1_010, &CFG);
        assert_eq!(
            (moved[0].to, moved[0].reason.as_str()),
            (Some(12), STANDBY_TOOK_OVER)
        );
        assert_eq!(standbys(&f.state, &seen, 1_010, &CFG), vec![]);
        f.own(&moved[0]);
        let vip = &f.state.vips()["api"];
        assert_eq!((vip.owner, vip.epoch, vip.standby), (Some(12), 2, None));
    }

    #[test]
    fn a_standby_that_says_it_holds_the_next_epoch_is_recorded_without_this_members_promise() {
        let mut f = Fleet::new(&["pve-a", "pve-b", "pve-c"]);
        let first = plan(&f.state, &all_ready(1_000), 1_000, &CFG);
        f.own(&first[0]);
        f.ok(Command::SetVipStandby {
            name: "api".into(),
            standby: Some(12),
            expected_epoch: 1,
        });
        let mut seen = all_ready(1_000);
        // The owner still claims here (it cannot hold: its other members vouch for pve-b).
        seen.claims.insert(("api".into(), 11), (1, 1_000));
        assert_eq!(plan(&f.state, &seen, 1_010, &CFG), vec![]);
        // A host that is not the standby, or an epoch that is not the next, says nothing.
        seen.holding.insert(("api".into(), 13), (2, 1_000));
        seen.holding.insert(("api".into(), 12), (1, 1_000));
        assert_eq!(plan(&f.state, &seen, 1_010, &CFG), vec![]);
        // Nor does an old word.
        seen.holding.insert(("api".into(), 12), (2, 600));
        assert_eq!(plan(&f.state, &seen, 1_010, &CFG), vec![]);
        seen.holding.insert(("api".into(), 12), (2, 1_000));
        let moved = plan(&f.state, &seen, 1_010, &CFG);
        assert_eq!(
            (moved[0].to, moved[0].reason.as_str()),
            (Some(12), STANDBY_TOOK_OVER)
        );
        assert_eq!(standbys(&f.state, &seen, 1_010, &CFG), vec![]);
    }

    #[test]
    fn a_vip_that_just_moved_is_not_preempted_back_before_the_delay() {
        let mut f = Fleet::new(&["pve-c", "pve-b", "pve-a"]);
        let mut spec = f.state.vips()["api"].spec.clone();
        spec.preempt = true;
        spec.preempt_delay_secs = 10;
        f.ok(Command::ApplyVip { spec, now: 3 });
        // pve-c (preferred, ready for long) held it and was lost: pve-b took it over at 50 s.
        let first = plan(&f.state, &all_ready(1_000), 1_000, &CFG);
        assert_eq!(first[0].to, Some(13));
        f.own(&first[0]);
        let lost = Move {
            vip: "api".into(),
            to: Some(12),
            expected_epoch: 1,
            reason: "owner lost".into(),
        };
        f.own(&lost);
        let mut seen = all_ready(1_000);
        seen.epoch_seen.insert("api".into(), (2, 50_000));
        // pve-c renews again 25 ms later (it was only cut off from the other members): not
        // preferred back at once, nor before the delay counted from the move.
        for t in [50_025, 59_999] {
            for h in [12, 13] {
                seen.renewed_at.insert(h, t);
            }
            seen.claims.insert(("api".into(), 12), (2, t));
            seen.holding.insert(("api".into(), 12), (2, t));
            assert_eq!(plan(&f.state, &seen, t, &CFG), vec![], "at {t}");
        }
        for h in [12, 13] {
            seen.renewed_at.insert(h, 60_000);
        }
        seen.claims.insert(("api".into(), 12), (2, 60_000));
        seen.holding.insert(("api".into(), 12), (2, 60_000));
        let back = plan(&f.state, &seen, 60_000, &CFG);
        assert_eq!(back[0].reason, "preempted by a preferred host");
    }

    #[test]
    fn an_owner_that_asks_but_cannot_hold_is_replaced() {
        let mut f = Fleet::new(&["pve-a", "pve-b", "pve-c"]);
        let first = plan(&f.state, &all_ready(1_000), 1_000, &CFG);
        f.own(&first[0]);
        let mut seen = all_ready(1_000);
        seen.epoch_seen.insert("api".into(), (1, 1_000));
        let settle = CFG.stuck_after_ms + CFG.grant_grace_ms + CFG.alive_within_ms;
        let renew = |seen: &mut Sightings, t: u64, held: bool| {
            for h in [11, 12, 13] {
                seen.renewed_at.insert(h, t);
            }
            seen.claims.insert(("api".into(), 11), (1, t));
            if held {
                seen.holding.insert(("api".into(), 11), (1, t));
            }
        };
        // A new owner waiting for its majority is left alone for a while.
        renew(&mut seen, 1_000 + settle - 1, false);
        assert_eq!(plan(&f.state, &seen, 1_000 + settle - 1, &CFG), vec![]);
        // It held, then stopped holding: kept for stuck_after, then replaced.
        renew(&mut seen, 5_000, true);
        assert_eq!(plan(&f.state, &seen, 5_000, &CFG), vec![]);
        renew(&mut seen, 5_999, false);
        assert_eq!(plan(&f.state, &seen, 5_999, &CFG), vec![]);
        renew(&mut seen, 6_000, false);
        let moved = plan(&f.state, &seen, 6_000, &CFG);
        assert_eq!((moved[0].to, moved[0].reason.as_str()), (Some(12), STUCK));
        // One that never held at all once the epoch is old enough.
        let mut seen = all_ready(1_000);
        seen.epoch_seen.insert("api".into(), (1, 1_000));
        renew(&mut seen, 1_000 + settle, false);
        assert_eq!(plan(&f.state, &seen, 1_000 + settle, &CFG)[0].reason, STUCK);
    }

    #[test]
    fn the_first_owner_waits_a_little_for_a_preferred_host_to_report() {
        let f = Fleet::new(&["pve-c", "pve-a", "pve-b"]);
        let mut seen = all_ready(1_000);
        seen.epoch_seen.insert("api".into(), (0, 1_000));
        // pve-c renews but has not reported on `api` yet: wait.
        seen.ready_since.remove(&(13, "api".to_string()));
        assert_eq!(plan(&f.state, &seen, 1_100, &CFG), vec![]);
        // It reports ready: it gets it, as the spec's order says.
        seen.ready_since.insert((13, "api".into()), 1_200);
        assert_eq!(plan(&f.state, &seen, 1_200, &CFG)[0].to, Some(13));
        // It reports not ready, or stays silent past the wait: the next one gets it.
        seen.ready_since.remove(&(13, "api".to_string()));
        seen.not_ready.insert((13, "api".into()), "no vmbr0".into());
        assert_eq!(plan(&f.state, &seen, 1_200, &CFG)[0].to, Some(11));
        seen.not_ready.clear();
        let late = 1_000 + CFG.first_owner_wait_ms;
        for h in [11, 12, 13] {
            seen.renewed_at.insert(h, late);
        }
        assert_eq!(plan(&f.state, &seen, late, &CFG)[0].to, Some(11));
    }
}
