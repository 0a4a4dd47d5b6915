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

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use openraft::storage::RaftLogStorageExt;
    use openraft::{CommittedLeaderId, EntryPayload};

    use super::*;
    use crate::store::journal::SEGMENT_BYTES;
    use crate::store::journal::sim_disk::SimDisk;
    use crate::types::Command;

    fn log_id(term: u64, index: u64) -> LogId {
        LogId::new(CommittedLeaderId::new(term, 1), index)
    }

    fn entry(term: u64, index: u64) -> Entry {
        Entry {
            log_id: log_id(term, index),
            payload: EntryPayload::Normal(Command(vec![1; 10])),
        }
    }

    fn store(disk: &SimDisk) -> LogStore {
        LogStore::new(Journal::open_on(Arc::new(disk.clone()), SEGMENT_BYTES).unwrap())
    }

    /// What a power cut right after `step` leaves (nothing unsynced survives).
    async fn after_cut(disk: &SimDisk) -> (Option<Vote<NodeId>>, LogState<TypeConfig>, Vec<u64>) {
        let mut reopened = store(&disk.after_power_cut(|_, _| 0));
        let entries = reopened.try_get_log_entries(0..).await.unwrap();
        (
            reopened.read_vote().await.unwrap(),
            reopened.get_log_state().await.unwrap(),
            entries.iter().map(|e| e.log_id.index).collect(),
        )
    }

    #[tokio::test]
    async fn what_openraft_is_told_is_durable_survives_a_power_cut() {
        let disk = SimDisk::default();
        let mut log = store(&disk);
        log.save_vote(&Vote::new(1, 1)).await.unwrap();
        assert_eq!(after_cut(&disk).await.0, Some(Vote::new(1, 1)));
        // `blocking_append` returns once the callback reported the entries durable.
        log.blocking_append((1..=4).map(|i| entry(1, i)))
            .await
            .unwrap();
        assert_eq!(after_cut(&disk).await.2, [1, 2, 3, 4]);
        log.truncate(log_id(1, 3)).await.unwrap();
        assert_eq!(after_cut(&disk).await.2, [1, 2]);
        log.purge(log_id(1, 1)).await.unwrap();
        let (_, state, entries) = after_cut(&disk).await;
        assert_eq!(state.last_purged_log_id, Some(log_id(1, 1)));
        assert_eq!(entries, [2]);
    }
}
