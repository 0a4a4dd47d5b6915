//! The transport gate of a member: a removed member or host keeps a certificate the CA signed
//! and that is still within its validity, so the fleet state's list of revoked ids decides.
//! Admin certificates have ids of their own (not the node id space): the fleet state's admin
//! records decide for them (a revoked admin id is refused, whichever certificate it presents).

use std::sync::Arc;

use protocol::Role;
use raft::store::MachineHandle;
use transport::{Gate, PeerIdentity};

use crate::machine::FleetMachine;

/// What the fleet state says about a peer's id.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Standing {
    /// A member's or host's id that was removed.
    pub(crate) node_revoked: bool,
    /// Why an admin id is refused (it was revoked), if it is.
    pub(crate) admin_refusal: Option<String>,
}

/// Whether `peer` may still connect, given its standing in the fleet state.
pub(crate) fn decide(peer: &PeerIdentity, standing: &Standing) -> Result<(), String> {
    if peer.role == Role::Admin {
        return standing.admin_refusal.clone().map_or(Ok(()), Err);
    }
    if standing.node_revoked {
        return Err(format!(
            "{} {} was removed from the cluster: its certificate is refused from now on",
            peer.role, peer.node_id
        ));
    }
    Ok(())
}

/// The standing of `peer` in `state`.
pub(crate) fn standing(state: &fleet::state::FleetState, peer: &PeerIdentity) -> Standing {
    if peer.role == Role::Admin {
        Standing {
            node_revoked: false,
            admin_refusal: state.admin_refusal(peer.node_id),
        }
    } else {
        Standing {
            node_revoked: state.is_node_revoked(peer.node_id),
            admin_refusal: None,
        }
    }
}

/// The gate over this member's applied state.
pub(crate) fn gate(machine: MachineHandle<FleetMachine>) -> Gate {
    Arc::new(move |peer: &PeerIdentity| {
        let standing = machine
            .read(|m| standing(&m.0, peer))
            .map_err(|e| format!("cannot check the peer against the fleet state: {e}"))?;
        decide(peer, &standing)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn removed() -> Standing {
        Standing {
            node_revoked: true,
            admin_refusal: None,
        }
    }

    #[test]
    fn revoked_members_and_agents_are_refused_but_admins_are_not_ids_of_that_space() {
        let member = PeerIdentity::coordinator(3);
        assert!(decide(&member, &Standing::default()).is_ok());
        let why = decide(&member, &removed()).unwrap_err();
        assert!(why.contains("coordinator 3 was removed"), "{why}");
        assert!(decide(&PeerIdentity::new(Role::Agent, 3), &removed()).is_err());
        assert!(decide(&PeerIdentity::new(Role::Admin, 3), &removed()).is_ok());
    }

    #[test]
    fn a_revoked_admin_is_refused_with_how_to_get_a_new_identity() {
        use fleet::state::{Command, FleetState};
        let mut state = FleetState::new();
        let admin = PeerIdentity::new(Role::Admin, 7);
        assert!(decide(&admin, &standing(&state, &admin)).is_ok());
        let revoke = Command::RevokeAdmin { id: 7, now: 1 };
        assert!(!matches!(
            state.apply(1, revoke),
            fleet::state::CommandReply::Refused(_)
        ));
        let why = decide(&admin, &standing(&state, &admin)).unwrap_err();
        assert!(
            why.contains("admin 7") && why.contains("pvefleet admin add"),
            "{why}"
        );
        // A node with the same number is another identity.
        let agent = PeerIdentity::new(Role::Agent, 7);
        assert!(decide(&agent, &standing(&state, &agent)).is_ok());
    }
}
