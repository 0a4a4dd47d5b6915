//! The services a pvefleet endpoint offers, one QUIC ALPN each (the ALPN carries the wire
//! version, so a change bumps `/1`), and the pure rule of which client certificates each admits.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::Role;

/// A service: its own ALPN, its own handlers, its own admitted roles.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Service {
    /// Raft peer RPC between coordinators.
    Raft,
    /// Node agents talking to coordinators.
    Agent,
    /// The operator's CLI, and members forwarding writes to the leader.
    Admin,
    /// A node without a certificate yet, asking for one with a join token.
    Join,
}

impl Service {
    /// Every service, in ALPN preference order.
    pub const ALL: [Service; 4] = [Self::Raft, Self::Agent, Self::Admin, Self::Join];

    /// The ALPN protocol id, e.g. `pvefleet-raft/1`.
    pub fn alpn(self) -> &'static [u8] {
        match self {
            Self::Raft => b"pvefleet-raft/1",
            Self::Agent => b"pvefleet-agent/1",
            Self::Admin => b"pvefleet-admin/1",
            Self::Join => b"pvefleet-join/1",
        }
    }

    /// The service an ALPN protocol id names; `None` for anything else (other versions too).
    pub fn from_alpn(alpn: &[u8]) -> Option<Service> {
        Self::ALL.into_iter().find(|s| s.alpn() == alpn)
    }

    /// Whether a client presenting `client` (its certificate's role, `None` without one) may
    /// use this service. Join is the only service open to clients without a certificate, and it
    /// is open to nobody else: a node that has a certificate renews through its own service.
    pub fn admits(self, client: Option<Role>) -> bool {
        matches!(
            (self, client),
            (Self::Raft, Some(Role::Coordinator))
                | (Self::Agent, Some(Role::Agent))
                | (Self::Admin, Some(Role::Admin | Role::Coordinator))
                | (Self::Join, None)
        )
    }

    /// `Ok` if `client` may use this service, else the reason sent to the refused client.
    pub fn authorize(self, client: Option<Role>) -> Result<(), String> {
        if self.admits(client) {
            return Ok(());
        }
        Err(match client {
            Some(role) => format!("role {role} is not allowed on {self}"),
            None => format!("{self} requires a client certificate of the cluster CA"),
        })
    }
}

impl fmt::Display for Service {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&String::from_utf8_lossy(self.alpn()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alpn_round_trips_and_other_versions_are_unknown() {
        for s in Service::ALL {
            assert_eq!(Service::from_alpn(s.alpn()), Some(s));
        }
        assert_eq!(Service::from_alpn(b"pvefleet-raft/2"), None);
        assert_eq!(Service::Agent.to_string(), "pvefleet-agent/1");
    }

    #[test]
    fn each_service_admits_exactly_its_roles() {
        use Role::{Admin, Agent, Coordinator};
        let table = [
            (Service::Raft, [Some(Coordinator)].as_slice()),
            (Service::Agent, [Some(Agent)].as_slice()),
            (Service::Admin, [Some(Admin), Some(Coordinator)].as_slice()),
            (Service::Join, [None].as_slice()),
        ];
        for (service, allowed) in table {
            for client in [None, Some(Coordinator), Some(Agent), Some(Admin)] {
                assert_eq!(
                    service.admits(client),
                    allowed.contains(&client),
                    "{service} {client:?}"
                );
            }
        }
    }

    #[test]
    fn refusals_say_why() {
        assert_eq!(
            Service::Raft.authorize(Some(Role::Agent)),
            Err("role agent is not allowed on pvefleet-raft/1".to_string())
        );
        assert_eq!(
            Service::Admin.authorize(None),
            Err("pvefleet-admin/1 requires a client certificate of the cluster CA".to_string())
        );
        assert_eq!(Service::Join.authorize(None), Ok(()));
    }
}
