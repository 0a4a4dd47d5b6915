//! Why the lab could not start, drive or stop a part of its fleet. Each message names the part
//! (`coordinator 2`, `agent pve-a`, `pve-sim pve-a`), where its log is, and what to do.

use std::path::PathBuf;

use client::ClientError;

/// A failure of the launcher.
#[derive(Debug, thiserror::Error)]
pub enum LabError {
    /// The path of the running executable is unknown, so its sibling binaries cannot be found.
    #[error(
        "cannot locate the running executable ({0}): run it by its path, e.g. target/release/pvefleet-lab demo"
    )]
    CurrentExe(std::io::Error),
    /// A binary the lab runs is not where the workspace builds it.
    #[error(
        "{name} not found in {}: the lab runs the binaries built beside the running program; \
         build them all with `cargo build --release --bins` (tests: `cargo build --bins`)",
        dir.display()
    )]
    MissingBinary {
        /// The binary's file name.
        name: String,
        /// Where it was looked for.
        dir: PathBuf,
    },
    /// The lab's directory cannot be used.
    #[error("{}: {reason}", path.display())]
    Dir {
        /// The directory.
        path: PathBuf,
        /// What is wrong and what to do.
        reason: String,
    },
    /// A child process could not be started or signalled.
    #[error("cannot start {what}: {source}")]
    Spawn {
        /// The part.
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
    /// A long-running child exited or stayed silent instead of printing its ready line, or
    /// the fleet did not reach a state in time.
    #[error("{what} {problem}; the end of its log {}:\n{tail}", log.display())]
    NotReady {
        /// The part.
        what: String,
        /// `exited before it was ready (status)`, `printed no ready line within N s`, ...
        problem: String,
        /// Its log file (or the log directory).
        log: PathBuf,
        /// The last lines of the log.
        tail: String,
    },
    /// An action named a part the lab does not have or that is in the wrong state.
    #[error("{0}")]
    NoSuchPart(String),
    /// A SIGSTOP or SIGCONT did not take effect on every thread of a part in time.
    #[error(
        "{what} is not {wanted} {after:?} after the signal; it may be stuck in the kernel (state D)"
    )]
    Signal {
        /// The part.
        what: String,
        /// `stopped` or `running`.
        wanted: &'static str,
        /// How long the lab waited.
        after: std::time::Duration,
    },
    /// A cluster call failed.
    #[error("{0}")]
    Client(#[from] ClientError),
    /// A call to a simulator's control endpoints or its API failed, on every listener tried.
    #[error("pve-sim control {call}: {reason}")]
    SimControl {
        /// The call (`POST /_sim/nodes/pve-a/power`).
        call: String,
        /// What each listener answered, or why the client could not be made.
        reason: String,
    },
    /// An `ip` command failed.
    #[error("ip {args} failed: {reason} (hosts in network namespaces need root and iproute2)")]
    Ip {
        /// Its arguments.
        args: String,
        /// Its exit status and output.
        reason: String,
    },
    /// An `nft` script was refused in a namespace.
    #[error("nft in {netns} failed: {reason} (hosts in network namespaces need nftables)")]
    Nft {
        /// The namespace.
        netns: String,
        /// Its exit status and output.
        reason: String,
    },
    /// A thread could not move into a network namespace.
    #[error("cannot enter the network namespace {netns}: {source}")]
    Enter {
        /// The namespace.
        netns: String,
        /// The system's reason.
        #[source]
        source: std::io::Error,
    },
    /// Writing a file of the lab failed.
    #[error("cannot write {}: {source}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// The system's reason.
        #[source]
        source: std::io::Error,
    },
}
