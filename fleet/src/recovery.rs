//! Recovering the VMs of fenced hosts, as a pure function of the replicated state: which VM
//! goes where, which waits and why, and which recoveries are over. The leader proposes the
//! answer as [`Command::RecoverVm`](crate::state::Command::RecoverVm) and
//! [`Command::EndRecovery`](crate::state::Command::EndRecovery); the state machine refuses a
//! recovery from a host that is not fenced, whatever this planner was told.
//!
//! ```text
//!  VM on a fenced host, HA started|stopped ─ recovery = none ─▶ left to the operator
//!      │ relocate: online nodes of the same PVE cluster whose storages hold its disks shared
//!      │ recreate: online hosts outside that PVE cluster (its VMID is still taken there)
//!      ▼
//!  scheduler (every placement constraint, TOPSIS) ─▶ RecoverVm{to}   usage added: the next
//!      │ no eligible host                                           VM sees it (spread)
//!      ▼
//!  RecoverVm{to: None, why} once per reason; tried again every round
//!
//!  recovery entry ─ VM at its desired state on the new host ─▶ EndRecovery ("recovered in N s")
//!                 ─ its old host back before a new one was found ─▶ EndRecovery
//!
//!  failed starts of an HA started VM ─ ≤ max_restart ─▶ retried on its host (the reconciler)
//!      ─ then, fewer than max_relocate moves ─▶ HaRelocate to the best untried host
//!      ─ then ─▶ HaGiveUp (PVE's `error`: no retry until its HA state changes)
//!      ─ running again, or HA state no longer `started` ─▶ HaClearFailures
//! ```
//!
//! Disabled, ignored and non-HA VMs stay with their host (the fence did not stop them either,
//! docs/design/fencing.md). Guests PVE's own HA manager drives never became fleet VMs: the
//! agents refuse them.

mod action;
mod placement;
mod start_failures;
#[cfg(test)]
mod tests;

pub use action::RecoveryAction;

use protocol::NodeId;
use protocol::fleet::{HostState, UnixMillis, VmPhase, VmRecord};
use protocol::spec::{DesiredState, RecoveryMode};

use crate::state::FleetState;
use crate::views::running_host_views;
use placement::place;

/// Every recovery decision due in `state` at `now`: the ends first, then the VMs of fenced
/// hosts in name order, each placed with the hosts' usage including the VMs placed before it.
pub fn plan(state: &FleetState, now: UnixMillis) -> Vec<RecoveryAction> {
    let mut out = ends(state, now);
    // Load is what runs, as PVE's HA manager counts it: a host full of stopped guests is not busy.
    let mut views = running_host_views(state);
    for rec in state.vms().values() {
        let Some(from) = rec.assignment.host else {
            continue;
        };
        let fenced = state
            .hosts()
            .get(&from)
            .is_some_and(|h| h.state == HostState::Fenced);
        let ha = state.ha_policy(rec);
        if rec.deleting || !fenced || !ha.fences() || ha.recovery == RecoveryMode::None {
            continue;
        }
        // PVE HA leaves a service in `error` where it is when its node fails: the operator
        // disables it, looks, and starts it again.
        if state.ha_error(&rec.spec.name).is_some() {
            continue;
        }
        // Moved by PVE when its host was fenced: it may run on the target already. The
        // reconciler asks the target first (`Migration::source_lost_at`).
        if state.migration(&rec.spec.name).is_some() {
            continue;
        }
        let (to, message) = match place(state, rec, from, ha.recovery, &[], &mut views) {
            Ok((to, message)) => (Some(to), message),
            Err(why) => (None, why),
        };
        let known = state
            .recovery(&rec.spec.name)
            .is_some_and(|r| r.from_host == from && r.to_host.is_none() && r.message == message);
        if to.is_none() && known {
            continue;
        }
        out.push(RecoveryAction::Recover {
            vm: rec.spec.name.clone(),
            from,
            to,
            message,
        });
    }
    start_failures::plan(state, &mut views, &mut out);
    out
}

/// The recoveries that are over.
fn ends(state: &FleetState, now: UnixMillis) -> Vec<RecoveryAction> {
    let mut out = Vec::new();
    for (name, r) in state.recoveries() {
        let Some(rec) = state.vm(name) else {
            continue;
        };
        let end = |message: String| RecoveryAction::End {
            vm: name.clone(),
            from: r.from_host,
            message,
        };
        let host_name = |id: NodeId| {
            state
                .hosts()
                .get(&id)
                .map_or_else(|| id.to_string(), |h| h.name.clone())
        };
        // Waiting for a host, and no longer to be recovered: PVE HA takes a service out of
        // recovery when the operator disables it ("allow getting a service out of recovery
        // manually"); the VM stays on its fenced host, stopped by the fence.
        let ha = state.ha_policy(rec);
        if r.to_host.is_none() && (!ha.fences() || ha.recovery == RecoveryMode::None) {
            out.push(end(format!(
                "recovery from {} over: its HA state is {} (recovery {}): it stays on {}, \
                 stopped by the fence",
                r.from_node,
                ha.state.map_or("off", |s| s.as_str()),
                ha.recovery,
                r.from_node
            )));
            continue;
        }
        match r.to_host {
            Some(to) if rec.assignment.host != Some(to) => out.push(end(format!(
                "recovery from {} over: the VM was moved to {} since",
                r.from_node,
                rec.assignment
                    .host
                    .map_or_else(|| "no host".into(), host_name)
            ))),
            // A relocation after failed starts is no recovery from a fenced host: said so.
            Some(to)
                if settled_on(rec, to)
                    && state
                        .start_failure(name)
                        .is_some_and(|f| f.tried.contains(&r.from_host)) =>
            {
                out.push(end(format!(
                    "relocated from {} onto {} after its starts failed there, in {:.1} s",
                    r.from_node,
                    host_name(to),
                    now.saturating_sub(r.since) as f64 / 1000.0
                )));
            }
            Some(to) if settled_on(rec, to) => out.push(end(format!(
                "recovered from fenced host {} onto {} ({}) in {:.1} s",
                r.from_node,
                host_name(to),
                r.mode,
                now.saturating_sub(r.since) as f64 / 1000.0
            ))),
            Some(_) if state.ha_error(name).is_some() => out.push(end(format!(
                "recovery from {} over: the VM is in HA error",
                r.from_node
            ))),
            Some(_) => {}
            None => {
                let still_fenced = state
                    .hosts()
                    .get(&r.from_host)
                    .is_some_and(|h| h.state == HostState::Fenced);
                if !still_fenced || rec.assignment.host != Some(r.from_host) {
                    out.push(end(format!(
                        "recovery from {} over: its host is {} again before another was found",
                        r.from_node,
                        state
                            .hosts()
                            .get(&r.from_host)
                            .map_or("gone", |h| h.state.as_str())
                    )));
                }
            }
        }
    }
    out
}

/// Whether `rec` reached its desired power state on `host` for its current spec.
fn settled_on(rec: &VmRecord, host: NodeId) -> bool {
    let phase = match rec.spec.state {
        DesiredState::Running => VmPhase::Running,
        DesiredState::Stopped => VmPhase::Stopped,
    };
    rec.status.current_host == Some(host)
        && rec.status.phase == phase
        && rec.status.observed_generation >= rec.generation
}
