//! The agent API (ALPN `pvefleet-agent/1`): what a node agent and the coordinator leader say
//! to each other over the agent's long-lived session.
//!
//! The agent always dials (it needs no listening port): every beat is one [`Heartbeat`] call
//! to the member it believes leads; the [`HeartbeatAck`] grants the lease and carries the
//! commands the leader wants run on that host. Results travel back on the next beats until the
//! leader acknowledges them, so a lost answer never loses a result.
//!
//! ```text
//!  agent ── Heartbeat{seq, sent inventory?, results, running} ──▶ leader
//!        ◀── HeartbeatAck{lease_ms, commands, acked_results, need_inventory} ──
//!  agent: journal.begin(id) ─▶ PVE API ─▶ journal.finish(id, result) ─▶ next Heartbeat.results
//! ```
//!
//! A follower answers a heartbeat with `NotLeader` and the leader's address; the agent follows.

mod command;
mod command_v1;
mod diagnosis;
mod inventory;
mod leaving;
mod remote_move;
mod session;
mod vip;

pub use command::{
    AgentCommand, CommandFailure, CommandOutput, CommandResult, DeleteVm, EnsureVm, FailureKind,
    MigrateOp, Op, OpKind, PowerAction, PowerOp, SnapshotAction, SnapshotInfo, SnapshotOp,
    VmObservation,
};
pub use command_v1::{AgentCommandV1, EnsureVmV1, OpV1};
pub use diagnosis::{
    ClockOffset, DIAGNOSIS_SCOPE, DiagnoseOp, HostDiagnosis, MissingPrivilege, PveFacts, PveTrust,
};
pub use inventory::{
    DiskUsage, HostResources, Inventory, ObservedVm, PveNodeInfo, StorageInfo, TemplateInfo,
};
pub use leaving::{LeaveAction, LeaveAnswer, LeaveKind};
pub use remote_move::{CloseTargetOp, OpenTargetOp, RemoteEndpoint, RemoteMigrateOp};
pub use session::{Heartbeat, HeartbeatAck, HeartbeatAckV1, HeartbeatV1};
pub use vip::{
    VipCandidacy, VipClaim, VipMember, VipRelease, VipReleased, VipRenew, VipRenewReply, VipReport,
    VipVouch, held_until, majority,
};

/// The PVE tag marking a VM as managed by the fleet. The agent touches only VMs carrying it.
pub const OWNERSHIP_TAG: &str = "pvefleet";

/// Every agent method name, for uniqueness checks and routing tables.
pub const METHODS: &[&str] = &[
    <Heartbeat as crate::Rpc>::METHOD,
    <VipRenew as crate::Rpc>::METHOD,
    <VipRelease as crate::Rpc>::METHOD,
];
