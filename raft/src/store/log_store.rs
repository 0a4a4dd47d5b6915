//! The Raft log and vote on sled (openraft `RaftLogStorage`). Durability follows openraft's
//! contract: a vote is on disk before `save_vote` returns, appended entries are readable when
//! `append` returns and on disk (flushed) before the callback reports them.

use super::flush::Flusher;
use std::fmt::Debug;
use std::ops::RangeBounds;

use openraft::storage::{LogFlushed, RaftLogStorage};
use openraft::{LogState, OptionalSend, RaftLogReader, StorageIOError, Vote};
use serde::de::DeserializeOwned;

use crate::error::RaftStoreError;
use crate::store::codec::{decode, encode};
use crate::store::keys::{COMMITTED, LAST_PURGED, VOTE, index_range, log_key};
use crate::types::{Entry, LogId, NodeId, StorageError, TypeConfig};

/// The Raft log and vote, on the store's sled database.
pub struct LogStore {
    db: Flusher,
    logs: sled::Tree,
    meta: sled::Tree,
}

/// A reader of the log for openraft's replication tasks.
#[derive(Clone)]
pub struct LogReader {
    logs: sled::Tree,
}

impl LogStore {
    pub(crate) fn new(db: Flusher, logs: sled::Tree, meta: sled::Tree) -> LogStore {
        LogStore { db, logs, meta }
    }

    fn read_meta<T: DeserializeOwned>(&self, key: &[u8]) -> Result<Option<T>, RaftStoreError> {
        read_meta(&self.meta, key)
    }

    fn last_purged(&self) -> Result<Option<LogId>, RaftStoreError> {
        self.read_meta(LAST_PURGED)
    }

    fn last_entry_id(&self) -> Result<Option<LogId>, RaftStoreError> {
        match self.logs.last()? {
            None => Ok(None),
            Some((key, value)) => Ok(Some(decode_entry(&key, &value)?.log_id)),
        }
    }

    /// Removes the entries at indexes `[start, end)` (`end == None`: to the end) in one batch.
    fn remove_range(&self, start: u64, end: Option<u64>) -> Result<(), RaftStoreError> {
        let mut batch = sled::Batch::default();
        let keys = match end {
            Some(end) => self.logs.range(log_key(start)..log_key(end)),
            None => self.logs.range(log_key(start)..),
        };
        for item in keys {
            let (key, _) = item?;
            batch.remove(key);
        }
        self.logs.apply_batch(batch)?;
        Ok(())
    }

    /// Checks that every value this store owns decodes (in particular: its format version).
    pub(crate) fn validate(&self) -> Result<(), RaftStoreError> {
        self.read_meta::<Vote<NodeId>>(VOTE)?;
        self.last_purged()?;
        self.read_meta::<Option<LogId>>(COMMITTED)?;
        if let Some((key, value)) = self.logs.first()? {
            decode_entry(&key, &value)?;
        }
        self.last_entry_id()?;
        Ok(())
    }
}

/// Reads and decodes a value of the meta tree.
pub(crate) fn read_meta<T: DeserializeOwned>(
    tree: &sled::Tree,
    key: &[u8],
) -> Result<Option<T>, RaftStoreError> {
    match tree.get(key)? {
        None => Ok(None),
        Some(bytes) => decode(&meta_name(key), &bytes).map(Some),
    }
}

fn meta_name(key: &[u8]) -> String {
    format!("meta/{}", String::from_utf8_lossy(key))
}

fn decode_entry(key: &[u8], value: &[u8]) -> Result<Entry, RaftStoreError> {
    let index = <[u8; 8]>::try_from(key).map(u64::from_be_bytes);
    let what = match index {
        Ok(index) => format!("log entry {index}"),
        Err(_) => format!("log key {key:?}"),
    };
    let entry: Entry = decode(&what, value)?;
    if index.ok() != Some(entry.log_id.index) {
        return Err(RaftStoreError::Corrupt {
            what,
            reason: format!("the entry inside has index {}", entry.log_id.index),
        });
    }
    Ok(entry)
}

fn read_entries<R: RangeBounds<u64>>(
    logs: &sled::Tree,
    range: &R,
) -> Result<Vec<Entry>, RaftStoreError> {
    let Some((start, end)) = index_range(range) else {
        return Ok(Vec::new());
    };
    let items = match end {
        Some(end) => logs.range(log_key(start)..log_key(end)),
        None => logs.range(log_key(start)..),
    };
    items
        .map(|item| {
            let (key, value) = item?;
            decode_entry(&key, &value)
        })
        .collect()
}

impl RaftLogReader<TypeConfig> for LogReader {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + OptionalSend>(
        &mut self,
        range: RB,
    ) -> Result<Vec<Entry>, StorageError> {
        Ok(read_entries(&self.logs, &range).map_err(|e| StorageIOError::read_logs(&e))?)
    }
}

impl RaftLogReader<TypeConfig> for LogStore {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + OptionalSend>(
        &mut self,
        range: RB,
    ) -> Result<Vec<Entry>, StorageError> {
        Ok(read_entries(&self.logs, &range).map_err(|e| StorageIOError::read_logs(&e))?)
    }
}

impl RaftLogStorage<TypeConfig> for LogStore {
    type LogReader = LogReader;

    async fn get_log_state(&mut self) -> Result<LogState<TypeConfig>, StorageError> {
        let read = |e: RaftStoreError| StorageIOError::read_logs(&e);
        let last_purged_log_id = self.last_purged().map_err(read)?;
        let last_entry = self.last_entry_id().map_err(read)?;
        // After a snapshot install the purge point can pass the last entry.
        let last_log_id = std::cmp::max(last_entry, last_purged_log_id);
        Ok(LogState {
            last_purged_log_id,
            last_log_id,
        })
    }

    async fn get_log_reader(&mut self) -> LogReader {
        LogReader {
            logs: self.logs.clone(),
        }
    }

    async fn save_vote(&mut self, vote: &Vote<NodeId>) -> Result<(), StorageError> {
        let write = |e: RaftStoreError| StorageIOError::write_vote(&e);
        self.meta
            .insert(VOTE, encode("vote", vote).map_err(write)?)
            .map_err(|e| write(e.into()))?;
        // A vote must survive a crash before it is acted upon.
        self.db.flush_async().await.map_err(|e| write(e.into()))?;
        Ok(())
    }

    async fn read_vote(&mut self) -> Result<Option<Vote<NodeId>>, StorageError> {
        Ok(self
            .read_meta(VOTE)
            .map_err(|e| StorageIOError::read_vote(&e))?)
    }

    async fn save_committed(&mut self, committed: Option<LogId>) -> Result<(), StorageError> {
        let write = |e: RaftStoreError| StorageIOError::write(&e);
        // Not flushed on its own: a committed id lost in a crash only means fewer entries are
        // re-applied at start-up, and the next append/vote flush carries it.
        self.meta
            .insert(COMMITTED, encode("committed", &committed).map_err(write)?)
            .map_err(|e| write(e.into()))?;
        Ok(())
    }

    async fn read_committed(&mut self) -> Result<Option<LogId>, StorageError> {
        let committed: Option<Option<LogId>> = self
            .read_meta(COMMITTED)
            .map_err(|e| StorageIOError::read(&e))?;
        Ok(committed.flatten())
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
        let write = |e: RaftStoreError| StorageIOError::write_logs(&e);
        let mut batch = sled::Batch::default();
        for entry in entries {
            let what = format!("log entry {}", entry.log_id.index);
            batch.insert(
                &log_key(entry.log_id.index),
                encode(&what, &entry).map_err(write)?,
            );
        }
        self.logs.apply_batch(batch).map_err(|e| write(e.into()))?;
        // Readable now; report them only once they are on disk.
        match self.db.flush_async().await {
            Ok(_) => {
                callback.log_io_completed(Ok(()));
                Ok(())
            }
            Err(e) => {
                callback.log_io_completed(Err(std::io::Error::other(e.to_string())));
                Err(write(e.into()).into())
            }
        }
    }

    async fn truncate(&mut self, log_id: LogId) -> Result<(), StorageError> {
        let write = |e: RaftStoreError| StorageIOError::write_logs(&e);
        self.remove_range(log_id.index, None).map_err(write)?;
        // Conflicting entries must not come back after a crash.
        self.db.flush_async().await.map_err(|e| write(e.into()))?;
        Ok(())
    }

    async fn purge(&mut self, log_id: LogId) -> Result<(), StorageError> {
        let write = |e: RaftStoreError| StorageIOError::write_logs(&e);
        // The purge point goes to disk first, so a crash part-way through the removal never
        // leaves a gap at the start of the log that nothing explains.
        self.meta
            .insert(LAST_PURGED, encode("last_purged", &log_id).map_err(write)?)
            .map_err(|e| write(e.into()))?;
        self.db.flush_async().await.map_err(|e| write(e.into()))?;
        match log_id.index.checked_add(1) {
            Some(end) => self.remove_range(0, Some(end)),
            None => self.remove_range(0, None),
        }
        .map_err(write)?;
        Ok(())
    }
}
