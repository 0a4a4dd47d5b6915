//! The safety rules checked on every sample (docs/scenarios.md, "Invariants"), as a pure fold
//! over the sequence of samples: [`Invariants::observe`] takes the next sample and answers the
//! violations it shows.
//!
//! 1. **One runner per VM**: over every simulator of the scenario, at most one running guest
//!    carries a fleet VM's name.
//! 2. **No recovery without fencing**: when a VM's fleet host changes from H while H is not
//!    online (nor in maintenance: a drain is a live migration H's agent makes), H is `fenced`
//!    in that sample (or was in the sample before). The sampler reads
//!    the VMs before the hosts: a move it sees happened before the host read, and the fence
//!    came before the move, so a racing read cannot fake a violation. A move seen while H is
//!    online is no recovery (a live relocation after failed starts, or H came back).
//! 3. **Desired state respected**: a VM that must be stopped (desired `stopped`, HA `stopped`
//!    or `disabled`) does not run in PVE, once it had [`STOP_GRACE_MS`] to stop after the
//!    change; a VM with HA `ignored` is never moved by the fleet.
//! 4. **One VIP owner**: at most one host holds each VIP, as the admin API reports holders.
//! 5. **One rebalancing move at a time**: at most one VM is migrating for automatic
//!    rebalancing in any sample (the storm guard of docs/design/maintenance.md).
//! 6. **No healthy host marked unreachable**: a host the run has not disturbed for
//!    [`HEALTHY_WINDOW_MS`] ([`Disturbance`]) never turns unreachable or fenced. Leader
//!    changes (a member killed or stopped) do not disturb any host.
//! 7. **A VIP is held**: no VIP goes without a holder for more than [`VIP_UNHELD_BOUND_MS`]
//!    while the fleet answers (a majority) and a host the VIP admits is online and healthy.
//! 8. **Linearizable**: the history of the run's writing clients (`[fleet] clients`) is
//!    linearizable (judged at the end, [`crate::linearizability`]).
//! 9. **Acknowledged writes kept, once**: every address allocation a client saw acknowledged
//!    is in its pool at the end, and none is there twice (judged at the end).
//!
//! The sampler reads PVE before the fleet: a guest seen running was running before the
//! desired state read after it, so a `vm start` racing the reads cannot fake rule 3.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use protocol::fleet::{HostState, MigrationPurpose};
use protocol::spec::HaState;
use serde::Serialize;

use super::disturbance::Disturbance;
use super::sample::{FleetSample, Sample};

/// How long a VM whose desired state became stopped may still run (the stop under way).
pub const STOP_GRACE_MS: i64 = 20_000;
/// How long a host must have been left alone to count as healthy (rules 6 and 7): the fleet
/// shows a silent host unreachable after 3 s, and an agent whose links come back may take up
/// to 5 s to reconnect.
pub const HEALTHY_WINDOW_MS: i64 = 8_000;
/// How long a VIP may go without a holder, as the leader reports holders, while it could be
/// held (rule 7): a dead owner is replaced within about half a second (docs/design/vips.md),
/// the leader's view of the new claim and the 200 ms samples add to that, and an election
/// (about 1 s) with it.
pub const VIP_UNHELD_BOUND_MS: i64 = 3_000;

/// One of the safety rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Invariant {
    /// Rule 1.
    OneRunner,
    /// Rule 2.
    NoRecoveryWithoutFencing,
    /// Rule 3.
    DesiredState,
    /// Rule 4.
    OneVipOwner,
    /// Rule 5.
    OneRebalanceMove,
    /// Rule 6.
    HealthyHostReachable,
    /// Rule 7.
    VipHeld,
    /// Rule 8.
    Linearizable,
    /// Rule 9.
    AcknowledgedWrites,
}

impl Invariant {
    /// Every rule, in order.
    pub const ALL: [Invariant; 9] = [
        Invariant::OneRunner,
        Invariant::NoRecoveryWithoutFencing,
        Invariant::DesiredState,
        Invariant::OneVipOwner,
        Invariant::OneRebalanceMove,
        Invariant::HealthyHostReachable,
        Invariant::VipHeld,
        Invariant::Linearizable,
        Invariant::AcknowledgedWrites,
    ];

    /// The rule in words.
    pub fn title(self) -> &'static str {
        match self {
            Invariant::OneRunner => "one runner per VM",
            Invariant::NoRecoveryWithoutFencing => "no recovery without fencing",
            Invariant::DesiredState => "desired state respected",
            Invariant::OneVipOwner => "one VIP owner",
            Invariant::OneRebalanceMove => "one rebalancing move at a time",
            Invariant::HealthyHostReachable => "no healthy host marked unreachable",
            Invariant::VipHeld => "a VIP is held while it can be",
            Invariant::Linearizable => "client history linearizable",
            Invariant::AcknowledgedWrites => "acknowledged writes kept, once",
        }
    }
}

impl fmt::Display for Invariant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.title())
    }
}

/// A sample that breaks a rule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Violation {
    /// The rule.
    pub invariant: Invariant,
    /// The sample's time, ms after t=0.
    pub t_ms: i64,
    /// What was seen.
    pub detail: String,
}

/// The checker's memory of the samples so far.
#[derive(Debug, Clone)]
pub struct Invariants {
    /// The fleet's VMs.
    vms: Vec<String>,
    /// The last sample in which the fleet answered.
    last_fleet: Option<FleetSample>,
    /// Since when each VM must be stopped (`i64::MIN`: since before t=0).
    stopped_since: BTreeMap<String, i64>,
    /// Since when each VIP has had no holder while it could have one (rule 7), and whether
    /// that stretch was reported already.
    unheld_since: BTreeMap<String, (i64, bool)>,
}

impl Invariants {
    /// A checker for the fleet VMs `vms`; `stopped_at_start` must be stopped from t=0 (they
    /// converged stopped before it).
    pub fn new(vms: Vec<String>, stopped_at_start: &BTreeSet<String>) -> Invariants {
        Invariants {
            stopped_since: stopped_at_start
                .iter()
                .map(|n| (n.clone(), i64::MIN))
                .collect(),
            vms,
            last_fleet: None,
            unheld_since: BTreeMap::new(),
        }
    }

    /// The violations `sample` shows, given the samples before it and what the run has done
    /// to its hosts.
    pub fn observe(&mut self, sample: &Sample, disturbance: &Disturbance) -> Vec<Violation> {
        let mut out = Vec::new();
        let violation = |invariant, detail: String| Violation {
            invariant,
            t_ms: sample.t_ms,
            detail,
        };
        // 1. One runner per VM, from the ground truth.
        for name in &self.vms {
            let mut runners: Vec<String> = sample
                .pve
                .guests
                .iter()
                .filter(|g| g.running && g.name.as_deref() == Some(name.as_str()))
                .map(|g| format!("{} (VMID {}, {})", g.node, g.vmid, g.sim))
                .collect();
            if runners.len() > 1 {
                runners.sort();
                out.push(violation(
                    Invariant::OneRunner,
                    format!("{name} runs on {}", runners.join(" and ")),
                ));
            }
        }
        // 4, as a client sees it: never two hosts answering one request for a VIP.
        for (vip, a) in &sample.answers {
            if a.most.len() > 1 {
                out.push(violation(
                    Invariant::OneVipOwner,
                    format!(
                        "VIP {vip}: {} answered one ARP request for it",
                        a.most.join(" and ")
                    ),
                ));
            }
        }
        if let Some(fleet) = &sample.fleet {
            for name in &self.vms {
                let must_stop = fleet.vms.get(name).is_some_and(|v| v.must_be_stopped());
                if !must_stop {
                    self.stopped_since.remove(name);
                } else {
                    self.stopped_since
                        .entry(name.clone())
                        .or_insert(sample.t_ms);
                }
            }
            if let Some(prev) = &self.last_fleet {
                out.extend(
                    moves(prev, fleet)
                        .into_iter()
                        .map(|(invariant, detail)| violation(invariant, detail)),
                );
                // 6. A healthy host never turns unreachable.
                for (name, host) in &fleet.hosts {
                    let lost =
                        |s: HostState| matches!(s, HostState::Unreachable | HostState::Fenced);
                    let was = prev.hosts.get(name).map(|h| h.state);
                    if lost(host.state)
                        && !was.is_some_and(lost)
                        && disturbance.healthy(name, sample.t_ms, HEALTHY_WINDOW_MS)
                    {
                        out.push(violation(
                            Invariant::HealthyHostReachable,
                            format!(
                                "{name} turned {} ({}) though the run left it alone for {} s",
                                host.state,
                                host.reason,
                                HEALTHY_WINDOW_MS / 1000
                            ),
                        ));
                    }
                }
            }
            // 7. A VIP that could be held is held: answered for on the hosts' network when
            // they hold VIPs for real, else held as the leader reports.
            for (vip, reported) in &fleet.vips {
                let holders = sample.answers.get(vip).map_or(reported, |a| &a.most);
                let holdable = fleet.vip_hosts.get(vip).is_some_and(|hosts| {
                    hosts.iter().any(|h| {
                        fleet
                            .hosts
                            .get(h)
                            .is_some_and(|s| s.state == HostState::Online)
                            && disturbance.healthy(h, sample.t_ms, HEALTHY_WINDOW_MS)
                    })
                });
                if !holders.is_empty() || !holdable {
                    self.unheld_since.remove(vip);
                    continue;
                }
                let (since, said) = self
                    .unheld_since
                    .entry(vip.clone())
                    .or_insert((sample.t_ms, false));
                if sample.t_ms - *since > VIP_UNHELD_BOUND_MS && !*said {
                    *said = true;
                    let how = if sample.answers.contains_key(vip) {
                        "no host has answered ARP for it"
                    } else {
                        "it has had no holder"
                    };
                    out.push(violation(
                        Invariant::VipHeld,
                        format!(
                            "VIP {vip}: {how} for {:.1} s while a healthy host it admits was \
                             online",
                            (sample.t_ms - *since) as f64 / 1000.0
                        ),
                    ));
                }
            }
            for (vip, holders) in &fleet.vips {
                if holders.len() > 1 {
                    out.push(violation(
                        Invariant::OneVipOwner,
                        format!("VIP {vip} is held by {}", holders.join(" and ")),
                    ));
                }
            }
            let mut rebalancing: Vec<&str> = fleet
                .vms
                .iter()
                .filter(|(_, v)| v.migrating == Some(MigrationPurpose::Rebalance))
                .map(|(n, _)| n.as_str())
                .collect();
            if rebalancing.len() > 1 {
                rebalancing.sort_unstable();
                out.push(violation(
                    Invariant::OneRebalanceMove,
                    format!("{} migrate for rebalancing at once", rebalancing.join(", ")),
                ));
            }
            self.last_fleet = Some(fleet.clone());
        } else {
            // No answer: perhaps no majority, when a VIP need not be held.
            self.unheld_since.clear();
        }
        // 3. Stopped stays stopped (PVE's truth against the last known desired state).
        for (name, since) in &self.stopped_since {
            let nodes = sample.pve.running_nodes(name);
            if nodes.is_empty() || sample.t_ms.saturating_sub(*since) < STOP_GRACE_MS {
                continue;
            }
            let since = if *since == i64::MIN {
                "since the start".to_string()
            } else {
                format!("for {:.1} s", (sample.t_ms - since) as f64 / 1000.0)
            };
            out.push(violation(
                Invariant::DesiredState,
                format!(
                    "{name} must be stopped ({since}) but runs on {}",
                    nodes.join(", ")
                ),
            ));
        }
        out
    }
}

/// The moves between two fleet samples that break rules 2 and 3.
fn moves(prev: &FleetSample, next: &FleetSample) -> Vec<(Invariant, String)> {
    let mut out = Vec::new();
    for (name, vm) in &next.vms {
        let Some(before) = prev.vms.get(name) else {
            continue;
        };
        let (Some(from), Some(to)) = (&before.host, &vm.host) else {
            continue;
        };
        if from == to {
            continue;
        }
        let state_then = prev.hosts.get(from).map(|h| h.state);
        let state_now = next.hosts.get(from).map(|h| h.state);
        let fenced = state_now == Some(HostState::Fenced) || state_then == Some(HostState::Fenced);
        // Online or in maintenance now: a live move its agent made (a migration, a drain, a
        // relocation after failed starts), or H came back between the samples.
        let live = matches!(state_now, Some(HostState::Online | HostState::Maintenance));
        if !live && before.ha == Some(HaState::Ignored) && vm.ha == Some(HaState::Ignored) {
            out.push((
                Invariant::DesiredState,
                format!("{name} has HA state ignored but the fleet moved it from {from} to {to}"),
            ));
        }
        if !fenced && !live {
            let shown = |s: Option<HostState>| s.map_or("unknown", HostState::as_str);
            out.push((
                Invariant::NoRecoveryWithoutFencing,
                format!(
                    "{name} moved from {from} to {to} while {from} is {} (was {}), not fenced",
                    shown(state_now),
                    shown(state_then)
                ),
            ));
        }
    }
    out
}

/// Every violation of a whole run, in order (the fold of [`Invariants::observe`]).
pub fn check_all(
    vms: Vec<String>,
    stopped_at_start: &BTreeSet<String>,
    samples: &[Sample],
) -> Vec<Violation> {
    let mut checker = Invariants::new(vms, stopped_at_start);
    let alone = Disturbance::default();
    samples
        .iter()
        .flat_map(|s| checker.observe(s, &alone))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::sample::VmSample;
    use super::super::sample::fixtures::*;
    use super::*;
    use protocol::fleet::HostState::{Fenced, Online, Unreachable};
    use protocol::spec::DesiredState;

    fn names() -> Vec<String> {
        vec!["web-1".to_string()]
    }

    fn check(samples: &[Sample]) -> Vec<Violation> {
        check_all(names(), &BTreeSet::new(), samples)
    }

    #[test]
    fn two_running_copies_break_rule_one_at_the_sample_that_shows_them() {
        let hosts = [("pve-a", Online), ("pve-b", Online)];
        let vms = [("web-1", vm("pve-a"))];
        let samples = [
            sample(0, vec![guest("web-1", 100, "pve-a", true)], &hosts, &vms),
            sample(
                200,
                vec![
                    guest("web-1", 100, "pve-a", true),
                    guest("web-1", 101, "pve-b", true),
                ],
                &hosts,
                &vms,
            ),
        ];
        let v = check(&samples);
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].invariant, Invariant::OneRunner);
        assert_eq!(v[0].t_ms, 200);
        assert!(
            v[0].detail.contains("pve-a (VMID 100, alpha) and pve-b"),
            "{v:?}"
        );
    }

    #[test]
    fn a_move_off_a_fenced_host_is_a_recovery_and_off_an_unreachable_one_a_violation() {
        let before = sample(
            0,
            vec![],
            &[("pve-a", Unreachable)],
            &[("web-1", vm("pve-a"))],
        );
        let fenced = sample(200, vec![], &[("pve-a", Fenced)], &[("web-1", vm("pve-b"))]);
        assert!(check(&[before.clone(), fenced]).is_empty());
        let unfenced = sample(
            200,
            vec![],
            &[("pve-a", Unreachable)],
            &[("web-1", vm("pve-b"))],
        );
        let v = check(&[before, unfenced]);
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].invariant, Invariant::NoRecoveryWithoutFencing);
        assert!(v[0].detail.contains("while pve-a is unreachable"), "{v:?}");
    }

    #[test]
    fn a_move_between_online_hosts_is_a_live_relocation() {
        let hosts = [("pve-a", Online), ("pve-b", Online)];
        let samples = [
            sample(0, vec![], &hosts, &[("web-1", vm("pve-a"))]),
            sample(200, vec![], &hosts, &[("web-1", vm("pve-b"))]),
        ];
        assert!(check(&samples).is_empty());
    }

    #[test]
    fn a_sample_without_the_fleet_is_skipped_for_moves() {
        let hosts = [("pve-a", Fenced)];
        let mut gap = sample(200, vec![], &hosts, &[]);
        gap.fleet = None;
        let samples = [
            sample(
                0,
                vec![],
                &[("pve-a", Unreachable)],
                &[("web-1", vm("pve-a"))],
            ),
            gap,
            sample(400, vec![], &hosts, &[("web-1", vm("pve-b"))]),
        ];
        assert!(check(&samples).is_empty());
    }

    #[test]
    fn an_ignored_vm_moved_by_the_fleet_breaks_rule_three() {
        let mut ignored = vm("pve-a");
        ignored.ha = Some(HaState::Ignored);
        let mut moved = ignored.clone();
        moved.host = Some("pve-b".into());
        let hosts = [("pve-a", Fenced)];
        let v = check(&[
            sample(0, vec![], &hosts, &[("web-1", ignored)]),
            sample(200, vec![], &hosts, &[("web-1", moved)]),
        ]);
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].invariant, Invariant::DesiredState);
    }

    #[test]
    fn a_stopped_vm_may_run_only_during_the_grace_after_its_stop() {
        let mut stopped = vm("pve-a");
        stopped.desired = DesiredState::Stopped;
        let running = vec![guest("web-1", 100, "pve-a", true)];
        let hosts = [("pve-a", Online)];
        let samples = [
            sample(0, running.clone(), &hosts, &[("web-1", vm("pve-a"))]),
            sample(1000, running.clone(), &hosts, &[("web-1", stopped.clone())]),
            sample(
                1000 + STOP_GRACE_MS - 1,
                running.clone(),
                &hosts,
                &[("web-1", stopped.clone())],
            ),
            sample(
                1000 + STOP_GRACE_MS,
                running.clone(),
                &hosts,
                &[("web-1", stopped.clone())],
            ),
        ];
        let v = check(&samples);
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].t_ms, 1000 + STOP_GRACE_MS);
        // Stopped from the start: no grace at all.
        let from_start = BTreeSet::from(["web-1".to_string()]);
        let v = check_all(
            names(),
            &from_start,
            &[sample(0, running, &hosts, &[("web-1", stopped)])],
        );
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].detail.contains("since the start"), "{v:?}");
    }

    #[test]
    fn two_vip_holders_break_rule_four() {
        let mut s = sample(0, vec![], &[], &[]);
        if let Some(f) = s.fleet.as_mut() {
            f.vips
                .insert("web".into(), vec!["pve-a".into(), "pve-b".into()]);
        }
        let v = check(&[s]);
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].invariant, Invariant::OneVipOwner);
    }

    #[test]
    fn two_rebalancing_moves_at_once_break_rule_five_and_other_moves_do_not() {
        let moving = |purpose| VmSample {
            migrating: Some(purpose),
            ..vm("pve-a")
        };
        let hosts = [("pve-a", HostState::Online), ("pve-b", HostState::Online)];
        // Four drains and one rebalancing move: fine.
        let calm = sample(
            0,
            vec![],
            &hosts,
            &[
                ("web-1", moving(MigrationPurpose::Drain)),
                ("web-2", moving(MigrationPurpose::Drain)),
                ("web-3", moving(MigrationPurpose::Rebalance)),
            ],
        );
        assert!(check(std::slice::from_ref(&calm)).is_empty());
        let two = sample(
            1_000,
            vec![],
            &hosts,
            &[
                ("web-1", moving(MigrationPurpose::Rebalance)),
                ("web-3", moving(MigrationPurpose::Rebalance)),
            ],
        );
        let v = check(&[calm, two]);
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].invariant, Invariant::OneRebalanceMove);
        assert_eq!(v[0].t_ms, 1_000);
        assert!(v[0].detail.contains("web-1, web-3"), "{v:?}");
    }

    #[test]
    fn a_host_left_alone_that_turns_unreachable_breaks_rule_six_and_a_disturbed_one_does_not() {
        use crate::scenario::model::{Action, Target};
        let online = sample(10_000, vec![], &[("pve-a", Online)], &[]);
        let lost = sample(10_200, vec![], &[("pve-a", Unreachable)], &[]);
        let mut checker = Invariants::new(names(), &BTreeSet::new());
        let alone = Disturbance::default();
        assert!(checker.observe(&online, &alone).is_empty());
        let v = checker.observe(&lost, &alone);
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].invariant, Invariant::HealthyHostReachable);
        // Still unreachable in the next sample: one violation per fall, not per sample.
        let still = sample(10_400, vec![], &[("pve-a", Unreachable)], &[]);
        assert!(checker.observe(&still, &alone).is_empty());
        // A host frozen 5 s ago and thawed since is not yet healthy.
        let mut frozen = Disturbance::default();
        let a = Target::Host("pve-a".into());
        frozen.played(5_000, &Action::FreezeAgent(a.clone()), Some("pve-a"), None);
        frozen.played(6_000, &Action::ThawAgent(a), Some("pve-a"), None);
        let mut checker = Invariants::new(names(), &BTreeSet::new());
        assert!(checker.observe(&online, &frozen).is_empty());
        assert!(checker.observe(&lost, &frozen).is_empty());
    }

    #[test]
    fn a_vip_unheld_beyond_its_bound_while_a_healthy_host_could_hold_it_breaks_rule_seven() {
        let at = |t: i64, holders: Vec<String>, state| {
            let mut s = sample(t, vec![], &[("pve-a", state)], &[]);
            if let Some(f) = s.fleet.as_mut() {
                f.vips.insert("web".into(), holders);
                f.vip_hosts.insert("web".into(), vec!["pve-a".into()]);
            }
            s
        };
        let alone = Disturbance::default();
        let mut checker = Invariants::new(names(), &BTreeSet::new());
        let mut seen = Vec::new();
        for t in (0..=VIP_UNHELD_BOUND_MS + 400).step_by(200) {
            seen.extend(checker.observe(&at(t, vec![], Online), &alone));
        }
        assert_eq!(seen.len(), 1, "{seen:?}");
        assert_eq!(seen[0].invariant, Invariant::VipHeld);
        assert!(seen[0].t_ms > VIP_UNHELD_BOUND_MS, "{seen:?}");
        // Held again, then unheld while its only host is not online: no violation.
        let mut checker = Invariants::new(names(), &BTreeSet::new());
        assert!(
            checker
                .observe(&at(0, vec!["pve-a".into()], Online), &alone)
                .is_empty()
        );
        for t in (200..=VIP_UNHELD_BOUND_MS * 3).step_by(200) {
            assert!(
                checker
                    .observe(&at(t, vec![], Unreachable), &alone)
                    .iter()
                    .all(|v| v.invariant != Invariant::VipHeld)
            );
        }
    }

    #[test]
    fn two_hosts_answering_one_arp_request_break_rule_four_even_without_a_leader() {
        let mut s = sample(1000, vec![], &[], &[]);
        s.fleet = None;
        s.answers.insert(
            "web".into(),
            super::super::sample::VipAnswerSample {
                now: vec!["pve-b".into()],
                most: vec!["pve-a".into(), "pve-b".into()],
                asked: 10,
            },
        );
        let mut checker = Invariants::new(names(), &BTreeSet::new());
        let v = checker.observe(&s, &Disturbance::default());
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].invariant, Invariant::OneVipOwner);
        assert!(v[0].detail.contains("pve-a and pve-b answered"), "{v:?}");
    }

    #[test]
    fn with_hosts_holding_vips_for_real_rule_seven_asks_who_answers_not_the_leader() {
        // The leader says pve-a holds it, but nobody answers: unheld.
        let at = |t: i64, answered: Vec<String>| {
            let mut s = sample(t, vec![], &[("pve-a", Online)], &[]);
            if let Some(f) = s.fleet.as_mut() {
                f.vips.insert("web".into(), vec!["pve-a".into()]);
                f.vip_hosts.insert("web".into(), vec!["pve-a".into()]);
            }
            s.answers.insert(
                "web".into(),
                super::super::sample::VipAnswerSample {
                    now: answered.clone(),
                    most: answered,
                    asked: 10,
                },
            );
            s
        };
        let alone = Disturbance::default();
        let mut checker = Invariants::new(names(), &BTreeSet::new());
        let mut seen = Vec::new();
        for t in (0..=VIP_UNHELD_BOUND_MS + 400).step_by(200) {
            seen.extend(checker.observe(&at(t, vec![]), &alone));
        }
        assert_eq!(seen.len(), 1, "{seen:?}");
        assert_eq!(seen[0].invariant, Invariant::VipHeld);
        assert!(seen[0].detail.contains("answered ARP"), "{seen:?}");
        let mut checker = Invariants::new(names(), &BTreeSet::new());
        for t in (0..=VIP_UNHELD_BOUND_MS * 2).step_by(200) {
            assert!(
                checker
                    .observe(&at(t, vec!["pve-a".into()]), &alone)
                    .is_empty()
            );
        }
    }
}
