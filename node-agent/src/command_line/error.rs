//! Why a command of the agent's binary failed, and the exit code each failure means.

use crate::config::ConfigError;
use crate::daemon::AgentError;
use crate::fence::LaunchError;
use crate::join::JoinError;

/// Why a command failed.
#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    /// A bad argument (the join token's source, the member's address; exit 2).
    #[error("{0}")]
    Usage(String),
    /// The configuration file (exit 2).
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The agent (exit 2 for its configuration, else 1); boxed, as it is large.
    #[error(transparent)]
    Agent(Box<AgentError>),
    /// The fence guard (exit 2 for its configuration, else 1).
    #[error(transparent)]
    Guard(#[from] LaunchError),
    /// The join (exit 3 when the cluster refused, else 1).
    #[error(transparent)]
    Join(#[from] JoinError),
    /// The child guard could not be started (exit 1).
    #[error("cannot start the fence guard: {0}")]
    ChildGuard(std::io::Error),
}

impl CommandError {
    /// The process's exit code: 2 bad command line or configuration, 3 refused by the
    /// cluster, 1 anything else.
    pub fn exit_code(&self) -> u8 {
        match self {
            CommandError::Usage(_) | CommandError::Config(_) => 2,
            CommandError::Agent(e)
                if matches!(**e, AgentError::Config(_) | AgentError::Platform(_)) =>
            {
                2
            }
            CommandError::Guard(LaunchError::Config(_) | LaunchError::Platform(_)) => 2,
            CommandError::Join(e) if e.is_refusal() => 3,
            CommandError::Agent(_)
            | CommandError::Guard(_)
            | CommandError::Join(_)
            | CommandError::ChildGuard(_) => 1,
        }
    }
}

impl From<AgentError> for CommandError {
    fn from(e: AgentError) -> CommandError {
        CommandError::Agent(Box::new(e))
    }
}
