//! What every request of a member's dashboard shares, and who the dashboard reads as.

use std::net::SocketAddr;
use std::path::PathBuf;

use protocol::Role;
use raft::store::MachineHandle;
use tokio_util::sync::CancellationToken;
use transport::{Caller, PeerIdentity, Router, Service};

use super::live::HubHandle;
use super::sessions::Sessions;
use crate::machine::FleetMachine;

/// What every request of the dashboard shares.
pub(crate) struct App {
    pub(crate) router: Router,
    pub(crate) machine: MachineHandle<FleetMachine>,
    pub(crate) sessions: Sessions,
    pub(crate) hub: HubHandle,
    pub(crate) member: u64,
    pub(crate) scenario_dir: PathBuf,
    pub(crate) shutdown: CancellationToken,
}

/// The identity the dashboard reads the fleet as: an admin (a member's identity would be
/// refused the forward to the leader). Reads do not depend on who asks; actions are made as
/// the session's own admin.
pub(crate) fn reader() -> Caller {
    Caller {
        service: Service::Admin,
        peer: Some(PeerIdentity::new(Role::Admin, 0)),
        addr: SocketAddr::from(([127, 0, 0, 1], 0)),
        cert_not_after: None,
    }
}
