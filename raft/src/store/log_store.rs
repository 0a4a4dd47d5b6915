//! The Raft log and vote (openraft `RaftLogStorage`) on the [journal](super::journal).
//! Durability follows openraft's contract: a vote is on disk before `save_vote` returns,
//! appended entries are readable when `append` returns and on disk (`fdatasync`) before the
//! callback reports them, a truncation and a purge are on disk before they return.

use std::fmt::Debug;
use std::ops::RangeBounds;

use openraft::storage::{LogFlushed, RaftLogStorage};
use openraft::{LogState, OptionalSend, RaftLogReader, StorageIOError, Vote};

use crate::error::RaftStoreError;
use crate::store::journal::{Entries, Journal, make_durable, read_range};
use crate::types::{Entry, LogId, NodeId, StorageError, TypeConfig};

/// The Raft log and vote, on the store's journal.
pub struct LogStore {
    journal: Journal,
}

/// A reader of the log for openraft's replication tasks (the entries are in memory).
#[derive(Clone)]
pub struct LogReader {
    entries: Entries,
}

impl LogStore {
    pub(crate) fn new(journal: Journal) -> LogStore {
        LogStore { journal }
    }
}

impl RaftLogReader<TypeConfig> for LogReader {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + OptionalSend>(
        &mut self,
        range: RB,
    ) -> Result<Vec<Entry>, StorageError> {
        Ok(read_range(&self.entries, &range))
    }
}

impl RaftLogReader<TypeConfig> for LogStore {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + OptionalSend>(
        &mut self,
        range: RB,
    ) -> Result<Vec<Entry>, StorageError> {
        Ok(read_range(&self.journal.entries(), &range))
    }
}

impl RaftLogStorage<TypeConfig> for LogStore {
    type LogReader = LogReader;

    async fn get_log_state(&mut self) -> Result<LogState<TypeConfig>, StorageError> {
        let last_purged_log_id = self.journal.checkpoint().purged;
        // After a snapshot install the purge point can pass the last entry.
        let last_log_id = std::cmp::max(self.journal.last_entry(), last_purged_log_id);
        Ok(LogState {
            last_purged_log_id,
            last_log_id,
        })
    }

    async fn get_log_reader(&mut self) -> LogReader {
        LogReader {
            entries: self.journal.entries(),
        }
    }

    async fn save_vote(&mut self, vote: &Vote<NodeId>) -> Result<(), StorageError> {
        // A vote must survive a crash before it is acted upon.
        self.journal
            .save_vote(*vote)
            .await
            .map_err(|e| StorageIOError::write_vote(&e).into())
    }

    async fn read_vote(&mut self) -> Result<Option<Vote<NodeId>>, StorageError> {
        Ok(self.journal.checkpoint().vote)
    }

    async fn save_committed(&mut self, committed: Option<LogId>) -> Result<(), StorageError> {
        // Not made durable on its own: a committed id lost in a crash only means fewer entries
        // are re-applied at start-up, and the next vote or append carries it to disk.
        self.journal
            .save_committed(committed)
            .map_err(|e| StorageIOError::write(&e).into())
    }

    async fn read_committed(&mut self) -> Result<Option<LogId>, StorageError> {
        Ok(self.journal.checkpoint().committed)
    }

    async fn append<I>(
        &mut self,
        entries: I,
        callback: LogFlushed<TypeConfig>,
    ) -> Result<(), StorageError>
    where
        I: IntoIterator<Item = Entry> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        let write = |e: &RaftStoreError| StorageError::from(StorageIOError::write_logs(e));
        let file = match self.journal.append(entries.into_iter().collect()) {
            Ok(file) => file,
            Err(e) => {
                callback.log_io_completed(Err(std::io::Error::other(e.to_string())));
                return Err(write(&e));
            }
        };
        // Readable now; report them only once they are on disk.
        match make_durable(file).await {
            Ok(()) => {
                callback.log_io_completed(Ok(()));
                Ok(())
            }
            Err(e) => {
                callback.log_io_completed(Err(std::io::Error::other(e.to_string())));
                Err(write(&e))
            }
        }
    }

    async fn truncate(&mut self, log_id: LogId) -> Result<(), StorageError> {
        // Conflicting entries must not come back after a crash.
        self.journal
            .truncate(log_id.index)
            .await
            .map_err(|e| StorageIOError::write_logs(&e).into())
    }

    async fn purge(&mut self, log_id: LogId) -> Result<(), StorageError> {
        self.journal
            .purge(log_id)
            .await
            .map_err(|e| StorageIOError::write_logs(&e).into())
    }
}
