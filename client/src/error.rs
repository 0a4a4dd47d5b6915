//! `ClientError`: every way an admin call can fail, each message saying what was wrong and
//! what to do; and `AttemptFailure`, one member's part in a call that found no answer.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use transport::TransportError;

use bootstrap::cli_config::{ConfigError, CoordinatorAddr};

/// Why an admin call failed. The `pvefleet` CLI maps each variant to an exit code.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The configuration or the files it names could not be used.
    #[error("{0}")]
    Config(#[from] ConfigError),
    /// The certificate or key files are not usable TLS material.
    #[error(
        "the CA, certificate or key named in the configuration is not usable: {0}; \
         point `ca`, `cert` and `key` at the files `pvefleet-coordinator init` wrote"
    )]
    Material(TransportError),
    /// The cluster refused the request as invalid (a bad spec names field, value and allowed
    /// values).
    #[error("refused by the cluster: {0}")]
    Invalid(String),
    /// The cluster refused the caller or its token.
    #[error("refused: {0}")]
    Unauthorized(String),
    /// The named object does not exist (the member's message names it).
    #[error("{0}")]
    NotFound(String),
    /// The request conflicts with the current state (in use, exhausted, already exists); the
    /// member's message says how.
    #[error("{0}")]
    Conflict(String),
    /// The coordinator does not know the request: it runs another pvefleet version.
    #[error(
        "the coordinator does not support this request ({0}): run the same pvefleet version \
         on the CLI and the coordinators"
    )]
    Unsupported(String),
    /// The coordinator failed while handling the request.
    #[error("the coordinator failed: {0}; see its log, then retry")]
    Internal(String),
    /// Every member reached refused the TLS handshake, or was refused by it.
    #[error(
        "no coordinator accepted a TLS handshake:{}\ncheck that `ca`, `cert` and `key` in the \
         configuration belong to this cluster and that each `coordinators` entry has the id of \
         the member at that address (`pvefleet member ls`)",
        Failures(failures)
    )]
    Untrusted {
        /// What each member answered.
        failures: Vec<AttemptFailure>,
    },
    /// No member answered (or none knew a leader) before the deadline.
    #[error(
        "no coordinator answered within {}s:{}\ncheck that the members are running and \
         reachable and that `coordinators` in the configuration lists them, or allow more time \
         (--timeout SECS)",
        after.as_secs_f64(),
        Failures(failures)
    )]
    Unavailable {
        /// The timeout that expired.
        after: Duration,
        /// The last failure of each member tried.
        failures: Vec<AttemptFailure>,
    },
    /// The configured admin certificate expired: the cluster refuses it, so it cannot be
    /// renewed over the network either.
    #[error(
        "the admin certificate {} expired at {expired_at}: the cluster refuses it and it can no \
         longer be renewed automatically. Ask another operator for a new identity (`pvefleet \
         admin add NAME`), or on a coordinator host run `pvefleet-coordinator admin-cert \
         --data-dir DIR` (DIR: that coordinator's data directory) and point `cert` and `key` \
         in the configuration at the admin.pem and admin.key it writes",
        path.display()
    )]
    CertificateExpired {
        /// The configured `cert` file.
        path: PathBuf,
        /// When it expired (RFC 3339, UTC).
        expired_at: String,
    },
    /// The request could not be sent or the reply not read (encoding, frame size, protocol).
    #[error("admin call failed: {0}")]
    Transport(TransportError),
}

/// One member's latest failure during a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptFailure {
    /// The member.
    pub member: CoordinatorAddr,
    /// What went wrong.
    pub reason: String,
}

/// Lists failures one per line, for error messages.
struct Failures<'a>(&'a [AttemptFailure]);

impl fmt::Display for Failures<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for failure in self.0 {
            write!(f, "\n  {}: {}", failure.member, failure.reason)?;
        }
        Ok(())
    }
}
