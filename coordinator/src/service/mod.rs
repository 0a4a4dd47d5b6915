//! The member's RPC services besides Raft: the Admin service (every request of
//! `protocol::admin`), the Join service, and certificate renewal on Admin and Agent, over one
//! shared context ([`Ctx`]).
//!
//! ```text
//!  admin call ─▶ stale read? ─yes─▶ local state
//!                   │ no
//!                   ▼
//!               leader? ─yes─▶ ensure_linearizable + read │ decide now/randomness ─▶ client_write
//!                   │ no
//!                   ▼
//!               caller is a coordinator? ─yes─▶ NotLeader(hint)   (one forwarding hop at most)
//!                   │ no
//!                   ▼
//!               forward to the leader over Admin (cached connection)
//! ```

pub(crate) mod admin;
pub(crate) mod admins;
pub(crate) mod agent;
pub(crate) mod dashboard_logins;
pub(crate) mod doctor;
pub(crate) mod errors;
pub(crate) mod fleet_apply;
pub(crate) mod group_commit;
pub(crate) mod host_admin;
pub(crate) mod join;
pub(crate) mod leaving;
pub(crate) mod maintenance;
pub(crate) mod members;
pub(crate) mod migrate;
pub(crate) mod ops;
pub(crate) mod reads;
pub(crate) mod rebalance;
pub(crate) mod renew;
pub(crate) mod route;
pub(crate) mod status;
pub(crate) mod tokens;
pub(crate) mod vip_lease;
pub(crate) mod vip_metrics;
pub(crate) mod vip_sightings;
pub(crate) mod vips;
pub(crate) mod writes;

use std::sync::Arc;
use std::time::Duration;

use bootstrap::ClusterCa;
use raft::store::MachineHandle;
use raft::types::Raft;
use raft::{MemberNode, NodeId};
use transport::RemoteError;

use crate::control::Control;
use crate::forward::{Forwarder, Target};
use crate::http::metrics::Metrics;
use crate::machine::FleetMachine;
use fleet::state::FleetState;

/// How long a call waits for a leader to be known before answering `Unavailable`: two of the
/// longest election timeouts.
pub(crate) const LEADER_WAIT: Duration =
    Duration::from_millis(2 * raft::config::ELECTION_TIMEOUT_MAX_MS);

/// Everything the handlers share.
pub(crate) struct Ctx {
    /// This member's node id.
    pub(crate) node_id: NodeId,
    /// The cluster's id.
    pub(crate) cluster_id: String,
    /// The local Raft node.
    pub(crate) raft: Raft,
    /// The local state machine, for reads.
    pub(crate) machine: MachineHandle<FleetMachine>,
    /// Forwards to the leader.
    pub(crate) forwarder: Forwarder,
    /// The leader's writes, concurrent ones grouped in one Raft entry.
    pub(crate) writes: group_commit::GroupCommit<Raft>,
    /// The cluster CA (coordinators hold its key): issues joining nodes' certificates.
    pub(crate) ca: ClusterCa,
    /// This member's data directory (its current certificate, for `doctor`).
    pub(crate) node_dir: bootstrap::NodeDir,
    /// Metrics of this member.
    pub(crate) metrics: Arc<Metrics>,
    /// The leader's control plane (soft state, dispatcher).
    pub(crate) control: Arc<Control>,
    /// One-shot agent commands (restart, snapshots) in flight, joined by identical retries.
    pub(crate) runs: ops::OneShotRuns,
    /// This member's VIP promises (every member vouches, not only the leader).
    pub(crate) vip_promises: vip_lease::VipPromises,
    /// What the agents said in their VIP renewals (the leader's VIP manager plans from it).
    pub(crate) vip_sightings: vip_sightings::VipSightings,
}

impl Ctx {
    /// The leader this member knows of, with its address, if any.
    pub(crate) fn known_leader(&self) -> Option<Target> {
        let metrics = self.raft.metrics();
        let m = metrics.borrow();
        let id = m.current_leader?;
        let node: &MemberNode = m.membership_config.membership().get_node(&id)?;
        Some(Target {
            id,
            addr: node.addr.clone(),
        })
    }

    /// The leader, waiting up to [`LEADER_WAIT`] for one to be elected.
    pub(crate) async fn leader(&self) -> Result<Target, RemoteError> {
        if let Some(leader) = self.known_leader() {
            return Ok(leader);
        }
        let waited = self
            .raft
            .wait(Some(LEADER_WAIT))
            .metrics(
                |m| {
                    m.current_leader
                        .is_some_and(|l| m.membership_config.membership().get_node(&l).is_some())
                },
                "a known leader",
            )
            .await;
        match (waited, self.known_leader()) {
            (Ok(_), Some(leader)) => Ok(leader),
            (Ok(m), None) => Err(RemoteError::unavailable(format!(
                "member {} knows leader {:?} but not its address (membership {:?}); retry later",
                self.node_id, m.current_leader, m.membership_config
            ))),
            _ => Err(RemoteError::unavailable(format!(
                "no Raft leader is known to member {} (no quorum, or an election is under way); \
                 retry later",
                self.node_id
            ))),
        }
    }

    /// Runs `f` on the local state, as applied so far.
    pub(crate) fn read_local<T>(&self, f: impl FnOnce(&FleetState) -> T) -> Result<T, RemoteError> {
        self.machine
            .read(|m| f(&m.0))
            .map_err(|e| RemoteError::internal(format!("read the fleet state: {e}")))
    }

    /// The `NotLeader` refusal with the known leader as the hint.
    pub(crate) fn not_leader(&self) -> RemoteError {
        RemoteError::not_leader(self.known_leader().map(|t| (t.id, t.addr)))
    }
}
