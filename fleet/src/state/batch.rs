//! Many independent steps in one log entry ([`Command::Batch`]): the leader's reconciler
//! proposes the steps of every VM it acts on at once instead of one entry per step, so a
//! thousand new VMs cost a few entries (and disk flushes), not thousands. Each chain is one
//! VM's steps, applied in order until one is refused, exactly as they would be one entry
//! each; chains do not affect each other's acceptance.
//!
//! The leader's group commit (`coordinator/src/service/group_commit.rs`) uses the same entry
//! for concurrent clients' writes: one chain per write, usually a [`Command::Once`], which
//! remembers its request's reply exactly as in an entry of its own (the memory is keyed by
//! request, not by log index). Batches do not nest, not even inside a `Once`.
//!
//! [`Command::Batch`]: super::Command::Batch
//! [`Command::Once`]: super::Command::Once

use super::{Command, CommandReply, FleetState, StateError};

impl FleetState {
    /// Applies each chain until its first refusal; the replies per chain.
    pub(super) fn batch(&mut self, chains: Vec<Vec<Command>>) -> Result<CommandReply, StateError> {
        let mut out = Vec::with_capacity(chains.len());
        for chain in chains {
            let mut replies = Vec::with_capacity(chain.len());
            for cmd in chain {
                let reply = if let Some(nested) = nested_batch(&cmd) {
                    Err(StateError::Conflict(format!(
                        "a batch cannot hold a {nested} command"
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

/// The name of what would nest a batch in a batch (`Batch`, or a `Once` wrapping one).
fn nested_batch(cmd: &Command) -> Option<&'static str> {
    match cmd {
        Command::Batch { .. } => Some("Batch"),
        Command::Once { command, .. } if matches!(**command, Command::Batch { .. }) => {
            Some("Once wrapping a Batch")
        }
        _ => None,
    }
}
