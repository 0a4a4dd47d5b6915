//! Errors of the Raft store. Inside openraft's storage traits they become openraft's
//! `StorageError` (fatal for the node: it shuts down rather than run on a damaged store).

/// Why the Raft store could not open, read or write its data.
#[derive(Debug, thiserror::Error)]
pub enum RaftStoreError {
    /// sled failed (I/O, corruption detected by sled, or a file lock held by another process).
    #[error("raft store: sled: {0}")]
    Sled(#[from] sled::Error),
    /// The journal's files could not be read or written.
    #[error("raft store: cannot {what}: {source}")]
    Io {
        /// The step that failed.
        what: String,
        /// The operating system's reason.
        source: std::io::Error,
    },
    /// A value could not be serialized.
    #[error("raft store: cannot encode {what}: {source}")]
    Encode {
        /// Which value.
        what: String,
        /// bincode's reason.
        source: bincode::error::EncodeError,
    },
    /// A stored value carries the known format version but its body does not decode.
    #[error("raft store: {what} is corrupt: {reason}")]
    Corrupt {
        /// Which value.
        what: String,
        /// What was wrong with it.
        reason: String,
    },
    /// A stored value was written in a format this build does not know (for example by a newer
    /// pvefleet). It is refused rather than guessed at.
    #[error(
        "raft store: {what} has on-disk format version {found}, but this build reads only version \
         {supported}; refusing to open data written by another pvefleet version"
    )]
    UnknownFormat {
        /// Which value.
        what: String,
        /// The version byte found on disk.
        found: u8,
        /// The version this build reads and writes.
        supported: u8,
    },
    /// The current-snapshot pointer names a snapshot whose data is not on disk.
    #[error("raft store: the current snapshot (generation {generation}) has no {part} on disk")]
    MissingSnapshot {
        /// The generation the pointer names.
        generation: u64,
        /// `meta` or `data`.
        part: &'static str,
    },
    /// The state machine refused a snapshot.
    #[error("raft store: the state machine cannot restore snapshot {snapshot_id}: {reason}")]
    Restore {
        /// The snapshot's id.
        snapshot_id: String,
        /// The machine's reason.
        reason: String,
    },
    /// The machine cannot apply a committed entry (written by a newer build, or corrupt): the
    /// member stops instead of skipping what its peers apply.
    #[error(
        "raft store: the state machine cannot apply log entry {index}: {reason}; this member \
         stops rather than diverge from the others"
    )]
    Apply {
        /// The entry's index.
        index: u64,
        /// The machine's reason.
        reason: String,
    },
    /// The machine's state cannot be encoded as a snapshot: none is stored.
    #[error("raft store: cannot build a snapshot: {reason}")]
    Snapshot {
        /// The machine's reason.
        reason: String,
    },
    /// A previous `Machine::apply` panicked while holding the state lock, so the state is unknown.
    #[error("raft store: the state machine is unusable: an earlier apply panicked")]
    Poisoned,
}
