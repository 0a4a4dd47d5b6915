//! The Raft timing and snapshot settings. Every member must run with the same values: a member
//! with a shorter election timeout would keep disrupting a healthy leader.

use openraft::{Config, SnapshotPolicy};

/// Lowest election timeout. openraft 0.9 starts an election only after the leader lease
/// (= [`ELECTION_TIMEOUT_MAX_MS`]) plus a random timeout in `[min, max)` passed without a
/// heartbeat, so a follower of a dead leader becomes a candidate 800 to 1000 ms (plus up to one
/// tick, 1.5 heartbeats) after the last heartbeat: failover stays under 1.5 s. Still eight or
/// more heartbeats, so a busy leader (fsync stalls of tens of ms, CPU contention) does not look
/// dead; `docs/design/raft-log.md` has the measurements.
pub const ELECTION_TIMEOUT_MIN_MS: u64 = 300;
/// Highest election timeout, and openraft's leader lease; the random spread avoids split votes.
pub const ELECTION_TIMEOUT_MAX_MS: u64 = 500;
/// Leader heartbeat period, well under the election timeout. openraft also uses it as the
/// deadline of every AppendEntries RPC, so it must exceed a follower's append (an fsync) and
/// a round trip under load.
pub const HEARTBEAT_INTERVAL_MS: u64 = 100;
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
        assert_eq!(config.election_timeout_min, 300);
        assert_eq!(config.election_timeout_max, 500);
        assert_eq!(config.heartbeat_interval, 100);
        assert!(config.install_snapshot_timeout >= 5000);
        assert_eq!(config.snapshot_policy, SnapshotPolicy::LogsSinceLast(5000));
        assert!(config.max_in_snapshot_log_to_keep >= 1000);
        // A snapshot chunk (plus its envelope) must fit in one transport frame.
        let frame = transport::TransportConfig::default().max_frame as u64;
        assert!(config.snapshot_max_chunk_size * 2 <= frame);
    }
}
