//! The executor: runs each coordinator command at most once through the journal and returns
//! its result, the stored one for a repeated id (ARCHITECTURE.md §3 rule 4).

use protocol::agent::{AgentCommand, CommandResult};

use crate::journal::Journal;
use crate::ops::VmOps;

/// Runs commands on this host.
#[derive(Debug, Clone)]
pub struct Executor {
    #[allow(dead_code)]
    journal: Journal,
    #[allow(dead_code)]
    ops: VmOps,
}

impl Executor {
    /// An executor journaling in `journal` and acting through `ops`.
    pub fn new(journal: Journal, ops: VmOps) -> Executor {
        Executor { journal, ops }
    }

    /// The VM operations it uses (inventory shares the PVE client).
    pub fn ops(&self) -> &VmOps {
        &self.ops
    }

    /// Runs `cmd` unless its id ran before, and returns its result.
    pub async fn execute(&self, cmd: AgentCommand) -> CommandResult {
        CommandResult {
            id: cmd.id,
            outcome: Err(protocol::agent::CommandFailure {
                kind: protocol::agent::FailureKind::Permanent,
                step: "execute".into(),
                message: "not built yet".into(),
            }),
        }
    }
}
