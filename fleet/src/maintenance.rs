//! Host maintenance as the leader drives it, a pure function of the replicated state: the
//! guests of a host in maintenance are drained (each moved by PVE's migration to the best
//! other node of its PVE cluster, under every filter and rule of placement), a few at a time
//! per host; a drain that failed is tried again after a pause; once the maintenance is over,
//! the guests drained off the host go back to it, as many at a time. Every decision is a
//! [`Command::StartMigration`]; the reconciler carries the moves out.
//!
//! An affinity group moves as one: its members on the host ride with the first one drained, to
//! the host [`migration::group_target`] finds for all of them. A guest that is to be stopped, or
//! in HA error, stays ([`stays`]): PVE's maintenance mode moves only the started services.
//!
//! ```text
//!  host in maintenance ─ guest idle, not tried lately ─▶ migration::group_target ─▶ Drain (its group too)
//!                                                     └─ no target ─▶ stays (shown as left)
//!  home online, guest elsewhere and idle ─▶ migration::target(home) ─▶ Home
//! ```
//!
//! What survives a leader change or a reboot of the host: all of it (the host's state, the
//! homes and the failed drains are replicated; the planner keeps nothing).

use protocol::fleet::{HostState, MigrationPurpose, UnixMillis};
use protocol::spec::{DesiredState, HaState};

#[cfg(test)]
#[path = "maintenance_tests.rs"]
mod tests;

use crate::migration;
use crate::scheduler::HostView;
use crate::state::{Command, FleetState};
use crate::views::place_on;

/// Drain migrations under way from one host at a time (PVE's `max_workers` default is 4).
pub const DRAIN_PARALLEL: usize = 4;

/// How long a failed drain of a guest waits before it is tried again.
pub const DRAIN_RETRY_MS: u64 = 30_000;

/// The migrations to start now (see the module documentation).
pub fn plan(state: &FleetState, mut views: Vec<HostView>, now: UnixMillis) -> Vec<Command> {
    let mut out = Vec::new();
    let mut started = std::collections::BTreeSet::new();
    let busy = |name: &str| state.migration(name).is_some() || state.recovery(name).is_some();
    for host in state.hosts().values() {
        if host.state != HostState::Maintenance {
            continue;
        }
        let mut running = state
            .migrations()
            .values()
            .filter(|m| m.from_host == host.id)
            .count();
        for rec in state.vms().values() {
            if running >= DRAIN_PARALLEL {
                break;
            }
            let name = &rec.spec.name;
            let retry_due = state
                .drain_failed_at(name)
                .is_none_or(|at| now.saturating_sub(at) >= DRAIN_RETRY_MS);
            if rec.assignment.host != Some(host.id)
                || rec.deleting
                || rec.assignment.vmid.is_none()
                || busy(name)
                || !retry_due
                || stays(state, rec)
            {
                continue;
            }
            if started.contains(name) {
                continue;
            }
            // The VM's affinity group rides with it, to one host.
            if let Ok((t, riders)) = migration::group_target(state, views.clone(), name, None) {
                for member in std::iter::once(name).chain(riders.iter()) {
                    let Some(spec) = state.vm(member).map(|r| &r.spec) else {
                        continue;
                    };
                    if let Some(view) = views.iter_mut().find(|v| v.id == t.to) {
                        place_on(view, spec);
                    }
                    out.push(Command::StartMigration {
                        name: member.clone(),
                        to: t.to,
                        purpose: MigrationPurpose::Drain,
                        now,
                    });
                    started.insert(member.clone());
                    running += 1;
                }
            }
        }
    }
    // The way back is throttled like the drain: at most DRAIN_PARALLEL moves into a host.
    let mut coming: std::collections::BTreeMap<protocol::NodeId, usize> = Default::default();
    for m in state.migrations().values() {
        *coming.entry(m.to_host).or_default() += 1;
    }
    for (name, &home) in state.homes() {
        let Some(rec) = state.vm(name) else { continue };
        let Some(home_host) = state.hosts().get(&home) else {
            continue;
        };
        let arriving = coming.entry(home).or_default();
        if *arriving >= DRAIN_PARALLEL
            || home_host.state != HostState::Online
            || rec.assignment.host == Some(home)
            || rec.deleting
            || busy(name)
        {
            continue;
        }
        if migration::target(state, views.clone(), name, Some(&home_host.name)).is_ok() {
            out.push(Command::StartMigration {
                name: name.clone(),
                to: home,
                purpose: MigrationPurpose::Home,
                now,
            });
            *arriving += 1;
        }
    }
    out
}

/// Whether a guest stays on a host in maintenance: one that is to be stopped, or in HA
/// error, as PVE's maintenance mode moves only the services in state `started`
/// (`next_state_stopped` has no maintenance branch; a service in `error` is left alone).
/// Started later, it is moved by the next pass and started where it lands.
pub fn stays(state: &FleetState, rec: &protocol::fleet::VmRecord) -> bool {
    let ha_off = matches!(
        state.ha_policy(rec).state,
        Some(HaState::Stopped | HaState::Disabled)
    );
    rec.spec.state == DesiredState::Stopped || ha_off || state.ha_error(&rec.spec.name).is_some()
}

/// The guests still on host `id` (in maintenance) with why each stays, for people: moving,
/// waiting to retry a failed move, or no other node can take it.
pub fn left_on(
    state: &FleetState,
    views: &[HostView],
    id: protocol::NodeId,
) -> Vec<(String, String)> {
    state
        .vms()
        .values()
        .filter(|r| r.assignment.host == Some(id) && !r.deleting)
        .map(|rec| {
            let name = &rec.spec.name;
            let why = if stays(state, rec) {
                "stopped (or in HA error): it stays, as in PVE's maintenance mode".to_string()
            } else if let Some(m) = state.migration(name) {
                format!("moving to {}", m.to_node)
            } else if state.drain_failed_at(name).is_some() {
                "its last move failed (see the events); tried again shortly".to_string()
            } else {
                match migration::target(state, views.to_vec(), name, None) {
                    Ok(t) => format!("about to move to {}", t.to_name),
                    Err(why) => why,
                }
            };
            (name.clone(), why)
        })
        .collect()
}
