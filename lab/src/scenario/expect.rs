//! Expectations, judged by a pure function over one sample (with the last fleet answer at or
//! before it), the fleet at t=0, the hosts the played events acted on, and the fleet's events
//! since t=0. Each answer says what was seen, met or not.

use std::collections::BTreeMap;

use serde::Serialize;

use super::model::{Check, HostRef, PveState};
use super::sample::{FleetSample, Sample};

/// What an expectation is judged on.
#[derive(Debug, Clone, Copy)]
pub struct ExpectContext<'a> {
    /// The sample.
    pub sample: &'a Sample,
    /// The last fleet answer at or before it.
    pub fleet: Option<&'a FleetSample>,
    /// The fleet at t=0.
    pub start: Option<&'a FleetSample>,
    /// The host each played event acted on, by event index.
    pub event_hosts: &'a BTreeMap<usize, String>,
    /// The fleet's events since t=0, as `kind subject: message`.
    pub fleet_events: &'a [String],
}

/// An expectation's verdict.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ExpectResult {
    /// Its index in the file (`expect[i]`).
    pub index: usize,
    /// When it was to hold (ms after t=0); `None`: at the end.
    pub at_ms: Option<i64>,
    /// The expectation in words.
    pub text: String,
    /// Whether it held.
    pub met: bool,
    /// What was seen.
    pub seen: String,
}

/// A host reference resolved: its name, or why it cannot be.
fn resolve(host: &HostRef, events: &BTreeMap<usize, String>) -> Result<String, String> {
    match host {
        HostRef::Name(n) => Ok(n.clone()),
        HostRef::Event(i) => events
            .get(i)
            .cloned()
            .ok_or_else(|| format!("event[{i}] was not played (or acted on no host)")),
    }
}

/// Whether `check` holds in `ctx`, and what was seen.
pub fn evaluate(check: &Check, ctx: &ExpectContext<'_>) -> (bool, String) {
    match check {
        Check::Vm {
            vm,
            phase,
            pve,
            on_host,
            on_host_not,
            pve_node,
            recovering,
            moved,
        } => {
            let nodes = ctx.sample.pve.running_nodes(vm);
            let fleet_vm = ctx.fleet.and_then(|f| f.vms.get(vm));
            let fleet_host = fleet_vm.and_then(|v| v.host.clone());
            // Where it is: its PVE node while it runs, else its fleet host.
            let place = match nodes.as_slice() {
                [one] => Some((*one).to_string()),
                [] => fleet_host.clone(),
                _ => None,
            };
            let mut seen = vec![];
            match fleet_vm {
                Some(v) => seen.push(format!(
                    "phase {}, fleet host {}",
                    v.phase,
                    v.host.as_deref().unwrap_or("none")
                )),
                None if ctx.fleet.is_none() => seen.push("the fleet never answered".to_string()),
                None => seen.push("not in the fleet".to_string()),
            }
            seen.push(match nodes.as_slice() {
                [] => "running nowhere in PVE".to_string(),
                n => format!("running on {} in PVE", n.join(" and ")),
            });
            if let Some(r) = fleet_vm.and_then(|v| v.recovery.as_ref()) {
                seen.push(format!("recovery: {r}"));
            }
            let mut met = true;
            if let Some(p) = phase {
                met &= fleet_vm.is_some_and(|v| v.phase == *p);
            }
            if let Some(p) = pve {
                met &= match p {
                    PveState::Running => nodes.len() == 1,
                    PveState::Stopped => nodes.is_empty(),
                };
            }
            if let Some(h) = on_host {
                match resolve(h, ctx.event_hosts) {
                    Ok(h) => met &= place.as_deref() == Some(h.as_str()),
                    Err(why) => {
                        met = false;
                        seen.push(why);
                    }
                }
            }
            for h in on_host_not {
                match resolve(h, ctx.event_hosts) {
                    Ok(h) => met &= place.is_some() && place.as_deref() != Some(h.as_str()),
                    Err(why) => {
                        met = false;
                        seen.push(why);
                    }
                }
            }
            if let Some(n) = pve_node {
                // Its config: the guests of its name, else (its node off, PVE names nothing)
                // the unnamed guests of its VMID.
                let vmid = fleet_vm.and_then(|v| v.vmid);
                let named: Vec<&str> = ctx
                    .sample
                    .pve
                    .guests
                    .iter()
                    .filter(|g| g.name.as_deref() == Some(vm.as_str()))
                    .map(|g| g.node.as_str())
                    .collect();
                let configs = if named.is_empty() {
                    ctx.sample
                        .pve
                        .guests
                        .iter()
                        .filter(|g| g.name.is_none() && Some(g.vmid) == vmid)
                        .map(|g| g.node.as_str())
                        .collect()
                } else {
                    named
                };
                seen.push(match configs.as_slice() {
                    [] => "no config in PVE".to_string(),
                    c => format!("config on {}", c.join(" and ")),
                });
                match resolve(n, ctx.event_hosts) {
                    Ok(n) => met &= configs.contains(&n.as_str()),
                    Err(why) => {
                        met = false;
                        seen.push(why);
                    }
                }
            }
            if let Some(r) = recovering {
                met &= fleet_vm.is_some_and(|v| v.recovery.is_some() == *r);
            }
            if let Some(m) = moved {
                let first = ctx
                    .start
                    .and_then(|f| f.vms.get(vm))
                    .and_then(|v| v.host.clone());
                seen.push(format!(
                    "host at t=0 {}",
                    first.as_deref().unwrap_or("none")
                ));
                met &= fleet_vm.is_some() && (fleet_host != first) == *m;
            }
            (met, seen.join(", "))
        }
        Check::Host {
            host,
            state,
            min_vms,
            max_vms,
        } => {
            let name = match resolve(host, ctx.event_hosts) {
                Ok(n) => n,
                Err(why) => return (false, why),
            };
            let Some(fleet) = ctx.fleet else {
                return (false, "the fleet never answered".to_string());
            };
            let Some(h) = fleet.hosts.get(&name) else {
                return (false, format!("{name} is not in the fleet"));
            };
            let count = fleet.vms_on(&name);
            let mut met = true;
            if let Some(s) = state {
                met &= h.state == *s;
            }
            if let Some(n) = min_vms {
                met &= count >= *n;
            }
            if let Some(n) = max_vms {
                met &= count <= *n;
            }
            (met, format!("{name} {}, {count} VMs", h.state))
        }
        Check::Events {
            text,
            min,
            max,
            before,
        } => {
            let first = ctx.fleet_events.iter().position(|e| e.contains(text));
            let count = ctx.fleet_events.iter().filter(|e| e.contains(text)).count();
            let mut met = count >= *min && max.is_none_or(|m| count <= m);
            let mut seen = match first {
                Some(i) if count == 1 => ctx.fleet_events[i].clone(),
                Some(i) => format!("{count} events, the first: {}", ctx.fleet_events[i]),
                None => format!("none of {} fleet events since t=0", ctx.fleet_events.len()),
            };
            if let Some(b) = before {
                let other = ctx.fleet_events.iter().position(|e| e.contains(b.as_str()));
                met &= match (first, other) {
                    (Some(x), Some(y)) => x < y,
                    (Some(_), None) => true,
                    (None, _) => false,
                };
                if let Some(y) = other {
                    seen.push_str(&format!(
                        "; the first containing {b:?}: {}",
                        ctx.fleet_events[y]
                    ));
                }
            }
            (met, seen)
        }
        Check::Leader { on, not } => {
            let Some(fleet) = ctx.fleet else {
                return (false, "the fleet never answered".to_string());
            };
            let Some(leader) = fleet.leader.as_deref() else {
                return (false, "no member leads".to_string());
            };
            let mut met = true;
            let mut seen = vec![format!("the leader is on {leader}")];
            for (h, want) in on
                .iter()
                .map(|h| (h, true))
                .chain(not.iter().map(|h| (h, false)))
            {
                match resolve(h, ctx.event_hosts) {
                    Ok(h) => met &= (h == leader) == want,
                    Err(why) => {
                        met = false;
                        seen.push(why);
                    }
                }
            }
            (met, seen.join(", "))
        }
        Check::Vip { vip, holder, held } => {
            // Hosts holding VIPs for real: who answers ARP for it now, as a client sees it.
            let (holders, how) = match ctx.sample.answers.get(vip) {
                Some(a) => (a.now.clone(), "answered for by"),
                None => {
                    let Some(fleet) = ctx.fleet else {
                        return (false, "the fleet never answered".to_string());
                    };
                    (fleet.vips.get(vip).cloned().unwrap_or_default(), "held by")
                }
            };
            let seen = if holders.is_empty() {
                format!("vip {vip} {how} nobody")
            } else {
                format!("vip {vip} {how} {}", holders.join(" and "))
            };
            let mut met = true;
            if let Some(h) = held {
                met &= holders.is_empty() != *h;
            }
            if let Some(h) = holder {
                match resolve(h, ctx.event_hosts) {
                    Ok(h) => met &= holders == [h],
                    Err(why) => return (false, format!("{seen}, {why}")),
                }
            }
            (met, seen)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::sample::fixtures::*;
    use super::*;
    use protocol::fleet::HostState::{Fenced, Online};
    use protocol::fleet::VmPhase;

    fn vm_check() -> Check {
        Check::Vm {
            vm: "web-1".into(),
            phase: Some(VmPhase::Running),
            pve: None,
            on_host: None,
            on_host_not: vec![HostRef::Event(0)],
            pve_node: None,
            recovering: None,
            moved: Some(true),
        }
    }

    #[test]
    fn a_recovered_vm_runs_elsewhere_than_the_host_the_event_powered_off() {
        let start = sample(0, vec![], &[], &[("web-1", vm("pve-b"))]);
        let end = sample(
            30_000,
            vec![guest("web-1", 100, "pve-c", true)],
            &[("pve-b", Fenced), ("pve-c", Online)],
            &[("web-1", vm("pve-c"))],
        );
        let events = BTreeMap::from([(0, "pve-b".to_string())]);
        let ctx = ExpectContext {
            sample: &end,
            fleet: end.fleet.as_ref(),
            start: start.fleet.as_ref(),
            event_hosts: &events,
            fleet_events: &[],
        };
        let (met, seen) = evaluate(&vm_check(), &ctx);
        assert!(met, "{seen}");
        assert!(seen.contains("running on pve-c in PVE"), "{seen}");
        // Still on the lost host: unmet, and what was seen says why.
        let stuck = sample(
            30_000,
            vec![],
            &[("pve-b", Fenced)],
            &[("web-1", vm("pve-b"))],
        );
        let ctx = ExpectContext {
            sample: &stuck,
            fleet: stuck.fleet.as_ref(),
            ..ctx
        };
        let (met, seen) = evaluate(&vm_check(), &ctx);
        assert!(!met);
        assert!(
            seen.contains("fleet host pve-b") && seen.contains("running nowhere"),
            "{seen}"
        );
    }

    #[test]
    fn an_event_reference_not_played_is_unmet() {
        let s = sample(0, vec![], &[], &[("web-1", vm("pve-b"))]);
        let ctx = ExpectContext {
            sample: &s,
            fleet: s.fleet.as_ref(),
            start: s.fleet.as_ref(),
            event_hosts: &BTreeMap::new(),
            fleet_events: &[],
        };
        let (met, seen) = evaluate(&vm_check(), &ctx);
        assert!(!met);
        assert!(seen.contains("event[0] was not played"), "{seen}");
    }

    #[test]
    fn host_states_vm_counts_and_event_texts() {
        let s = sample(
            0,
            vec![],
            &[("pve-b", Fenced)],
            &[("web-1", vm("pve-b")), ("web-2", vm("pve-b"))],
        );
        let events = vec!["vm web-1: HA error: gave up".to_string()];
        let ctx = ExpectContext {
            sample: &s,
            fleet: s.fleet.as_ref(),
            start: None,
            event_hosts: &BTreeMap::new(),
            fleet_events: &events,
        };
        let host = |state, max_vms| Check::Host {
            host: HostRef::Name("pve-b".into()),
            state,
            min_vms: Some(1),
            max_vms,
        };
        assert_eq!(
            evaluate(&host(Some(Fenced), Some(2)), &ctx),
            (true, "pve-b fenced, 2 VMs".to_string())
        );
        assert!(!evaluate(&host(Some(Online), None), &ctx).0);
        assert!(!evaluate(&host(None, Some(1)), &ctx).0);
        let contains = |text: &str| Check::Events {
            text: text.into(),
            min: 1,
            max: None,
            before: None,
        };
        assert!(evaluate(&contains("HA error"), &ctx).0);
        let (met, seen) = evaluate(&contains("recovering"), &ctx);
        assert!(!met);
        assert_eq!(seen, "none of 1 fleet events since t=0");
    }

    #[test]
    fn events_are_counted_and_ordered() {
        let s = sample(0, vec![], &[], &[]);
        let events: Vec<String> = [
            "vm web-1: fenced",
            "vm web-1: recovering",
            "vm web-1: recovering",
        ]
        .iter()
        .map(|e| e.to_string())
        .collect();
        let ctx = ExpectContext {
            sample: &s,
            fleet: s.fleet.as_ref(),
            start: None,
            event_hosts: &BTreeMap::new(),
            fleet_events: &events,
        };
        let check = |text: &str, min, max, before: Option<&str>| Check::Events {
            text: text.into(),
            min,
            max,
            before: before.map(str::to_string),
        };
        assert!(evaluate(&check("recovering", 2, Some(2), None), &ctx).0);
        assert!(
            !evaluate(&check("recovering", 1, Some(1), None), &ctx).0,
            "two, not one"
        );
        assert!(!evaluate(&check("recovering", 3, None, None), &ctx).0);
        assert!(evaluate(&check("fenced", 1, None, Some("recovering")), &ctx).0);
        assert!(!evaluate(&check("recovering", 1, None, Some("fenced")), &ctx).0);
        assert!(evaluate(&check("fenced", 1, None, Some("never seen")), &ctx).0);
    }

    #[test]
    fn the_leader_and_a_vips_holder_are_judged_on_the_fleets_answer() {
        let mut s = sample(0, vec![], &[], &[]);
        if let Some(f) = s.fleet.as_mut() {
            f.leader = Some("pve-a".into());
            f.vips.insert("web".into(), vec!["pve-b".into()]);
            f.vips.insert("db".into(), vec![]);
        }
        let ctx = ExpectContext {
            sample: &s,
            fleet: s.fleet.as_ref(),
            start: None,
            event_hosts: &BTreeMap::new(),
            fleet_events: &[],
        };
        let name = |h: &str| HostRef::Name(h.into());
        let leader = |on: Option<&str>, not: &[&str]| Check::Leader {
            on: on.map(name),
            not: not.iter().map(|h| name(h)).collect(),
        };
        assert!(evaluate(&leader(Some("pve-a"), &[]), &ctx).0);
        assert!(!evaluate(&leader(Some("pve-b"), &[]), &ctx).0);
        assert!(evaluate(&leader(None, &["pve-b", "pve-c"]), &ctx).0);
        assert!(!evaluate(&leader(None, &["pve-a"]), &ctx).0);
        let vip = |v: &str, holder: Option<&str>, held| Check::Vip {
            vip: v.into(),
            holder: holder.map(name),
            held,
        };
        assert!(evaluate(&vip("web", Some("pve-b"), None), &ctx).0);
        assert!(!evaluate(&vip("web", Some("pve-a"), None), &ctx).0);
        assert!(evaluate(&vip("db", None, Some(false)), &ctx).0);
        assert!(!evaluate(&vip("db", None, Some(true)), &ctx).0);
    }

    #[test]
    fn the_config_of_a_vm_on_a_node_that_is_off_is_found_by_its_vmid() {
        let mut off = guest("web-1", 100, "pve-b", false);
        off.name = None;
        let s = sample(0, vec![off], &[], &[("web-1", vm("pve-c"))]);
        let events = BTreeMap::from([(1, "pve-b".to_string())]);
        let ctx = ExpectContext {
            sample: &s,
            fleet: s.fleet.as_ref(),
            start: None,
            event_hosts: &events,
            fleet_events: &[],
        };
        let check = |node: HostRef| Check::Vm {
            vm: "web-1".into(),
            phase: None,
            pve: None,
            on_host: None,
            on_host_not: vec![],
            pve_node: Some(node),
            recovering: None,
            moved: None,
        };
        let (met, seen) = evaluate(&check(HostRef::Event(1)), &ctx);
        assert!(met, "{seen}");
        assert!(seen.contains("config on pve-b"), "{seen}");
        assert!(!evaluate(&check(HostRef::Name("pve-c".into())), &ctx).0);
    }
}
