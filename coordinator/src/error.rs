//! `CoordinatorError`: every way creating, joining, starting or stopping a coordinator member
//! can fail, each variant naming the step that failed so the operator knows where to look.

use std::net::SocketAddr;
use std::path::PathBuf;

use bootstrap::{BootstrapError, JoinError};
use raft::RaftStoreError;
use transport::TransportError;

/// A coordinator member could not be created, joined, started or stopped.
#[derive(Debug, thiserror::Error)]
pub enum CoordinatorError {
    /// `init` could not create the cluster's files.
    #[error("init: {0}")]
    Init(#[source] Box<BootstrapError>),
    /// An address given on the command line cannot be used.
    #[error("{flag} {addr}: {reason}")]
    BadAddress {
        /// The flag, e.g. `--listen`.
        flag: &'static str,
        /// The address given.
        addr: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The node directory's files could not be read (certificates, keys, `cluster.toml`).
    #[error("load node directory {}: {source}", dir.display())]
    LoadNode {
        /// The data directory.
        dir: PathBuf,
        /// What failed.
        #[source]
        source: Box<BootstrapError>,
    },
    /// `coordinator.toml` is missing or unreadable.
    #[error("{}: {reason}", path.display())]
    Settings {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// A file of the node directory could not be written.
    #[error("write node files: {0}")]
    WriteNode(#[source] Box<BootstrapError>),
    /// The directory belongs to a node of another role.
    #[error(
        "{} holds a node with role {role}, not a coordinator: run the matching program for it",
        dir.display()
    )]
    NotCoordinator {
        /// The data directory.
        dir: PathBuf,
        /// The role its certificate carries.
        role: protocol::Role,
    },
    /// The Raft store could not be opened.
    #[error("open raft store {}: {source}", dir.display())]
    OpenStore {
        /// The store's directory.
        dir: PathBuf,
        /// What failed.
        #[source]
        source: RaftStoreError,
    },
    /// The Raft configuration is invalid (e.g. a bad `--snapshot-logs`).
    #[error("raft configuration: {0}")]
    RaftConfig(String),
    /// openraft refused to start.
    #[error("start raft: {0}")]
    RaftStart(String),
    /// The QUIC endpoint could not be built or bound.
    #[error("QUIC endpoint on {addr}: {source}")]
    Endpoint {
        /// The address to bind.
        addr: SocketAddr,
        /// What failed.
        #[source]
        source: TransportError,
    },
    /// The dashboard's certificate could not be loaded.
    #[error("dashboard: {0}")]
    DashboardTls(#[from] crate::dashboard::tls::DashboardTlsError),
    /// The local HTTP port could not be bound.
    #[error("HTTP listener on {addr}: {source}")]
    HttpBind {
        /// The address to bind.
        addr: SocketAddr,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The node could not prepare or accept its join.
    #[error("join: {0}")]
    Join(#[source] Box<JoinError>),
    /// The cluster refused the join (token expired, revoked, used up, for another cluster...).
    #[error("join refused: {message}")]
    JoinRefused {
        /// The cluster's explanation (bootstrap's token message).
        message: String,
    },
    /// No coordinator answered the join within the deadline.
    #[error("join through {addr}: {reason}")]
    JoinUnreachable {
        /// The address tried last.
        addr: String,
        /// Why it failed.
        reason: String,
    },
    /// The QUIC server failed while serving.
    #[error("serve: {0}")]
    Serve(#[source] TransportError),
    /// A task of the member ended abnormally (panicked or was aborted).
    #[error("task failed: {0}")]
    Task(String),
    /// A command-line option is outside what it allows.
    #[error("{0}")]
    InvalidOption(String),
    /// Raft did not stop cleanly.
    #[error("stop raft: {0}")]
    RaftShutdown(String),
    /// Raft stopped on a fatal error while serving (e.g. a committed entry this build cannot
    /// read: a member downgraded below the cluster version, or a corrupt store).
    #[error(
        "raft stopped: {0}. If this member runs an older release than the cluster, install \
         the release the other members run and start it again"
    )]
    RaftFailed(String),
}

impl CoordinatorError {
    /// Whether the cluster refused the request (a token problem): exit code 3 for scripts.
    pub fn is_refusal(&self) -> bool {
        matches!(self, CoordinatorError::JoinRefused { .. })
            || matches!(
                self,
                CoordinatorError::Join(e) if matches!(**e, JoinError::Token(_) | JoinError::CaMismatch { .. })
            )
    }
}

impl From<JoinError> for CoordinatorError {
    fn from(e: JoinError) -> CoordinatorError {
        CoordinatorError::Join(Box::new(e))
    }
}

impl CoordinatorError {
    /// A failed write of the node directory's files.
    pub(crate) fn write(e: BootstrapError) -> CoordinatorError {
        CoordinatorError::WriteNode(Box::new(e))
    }

    /// A failed read of the node directory's files in `dir`.
    pub(crate) fn load(dir: &std::path::Path, e: BootstrapError) -> CoordinatorError {
        CoordinatorError::LoadNode {
            dir: dir.to_path_buf(),
            source: Box::new(e),
        }
    }
}
