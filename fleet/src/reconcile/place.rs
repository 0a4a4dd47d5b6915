//! Placing VMs that have no host: the scheduler over the hosts' replicated views, where a host
//! the leader knows to be silent counts as unreachable, and where each VM placed in this tick
//! is added to its host's usage before the next VM is placed (otherwise a burst of VMs would
//! all land on the host that looked best before the burst).

use protocol::fleet::{
    Condition, ConditionKind, EventLevel, HostState, VmPhase, VmRecord, VmStatus,
};
use protocol::spec::VmSpec;

use super::{Action, Clock, LiveView, Policy};
use crate::affinity::AffinityGroups;
use crate::scheduler::{self, HostView};
use crate::state::FleetState;
use crate::views::{host_views, place_on, take_storage};

/// The hosts of one tick, updated as VMs are placed.
pub(super) struct Placer<'a> {
    state: &'a FleetState,
    views: Vec<HostView>,
    groups: AffinityGroups<'a>,
}

impl<'a> Placer<'a> {
    /// The views of `state`, silent hosts marked unreachable.
    pub(super) fn new(
        state: &'a FleetState,
        live: &LiveView,
        policy: &Policy,
        now: Clock,
    ) -> Placer<'a> {
        let mut views = host_views(state);
        for view in &mut views {
            if view.state == HostState::Online && live.is_silent(view.id, policy, now) {
                view.state = HostState::Unreachable;
            }
        }
        Placer {
            state,
            views,
            groups: AffinityGroups::of(state),
        }
    }

    /// Places `rec` (which has no host): a Schedule with the Scheduled status, or the
    /// scheduler's refusal as the Pending status and a warning when that message is new.
    pub(super) fn place(&mut self, rec: &VmRecord, now: Clock, out: &mut Vec<Action>) {
        let vm = rec.spec.name.clone();
        // Members of its group not placed yet go where it goes: their constraints count.
        let pending: Vec<&VmSpec> = self
            .groups
            .members(&rec.spec)
            .into_iter()
            .filter(|m| {
                self.state
                    .vm(&m.name)
                    .is_some_and(|r| r.assignment.host.is_none())
            })
            .collect();
        match scheduler::choose_with(&rec.spec, &pending, &self.views, self.state.settings()) {
            Ok(decision) => {
                if let Some(view) = self.views.iter_mut().find(|v| v.id == decision.host_id) {
                    place_on(view, &rec.spec);
                    take_storage(view, &rec.spec);
                }
                out.push(Action::Schedule {
                    vm: vm.clone(),
                    host: decision.host_id,
                });
                out.push(Action::SetStatus {
                    vm,
                    status: scheduled_status(rec, &decision.host_name, now),
                });
            }
            Err(refusal) => {
                let message = refusal.to_string();
                if rec.status.phase == VmPhase::Pending && rec.status.message == message {
                    return;
                }
                out.push(Action::SetStatus {
                    vm: vm.clone(),
                    status: VmStatus {
                        phase: VmPhase::Pending,
                        message: message.clone(),
                        updated_at: now.unix_ms,
                        ..rec.status.clone()
                    },
                });
                out.push(Action::Event {
                    vm,
                    level: EventLevel::Warning,
                    message,
                });
            }
        }
    }
}

/// The status of a VM just placed on `host_name`.
fn scheduled_status(rec: &VmRecord, host_name: &str, now: Clock) -> VmStatus {
    VmStatus {
        phase: VmPhase::Scheduled,
        conditions: vec![Condition {
            kind: ConditionKind::Scheduled,
            status: true,
            reason: "Placed".to_string(),
            message: format!("placed on host {host_name}"),
            since: now.unix_ms,
        }],
        current_host: None,
        ips: Vec::new(),
        message: format!("placed on host {host_name}"),
        observed_generation: rec.status.observed_generation,
        updated_at: now.unix_ms,
    }
}
