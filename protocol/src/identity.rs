//! Who is who in a pvefleet cluster: node ids and the roles a certificate can carry.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// A node's id, unique in the cluster (coordinators and agents share one id space; admin
/// clients get ids of their own).
pub type NodeId = u64;

/// The role a cluster certificate grants. Each QUIC ALPN accepts only some roles.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// A coordinator member (Raft peer).
    Coordinator,
    /// A node agent on a PVE host.
    Agent,
    /// An operator's CLI.
    Admin,
}

impl Role {
    /// The lower-case name used in certificates and messages.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Coordinator => "coordinator",
            Self::Agent => "agent",
            Self::Admin => "admin",
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A role name that is not one of `coordinator`, `agent`, `admin`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown role '{0}': expected coordinator, agent or admin")]
pub struct UnknownRole(pub String);

impl FromStr for Role {
    type Err = UnknownRole;

    fn from_str(s: &str) -> Result<Self, UnknownRole> {
        match s {
            "coordinator" => Ok(Self::Coordinator),
            "agent" => Ok(Self::Agent),
            "admin" => Ok(Self::Admin),
            other => Err(UnknownRole(other.to_string())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_round_trip_and_unknown_is_refused() {
        for r in [Role::Coordinator, Role::Agent, Role::Admin] {
            assert_eq!(r.as_str().parse::<Role>(), Ok(r));
        }
        assert!("root".parse::<Role>().is_err());
    }
}
