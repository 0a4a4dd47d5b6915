//! The fleet's automatic rebalancing settings (`[settings.rebalance]`, encoding v2): off unless
//! an operator turns it on, as PVE HA and ProxLB leave it. The leader acts only when a PVE
//! cluster's imbalance has stayed over [`Rebalancing::threshold_pct`] for
//! [`Rebalancing::hold_s`], moves one guest at a time, and only a move that lowers the imbalance
//! by at least [`Rebalancing::min_gain_pct`] (docs/design/maintenance.md, "Rebalancing").

use serde::{Deserialize, Serialize};

use crate::spec::SpecError;
use crate::spec::validate::within;

/// `[settings.rebalance]`: every key optional, unknown keys refused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Rebalancing {
    /// Whether the leader moves guests by itself (`pvefleet rebalance plan` works either way).
    pub enabled: bool,
    /// A PVE cluster whose imbalance (the standard deviation of its online hosts' committed
    /// memory, in percent points of their capacity) is above this is out of balance.
    pub threshold_pct: u32,
    /// How long, in seconds, a cluster must stay out of balance before a guest is moved: a
    /// spike shorter than this moves nothing.
    pub hold_s: u32,
    /// A move must lower the imbalance by at least this share of it, in percent (relative, as
    /// PVE's auto-rebalance `margin`; 10: a tenth of the imbalance before the move).
    pub min_gain_pct: u32,
}

impl Default for Rebalancing {
    fn default() -> Rebalancing {
        Rebalancing {
            enabled: false,
            threshold_pct: 10,
            hold_s: 300,
            min_gain_pct: 10,
        }
    }
}

/// Checks the rebalancing settings.
pub(crate) fn validate_rebalancing(r: &Rebalancing) -> Result<(), SpecError> {
    within("rebalance.threshold_pct", r.threshold_pct, 1, 100)?;
    within("rebalance.hold_s", r.hold_s, 5, 86_400)?;
    within("rebalance.min_gain_pct", r.min_gain_pct, 1, 100)?;
    Ok(())
}
