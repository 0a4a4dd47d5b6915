//! The transport gate of a member: a removed member or host keeps a certificate the CA signed
//! and that is still within its validity, so the fleet state's list of revoked ids decides.
//! Admin certificates have ids of their own (not the node id space) and are not gated by it.

use std::sync::Arc;

use protocol::Role;
use raft::store::MachineHandle;
use transport::{Gate, PeerIdentity};

use crate::machine::FleetMachine;

/// Whether `peer` may still connect, given whether its node id is revoked.
pub(crate) fn decide(peer: &PeerIdentity, revoked: bool) -> Result<(), String> {
    if peer.role != Role::Admin && revoked {
        return Err(format!(
            "{} {} was removed from the cluster: its certificate is refused from now on",
            peer.role, peer.node_id
        ));
    }
    Ok(())
}

/// The gate over this member's applied state.
pub(crate) fn gate(machine: MachineHandle<FleetMachine>) -> Gate {
    Arc::new(move |peer: &PeerIdentity| {
        let revoked = machine
            .read(|m| m.0.is_node_revoked(peer.node_id))
            .map_err(|e| format!("cannot check the peer against the fleet state: {e}"))?;
        decide(peer, revoked)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn revoked_members_and_agents_are_refused_but_admins_are_not_ids_of_that_space() {
        let member = PeerIdentity::coordinator(3);
        assert!(decide(&member, false).is_ok());
        let why = decide(&member, true).unwrap_err();
        assert!(why.contains("coordinator 3 was removed"), "{why}");
        assert!(decide(&PeerIdentity::new(Role::Agent, 3), true).is_err());
        assert!(decide(&PeerIdentity::new(Role::Admin, 3), true).is_ok());
    }
}
