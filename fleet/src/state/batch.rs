//! Many independent steps in one log entry ([`Command::Batch`]): the leader's reconciler
//! proposes the steps of every VM it acts on at once instead of one entry per step, so a
//! thousand new VMs cost a few entries (and disk flushes), not thousands. Each chain is one
//! VM's steps, applied in order until one is refused, exactly as they would be one entry
//! each; chains do not affect each other's acceptance.
//!
//! [`Command::Batch`]: super::Command::Batch

use super::{Command, CommandReply, FleetState, StateError};

impl FleetState {
    /// Applies each chain until its first refusal; the replies per chain.
    pub(super) fn batch(&mut self, chains: Vec<Vec<Command>>) -> Result<CommandReply, StateError> {
        let mut out = Vec::with_capacity(chains.len());
        for chain in chains {
            let mut replies = Vec::with_capacity(chain.len());
            for cmd in chain {
                let reply = if matches!(cmd, Command::Batch { .. } | Command::Once { .. }) {
                    // A request's write is remembered by its own entry; batches do not nest.
                    Err(StateError::Conflict(format!(
                        "a batch cannot hold a {} command",
                        cmd.name()
                    )))
                } else {
                    self.dispatch(cmd)
                };
                match reply {
                    Ok(reply) => replies.push(reply),
                    Err(e) => {
                        replies.push(CommandReply::Refused(e));
                        break;
                    }
                }
            }
            out.push(replies);
        }
        Ok(CommandReply::Batch(out))
    }
}
