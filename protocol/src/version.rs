//! Versions of the fleet's encodings: wire messages, replicated commands and snapshots share
//! one number. A build reads and writes every version from [`OLDEST`] to [`CURRENT`]; what it
//! writes is chosen by the reader:
//!
//! - on the wire, a call is sent at the newest version both ends know (a peer that refuses a
//!   newer one says which it reads, and the call is sent again at that version);
//! - in the Raft log and in snapshots, at the **cluster version**: the newest version every
//!   member has reported, which the leader raises only once all of them run a build that reads
//!   it (etcd's cluster version). A command that only a newer version can carry is refused
//!   until then, so no member is ever asked to apply what it cannot read.
//!
//! A type whose layout changes bumps [`CURRENT`] and keeps an explicit decoder (and encoder)
//! for every older version still in `OLDEST..=CURRENT`; the golden encodings checked in per
//! version prove that a later build still reads them.

use std::fmt;

use serde::{Deserialize, Serialize};

/// One version of the encodings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Version(pub u16);

/// The oldest version this build reads and can still write.
pub const OLDEST: Version = Version(1);

/// The newest version this build reads and writes.
///
/// - v1: the first versioned release (`tests/upgrade-pin`).
/// - v2: operator identities (the admin commands and records, `EventKind::Admin`) and VIP
///   holding (the lease's `agent.vip_renew`/`agent.vip_release`, `admin.vip_status|move`,
///   `MoveVip`, `ApplyVip`, the VIP spec's labels, preemption and checks), host liveness
///   (`SetHostLiveness`, a host's `state_reason`) and PVE HA's settings in the VM spec
///   (`VmSpec::ha` as an `HaSpec`, `ApplyVm`) with the fleet's defaults (`Settings::ha`,
///   `ApplySettings`), the placement's affinity rules, and migrations. Not released yet
///   (the pin is v1): its layouts may change until a release carries it.
pub const CURRENT: Version = Version(2);

/// The version that introduced operator identities (admin records, revocation).
pub const ADMINS: Version = Version(2);

/// The version that introduced VIP holding (the lease messages, `MoveVip`, `ApplyVip`, the
/// VIP spec's labels, preemption and checks).
pub const VIP_HOLDING: Version = Version(2);

/// The version that introduced host liveness: `SetHostLiveness` (a compare-and-set of a
/// host's state with its reason) and `Host::state_reason`.
pub const HOST_LIVENESS: Version = Version(2);

/// The version that introduced PVE HA's per-VM settings: `VmSpec::ha` became an `HaSpec`
/// (state, `max_restart`, `max_relocate`, recovery) instead of a bool, carried by
/// `ApplyVm`; a spec v1 can carry exactly is still written in the v1 layout (`VmSpecV1`).
/// The same layout change added the placement's affinity rules (`Placement::apart_from`,
/// `Placement::together_with`; v1's placement is `PlacementV1`).
pub const HA_SETTINGS: Version = Version(2);

/// The version that introduced the fleet's HA defaults: `Settings::ha` (the limits and
/// recovery mode of VMs that leave them out), carried by `ApplySettings`; settings with PVE's
/// defaults are still written in the v1 layout (`SettingsV1`).
pub const HA_DEFAULTS: Version = Version(2);

/// The version that introduced migrations: `Op::Migrate`, `StartMigration`, `EndMigration`,
/// the state's migrations and `admin.vm_migrate`.
pub const MIGRATION: Version = Version(2);

/// The version that introduced the recovery of a fenced host's guests: `RecoverVm`,
/// `EndRecovery`, the state's recoveries and `EnsureVm::take_over`.
pub const RECOVERY: Version = Version(2);

/// The version that introduced a host leaving cleanly (the shutdown policy):
/// `Heartbeat::leaving`, `HeartbeatAck::leave`, `HostLeaving`, `HostReturned`, `EndLeaving`
/// and the state's leaving hosts.
pub const LEAVING: Version = Version(2);

/// The version that introduced at-most-once writes: `Command::Once` and the state's memory
/// of the requests it applied (safety rule 9, docs/design/coordinator.md).
pub const REQUESTS: Version = Version(2);

/// The version that introduced batched writes: `admin.fleet_apply` (a whole fleet file as one
/// request) committed as one `Command::ApplyFleet` (all or nothing), and the reconciler's
/// `Command::Batch` (many VMs' steps in one log entry).
pub const BATCHES: Version = Version(2);

/// The version that introduced operators' host commands: `Host::operator_labels` with
/// `Command::SetHostLabels` (`pvefleet host label|unlabel`), and `Command::RemoveHost`
/// (`pvefleet host remove`).
pub const HOST_ADMIN: Version = Version(2);

/// The version that introduced the web dashboard's one-time logins:
/// `Command::AddDashboardLogin` and `Command::UseDashboardLogin` (`pvefleet dashboard login`).
pub const DASHBOARD: Version = Version(2);

impl Version {
    /// Whether this build reads and writes `self`.
    pub fn is_supported(self) -> bool {
        (OLDEST..=CURRENT).contains(&self)
    }

    /// Every version this build supports, oldest first.
    pub fn supported() -> impl Iterator<Item = Version> {
        (OLDEST.0..=CURRENT.0).map(Version)
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "v{}", self.0)
    }
}

/// The versions a build supports, as members report them to the cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct VersionRange {
    /// The oldest version it reads and writes.
    pub oldest: Version,
    /// The newest version it reads and writes.
    pub newest: Version,
}

impl VersionRange {
    /// What this build supports.
    pub const fn this_build() -> VersionRange {
        VersionRange {
            oldest: OLDEST,
            newest: CURRENT,
        }
    }

    /// Whether a build of this range reads and writes `v`.
    pub fn contains(self, v: Version) -> bool {
        (self.oldest..=self.newest).contains(&v)
    }
}

impl fmt::Display for VersionRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.oldest == self.newest {
            write!(f, "{}", self.newest)
        } else {
            write!(f, "{}..={}", self.oldest, self.newest)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_build_supports_its_own_range_and_nothing_outside() {
        assert!(OLDEST <= CURRENT);
        assert!(OLDEST.is_supported() && CURRENT.is_supported());
        assert!(!Version(CURRENT.0 + 1).is_supported());
        assert!(!Version(0).is_supported());
        assert_eq!(
            Version::supported().count(),
            usize::from(CURRENT.0 - OLDEST.0 + 1)
        );
        assert!(VersionRange::this_build().contains(CURRENT));
    }
}
