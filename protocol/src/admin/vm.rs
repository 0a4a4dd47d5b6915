//! Admin requests about VMs: apply (create or update by name), list, show, delete, and a direct
//! VMID allocation for tests.

use serde::{Deserialize, Serialize};

use super::{ApplyOutcome, ReadMode};
use crate::fleet::VmRecord;
use crate::rpc::Rpc;
use crate::spec::VmSpec;

/// `pvefleet vm apply -f FILE`, one VM at a time: created or updated by name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VmApply {
    /// The VM as it should be.
    pub spec: VmSpec,
}

/// What the apply did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct VmApplyReply {
    /// Created, updated or unchanged.
    pub outcome: ApplyOutcome,
    /// The spec's generation after the apply.
    pub generation: u64,
}

impl Rpc for VmApply {
    const METHOD: &'static str = "admin.vm_apply";
    type Response = VmApplyReply;
}

/// `pvefleet vm ls`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct VmList {
    /// Read freshness.
    pub read: ReadMode,
}

/// Every VM record, by name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VmListReply {
    /// The VMs.
    pub vms: Vec<VmRecord>,
}

impl Rpc for VmList {
    const METHOD: &'static str = "admin.vm_list";
    type Response = VmListReply;
}

/// `pvefleet vm show NAME`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VmGet {
    /// The VM's name.
    pub name: String,
    /// Read freshness.
    pub read: ReadMode,
}

impl Rpc for VmGet {
    const METHOD: &'static str = "admin.vm_get";
    type Response = VmRecord;
}

/// `pvefleet vm delete NAME`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VmDelete {
    /// The VM's name.
    pub name: String,
}

/// What the delete did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct VmDeleteReply {
    /// `true`: the VM held no VMID and was removed at once. `false`: it is marked for deletion;
    /// it disappears once destroyed on its host and its ids are released.
    pub removed: bool,
}

impl Rpc for VmDelete {
    const METHOD: &'static str = "admin.vm_delete";
    type Response = VmDeleteReply;
}

/// Allocates (or returns the already allocated) VMID of a VM, from its range. For tests and
/// diagnostics; the reconciler allocates on its own.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AllocateVmid {
    /// The VM's name.
    pub vm: String,
}

/// The VM's VMID.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct AllocateVmidReply {
    /// The VMID.
    pub vmid: u32,
}

impl Rpc for AllocateVmid {
    const METHOD: &'static str = "admin.allocate_vmid";
    type Response = AllocateVmidReply;
}
