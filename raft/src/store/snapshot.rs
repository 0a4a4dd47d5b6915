//! Durable snapshots in the `sm` tree. A new snapshot is written under a fresh generation,
//! flushed, and only then made current by flipping one pointer key (flushed again); the old
//! generation is deleted last. A crash at any point leaves either the old or the new snapshot
//! current, never a mix, and leftovers are removed at the next open.

use super::flush::Flusher;
use std::sync::Arc;

use tokio::sync::Mutex;

use crate::error::RaftStoreError;
use crate::store::codec::{body, decode, encode, encode_raw};
use crate::store::keys::{
    SNAPSHOT_CURRENT, SNAPSHOT_GEN_PREFIX, SnapshotPart, snapshot_generation, snapshot_key,
};
use crate::types::SnapshotMeta;

/// Whether a snapshot may replace a newer stored one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Replace {
    /// Installing a leader's snapshot: always replace.
    Always,
    /// A locally built snapshot: skip it if a newer one was stored meanwhile (an install that
    /// raced with the build), so the stored snapshot never goes backwards.
    UnlessOlder,
}

/// The snapshot half of the `sm` tree.
#[derive(Clone)]
pub(crate) struct SnapshotStore {
    db: Flusher,
    tree: sled::Tree,
    /// Serializes replacements (a build task and an install can run at the same time).
    writer: Arc<Mutex<()>>,
}

impl SnapshotStore {
    pub(crate) fn new(db: Flusher, tree: sled::Tree) -> SnapshotStore {
        SnapshotStore {
            db,
            tree,
            writer: Arc::new(Mutex::new(())),
        }
    }

    fn current_generation(&self) -> Result<Option<u64>, RaftStoreError> {
        match self.tree.get(SNAPSHOT_CURRENT)? {
            None => Ok(None),
            Some(bytes) => decode("sm/snapshot.current", &bytes).map(Some),
        }
    }

    fn read_part(&self, generation: u64, part: SnapshotPart) -> Result<sled::IVec, RaftStoreError> {
        self.tree
            .get(snapshot_key(generation, part))?
            .ok_or(RaftStoreError::MissingSnapshot {
                generation,
                part: part.as_str(),
            })
    }

    fn read_meta(&self, generation: u64) -> Result<SnapshotMeta, RaftStoreError> {
        let bytes = self.read_part(generation, SnapshotPart::Meta)?;
        decode(&format!("snapshot {generation} meta"), &bytes)
    }

    /// The current snapshot: metadata and the machine's bytes.
    pub(crate) fn current(&self) -> Result<Option<(SnapshotMeta, Vec<u8>)>, RaftStoreError> {
        let Some(generation) = self.current_generation()? else {
            return Ok(None);
        };
        let meta = self.read_meta(generation)?;
        let bytes = self.read_part(generation, SnapshotPart::Data)?;
        let data = body(&format!("snapshot {generation} data"), &bytes)?.to_vec();
        Ok(Some((meta, data)))
    }

    /// Stores a snapshot and makes it current, crash-atomically. Returns whether it was stored
    /// (`false` only for [`Replace::UnlessOlder`] when a newer one is current).
    pub(crate) async fn replace(
        &self,
        meta: &SnapshotMeta,
        data: &[u8],
        rule: Replace,
    ) -> Result<bool, RaftStoreError> {
        let _writer = self.writer.lock().await;
        let old = self.current_generation()?;
        if let (Some(old), Replace::UnlessOlder) = (old, rule)
            && self.read_meta(old)?.last_log_id > meta.last_log_id
        {
            return Ok(false);
        }
        let generation = old.map_or(1, |g| g.wrapping_add(1));
        let mut batch = sled::Batch::default();
        batch.insert(
            snapshot_key(generation, SnapshotPart::Meta),
            encode("snapshot meta", meta)?,
        );
        batch.insert(
            snapshot_key(generation, SnapshotPart::Data),
            encode_raw(data),
        );
        self.tree.apply_batch(batch)?;
        self.db.flush_async().await?;
        self.tree
            .insert(SNAPSHOT_CURRENT, encode("snapshot.current", &generation)?)?;
        self.db.flush_async().await?;
        if let Some(old) = old {
            self.remove_generation(old)?;
        }
        Ok(true)
    }

    fn remove_generation(&self, generation: u64) -> Result<(), RaftStoreError> {
        let mut batch = sled::Batch::default();
        batch.remove(snapshot_key(generation, SnapshotPart::Meta));
        batch.remove(snapshot_key(generation, SnapshotPart::Data));
        self.tree.apply_batch(batch)?;
        Ok(())
    }

    /// Deletes every generation but the current one (left by a crash mid-replacement).
    pub(crate) fn remove_leftovers(&self) -> Result<(), RaftStoreError> {
        let current = self.current_generation()?;
        let mut batch = sled::Batch::default();
        for item in self.tree.scan_prefix(SNAPSHOT_GEN_PREFIX) {
            let (key, _) = item?;
            if snapshot_generation(&key) != current {
                batch.remove(key);
            }
        }
        self.tree.apply_batch(batch)?;
        Ok(())
    }
}
