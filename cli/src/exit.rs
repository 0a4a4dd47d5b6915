//! Exit codes scripts can trust, and the CLI's error type that decides them.
//!
//! | code | meaning |
//! |------|---------|
//! | 0 | success |
//! | 1 | anything else (the coordinator failed, output could not be written, ...) |
//! | 2 | usage: bad arguments (clap), a missing or broken configuration, an unreadable file, an expired admin certificate, an unusable `admin add --out` directory |
//! | 3 | refused: invalid spec or request, conflict, unauthorized, certificates not accepted, revoking the admin in use |
//! | 4 | not found |
//! | 5 | unavailable: no member reachable, or no leader, within `--timeout` |
//! | 6 | `pvefleet doctor` found a problem (or, with `--strict`, a warning) |

use std::path::{Path, PathBuf};

use bootstrap::BootstrapError;
use bootstrap::cli_config::ConfigError;
use client::ClientError;
use protocol::NodeId;
use protocol::spec::SpecFileError;

/// A process exit status of `pvefleet`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum ExitStatus {
    /// Success.
    Ok = 0,
    /// Any failure without a more specific code.
    Failed = 1,
    /// The command line, the configuration or an input file is wrong.
    Usage = 2,
    /// The cluster (or the CLI's own validation) refused the request.
    Refused = 3,
    /// The named object does not exist.
    NotFound = 4,
    /// No member answered, or no leader was known, before the timeout.
    Unavailable = 5,
    /// `pvefleet doctor` found something to fix.
    Unhealthy = 6,
}

impl ExitStatus {
    /// The numeric exit code.
    pub fn code(self) -> u8 {
        self as u8
    }
}

impl From<ExitStatus> for std::process::ExitCode {
    fn from(status: ExitStatus) -> std::process::ExitCode {
        std::process::ExitCode::from(status.code())
    }
}

/// The exit status for a failed admin call.
pub fn client_status(error: &ClientError) -> ExitStatus {
    match error {
        ClientError::Config(_)
        | ClientError::Material(_)
        | ClientError::CertificateExpired { .. } => ExitStatus::Usage,
        ClientError::Invalid(_)
        | ClientError::Unauthorized(_)
        | ClientError::Conflict(_)
        | ClientError::Untrusted { .. } => ExitStatus::Refused,
        ClientError::NotFound(_) => ExitStatus::NotFound,
        ClientError::Unavailable { .. } => ExitStatus::Unavailable,
        ClientError::Unsupported(_) | ClientError::Internal(_) | ClientError::Transport(_) => {
            ExitStatus::Failed
        }
    }
}

/// Why a `pvefleet` command failed. The message says what was wrong and what to do.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// The configuration could not be found, read or used.
    #[error("{0}")]
    Config(#[from] ConfigError),
    /// An admin call failed.
    #[error("{0}")]
    Client(#[from] ClientError),
    /// An argument value is unusable in a way clap cannot check.
    #[error("{0}")]
    Usage(String),
    /// An input file could not be read.
    #[error("cannot read {}: {source}", shown(path))]
    ReadFile {
        /// The file (`-` is standard input).
        path: PathBuf,
        /// The system's reason.
        #[source]
        source: std::io::Error,
    },
    /// A spec file was refused before anything was sent.
    #[error("{}: {}\nnothing was applied", shown(path), error.to_string().trim_end())]
    SpecFile {
        /// The file.
        path: PathBuf,
        /// The first problem found (for a bad spec: field, value and what is allowed).
        error: SpecFileError,
    },
    /// A spec file holds nothing this command applies.
    #[error(
        "{} defines no [[{kind}]] table: nothing to apply (see `pvefleet {command} apply --help`)",
        shown(path)
    )]
    NothingToApply {
        /// The file.
        path: PathBuf,
        /// The table it needed (`pool`, `vmid_range`, `vip`).
        kind: &'static str,
        /// The command (`pool`, `range`, `vip`).
        command: &'static str,
    },
    /// `settings apply` on a file without `[settings]`.
    #[error(
        "{} defines no [settings] table: nothing to apply (see `pvefleet settings apply --help`)",
        shown(path)
    )]
    NoSettings {
        /// The file.
        path: PathBuf,
    },
    /// An apply stopped at one entry; the entries before it were applied.
    #[error(
        "{kind} {name}: {source}\n{done} of {total} applied before it; the rest were not sent: \
         fix it and apply the file again (applied entries come back unchanged)"
    )]
    Apply {
        /// `vm`, `pool`, `vmid_range` or `vip`.
        kind: &'static str,
        /// The entry that failed.
        name: String,
        /// Entries applied before it.
        done: usize,
        /// Entries in the file.
        total: usize,
        /// The cluster's answer.
        #[source]
        source: Box<ClientError>,
    },
    /// `pvefleet doctor` found problems (the report is printed before).
    #[error(
        "doctor: {problems} problem(s), {warnings} warning(s): see each finding's action above"
    )]
    Unhealthy {
        /// Findings of severity problem.
        problems: usize,
        /// Findings of severity warning.
        warnings: usize,
    },
    /// `pvefleet apply`: the cluster refused the file (one entry named); nothing was applied.
    #[error(
        "{}: {source}\nnothing was applied: a fleet file is applied whole or not at all; fix it \
         and apply the file again",
        shown(path)
    )]
    ApplyWhole {
        /// The file.
        path: PathBuf,
        /// The cluster's answer, naming the refused entry.
        #[source]
        source: Box<ClientError>,
    },
    /// `pvefleet apply` of a file that defines nothing.
    #[error(
        "{} defines no [[pool]], [[vmid_range]], [[vip]], [settings], [[vm_group]] or [[vm]]: \
         nothing to apply",
        shown(path)
    )]
    EmptyFleetFile {
        /// The file.
        path: PathBuf,
    },
    /// `admin add` could not prepare the new admin's key or directory; nothing was sent.
    #[error("{0}\nnothing was sent to the cluster: no admin was added")]
    AdminPrepare(#[source] BootstrapError),
    /// `admin add` added an identity whose certificate could not be checked or whose files
    /// could not all be written: without them the identity cannot be used.
    #[error(
        "admin {id} was added, but {reason}\nit cannot be used: revoke it (`pvefleet admin \
         revoke {id}`), remove {}, and add the admin again",
        dir.display()
    )]
    AdminNotSaved {
        /// The id the cluster gave it.
        id: NodeId,
        /// The directory its files were meant for.
        dir: PathBuf,
        /// What failed.
        reason: String,
    },
    /// `admin revoke` of the admin whose certificate this configuration uses.
    #[error(
        "admin {id} is the identity of the configuration in use ({}): revoking it would lock \
         you out of the cluster. Revoke it from another admin's configuration (make one with \
         `pvefleet admin add NAME`), or pass --yes-revoke-myself to revoke it anyway",
        config.display()
    )]
    RevokeSelf {
        /// The admin id.
        id: NodeId,
        /// The configuration file.
        config: PathBuf,
    },
    /// The output could not be produced or written.
    #[error("cannot write the output: {0}")]
    Output(String),
    /// `vm scale` names a group no VM belongs to.
    #[error(
        "no VM belongs to group {0:?}: a group is made by applying a file with a [[vm_group]] \
         named so (pvefleet vm apply -f FILE); `pvefleet vm ls` lists the VMs"
    )]
    NoGroup(String),
}

/// A path as the user gave it; `-` (standard input) by name.
fn shown(path: &Path) -> String {
    if path == Path::new("-") {
        "standard input".to_string()
    } else {
        path.display().to_string()
    }
}

impl CliError {
    /// The exit status this error ends the process with.
    pub fn status(&self) -> ExitStatus {
        match self {
            CliError::Config(_)
            | CliError::Usage(_)
            | CliError::ReadFile { .. }
            | CliError::AdminPrepare(_) => ExitStatus::Usage,
            CliError::Client(e) => client_status(e),
            CliError::Apply { source, .. } | CliError::ApplyWhole { source, .. } => {
                client_status(source)
            }
            CliError::EmptyFleetFile { .. } => ExitStatus::Refused,
            CliError::SpecFile { .. }
            | CliError::NothingToApply { .. }
            | CliError::NoSettings { .. }
            | CliError::RevokeSelf { .. } => ExitStatus::Refused,
            CliError::Output(_) | CliError::AdminNotSaved { .. } => ExitStatus::Failed,
            CliError::NoGroup(_) => ExitStatus::NotFound,
            CliError::Unhealthy { .. } => ExitStatus::Unhealthy,
        }
    }
}
