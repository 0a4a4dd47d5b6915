//! openraft's own storage conformance suite against the sled store.

// Only built as a test; lets helpers panic like tests do (clippy `allow-unwrap-in-tests`).
#![cfg(test)]

use crate::common;

use common::ListMachine;
use openraft::testing::{StoreBuilder, Suite};
use raft::TypeConfig;
use raft::store::{LogStore, StateMachineStore};
use raft::types::StorageError;
use tempfile::TempDir;

struct SledBuilder;

impl StoreBuilder<TypeConfig, LogStore, StateMachineStore<ListMachine>, TempDir> for SledBuilder {
    async fn build(
        &self,
    ) -> Result<(TempDir, LogStore, StateMachineStore<ListMachine>), StorageError> {
        let dir = TempDir::new().unwrap();
        let (log, sm) = raft::store::open(dir.path(), ListMachine::default()).unwrap();
        Ok((dir, log, sm))
    }
}

#[test]
fn the_sled_store_passes_openrafts_storage_suite() {
    Suite::test_all(SledBuilder).unwrap();
}
