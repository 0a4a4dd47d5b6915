//! Admin requests about VMs: apply (create or update by name), list, show, delete, and a direct
//! VMID allocation for tests.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{ApplyOutcome, ReadMode};
use crate::encoding::{self, EncodingError};
use crate::fleet::{Migration, Recovery, VmRecord, VmRecordV1};
use crate::rpc::Rpc;
use crate::spec::{VmSpec, VmSpecV1};
use crate::version::{HA_SETTINGS, Version};

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

    /// At v1, the v1 layout; a spec whose HA settings v1 cannot carry (anything but `ha =
    /// true/false` as v1 meant it) cannot be sent to a v1 member, which would apply less than
    /// was asked.
    fn encode_at(&self, version: Version) -> Result<Vec<u8>, EncodingError> {
        if version >= HA_SETTINGS {
            return encoding::encode(self);
        }
        let spec = VmSpecV1::exact(&self.spec).ok_or_else(|| EncodingError::TooNew {
            what: format!(
                "VM {} with HA settings (ha.state, limits or recovery) or affinity rules \
                 (placement.apart_from, placement.together_with)",
                self.spec.name
            ),
            needs: HA_SETTINGS,
            reader: version,
        })?;
        encoding::encode(&spec)
    }

    fn decode_at(version: Version, bytes: &[u8]) -> Result<Self, EncodingError> {
        if version >= HA_SETTINGS {
            return encoding::decode(bytes);
        }
        encoding::decode::<VmSpecV1>(bytes).map(|spec| VmApply { spec: spec.into() })
    }
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
    /// The recoveries from fenced hosts under way, by VM name (v2; empty at v1).
    #[serde(default)]
    pub recoveries: BTreeMap<String, Recovery>,
    /// The migrations under way, by VM name (v2; empty at v1).
    #[serde(default)]
    pub migrations: BTreeMap<String, Migration>,
}

impl Rpc for VmList {
    const METHOD: &'static str = "admin.vm_list";
    type Response = VmListReply;

    /// At v1, records in the v1 layout, their HA settings as v1's `ha` bool.
    fn encode_response_at(
        response: &VmListReply,
        version: Version,
    ) -> Result<Vec<u8>, EncodingError> {
        if version >= HA_SETTINGS {
            return encoding::encode(response);
        }
        let vms: Vec<VmRecordV1> = response.vms.iter().map(VmRecordV1::shown).collect();
        encoding::encode(&vms)
    }

    fn decode_response_at(version: Version, bytes: &[u8]) -> Result<VmListReply, EncodingError> {
        if version >= HA_SETTINGS {
            return encoding::decode(bytes);
        }
        let vms: Vec<VmRecordV1> = encoding::decode(bytes)?;
        Ok(VmListReply {
            vms: vms.into_iter().map(VmRecord::from).collect(),
            recoveries: BTreeMap::new(),
            migrations: BTreeMap::new(),
        })
    }
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

    /// At v1, the record in the v1 layout, its HA settings as v1's `ha` bool.
    fn encode_response_at(response: &VmRecord, version: Version) -> Result<Vec<u8>, EncodingError> {
        if version >= HA_SETTINGS {
            return encoding::encode(response);
        }
        encoding::encode(&VmRecordV1::shown(response))
    }

    fn decode_response_at(version: Version, bytes: &[u8]) -> Result<VmRecord, EncodingError> {
        if version >= HA_SETTINGS {
            return encoding::decode(bytes);
        }
        encoding::decode::<VmRecordV1>(bytes).map(VmRecord::from)
    }
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
