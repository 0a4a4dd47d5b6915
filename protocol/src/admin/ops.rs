//! Admin requests that act on running VMs or explain decisions: placement explanations, power
//! actions, snapshots, and the live view of hosts.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::agent::{SnapshotAction, SnapshotInfo};
use crate::encoding::{self, EncodingError};
use crate::fleet::HostV1;
use crate::identity::NodeId;
use crate::rpc::Rpc;
use crate::version::{HOST_LIVENESS, Version};

// How long the leader waits for an agent's answer to a one-shot command. The CLI adds its own
// margin on top for routing and retries, so both sides read these.

/// How long the leader waits for a restart's result.
pub const RESTART_WAIT: Duration = Duration::from_secs(120);
/// How long the leader waits for a snapshot listing.
pub const SNAPSHOT_LIST_WAIT: Duration = Duration::from_secs(30);
/// How long the leader waits for a snapshot change (a snapshot with RAM writes it all out).
pub const SNAPSHOT_CHANGE_WAIT: Duration = Duration::from_secs(300);

/// `pvefleet vm explain NAME`: every host's verdict for the VM, as the scheduler sees it now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VmExplain {
    /// The VM's name.
    pub name: String,
}

/// The scheduler's account of every host.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VmExplainReply {
    /// The VM's name.
    pub vm: String,
    /// The host the VM is placed on, if any.
    pub placed_on: Option<String>,
    /// Every host, eligible ones best first, then excluded ones by name.
    pub verdicts: Vec<PlacementVerdict>,
}

/// One host's verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlacementVerdict {
    /// The host's node id.
    pub host_id: NodeId,
    /// The host's PVE node name.
    pub host_name: String,
    /// The hard filter that excluded the host (kebab-case name), if any.
    pub filter: Option<String>,
    /// Why it was excluded (empty when scored).
    pub detail: String,
    /// The TOPSIS criteria and closeness when the host is eligible.
    pub scores: Option<PlacementScores>,
}

/// Fleet utilizations (0-1) if the VM were placed on the host, and the TOPSIS closeness.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PlacementScores {
    /// CPU utilization of the hosts, as PVE averages it: the root mean square.
    pub avg_cpu: f64,
    /// Highest CPU utilization.
    pub max_cpu: f64,
    /// Memory utilization of the hosts, as PVE averages it: the root mean square.
    pub avg_mem: f64,
    /// Highest memory utilization.
    pub max_mem: f64,
    /// Closeness to the ideal (higher is better).
    pub closeness: f64,
}

impl Rpc for VmExplain {
    const METHOD: &'static str = "admin.vm_explain";
    type Response = VmExplainReply;
}

/// `pvefleet vm start|stop|restart NAME`. Start and stop change the VM's desired state (so the
/// fleet keeps it that way); restart is a one-shot action run by the VM's agent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VmPower {
    /// The VM's name.
    pub name: String,
    /// Chosen by the client once per operator command and kept across its retries: a retry
    /// joins the run its first attempt started instead of restarting the VM again, while a new
    /// command (a new id) always runs anew.
    pub request_id: String,
    /// What to do.
    pub action: VmPowerAction,
}

/// Power actions an operator can ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum VmPowerAction {
    /// Desired state `running`.
    Start,
    /// Desired state `stopped` (shutdown, then stop after a timeout).
    Stop,
    /// Shut down and start again now; the desired state stays `running`.
    Restart,
}

/// What a power request did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VmPowerReply {
    /// The spec generation after the request.
    pub generation: u64,
    /// What happened, for an operator.
    pub message: String,
}

impl Rpc for VmPower {
    const METHOD: &'static str = "admin.vm_power";
    type Response = VmPowerReply;
}

/// `pvefleet vm snapshot create|ls|rollback|delete NAME ...`, run by the VM's agent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VmSnapshot {
    /// The VM's name.
    pub name: String,
    /// Chosen by the client once per operator command and kept across its retries (see
    /// [`VmPower::request_id`]).
    pub request_id: String,
    /// What to do.
    pub action: SnapshotAction,
}

/// The VM's snapshots after the action.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VmSnapshotReply {
    /// The VM's name.
    pub vm: String,
    /// Snapshots, oldest first.
    pub snapshots: Vec<SnapshotInfo>,
}

impl Rpc for VmSnapshot {
    const METHOD: &'static str = "admin.vm_snapshot";
    type Response = VmSnapshotReply;
}

/// `pvefleet host ls` with usage: the replicated hosts plus what the leader knows live.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostStatus {}

/// Every host with its usage.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostStatusReply {
    /// Hosts by id.
    pub hosts: Vec<HostStatusEntry>,
}

/// One host with what is placed on it and its live view.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostStatusEntry {
    /// The replicated record.
    pub host: crate::fleet::Host,
    /// VMs placed on the host.
    pub vm_count: u32,
    /// vCPUs committed by those VMs.
    pub vcpus: u64,
    /// Memory committed by those VMs, in MiB.
    pub memory_mib: u64,
    /// Milliseconds since the leader last heard from the agent (`None`: not since it leads).
    pub last_seen_ms: Option<u64>,
    /// Live resources from the last inventory (`None`: none received by this leader).
    pub resources: Option<crate::agent::HostResources>,
}

/// [`HostStatusEntry`] as encoding v1 lays it out (the host without its reason).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct HostStatusEntryV1 {
    host: HostV1,
    vm_count: u32,
    vcpus: u64,
    memory_mib: u64,
    last_seen_ms: Option<u64>,
    resources: Option<crate::agent::HostResources>,
}

impl Rpc for HostStatus {
    const METHOD: &'static str = "admin.host_status";
    type Response = HostStatusReply;

    /// At v1, hosts in the v1 layout (without their state's reason).
    fn encode_response_at(
        response: &HostStatusReply,
        version: Version,
    ) -> Result<Vec<u8>, EncodingError> {
        if version >= HOST_LIVENESS {
            return encoding::encode(response);
        }
        let hosts: Vec<HostStatusEntryV1> = response
            .hosts
            .iter()
            .map(|e| HostStatusEntryV1 {
                host: HostV1::shown(&e.host),
                vm_count: e.vm_count,
                vcpus: e.vcpus,
                memory_mib: e.memory_mib,
                last_seen_ms: e.last_seen_ms,
                resources: e.resources.clone(),
            })
            .collect();
        encoding::encode(&hosts)
    }

    fn decode_response_at(
        version: Version,
        bytes: &[u8],
    ) -> Result<HostStatusReply, EncodingError> {
        if version >= HOST_LIVENESS {
            return encoding::decode(bytes);
        }
        let hosts: Vec<HostStatusEntryV1> = encoding::decode(bytes)?;
        Ok(HostStatusReply {
            hosts: hosts
                .into_iter()
                .map(|e| HostStatusEntry {
                    host: e.host.into(),
                    vm_count: e.vm_count,
                    vcpus: e.vcpus,
                    memory_mib: e.memory_mib,
                    last_seen_ms: e.last_seen_ms,
                    resources: e.resources,
                })
                .collect(),
        })
    }
}
