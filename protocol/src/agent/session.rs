//! The heartbeat exchange: the agent's beat (lease request, inventory on change, command
//! results) and the leader's answer (lease grant, commands).

use serde::{Deserialize, Serialize};

use super::command::{AgentCommand, CommandResult};
use super::command_v1::AgentCommandV1;
use super::inventory::Inventory;
use super::leaving::{LeaveAnswer, LeaveKind};
use crate::encoding::{self, EncodingError};
use crate::identity::NodeId;
use crate::rpc::Rpc;
use crate::spec::Labels;
use crate::version::{HA_SETTINGS, LEAVING, Version};

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
    /// The agent is stopping, and why (v2; a v1 beat never says).
    pub leaving: Option<LeaveKind>,
}

/// [`Heartbeat`] as encoding v1 lays it out: without `leaving`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HeartbeatV1 {
    /// The PVE node name of the host.
    pub host_name: String,
    /// The host's labels.
    pub labels: Labels,
    /// Random per agent process start.
    pub boot_id: u64,
    /// Increases by one per beat of this process.
    pub seq: u64,
    /// The host's inventory, when sent.
    pub inventory: Option<Inventory>,
    /// Results the leader has not acknowledged yet.
    pub results: Vec<CommandResult>,
    /// Ids of the commands running now.
    pub running: Vec<String>,
}

impl HeartbeatV1 {
    /// What a v1 leader reads: everything but `leaving` (it would not know what to do with
    /// it; the agent goes as before v2).
    pub fn shown(hb: &Heartbeat) -> HeartbeatV1 {
        HeartbeatV1 {
            host_name: hb.host_name.clone(),
            labels: hb.labels.clone(),
            boot_id: hb.boot_id,
            seq: hb.seq,
            inventory: hb.inventory.clone(),
            results: hb.results.clone(),
            running: hb.running.clone(),
        }
    }
}

impl From<HeartbeatV1> for Heartbeat {
    fn from(v1: HeartbeatV1) -> Heartbeat {
        Heartbeat {
            host_name: v1.host_name,
            labels: v1.labels,
            boot_id: v1.boot_id,
            seq: v1.seq,
            inventory: v1.inventory,
            results: v1.results,
            running: v1.running,
            leaving: None,
        }
    }
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
    /// The answer to a beat that said the agent is leaving (v2).
    pub leave: Option<LeaveAnswer>,
    /// The leader's wall clock when it answered, in unix ms (v2): the agent measures its own
    /// clock's offset from the round trip (`pvefleet doctor` reports it). Never used for
    /// leases, which run on monotonic clocks.
    pub leader_clock_ms: Option<u64>,
}

/// [`HeartbeatAck`] as encoding v1 lays it out: its commands in the v1 layout (an ensure's
/// spec with v1's `ha` bool).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HeartbeatAckV1 {
    /// The leader that answered.
    pub leader: NodeId,
    /// Its Raft term.
    pub term: u64,
    /// The lease granted.
    pub lease_ms: u64,
    /// Send the inventory on the next beat.
    pub need_inventory: bool,
    /// Ids of results recorded.
    pub acked_results: Vec<String>,
    /// Commands to run, in the v1 layout.
    pub commands: Vec<AgentCommandV1>,
}

impl HeartbeatAckV1 {
    /// What a v1 agent acts on ([`AgentCommandV1::shown`]).
    pub fn shown(ack: &HeartbeatAck) -> HeartbeatAckV1 {
        HeartbeatAckV1 {
            leader: ack.leader,
            term: ack.term,
            lease_ms: ack.lease_ms,
            need_inventory: ack.need_inventory,
            acked_results: ack.acked_results.clone(),
            commands: ack
                .commands
                .iter()
                .filter_map(AgentCommandV1::shown)
                .collect(),
        }
    }
}

impl From<HeartbeatAckV1> for HeartbeatAck {
    fn from(v1: HeartbeatAckV1) -> HeartbeatAck {
        HeartbeatAck {
            leader: v1.leader,
            term: v1.term,
            lease_ms: v1.lease_ms,
            need_inventory: v1.need_inventory,
            acked_results: v1.acked_results,
            commands: v1.commands.into_iter().map(AgentCommand::from).collect(),
            leave: None,
            leader_clock_ms: None,
        }
    }
}

impl Rpc for Heartbeat {
    const METHOD: &'static str = "agent.heartbeat";
    type Response = HeartbeatAck;

    /// At v1, the beat without `leaving`.
    fn encode_at(&self, version: Version) -> Result<Vec<u8>, EncodingError> {
        if version >= LEAVING {
            return encoding::encode(self);
        }
        encoding::encode(&HeartbeatV1::shown(self))
    }

    fn decode_at(version: Version, bytes: &[u8]) -> Result<Heartbeat, EncodingError> {
        if version >= LEAVING {
            return encoding::decode(bytes);
        }
        encoding::decode::<HeartbeatV1>(bytes).map(Heartbeat::from)
    }

    /// At v1, the acknowledgement in the v1 layout: an ensure's spec as a v1 agent acts on it
    /// (`ha`: fenced with its host or not), without a leave answer.
    fn encode_response_at(
        response: &HeartbeatAck,
        version: Version,
    ) -> Result<Vec<u8>, EncodingError> {
        if version >= HA_SETTINGS {
            return encoding::encode(response);
        }
        encoding::encode(&HeartbeatAckV1::shown(response))
    }

    fn decode_response_at(version: Version, bytes: &[u8]) -> Result<HeartbeatAck, EncodingError> {
        if version >= HA_SETTINGS {
            return encoding::decode(bytes);
        }
        encoding::decode::<HeartbeatAckV1>(bytes).map(HeartbeatAck::from)
    }
}
