//! Admin requests about the resources VMs draw from: IP pools, VMID ranges, virtual IPs, and a
//! direct address allocation (and its release) for tests and reservations.

use std::net::IpAddr;

use serde::{Deserialize, Serialize};

use super::{ApplyReply, Done, ReadMode};
use crate::encoding::{self, EncodingError};
use crate::fleet::{IpPool, Vip, VmidRange};
use crate::rpc::Rpc;
use crate::spec::{IpPoolSpec, VipSpec, VipSpecV1, VipV1, VmidRangeSpec};
use crate::version::{VIP_HOLDING, Version};

/// `pvefleet pool apply`: create or update an IP pool by name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PoolApply {
    /// The pool as it should be.
    pub spec: IpPoolSpec,
}

impl Rpc for PoolApply {
    const METHOD: &'static str = "admin.pool_apply";
    type Response = ApplyReply;
}

/// `pvefleet pool ls`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PoolList {
    /// Read freshness.
    pub read: ReadMode,
}

/// Every pool with its allocations.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PoolListReply {
    /// Pools by name.
    pub pools: Vec<IpPool>,
}

impl Rpc for PoolList {
    const METHOD: &'static str = "admin.pool_list";
    type Response = PoolListReply;
}

/// `pvefleet pool delete NAME` (refused while addresses are allocated or VMs refer to it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PoolDelete {
    /// The pool's name.
    pub name: String,
}

impl Rpc for PoolDelete {
    const METHOD: &'static str = "admin.pool_delete";
    type Response = Done;
}

/// Allocates one address from a pool to an external owner. For tests and reservations.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AllocateIp {
    /// The pool's name.
    pub pool: String,
    /// Who holds the address (free text).
    pub owner: String,
}

/// The allocated address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct AllocateIpReply {
    /// The address.
    pub address: IpAddr,
    /// The pool's prefix length.
    pub prefix_len: u8,
    /// The pool's gateway.
    pub gateway: Option<IpAddr>,
}

impl Rpc for AllocateIp {
    const METHOD: &'static str = "admin.allocate_ip";
    type Response = AllocateIpReply;
}

/// `pvefleet alloc release POOL ADDRESS`: gives back an address [`AllocateIp`] handed out.
/// Refused for an address a VM holds (it is released with the VM) and for one not allocated.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReleaseIp {
    /// The pool's name.
    pub pool: String,
    /// The address to release.
    pub address: IpAddr,
}

impl Rpc for ReleaseIp {
    const METHOD: &'static str = "admin.release_ip";
    type Response = Done;
}

/// Create or update a VMID range by name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VmidRangeApply {
    /// The range as it should be.
    pub spec: VmidRangeSpec,
}

impl Rpc for VmidRangeApply {
    const METHOD: &'static str = "admin.vmid_range_apply";
    type Response = ApplyReply;
}

/// List VMID ranges.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct VmidRangeList {
    /// Read freshness.
    pub read: ReadMode,
}

/// Every VMID range with its allocations.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VmidRangeListReply {
    /// Ranges by name.
    pub ranges: Vec<VmidRange>,
}

impl Rpc for VmidRangeList {
    const METHOD: &'static str = "admin.vmid_range_list";
    type Response = VmidRangeListReply;
}

/// Delete a VMID range (refused while VMIDs are allocated from it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VmidRangeDelete {
    /// The range's name.
    pub name: String,
}

impl Rpc for VmidRangeDelete {
    const METHOD: &'static str = "admin.vmid_range_delete";
    type Response = Done;
}

/// `pvefleet vip apply`: create or update a VIP by name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VipApply {
    /// The VIP as it should be.
    pub spec: VipSpec,
}

impl Rpc for VipApply {
    const METHOD: &'static str = "admin.vip_apply";
    type Response = ApplyReply;

    /// At v1, the v1 layout; a spec using a v2 field (labels, preemption, checks) cannot be
    /// sent to a v1 member, which would apply less than was asked.
    fn encode_at(&self, version: Version) -> Result<Vec<u8>, EncodingError> {
        if version >= VIP_HOLDING {
            return encoding::encode(self);
        }
        let spec = VipSpecV1::exact(&self.spec).ok_or_else(|| EncodingError::TooNew {
            what: format!("VIP {} with labels, preemption or checks", self.spec.name),
            needs: VIP_HOLDING,
            reader: version,
        })?;
        encoding::encode(&spec)
    }

    fn decode_at(version: Version, bytes: &[u8]) -> Result<Self, EncodingError> {
        if version >= VIP_HOLDING {
            return encoding::decode(bytes);
        }
        encoding::decode::<VipSpecV1>(bytes).map(|spec| VipApply { spec: spec.into() })
    }
}

/// `pvefleet vip ls`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct VipList {
    /// Read freshness.
    pub read: ReadMode,
}

/// Every VIP with its owner.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VipListReply {
    /// VIPs by name.
    pub vips: Vec<Vip>,
}

impl Rpc for VipList {
    const METHOD: &'static str = "admin.vip_list";
    type Response = VipListReply;

    /// At v1, VIPs in the v1 layout, without the fields a v1 reader cannot show.
    fn encode_response_at(
        response: &VipListReply,
        version: Version,
    ) -> Result<Vec<u8>, EncodingError> {
        if version >= VIP_HOLDING {
            return encoding::encode(response);
        }
        let vips: Vec<VipV1> = response.vips.iter().map(VipV1::shown).collect();
        encoding::encode(&vips)
    }

    fn decode_response_at(version: Version, bytes: &[u8]) -> Result<VipListReply, EncodingError> {
        if version >= VIP_HOLDING {
            return encoding::decode(bytes);
        }
        let vips: Vec<VipV1> = encoding::decode(bytes)?;
        Ok(VipListReply {
            vips: vips.into_iter().map(Vip::from).collect(),
        })
    }
}

/// `pvefleet vip delete NAME`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VipDelete {
    /// The VIP's name.
    pub name: String,
}

impl Rpc for VipDelete {
    const METHOD: &'static str = "admin.vip_delete";
    type Response = Done;
}
