//! The fleet state machine: all replicated state ([`FleetState`]), the commands that change it
//! ([`Command`]) and their replies, applied in Raft log order by every member.
//!
//! ```text
//!  admin / controllers ──Command──▶ encode_command ──▶ Raft log ──▶ FleetState::apply ──▶ CommandReply
//!                                                                   │
//!                                       snapshots: encode_snapshot ◀┘ (version + bincode)
//! ```
//!
//! `apply` is deterministic: no clock (times come inside commands), no randomness, no I/O, and
//! only ordered maps, so every member computes the same state and the same replies. VMIDs and
//! addresses are allocated here, which makes them unique however many members propose at once.

mod admins;
mod apply;
mod audit;
mod batch;
mod cluster_versions;
mod codec;
mod command;
mod dashboard_logins;
mod events;
mod fleet_apply;
mod hosts;
mod ips;
mod leaving;
mod migrations;
mod recoveries;
pub mod request_memory;
mod requests;
mod snapshot_v1;
mod start_failures;
mod tokens;
mod versions;
mod vips;
mod vmids;
mod vms;

#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet};

use protocol::NodeId;
use protocol::fleet::{
    AdminRecord, Event, FleetView, Host, IpPool, Member, Settings, StoredToken, Vip, VmRecord,
    VmidRange,
};
use protocol::spec::HaPolicy;
use serde::{Deserialize, Serialize};

pub use cluster_versions::ClusterVersions;
pub use codec::{
    CodecError, decode_command, decode_reply, decode_snapshot, encode_command, encode_reply,
    encode_snapshot,
};
pub use command::{Command, CommandReply, StateError};
pub use events::EVENT_LOG_CAPACITY;
pub use versions::next_cluster_version;

use events::EventLog;

/// Everything the coordinators replicate. Changed only through [`FleetState::apply`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FleetState {
    /// Index of the last log entry applied (`None` before the first).
    last_applied: Option<u64>,
    settings: Settings,
    members: BTreeMap<NodeId, Member>,
    hosts: BTreeMap<NodeId, Host>,
    /// Ids of removed members and hosts: their certificates are refused, the ids never reused.
    revoked_nodes: BTreeSet<NodeId>,
    /// The next id handed to a joining node (ids only grow).
    next_node_id: NodeId,
    vms: BTreeMap<String, VmRecord>,
    vmid_ranges: BTreeMap<String, VmidRange>,
    ip_pools: BTreeMap<String, IpPool>,
    vips: BTreeMap<String, Vip>,
    tokens: BTreeMap<String, StoredToken>,
    events: EventLog,
    /// The cluster version and each member's build.
    versions: ClusterVersions,
    // Encoding v2 from here (the v1 snapshot layout ends above: `snapshot_v1`).
    /// Operator identities, by admin id.
    admins: BTreeMap<NodeId, AdminRecord>,
    /// The next admin id handed out (ids only grow).
    next_admin_id: NodeId,
    /// How far past its first expiry an admin certificate may be renewed (ms).
    admin_renewal_ms: u64,
    recoveries: BTreeMap<String, protocol::fleet::Recovery>,
    start_failures: BTreeMap<String, protocol::fleet::StartFailures>,
    migrations: BTreeMap<String, protocol::fleet::Migration>,
    /// The host each VM drained for a maintenance goes back to.
    homes: BTreeMap<String, NodeId>,
    /// When each VM's last drain failed (retried after a pause).
    drain_failed_at: BTreeMap<String, protocol::fleet::UnixMillis>,
    /// Hosts whose agent left cleanly (the shutdown policy), until their hold has passed.
    leaving: BTreeMap<NodeId, protocol::fleet::Leaving>,
    /// The replies to clients' requests, so a retried write applies once.
    requests: request_memory::Requests,
    /// One-time dashboard login links, by id (hashes only).
    dashboard_logins: BTreeMap<String, protocol::fleet::DashboardLogin>,
}

impl FleetState {
    /// An empty fleet.
    pub fn new() -> FleetState {
        FleetState::default()
    }

    /// Index of the last log entry applied.
    pub fn last_applied(&self) -> Option<u64> {
        self.last_applied
    }

    /// The cluster settings.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// `vm`'s HA settings in force: its spec's, with the fleet's defaults for what it leaves
    /// out.
    pub fn ha_policy(&self, vm: &VmRecord) -> HaPolicy {
        vm.spec.ha.policy(&self.settings.ha)
    }

    /// Recorded coordinator members, by id.
    pub fn members(&self) -> &BTreeMap<NodeId, Member> {
        &self.members
    }

    /// Hosts, by id.
    pub fn hosts(&self) -> &BTreeMap<NodeId, Host> {
        &self.hosts
    }

    /// The host with this PVE node name (removed hosts excluded).
    pub fn host_by_name(&self, name: &str) -> Option<&Host> {
        self.hosts.values().find(|h| {
            h.name.eq_ignore_ascii_case(name) && h.state != protocol::fleet::HostState::Removed
        })
    }

    /// Whether `id` belonged to a removed member or host: its certificate must be refused.
    pub fn is_node_revoked(&self, id: NodeId) -> bool {
        self.revoked_nodes.contains(&id)
    }

    /// VMs, by name.
    pub fn vms(&self) -> &BTreeMap<String, VmRecord> {
        &self.vms
    }

    /// One VM.
    pub fn vm(&self, name: &str) -> Option<&VmRecord> {
        self.vms.get(name)
    }

    /// VMID ranges, by name.
    pub fn vmid_ranges(&self) -> &BTreeMap<String, VmidRange> {
        &self.vmid_ranges
    }

    /// IP pools, by name.
    pub fn ip_pools(&self) -> &BTreeMap<String, IpPool> {
        &self.ip_pools
    }

    /// VIPs, by name.
    pub fn vips(&self) -> &BTreeMap<String, Vip> {
        &self.vips
    }

    /// Join token records, by id.
    pub fn tokens(&self) -> &BTreeMap<String, StoredToken> {
        &self.tokens
    }

    /// Events with `seq > since`, oldest first, at most `limit`.
    pub fn events_after(&self, since: u64, limit: Option<usize>) -> Vec<Event> {
        self.events.after(since, limit)
    }

    /// The oldest kept event's sequence number (0 when none).
    pub fn first_event_seq(&self) -> u64 {
        self.events.first_seq()
    }

    /// The newest event's sequence number (0 before the first event).
    pub fn last_event_seq(&self) -> u64 {
        self.events.last_seq()
    }

    /// Everything as lists, tokens without hashes.
    pub fn view(&self) -> FleetView {
        FleetView {
            settings: self.settings.clone(),
            members: self.members.values().cloned().collect(),
            hosts: self.hosts.values().cloned().collect(),
            vms: self.vms.values().cloned().collect(),
            ip_pools: self.ip_pools.values().cloned().collect(),
            vmid_ranges: self.vmid_ranges.values().cloned().collect(),
            vips: self.vips.values().cloned().collect(),
            tokens: self.tokens.values().map(StoredToken::view).collect(),
            last_event_seq: self.events.last_seq(),
        }
    }
}
