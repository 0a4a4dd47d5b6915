//! Why the demo could not start or finish. Each message names the part that failed, where its
//! log is, and what to do.

use std::path::PathBuf;
use std::time::Duration;

use crate::error::LabCliError;
use client::ClientError;
use lab::LabError;

/// A failure of `pvefleet-lab demo`.
#[derive(Debug, thiserror::Error)]
pub(crate) enum DemoError {
    /// An argument combination clap cannot check.
    #[error("{0}")]
    Usage(String),
    /// Starting, watching or stopping the fleet's processes failed.
    #[error("{0}")]
    Lab(#[from] LabError),
    /// A cluster call failed.
    #[error("{0}")]
    Client(#[from] ClientError),
    /// The fleet did not converge in time.
    #[error(
        "{pending} of {total} VMs were not ready after {}s:\n{details}\nthe logs in {} say why",
        after.as_secs(),
        logs.display()
    )]
    NotConverged {
        /// VMs not yet in their desired state.
        pending: usize,
        /// VMs in the file.
        total: usize,
        /// How long the demo waited.
        after: Duration,
        /// One line per pending VM: name, phase, message.
        details: String,
        /// The log directory.
        logs: PathBuf,
    },
}

impl From<DemoError> for LabCliError {
    fn from(e: DemoError) -> LabCliError {
        match e {
            DemoError::Client(e) | DemoError::Lab(LabError::Client(e)) => LabCliError::Client(e),
            DemoError::Usage(message) => LabCliError::Usage(message),
            other => LabCliError::Demo(other.to_string()),
        }
    }
}
