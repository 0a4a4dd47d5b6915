//! Opening a member's Raft store and choosing its openraft and transport settings.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use openraft::{Config, SnapshotPolicy};
use raft::RaftStoreError;
use raft::store::{LogStore, StateMachineStore};
use transport::TransportConfig;

use crate::error::CoordinatorError;
use crate::machine::FleetMachine;

/// How long opening waits for a previous run of this member to release sled's file lock.
const STORE_LOCK_WAIT: Duration = Duration::from_secs(10);
/// Margin of a call over the longest Raft RPC (a snapshot chunk), so the transport never
/// cuts a call openraft still waits for.
const CALL_MARGIN_MS: u64 = 5_000;

/// The transport settings of a member: the call deadline covers a snapshot chunk.
pub(crate) fn transport_config() -> TransportConfig {
    TransportConfig {
        call_timeout: Duration::from_millis(
            raft::config::INSTALL_SNAPSHOT_TIMEOUT_MS + CALL_MARGIN_MS,
        ),
        ..TransportConfig::default()
    }
}

/// openraft's settings: the cluster defaults, with a snapshot every `snapshot_logs` entries if
/// given. Then at most as many entries are kept behind a snapshot as are written between two,
/// so a small value (tests) really compacts the log.
pub(crate) fn raft_config(snapshot_logs: Option<u64>) -> Result<Arc<Config>, CoordinatorError> {
    let mut config = raft::config::default_config();
    if let Some(n) = snapshot_logs {
        if n == 0 {
            return Err(CoordinatorError::RaftConfig(
                "--snapshot-logs must be at least 1".to_string(),
            ));
        }
        config.snapshot_policy = SnapshotPolicy::LogsSinceLast(n);
        config.max_in_snapshot_log_to_keep = config.max_in_snapshot_log_to_keep.min(n);
    }
    config
        .validate()
        .map(Arc::new)
        .map_err(|e| CoordinatorError::RaftConfig(e.to_string()))
}

/// Opens the Raft store in `dir`, waiting (bounded) while a previous run still holds its lock.
pub(crate) async fn open_store(
    dir: &Path,
) -> Result<(LogStore, StateMachineStore<FleetMachine>), CoordinatorError> {
    let deadline = tokio::time::Instant::now() + STORE_LOCK_WAIT;
    loop {
        match raft::store::open(dir, FleetMachine::default()) {
            Ok(store) => return Ok(store),
            // sled reports the lock as an I/O error; anything else it reports again at the
            // deadline.
            Err(RaftStoreError::Sled(e)) if tokio::time::Instant::now() < deadline => {
                tracing::debug!(error = %e, "raft store not openable yet");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(source) => {
                return Err(CoordinatorError::OpenStore {
                    dir: dir.to_path_buf(),
                    source,
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_call_deadline_outlasts_a_snapshot_chunk() {
        let cfg = transport_config();
        assert!(
            cfg.call_timeout > Duration::from_millis(raft::config::INSTALL_SNAPSHOT_TIMEOUT_MS)
        );
        assert!(cfg.validate().is_ok());
    }

    #[test]
    fn snapshot_logs_sets_the_policy_and_compacts_the_log() {
        let cfg = raft_config(Some(50)).unwrap();
        assert_eq!(cfg.snapshot_policy, SnapshotPolicy::LogsSinceLast(50));
        assert_eq!(cfg.max_in_snapshot_log_to_keep, 50);
        let default = raft_config(None).unwrap();
        assert_eq!(
            default.snapshot_policy,
            SnapshotPolicy::LogsSinceLast(raft::config::SNAPSHOT_LOGS_SINCE_LAST)
        );
        assert!(raft_config(Some(0)).is_err());
    }
}
