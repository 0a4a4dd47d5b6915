//! The Raft timing and snapshot settings. Every member must run with the same values: a member
//! with a shorter election timeout would keep disrupting a healthy leader.

use openraft::{Config, SnapshotPolicy};

/// Lowest election timeout: about ten LAN round trips plus scheduling noise on small hosts.
pub const ELECTION_TIMEOUT_MIN_MS: u64 = 1000;
/// Highest election timeout; the random spread avoids split votes.
pub const ELECTION_TIMEOUT_MAX_MS: u64 = 2000;
/// Leader heartbeat period, well under the election timeout.
pub const HEARTBEAT_INTERVAL_MS: u64 = 200;
/// Deadline of one snapshot chunk RPC (openraft's 200 ms default makes large snapshots loop
/// for ever on the first chunk).
pub const INSTALL_SNAPSHOT_TIMEOUT_MS: u64 = 10_000;
/// A snapshot is built once this many entries were applied since the last one.
pub const SNAPSHOT_LOGS_SINCE_LAST: u64 = 5000;
/// Entries kept behind a snapshot, so a follower that is a little behind (or busy receiving a
/// snapshot while writes continue) catches up from the log instead of a new snapshot.
pub const MAX_IN_SNAPSHOT_LOG_TO_KEEP: u64 = 2000;

// Every rule of `Config::validate` (openraft 0.9.25), checked when this crate compiles, so
// `default_config` cannot produce an invalid configuration; a test runs `validate` as well.
const _: () = assert!(ELECTION_TIMEOUT_MIN_MS < ELECTION_TIMEOUT_MAX_MS);
const _: () = assert!(HEARTBEAT_INTERVAL_MS < ELECTION_TIMEOUT_MIN_MS);
const _: () = assert!(HEARTBEAT_INTERVAL_MS * 3 <= ELECTION_TIMEOUT_MIN_MS);

/// The openraft configuration of the coordinator group. It is valid by construction (see the
/// compile-time assertions above); a caller changing fields should call
/// [`Config::validate`] again.
pub fn default_config() -> Config {
    Config {
        cluster_name: "pvefleet".to_owned(),
        election_timeout_min: ELECTION_TIMEOUT_MIN_MS,
        election_timeout_max: ELECTION_TIMEOUT_MAX_MS,
        heartbeat_interval: HEARTBEAT_INTERVAL_MS,
        install_snapshot_timeout: INSTALL_SNAPSHOT_TIMEOUT_MS,
        snapshot_policy: SnapshotPolicy::LogsSinceLast(SNAPSHOT_LOGS_SINCE_LAST),
        max_in_snapshot_log_to_keep: MAX_IN_SNAPSHOT_LOG_TO_KEEP,
        ..Config::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_config_is_valid_and_uses_lan_timings() {
        let config = default_config().validate().unwrap();
        assert_eq!(config.election_timeout_min, 1000);
        assert_eq!(config.election_timeout_max, 2000);
        assert_eq!(config.heartbeat_interval, 200);
        assert!(config.install_snapshot_timeout >= 5000);
        assert_eq!(config.snapshot_policy, SnapshotPolicy::LogsSinceLast(5000));
        assert!(config.max_in_snapshot_log_to_keep >= 1000);
        // A snapshot chunk (plus its envelope) must fit in one transport frame.
        let frame = transport::TransportConfig::default().max_frame as u64;
        assert!(config.snapshot_max_chunk_size * 2 <= frame);
    }
}
