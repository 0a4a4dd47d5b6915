//! Admin requests about the cluster itself: Raft status, members, hosts, settings, and the
//! whole-fleet view.

use serde::{Deserialize, Serialize};

use super::{Done, ReadMode};
use crate::encoding::{self, EncodingError};
use crate::fleet::{
    FleetView, FleetViewV1, Host, HostV1, Member, MemberRole, Settings, SettingsV1,
};
use crate::identity::NodeId;
use crate::rpc::Rpc;
use crate::version::{HA_DEFAULTS, HOST_LIVENESS, VIP_HOLDING, Version};

/// `pvefleet cluster status`: members, leader, term, commit/applied index, lag.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterStatus {}

/// The Raft view of the member that answered (the leader when one is known).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterStatusReply {
    /// The cluster's id.
    pub cluster_id: String,
    /// The member that answered.
    pub node_id: NodeId,
    /// The current leader, if known.
    pub leader: Option<NodeId>,
    /// The current Raft term.
    pub term: u64,
    /// Index of the last committed log entry.
    pub commit_index: u64,
    /// Index of the last entry applied to the state machine.
    pub applied_index: u64,
    /// Every member with its replication progress.
    pub members: Vec<MemberStatus>,
    /// The encoding version the cluster writes (raised once every member reads a newer one).
    pub cluster_version: crate::version::Version,
}

/// One member in [`ClusterStatusReply`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemberStatus {
    /// The member's node id.
    pub id: NodeId,
    /// `host:port` of its QUIC endpoint.
    pub addr: String,
    /// Voter or learner.
    pub role: MemberRole,
    /// Whether it is the leader.
    pub is_leader: bool,
    /// The highest log index known replicated to it (known on the leader only).
    pub matched_index: Option<u64>,
    /// How many entries it is behind the leader's last log index (known on the leader only).
    pub lag: Option<u64>,
    /// The encodings its build reads, as it reported them (`None` until it has).
    pub versions: Option<crate::version::VersionRange>,
}

impl Rpc for ClusterStatus {
    const METHOD: &'static str = "admin.cluster_status";
    type Response = ClusterStatusReply;
}

/// `pvefleet member ls`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemberList {
    /// Read freshness.
    pub read: ReadMode,
}

/// The recorded members.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemberListReply {
    /// Members by id.
    pub members: Vec<Member>,
}

impl Rpc for MemberList {
    const METHOD: &'static str = "admin.member_list";
    type Response = MemberListReply;
}

/// `pvefleet member remove ID`: the member leaves Raft and its certificate is refused from
/// then on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemberRemove {
    /// The member's node id.
    pub id: NodeId,
}

impl Rpc for MemberRemove {
    const METHOD: &'static str = "admin.member_remove";
    type Response = Done;
}

/// `pvefleet host ls`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostList {
    /// Read freshness.
    pub read: ReadMode,
}

/// The recorded hosts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostListReply {
    /// Hosts by id.
    pub hosts: Vec<Host>,
}

impl Rpc for HostList {
    const METHOD: &'static str = "admin.host_list";
    type Response = HostListReply;

    /// At v1, hosts in the v1 layout (without their state's reason).
    fn encode_response_at(
        response: &HostListReply,
        version: Version,
    ) -> Result<Vec<u8>, EncodingError> {
        if version >= HOST_LIVENESS {
            return encoding::encode(response);
        }
        let hosts: Vec<HostV1> = response.hosts.iter().map(HostV1::shown).collect();
        encoding::encode(&hosts)
    }

    fn decode_response_at(version: Version, bytes: &[u8]) -> Result<HostListReply, EncodingError> {
        if version >= HOST_LIVENESS {
            return encoding::decode(bytes);
        }
        let hosts: Vec<HostV1> = encoding::decode(bytes)?;
        Ok(HostListReply {
            hosts: hosts.into_iter().map(Host::from).collect(),
        })
    }
}

/// Reads the cluster settings.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SettingsGet {
    /// Read freshness.
    pub read: ReadMode,
}

/// The cluster settings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SettingsReply {
    /// The settings.
    pub settings: Settings,
}

impl Rpc for SettingsGet {
    const METHOD: &'static str = "admin.settings_get";
    type Response = SettingsReply;

    /// At v1, the settings without the HA defaults.
    fn encode_response_at(
        response: &SettingsReply,
        version: Version,
    ) -> Result<Vec<u8>, EncodingError> {
        response.encode_at(version)
    }

    fn decode_response_at(version: Version, bytes: &[u8]) -> Result<SettingsReply, EncodingError> {
        SettingsReply::decode_at(version, bytes)
    }
}

impl SettingsReply {
    fn encode_at(&self, version: Version) -> Result<Vec<u8>, EncodingError> {
        if version >= HA_DEFAULTS {
            return encoding::encode(self);
        }
        encoding::encode(&SettingsV1::shown(&self.settings))
    }

    fn decode_at(version: Version, bytes: &[u8]) -> Result<SettingsReply, EncodingError> {
        if version >= HA_DEFAULTS {
            return encoding::decode(bytes);
        }
        encoding::decode::<SettingsV1>(bytes).map(|v1| SettingsReply {
            settings: v1.into(),
        })
    }
}

/// Replaces the cluster settings (validated; the default range must exist).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SettingsPut {
    /// The new settings.
    pub settings: Settings,
}

impl Rpc for SettingsPut {
    const METHOD: &'static str = "admin.settings_put";
    type Response = SettingsReply;

    /// At v1, the v1 layout; HA defaults other than PVE's cannot be sent to a v1 member,
    /// which would apply less than was asked.
    fn encode_at(&self, version: Version) -> Result<Vec<u8>, EncodingError> {
        if version >= HA_DEFAULTS {
            return encoding::encode(self);
        }
        let v1 = SettingsV1::exact(&self.settings).ok_or_else(|| EncodingError::TooNew {
            what: "settings with HA defaults (settings.ha)".to_string(),
            needs: HA_DEFAULTS,
            reader: version,
        })?;
        encoding::encode(&v1)
    }

    fn decode_at(version: Version, bytes: &[u8]) -> Result<Self, EncodingError> {
        if version >= HA_DEFAULTS {
            return encoding::decode(bytes);
        }
        encoding::decode::<SettingsV1>(bytes).map(|v1| SettingsPut {
            settings: v1.into(),
        })
    }

    fn encode_response_at(
        response: &SettingsReply,
        version: Version,
    ) -> Result<Vec<u8>, EncodingError> {
        response.encode_at(version)
    }

    fn decode_response_at(version: Version, bytes: &[u8]) -> Result<SettingsReply, EncodingError> {
        SettingsReply::decode_at(version, bytes)
    }
}

/// The whole fleet at once (`pvefleet-lab demo`, `--output json` dumps).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FleetGet {
    /// Read freshness.
    pub read: ReadMode,
}

impl Rpc for FleetGet {
    const METHOD: &'static str = "admin.fleet_get";
    type Response = FleetView;

    /// At v1, hosts, VMs and VIPs in the v1 layout, without the fields a v1 reader cannot
    /// show.
    fn encode_response_at(
        response: &FleetView,
        version: Version,
    ) -> Result<Vec<u8>, EncodingError> {
        if version >= VIP_HOLDING {
            return encoding::encode(response);
        }
        encoding::encode(&FleetViewV1::shown(response))
    }

    fn decode_response_at(version: Version, bytes: &[u8]) -> Result<FleetView, EncodingError> {
        if version >= VIP_HOLDING {
            return encoding::decode(bytes);
        }
        encoding::decode::<FleetViewV1>(bytes).map(FleetView::from)
    }
}
