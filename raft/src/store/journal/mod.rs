//! The Raft journal: the log entries, the vote, the purge point and the committed id as
//! checksummed records appended to segment files, made durable with `fdatasync` before an
//! operation reports itself durable. The entries after the purge point are also kept in memory
//! (the log is short: snapshots compact it), so reads never touch the disk.
//!
//! ```text
//!  journal/segment-0000000000000001.log  Header{checkpoint} Entry Entry Vote Entry Committed ..
//!  journal/segment-0000000000000002.log  Header{vote, committed, purged as of its creation} ..
//! ```
//!
//! A segment is full past [`SEGMENT_BYTES`]; the next one starts with a checkpoint of the
//! vote, committed id and purge point, so older segments are deleted (oldest first) once every
//! entry in them is purged. Opening replays the segments in order; a torn last record of the
//! newest segment (a write cut short by a crash, never acknowledged) is cut off, any other
//! damage is refused. `docs/design/raft-log.md` argues the format and has the measurements.

mod disk;
mod format;
mod record;
mod replay;
#[cfg(test)]
pub(crate) mod sim_disk;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::ops::RangeBounds;
use std::path::Path;
use std::sync::{Arc, PoisonError, RwLock};

pub(crate) use disk::{DirDisk, sync_dir};
pub(crate) use record::Checkpoint;

use crate::error::RaftStoreError;
use crate::store::keys::index_range;
use crate::types::{Entry, LogId, NodeId};
use disk::{Disk, DiskFile};
pub(crate) use format::JOURNAL_FORMAT;
use format::segment_name;
use record::{Record, frame};
use replay::Replayed;

/// A segment is closed once it holds this many bytes.
pub(crate) const SEGMENT_BYTES: u64 = 16 * 1024 * 1024;

/// The entries after the purge point, shared with openraft's log readers.
pub(crate) type Entries = Arc<RwLock<BTreeMap<u64, Entry>>>;

/// The journal, open for appending.
pub(crate) struct Journal {
    disk: Arc<dyn Disk>,
    segments: Vec<Segment>,
    checkpoint: Checkpoint,
    entries: Entries,
    segment_bytes: u64,
}

/// One segment file.
struct Segment {
    number: u64,
    file: Arc<dyn DiskFile>,
    /// Bytes written (the next record goes here).
    len: u64,
    /// The highest index of an entry in this segment that is not truncated: once the purge
    /// point reaches it, nothing in the segment is needed.
    live_max: Option<u64>,
}

/// The segment number a file name stands for, if it is a segment's.
fn segment_number(name: &str) -> Option<u64> {
    let hex = name.strip_prefix("segment-")?.strip_suffix(".log")?;
    (hex.len() == 16)
        .then(|| u64::from_str_radix(hex, 16).ok())
        .flatten()
}

fn io_error(what: String) -> impl FnOnce(std::io::Error) -> RaftStoreError {
    move |source| RaftStoreError::Io { what, source }
}

impl Journal {
    /// Opens the journal in directory `dir` (which must exist), creating its first segment if
    /// it has none.
    pub(crate) fn open(dir: &Path) -> Result<Journal, RaftStoreError> {
        Journal::open_on(Arc::new(DirDisk::new(dir)), SEGMENT_BYTES)
    }

    /// Writes a new journal holding `checkpoint` and `entries` into the empty directory `dir`
    /// and makes it durable (the migration from the sled log).
    pub(crate) fn create(
        dir: &Path,
        checkpoint: Checkpoint,
        entries: Vec<Entry>,
    ) -> Result<(), RaftStoreError> {
        let disk: Arc<dyn Disk> = Arc::new(DirDisk::new(dir));
        let mut bytes = Vec::new();
        frame(&header(1, &checkpoint), &mut bytes)?;
        if !entries.is_empty() {
            frame(&Record::Entries(entries), &mut bytes)?;
        }
        let name = segment_name(1);
        let file = disk
            .open(&name, true)
            .map_err(io_error(format!("create {name}")))?;
        file.write_at(0, &bytes)
            .and_then(|()| file.sync())
            .and_then(|()| disk.sync_dir())
            .map_err(io_error(format!("write {name}")))
    }

    /// [`Journal::open`] on any [`Disk`], with segments of `segment_bytes`.
    pub(crate) fn open_on(
        disk: Arc<dyn Disk>,
        segment_bytes: u64,
    ) -> Result<Journal, RaftStoreError> {
        let listed = disk.list().map_err(io_error("list the journal".into()))?;
        let mut numbers: Vec<u64> = listed.iter().filter_map(|n| segment_number(n)).collect();
        numbers.sort_unstable();
        let mut contents = Vec::with_capacity(numbers.len());
        for number in &numbers {
            let name = segment_name(*number);
            let bytes = disk.read(&name).map_err(io_error(format!("read {name}")))?;
            contents.push((*number, bytes));
        }
        let replayed = replay::replay(&contents)?;
        let Replayed {
            checkpoint,
            entries,
            segments: found,
            torn,
            unused,
        } = replayed;
        let mut segments = Vec::with_capacity(found.len());
        for s in found {
            let name = segment_name(s.number);
            let file = disk
                .open(&name, false)
                .map_err(io_error(format!("open {name}")))?;
            segments.push(Segment {
                number: s.number,
                file,
                len: s.len,
                live_max: s.live_max,
            });
        }
        // The newest segment's torn end is cut off before anything is appended after it.
        if let (Some(torn), Some(last)) = (torn, segments.last()) {
            last.file
                .set_len(torn.keep)
                .and_then(|()| last.file.sync())
                .map_err(io_error(format!(
                    "cut the torn end of {}",
                    segment_name(last.number)
                )))?;
        }
        // Segments past a cut-short header (a crash while one was being started) held nothing.
        for number in unused {
            let name = segment_name(number);
            disk.remove(&name)
                .map_err(io_error(format!("remove the unused {name}")))?;
        }
        let mut journal = Journal {
            disk,
            segments,
            checkpoint,
            entries: Arc::new(RwLock::new(entries)),
            segment_bytes,
        };
        if journal.segments.is_empty() {
            journal.start_segment(1)?;
        }
        Ok(journal)
    }

    /// The entries, for readers.
    pub(crate) fn entries(&self) -> Entries {
        Arc::clone(&self.entries)
    }

    /// The vote, purge point and committed id.
    pub(crate) fn checkpoint(&self) -> &Checkpoint {
        &self.checkpoint
    }

    /// The id of the last entry, if any.
    pub(crate) fn last_entry(&self) -> Option<LogId> {
        read(&self.entries).last_key_value().map(|(_, e)| e.log_id)
    }

    /// Appends `entries`; they are readable when this returns and durable once the returned
    /// file is synced ([`Journal::make_durable`]).
    pub(crate) fn append(
        &mut self,
        entries: Vec<Entry>,
    ) -> Result<Arc<dyn DiskFile>, RaftStoreError> {
        let last = entries.iter().map(|e| e.log_id.index).max();
        let record = Record::Entries(entries);
        let mut bytes = Vec::new();
        frame(&record, &mut bytes)?;
        let file = self.write(&bytes)?;
        if let Some(segment) = self.segments.last_mut() {
            segment.live_max = segment.live_max.max(last);
        }
        let Record::Entries(entries) = record else {
            return Ok(file);
        };
        let mut map = write(&self.entries);
        for entry in entries {
            map.insert(entry.log_id.index, entry);
        }
        Ok(file)
    }

    /// Saves the vote, durably.
    pub(crate) async fn save_vote(
        &mut self,
        vote: openraft::Vote<NodeId>,
    ) -> Result<(), RaftStoreError> {
        let file = self.write_record(&Record::Vote(vote))?;
        make_durable(file).await?;
        self.checkpoint.vote = Some(vote);
        Ok(())
    }

    /// Saves the committed id, not durably: a stale one only means fewer entries are
    /// re-applied at start-up.
    pub(crate) fn save_committed(
        &mut self,
        committed: Option<LogId>,
    ) -> Result<(), RaftStoreError> {
        self.write_record(&Record::Committed(committed))?;
        self.checkpoint.committed = committed;
        Ok(())
    }

    /// Removes the entries from `index` on, durably.
    pub(crate) async fn truncate(&mut self, index: u64) -> Result<(), RaftStoreError> {
        let file = self.write_record(&Record::TruncateFrom(index))?;
        make_durable(file).await?;
        write(&self.entries).retain(|i, _| *i < index);
        for segment in &mut self.segments {
            if segment.live_max >= Some(index) {
                segment.live_max = index.checked_sub(1);
            }
        }
        Ok(())
    }

    /// Removes the entries up to `log_id` and makes it the purge point, durably; segments
    /// holding nothing after it are deleted.
    pub(crate) async fn purge(&mut self, log_id: LogId) -> Result<(), RaftStoreError> {
        let file = self.write_record(&Record::PurgeUpTo(log_id))?;
        make_durable(file).await?;
        write(&self.entries).retain(|i, _| *i > log_id.index);
        self.checkpoint.purged = Some(log_id);
        self.remove_dead_segments()
    }

    fn write_record(&mut self, record: &Record) -> Result<Arc<dyn DiskFile>, RaftStoreError> {
        let mut bytes = Vec::new();
        frame(record, &mut bytes)?;
        self.write(&bytes)
    }

    /// Writes `bytes` at the end of the newest segment (starting a new one first if it is
    /// full) and returns its file.
    fn write(&mut self, bytes: &[u8]) -> Result<Arc<dyn DiskFile>, RaftStoreError> {
        let full = self
            .segments
            .last()
            .is_none_or(|s| s.len > 0 && s.len + bytes.len() as u64 > self.segment_bytes);
        if full {
            let next = self.segments.last().map_or(1, |s| s.number + 1);
            self.start_segment(next)?;
        }
        let Some(segment) = self.segments.last_mut() else {
            return Err(RaftStoreError::Corrupt {
                what: "the journal".to_owned(),
                reason: "no segment to write to".to_owned(),
            });
        };
        segment
            .file
            .write_at(segment.len, bytes)
            .map_err(io_error(format!("write {}", segment_name(segment.number))))?;
        segment.len += bytes.len() as u64;
        Ok(Arc::clone(&segment.file))
    }

    /// Starts segment `number` with a checkpoint of the current state, durably, after making
    /// the current newest segment durable (its unsynced committed-id records included), so
    /// every segment but the newest is whole on disk.
    fn start_segment(&mut self, number: u64) -> Result<(), RaftStoreError> {
        if let Some(current) = self.segments.last() {
            current
                .file
                .sync()
                .map_err(io_error(format!("sync {}", segment_name(current.number))))?;
        }
        let name = segment_name(number);
        let mut bytes = Vec::new();
        frame(&header(number, &self.checkpoint), &mut bytes)?;
        let file = self
            .disk
            .open(&name, true)
            .map_err(io_error(format!("create {name}")))?;
        file.write_at(0, &bytes)
            .and_then(|()| file.sync())
            .and_then(|()| self.disk.sync_dir())
            .map_err(io_error(format!("start {name}")))?;
        self.segments.push(Segment {
            number,
            file,
            len: bytes.len() as u64,
            live_max: None,
        });
        self.remove_dead_segments()
    }

    /// Deletes the oldest segments while every entry in them is purged (never the newest).
    /// Only a prefix is deleted: a later segment may truncate entries of an earlier one, so a
    /// segment is replayed only after everything older that is kept.
    fn remove_dead_segments(&mut self) -> Result<(), RaftStoreError> {
        let purged = self.checkpoint.purged.map(|id| id.index);
        let mut removed = false;
        while self.segments.len() > 1
            && self.segments[0]
                .live_max
                .is_none_or(|max| purged.is_some_and(|p| max <= p))
        {
            let segment = self.segments.remove(0);
            let name = segment_name(segment.number);
            self.disk
                .remove(&name)
                .map_err(io_error(format!("remove {name}")))?;
            removed = true;
        }
        if removed {
            self.disk
                .sync_dir()
                .map_err(io_error("sync the journal directory".into()))?;
        }
        Ok(())
    }
}

/// The header record of segment `number`.
fn header(number: u64, checkpoint: &Checkpoint) -> Record {
    Record::Header {
        format: JOURNAL_FORMAT,
        segment: number,
        checkpoint: checkpoint.clone(),
    }
}

/// A sync slower than this is logged: every write of the cluster waits for the leader's.
const SLOW_SYNC: std::time::Duration = std::time::Duration::from_millis(500);

/// Makes what was written to `file` durable (`fdatasync`), off the async threads. A slow sync
/// is logged as a warning: openraft waits for each of its appends to be durable before it goes
/// on, so a member's slow disk slows every write it takes part in (a leader's, all of them).
/// Returning from `append` before the sync would not help: openraft 0.9.25's core awaits the
/// append's flush callback itself (`RaftCore::append_to_log`), so a leader's slow disk stops
/// its core whatever the store does (docs/chaos.md, open findings).
pub(crate) async fn make_durable(file: Arc<dyn DiskFile>) -> Result<(), RaftStoreError> {
    let started = std::time::Instant::now();
    let synced = tokio::task::spawn_blocking(move || file.sync()).await;
    let took = started.elapsed();
    if took >= SLOW_SYNC {
        tracing::warn!(
            took_ms = u64::try_from(took.as_millis()).unwrap_or(u64::MAX),
            "slow journal sync: the disk took {took:.1?} to make the Raft log durable; every \
             write this member takes part in waits for it (check the disk: smartctl, iostat)"
        );
    }
    match synced {
        Ok(result) => result.map_err(io_error("sync the journal".into())),
        Err(e) => Err(RaftStoreError::Io {
            what: "sync the journal".into(),
            source: std::io::Error::other(e.to_string()),
        }),
    }
}

/// The entries in `range`, cloned.
pub(crate) fn read_range<R: RangeBounds<u64>>(entries: &Entries, range: &R) -> Vec<Entry> {
    let Some((start, end)) = index_range(range) else {
        return Vec::new();
    };
    let map = read(entries);
    match end {
        Some(end) => map.range(start..end).map(|(_, e)| e.clone()).collect(),
        None => map.range(start..).map(|(_, e)| e.clone()).collect(),
    }
}

// The map holds plain data: a panic while it was locked leaves it as consistent as the last
// completed insert or removal, so a poisoned lock is used as it is.
fn read(entries: &Entries) -> std::sync::RwLockReadGuard<'_, BTreeMap<u64, Entry>> {
    entries.read().unwrap_or_else(PoisonError::into_inner)
}

fn write(entries: &Entries) -> std::sync::RwLockWriteGuard<'_, BTreeMap<u64, Entry>> {
    entries.write().unwrap_or_else(PoisonError::into_inner)
}
