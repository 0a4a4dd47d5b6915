//! What a coordinator member runs with: the settings `init`/`join` record in the data directory
//! (`coordinator.toml`: where it listens and how far its membership has got), the options of
//! one `run`, and the host's configuration file ([`mod@file`], `/etc/pvefleet/coordinator.toml`).

pub mod file;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::CoordinatorError;

pub use file::{ConfigFileError, CoordinatorConfig};

/// The member's settings file in its data directory.
pub const SETTINGS_FILE: &str = "coordinator.toml";
/// The Raft store's directory under the data directory.
pub const RAFT_DIR: &str = "raft";

/// How far this member's Raft membership has got. Moves forward only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MembershipStage {
    /// Made by `init`: initializes the Raft group on its first start (exactly once).
    Founder,
    /// Made by `join`: asks the leader to add it as a learner, then a voter.
    Pending,
    /// A member: nothing to do but serve. Never initializes Raft again.
    Member,
}

/// `coordinator.toml`: recorded by `init` and `join`, read by `run`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeSettings {
    /// The QUIC address this member binds and the others dial (`--listen`).
    pub listen: SocketAddr,
    /// The local HTTP address for `/metrics`, `/healthz`, `/readyz`, if given at init.
    #[serde(default)]
    pub http: Option<SocketAddr>,
    /// Where the membership stands.
    pub membership: MembershipStage,
    /// How many days past its first expiry an admin certificate may be renewed (set at
    /// `init`; the founder records it in the fleet state when it founds the cluster).
    #[serde(default)]
    pub admin_renewal_days: u32,
}

impl NodeSettings {
    /// The settings file of the data directory `dir`.
    pub fn path(dir: &Path) -> PathBuf {
        dir.join(SETTINGS_FILE)
    }

    /// Reads `coordinator.toml` from `dir`.
    pub fn load(dir: &Path) -> Result<NodeSettings, CoordinatorError> {
        let path = NodeSettings::path(dir);
        let text = std::fs::read_to_string(&path).map_err(|e| CoordinatorError::Settings {
            path: path.clone(),
            reason: format!(
                "{e} (a data directory is made by `pvefleet-coordinator init` or `join`)"
            ),
        })?;
        toml::from_str(&text).map_err(|e| CoordinatorError::Settings {
            path,
            reason: e.to_string(),
        })
    }

    /// Writes `coordinator.toml` into `dir` atomically.
    pub fn store(&self, dir: &Path) -> Result<(), CoordinatorError> {
        let text = toml::to_string(self).map_err(|e| CoordinatorError::Settings {
            path: NodeSettings::path(dir),
            reason: e.to_string(),
        })?;
        bootstrap::paths::write_public(&NodeSettings::path(dir), &text)
            .map_err(CoordinatorError::write)
    }
}

/// How often a running member checks whether its certificate is due for renewal: an hour,
/// small against the third of a leaf's life (10 days by default) left to renew it in.
pub const DEFAULT_RENEW_CHECK: Duration = Duration::from_secs(3600);

/// The options of one `pvefleet-coordinator run`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunConfig {
    /// The data directory made by `init` or `join`.
    pub data_dir: PathBuf,
    /// The local HTTP address; overrides the one recorded at init (port 0 picks a free one).
    pub http: Option<SocketAddr>,
    /// Build a Raft snapshot after this many log entries (default: raft's policy).
    pub snapshot_logs: Option<u64>,
    /// How often the member checks whether its certificate is due for renewal (also once at
    /// start); [`DEFAULT_RENEW_CHECK`] unless a test wants it sooner. At least a second.
    pub renew_check: Duration,
    /// The web dashboard, if this member serves one.
    pub dashboard: Option<crate::dashboard::settings::DashboardConfig>,
}

impl RunConfig {
    /// Runs the member in `data_dir` with the recorded settings.
    pub fn new(data_dir: impl Into<PathBuf>) -> RunConfig {
        RunConfig {
            data_dir: data_dir.into(),
            http: None,
            snapshot_logs: None,
            renew_check: DEFAULT_RENEW_CHECK,
            dashboard: None,
        }
    }
}

/// How long a lease granted to an agent lasts by default (docs/design/architecture.md, safety rule 3).
pub const DEFAULT_LEASE: Duration = Duration::from_millis(protocol::timing::HOST_LEASE_MS);
/// How often the reconciler re-sends an Ensure for a VM that looks in order, by default.
pub const DEFAULT_RESYNC: Duration = Duration::from_secs(30);
/// How long an agent waits for guest-agent addresses after a start, by default, in seconds.
pub const DEFAULT_IP_WAIT_SECS: u32 = 60;
/// How often the reconciler looks at every VM when nothing wakes it sooner, by default.
pub const DEFAULT_RECONCILE_TICK: Duration = Duration::from_millis(300);

/// The knobs of the leader's control plane (agent sessions and reconciler).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControlConfig {
    /// The lease granted with every heartbeat ack; also how long a host counts as reporting
    /// after its last beat.
    pub lease: Duration,
    /// Re-send an Ensure to a VM that looks in order after this long (catches drift the
    /// inventory does not show).
    pub resync: Duration,
    /// Seconds an Ensure waits for guest-agent addresses after a start (0 = do not wait).
    pub ip_wait_secs: u32,
    /// The reconciler's period when no result or inventory wakes it sooner.
    pub tick: Duration,
}

impl Default for ControlConfig {
    fn default() -> ControlConfig {
        ControlConfig {
            lease: DEFAULT_LEASE,
            resync: DEFAULT_RESYNC,
            ip_wait_secs: DEFAULT_IP_WAIT_SECS,
            tick: DEFAULT_RECONCILE_TICK,
        }
    }
}

impl ControlConfig {
    /// The timing of the liveness decisions: this lease, unreachable after the same share of
    /// it as the defaults (three missed beats at the agents' default of one a second with the
    /// default 10 s lease: `protocol::timing`), and the default drift and margin
    /// (docs/design/fencing.md).
    pub fn liveness(&self) -> fleet::liveness::LivenessConfig {
        use protocol::timing::{HOST_LEASE_MS, UNREACHABLE_AFTER_MS};
        let lease_ms = u64::try_from(self.lease.as_millis()).unwrap_or(u64::MAX);
        fleet::liveness::LivenessConfig {
            lease_ms,
            unreachable_after_ms: (lease_ms.saturating_mul(UNREACHABLE_AFTER_MS) / HOST_LEASE_MS)
                .max(1),
            ..fleet::liveness::LivenessConfig::DEFAULT
        }
    }

    /// Checks the knobs against each other: a lease of at least a second, a resync at least as
    /// long as the lease (resyncing faster than hosts report is pointless load), a tick of
    /// 10 ms to 10 s.
    pub fn validate(&self) -> Result<(), String> {
        let bad = |reason: String| Err(reason);
        let max = Duration::from_millis(protocol::timing::MAX_HOST_LEASE_MS);
        if self.lease < Duration::from_secs(1) || self.lease > max {
            return bad(format!(
                "the lease ({:?}) must be 1 s to {} s (agents honour no longer lease)",
                self.lease,
                max.as_secs()
            ));
        }
        if self.resync < self.lease {
            return bad(format!(
                "the resync period ({:?}) must be at least the lease ({:?})",
                self.resync, self.lease
            ));
        }
        if self.tick < Duration::from_millis(10) || self.tick > Duration::from_secs(10) {
            return bad(format!(
                "the reconcile tick ({:?}) must be between 10 ms and 10 s",
                self.tick
            ));
        }
        if self.ip_wait_secs > 3600 {
            return bad(format!(
                "the address wait ({} s) must be at most 3600 s",
                self.ip_wait_secs
            ));
        }
        Ok(())
    }
}

/// Checks an address other members (or the CLI) will dial: a concrete IP and a real port.
pub fn check_dialable(flag: &'static str, addr: SocketAddr) -> Result<(), CoordinatorError> {
    let bad = |reason: &str| CoordinatorError::BadAddress {
        flag,
        addr: addr.to_string(),
        reason: reason.to_string(),
    };
    if addr.port() == 0 {
        return Err(bad(
            "port 0 cannot be recorded: the other members must know the real port",
        ));
    }
    if addr.ip().is_unspecified() {
        return Err(bad(
            "an unspecified address (0.0.0.0 or ::) cannot be dialed: give the address the \
             other members reach this one at",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_round_trip_and_refuse_unknown_fields() {
        let tmp = tempfile::tempdir().unwrap();
        let settings = NodeSettings {
            listen: "127.0.0.1:7400".parse().unwrap(),
            http: None,
            membership: MembershipStage::Pending,
            admin_renewal_days: 0,
        };
        settings.store(tmp.path()).unwrap();
        assert_eq!(NodeSettings::load(tmp.path()).unwrap(), settings);
        let text = std::fs::read_to_string(NodeSettings::path(tmp.path())).unwrap();
        assert!(text.contains("membership = \"pending\""), "{text}");
        std::fs::write(
            NodeSettings::path(tmp.path()),
            format!("{text}\nlisten_at = 1\n"),
        )
        .unwrap();
        let err = NodeSettings::load(tmp.path()).unwrap_err().to_string();
        assert!(err.contains("listen_at"), "{err}");
    }

    #[test]
    fn a_missing_settings_file_says_how_to_make_one() {
        let tmp = tempfile::tempdir().unwrap();
        let err = NodeSettings::load(tmp.path()).unwrap_err().to_string();
        assert!(err.contains("coordinator.toml"), "{err}");
        assert!(err.contains("pvefleet-coordinator init"), "{err}");
    }

    #[test]
    fn only_dialable_addresses_are_recorded() {
        assert!(check_dialable("--listen", "127.0.0.1:7400".parse().unwrap()).is_ok());
        let zero = check_dialable("--listen", "127.0.0.1:0".parse().unwrap()).unwrap_err();
        assert!(zero.to_string().contains("port 0"), "{zero}");
        let any = check_dialable("--listen", "0.0.0.0:7400".parse().unwrap()).unwrap_err();
        assert!(any.to_string().contains("unspecified"), "{any}");
    }
}
