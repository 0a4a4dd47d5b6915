//! The heartbeat exchange: the agent's beat (lease request, inventory on change, command
//! results) and the leader's answer (lease grant, commands).

use serde::{Deserialize, Serialize};

use super::command::{AgentCommand, CommandResult};
use super::inventory::Inventory;
use crate::identity::NodeId;
use crate::rpc::Rpc;
use crate::spec::Labels;

/// One beat of an agent, sent every heartbeat interval to the member it believes leads. The
/// host is the caller's certificate identity; nothing in the body can claim another.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Heartbeat {
    /// The PVE node name of the host (registers the host on its first beat).
    pub host_name: String,
    /// The host's labels from the agent's config (placement constraints match them).
    pub labels: Labels,
    /// Random per agent process start: the leader notices a restart and re-sends the
    /// commands it has not seen a result for (the journal answers repeats).
    pub boot_id: u64,
    /// Increases by one per beat of this process.
    pub seq: u64,
    /// The host's inventory: sent when it changed, on the first beat to a new leader, and when
    /// the last ack asked for it (`need_inventory`); `None` otherwise.
    pub inventory: Option<Inventory>,
    /// Results the leader has not acknowledged yet (sent again until it does).
    pub results: Vec<CommandResult>,
    /// Ids of the commands running now.
    pub running: Vec<String>,
}

/// The leader's answer to a [`Heartbeat`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HeartbeatAck {
    /// The leader that answered.
    pub leader: NodeId,
    /// Its Raft term.
    pub term: u64,
    /// The lease granted: valid for this long after the agent *sent* the heartbeat, on the
    /// agent's own monotonic clock (docs/design/architecture.md, safety rule 3). Given only after the leader
    /// confirmed its quorum upon receiving the beat.
    pub lease_ms: u64,
    /// The leader holds no inventory of this host for this boot: send it on the next beat.
    pub need_inventory: bool,
    /// Ids of results recorded: the agent may stop sending them.
    pub acked_results: Vec<String>,
    /// Commands to run on this host (a command already run is answered from the journal).
    pub commands: Vec<AgentCommand>,
}

impl Rpc for Heartbeat {
    const METHOD: &'static str = "agent.heartbeat";
    type Response = HeartbeatAck;
}
