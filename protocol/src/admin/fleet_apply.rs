//! `pvefleet apply -f FILE`: a whole fleet file (pools, VMID ranges, VIPs, VMs, the VM groups'
//! sizes and the settings) as one request, committed as one write: either every entry is
//! applied or none is (encoding v2; a v1 member does not know the method).
//!
//! ```text
//!  FleetApply ─▶ leader: every entry validated (the first bad one named) ─▶ one log entry
//!             ─▶ state machine: applied in order on a copy; any refusal ─▶ nothing changed
//!             ◀─ FleetApplyReply: each entry's outcome, in request order
//! ```

use serde::{Deserialize, Serialize};

use super::{ApplyOutcome, VmApplyReply};
use crate::encoding::{self, EncodingError};
use crate::fleet::Settings;
use crate::rpc::Rpc;
use crate::spec::{GroupReplicas, IpPoolSpec, VipSpec, VmSpec, VmidRangeSpec};
use crate::version::{BATCHES, Version};

/// A fleet file to apply as a whole. Entries are applied in this order: pools, ranges, VIPs,
/// the settings, the groups' surplus members deleted, then the VMs (so a VM may use a pool or
/// range the same file defines).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FleetApply {
    /// IP pools, created or updated by name.
    pub pools: Vec<IpPoolSpec>,
    /// VMID ranges, created or updated by name.
    pub vmid_ranges: Vec<VmidRangeSpec>,
    /// VIPs, created or updated by name.
    pub vips: Vec<VipSpec>,
    /// The settings, replaced whole (`None`: kept).
    pub settings: Option<Settings>,
    /// The file's VM groups and their replicas: members numbered past them are deleted.
    pub groups: Vec<GroupReplicas>,
    /// VMs, created or updated by name.
    pub vms: Vec<VmSpec>,
}

impl FleetApply {
    /// How many entries it holds (groups and settings included).
    pub fn len(&self) -> usize {
        self.pools.len()
            + self.vmid_ranges.len()
            + self.vips.len()
            + usize::from(self.settings.is_some())
            + self.groups.len()
            + self.vms.len()
    }

    /// Whether it holds nothing to apply.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A VM group member deleted because its number is past the group's replicas.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemberDeleted {
    /// The VM's name.
    pub name: String,
    /// Removed at once (`true`) or marked for deletion until its host destroyed it.
    pub removed: bool,
}

/// What the apply did, entry by entry in the request's order.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FleetApplyReply {
    /// One per pool of the request.
    pub pools: Vec<ApplyOutcome>,
    /// One per VMID range of the request.
    pub vmid_ranges: Vec<ApplyOutcome>,
    /// One per VIP of the request.
    pub vips: Vec<ApplyOutcome>,
    /// The settings' outcome, when the request held settings.
    pub settings: Option<ApplyOutcome>,
    /// The group members deleted, highest number first within a group.
    pub deleted: Vec<MemberDeleted>,
    /// One per VM of the request, with the generation the apply produced.
    pub vms: Vec<VmApplyReply>,
}

impl Rpc for FleetApply {
    const METHOD: &'static str = "admin.fleet_apply";
    type Response = FleetApplyReply;

    /// Only from v2: a v1 member has no such method (the CLI says so instead of sending it).
    fn encode_at(&self, version: Version) -> Result<Vec<u8>, EncodingError> {
        if version < BATCHES {
            return Err(EncodingError::TooNew {
                what: "a fleet file applied as one write (pvefleet apply)".into(),
                needs: BATCHES,
                reader: version,
            });
        }
        encoding::encode(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_v1_member_is_never_sent_the_request() {
        let req = FleetApply {
            vms: vec![VmSpec::new("web", 512)],
            ..FleetApply::default()
        };
        assert_eq!(req.len(), 1);
        assert!(matches!(
            req.encode_at(Version(1)),
            Err(EncodingError::TooNew { needs: BATCHES, .. })
        ));
        let bytes = req.encode_at(BATCHES).unwrap();
        assert_eq!(FleetApply::decode_at(BATCHES, &bytes).unwrap(), req);
    }
}
