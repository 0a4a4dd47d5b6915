//! Which hosts the run's own events have disturbed, and since when each is whole again: the
//! ground truth rules 6 and 7 of [`super::invariants`] judge the fleet against. Pure: the
//! runner tells it every played event with the hosts it resolved to.
//!
//! A host is *disturbed* while its power is off, its agent is killed, stopped or frozen, or
//! any of its links is cut or lossy (a cut of its own, one way or both, a cut link to a peer,
//! random loss). A reset disturbs it at that instant. Stopping or killing the coordinator
//! member on a host does not disturb the host: its agent still runs and reaches the other
//! members; a leader change must not cost a healthy host anything (docs/scenarios.md).
//!
//! A host is *healthy* at `t` over a window `w` when it is not disturbed now and was not
//! disturbed at any time in `[t − w, t]`.

use std::collections::{BTreeMap, BTreeSet};

use super::model::Action;

/// What the run has done to its hosts so far.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Disturbance {
    /// Hosts powered off (or shut down) and not powered on since.
    off: BTreeSet<String>,
    /// Hosts whose agent was killed, stopped or frozen and not restarted or thawed since.
    agent_down: BTreeSet<String>,
    /// Hosts with a cut, one-way cut or loss of their own.
    links: BTreeSet<String>,
    /// Single links cut, as (lower, higher) host name.
    cut_links: BTreeSet<(String, String)>,
    /// When each host was last disturbed (the end of its last disturbance, or its start while
    /// it lasts).
    last: BTreeMap<String, i64>,
}

impl Disturbance {
    /// The hosts disturbed now.
    pub fn disturbed(&self) -> BTreeSet<String> {
        let mut all: BTreeSet<String> = self
            .off
            .iter()
            .chain(&self.agent_down)
            .chain(&self.links)
            .cloned()
            .collect();
        for (a, b) in &self.cut_links {
            all.insert(a.clone());
            all.insert(b.clone());
        }
        all
    }

    /// Event `action`, played at `t_ms` on `host` (and `peer`, the other end of a cut link).
    pub fn played(&mut self, t_ms: i64, action: &Action, host: Option<&str>, peer: Option<&str>) {
        let before = self.disturbed();
        let h = host.unwrap_or_default().to_string();
        match action {
            Action::PowerOff(_) | Action::Shutdown(..) => {
                self.off.insert(h);
            }
            Action::PowerOn(_) => {
                self.off.remove(&h);
                self.agent_down.remove(&h);
            }
            Action::Reset(_) => {
                self.off.remove(&h);
                self.agent_down.remove(&h);
                self.last.insert(h, t_ms);
            }
            Action::Partition(_) | Action::PartitionOneWay(..) | Action::Lossy(..) => {
                self.links.insert(h);
            }
            Action::CutLink(..) => {
                let p = peer.unwrap_or_default().to_string();
                let pair = if h <= p { (h, p) } else { (p, h) };
                self.cut_links.insert(pair);
            }
            Action::Heal(Some(_)) => {
                self.links.remove(&h);
                self.cut_links.retain(|(a, b)| *a != h && *b != h);
            }
            Action::Heal(None) => {
                self.links.clear();
                self.cut_links.clear();
            }
            Action::KillAgent(_) | Action::StopAgent(_) | Action::FreezeAgent(_) => {
                self.agent_down.insert(h);
            }
            Action::RestartAgent(_) | Action::ThawAgent(_) => {
                self.agent_down.remove(&h);
            }
            _ => {}
        }
        let after = self.disturbed();
        for host in before.union(&after) {
            self.last.insert(host.clone(), t_ms);
        }
    }

    /// Whether the run powered `host` off (and not on since).
    pub fn is_off(&self, host: &str) -> bool {
        self.off.contains(host)
    }

    /// Whether `host` is undisturbed now and was over the `window_ms` before `t_ms`.
    pub fn healthy(&self, host: &str, t_ms: i64, window_ms: i64) -> bool {
        if self.disturbed().contains(host) {
            return false;
        }
        self.last
            .get(host)
            .is_none_or(|last| t_ms.saturating_sub(*last) >= window_ms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::model::Target;

    fn t(h: &str) -> Target {
        Target::Host(h.to_string())
    }

    #[test]
    fn a_host_is_healthy_again_only_a_window_after_its_last_disturbance_ends() {
        let mut d = Disturbance::default();
        assert!(d.healthy("a", 0, 8_000), "never disturbed");
        d.played(1_000, &Action::FreezeAgent(t("a")), Some("a"), None);
        assert!(!d.healthy("a", 60_000, 8_000), "frozen until thawed");
        d.played(5_000, &Action::ThawAgent(t("a")), Some("a"), None);
        assert!(!d.healthy("a", 12_999, 8_000));
        assert!(d.healthy("a", 13_000, 8_000));
        assert!(d.healthy("b", 5_000, 8_000), "another host is untouched");
    }

    #[test]
    fn a_cut_link_disturbs_both_ends_until_either_is_healed() {
        let mut d = Disturbance::default();
        d.played(0, &Action::CutLink(t("a"), t("b")), Some("a"), Some("b"));
        assert_eq!(d.disturbed(), BTreeSet::from(["a".into(), "b".into()]));
        d.played(1_000, &Action::Heal(Some(t("b"))), Some("b"), None);
        assert!(d.disturbed().is_empty());
        assert!(!d.healthy("a", 2_000, 8_000), "healed 1 s ago");
    }

    #[test]
    fn a_coordinator_kill_disturbs_no_host_and_a_reset_an_instant() {
        let mut d = Disturbance::default();
        d.played(0, &Action::KillCoordinator(t("a")), Some("a"), None);
        d.played(0, &Action::StopCoordinator(t("a")), Some("a"), None);
        assert!(d.healthy("a", 0, 8_000));
        d.played(10_000, &Action::Reset(t("b")), Some("b"), None);
        assert!(d.disturbed().is_empty());
        assert!(!d.healthy("b", 17_999, 8_000));
        assert!(d.healthy("b", 18_000, 8_000));
    }

    #[test]
    fn power_and_partitions_last_until_their_end_and_heal_all_ends_every_cut() {
        let mut d = Disturbance::default();
        d.played(0, &Action::PowerOff(t("a")), Some("a"), None);
        d.played(0, &Action::Partition(t("b")), Some("b"), None);
        d.played(0, &Action::Lossy(t("c"), 10), Some("c"), None);
        d.played(1_000, &Action::Heal(None), None, None);
        assert_eq!(d.disturbed(), BTreeSet::from(["a".into()]));
        d.played(2_000, &Action::PowerOn(t("a")), Some("a"), None);
        assert!(d.disturbed().is_empty());
        assert!(d.healthy("c", 9_000, 8_000) && !d.healthy("a", 9_000, 8_000));
    }
}
