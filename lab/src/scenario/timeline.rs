//! The timeline: what changed between consecutive samples, in lines an operator reads as they
//! happen (`+12.345s host pve-b online -> unreachable (no heartbeat for 3.0 s)`), beside the
//! scenario's own events and the fleet's events. Pure: [`Timeline::observe`] folds samples
//! into entries.

use std::collections::BTreeMap;

use protocol::fleet::{Event, EventLevel, HostState, MigrationPurpose};
use serde::Serialize;

use super::duration;
use super::sample::{FleetSample, PveGuest, PveSample, Sample};

/// What a timeline entry is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EntryKind {
    /// An event of the scenario, played.
    Scenario,
    /// A host's fleet state.
    Host,
    /// A VM in the fleet.
    Vm,
    /// A guest in PVE (the ground truth).
    Pve,
    /// An entry of the fleet's event log.
    FleetEvent,
    /// The runner's own remark (the fleet stopped answering, a process exited).
    Note,
    /// A broken invariant.
    Violation,
}

/// One line of the timeline.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TimelineEntry {
    /// When, in ms after t=0.
    pub t_ms: i64,
    /// What about.
    pub kind: EntryKind,
    /// What happened.
    pub text: String,
}

impl TimelineEntry {
    /// An entry.
    pub fn new(t_ms: i64, kind: EntryKind, text: impl Into<String>) -> TimelineEntry {
        TimelineEntry {
            t_ms,
            kind,
            text: text.into(),
        }
    }

    /// The line as printed: `+12.345s text`.
    pub fn line(&self) -> String {
        let sign = if self.t_ms < 0 { "" } else { "+" };
        format!("{sign}{} {}", duration::seconds(self.t_ms), self.text)
    }
}

/// The fleet event `event` as an entry; `t0_unix_ms` is t=0 on the wall clock.
pub fn fleet_event(event: &Event, t0_unix_ms: u64) -> TimelineEntry {
    let t_ms = i64::try_from(event.at).unwrap_or(i64::MAX) - i64::try_from(t0_unix_ms).unwrap_or(0);
    let level = match event.level {
        EventLevel::Info => "",
        EventLevel::Warning => " warning",
    };
    TimelineEntry::new(
        t_ms,
        EntryKind::FleetEvent,
        format!(
            "fleet{level}: {} {}: {}",
            event.kind, event.subject, event.message
        ),
    )
}

/// The memory of the previous samples.
#[derive(Debug, Clone, Default)]
pub struct Timeline {
    /// The last sample in which the fleet answered.
    last_fleet: Option<FleetSample>,
    /// The last PVE sample (unread simulators filled in from the one before).
    last_pve: Option<PveSample>,
    /// Whether the fleet answered in the last sample.
    answering: Option<bool>,
    /// Who answered ARP for each VIP in the last sample (hosts holding VIPs for real).
    answered: BTreeMap<String, Vec<String>>,
}

impl Timeline {
    /// A timeline before its first sample.
    pub fn new() -> Timeline {
        Timeline::default()
    }

    /// The entries `sample` brings: on the first one, where every VM is; after, the changes.
    pub fn observe(&mut self, sample: &Sample) -> Vec<TimelineEntry> {
        let t = sample.t_ms;
        let mut out = Vec::new();
        let pve = match &self.last_pve {
            Some(prev) => sample.pve.filled_from(prev),
            None => sample.pve.clone(),
        };
        match (&self.last_pve, self.answering) {
            (None, _) => out.push(TimelineEntry::new(t, EntryKind::Note, start(sample))),
            (Some(prev), _) => out.extend(pve_changes(t, prev, &pve)),
        }
        let answering = sample.fleet.is_some();
        if self.answering.is_some() && self.answering != Some(answering) {
            let text = if answering {
                "the fleet answers again"
            } else {
                "the fleet does not answer (no leader, or no quorum)"
            };
            out.push(TimelineEntry::new(t, EntryKind::Note, text));
        }
        if let Some(fleet) = &sample.fleet {
            if let Some(prev) = &self.last_fleet {
                out.extend(fleet_changes(t, prev, fleet));
            }
            self.last_fleet = Some(fleet.clone());
        }
        for (vip, a) in &sample.answers {
            let old = self.answered.get(vip).cloned().unwrap_or_default();
            if old != a.now {
                out.push(TimelineEntry::new(
                    t,
                    EntryKind::Vm,
                    format!(
                        "vip {vip} answered for by {} -> {} (ARP)",
                        hosts_text(&old),
                        hosts_text(&a.now)
                    ),
                ));
                self.answered.insert(vip.clone(), a.now.clone());
            }
        }
        self.answering = Some(answering);
        self.last_pve = Some(pve);
        out
    }
}

/// Hosts in words: `pve-a and pve-b`, or `nobody`.
fn hosts_text(hosts: &[String]) -> String {
    if hosts.is_empty() {
        "nobody".to_string()
    } else {
        hosts.join(" and ")
    }
}

/// Where every VM is at t=0.
fn start(sample: &Sample) -> String {
    let Some(fleet) = &sample.fleet else {
        return "start: the fleet does not answer".to_string();
    };
    let vms: Vec<String> = fleet
        .vms
        .iter()
        .map(|(name, v)| {
            format!(
                "{name} {} on {}",
                v.phase,
                v.host.as_deref().unwrap_or("no host")
            )
        })
        .collect();
    format!("start: {}", vms.join(", "))
}

fn guest_name(g: &PveGuest, prev: Option<&PveGuest>) -> String {
    g.name
        .clone()
        .or_else(|| prev.and_then(|p| p.name.clone()))
        .unwrap_or_else(|| format!("VMID {}", g.vmid))
}

fn pve_changes(t: i64, prev: &PveSample, next: &PveSample) -> Vec<TimelineEntry> {
    let key = |g: &PveGuest| (g.sim.clone(), g.vmid);
    let before: BTreeMap<_, &PveGuest> = prev.guests.iter().map(|g| (key(g), g)).collect();
    let after: BTreeMap<_, &PveGuest> = next.guests.iter().map(|g| (key(g), g)).collect();
    let mut out = Vec::new();
    let mut push = |text: String| out.push(TimelineEntry::new(t, EntryKind::Pve, text));
    for (k, g) in &after {
        let old = before.get(k).copied();
        let name = guest_name(g, old);
        let Some(old) = old else {
            let what = if g.running { "running" } else { "created" };
            push(format!("vm {name} {what} on {} (PVE)", g.node));
            continue;
        };
        if old.node != g.node {
            push(format!(
                "vm {name} config moved {} -> {} (PVE)",
                old.node, g.node
            ));
        }
        if old.running != g.running {
            let what = if g.running { "running" } else { "stopped" };
            push(format!("vm {name} {what} on {} (PVE)", g.node));
        }
        if old.lock != g.lock {
            match &g.lock {
                Some(lock) => push(format!("vm {name} locked ({lock}) on {} (PVE)", g.node)),
                None => push(format!("vm {name} unlocked on {} (PVE)", g.node)),
            }
        }
    }
    for (k, g) in &before {
        if !after.contains_key(k) {
            push(format!(
                "vm {} removed from {} (PVE)",
                guest_name(g, None),
                g.node
            ));
        }
    }
    out
}

fn fleet_changes(t: i64, prev: &FleetSample, next: &FleetSample) -> Vec<TimelineEntry> {
    let mut out = Vec::new();
    for (name, h) in &next.hosts {
        let Some(old) = prev.hosts.get(name) else {
            continue;
        };
        if old.state != h.state {
            let reason = if h.reason.is_empty() {
                String::new()
            } else {
                format!(" ({})", h.reason)
            };
            out.push(TimelineEntry::new(
                t,
                EntryKind::Host,
                format!("host {name} {} -> {}{reason}", old.state, h.state),
            ));
        }
    }
    for (name, holders) in &next.vips {
        let old = prev.vips.get(name).cloned().unwrap_or_default();
        if &old != holders {
            out.push(TimelineEntry::new(
                t,
                EntryKind::Vm,
                format!(
                    "vip {name} held by {} -> {}",
                    hosts_text(&old),
                    hosts_text(holders)
                ),
            ));
        }
    }
    for (name, v) in &next.vms {
        let Some(old) = prev.vms.get(name) else {
            continue;
        };
        let mut push = |text: String| out.push(TimelineEntry::new(t, EntryKind::Vm, text));
        if old.host != v.host {
            let from = old.host.as_deref().unwrap_or("no host");
            let fenced = old
                .host
                .as_ref()
                .and_then(|h| next.hosts.get(h))
                .is_some_and(|h| h.state == HostState::Fenced);
            // A move off a fenced host is a recovery; off a live one, a migration when one was
            // seen under way (named for its purpose), else a relocation (after failed starts).
            let why = match (fenced, old.migrating) {
                (true, _) => "recovered",
                (false, Some(MigrationPurpose::Operator)) => "migrated by an operator",
                (false, Some(MigrationPurpose::Drain)) => "drained for maintenance",
                (false, Some(MigrationPurpose::Home)) => "back home after maintenance",
                (false, Some(MigrationPurpose::Failback)) => "failback",
                (false, Some(MigrationPurpose::Rebalance)) => "rebalanced",
                (false, Some(MigrationPurpose::Gather)) => "gathered with its affinity group",
                (false, None) => "relocated",
            };
            push(format!(
                "vm {name} {from} -> {} ({why})",
                v.host.as_deref().unwrap_or("no host")
            ));
        }
        if old.phase != v.phase {
            let message = if v.message.is_empty() {
                String::new()
            } else {
                format!(": {}", v.message)
            };
            push(format!("vm {name} {} -> {}{message}", old.phase, v.phase));
        }
        match (&old.recovery, &v.recovery) {
            (None, Some(m)) => push(format!("vm {name} recovery: {m}")),
            (Some(a), Some(b)) if a != b => push(format!("vm {name} recovery: {b}")),
            (Some(_), None) => push(format!("vm {name} recovery over")),
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::sample::fixtures::*;
    use super::*;
    use protocol::fleet::HostState::{Fenced, Online, Unreachable};
    use protocol::fleet::{EventKind, VmPhase};

    fn texts(entries: &[TimelineEntry]) -> Vec<String> {
        entries.iter().map(TimelineEntry::line).collect()
    }

    #[test]
    fn host_states_vm_moves_and_pve_starts_become_lines() {
        let mut tl = Timeline::new();
        let first = tl.observe(&sample(
            0,
            vec![guest("web-1", 100, "pve-b", true)],
            &[("pve-b", Online), ("pve-c", Online)],
            &[("web-1", vm("pve-b"))],
        ));
        assert_eq!(texts(&first), ["+0.000s start: web-1 running on pve-b"]);
        let mut s = sample(
            12_345,
            vec![guest("web-1", 100, "pve-b", true)],
            &[("pve-b", Unreachable), ("pve-c", Online)],
            &[("web-1", vm("pve-b"))],
        );
        if let Some(f) = s.fleet.as_mut() {
            f.hosts.get_mut("pve-b").unwrap().reason = "missed beats".into();
        }
        assert_eq!(
            texts(&tl.observe(&s)),
            ["+12.345s host pve-b online -> unreachable (missed beats)"]
        );
        let mut moved = vm("pve-c");
        moved.phase = VmPhase::Provisioning;
        let s = sample(
            20_000,
            vec![guest("web-1", 100, "pve-c", true)],
            &[("pve-b", Fenced), ("pve-c", Online)],
            &[("web-1", moved)],
        );
        assert_eq!(
            texts(&tl.observe(&s)),
            [
                "+20.000s vm web-1 config moved pve-b -> pve-c (PVE)",
                "+20.000s host pve-b unreachable -> fenced",
                "+20.000s vm web-1 pve-b -> pve-c (recovered)",
                "+20.000s vm web-1 running -> provisioning",
            ]
        );
        // A move seen under way as a migration is named for its purpose.
        let mut moving = vm("pve-c");
        moving.migrating = Some(MigrationPurpose::Rebalance);
        tl.observe(&sample(
            21_000,
            vec![guest("web-1", 100, "pve-c", true)],
            &[("pve-b", Fenced), ("pve-c", Online)],
            &[("web-1", moving)],
        ));
        let s = sample(
            22_000,
            vec![guest("web-1", 100, "pve-b", true)],
            &[("pve-b", Online), ("pve-c", Online)],
            &[("web-1", vm("pve-b"))],
        );
        let lines = texts(&tl.observe(&s));
        assert!(
            lines.contains(&"+22.000s vm web-1 pve-c -> pve-b (rebalanced)".to_string()),
            "{lines:?}"
        );
    }

    #[test]
    fn the_fleet_going_silent_and_back_is_noted_once_each() {
        let mut tl = Timeline::new();
        let hosts = [("pve-a", Online)];
        tl.observe(&sample(0, vec![], &hosts, &[]));
        let mut silent = sample(200, vec![], &hosts, &[]);
        silent.fleet = None;
        assert_eq!(
            texts(&tl.observe(&silent)),
            ["+0.200s the fleet does not answer (no leader, or no quorum)"]
        );
        assert!(tl.observe(&silent).is_empty());
        assert_eq!(
            texts(&tl.observe(&sample(600, vec![], &hosts, &[]))),
            ["+0.600s the fleet answers again"]
        );
    }

    #[test]
    fn a_stopped_guest_and_a_lock_show_as_pve_lines() {
        let mut tl = Timeline::new();
        tl.observe(&sample(0, vec![guest("db-1", 7, "pve-a", true)], &[], &[]));
        let mut locked = guest("db-1", 7, "pve-a", false);
        locked.lock = Some("backup".into());
        assert_eq!(
            texts(&tl.observe(&sample(1000, vec![locked], &[], &[]))),
            [
                "+1.000s vm db-1 stopped on pve-a (PVE)",
                "+1.000s vm db-1 locked (backup) on pve-a (PVE)",
            ]
        );
    }

    #[test]
    fn fleet_events_are_placed_on_the_scenario_clock() {
        let event = Event {
            seq: 9,
            at: 1_000_012_345,
            level: EventLevel::Warning,
            kind: EventKind::Vm,
            subject: "web-1".into(),
            message: "recovering from fenced host pve-b onto pve-c".into(),
        };
        assert_eq!(
            fleet_event(&event, 1_000_000_000).line(),
            "+12.345s fleet warning: vm web-1: recovering from fenced host pve-b onto pve-c"
        );
    }
}
