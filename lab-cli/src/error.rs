//! Why a `pvefleet-lab` command failed, and the exit code it ends with: the operator CLI's
//! codes ([`cli::ExitStatus`]), so scripts read both programs alike.
//!
//! | code | meaning |
//! |------|---------|
//! | 0 | success (a scenario: passed) |
//! | 1 | a scenario or chaos campaign did not pass; the demo's fleet failed; output could not be written |
//! | 2 | usage: bad arguments (clap), an unreadable or invalid scenario file, a run that could not start |
//! | 3 | the fleet file given to `demo --file` is invalid |
//! | 4, 5 | a call to the demo's cluster failed (not found, unavailable), as `pvefleet` |

use cli::exit::client_status;
use cli::{CliError, ExitStatus};
use client::ClientError;

/// A failure of `pvefleet-lab`. The message says what was wrong and what to do.
#[derive(Debug, thiserror::Error)]
pub enum LabCliError {
    /// What the operator CLI's code reported (reading the fleet file, the demo's listings),
    /// with its exit code. Boxed: it is the largest error by far.
    #[error("{0}")]
    Cli(Box<CliError>),
    /// A call to the demo's cluster failed.
    #[error("{0}")]
    Client(#[from] ClientError),
    /// An argument value, a scenario file or the run's start is unusable in a way clap cannot
    /// check.
    #[error("{0}")]
    Usage(String),
    /// The demo could not start or run its fleet (the message names the step and where the
    /// logs are).
    #[error("{0}")]
    Demo(String),
    /// A scenario or chaos campaign did not pass, or its run ended abnormally.
    #[error("{0}")]
    Scenario(String),
    /// The output could not be produced or written.
    #[error("cannot write the output: {0}")]
    Output(String),
}

impl From<CliError> for LabCliError {
    fn from(e: CliError) -> LabCliError {
        LabCliError::Cli(Box::new(e))
    }
}

impl LabCliError {
    /// The exit status this error ends the process with.
    pub fn status(&self) -> ExitStatus {
        match self {
            LabCliError::Cli(e) => e.status(),
            LabCliError::Client(e) => client_status(e),
            LabCliError::Usage(_) => ExitStatus::Usage,
            LabCliError::Demo(_) | LabCliError::Scenario(_) | LabCliError::Output(_) => {
                ExitStatus::Failed
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    #[test]
    fn exit_codes_are_the_operator_clis() {
        assert_eq!(LabCliError::Usage("x".into()).status().code(), 2);
        assert_eq!(LabCliError::Demo("x".into()).status().code(), 1);
        assert_eq!(LabCliError::Scenario("x".into()).status().code(), 1);
        assert_eq!(LabCliError::Output("x".into()).status().code(), 1);
        let unreadable = CliError::ReadFile {
            path: PathBuf::from("fleet.toml"),
            source: std::io::Error::from(std::io::ErrorKind::NotFound),
        };
        assert_eq!(LabCliError::from(unreadable).status().code(), 2);
        assert_eq!(
            LabCliError::from(ClientError::NotFound("vm web".into()))
                .status()
                .code(),
            4
        );
        assert_eq!(
            LabCliError::Output("disk full".into()).to_string(),
            "cannot write the output: disk full"
        );
    }
}
