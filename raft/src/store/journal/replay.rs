//! Rebuilding the journal's state from its segments, in order: the first segment's header
//! checkpoint, then every record. Pure: the segments' bytes in, the state out.

use std::collections::BTreeMap;

use super::format::{JOURNAL_FORMAT, segment_name};
use super::record::{Checkpoint, Record, Tail, parse};
use crate::error::RaftStoreError;
use crate::types::Entry;

/// What the segments hold.
#[derive(Debug)]
pub(crate) struct Replayed {
    /// Vote, committed id and purge point.
    pub(crate) checkpoint: Checkpoint,
    /// The entries after the purge point, without holes.
    pub(crate) entries: BTreeMap<u64, Entry>,
    /// The segments in use, oldest first.
    pub(crate) segments: Vec<Found>,
    /// The newest segment's end was torn: only its first `keep` bytes are records.
    pub(crate) torn: Option<Torn>,
    /// Segments whose very header was cut short (a crash while starting one): they never held
    /// anything and are deleted.
    pub(crate) unused: Vec<u64>,
}

/// A segment in use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Found {
    pub(crate) number: u64,
    /// Bytes of whole records.
    pub(crate) len: u64,
    /// The highest index of an entry in it that is not truncated.
    pub(crate) live_max: Option<u64>,
}

/// Where a torn end starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Torn {
    pub(crate) keep: u64,
}

/// Replays `segments` (number, bytes), sorted by number.
pub(crate) fn replay(segments: &[(u64, Vec<u8>)]) -> Result<Replayed, RaftStoreError> {
    let mut out = Replayed {
        checkpoint: Checkpoint::default(),
        entries: BTreeMap::new(),
        segments: Vec::new(),
        torn: None,
        unused: Vec::new(),
    };
    let newest = segments.len().checked_sub(1);
    for (position, (number, bytes)) in segments.iter().enumerate() {
        let name = segment_name(*number);
        let corrupt = |reason: String| RaftStoreError::Corrupt {
            what: format!("journal segment {name}"),
            reason,
        };
        let (records, tail) = parse(&name, bytes)?;
        let is_newest = Some(position) == newest;
        if let Tail::Torn { at } = tail {
            if !is_newest {
                return Err(corrupt(format!(
                    "cut short at byte {at}, but newer segments follow"
                )));
            }
            if records.is_empty() {
                out.unused.push(*number);
                continue;
            }
            out.torn = Some(Torn { keep: at });
        }
        if let Some(previous) = out.segments.last()
            && previous.number + 1 != *number
        {
            return Err(corrupt(format!(
                "segment {} is missing before it",
                segment_name(previous.number + 1)
            )));
        }
        let mut records = records.into_iter();
        match records.next() {
            Some((
                Record::Header {
                    format,
                    segment,
                    checkpoint,
                },
                _,
            )) => {
                if format != JOURNAL_FORMAT {
                    return Err(RaftStoreError::UnknownFormat {
                        what: format!("journal segment {name}"),
                        found: format,
                        supported: JOURNAL_FORMAT,
                    });
                }
                if segment != *number {
                    return Err(corrupt(format!("its header says segment {segment}")));
                }
                purge_to(&mut out, checkpoint.purged.map(|id| id.index));
                out.checkpoint = checkpoint;
            }
            _ => return Err(corrupt("it does not start with a header".to_owned())),
        }
        out.segments.push(Found {
            number: *number,
            len: bytes.len() as u64,
            live_max: None,
        });
        let mut len = 0;
        for (record, end) in records {
            apply(&mut out, record);
            len = end;
        }
        if let Some(found) = out.segments.last_mut() {
            found.len = match out.torn {
                Some(torn) if is_newest => torn.keep,
                _ => found.len.max(len),
            };
        }
    }
    check_no_holes(&out)?;
    Ok(out)
}

fn apply(out: &mut Replayed, record: Record) {
    match record {
        Record::Header { .. } => {}
        Record::Entries(entries) => {
            for entry in entries {
                let index = entry.log_id.index;
                out.entries.insert(index, entry);
                if let Some(segment) = out.segments.last_mut() {
                    segment.live_max = segment.live_max.max(Some(index));
                }
            }
        }
        Record::Vote(vote) => out.checkpoint.vote = Some(vote),
        Record::Committed(committed) => out.checkpoint.committed = committed,
        Record::TruncateFrom(index) => {
            out.entries.retain(|i, _| *i < index);
            for segment in &mut out.segments {
                if segment.live_max >= Some(index) {
                    segment.live_max = index.checked_sub(1);
                }
            }
        }
        Record::PurgeUpTo(log_id) => {
            purge_to(out, Some(log_id.index));
            out.checkpoint.purged = Some(log_id);
        }
    }
}

fn purge_to(out: &mut Replayed, index: Option<u64>) {
    if let Some(index) = index {
        out.entries.retain(|i, _| *i > index);
    }
}

/// The entries must follow each other without a gap (openraft relies on it).
fn check_no_holes(out: &Replayed) -> Result<(), RaftStoreError> {
    let mut previous: Option<u64> = out.checkpoint.purged.map(|id| id.index);
    let mut first = true;
    for index in out.entries.keys() {
        let expected = previous.map_or(*index, |p| p + 1);
        // The first entry may start anywhere after the purge point (a snapshot was installed
        // ahead of the log); after it, none may be missing.
        if (!first && *index != expected) || (first && previous.is_some_and(|p| *index <= p)) {
            return Err(RaftStoreError::Corrupt {
                what: "the journal".to_owned(),
                reason: format!(
                    "entry {index} follows {}: the log has a hole",
                    previous.map_or_else(|| "nothing".to_owned(), |p| p.to_string())
                ),
            });
        }
        first = false;
        previous = Some(*index);
    }
    Ok(())
}
