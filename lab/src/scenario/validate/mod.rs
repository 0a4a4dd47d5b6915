//! Checking a scenario as a whole: every host, VM, cluster and event it names exists, times
//! parse, coordinators are an odd count (1, 3, 5), each event has the keys its action takes
//! and only those, each expectation checks one thing. Pure; errors name the entry and key
//! (`event[3].host`). The events are checked in `event.rs`, the expectations in `expectation.rs`.

use std::collections::BTreeSet;
use std::time::Duration;

use protocol::fleet::validate_settings;
use protocol::spec::{
    FleetSpecFile, validate_ip_pool, validate_spec, validate_vip, validate_vmid_range,
};

mod event;
mod expectation;
mod refusal;

use super::error::ScenarioError;
use super::file::{RawCluster, RawEvent, RawExpect, RawFile, RawFleet, RawHost, entries};
use super::model::{HostDef, PveClusterDef, Scenario};
use event::{check_event_refs, event};
use expectation::expectation;
use refusal::{Checked, invalid, time, unknown_host};

/// The default `timeout`.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(90);

/// A PVE node or cluster name: a letter, then letters, digits and `-`, at most 63.
fn check_name(at: &str, name: &str) -> Checked<()> {
    let ok = name.len() <= 63
        && name.starts_with(|c: char| c.is_ascii_alphabetic())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-');
    if ok {
        Ok(())
    } else {
        invalid(
            at,
            format!(
                "{name:?} is not a PVE node name: a letter, then letters, digits and '-', at \
                 most 63"
            ),
        )
    }
}

/// Checks a whole file.
/// The most writing clients a scenario may ask for.
const MAX_CLIENTS: u32 = 16;

pub(crate) fn scenario(raw: RawFile) -> Checked<Scenario> {
    if raw.name.trim().is_empty() || raw.name.chars().any(char::is_control) {
        return invalid("name", "must be a non-empty line of text");
    }
    let timeout = match &raw.timeout {
        Some(t) => time("timeout", t)?,
        None => DEFAULT_TIMEOUT,
    };
    if timeout.is_zero() {
        return invalid("timeout", "must be longer than 0s");
    }
    let hold = match &raw.hold {
        Some(t) => time("hold", t)?,
        None => Duration::ZERO,
    };
    let hosts = hosts(entries::<RawHost>("host", raw.host)?)?;
    let host_names: Vec<String> = hosts.iter().map(|h| h.name.clone()).collect();
    let names: Vec<&str> = host_names.iter().map(String::as_str).collect();
    let pve_clusters = clusters(
        entries::<RawCluster>("pve_cluster", raw.pve_cluster)?,
        &names,
    )?;
    let hosts = cluster_membership(hosts, &pve_clusters)?;
    let Some(fleet_value) = raw.fleet else {
        return invalid(
            "fleet",
            "missing: [fleet] coordinators = [...] names the hosts that run a coordinator",
        );
    };
    let fleet_raw: RawFleet = fleet_value
        .try_into()
        .map_err(|e| ScenarioError::invalid("fleet", e.message().trim()))?;
    let coordinators = coordinators(fleet_raw.coordinators, &names)?;
    let lease_secs = fleet_raw.lease.as_deref().map(lease).transpose()?;
    let clients = match fleet_raw.clients {
        None => 0,
        Some(n @ 0..=MAX_CLIENTS) => n,
        Some(n) => {
            return invalid(
                "fleet.clients",
                format!("{n} clients: expected 0 to {MAX_CLIENTS}"),
            );
        }
    };
    let boot_after_reset = fleet_raw
        .boot_after_reset
        .as_deref()
        .map(|t| time("fleet.boot_after_reset", t))
        .transpose()?;
    let fleet = FleetSpecFile {
        pool: entries("pool", raw.pool)?,
        vmid_range: entries("vmid_range", raw.vmid_range)?,
        vip: entries("vip", raw.vip)?,
        vm: entries("vm", raw.vm)?,
        settings: raw
            .settings
            .map(|v| {
                v.try_into().map_err(|e: toml::de::Error| {
                    ScenarioError::invalid("settings", e.message().trim())
                })
            })
            .transpose()?,
        groups: Vec::new(),
    };
    check_fleet(&fleet)?;
    let vms: Vec<&str> = fleet.vm.iter().map(|v| v.name.as_str()).collect();
    let vips: Vec<&str> = fleet.vip.iter().map(|v| v.name.as_str()).collect();
    let raw_events: Vec<RawEvent> = entries("event", raw.event)?;
    let mut events = Vec::new();
    for (i, e) in raw_events.into_iter().enumerate() {
        events.push(event(i, e, &names, &vms, &vips, &coordinators)?);
    }
    check_event_refs(&events)?;
    events.sort_by_key(|e| (e.at, e.index));
    for (vm, host) in &raw.start_on {
        let at = format!("start_on.{vm}");
        if !vms.contains(&vm.as_str()) {
            return invalid(at, refusal::unknown_vm(vm, &vms));
        }
        if !names.contains(&host.as_str()) {
            return invalid(at, unknown_host(host, &names));
        }
        if fleet.vm.iter().any(|v| {
            &v.name == vm
                && events.iter().any(
                    |e| matches!(&e.action, super::model::Action::VmApply { vm: x } if x == vm),
                )
        }) {
            return invalid(
                at,
                "a VM applied by a vm-apply event is not there at the start",
            );
        }
    }
    let raw_expects: Vec<RawExpect> = entries("expect", raw.expect)?;
    let vips: Vec<&str> = fleet.vip.iter().map(|v| v.name.as_str()).collect();
    let expect_names = expectation::Names {
        hosts: &names,
        vms: &vms,
        vips: &vips,
    };
    let mut expects = Vec::new();
    for (i, e) in raw_expects.into_iter().enumerate() {
        expects.push(expectation(i, e, &expect_names, &events, timeout)?);
    }
    Ok(Scenario {
        name: raw.name,
        description: raw.description,
        timeout,
        hold,
        lease_secs,
        coordinators,
        clients,
        boot_after_reset,
        pve_clusters,
        hosts,
        fleet,
        start_on: raw.start_on,
        events,
        expects,
    })
}

fn lease(text: &str) -> Checked<u64> {
    let d = time("fleet.lease", text)?;
    if d.subsec_nanos() != 0 || !(1..=3600).contains(&d.as_secs()) {
        return invalid(
            "fleet.lease",
            format!("{text:?}: a whole number of seconds, 1s to 3600s"),
        );
    }
    Ok(d.as_secs())
}

fn hosts(raw: Vec<RawHost>) -> Checked<Vec<HostDef>> {
    if raw.is_empty() {
        return invalid("host", "the scenario has no [[host]]");
    }
    if raw.len() > 254 {
        return invalid("host", format!("{} hosts, at most 254", raw.len()));
    }
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for (i, h) in raw.into_iter().enumerate() {
        let at = |key: &str| format!("host[{i}].{key}");
        check_name(&at("name"), &h.name)?;
        if !seen.insert(h.name.clone()) {
            return invalid(at("name"), format!("host {:?} is defined twice", h.name));
        }
        if !(1..=1024).contains(&h.cpus) {
            return invalid(at("cpus"), format!("{}: expected 1 to 1024", h.cpus));
        }
        if !(1..=65_536).contains(&h.memory_gib) {
            return invalid(
                at("memory_gib"),
                format!("{}: expected 1 to 65536", h.memory_gib),
            );
        }
        out.push(HostDef {
            name: h.name,
            pve_cluster: h.pve_cluster,
            cpus: h.cpus,
            memory_gib: h.memory_gib,
            labels: h.labels,
        });
    }
    Ok(out)
}

fn clusters(raw: Vec<RawCluster>, hosts: &[&str]) -> Checked<Vec<PveClusterDef>> {
    let mut names = BTreeSet::new();
    let mut taken: BTreeSet<&str> = BTreeSet::new();
    let mut out = Vec::new();
    for (i, c) in raw.iter().enumerate() {
        let at = |key: &str| format!("pve_cluster[{i}].{key}");
        check_name(&at("name"), &c.name)?;
        if !names.insert(c.name.as_str()) {
            return invalid(at("name"), format!("cluster {:?} is defined twice", c.name));
        }
        if c.nodes.is_empty() {
            return invalid(at("nodes"), "a cluster needs at least one node");
        }
        for node in &c.nodes {
            if !hosts.contains(&node.as_str()) {
                return invalid(at("nodes"), unknown_host(node, hosts));
            }
            if !taken.insert(node.as_str()) {
                return invalid(
                    at("nodes"),
                    format!("host {node:?} is a node of two clusters (or listed twice)"),
                );
            }
        }
        out.push(PveClusterDef {
            name: c.name.clone(),
            nodes: c.nodes.clone(),
            shared_storage: c.shared_storage,
        });
    }
    Ok(out)
}

/// Each host's cluster from the clusters' node lists; a host's own `pve_cluster` must agree.
fn cluster_membership(
    mut hosts: Vec<HostDef>,
    clusters: &[PveClusterDef],
) -> Checked<Vec<HostDef>> {
    for (i, h) in hosts.iter_mut().enumerate() {
        let listed = clusters
            .iter()
            .find(|c| c.nodes.contains(&h.name))
            .map(|c| c.name.clone());
        match (&h.pve_cluster, &listed) {
            (Some(said), Some(l)) if said != l => {
                return invalid(
                    format!("host[{i}].pve_cluster"),
                    format!("{said:?}, but cluster {l:?} lists {} as its node", h.name),
                );
            }
            (Some(said), None) => {
                return invalid(
                    format!("host[{i}].pve_cluster"),
                    format!(
                        "{said:?}: no [[pve_cluster]] of that name lists {} in its nodes",
                        h.name
                    ),
                );
            }
            _ => h.pve_cluster = listed,
        }
    }
    Ok(hosts)
}

fn coordinators(raw: Vec<String>, hosts: &[&str]) -> Checked<Vec<String>> {
    if !matches!(raw.len(), 1 | 3 | 5) {
        return invalid(
            "fleet.coordinators",
            format!(
                "{} coordinators: expected 1, 3 or 5 (an odd count keeps a majority)",
                raw.len()
            ),
        );
    }
    let mut seen = BTreeSet::new();
    for c in &raw {
        if !hosts.contains(&c.as_str()) {
            return invalid("fleet.coordinators", unknown_host(c, hosts));
        }
        if !seen.insert(c) {
            return invalid(
                "fleet.coordinators",
                format!("{c:?} is named twice: one member per host"),
            );
        }
    }
    Ok(raw)
}

fn check_fleet(fleet: &FleetSpecFile) -> Checked<()> {
    fn each<T>(
        kind: &str,
        items: &[T],
        name: impl Fn(&T) -> &str,
        check: impl Fn(&T) -> Result<(), protocol::spec::SpecError>,
    ) -> Checked<()> {
        let mut seen = BTreeSet::new();
        for (i, item) in items.iter().enumerate() {
            let at = format!("{kind}[{i}]");
            if let Err(e) = check(item) {
                let e = e.within(&at);
                return invalid(
                    e.field.clone(),
                    format!("{} is not allowed: {}", e.value, e.allowed),
                );
            }
            if !seen.insert(name(item)) {
                return invalid(
                    format!("{at}.name"),
                    format!("{kind} {:?} is defined twice", name(item)),
                );
            }
        }
        Ok(())
    }
    each("pool", &fleet.pool, |p| &p.name, validate_ip_pool)?;
    each(
        "vmid_range",
        &fleet.vmid_range,
        |r| &r.name,
        validate_vmid_range,
    )?;
    each("vip", &fleet.vip, |v| &v.name, validate_vip)?;
    each("vm", &fleet.vm, |v| &v.name, validate_spec)?;
    if let Some(settings) = &fleet.settings
        && let Err(e) = validate_settings(settings)
    {
        let e = e.within("settings");
        return invalid(
            e.field.clone(),
            format!("{} is not allowed: {}", e.value, e.allowed),
        );
    }
    if fleet.vm.is_empty() {
        return invalid("vm", "the scenario has no [[vm]]");
    }
    Ok(())
}
