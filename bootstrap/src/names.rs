//! The certificate identity convention: a leaf certificate names its holder's role and node id
//! in a DNS SAN `<role>-<node_id>.pvefleet` (what TLS clients dial as server name) and a URI SAN
//! `urn:pvefleet:<role>:<node_id>` (what authorization reads).
//!
//! Transport owns the convention (it reads it on every connection); bootstrap writes it with the
//! very same functions, so issuing and checking cannot drift apart.

pub use transport::identity::{CertNames, DNS_SUFFIX, URI_PREFIX, cert_names};

use protocol::{NodeId, Role};

/// Reads a role and node id back from an identity URI; `None` if it is not one of ours (only the
/// canonical spelling is accepted).
pub(crate) fn parse_identity_uri(uri: &str) -> Option<(Role, NodeId)> {
    transport::identity::parse_identity_uri(uri).map(|id| (id.role, id.node_id))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_convention() {
        let n = cert_names(Role::Coordinator, 3);
        assert_eq!(n.dns, "coordinator-3.pvefleet");
        assert_eq!(n.uri, "urn:pvefleet:coordinator:3");
        assert_eq!(cert_names(Role::Admin, 1).dns, "admin-1.pvefleet");
    }

    #[test]
    fn identity_uri_round_trips_for_every_role() {
        for role in [Role::Coordinator, Role::Agent, Role::Admin] {
            for id in [0, 7, u64::MAX] {
                assert_eq!(
                    parse_identity_uri(&cert_names(role, id).uri),
                    Some((role, id))
                );
            }
        }
    }

    #[test]
    fn non_canonical_or_foreign_uris_are_not_identities() {
        for uri in [
            "urn:pvefleet:coordinator:03",
            "urn:pvefleet:root:3",
            "spiffe://pvefleet/coordinator/3",
        ] {
            assert_eq!(parse_identity_uri(uri), None, "{uri}");
        }
    }
}
