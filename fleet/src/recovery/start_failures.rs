//! PVE HA's `max_restart` and `max_relocate` for an HA `started` VM whose starts fail: while
//! its failures on its host are at most `max_restart` the reconciler's retries go on; then it
//! moves to the best host it has not failed on (the same rules as a relocation after a fence:
//! another node of its PVE cluster with its disks on shared storage), at most `max_relocate`
//! times; then the fleet gives up (`error`) until the operator changes its HA state (`disabled`,
//! fix, `started`). A member of a kept-together group relocates with its partners: they
//! live-migrate to the host it goes to.

use protocol::fleet::{StartFailures, VmPhase, VmRecord};
use protocol::spec::{HaState, RecoveryMode};

use super::action::RecoveryAction;
use super::placement::place;
use crate::migration;
use crate::scheduler::HostView;
use crate::state::FleetState;
use crate::views::place_on;

/// The start-failure decisions due in `state`, appended to `out` (usage added to `views`).
pub(super) fn plan(state: &FleetState, views: &mut [HostView], out: &mut Vec<RecoveryAction>) {
    for (name, f) in state.start_failures() {
        let Some(rec) = state.vm(name) else {
            continue;
        };
        out.extend(decide(state, rec, f, views));
    }
}

fn decide(
    state: &FleetState,
    rec: &VmRecord,
    f: &StartFailures,
    views: &mut [HostView],
) -> Vec<RecoveryAction> {
    decide_one(state, rec, f, views).map_or_else(Vec::new, |first| match first {
        // The relocation of a kept-together group's member carries its partners.
        Ok(actions) => actions,
        Err(action) => vec![action],
    })
}

/// The decision for one VM: one action (`Err`, the common case), or a relocation with its
/// group's moves (`Ok`).
fn decide_one(
    state: &FleetState,
    rec: &VmRecord,
    f: &StartFailures,
    views: &mut [HostView],
) -> Option<Result<Vec<RecoveryAction>, RecoveryAction>> {
    let vm = rec.spec.name.clone();
    let ha = state.ha_policy(rec);
    let host_name = |id| {
        state
            .hosts()
            .get(&id)
            .map_or_else(|| id.to_string(), |h| h.name.clone())
    };
    if ha.state != Some(HaState::Started) {
        return Some(Err(RecoveryAction::ClearFailures {
            vm,
            message: format!(
                "HA state is {} now: its failed starts are forgotten",
                ha.state.map_or("off", |s| s.as_str())
            ),
        }));
    }
    if f.error.is_some() || rec.assignment.host != Some(f.host) {
        return None;
    }
    let running_there = rec.status.phase == VmPhase::Running
        && rec.status.current_host == Some(f.host)
        && rec.status.observed_generation >= rec.generation;
    if running_there {
        return Some(Err(RecoveryAction::ClearFailures {
            vm,
            message: format!(
                "running on {} after {} failed start{}",
                host_name(f.host),
                f.failures,
                if f.failures == 1 { "" } else { "s" }
            ),
        }));
    }
    if f.failures <= ha.max_restart {
        return None;
    }
    let way_out = "set ha.state = \"disabled\", fix the cause, then \"started\" again (PVE HA's way out of error)";
    let relocations = u32::try_from(f.tried.len()).unwrap_or(u32::MAX);
    if relocations >= ha.max_relocate {
        return Some(Err(RecoveryAction::GiveUp {
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
        }));
    }
    // A member of a kept-together group whose partners are beside it moves with them, to the
    // best host not tried yet that takes the whole group: PVE relocates the failing service
    // and its partners migrate after it (test-resource-affinity-strict-positive3).
    let untried: Vec<HostView> = views
        .iter()
        .filter(|v| v.id != f.host && !f.tried.contains(&v.id))
        .cloned()
        .collect();
    if let Ok((t, riders)) = migration::group_target(state, untried, &vm, None)
        && !riders.is_empty()
    {
        for member in std::iter::once(&vm).chain(&riders) {
            let spec = state.vm(member).map(|r| &r.spec);
            if let (Some(spec), Some(view)) = (spec, views.iter_mut().find(|v| v.id == t.to)) {
                place_on(view, spec);
            }
        }
        let mut actions = vec![RecoveryAction::Relocate {
            vm: vm.clone(),
            from: f.host,
            to: t.to,
            message: format!(
                "failed to start {} times on {} (max_restart = {}): moved with its group ({}) to {}, not tried yet (relocation {} of {})",
                f.failures,
                host_name(f.host),
                ha.max_restart,
                riders.join(", "),
                t.to_name,
                relocations + 1,
                ha.max_relocate
            ),
        }];
        actions.extend(riders.into_iter().map(|r| RecoveryAction::MoveWithGroup {
            vm: r,
            to: t.to,
            message: format!(
                "follows {vm}, relocated to {} after its starts failed",
                t.to_name
            ),
        }));
        return Some(Ok(actions));
    }
    match place(state, rec, f.host, RecoveryMode::Relocate, &f.tried, views) {
        Ok((to, why)) => Some(Err(RecoveryAction::Relocate {
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
        })),
        Err(why) => Some(Err(RecoveryAction::GiveUp {
            vm,
            message: format!(
                "failed to start {} times on {} and cannot be relocated: {why}; {way_out}",
                f.failures,
                host_name(f.host)
            ),
        })),
    }
}
