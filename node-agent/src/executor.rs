//! The executor: runs each coordinator command at most once through the journal and returns
//! its result, the stored one for a repeated id (docs/design/architecture.md, safety rule 4).
//!
//! ```text
//!  execute(cmd) ─▶ journal.begin(id, cmd)
//!      Run        ─▶ run the op ─▶ finish(id, outcome) ─▶ answer
//!      Done(r)    ─▶ answer r again
//!      InProgress ─▶ Transient "already running" (not recorded)
//!      InDoubt    ─▶ ensure / delete / start / stop / shutdown / list: run again (level-based)
//!                    snapshot create: look whether the snapshot exists
//!                    restart, rollback, snapshot delete: FailureKind::InDoubt
//!                 ─▶ resolve_in_doubt(id, outcome) ─▶ answer
//! ```
//!
//! Every outcome is recorded, failures included: a retry is a new command with a new id.
//! A run that ends without an outcome (its task panicked or was dropped) gives its claim back
//! ([`Claim`]), so the next delivery of the id finds it in doubt and settles it, instead of
//! answering "already running" until the agent restarts.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use protocol::agent::{
    AgentCommand, CommandFailure, CommandOutput, CommandResult, FailureKind, Op, PowerAction,
    SnapshotAction, SnapshotOp,
};

use crate::diagnosis::Diagnoser;
use crate::error::JournalError;
use crate::journal::{Begin, Journal, MAX_COMMAND_ID_LEN};
use crate::journaled::Journaled;
use crate::ops::VmOps;
use crate::typed::TypedJournal;

/// What the journal stores per command.
pub(crate) type Outcome = Result<CommandOutput, CommandFailure>;

/// Finished entries the journal keeps (older ones are pruned).
pub(crate) const JOURNAL_KEEP: usize = 10_000;
/// Prune after this many recorded outcomes.
const PRUNE_EVERY: u64 = 500;

/// Runs commands on this host.
#[derive(Debug, Clone)]
pub struct Executor {
    /// Commands fingerprinted in the oldest layout that carries them (see `journaled`).
    journal: TypedJournal<Journaled, Outcome>,
    ops: VmOps,
    recorded: Arc<AtomicU64>,
    /// Answers [`Op::Diagnose`]; `None` refuses it.
    diagnoser: Option<Diagnoser>,
}

fn failure(kind: FailureKind, step: &str, message: impl Into<String>) -> CommandFailure {
    CommandFailure {
        kind,
        step: step.to_string(),
        message: message.into(),
    }
}

fn journal_failure(id: &str, err: &JournalError) -> CommandFailure {
    match err {
        JournalError::Conflict { .. } => failure(
            FailureKind::Permanent,
            "journal",
            format!(
                "command id {id:?} was already used for a different command; ids are never reused"
            ),
        ),
        JournalError::InvalidId { .. } => {
            failure(FailureKind::Permanent, "journal", err.to_string())
        }
        _ => failure(
            FailureKind::Transient,
            "journal",
            format!("the agent's command journal failed, nothing was run: {err}"),
        ),
    }
}

/// This task's claim on a command id between [`Journal::begin`] and the recorded outcome.
/// Dropped without [`Claim::recorded`] (a panic unwinding through the run, or the run's future
/// dropped), it abandons the id, which the journal then reports in doubt.
struct Claim<'a> {
    journal: &'a Journal,
    id: &'a str,
    open: bool,
}

impl<'a> Claim<'a> {
    fn new(journal: &'a Journal, id: &'a str) -> Self {
        Claim {
            journal,
            id,
            open: true,
        }
    }

    /// The outcome is recorded (or `record` already abandoned the id): nothing left to give back.
    fn recorded(mut self) {
        self.open = false;
    }
}

impl Drop for Claim<'_> {
    fn drop(&mut self) {
        if self.open {
            tracing::error!(
                command_id = self.id,
                "command ended without an outcome; the id is in doubt and settled when sent again"
            );
            self.journal.abandon(self.id);
        }
    }
}

/// How to settle a command found in doubt (started by an earlier process, no result).
enum Settle {
    /// Running it again is safe.
    Rerun,
    /// Look whether the snapshot exists.
    CheckSnapshot,
    /// Cannot know: tell the operator what to check.
    Unknown(String),
}

fn settle(op: &Op) -> Settle {
    match op {
        // A migration looks where the VM is first: running it again reports a finished move.
        // A remote migration too: it waits for a move still running, and a VM gone from the
        // source cluster is answered in doubt (the fleet asks the target).
        Op::Ensure(_)
        | Op::Delete(_)
        | Op::Vacate(_)
        | Op::Migrate(_)
        | Op::RemoteMigrate(_)
        | Op::OpenMigrationTarget(_)
        | Op::CloseMigrationTarget(_)
        | Op::Diagnose(_) => Settle::Rerun,
        Op::Power(p) => match p.action {
            PowerAction::Restart { .. } => Settle::Unknown(format!(
                "the agent stopped while restarting VM {} ({}); check its uptime in PVE and restart it again if needed",
                p.vmid, p.name
            )),
            PowerAction::Start | PowerAction::Stop | PowerAction::Shutdown { .. } => Settle::Rerun,
        },
        Op::Snapshot(s) => match &s.action {
            SnapshotAction::List => Settle::Rerun,
            SnapshotAction::Create { .. } => Settle::CheckSnapshot,
            SnapshotAction::Rollback { snapshot, .. } => Settle::Unknown(format!(
                "the agent stopped while rolling VM {} ({}) back to '{snapshot}'; check the VM's state in PVE (qm config {}) and roll back again if needed",
                s.vmid, s.name, s.vmid
            )),
            SnapshotAction::Delete { snapshot } => Settle::Unknown(format!(
                "the agent stopped while deleting snapshot '{snapshot}' of VM {} ({}); check `qm listsnapshot {}` and delete it again if it is still there",
                s.vmid, s.name, s.vmid
            )),
        },
    }
}

impl Executor {
    /// An executor journaling in `journal` and acting through `ops`.
    pub fn new(journal: Journal, ops: VmOps) -> Executor {
        Executor {
            journal: TypedJournal::new(journal),
            ops,
            recorded: Arc::new(AtomicU64::new(0)),
            diagnoser: None,
        }
    }

    /// Answers diagnoses with `diagnoser`.
    pub fn with_diagnoser(mut self, diagnoser: Diagnoser) -> Executor {
        self.diagnoser = Some(diagnoser);
        self
    }

    /// The VM operations it uses (inventory shares the PVE client).
    pub fn ops(&self) -> &VmOps {
        &self.ops
    }

    /// Runs `cmd` unless its id ran before, and returns its result.
    pub async fn execute(&self, cmd: AgentCommand) -> CommandResult {
        let outcome = self.outcome(&cmd).await;
        CommandResult {
            id: cmd.id,
            outcome,
        }
    }

    async fn outcome(&self, cmd: &AgentCommand) -> Outcome {
        let id = cmd.id.as_str();
        if id.is_empty() || id.len() > MAX_COMMAND_ID_LEN {
            return Err(failure(
                FailureKind::Permanent,
                "journal",
                format!(
                    "command id of {} bytes refused: ids must be 1 to {MAX_COMMAND_ID_LEN} bytes",
                    id.len()
                ),
            ));
        }
        // Minting and deleting a migration token: harmless to repeat, and the answer of the
        // first holds a secret the journal must not keep (Op::is_unjournaled).
        if cmd.op.is_unjournaled() {
            return self.run(&cmd.op).await;
        }
        let begin = match self.journal.begin(id, &Journaled::of(cmd)).await {
            Ok(b) => b,
            Err(e) => return Err(journal_failure(id, &e)),
        };
        match begin {
            Begin::Done(stored) => stored,
            Begin::InProgress => Err(failure(
                FailureKind::Transient,
                "journal",
                format!(
                    "command {id} is already running on this agent; its result follows when done"
                ),
            )),
            Begin::Run => {
                let claim = Claim::new(self.journal.journal(), id);
                let outcome = self.run(&cmd.op).await;
                let answer = self.record(id, outcome, false).await;
                claim.recorded();
                answer
            }
            Begin::InDoubt => {
                let claim = Claim::new(self.journal.journal(), id);
                tracing::warn!(
                    command_id = id,
                    op = cmd.op.kind().as_str(),
                    vm = cmd.op.vm_name(),
                    "command in doubt after a restart"
                );
                let outcome = match settle(&cmd.op) {
                    Settle::Rerun => self.run(&cmd.op).await,
                    Settle::CheckSnapshot => self.settle_snapshot_create(&cmd.op).await,
                    Settle::Unknown(message) => Err(failure(
                        FailureKind::InDoubt,
                        cmd.op.kind().as_str(),
                        message,
                    )),
                };
                let answer = self.record(id, outcome, true).await;
                claim.recorded();
                answer
            }
        }
    }

    /// Stores the outcome durably before it is answered; if that fails the command stays in
    /// doubt (the next delivery settles it) and the answer says so.
    async fn record(&self, id: &str, outcome: Outcome, in_doubt: bool) -> Outcome {
        let stored = if in_doubt {
            self.journal.resolve_in_doubt(id, &outcome).await
        } else {
            self.journal.finish(id, &outcome).await
        };
        if let Err(e) = stored {
            self.journal.journal().abandon(id);
            tracing::error!(command_id = id, error = %e, "result not recorded");
            return Err(failure(
                FailureKind::Transient,
                "journal",
                format!(
                    "the command ran but its result could not be recorded ({e}); it will be settled when sent again"
                ),
            ));
        }
        self.prune_now_and_then().await;
        outcome
    }

    async fn prune_now_and_then(&self) {
        let n = self.recorded.fetch_add(1, Ordering::Relaxed) + 1;
        if n.is_multiple_of(PRUNE_EVERY) {
            match self.journal.journal().prune(JOURNAL_KEEP).await {
                Ok(removed) if removed > 0 => tracing::debug!(removed, "journal pruned"),
                Ok(_) => {}
                Err(e) => tracing::warn!(error = %e, "journal prune failed"),
            }
        }
    }

    async fn run(&self, op: &Op) -> Outcome {
        match op {
            Op::Ensure(e) => self.ops.ensure(e).await.map(CommandOutput::Vm),
            Op::Delete(d) => self
                .ops
                .delete(d)
                .await
                .map(|existed| CommandOutput::Deleted { existed }),
            Op::Power(p) => self.ops.power(p).await.map(CommandOutput::Vm),
            Op::Snapshot(s) => self.ops.snapshot(s).await.map(CommandOutput::Snapshots),
            Op::Migrate(m) => self
                .ops
                .migrate(m)
                .await
                .map(|(node, running)| CommandOutput::Migrated { node, running }),
            Op::Vacate(d) => self
                .ops
                .delete(d)
                .await
                .map(|existed| CommandOutput::Deleted { existed }),
            Op::RemoteMigrate(m) => self
                .ops
                .remote_migrate(m)
                .await
                .map(|(node, running)| CommandOutput::Migrated { node, running }),
            Op::OpenMigrationTarget(o) => self
                .ops
                .open_target(o)
                .await
                .map(CommandOutput::MigrationTarget),
            Op::CloseMigrationTarget(c) => self
                .ops
                .close_target(c)
                .await
                .map(|(arrived, running)| CommandOutput::TargetClosed { arrived, running }),
            Op::Diagnose(_) => match &self.diagnoser {
                Some(d) => Ok(CommandOutput::Diagnosis(Box::new(d.facts().await))),
                None => Err(failure(
                    FailureKind::Permanent,
                    "diagnose",
                    "this agent was started without diagnosis",
                )),
            },
        }
    }

    /// A snapshot create found in doubt: a complete snapshot means it happened (answer the
    /// list); none means it did not (take it now); a half-done one cannot be judged.
    async fn settle_snapshot_create(&self, op: &Op) -> Outcome {
        let Op::Snapshot(
            s @ SnapshotOp {
                action: SnapshotAction::Create { snapshot, .. },
                ..
            },
        ) = op
        else {
            return self.run(op).await;
        };
        match self.ops.snapshot_state(&s.name, s.vmid, snapshot).await? {
            Some(true) => {
                let list = SnapshotOp {
                    action: SnapshotAction::List,
                    ..s.clone()
                };
                self.ops.snapshot(&list).await.map(CommandOutput::Snapshots)
            }
            None => self.run(op).await,
            Some(false) => Err(failure(
                FailureKind::InDoubt,
                "snapshot",
                format!(
                    "the agent stopped while taking snapshot '{snapshot}' of VM {} ({}) and PVE shows it half done; check `qm listsnapshot {}` and delete or finish it",
                    s.vmid, s.name, s.vmid
                ),
            )),
        }
    }
}
