//! [`Host`] as encoding v1 lays it out, frozen: the record before `state_reason`. Snapshots
//! and replies written at v1 use it; a v1 reader never sees the reason.

use serde::{Deserialize, Serialize};

use super::UnixMillis;
use super::cluster::{Capacity, Host, HostFacts, HostState};
use crate::identity::NodeId;
use crate::spec::Labels;

/// A host in the v1 layout (see [`Host`] for the fields).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostV1 {
    /// The agent's node id.
    pub id: NodeId,
    /// The PVE node name.
    pub name: String,
    /// Labels.
    pub labels: Labels,
    /// Capacity.
    pub capacity: Capacity,
    /// Lifecycle state.
    pub state: HostState,
    /// When the host registered.
    pub registered_at: UnixMillis,
    /// When `state` last changed.
    pub state_since: UnixMillis,
    /// The last reported facts.
    pub facts: Option<HostFacts>,
}

impl From<HostV1> for Host {
    fn from(v1: HostV1) -> Host {
        Host {
            id: v1.id,
            name: v1.name,
            labels: v1.labels,
            capacity: v1.capacity,
            state: v1.state,
            registered_at: v1.registered_at,
            state_since: v1.state_since,
            state_reason: String::new(),
            facts: v1.facts,
            operator_labels: Labels::default(),
        }
    }
}

impl HostV1 {
    /// `host` in the v1 layout if nothing is lost (no reason recorded, no operator label),
    /// for snapshots, which must read back exactly.
    pub fn exact(host: &Host) -> Option<HostV1> {
        (host.state_reason.is_empty() && host.operator_labels.is_empty())
            .then(|| HostV1::shown(host))
    }

    /// What a v1 reader can show of `host`: everything but the reason, its labels with the
    /// operators' merged in.
    pub fn shown(host: &Host) -> HostV1 {
        HostV1 {
            id: host.id,
            name: host.name.clone(),
            labels: host.effective_labels(),
            capacity: host.capacity,
            state: host.state,
            registered_at: host.registered_at,
            state_since: host.state_since,
            facts: host.facts.clone(),
        }
    }
}
