//! PVE HA's `max_restart` and `max_relocate` for an HA `started` VM whose starts fail: while
//! its failures on its host are at most `max_restart` the reconciler's retries go on; then it
//! moves to the best host it has not failed on (the same rules as a relocation after a fence:
//! another node of its PVE cluster with its disks on shared storage), at most `max_relocate`
//! times; then the fleet gives up (`error`) until the operator changes its HA state (`disabled`,
//! fix, `started`).

use protocol::fleet::{StartFailures, VmPhase, VmRecord};
use protocol::spec::{HaState, RecoveryMode};

use super::action::RecoveryAction;
use super::placement::place;
use crate::scheduler::HostView;
use crate::state::FleetState;

/// The start-failure decisions due in `state`, appended to `out` (usage added to `views`).
pub(super) fn plan(state: &FleetState, views: &mut [HostView], out: &mut Vec<RecoveryAction>) {
    for (name, f) in state.start_failures() {
        let Some(rec) = state.vm(name) else {
            continue;
        };
        if let Some(action) = decide(state, rec, f, views) {
            out.push(action);
        }
    }
}

fn decide(
    state: &FleetState,
    rec: &VmRecord,
    f: &StartFailures,
    views: &mut [HostView],
) -> Option<RecoveryAction> {
    let vm = rec.spec.name.clone();
    let ha = state.ha_policy(rec);
    let host_name = |id| {
        state
            .hosts()
            .get(&id)
            .map_or_else(|| id.to_string(), |h| h.name.clone())
    };
    if ha.state != Some(HaState::Started) {
        return Some(RecoveryAction::ClearFailures {
            vm,
            message: format!(
                "HA state is {} now: its failed starts are forgotten",
                ha.state.map_or("off", |s| s.as_str())
            ),
        });
    }
    if f.error.is_some() || rec.assignment.host != Some(f.host) {
        return None;
    }
    let running_there = rec.status.phase == VmPhase::Running
        && rec.status.current_host == Some(f.host)
        && rec.status.observed_generation >= rec.generation;
    if running_there {
        return Some(RecoveryAction::ClearFailures {
            vm,
            message: format!(
                "running on {} after {} failed start{}",
                host_name(f.host),
                f.failures,
                if f.failures == 1 { "" } else { "s" }
            ),
        });
    }
    if f.failures <= ha.max_restart {
        return None;
    }
    let way_out = "set ha.state = \"disabled\", fix the cause, then \"started\" again (PVE HA's way out of error)";
    let relocations = u32::try_from(f.tried.len()).unwrap_or(u32::MAX);
    if relocations >= ha.max_relocate {
        return Some(RecoveryAction::GiveUp {
            vm,
            message: format!(
                "failed to start {} times on {} after {relocations} relocation{} (max_restart = {}, max_relocate = {}): {}; {way_out}",
                f.failures,
                host_name(f.host),
                if relocations == 1 { "" } else { "s" },
                ha.max_restart,
                ha.max_relocate,
                f.last_message
            ),
        });
    }
    match place(state, rec, f.host, RecoveryMode::Relocate, &f.tried, views) {
        Ok((to, why)) => Some(RecoveryAction::Relocate {
            vm,
            from: f.host,
            to,
            message: format!(
                "failed to start {} times on {} (max_restart = {}): moved to the {why} not tried yet (relocation {} of {})",
                f.failures,
                host_name(f.host),
                ha.max_restart,
                relocations + 1,
                ha.max_relocate
            ),
        }),
        Err(why) => Some(RecoveryAction::GiveUp {
            vm,
            message: format!(
                "failed to start {} times on {} and cannot be relocated: {why}; {way_out}",
                f.failures,
                host_name(f.host)
            ),
        }),
    }
}
