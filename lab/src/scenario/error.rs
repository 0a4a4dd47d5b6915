//! Why a scenario could not be read or run. A file problem names the entry and the key
//! (`event[3].host`); a start problem names the step and where the logs are. A scenario that
//! ran and failed (a violated invariant, an unmet expectation) is no error: it is an
//! [`Outcome`](super::Outcome) that did not pass.

use std::path::PathBuf;

use crate::error::LabError;

/// A scenario file refused, or a scenario that could not start.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    /// The file could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The system's reason.
        #[source]
        source: std::io::Error,
    },
    /// Not TOML, or a top-level key the format does not have (the message has the line).
    #[error("{0}")]
    Toml(String),
    /// An entry is invalid: `at` names it (`event[3].host`, `vm[0].memory_mib`, `timeout`).
    #[error("{at}: {problem}")]
    Invalid {
        /// The entry and key.
        at: String,
        /// What is wrong and what is allowed.
        problem: String,
    },
    /// The scenario cuts links but this run has no private network namespace to cut them in.
    #[error(
        "{at}: partition needs a network namespace: run as root or enable unprivileged user \
         namespaces ({why})"
    )]
    NoNamespace {
        /// The first partition event.
        at: String,
        /// Why the run has no namespace of its own.
        why: String,
    },
    /// Entering or preparing the private network namespace failed.
    #[error("network namespace: {0}")]
    Namespace(String),
    /// The fleet could not be started or did not reach its desired state (the message names
    /// the step and the logs).
    #[error("could not start the scenario's fleet: {source}")]
    Start {
        /// What failed.
        #[source]
        source: LabError,
    },
    /// The fleet started but its VMs did not all reach their desired state in time.
    #[error("the scenario's VMs did not reach their desired state within {secs} s: {pending}")]
    NotConverged {
        /// How long the runner waited.
        secs: u64,
        /// The VMs still pending, with their phase and message.
        pending: String,
    },
    /// The bring-up as a whole took longer than its hard limit.
    #[error("the scenario's fleet was not up within {secs} s (the logs are in the lab's logs/)")]
    Deadline {
        /// The limit.
        secs: u64,
    },
    /// The writing clients (`[fleet] clients`) could not start.
    #[error("could not start the scenario's clients: {0}")]
    Clients(String),
    /// The run was interrupted before the scenario started.
    #[error("interrupted before the scenario started")]
    Interrupted,
}

impl ScenarioError {
    /// An invalid entry.
    pub fn invalid(at: impl Into<String>, problem: impl Into<String>) -> ScenarioError {
        ScenarioError::Invalid {
            at: at.into(),
            problem: problem.into(),
        }
    }
}

impl From<LabError> for ScenarioError {
    fn from(source: LabError) -> ScenarioError {
        ScenarioError::Start { source }
    }
}
