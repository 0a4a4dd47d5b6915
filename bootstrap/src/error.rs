//! The errors of certificate, key, file and init operations: each names the step that failed
//! and, where an operator can act, what to do.

use std::io;
use std::path::PathBuf;

/// A failure in the CA, a certificate, a key, the node directory or `init`.
#[derive(Debug, thiserror::Error)]
pub enum BootstrapError {
    /// The crypto library refused an operation (key generation, signing, encoding).
    #[error("cannot {step}: {source}")]
    Crypto {
        /// What we were doing.
        step: &'static str,
        /// The library's reason.
        #[source]
        source: rcgen::Error,
    },
    /// A PEM text is not the certificate it should be.
    #[error("{what} is not a valid certificate: {reason}")]
    BadCertificate {
        /// Which certificate (e.g. "the CA certificate").
        what: &'static str,
        /// Why it was refused.
        reason: String,
    },
    /// A certificate signing request could not be parsed or its signature does not verify.
    #[error("certificate signing request refused: {reason}")]
    BadCsr {
        /// Why it was refused.
        reason: String,
    },
    /// A private key does not belong to the certificate it was paired with.
    #[error("{key} does not belong to {cert}: the key and certificate files were mixed up")]
    KeyMismatch {
        /// Which key.
        key: &'static str,
        /// Which certificate.
        cert: &'static str,
    },
    /// A certificate is valid X.509 but carries no pvefleet identity (role and node id).
    #[error("certificate carries no pvefleet identity: {reason}")]
    NoIdentity {
        /// What is missing or inconsistent.
        reason: String,
    },
    /// The CA cannot issue: it has expired, or the requested validity is unusable.
    #[error("cannot issue a certificate: {reason}")]
    CannotIssue {
        /// Why.
        reason: String,
    },
    /// A cluster id that cannot be used in names and certificates.
    #[error(
        "invalid cluster id '{id}': {reason} (use 1-32 characters a-z, 0-9 and '-', \
         not starting or ending with '-')"
    )]
    InvalidClusterId {
        /// The refused id.
        id: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A file operation failed.
    #[error("cannot {op} {}: {source}", path.display())]
    Io {
        /// What we were doing ("read", "write", "create directory", ...).
        op: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The system's reason.
        #[source]
        source: io::Error,
    },
    /// A private key file that group or others can read: it may have leaked, and we refuse to
    /// use it until the operator has made it private.
    #[error(
        "{} is readable by group or others (mode {mode:04o}); a private key must be private: \
         run `chmod 600 {}` (and consider the key leaked if others could log in)",
        path.display(),
        path.display()
    )]
    InsecureKeyFile {
        /// The key file.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// `cluster.toml` could not be parsed.
    #[error("{}: {source}", path.display())]
    ConfigParse {
        /// The file.
        path: PathBuf,
        /// The parser's reason (names the line and field).
        #[source]
        source: toml::de::Error,
    },
    /// `cluster.toml` could not be encoded.
    #[error("cannot encode cluster.toml: {0}")]
    ConfigEncode(#[from] toml::ser::Error),
    /// `init` or a join found an existing node directory.
    #[error(
        "{} already holds a pvefleet node ({} exists); refusing to overwrite it: \
         use another directory, or remove the old node's files if it is really gone",
        dir.display(),
        found.display()
    )]
    AlreadyInitialized {
        /// The node directory.
        dir: PathBuf,
        /// The first existing file found.
        found: PathBuf,
    },
    /// The node directory already exists and group or others may write to it.
    #[error(
        "{} is writable by group or others (mode {mode:04o}): anyone who can write there could \
         already have placed files or could swap the keys while they are written; use a \
         directory only root can write to (a new one is created with mode 0700), or check its \
         contents and run `chmod 700 {}`",
        dir.display(),
        dir.display()
    )]
    SharedDirectory {
        /// The node directory.
        dir: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// A time outside what certificates can express (before 1970 or past year 9999).
    #[error("time {0} (unix seconds) is out of range for a certificate")]
    TimeOutOfRange(u64),
}

/// Wraps an rcgen error with the step it happened in.
pub(crate) fn crypto(step: &'static str) -> impl FnOnce(rcgen::Error) -> BootstrapError {
    move |source| BootstrapError::Crypto { step, source }
}
