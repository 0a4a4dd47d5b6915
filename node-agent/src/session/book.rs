//! The session's command bookkeeping, pure: which command ids are running (admitted, queued or
//! executing) and which results wait for the leader's acknowledgement. A delivered id that is
//! in either set is ignored: the leader re-delivers commands it has no result for, and the
//! agent must not start a second run while the first one or its unacknowledged result exists.

use std::collections::{BTreeMap, BTreeSet};

use protocol::agent::CommandResult;

/// Running ids and unacknowledged results.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CommandBook {
    running: BTreeSet<String>,
    /// By id; sent on every beat until acknowledged.
    unacked: BTreeMap<String, CommandResult>,
}

impl CommandBook {
    /// An empty book.
    pub fn new() -> CommandBook {
        CommandBook::default()
    }

    /// Admits a delivered command id: `false` (ignore it) when it is running or its result
    /// waits for an acknowledgement.
    pub fn admit(&mut self, id: &str) -> bool {
        if self.unacked.contains_key(id) {
            return false;
        }
        self.running.insert(id.to_string())
    }

    /// Records a finished command's result (to be sent until acknowledged).
    pub fn finish(&mut self, result: CommandResult) {
        self.running.remove(&result.id);
        self.unacked.insert(result.id.clone(), result);
    }

    /// Forgets a running id that ended without a result (its task died); the leader's
    /// re-delivery then runs it again through the journal.
    pub fn forget(&mut self, id: &str) {
        self.running.remove(id);
    }

    /// The leader recorded these results: stop sending them.
    pub fn ack<'a>(&mut self, ids: impl IntoIterator<Item = &'a String>) {
        for id in ids {
            self.unacked.remove(id);
        }
    }

    /// The ids running now, sorted.
    pub fn running(&self) -> Vec<String> {
        self.running.iter().cloned().collect()
    }

    /// The results to send, sorted by id.
    pub fn unacked(&self) -> Vec<CommandResult> {
        self.unacked.values().cloned().collect()
    }

    /// Whether nothing is running.
    pub fn idle(&self) -> bool {
        self.running.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use protocol::agent::{CommandOutput, FailureKind};

    use super::*;

    fn result(id: &str) -> CommandResult {
        CommandResult {
            id: id.into(),
            outcome: Ok(CommandOutput::Deleted { existed: false }),
        }
    }

    #[test]
    fn a_command_is_admitted_once_until_its_result_is_acked() {
        let mut book = CommandBook::new();
        assert!(book.admit("a"));
        assert!(!book.admit("a"), "running");
        assert_eq!(book.running(), ["a"]);
        book.finish(result("a"));
        assert!(book.running().is_empty());
        assert!(!book.admit("a"), "awaiting ack");
        assert_eq!(book.unacked(), [result("a")]);
        book.ack(&["a".to_string()]);
        assert!(book.unacked().is_empty());
        // Re-delivered after the ack: the journal answers it, so it may run through again.
        assert!(book.admit("a"));
    }

    #[test]
    fn results_are_resent_until_acked_and_unknown_acks_are_ignored() {
        let mut book = CommandBook::new();
        for id in ["b", "a"] {
            assert!(book.admit(id));
            book.finish(CommandResult {
                id: id.into(),
                outcome: Err(protocol::agent::CommandFailure {
                    kind: FailureKind::Transient,
                    step: "x".into(),
                    message: "y".into(),
                }),
            });
        }
        let ids = |b: &CommandBook| b.unacked().into_iter().map(|r| r.id).collect::<Vec<_>>();
        assert_eq!(ids(&book), ["a", "b"]);
        book.ack(&["zzz".to_string(), "b".to_string()]);
        assert_eq!(ids(&book), ["a"]);
    }

    #[test]
    fn a_forgotten_id_can_be_admitted_again() {
        let mut book = CommandBook::new();
        assert!(book.admit("a"));
        book.forget("a");
        assert!(book.idle());
        assert!(book.admit("a"));
    }
}
