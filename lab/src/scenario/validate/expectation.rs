//! Checking `[[expect]]` entries: exactly one subject (vm, host, event_contains, leader or
//! vip), only the keys of that subject, names and `@event[N]` references that exist, `at`
//! within the timeout, `during` one of its words.

use std::time::Duration;

use super::super::file::RawExpect;
use super::super::model::{Check, During, Expectation, HostRef, ScenarioEvent};
use super::event::event_ref;
use super::refusal::{Checked, invalid, time, unknown_host, unknown_vm};

fn host_ref(at: &str, text: &str, hosts: &[&str], events: &[ScenarioEvent]) -> Checked<HostRef> {
    match event_ref(text) {
        Some(Ok(n)) => {
            let Some(e) = events.iter().find(|e| e.index == n) else {
                return invalid(at, format!("@event[{n}]: the scenario has no event[{n}]"));
            };
            if e.action.target().is_none() {
                return invalid(
                    at,
                    format!(
                        "@event[{n}]: event[{n}] ({}) acts on no host",
                        e.action.name()
                    ),
                );
            }
            Ok(HostRef::Event(n))
        }
        Some(Err(())) => invalid(at, format!("{text:?}: write @event[N], N a number")),
        None if hosts.contains(&text) => Ok(HostRef::Name(text.to_string())),
        None => invalid(at, unknown_host(text, hosts)),
    }
}

/// The names an expectation may refer to.
pub(super) struct Names<'a> {
    pub(super) hosts: &'a [&'a str],
    pub(super) vms: &'a [&'a str],
    pub(super) vips: &'a [&'a str],
}

pub(super) fn expectation(
    i: usize,
    e: RawExpect,
    names: &Names<'_>,
    events: &[ScenarioEvent],
    timeout: Duration,
) -> Checked<Expectation> {
    let (hosts, vms) = (names.hosts, names.vms);
    let at = |key: &str| format!("expect[{i}].{key}");
    let when = match &e.at {
        Some(t) => {
            let d = time(&at("at"), t)?;
            if d > timeout {
                return invalid(at("at"), format!("{t:?} is after the timeout"));
            }
            Some(d)
        }
        None => None,
    };
    let vm_keys = [
        ("phase", e.phase.is_some()),
        ("pve", e.pve.is_some()),
        ("on_host", e.on_host.is_some()),
        ("on_host_not", e.on_host_not.is_some()),
        ("pve_node", e.pve_node.is_some()),
        ("recovering", e.recovering.is_some()),
        ("moved", e.moved.is_some()),
    ];
    let host_keys = [
        ("state", e.state.is_some()),
        ("max_vms", e.max_vms.is_some()),
    ];
    let event_keys = [
        ("count_min", e.count_min.is_some()),
        ("count_max", e.count_max.is_some()),
        ("before", e.before.is_some()),
    ];
    let vip_keys = [("holder", e.holder.is_some()), ("held", e.held.is_some())];
    let during = match e.during.as_deref() {
        None | Some("once") => During::Once,
        Some("throughout") => During::Throughout,
        Some("never") => During::Never,
        Some(other) => {
            return invalid(
                at("during"),
                format!("{other:?}: expected \"once\", \"throughout\" or \"never\""),
            );
        }
    };
    let leader = e.leader.is_some() || e.leader_not.is_some();
    let subjects = [
        e.vm.is_some(),
        e.host.is_some(),
        e.event_contains.is_some(),
        leader,
        e.vip.is_some(),
    ];
    if subjects.iter().filter(|s| **s).count() != 1 {
        return invalid(
            format!("expect[{i}]"),
            "names exactly one of vm, host, event_contains, leader (or leader_not) or vip",
        );
    }
    let refuse = |keys: &[(&str, bool)], subject: &str| -> Checked<()> {
        match keys.iter().find(|(_, present)| *present) {
            Some((key, _)) => invalid(at(key), format!("not a key of a {subject} expectation")),
            None => Ok(()),
        }
    };
    let check = if let Some(vm) = e.vm {
        if !vms.contains(&vm.as_str()) {
            return invalid(at("vm"), unknown_vm(&vm, vms));
        }
        refuse(&host_keys, "vm")?;
        refuse(&event_keys, "vm")?;
        refuse(&vip_keys, "vm")?;
        if !vm_keys.iter().any(|(_, present)| *present) {
            return invalid(
                format!("expect[{i}]"),
                "a vm expectation needs phase, pve, on_host, on_host_not, pve_node, recovering or \
                 moved",
            );
        }
        if e.on_host.is_some() && e.on_host_not.is_some() {
            return invalid(at("on_host_not"), "give on_host or on_host_not, not both");
        }
        let on_host = e
            .on_host
            .as_deref()
            .map(|h| host_ref(&at("on_host"), h, hosts, events))
            .transpose()?;
        let on_host_not = e
            .on_host_not
            .unwrap_or_default()
            .iter()
            .map(|h| host_ref(&at("on_host_not"), h, hosts, events))
            .collect::<Checked<Vec<_>>>()?;
        let pve_node = e
            .pve_node
            .as_deref()
            .map(|h| host_ref(&at("pve_node"), h, hosts, events))
            .transpose()?;
        Check::Vm {
            vm,
            phase: e.phase,
            pve: e.pve,
            on_host,
            on_host_not,
            pve_node,
            recovering: e.recovering,
            moved: e.moved,
        }
    } else if let Some(host) = e.host {
        refuse(&vm_keys, "host")?;
        refuse(&event_keys, "host")?;
        refuse(&vip_keys, "host")?;
        if e.state.is_none() && e.min_vms.is_none() && e.max_vms.is_none() {
            return invalid(
                format!("expect[{i}]"),
                "a host expectation needs state, min_vms or max_vms",
            );
        }
        Check::Host {
            host: host_ref(&at("host"), &host, hosts, events)?,
            state: e.state,
            min_vms: e.min_vms,
            max_vms: e.max_vms,
        }
    } else if let Some(text) = e.event_contains {
        refuse(&vm_keys, "event_contains")?;
        refuse(&host_keys, "event_contains")?;
        refuse(&vip_keys, "event_contains")?;
        if text.trim().is_empty() {
            return invalid(at("event_contains"), "must not be empty");
        }
        let min = e.count_min.unwrap_or(1);
        if let Some(max) = e.count_max
            && max < min
        {
            return invalid(
                at("count_max"),
                format!("{max} is below count_min ({min}; 1 unless given)"),
            );
        }
        if e.before.as_deref().is_some_and(|b| b.trim().is_empty()) {
            return invalid(at("before"), "must not be empty");
        }
        Check::Events {
            text,
            min,
            max: e.count_max,
            before: e.before,
        }
    } else if leader {
        refuse(&vm_keys, "leader")?;
        refuse(&host_keys, "leader")?;
        refuse(&event_keys, "leader")?;
        refuse(&vip_keys, "leader")?;
        Check::Leader {
            on: e
                .leader
                .as_deref()
                .map(|h| host_ref(&at("leader"), h, hosts, events))
                .transpose()?,
            not: e
                .leader_not
                .unwrap_or_default()
                .iter()
                .map(|h| host_ref(&at("leader_not"), h, hosts, events))
                .collect::<Checked<Vec<_>>>()?,
        }
    } else {
        refuse(&vm_keys, "vip")?;
        refuse(&host_keys, "vip")?;
        refuse(&event_keys, "vip")?;
        let vip = e.vip.unwrap_or_default();
        if !names.vips.contains(&vip.as_str()) {
            return invalid(
                at("vip"),
                format!(
                    "no [[vip]] named {vip:?} (the scenario has {})",
                    if names.vips.is_empty() {
                        "none".to_string()
                    } else {
                        names.vips.join(", ")
                    }
                ),
            );
        }
        if e.holder.is_none() && e.held.is_none() {
            return invalid(
                format!("expect[{i}]"),
                "a vip expectation needs holder or held",
            );
        }
        Check::Vip {
            vip,
            holder: e
                .holder
                .as_deref()
                .map(|h| host_ref(&at("holder"), h, hosts, events))
                .transpose()?,
            held: e.held,
        }
    };
    Ok(Expectation {
        index: i,
        at: when,
        during,
        check,
    })
}
