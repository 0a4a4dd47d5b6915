//! The fleet's allocatable resources and who holds what: VMID ranges, IP pools and virtual IPs.
//! Allocation itself happens in the state machine, so every member agrees on each id.

use std::collections::BTreeMap;
use std::fmt;
use std::net::IpAddr;

use serde::{Deserialize, Serialize};

use super::UnixMillis;
use crate::identity::NodeId;
use crate::spec::{IpPoolSpec, VipSpec, VmidRangeSpec};

/// Who holds an allocated VMID or address.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AllocationOwner {
    /// A fleet VM, by name.
    Vm(String),
    /// Something outside the fleet's VMs (an operator's or a test's reservation).
    External(String),
}

impl fmt::Display for AllocationOwner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AllocationOwner::Vm(name) => write!(f, "vm {name}"),
            AllocationOwner::External(owner) => write!(f, "{owner}"),
        }
    }
}

/// A VMID range and its allocations.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VmidRange {
    /// The definition.
    pub spec: VmidRangeSpec,
    /// Allocated VMIDs.
    pub allocations: BTreeMap<u32, VmidAllocation>,
}

/// One allocated VMID.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VmidAllocation {
    /// Its holder.
    pub owner: AllocationOwner,
    /// When it was allocated.
    pub at: UnixMillis,
}

/// An IP pool and its allocations.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IpPool {
    /// The definition.
    pub spec: IpPoolSpec,
    /// Allocated addresses.
    pub allocations: BTreeMap<IpAddr, IpAllocation>,
}

/// One allocated address.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IpAllocation {
    /// Its holder.
    pub owner: AllocationOwner,
    /// The holder's NIC index, for a VM.
    pub nic: Option<u32>,
    /// When it was allocated.
    pub at: UnixMillis,
}

/// A virtual IP and its current holder.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Vip {
    /// The definition.
    pub spec: VipSpec,
    /// 1 at creation, +1 each time an apply really changes the definition.
    pub generation: u64,
    /// The host holding the address; `None` when nobody does.
    pub owner: Option<NodeId>,
    /// +1 at every change of owner, so a stale grant can be told from the current one.
    pub epoch: u64,
    /// The host that takes the VIP over (as epoch + 1) if the owner's lease lapses while no
    /// leader can commit a new owner (v2; docs/design/vips.md, "Standby").
    pub standby: Option<NodeId>,
}
