//! The certificate identity convention, reading side: a leaf certificate names its holder in a
//! DNS SAN `<role>-<node_id>.pvefleet` (the server name clients dial, so TLS itself checks it)
//! and a URI SAN `urn:pvefleet:<role>:<node_id>` (what authorization reads). Bootstrap issues
//! certificates with the same names (`bootstrap::names`); the two must stay identical.

use std::fmt;

use crate::{NodeId, Role};
use serde::{Deserialize, Serialize};

mod certificate;

pub use certificate::peer_identity;

/// The DNS suffix of every pvefleet certificate name.
pub const DNS_SUFFIX: &str = ".pvefleet";

/// The prefix of the URI SAN that carries the identity.
pub const URI_PREFIX: &str = "urn:pvefleet:";

/// Who holds a certificate: its role and node id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct PeerIdentity {
    /// The role the certificate grants.
    pub role: Role,
    /// The holder's node id.
    pub node_id: NodeId,
}

impl PeerIdentity {
    /// The identity of `role` `node_id`.
    pub fn new(role: Role, node_id: NodeId) -> Self {
        Self { role, node_id }
    }

    /// The coordinator with id `node_id` (what Raft peers dial).
    pub fn coordinator(node_id: NodeId) -> Self {
        Self::new(Role::Coordinator, node_id)
    }

    /// The names a certificate for this identity carries.
    pub fn names(&self) -> CertNames {
        cert_names(self.role, self.node_id)
    }
}

impl fmt::Display for PeerIdentity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.role, self.node_id)
    }
}

/// The two subject alternative names of a leaf certificate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CertNames {
    /// `<role>-<node_id>.pvefleet`, e.g. `coordinator-3.pvefleet`.
    pub dns: String,
    /// `urn:pvefleet:<role>:<node_id>`, e.g. `urn:pvefleet:coordinator:3`.
    pub uri: String,
}

/// The names a certificate for `role` and `node_id` carries.
pub fn cert_names(role: Role, node_id: NodeId) -> CertNames {
    CertNames {
        dns: format!("{role}-{node_id}{DNS_SUFFIX}"),
        uri: format!("{URI_PREFIX}{role}:{node_id}"),
    }
}

/// Reads an identity back from a URI SAN; `None` if it is not one of ours.
///
/// Only the canonical spelling is accepted (no sign, no leading zeros), so one identity has
/// exactly one URI and two certificates cannot claim one node under different names.
pub fn parse_identity_uri(uri: &str) -> Option<PeerIdentity> {
    let rest = uri.strip_prefix(URI_PREFIX)?;
    let (role, id) = rest.split_once(':')?;
    let role: Role = role.parse().ok()?;
    if id.is_empty() || !id.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let node_id: NodeId = id.parse().ok()?;
    (node_id.to_string() == id).then_some(PeerIdentity { role, node_id })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::TransportError;

    #[test]
    fn names_follow_the_convention() {
        let n = cert_names(Role::Coordinator, 3);
        assert_eq!(n.dns, "coordinator-3.pvefleet");
        assert_eq!(n.uri, "urn:pvefleet:coordinator:3");
        assert_eq!(PeerIdentity::new(Role::Agent, 12).to_string(), "agent-12");
    }

    #[test]
    fn identity_uri_round_trips_for_every_role() {
        for role in [Role::Coordinator, Role::Agent, Role::Admin] {
            for id in [0, 7, u64::MAX] {
                let want = PeerIdentity::new(role, id);
                assert_eq!(parse_identity_uri(&cert_names(role, id).uri), Some(want));
            }
        }
    }

    #[test]
    fn non_canonical_or_foreign_uris_are_not_identities() {
        for uri in [
            "urn:pvefleet:coordinator:03",
            "urn:pvefleet:coordinator:+3",
            "urn:pvefleet:coordinator:",
            "urn:pvefleet:root:3",
            "urn:pvefleet:coordinator:3:extra",
            "spiffe://pvefleet/coordinator/3",
            "urn:pvefleet:coordinator:18446744073709551616",
        ] {
            assert_eq!(parse_identity_uri(uri), None, "{uri}");
        }
    }

    #[test]
    fn garbage_is_not_a_certificate() {
        assert!(matches!(
            peer_identity(b"not der"),
            Err(TransportError::Identity(_))
        ));
    }
}
