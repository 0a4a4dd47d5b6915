//! A host's self-check for `pvefleet doctor` (encoding v2; a v1 agent is never asked): the
//! raw facts an agent finds about itself and its PVE node. The agent names what its API token
//! lacks (it knows what it needs); judging everything else, and saying what to do, is the
//! fleet's ([`fleet::doctor`](../../fleet/doctor/index.html)).

use serde::{Deserialize, Serialize};

/// The VM name a diagnosis is queued under on the agent (no VM has an empty-looking name in
/// parentheses: fleet names are DNS labels).
pub const DIAGNOSIS_SCOPE: &str = "(host)";

/// Ask the agent for its [`HostDiagnosis`]. Read-only and not journaled: running it twice is
/// harmless.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiagnoseOp {}

/// What an agent found about itself and its host.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostDiagnosis {
    /// The agent's package version (`0.1.0`).
    pub agent_version: String,
    /// Its PVE node, or why it could not be read.
    pub pve: Result<PveFacts, String>,
    /// The agent's wall clock against the leader's, from the last acknowledged heartbeat.
    pub clock: Option<ClockOffset>,
    /// When the agent's certificate expires (unix seconds).
    pub certificate_not_after: u64,
    /// When the cluster CA expires (unix seconds).
    pub ca_not_after: u64,
    /// The capabilities holding a VIP takes that the agent's process does not have
    /// (`CAP_NET_ADMIN`, `CAP_NET_RAW`); empty when it has them all or holds VIPs simulated.
    pub missing_capabilities: Vec<String>,
}

/// The PVE node as the agent's API token sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PveFacts {
    /// `pve-manager` version (`9.1.1`).
    pub version: String,
    /// How the agent trusts the node's TLS certificate.
    pub trust: PveTrust,
    /// What the token lacks for the operations the agent may run, or why the token's
    /// privileges could not be read.
    pub missing_privileges: Result<Vec<MissingPrivilege>, String>,
    /// Active storages of the node that accept `snippets` (cloud-init user data).
    pub snippet_storages: Vec<String>,
}

/// How the agent trusts the PVE API's certificate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum PveTrust {
    /// Pinned by SHA-256 fingerprint (`[pve] fingerprint`).
    Fingerprint,
    /// Verified against a CA file (`[pve] ca_file`).
    CaFile,
    /// Verified against the system's roots.
    SystemRoots,
    /// Not verified (`[pve] insecure = true`).
    Insecure,
    /// No TLS: `pvesh` on the host itself, or a simulated node.
    Local,
}

/// Privileges the agent's token lacks on one ACL path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MissingPrivilege {
    /// The ACL path (`/vms`, `/storage`, `/nodes/pve1`, ...).
    pub path: String,
    /// The privilege; when several are listed, any one of them would do.
    pub privileges: Vec<String>,
    /// What the agent cannot do without it.
    pub needed_for: String,
}

/// One side's wall clock against another's, measured as NTP does: offset = the other's
/// reading − the midpoint of the round trip around it; the true offset lies within
/// `uncertainty_ms` of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClockOffset {
    /// How far this side's clock is ahead of the reference (negative: behind), in ms.
    pub ahead_ms: i64,
    /// Half the round trip of the measurement, in ms.
    pub uncertainty_ms: u64,
}

impl ClockOffset {
    /// From a round trip: this side sent at `sent_ms` and received at `received_ms` (its own
    /// clock); the reference read `reference_ms` in between.
    pub fn measure(sent_ms: u64, reference_ms: u64, received_ms: u64) -> ClockOffset {
        let received_ms = received_ms.max(sent_ms);
        let mid = sent_ms / 2 + received_ms / 2 + (sent_ms % 2 + received_ms % 2) / 2;
        let ahead = i128::from(mid) - i128::from(reference_ms);
        ClockOffset {
            ahead_ms: i64::try_from(ahead).unwrap_or(if ahead < 0 { i64::MIN } else { i64::MAX }),
            uncertainty_ms: (received_ms - sent_ms).div_ceil(2),
        }
    }

    /// The smallest skew the measurement proves, in ms (0 when it proves none).
    pub fn proven_ms(self) -> u64 {
        self.ahead_ms
            .unsigned_abs()
            .saturating_sub(self.uncertainty_ms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_offset_is_the_midpoint_against_the_reference() {
        // Sent at 1000, answered at 1100 by a clock reading 1050: in step.
        assert_eq!(
            ClockOffset::measure(1000, 1050, 1100),
            ClockOffset {
                ahead_ms: 0,
                uncertainty_ms: 50
            }
        );
        // This side 30 s ahead of the reference.
        let ahead = ClockOffset::measure(31_000, 1_050, 31_100);
        assert_eq!(ahead.ahead_ms, 30_000);
        assert_eq!(ahead.proven_ms(), 29_950);
        // Behind.
        assert_eq!(ClockOffset::measure(1_000, 6_050, 1_100).ahead_ms, -5_000);
        // A receive time before the send time (a clock step) counts as no round trip.
        assert_eq!(ClockOffset::measure(1_000, 1_000, 900).uncertainty_ms, 0);
        // Within the uncertainty nothing is proven.
        assert_eq!(ClockOffset::measure(1_000, 1_020, 1_100).proven_ms(), 0);
    }
}
