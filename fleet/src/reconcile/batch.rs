//! One tick's actions as few log entries: each VM's actions become one chain of a
//! [`Command::Batch`] (the commands in order, stopping at a refusal, as one entry each would),
//! and once the batch's replies are known, [`VmSteps::settle`] says which of the VM's sends
//! to queue and which action was refused — exactly what applying the actions one by one
//! would have done.
//!
//! ```text
//!  actions ─▶ by_vm ─▶ VmSteps ─▶ chain(now) ─┐
//!                                             ├─▶ Command::Batch ─▶ replies per chain
//!  settle(replies) ◀──────────────────────────┘
//!     ─▶ sends whose earlier commands were all applied │ the refused action, if any
//! ```

use protocol::NodeId;
use protocol::agent::Op;
use protocol::fleet::UnixMillis;

use super::Action;
use crate::state::{Command, CommandReply, StateError};

/// One VM's actions of a tick, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VmSteps {
    actions: Vec<Action>,
}

/// A command for a host, to queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Send {
    /// The host.
    pub host: NodeId,
    /// The spec generation it is made for.
    pub generation: u64,
    /// The command.
    pub op: Op,
}

/// What became of one VM's actions.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Settled {
    /// The sends to queue, in order.
    pub sends: Vec<Send>,
    /// The action the state machine refused (its later actions were dropped).
    pub refused: Option<(Action, StateError)>,
}

/// Groups actions by VM: consecutive actions of one VM (as [`super::plan`] and the reactions
/// to results emit them) form its steps.
pub fn by_vm(actions: Vec<Action>) -> Vec<VmSteps> {
    let mut out: Vec<VmSteps> = Vec::new();
    for action in actions {
        match out.last_mut() {
            Some(steps) if steps.actions[0].vm() == action.vm() => steps.actions.push(action),
            _ => out.push(VmSteps {
                actions: vec![action],
            }),
        }
    }
    out
}

impl VmSteps {
    /// The VM.
    pub fn vm(&self) -> &str {
        self.actions.first().map_or("", Action::vm)
    }

    /// Its commands at `now`, in order: its chain of a [`Command::Batch`] (empty when it only
    /// sends).
    pub fn chain(&self, now: UnixMillis) -> Vec<Command> {
        self.actions.iter().filter_map(|a| a.command(now)).collect()
    }

    /// The actions, once the replies to its chain are known (`None`: the proposal failed, so
    /// no command is known to be applied): a send is queued when every command before it
    /// was applied; a refusal stops the rest.
    pub fn settle(self, replies: Option<&[CommandReply]>) -> Settled {
        let replies = replies.unwrap_or_default();
        let mut settled = Settled::default();
        let mut next = 0;
        for action in self.actions {
            if let Action::Send {
                host,
                generation,
                op,
            } = action
            {
                settled.sends.push(Send {
                    host,
                    generation,
                    op,
                });
                continue;
            }
            match replies.get(next) {
                Some(CommandReply::Refused(e)) => {
                    settled.refused = Some((action, e.clone()));
                    return settled;
                }
                Some(_) => next += 1,
                // Not applied (the proposal failed): nothing after it may happen.
                None => return settled,
            }
        }
        settled
    }
}

#[cfg(test)]
mod tests {
    use protocol::agent::{DeleteVm, Op};
    use protocol::fleet::{EventLevel, VmStatus};

    use super::*;

    fn send(vm: &str) -> Action {
        Action::Send {
            host: 1,
            generation: 2,
            op: Op::Delete(DeleteVm {
                name: vm.into(),
                vmid: 100,
            }),
        }
    }

    fn status(vm: &str) -> Action {
        Action::SetStatus {
            vm: vm.into(),
            status: VmStatus::default(),
        }
    }

    fn event(vm: &str) -> Action {
        Action::Event {
            vm: vm.into(),
            level: EventLevel::Info,
            message: "m".into(),
        }
    }

    fn refused() -> CommandReply {
        CommandReply::Refused(StateError::Conflict("no".into()))
    }

    #[test]
    fn actions_group_by_vm_and_chain_their_commands_in_order() {
        let steps = by_vm(vec![status("a"), send("a"), event("b"), send("c")]);
        assert_eq!(steps.len(), 3);
        assert_eq!(steps[0].vm(), "a");
        assert_eq!(steps[0].chain(7).len(), 1, "the send is no command");
        assert!(matches!(
            steps[0].chain(7)[0],
            Command::SetVmStatus { now: 7, .. }
        ));
        assert!(steps[2].chain(7).is_empty());
    }

    #[test]
    fn settling_does_what_applying_one_by_one_would() {
        let steps = |actions| by_vm(actions).remove(0);
        let done = CommandReply::Done;
        /// Actions, the replies to their chain, the sends queued, whether one was refused.
        type Case = (Vec<Action>, Option<Vec<CommandReply>>, usize, bool);
        let cases: Vec<Case> = vec![
            // All applied: the send after the command goes.
            (
                vec![status("a"), send("a")],
                Some(vec![done.clone()]),
                1,
                false,
            ),
            // The command refused: its send does not.
            (vec![status("a"), send("a")], Some(vec![refused()]), 0, true),
            // A send before the refused command already went.
            (
                vec![send("a"), status("a"), event("a")],
                Some(vec![refused()]),
                1,
                true,
            ),
            // The second command refused: the first applied, the later send dropped.
            (
                vec![status("a"), event("a"), send("a")],
                Some(vec![done.clone(), refused()]),
                0,
                true,
            ),
            // The proposal failed: only the sends before any command.
            (vec![send("a"), status("a"), send("a")], None, 1, false),
            // Only sends: nothing to propose.
            (vec![send("a"), send("a")], Some(vec![]), 2, false),
        ];
        for (actions, replies, sends, is_refused) in cases {
            let shown = format!("{actions:?} {replies:?}");
            let settled = steps(actions).settle(replies.as_deref());
            assert_eq!(settled.sends.len(), sends, "{shown}");
            assert_eq!(settled.refused.is_some(), is_refused, "{shown}");
        }
    }
}
