//! The planner of one VM in one reconciler pass, shaped like openraft's `LeaderHandler`: it
//! borrows the pass's inputs (the replicated state, the live view of the hosts, the commands
//! in flight, the policy, the time) and pushes the actions it decides to the pass's output.
//! Its steps live beside what they decide: `ensure` (ensure.rs), `delete` (delete.rs),
//! `migration` (migrate.rs).

use super::{Action, Clock, Inflight, LiveView, Policy};
use crate::state::FleetState;

/// The inputs of a pass, borrowed, and the output its actions go to.
pub(super) struct Planner<'a> {
    /// The replicated state.
    pub(super) state: &'a FleetState,
    /// What the hosts report.
    pub(super) live: &'a LiveView,
    /// The commands in flight and each VM's memory.
    pub(super) inflight: &'a Inflight,
    /// The reconciler's knobs.
    pub(super) policy: &'a Policy,
    /// The time of the pass.
    pub(super) now: Clock,
    /// Where the actions go, in order.
    pub(super) out: &'a mut Vec<Action>,
}
