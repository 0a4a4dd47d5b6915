//! PVE's failback, for VMs with a node affinity (`failback = true`, the default): a VM on a host
//! of a lower priority than an available host its rule prefers goes back to that host by live
//! migration, under every filter and rule of placement ([`crate::migration::target`] chooses
//! it, so the preferred host must be able to take it). As many at a time into one host as a
//! drain.

use std::collections::BTreeMap;

use protocol::NodeId;
use protocol::fleet::{HostState, MigrationPurpose, UnixMillis};

#[cfg(test)]
#[path = "failback_tests.rs"]
mod tests;

use crate::maintenance::DRAIN_PARALLEL;
use crate::migration;
use crate::scheduler::HostView;
use crate::state::{Command, FleetState};

/// The failback migrations to start now.
pub fn plan(state: &FleetState, views: &[HostView], now: UnixMillis) -> Vec<Command> {
    let mut out = Vec::new();
    let mut coming: BTreeMap<NodeId, usize> = BTreeMap::new();
    for m in state.migrations().values() {
        *coming.entry(m.to_host).or_default() += 1;
    }
    for rec in state.vms().values() {
        let Some(na) = &rec.spec.placement.node_affinity else {
            continue;
        };
        let name = &rec.spec.name;
        let Some(host) = rec.assignment.host.and_then(|h| state.hosts().get(&h)) else {
            continue;
        };
        if !na.failback
            || rec.deleting
            || rec.assignment.vmid.is_none()
            || host.state != HostState::Online
            || state.migration(name).is_some()
            || state.recovery(name).is_some()
        {
            continue;
        }
        let here = na.priority(&host.name);
        let Ok(t) = migration::target(state, views.to_vec(), name, None) else {
            continue;
        };
        let there = na.priority(&t.to_name);
        let better = match (there, here) {
            (Some(t), Some(h)) => t > h,
            (Some(_), None) => true,
            (None, _) => false,
        };
        let arriving = coming.entry(t.to).or_default();
        if !better || *arriving >= DRAIN_PARALLEL {
            continue;
        }
        *arriving += 1;
        out.push(Command::StartMigration {
            name: name.clone(),
            to: t.to,
            purpose: MigrationPurpose::Failback,
            now,
        });
    }
    out
}
