//! What every page is drawn from: one picture of the fleet, taken through the member's own
//! Admin handlers (the calls the CLI makes) and shared by every open dashboard of the member.
//! Hosts with their live usage and VIPs with their per-host health come from the leader (it
//! alone has the soft state); VMs and events from this member's applied state, which trails the
//! leader by a round trip. Without a leader the picture falls back to this member's state and
//! says so.

use std::sync::Arc;

use protocol::admin::{
    ClusterStatus, ClusterStatusReply, Events, HostList, HostStatus, HostStatusEntry, ReadMode,
    VipList, VipStatus, VipStatusEntry, VmList,
};
use protocol::fleet::{Event, Migration, Recovery, UnixMillis, VmRecord};
use std::collections::BTreeMap;
use transport::{Caller, Router};

/// Events a picture keeps (the newest; the replicated log keeps 1,000).
pub(crate) const EVENTS_KEPT: usize = 1000;

/// One picture of the fleet.
#[derive(Debug, Clone, Default)]
pub(crate) struct Snapshot {
    /// Taken when (this member's clock).
    pub(crate) taken_at: UnixMillis,
    /// The Raft view (the leader's when it answers).
    pub(crate) status: Option<ClusterStatusReply>,
    /// Hosts with usage (from the leader) or without (from this member, `hosts_live` false).
    pub(crate) hosts: Vec<HostStatusEntry>,
    /// Whether `hosts` carry the leader's live view.
    pub(crate) hosts_live: bool,
    /// Every VM record.
    pub(crate) vms: Vec<VmRecord>,
    /// Recoveries under way, by VM.
    pub(crate) recoveries: BTreeMap<String, Recovery>,
    /// Migrations under way, by VM.
    pub(crate) migrations: BTreeMap<String, Migration>,
    /// VIPs with per-host eligibility (from the leader), or their records alone.
    pub(crate) vips: Vec<VipStatusEntry>,
    /// Whether `vips` carry the leader's live view.
    pub(crate) vips_live: bool,
    /// The newest events, oldest first.
    pub(crate) events: Vec<Event>,
    /// What could not be read, for the banner.
    pub(crate) problems: Vec<String>,
}

impl Snapshot {
    /// The host with `id`, if known.
    pub(crate) fn host_name(&self, id: u64) -> String {
        self.hosts
            .iter()
            .find(|h| h.host.id == id)
            .map_or_else(|| format!("host {id}"), |h| h.host.name.clone())
    }
}

/// Takes pictures through `router` as `caller`, carrying the event tail between them.
pub(crate) struct Camera {
    router: Router,
    caller: Caller,
    events: Vec<Event>,
    last_seq: u64,
}

impl Camera {
    pub(crate) fn new(router: Router, caller: Caller) -> Camera {
        Camera {
            router,
            caller,
            events: Vec::new(),
            last_seq: 0,
        }
    }

    /// A new picture (never fails: what cannot be read is named in `problems`).
    pub(crate) async fn take(&mut self, now: UnixMillis) -> Snapshot {
        let mut s = Snapshot {
            taken_at: now,
            ..Snapshot::default()
        };
        let r = &self.router;
        let c = || self.caller.clone();
        let stale = ReadMode::Stale;
        let (vm_list, vip_status) = (VmList { read: stale }, VipStatus { name: None });
        let (status, hosts, vms, vips) = tokio::join!(
            r.call_local(c(), &ClusterStatus {}, None),
            r.call_local(c(), &HostStatus {}, None),
            r.call_local(c(), &vm_list, None),
            r.call_local(c(), &vip_status, None),
        );
        match status {
            Ok(st) => s.status = Some(st),
            Err(e) => s.problems.push(format!("cluster status: {}", e.message)),
        }
        match hosts {
            Ok(h) => {
                s.hosts = h.hosts;
                s.hosts_live = true;
            }
            Err(e) => {
                s.problems.push(format!(
                    "live host usage (from the leader): {}; showing this member's records",
                    e.message
                ));
                if let Ok(list) = r.call_local(c(), &HostList { read: stale }, None).await {
                    s.hosts = list.hosts.into_iter().map(entry_without_usage).collect();
                }
            }
        }
        match vms {
            Ok(v) => {
                s.vms = v.vms;
                s.recoveries = v.recoveries;
                s.migrations = v.migrations;
            }
            Err(e) => s.problems.push(format!("VMs: {}", e.message)),
        }
        match vips {
            Ok(v) => {
                s.vips = v.vips;
                s.vips_live = true;
            }
            Err(e) => {
                s.problems.push(format!(
                    "VIP health (from the leader): {}; showing this member's records",
                    e.message
                ));
                if let Ok(list) = r.call_local(c(), &VipList { read: stale }, None).await {
                    s.vips = list.vips.into_iter().map(entry_of_record).collect();
                }
            }
        }
        let events = Events {
            since: self.last_seq,
            limit: None,
            read: stale,
        };
        match r.call_local(c(), &events, None).await {
            Ok(reply) => {
                if reply.last_seq < self.last_seq {
                    // A restored snapshot with an older log: start over.
                    self.events.clear();
                }
                self.events.extend(reply.events);
                let excess = self.events.len().saturating_sub(EVENTS_KEPT);
                self.events.drain(..excess);
                self.last_seq = reply.last_seq;
            }
            Err(e) => s.problems.push(format!("events: {}", e.message)),
        }
        s.events = self.events.clone();
        s.hosts.sort_by(|a, b| a.host.name.cmp(&b.host.name));
        s.vms.sort_by(|a, b| a.spec.name.cmp(&b.spec.name));
        s
    }
}

fn entry_without_usage(host: protocol::fleet::Host) -> HostStatusEntry {
    HostStatusEntry {
        host,
        vm_count: 0,
        vcpus: 0,
        memory_mib: 0,
        last_seen_ms: None,
        resources: None,
    }
}

fn entry_of_record(vip: protocol::fleet::Vip) -> VipStatusEntry {
    VipStatusEntry {
        vip,
        owner_name: None,
        since: None,
        held: false,
        simulated: false,
        hosts: Vec::new(),
    }
}

/// A picture shared by the open dashboards.
pub(crate) type Shared = Arc<Snapshot>;
