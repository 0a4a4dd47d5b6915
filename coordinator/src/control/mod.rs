//! The leader's control plane: agent sessions (heartbeats, leases, inventory), the command
#![allow(dead_code)] // filled in by the control-plane work of issue 4
//! dispatcher, and the reconciler that drives every VM spec to its desired state.
//!
//! Soft state only (ARCHITECTURE.md §2): heartbeat times, live usage, commands in flight. A new
//! leader rebuilds it from the agents' next beats; everything decided is replicated.

use std::time::Duration;

use protocol::NodeId;
use protocol::agent::{CommandFailure, CommandOutput, HostResources, Op};
use transport::RemoteError;

use crate::scheduler::HostView;
use crate::state::FleetState;

/// What the leader knows live about a host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HostLiveView {
    /// Milliseconds since the last heartbeat.
    pub(crate) last_seen_ms: u64,
    /// Live resources of the last inventory, if any.
    pub(crate) resources: Option<HostResources>,
}

/// The leader's soft state and dispatcher, shared by the agent service, the reconciler loop
/// and the admin handlers.
#[derive(Debug, Default)]
pub(crate) struct Control {}

impl Control {
    /// An empty control plane (no hosts heard from, nothing in flight).
    pub(crate) fn new() -> Control {
        Control {}
    }

    /// Sends `op` to `host`'s agent and waits up to `timeout` for its result. `Ok(Err(_))` is
    /// the agent's failure; `Err(_)` means no result (not leader, host silent, timeout).
    pub(crate) async fn run_command(
        &self,
        host: NodeId,
        op: Op,
        timeout: Duration,
    ) -> Result<Result<CommandOutput, CommandFailure>, RemoteError> {
        let _ = (host, op, timeout);
        Err(RemoteError::unavailable("the control plane is not built yet"))
    }

    /// The live view of `host`, if its agent beat since this member leads.
    pub(crate) fn host_live(&self, host: NodeId) -> Option<HostLiveView> {
        let _ = host;
        None
    }

    /// Every host as the scheduler sees it: replicated facts, committed usage of the VMs
    /// placed on it.
    pub(crate) fn host_views(&self, state: &FleetState) -> Vec<HostView> {
        let _ = state;
        Vec::new()
    }
}
