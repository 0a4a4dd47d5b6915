//! PVE's positive resource affinity, kept over time: the members of a group kept together
//! (`placement.together_with`, overlapping rules form one group) that are found on different
//! hosts (an operator moved one, a host came back with some of them) are brought by live
//! migration to the host most of the group runs on, ties broken by the host name, as PVE's
//! `apply_positive_resource_affinity` keeps the most populated node. The members of one
//! minority host move as one (the first by name, the others riding with it), under every
//! filter and rule of placement ([`crate::migration::gather_target`]). A group with a member
//! moving, being recovered, unplaced or on a host that is not online waits.

use std::collections::{BTreeMap, BTreeSet};

use protocol::NodeId;
use protocol::fleet::{HostState, MigrationPurpose, UnixMillis};
use protocol::spec::VmSpec;

#[cfg(test)]
#[path = "gather_tests.rs"]
mod tests;

use crate::affinity::AffinityGroups;
use crate::maintenance::DRAIN_PARALLEL;
use crate::migration;
use crate::scheduler::HostView;
use crate::state::{Command, FleetState};

/// Every affinity group of `state`, as its members' specs (each group once, by name).
fn groups(state: &FleetState) -> Vec<Vec<&VmSpec>> {
    let affinity = AffinityGroups::of(state);
    let mut seen: BTreeSet<Vec<String>> = BTreeSet::new();
    let mut out = Vec::new();
    for rec in state.vms().values().filter(|r| !r.deleting) {
        let mut members = affinity.members(&rec.spec);
        if members.is_empty() {
            continue;
        }
        if !members.iter().any(|m| m.name == rec.spec.name) {
            members.push(&rec.spec);
        }
        members.sort_by(|a, b| a.name.cmp(&b.name));
        let names: Vec<String> = members.iter().map(|m| m.name.clone()).collect();
        if seen.insert(names) {
            out.push(members);
        }
    }
    out
}

/// The gathering migrations to start now.
pub fn plan(state: &FleetState, views: &[HostView], now: UnixMillis) -> Vec<Command> {
    let mut out = Vec::new();
    let mut coming: BTreeMap<NodeId, usize> = BTreeMap::new();
    for m in state.migrations().values() {
        *coming.entry(m.to_host).or_default() += 1;
    }
    'groups: for group in groups(state) {
        // Where each member is, all of them settled on online hosts.
        let mut on: BTreeMap<(String, NodeId), Vec<&VmSpec>> = BTreeMap::new();
        for spec in &group {
            let Some(rec) = state.vm(&spec.name) else {
                continue 'groups;
            };
            let host = rec.assignment.host.and_then(|h| state.hosts().get(&h));
            let Some(host) = host else {
                continue 'groups;
            };
            if rec.deleting
                || rec.assignment.vmid.is_none()
                || host.state != HostState::Online
                || state.migration(&spec.name).is_some()
                || state.recovery(&spec.name).is_some()
            {
                continue 'groups;
            }
            on.entry((host.name.clone(), host.id))
                .or_default()
                .push(*spec);
        }
        if on.len() < 2 {
            continue;
        }
        let Some(((gather_name, gather_id), _)) = on
            .iter()
            .min_by_key(|((name, _), members)| (std::cmp::Reverse(members.len()), name.clone()))
            .map(|(k, v)| (k.clone(), v.len()))
        else {
            continue;
        };
        for ((_, host), members) in &on {
            if *host == gather_id {
                continue;
            }
            let Some((mover, riders)) = members.split_first() else {
                continue;
            };
            let arriving = coming.entry(gather_id).or_default();
            if *arriving >= DRAIN_PARALLEL {
                continue;
            }
            let Ok(t) =
                migration::gather_target(state, views.to_vec(), &mover.name, &gather_name, riders)
            else {
                continue;
            };
            *arriving += members.len();
            for member in members {
                out.push(Command::StartMigration {
                    name: member.name.clone(),
                    to: t.to,
                    purpose: MigrationPurpose::Gather,
                    now,
                });
            }
        }
    }
    out
}
