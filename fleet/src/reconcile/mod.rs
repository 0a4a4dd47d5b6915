//! The reconciler's decisions, as pure functions: [`plan`] looks at the replicated state, the
//! live view of the hosts and the commands in flight, and answers what to do next for every
//! VM; [`status::on_result`] turns an agent's result into status, events and back-off. The
//! leader loop (`control::loop`) applies the actions through Raft and the dispatcher.
//!
//! ```text
//!  VM record ─ not placed ─▶ place (scheduler) ─▶ Schedule + allocate VMID, IPs   │ Pending + Warning
//!           ─ placed, ids ─▶ host reporting, nothing in flight, not backing off
//!                              ─▶ Ensure if generation unseen │ inventory contradicts │ resync due
//!           ─ migrating ────▶ the move's next step (nothing else until it ends)
//!           ─ deleting ─────▶ Delete on its host │ Release when it never got a host or VMID
//!  result ─▶ status (phase, conditions, ips) if it differs, events on transitions, back-off
//! ```
//!
//! No clock, no I/O, no randomness: time comes in as [`Clock`], so a table of inputs gives the
//! same actions every time.

mod action;
pub mod batch;
mod delete;
mod ensure;
mod inputs;
pub mod migrate;
mod place;
mod planner;
mod stale;
pub mod status;

pub use action::Action;
pub use inputs::{
    BACKOFF_FIRST_MS, BACKOFF_MAX_MS, Backoff, Clock, Inflight, InflightCommand, LiveHost,
    LiveView, Policy, VmMemory,
};
use planner::Inputs;

#[cfg(test)]
mod tests;

use crate::state::FleetState;

/// Everything to do now, VM by VM in name order (deterministic for the same inputs).
pub fn plan(
    state: &FleetState,
    live: &LiveView,
    inflight: &Inflight,
    policy: &Policy,
    now: Clock,
) -> Vec<Action> {
    let mut placer = place::Placer::new(state, live, policy, now);
    let avoid = ensure::avoid_vmids(state);
    let inputs = Inputs {
        state,
        live,
        inflight,
        policy,
        now,
    };
    let mut actions = Vec::new();
    for rec in state.vms().values() {
        let memory = inflight.memory(&rec.spec.name);
        if rec.deleting {
            inputs.planner(&mut actions).delete(rec, &memory);
            continue;
        }
        // Only the actions this VM adds from here can place it: looking through all of them
        // made planning n new VMs cost n² comparisons.
        let its_own = actions.len();
        if rec.assignment.host.is_none() {
            placer.place(rec, now, &mut actions);
        }
        let placed = rec.assignment.host.is_some()
            || actions[its_own..]
                .iter()
                .any(|a| matches!(a, Action::Schedule { vm, .. } if *vm == rec.spec.name));
        if !placed {
            continue;
        }
        if ensure::plan_allocations(rec, &memory, &avoid, now, &mut actions) {
            continue;
        }
        // PVE HA's `error`: no retry until the operator changes the VM's HA state.
        if state.ha_error(&rec.spec.name).is_some() {
            continue;
        }
        let mut planner = inputs.planner(&mut actions);
        // A VM being moved gets the move and nothing else.
        match state.migration(&rec.spec.name) {
            Some(m) => planner.migration(rec, m, &memory),
            None => planner.ensure(rec, &memory),
        }
    }
    stale::plan_stale_copies(state, live, inflight, policy, now, &mut actions);
    actions
}
