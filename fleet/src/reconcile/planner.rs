//! The planner of one VM in one reconciler pass, shaped like openraft's `LeaderHandler`: it
//! borrows the pass's inputs (the replicated state, the live view of the hosts, the commands
//! in flight, the policy, the time) and pushes the actions it decides to the pass's output.
//! Its steps live beside what they decide: `ensure` (ensure.rs), `delete` (delete.rs),
//! `migration` (migrate.rs).

use super::{Action, Clock, Inflight, LiveView, Policy};
use crate::state::FleetState;

/// The inputs of a pass, borrowed.
#[derive(Clone, Copy)]
pub(super) struct Inputs<'a> {
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
}

impl<'a> Inputs<'a> {
    /// A planner over these inputs whose actions go to `out`.
    pub(super) fn planner<'o>(self, out: &'o mut Vec<Action>) -> Planner<'o>
    where
        'a: 'o,
    {
        Planner { inputs: self, out }
    }
}

/// The inputs of a pass and the output its actions go to, in order.
pub(super) struct Planner<'a> {
    /// What the pass looks at.
    pub(super) inputs: Inputs<'a>,
    /// Where the actions go, in order.
    pub(super) out: &'a mut Vec<Action>,
}
