//! Errors of running the simulator itself (not API errors, which are [`crate::api::ApiError`]).

use std::path::PathBuf;

/// Why the simulator could not be built or served.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// The configuration is inconsistent (a template on an unknown node, duplicate ids, ...).
    #[error("invalid simulator configuration: {0}")]
    Config(String),
    /// A configuration file could not be read or parsed.
    #[error("cannot load simulator configuration {path}: {reason}")]
    ConfigFile {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        reason: String,
    },
    /// Generating or loading the TLS certificate failed.
    #[error("TLS setup failed: {0}")]
    Tls(String),
    /// Binding or serving a listener failed.
    #[error("cannot serve on {addr}: {source}")]
    Io {
        /// The address.
        addr: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// Writing an output file (certificate, fingerprint) failed.
    #[error("cannot write {path}: {source}")]
    Write {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
}
