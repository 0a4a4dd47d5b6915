//! Powering a simulated host off, on or through a reset, as its BMC (or a fence device) would:
//! [`crate::Sim::power_node`] and `POST /_sim/nodes/{node}/power`.
//!
//! - `off`: the node stops answering (it joins the `dead_nodes` fault: its listener hangs,
//!   requests proxied to it end in `595 No route to host`, its running tasks make no
//!   progress) and every VM whose config lives on it stops at once (QEMU killed, no
//!   shutdown). The configs stay in the node's directory.
//! - `on`: a node that is off boots: it answers again with a new boot time (uptime restarts),
//!   its VMs stay stopped, and the tasks it was running are gone (`exitstatus: unexpected
//!   status`, their effect never applied, config locks they held left behind). A node that is
//!   up is left alone.
//! - `reset`: off and on at once.

use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// What to do to a node's power.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NodePowerAction {
    /// Cut the power.
    Off,
    /// Power a node that is off on (boot).
    On,
    /// Hard reset: off and on at once.
    Reset,
}

/// The allowed action names, as errors list them.
pub const NODE_POWER_ACTIONS: &str = "off, on, reset";

/// An action name that is none of [`NODE_POWER_ACTIONS`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown power action '{0}' - allowed: {NODE_POWER_ACTIONS}")]
pub struct UnknownPowerAction(pub String);

impl NodePowerAction {
    /// The action's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Off => "off",
            Self::On => "on",
            Self::Reset => "reset",
        }
    }
}

impl FromStr for NodePowerAction {
    type Err = UnknownPowerAction;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "off" => Ok(Self::Off),
            "on" => Ok(Self::On),
            "reset" => Ok(Self::Reset),
            other => Err(UnknownPowerAction(other.to_string())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn actions_parse_and_name_the_allowed_values() {
        for a in [
            NodePowerAction::Off,
            NodePowerAction::On,
            NodePowerAction::Reset,
        ] {
            assert_eq!(a.as_str().parse::<NodePowerAction>(), Ok(a));
        }
        assert_eq!(
            "cycle".parse::<NodePowerAction>().unwrap_err().to_string(),
            "unknown power action 'cycle' - allowed: off, on, reset"
        );
    }
}
