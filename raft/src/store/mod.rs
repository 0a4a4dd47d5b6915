//! The Raft store in one directory: the log, the vote, the purge point and the committed id in
//! the journal (`journal/`, segment files made durable with `fdatasync`), the
//! snapshots in a sled database (tree `sm`: snapshot generations and the pointer to the
//! current one). A store written by an earlier build, whose log was in sled (trees `logs` and
//! `meta`), has it moved to the journal when it is opened.
//!
//! ```text
//!  openraft ── append/vote/truncate/purge ──▶ LogStore ──▶ journal/segment-*.log (fdatasync)
//!          ── apply/snapshot ──▶ StateMachineStore ──▶ machine (memory) + sled `sm` (snapshots)
//! ```

mod applied;
mod codec;
mod flush;
mod journal;
mod keys;
mod legacy_log;
mod log_store;
mod options;
mod snapshot;
mod state_machine;

use flush::Flusher;
use journal::Journal;
use legacy_log::{JOURNAL_DIR, move_to_journal};
use std::path::Path;

pub use applied::MachineHandle;
pub use log_store::{LogReader, LogStore};
pub use options::{DEFAULT_PERIODIC_FLUSH, StoreOptions};
pub use state_machine::{SnapshotBuilder, StateMachineStore};

use crate::error::RaftStoreError;
use crate::machine::Machine;
use crate::store::applied::Applied;
use crate::store::keys::{LOGS_TREE, META_TREE, SM_TREE};
use crate::store::snapshot::SnapshotStore;
use crate::types::StoredMembership;

/// Opens (or creates) the Raft store in `dir` and restores `machine` from the stored snapshot,
/// if any. Every stored value is checked for a known format version first.
///
/// The machine then stands at the snapshot's last log id; openraft re-applies the committed log
/// after it when the `Raft` starts.
pub fn open<M: Machine>(
    dir: &Path,
    machine: M,
) -> Result<(LogStore, StateMachineStore<M>), RaftStoreError> {
    open_with(dir, machine, &StoreOptions::default())
}

/// [`open`] with explicit [`StoreOptions`] (the crash tests turn sled's background flush off).
pub fn open_with<M: Machine>(
    dir: &Path,
    machine: M,
    options: &StoreOptions,
) -> Result<(LogStore, StateMachineStore<M>), RaftStoreError> {
    let db = options.sled_config(dir).open()?;
    let logs = db.open_tree(LOGS_TREE)?;
    let meta = db.open_tree(META_TREE)?;
    let sm = db.open_tree(SM_TREE)?;

    let flusher = Flusher::new(db, dir);
    move_to_journal(dir, &logs, &meta, &flusher)?;
    let log_store = LogStore::new(Journal::open(&dir.join(JOURNAL_DIR))?);

    let snapshots = SnapshotStore::new(flusher, sm);
    let mut applied = Applied {
        machine,
        last_applied: None,
        membership: StoredMembership::default(),
    };
    if let Some((meta, data)) = snapshots.current()? {
        applied
            .machine
            .restore(&data)
            .map_err(|reason| RaftStoreError::Restore {
                snapshot_id: meta.snapshot_id.clone(),
                reason,
            })?;
        applied.last_applied = meta.last_log_id;
        applied.membership = meta.last_membership;
    }
    snapshots.remove_leftovers()?;

    let state_machine = StateMachineStore::new(MachineHandle::new(applied), snapshots);
    Ok((log_store, state_machine))
}
