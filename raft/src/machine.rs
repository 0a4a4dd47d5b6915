//! The replicated state machine the Raft store drives. It lives in memory; the store makes it
//! durable through snapshots and re-applies the committed log after the last one at start-up.

/// A deterministic state machine replicated by Raft (the coordinator's fleet state).
///
/// Every member applies the same commands in the same order, so `apply` must depend only on the
/// current state, the index and the command: no clock, no randomness, no I/O.
pub trait Machine: Send + Sync + 'static {
    /// Applies the command committed at log `index` and returns the reply for the proposer.
    ///
    /// # Errors
    /// Only when the member must not go on: a command it cannot read (written by a newer
    /// build, or corrupt). The store then fails with a storage error and the Raft node stops,
    /// rather than skip an entry every other member applies. A command the machine refuses
    /// is a reply, not an error.
    fn apply(&mut self, index: u64, command: &[u8]) -> Result<Vec<u8>, String>;

    /// Serializes the whole state (the machine versions its own format).
    ///
    /// # Errors
    /// The state cannot be encoded: no snapshot is stored (never an empty one).
    fn snapshot(&self) -> Result<Vec<u8>, String>;

    /// Replaces the whole state with a snapshot made by [`Machine::snapshot`]: nothing of the
    /// previous state may survive. An error means the snapshot could not be decoded.
    fn restore(&mut self, snapshot: &[u8]) -> Result<(), String>;
}
