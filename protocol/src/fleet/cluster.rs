//! Who is in the fleet: coordinator members (Raft bookkeeping; the Raft membership itself is
//! openraft's), PVE hosts with their lifecycle state, and the cluster-wide settings.

use std::collections::BTreeSet;
use std::fmt;

use serde::{Deserialize, Serialize};

use super::UnixMillis;
use super::rebalancing::{Rebalancing, validate_rebalancing};
use crate::agent::{StorageInfo, TemplateInfo};
use crate::identity::NodeId;
use crate::spec::validate::{check, within};
use crate::spec::{HaDefaults, Labels, MAX_HA_TRIES, SpecError, rules};

/// A coordinator member as the fleet records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Member {
    /// The member's node id (its certificate's id).
    pub id: NodeId,
    /// `host:port` of the member's QUIC endpoint.
    pub addr: String,
    /// Voter or learner.
    pub role: MemberRole,
}

/// A member's part in Raft.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MemberRole {
    /// Votes and counts toward the quorum.
    Voter,
    /// Receives the log, does not vote (a joining member catching up).
    Learner,
}

impl fmt::Display for MemberRole {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            MemberRole::Voter => "voter",
            MemberRole::Learner => "learner",
        })
    }
}

/// A PVE host running a node agent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Host {
    /// The agent's node id.
    pub id: NodeId,
    /// The PVE node name (unique among hosts not removed).
    pub name: String,
    /// Labels from the agent's configuration (`[labels]` in agent.toml, and the PVE cluster's
    /// name); placement matches [`Host::effective_labels`].
    pub labels: Labels,
    /// What the host offers to guests.
    pub capacity: Capacity,
    /// Where the host is in its lifecycle.
    pub state: HostState,
    /// When the host registered.
    pub registered_at: UnixMillis,
    /// When `state` last changed.
    pub state_since: UnixMillis,
    /// Why it is in `state`, in the words of the transition's event (`no heartbeat for 3.0 s`,
    /// `lease expired …`); empty when nothing was recorded (hosts written at encoding v1).
    pub state_reason: String,
    /// What the host's agent last reported about its PVE node (storages, bridges, templates);
    /// `None` until its first inventory.
    pub facts: Option<HostFacts>,
    /// Labels set by operators (`pvefleet host label`, encoding v2): they win over the
    /// agent's on the same key.
    pub operator_labels: Labels,
}

impl Host {
    /// What placement, VIPs and rules match: the agent's labels with the operators' on top.
    pub fn effective_labels(&self) -> Labels {
        let mut labels = self.labels.clone();
        labels.extend(
            self.operator_labels
                .iter()
                .map(|(k, v)| (k.clone(), v.clone())),
        );
        labels
    }
}

/// The slow-changing part of a host's inventory, replicated so a new leader can schedule at
/// once: what the scheduler's storage, bridge and template filters need.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostFacts {
    /// `pve-manager` version.
    pub pve_version: String,
    /// Storages of the node.
    pub storages: Vec<StorageInfo>,
    /// Bridges of the node.
    pub bridges: BTreeSet<String>,
    /// Templates of the node.
    pub templates: Vec<TemplateInfo>,
    /// VMIDs used on the node by VMs the fleet does not own: never allocated to fleet VMs.
    pub foreign_vmids: Vec<u32>,
    /// When the facts were recorded.
    pub updated_at: UnixMillis,
}

/// A host's capacity for guests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Capacity {
    /// Logical CPUs.
    pub cpus: u32,
    /// Memory in MiB.
    pub memory_mib: u64,
}

/// A host's lifecycle state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HostState {
    /// Registered, not yet reporting.
    Joining,
    /// Reporting and holding a valid lease.
    Online,
    /// Its lease may have lapsed; guests stay put until it is proven fenced.
    Unreachable,
    /// Proven fenced (lease expired or released): its HA guests may be recovered elsewhere.
    Fenced,
    /// Taken out of scheduling by the operator; its guests stay.
    Maintenance,
    /// Gone for good: its certificate is refused and its id is never reused.
    Removed,
}

impl HostState {
    /// The lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            HostState::Joining => "joining",
            HostState::Online => "online",
            HostState::Unreachable => "unreachable",
            HostState::Fenced => "fenced",
            HostState::Maintenance => "maintenance",
            HostState::Removed => "removed",
        }
    }
}

impl fmt::Display for HostState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Cluster-wide settings (changed through Raft like everything else): the `[settings]` table of
/// a fleet file (`pvefleet settings apply -f FILE`), every key optional (absent = its default),
/// unknown keys refused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Settings {
    /// The VMID range of VMs that name none; absent = the only range, if there is exactly one.
    pub default_vmid_range: Option<String>,
    /// vCPUs schedulable per host CPU, in percent (400 = 4 vCPUs per CPU).
    pub cpu_overcommit_percent: u32,
    /// Guest memory schedulable per MiB of host memory, in percent (100 = no overcommit).
    pub memory_overcommit_percent: u32,
    /// Host memory kept free for PVE itself, in MiB.
    pub host_memory_reserve_mib: u64,
    /// Most VMs on one host; absent = no limit.
    pub max_vms_per_host: Option<u32>,
    /// The HA limits and recovery mode of VMs whose `[vm.ha]` leaves them out (encoding v2;
    /// PVE's defaults at v1).
    pub ha: HaDefaults,
    /// Automatic rebalancing (encoding v2; off at v1).
    pub rebalance: Rebalancing,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            default_vmid_range: None,
            cpu_overcommit_percent: 400,
            memory_overcommit_percent: 100,
            host_memory_reserve_mib: 2048,
            max_vms_per_host: None,
            ha: HaDefaults::default(),
            rebalance: Rebalancing::default(),
        }
    }
}

/// Checks settings values (the default range's existence is checked by the state machine).
pub fn validate_settings(s: &Settings) -> Result<(), SpecError> {
    if let Some(range) = &s.default_vmid_range {
        check("default_vmid_range", range, &rules::DNS_LABEL)?;
    }
    within(
        "cpu_overcommit_percent",
        s.cpu_overcommit_percent,
        10,
        10_000,
    )?;
    within(
        "memory_overcommit_percent",
        s.memory_overcommit_percent,
        10,
        1_000,
    )?;
    within(
        "host_memory_reserve_mib",
        s.host_memory_reserve_mib,
        0,
        1024 * 1024,
    )?;
    if let Some(max) = s.max_vms_per_host {
        within("max_vms_per_host", max, 1, 100_000)?;
    }
    within("ha.max_restart", s.ha.max_restart, 0, MAX_HA_TRIES)?;
    within("ha.max_relocate", s.ha.max_relocate, 0, MAX_HA_TRIES)?;
    validate_rebalancing(&s.rebalance)?;
    Ok(())
}

/// Checks a host's PVE node name and labels.
pub fn validate_host(name: &str, labels: &Labels) -> Result<(), SpecError> {
    check("name", name, &rules::HOST_NAME)?;
    for (key, value) in labels {
        check("labels", key, &rules::LABEL_KEY)?;
        check(format!("labels.{key}"), value, &rules::LABEL_VALUE)?;
    }
    Ok(())
}

/// Checks a member's address: `host:port` with a non-zero port.
pub fn validate_member_addr(addr: &str) -> Result<(), SpecError> {
    let ok = addr.rsplit_once(':').is_some_and(|(host, port)| {
        !host.is_empty()
            && !host.contains(char::is_whitespace)
            && port.bytes().all(|b| b.is_ascii_digit())
            && port.parse::<u16>().is_ok_and(|p| p != 0)
    });
    if ok {
        Ok(())
    } else {
        Err(SpecError::text(
            "addr",
            addr,
            "host:port with a port 1-65535 (IPv6 as [addr]:port)",
        ))
    }
}
