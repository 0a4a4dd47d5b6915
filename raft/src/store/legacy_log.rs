//! The sled log of earlier builds (entries in the `logs` tree; vote, committed id and purge
//! point in `meta`) and its one-time move to the journal. The move writes the journal into a
//! temporary directory, makes it durable and renames it into place; only then are the sled
//! trees emptied. `meta/vote` then holds [`MOVED`], a value of an unknown format version, so an
//! older build refuses the directory instead of starting with an empty log and no vote (it
//! could vote twice in a term).

use std::path::Path;

use serde::de::DeserializeOwned;

use crate::error::RaftStoreError;
use crate::store::codec::decode;
use crate::store::flush::Flusher;
use crate::store::journal::{Checkpoint, Journal, sync_dir};
use crate::store::keys::{COMMITTED, LAST_PURGED, VOTE};
use crate::types::{Entry, LogId};

/// The journal's directory inside the store directory.
pub(crate) const JOURNAL_DIR: &str = "journal";
/// Where a move writes the journal before renaming it to [`JOURNAL_DIR`].
const JOURNAL_TMP: &str = "journal.tmp";
/// `meta/vote` once the log moved: a format version no build of the sled log reads.
pub(crate) const MOVED: &[u8] = &[0xfe];

/// Makes sure the store in `dir` has its journal: moves the sled log there if the journal does
/// not exist yet, then empties the sled log and marks it moved (durably). Idempotent: a crash
/// at any point is finished by the next open.
pub(crate) fn move_to_journal(
    dir: &Path,
    logs: &sled::Tree,
    meta: &sled::Tree,
    db: &Flusher,
) -> Result<(), RaftStoreError> {
    let journal = dir.join(JOURNAL_DIR);
    let io = |what: &str| {
        let what = what.to_owned();
        move |source| RaftStoreError::Io { what, source }
    };
    if !journal.exists() {
        if meta.get(VOTE)?.as_deref() == Some(MOVED) {
            return Err(RaftStoreError::Corrupt {
                what: "the Raft log".to_owned(),
                reason: format!("it was moved to {}, which is missing", journal.display()),
            });
        }
        let (checkpoint, entries) = read(logs, meta)?;
        let tmp = dir.join(JOURNAL_TMP);
        if tmp.exists() {
            std::fs::remove_dir_all(&tmp).map_err(io("remove an unfinished journal"))?;
        }
        std::fs::create_dir(&tmp).map_err(io("create the journal directory"))?;
        Journal::create(&tmp, checkpoint, entries)?;
        std::fs::rename(&tmp, &journal).map_err(io("move the journal into place"))?;
        sync_dir(dir).map_err(io("sync the store directory"))?;
    }
    let moved = meta.get(VOTE)?.as_deref() == Some(MOVED);
    if !moved || !logs.is_empty() {
        logs.clear()?;
        meta.remove(COMMITTED)?;
        meta.remove(LAST_PURGED)?;
        meta.insert(VOTE, MOVED)?;
        db.flush_blocking()?;
    }
    Ok(())
}

/// The sled log's vote, committed id, purge point and the entries after it.
fn read(logs: &sled::Tree, meta: &sled::Tree) -> Result<(Checkpoint, Vec<Entry>), RaftStoreError> {
    let purged: Option<LogId> = read_meta(meta, LAST_PURGED)?;
    let checkpoint = Checkpoint {
        vote: read_meta(meta, VOTE)?,
        committed: read_meta::<Option<LogId>>(meta, COMMITTED)?.flatten(),
        purged,
    };
    let mut entries = Vec::new();
    for item in logs.iter() {
        let (key, value) = item?;
        let entry = decode_entry(&key, &value)?;
        if purged.is_none_or(|p| entry.log_id.index > p.index) {
            entries.push(entry);
        }
    }
    Ok((checkpoint, entries))
}

fn read_meta<T: DeserializeOwned>(
    tree: &sled::Tree,
    key: &[u8],
) -> Result<Option<T>, RaftStoreError> {
    match tree.get(key)? {
        None => Ok(None),
        Some(bytes) => {
            let what = format!("meta/{}", String::from_utf8_lossy(key));
            decode(&what, &bytes).map(Some)
        }
    }
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
