//! Why the demo could not start or finish. Each message names the part that failed, where its
//! log is, and what to do.

use std::path::PathBuf;
use std::time::Duration;

use crate::exit::CliError;
use client::ClientError;

/// A failure of `pvefleet demo`.
#[derive(Debug, thiserror::Error)]
pub(crate) enum DemoError {
    /// An argument combination clap cannot check.
    #[error("{0}")]
    Usage(String),
    /// The path of the running `pvefleet` is unknown, so its sibling binaries cannot be found.
    #[error(
        "cannot locate the running pvefleet executable ({0}): run it by its path, e.g. target/release/pvefleet demo"
    )]
    CurrentExe(std::io::Error),
    /// A binary the demo runs is not next to `pvefleet`.
    #[error(
        "{name} not found in {}: the demo runs the binaries built beside pvefleet; build them all \
         with `cargo build --release --bins` and run target/release/pvefleet demo (or `make demo`)",
        dir.display()
    )]
    MissingBinary {
        /// The binary's file name.
        name: &'static str,
        /// Where it was looked for.
        dir: PathBuf,
    },
    /// The state directory cannot be used.
    #[error("{}: {reason}", path.display())]
    Dir {
        /// The directory.
        path: PathBuf,
        /// What is wrong and what to do.
        reason: String,
    },
    /// A child process could not be started.
    #[error("cannot start {what}: {source}")]
    Spawn {
        /// The part (`coordinator 2`, `agent pve-a`).
        what: String,
        /// The system's reason.
        #[source]
        source: std::io::Error,
    },
    /// A one-shot step (`init`, `join`) failed.
    #[error("{what} failed ({status}):\n{output}")]
    Step {
        /// The step.
        what: String,
        /// Its exit status.
        status: std::process::ExitStatus,
        /// What it printed.
        output: String,
    },
    /// A long-running child exited or stayed silent instead of printing its ready line.
    #[error("{what} {problem}; the end of its log {}:\n{tail}", log.display())]
    NotReady {
        /// The part.
        what: String,
        /// `exited (status)` or `printed no ready line within N s`.
        problem: String,
        /// Its log file.
        log: PathBuf,
        /// The last lines of the log.
        tail: String,
    },
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
    /// Writing a file of the demo failed.
    #[error("cannot write {}: {source}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// The system's reason.
        #[source]
        source: std::io::Error,
    },
}

impl From<DemoError> for CliError {
    fn from(e: DemoError) -> CliError {
        match e {
            DemoError::Client(e) => CliError::Client(e),
            DemoError::Usage(message) => CliError::Usage(message),
            other => CliError::Demo(other.to_string()),
        }
    }
}
