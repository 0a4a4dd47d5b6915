//! The registry of one-shot agent commands (restart, snapshots) in flight or just finished,
//! shared by a member's services: identical retries join the run in flight.

use std::sync::Arc;

use protocol::agent::{CommandFailure, CommandOutput};
use transport::RemoteError;

use super::runs::{self, Runs};

pub(crate) type RunResult = Result<Result<CommandOutput, CommandFailure>, RemoteError>;

/// One-shot commands in flight or just finished, of one member.
pub(crate) type OneShotRuns = Arc<Runs<RunResult>>;

/// An empty registry of one-shot runs for a new member.
pub(crate) fn one_shot_runs() -> OneShotRuns {
    Arc::new(Runs::new(runs::GRACE))
}
