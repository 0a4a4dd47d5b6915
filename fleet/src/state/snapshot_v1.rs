//! The snapshot layout of encoding v1, frozen: [`FleetState`] as the first versioned release
//! wrote it, i.e. without the fields v2 appended (operator identities). A v2 member writes this
//! layout while the cluster version is still v1, so that a v1 member can install its
//! snapshots, and reads it back from snapshots a v1 member wrote.
//!
//! Writing v1 drops the v2 fields: they are empty then, because every command that fills them
//! is refused until the cluster version is v2 (and the cluster version never goes down).
//! The layout is what v1 builds read: never change it. (v2 changed `Vip`, `Host` and the VM
//! spec and the settings, so their v1 layouts are named here as `VipV1`, `HostV1`,
//! `VmRecordV1` and `SettingsV1`: the same bytes.)

use std::collections::{BTreeMap, BTreeSet};

use protocol::NodeId;
use protocol::fleet::{
    Host, HostV1, IpPool, Member, SettingsV1, StoredToken, Vip, VmRecord, VmRecordV1, VmidRange,
};
use protocol::spec::VipV1;
use serde::{Deserialize, Serialize};

use super::FleetState;
use super::cluster_versions::ClusterVersions;
use super::events::EventLog;

/// The v1 fields, borrowed, in the v1 order.
#[derive(Serialize)]
struct Borrowed<'a> {
    last_applied: &'a Option<u64>,
    settings: SettingsV1,
    members: &'a BTreeMap<NodeId, Member>,
    hosts: BTreeMap<&'a NodeId, HostV1>,
    revoked_nodes: &'a BTreeSet<NodeId>,
    next_node_id: &'a NodeId,
    vms: BTreeMap<&'a String, VmRecordV1>,
    vmid_ranges: &'a BTreeMap<String, VmidRange>,
    ip_pools: &'a BTreeMap<String, IpPool>,
    vips: BTreeMap<&'a String, VipV1>,
    tokens: &'a BTreeMap<String, StoredToken>,
    events: &'a EventLog,
    versions: &'a ClusterVersions,
}

/// The v1 fields, owned, in the v1 order.
#[derive(Deserialize)]
struct Owned {
    last_applied: Option<u64>,
    settings: SettingsV1,
    members: BTreeMap<NodeId, Member>,
    hosts: BTreeMap<NodeId, HostV1>,
    revoked_nodes: BTreeSet<NodeId>,
    next_node_id: NodeId,
    vms: BTreeMap<String, VmRecordV1>,
    vmid_ranges: BTreeMap<String, VmidRange>,
    ip_pools: BTreeMap<String, IpPool>,
    vips: BTreeMap<String, VipV1>,
    tokens: BTreeMap<String, StoredToken>,
    events: EventLog,
    versions: ClusterVersions,
}

/// `state` in the v1 layout (a serde value for the codec to encode); `None` if a VIP, a host, a
/// VM or the settings use a field v1 cannot carry (never the case at cluster version v1, where only v1
/// commands apply).
pub(super) fn v1_view(state: &FleetState) -> Option<impl Serialize + '_> {
    if !state.recoveries.is_empty()
        || !state.start_failures.is_empty()
        || !state.migrations.is_empty()
        || !state.homes.is_empty()
        || !state.drain_failed_at.is_empty()
        || !state.leaving.is_empty()
        || !state.requests.is_empty()
    {
        return None;
    }
    let vms = state
        .vms
        .iter()
        .map(|(name, vm)| Some((name, VmRecordV1::exact(vm)?)))
        .collect::<Option<BTreeMap<_, _>>>()?;
    let hosts = state
        .hosts
        .iter()
        .map(|(id, host)| Some((id, HostV1::exact(host)?)))
        .collect::<Option<BTreeMap<_, _>>>()?;
    let vips = state
        .vips
        .iter()
        .map(|(name, vip)| Some((name, VipV1::exact(vip)?)))
        .collect::<Option<BTreeMap<_, _>>>()?;
    Some(Borrowed {
        last_applied: &state.last_applied,
        settings: SettingsV1::exact(&state.settings)?,
        members: &state.members,
        hosts,
        revoked_nodes: &state.revoked_nodes,
        next_node_id: &state.next_node_id,
        vms,
        vmid_ranges: &state.vmid_ranges,
        ip_pools: &state.ip_pools,
        vips,
        tokens: &state.tokens,
        events: &state.events,
        versions: &state.versions,
    })
}

/// The v1 layout, decoded.
#[derive(Deserialize)]
#[serde(transparent)]
pub(super) struct SnapshotV1(Owned);

impl From<SnapshotV1> for FleetState {
    fn from(SnapshotV1(v1): SnapshotV1) -> FleetState {
        FleetState {
            last_applied: v1.last_applied,
            settings: v1.settings.into(),
            members: v1.members,
            hosts: v1
                .hosts
                .into_iter()
                .map(|(id, host)| (id, Host::from(host)))
                .collect(),
            revoked_nodes: v1.revoked_nodes,
            next_node_id: v1.next_node_id,
            vms: v1
                .vms
                .into_iter()
                .map(|(name, vm)| (name, VmRecord::from(vm)))
                .collect(),
            vmid_ranges: v1.vmid_ranges,
            ip_pools: v1.ip_pools,
            vips: v1
                .vips
                .into_iter()
                .map(|(name, vip)| (name, Vip::from(vip)))
                .collect(),
            tokens: v1.tokens,
            events: v1.events,
            versions: v1.versions,
            // v2: nothing recorded yet.
            admins: BTreeMap::new(),
            next_admin_id: 0,
            admin_renewal_ms: 0,
            recoveries: BTreeMap::new(),
            start_failures: BTreeMap::new(),
            migrations: BTreeMap::new(),
            homes: BTreeMap::new(),
            leaving: BTreeMap::new(),
            drain_failed_at: BTreeMap::new(),
            requests: Default::default(),
            dashboard_logins: BTreeMap::new(),
        }
    }
}
