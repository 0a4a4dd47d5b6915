//! The replicated state machine on openraft (`RaftStateMachine`). The machine lives in memory
//! and is made durable by snapshots: at open it is restored from the stored snapshot, and
//! openraft re-applies the committed log after it (`read_committed`).

use std::io::Cursor;
use std::time::{SystemTime, UNIX_EPOCH};

use openraft::storage::RaftStateMachine;
use openraft::{EntryPayload, OptionalSend, RaftSnapshotBuilder, Snapshot, StorageIOError};

use crate::error::RaftStoreError;
use crate::machine::Machine;
use crate::store::applied::MachineHandle;
use crate::store::snapshot::{Replace, SnapshotStore};
use crate::types::{Entry, LogId, Reply, SnapshotMeta, StorageError, StoredMembership, TypeConfig};

/// The state machine store: the in-memory machine plus its durable snapshots.
pub struct StateMachineStore<M> {
    applied: MachineHandle<M>,
    snapshots: SnapshotStore,
}

/// Builds a snapshot of the machine as it is when `build_snapshot` runs.
pub struct SnapshotBuilder<M> {
    applied: MachineHandle<M>,
    snapshots: SnapshotStore,
}

impl<M: Machine> StateMachineStore<M> {
    pub(crate) fn new(applied: MachineHandle<M>, snapshots: SnapshotStore) -> StateMachineStore<M> {
        StateMachineStore { applied, snapshots }
    }

    /// A handle for reading the machine while openraft drives it.
    pub fn machine(&self) -> MachineHandle<M> {
        self.applied.clone()
    }

    fn apply_entries(
        &self,
        entries: impl IntoIterator<Item = Entry>,
    ) -> Result<Vec<Reply>, RaftStoreError> {
        let mut applied = self.applied.lock_write()?;
        let mut replies = Vec::new();
        for entry in entries {
            let reply = match entry.payload {
                EntryPayload::Blank => Reply::default(),
                EntryPayload::Normal(command) => {
                    let index = entry.log_id.index;
                    let reply = applied
                        .machine
                        .apply(index, &command.0)
                        .map_err(|reason| RaftStoreError::Apply { index, reason })?;
                    Reply(reply)
                }
                EntryPayload::Membership(membership) => {
                    applied.membership = StoredMembership::new(Some(entry.log_id), membership);
                    Reply::default()
                }
            };
            applied.last_applied = Some(entry.log_id);
            replies.push(reply);
        }
        Ok(replies)
    }

    async fn install(&self, meta: &SnapshotMeta, data: Vec<u8>) -> Result<(), RaftStoreError> {
        {
            let mut applied = self.applied.lock_write()?;
            // `restore` replaces the whole state: nothing of the old machine is merged in.
            applied
                .machine
                .restore(&data)
                .map_err(|reason| RaftStoreError::Restore {
                    snapshot_id: meta.snapshot_id.clone(),
                    reason,
                })?;
            applied.last_applied = meta.last_log_id;
            applied.membership = meta.last_membership.clone();
        }
        self.snapshots.replace(meta, &data, Replace::Always).await?;
        Ok(())
    }
}

impl<M: Machine> SnapshotBuilder<M> {
    async fn build(&self) -> Result<(SnapshotMeta, Vec<u8>), RaftStoreError> {
        let (data, last_log_id, last_membership) = {
            let applied = self.applied.lock_read()?;
            (
                applied
                    .machine
                    .snapshot()
                    .map_err(|reason| RaftStoreError::Snapshot { reason })?,
                applied.last_applied,
                applied.membership.clone(),
            )
        };
        let meta = SnapshotMeta {
            last_log_id,
            last_membership,
            snapshot_id: snapshot_id(last_log_id),
        };
        self.snapshots
            .replace(&meta, &data, Replace::UnlessOlder)
            .await?;
        Ok((meta, data))
    }
}

/// A snapshot id unique on this node: the log position plus the build time.
fn snapshot_id(last_log_id: Option<LogId>) -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    match last_log_id {
        Some(id) => format!("{}-{}-{nanos}", id.leader_id.term, id.index),
        None => format!("0-0-{nanos}"),
    }
}

impl<M: Machine> RaftSnapshotBuilder<TypeConfig> for SnapshotBuilder<M> {
    async fn build_snapshot(&mut self) -> Result<Snapshot<TypeConfig>, StorageError> {
        let (meta, data) = self
            .build()
            .await
            .map_err(|e| StorageIOError::write_snapshot(None, &e))?;
        Ok(Snapshot {
            meta,
            snapshot: Box::new(Cursor::new(data)),
        })
    }
}

impl<M: Machine> RaftStateMachine<TypeConfig> for StateMachineStore<M> {
    type SnapshotBuilder = SnapshotBuilder<M>;

    async fn applied_state(&mut self) -> Result<(Option<LogId>, StoredMembership), StorageError> {
        let applied = self
            .applied
            .lock_read()
            .map_err(|e| StorageIOError::read_state_machine(&e))?;
        Ok((applied.last_applied, applied.membership.clone()))
    }

    async fn apply<I>(&mut self, entries: I) -> Result<Vec<Reply>, StorageError>
    where
        I: IntoIterator<Item = Entry> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        Ok(self
            .apply_entries(entries)
            .map_err(|e| StorageIOError::write_state_machine(&e))?)
    }

    async fn get_snapshot_builder(&mut self) -> SnapshotBuilder<M> {
        SnapshotBuilder {
            applied: self.applied.clone(),
            snapshots: self.snapshots.clone(),
        }
    }

    async fn begin_receiving_snapshot(&mut self) -> Result<Box<Cursor<Vec<u8>>>, StorageError> {
        Ok(Box::new(Cursor::new(Vec::new())))
    }

    async fn install_snapshot(
        &mut self,
        meta: &SnapshotMeta,
        snapshot: Box<Cursor<Vec<u8>>>,
    ) -> Result<(), StorageError> {
        let signature = Some(meta.signature());
        Ok(self
            .install(meta, snapshot.into_inner())
            .await
            .map_err(|e| StorageIOError::write_snapshot(signature, &e))?)
    }

    async fn get_current_snapshot(&mut self) -> Result<Option<Snapshot<TypeConfig>>, StorageError> {
        let current = self
            .snapshots
            .current()
            .map_err(|e| StorageIOError::read_snapshot(None, &e))?;
        Ok(current.map(|(meta, data)| Snapshot {
            meta,
            snapshot: Box::new(Cursor::new(data)),
        }))
    }
}
