//! The VIPs as the leader sees them live (`pvefleet vip show|ls --hosts`) and the operator's
//! move (`pvefleet vip move NAME HOST`). Both are answered by the leader: what each host's
//! agent reports lives there (and on every member), not in the replicated state.

use serde::{Deserialize, Serialize};

use crate::NodeId;
use crate::Rpc;
use crate::fleet::{UnixMillis, Vip};

/// `pvefleet vip show [NAME]`: VIPs with their holder and every candidate host.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct VipStatus {
    /// One VIP, or every VIP when `None`.
    pub name: Option<String>,
}

/// One host's standing for one VIP.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VipHostStatus {
    /// The host's id.
    pub id: NodeId,
    /// The host's name.
    pub host: String,
    /// Its preference (higher wins; the place in the spec's host list).
    pub priority: u32,
    /// Whether the leader would hand it the VIP now.
    pub eligible: bool,
    /// Why not, when it is not.
    pub why_not: Option<String>,
    /// Whether its agent only simulates holding.
    pub simulated: bool,
    /// Milliseconds since its agent last renewed, as the leader heard (`None`: never).
    pub renewed_ms_ago: Option<u64>,
}

/// One VIP as the leader sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VipStatusEntry {
    /// The VIP with its replicated owner and epoch.
    pub vip: Vip,
    /// The owner's name.
    pub owner_name: Option<String>,
    /// When the current owner was granted it (its event), if the event is still kept.
    pub since: Option<UnixMillis>,
    /// Whether the owner is holding it now: it claimed it at this epoch within the last lease
    /// and the leader vouched for it.
    pub held: bool,
    /// Whether the owner only simulates holding.
    pub simulated: bool,
    /// Every host the spec admits.
    pub hosts: Vec<VipHostStatus>,
}

/// The answer to [`VipStatus`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VipStatusReply {
    /// The VIPs, by name.
    pub vips: Vec<VipStatusEntry>,
}

impl Rpc for VipStatus {
    const METHOD: &'static str = "admin.vip_status";
    type Response = VipStatusReply;
}

/// `pvefleet vip move NAME HOST`: hand the VIP to `host` now (it must be eligible). The owner
/// lets go once `host` claims it, so the outage is one claim interval.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VipMove {
    /// The VIP's name.
    pub name: String,
    /// The host to hand it to, by name.
    pub host: String,
}

/// The new owner after [`VipMove`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VipMoveReply {
    /// The new owner.
    pub owner: NodeId,
    /// The new epoch.
    pub epoch: u64,
}

impl Rpc for VipMove {
    const METHOD: &'static str = "admin.vip_move";
    type Response = VipMoveReply;
}
