//! A VM as the fleet records it: the operator's spec with its generation, what the fleet decided
//! for it (host, VMID, addresses), and what the agents observed.

use std::fmt;
use std::net::IpAddr;

use serde::{Deserialize, Serialize};

use super::UnixMillis;
use crate::identity::NodeId;
use crate::spec::{NicIp, VmSpec};

/// One VM of the fleet, keyed by its spec's name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VmRecord {
    /// The desired state, as last applied.
    pub spec: VmSpec,
    /// 1 at creation, +1 each time an apply really changes the spec.
    pub generation: u64,
    /// When the VM was first applied.
    pub created_at: UnixMillis,
    /// When the spec last changed.
    pub updated_at: UnixMillis,
    /// The operator deleted the spec: the VM must be destroyed, then its VMID and addresses
    /// released (they stay allocated until the VM is gone).
    pub deleting: bool,
    /// What the fleet decided for the VM.
    pub assignment: Assignment,
    /// What the agents last observed.
    pub status: VmStatus,
}

/// Where a VM runs and the ids it holds. Parts are filled in as the fleet decides them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Assignment {
    /// The host chosen by the scheduler; `None` until scheduled.
    pub host: Option<NodeId>,
    /// The VMID allocated from a range; `None` until allocated.
    pub vmid: Option<u32>,
    /// Addresses allocated from pools, one per NIC with `ip = { pool = .. }`.
    pub ips: Vec<NicAddress>,
}

/// An address allocated to one NIC of a VM.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NicAddress {
    /// The NIC's index (`net<nic>`, `ipconfig<nic>`).
    pub nic: u32,
    /// The pool it came from.
    pub pool: String,
    /// The address.
    pub address: IpAddr,
    /// The pool's prefix length.
    pub prefix_len: u8,
    /// The pool's gateway.
    pub gateway: Option<IpAddr>,
}

impl NicAddress {
    /// Whether the spec still wants this address: its NIC exists and still draws from the same
    /// pool. A stale address stays allocated until it is released explicitly, because the guest
    /// may still use it until it is reconfigured.
    pub fn is_current(&self, spec: &VmSpec) -> bool {
        let nic = usize::try_from(self.nic)
            .ok()
            .and_then(|i| spec.nics.get(i));
        matches!(nic.and_then(|n| n.ip.as_ref()), Some(NicIp::Pool(p)) if *p == self.pool)
    }
}

/// What the agents observed about a VM.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct VmStatus {
    /// Coarse state.
    pub phase: VmPhase,
    /// Finer-grained facts (Scheduled, Created, Configured, Running, Ready).
    pub conditions: Vec<Condition>,
    /// The host the VM is on, as seen by an agent.
    pub current_host: Option<NodeId>,
    /// Guest addresses reported by the guest agent (or the allocated ones).
    pub ips: Vec<IpAddr>,
    /// The latest explanation, e.g. an error from PVE.
    pub message: String,
    /// The spec generation this status reflects.
    pub observed_generation: u64,
    /// When the status was recorded.
    pub updated_at: UnixMillis,
}

/// A VM's coarse state.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum VmPhase {
    /// Accepted, not yet placed.
    #[default]
    Pending,
    /// Placed on a host, not yet created.
    Scheduled,
    /// Being created or configured.
    Provisioning,
    /// Running.
    Running,
    /// Stopped (as desired, or waiting to be started).
    Stopped,
    /// Being destroyed.
    Deleting,
    /// The last operation failed; see the message and events.
    Failed,
    /// Its host is not reporting.
    Unknown,
}

impl VmPhase {
    /// The lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            VmPhase::Pending => "pending",
            VmPhase::Scheduled => "scheduled",
            VmPhase::Provisioning => "provisioning",
            VmPhase::Running => "running",
            VmPhase::Stopped => "stopped",
            VmPhase::Deleting => "deleting",
            VmPhase::Failed => "failed",
            VmPhase::Unknown => "unknown",
        }
    }
}

impl fmt::Display for VmPhase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One fact about a VM, true or false since a point in time.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Condition {
    /// Which fact.
    pub kind: ConditionKind,
    /// Whether it holds.
    pub status: bool,
    /// A short machine-readable cause (`CloneFailed`).
    pub reason: String,
    /// A longer explanation.
    pub message: String,
    /// When `status` last changed.
    pub since: UnixMillis,
}

/// The facts tracked for a VM, in the order a new VM reaches them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ConditionKind {
    /// A host was chosen.
    Scheduled,
    /// The VM exists on its host.
    Created,
    /// Its PVE config matches the spec.
    Configured,
    /// It is running.
    Running,
    /// It is running and reports its addresses.
    Ready,
}
