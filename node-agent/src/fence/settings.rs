//! The `[fence]` section of the agent configuration: how long before its lease ends the agent
//! fences itself, how the guard resets the host, and who runs the guard.
//!
//! ```toml
//! [fence]
//! lead_ms = 2000     # fence this long before the lease ends (100-29999, < half the lease)
//! reset = "auto"     # "host" (reboot(2)) | "simulated" (auto: simulated on platform = "lab")
//! guard = "auto"     # "unit" (pvefleet-agent-guard.service) | "child" (auto: child when simulated)
//! ```

use std::ops::RangeInclusive;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// The default lead, in milliseconds.
pub const DEFAULT_LEAD_MS: u64 = 2000;
/// Accepted leads: under half of the longest lease honoured (60 s), and enough for a stop.
const LEAD_MS_RANGE: RangeInclusive<u64> = 100..=29_999;

/// `[fence]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FenceConfig {
    /// Milliseconds before the lease ends at which the agent stops its HA guests and drops
    /// its VIPs (100 to 29999; at run time always less than half the lease granted).
    #[serde(default = "default_lead_ms")]
    pub lead_ms: u64,
    /// How the guard resets the host.
    #[serde(default)]
    pub reset: ResetMode,
    /// Who runs the guard.
    #[serde(default)]
    pub guard: GuardMode,
}

impl Default for FenceConfig {
    fn default() -> Self {
        FenceConfig {
            lead_ms: DEFAULT_LEAD_MS,
            reset: ResetMode::default(),
            guard: GuardMode::default(),
        }
    }
}

/// `reset = ...`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ResetMode {
    /// `simulated` on the `lab` platform, `host` otherwise.
    #[default]
    Auto,
    /// `reboot(2)` at once, without sync, as a hardware watchdog would (CAP_SYS_BOOT).
    Host,
    /// Kill the agent and reset the simulated PVE node (labs and tests).
    Simulated,
}

/// `guard = ...`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GuardMode {
    /// `child` when the reset is simulated, `unit` otherwise.
    #[default]
    Auto,
    /// The package's own unit runs it (it survives the agent's death: systemd kills what is in
    /// the agent's cgroup when the agent dies).
    Unit,
    /// The agent starts it as its child (no systemd: labs and tests).
    Child,
}

/// How the host is reset, resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reset {
    /// `reboot(2)`.
    Host,
    /// Simulated.
    Simulated,
}

/// Who runs the guard, resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Guard {
    /// The systemd unit.
    Unit,
    /// The agent, as its child.
    Child,
}

impl FenceConfig {
    /// The lead.
    pub fn lead(&self) -> Duration {
        Duration::from_millis(self.lead_ms)
    }

    /// The reset, given whether the agent runs on the `lab` platform (the configuration
    /// refuses a `reset` that contradicts it).
    pub fn reset(&self, lab: bool) -> Reset {
        match (self.reset, lab) {
            (ResetMode::Host, _) | (ResetMode::Auto, false) => Reset::Host,
            (ResetMode::Simulated, _) | (ResetMode::Auto, true) => Reset::Simulated,
        }
    }

    /// Who runs the guard, given whether the agent runs on the `lab` platform.
    pub fn guard(&self, lab: bool) -> Guard {
        match (self.guard, self.reset(lab)) {
            (GuardMode::Unit, _) | (GuardMode::Auto, Reset::Host) => Guard::Unit,
            (GuardMode::Child, _) | (GuardMode::Auto, Reset::Simulated) => Guard::Child,
        }
    }

    /// Checks the values; `Err((field, reason))`.
    pub fn validate(&self) -> Result<(), (String, String)> {
        if !LEAD_MS_RANGE.contains(&self.lead_ms) {
            return Err((
                "fence.lead_ms".into(),
                format!(
                    "{} is outside {}..={} milliseconds (and must stay below half the lease)",
                    self.lead_ms,
                    LEAD_MS_RANGE.start(),
                    LEAD_MS_RANGE.end()
                ),
            ));
        }
        Ok(())
    }
}

fn default_lead_ms() -> u64 {
    DEFAULT_LEAD_MS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_resolves_by_platform_and_explicit_choices_win() {
        let c = |reset, guard| FenceConfig {
            lead_ms: DEFAULT_LEAD_MS,
            reset,
            guard,
        };
        use GuardMode as G;
        use ResetMode as R;
        // (reset, guard, lab platform, resolved reset, resolved guard)
        let table = [
            (R::Auto, G::Auto, false, Reset::Host, Guard::Unit),
            (R::Auto, G::Auto, true, Reset::Simulated, Guard::Child),
            (R::Host, G::Auto, true, Reset::Host, Guard::Unit),
            (R::Simulated, G::Auto, false, Reset::Simulated, Guard::Child),
            (R::Simulated, G::Unit, false, Reset::Simulated, Guard::Unit),
            (R::Auto, G::Child, false, Reset::Host, Guard::Child),
        ];
        for (reset, guard, lab, want_reset, want_guard) in table {
            let cfg = c(reset, guard);
            assert_eq!(cfg.reset(lab), want_reset, "{cfg:?} lab={lab}");
            assert_eq!(cfg.guard(lab), want_guard, "{cfg:?} lab={lab}");
        }
    }

    #[test]
    fn the_lead_must_fit_under_half_the_longest_lease() {
        let lead = |lead_ms| FenceConfig {
            lead_ms,
            ..FenceConfig::default()
        };
        assert!(lead(DEFAULT_LEAD_MS).validate().is_ok());
        assert!(lead(100).validate().is_ok());
        assert!(lead(29_999).validate().is_ok());
        for bad in [0, 99, 30_000] {
            let (field, reason) = lead(bad).validate().unwrap_err();
            assert_eq!(field, "fence.lead_ms");
            assert!(reason.contains("100..=29999"), "{reason}");
        }
    }
}
