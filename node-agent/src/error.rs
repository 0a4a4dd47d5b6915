//! The executor journal's error type: every way recording or answering a command can fail.

/// Why a journal operation failed.
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    /// The on-disk store failed (I/O, corruption detected by sled, or a failed flush).
    #[error("journal storage: {0}")]
    Storage(#[from] sled::Error),
    /// The command id is empty or longer than [`crate::MAX_COMMAND_ID_LEN`] bytes.
    #[error("invalid command id ({len} bytes): {reason}")]
    InvalidId {
        /// Length of the rejected id in bytes.
        len: usize,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The id was already used for a different command (another fingerprint): the sender
    /// reused an id, and neither command may be answered with the other's result.
    #[error("command id {id:?} was already used for a different command")]
    Conflict {
        /// The reused command id.
        id: String,
    },
    /// A stored entry was written by an unknown journal format (a newer agent, or garbage).
    #[error("journal entry {id:?} has unknown format version {version}")]
    UnknownFormat {
        /// The entry's command id.
        id: String,
        /// The version byte found.
        version: u8,
    },
    /// A stored entry has a known version but cannot be decoded.
    #[error("journal entry {id:?} is corrupt: {reason}")]
    Corrupt {
        /// The entry's command id.
        id: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A result was recorded for an id that was never begun.
    #[error("command id {id:?} was never begun")]
    NotStarted {
        /// The command id.
        id: String,
    },
    /// A second, different result was recorded for an id that already has one.
    #[error("command id {id:?} already has a different result")]
    ResultMismatch {
        /// The command id.
        id: String,
    },
    /// A typed command or result could not be encoded with bincode.
    #[error("encoding a journal value: {0}")]
    Encode(#[from] bincode::error::EncodeError),
    /// A stored typed result could not be decoded with bincode.
    #[error("decoding a stored result: {0}")]
    Decode(#[from] bincode::error::DecodeError),
    /// A stored typed result decoded but left bytes unread (a different result type).
    #[error("stored result has {0} trailing bytes")]
    TrailingBytes(usize),
}
