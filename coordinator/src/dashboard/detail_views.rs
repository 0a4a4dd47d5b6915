//! What the detail pages show (guest lists, a host, a guest, VIPs, the event log), computed
//! from a [`Snapshot`] by pure functions like the overview's (`views`). Plain text only: the
//! templates escape it.

use protocol::fleet::{Event, HostState, UnixMillis, VmPhase, VmRecord};

use super::snapshot::Snapshot;
use super::views::{HostTile, host_tile, recency, url_part, utc, wire_name};

/// Events a guest page lists.
const GUEST_HISTORY: usize = 50;

/// One guest in a list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct GuestLine {
    pub(crate) name: String,
    pub(crate) href: String,
    pub(crate) phase: String,
    pub(crate) desired: String,
    pub(crate) host: String,
    pub(crate) host_href: String,
    pub(crate) vmid: String,
    pub(crate) ips: String,
    pub(crate) size: String,
    pub(crate) note: String,
}

pub(crate) fn guest_line(s: &Snapshot, vm: &VmRecord) -> GuestLine {
    let host_id = vm.status.current_host.or(vm.assignment.host);
    let host = host_id.map(|id| s.host_name(id)).unwrap_or_default();
    let note = if let Some(m) = s.migrations.get(&vm.spec.name) {
        format!("migrating {} → {}", m.from_node, m.to_node)
    } else if let Some(r) = s.recoveries.get(&vm.spec.name) {
        format!("recovering from {}", r.from_node)
    } else {
        vm.status.message.clone()
    };
    GuestLine {
        name: vm.spec.name.clone(),
        href: format!("/guests/{}", url_part(&vm.spec.name)),
        phase: vm.status.phase.as_str().to_string(),
        desired: wire_name(&vm.spec.state),
        host_href: if host.is_empty() {
            String::new()
        } else {
            format!("/hosts/{}", url_part(&host))
        },
        host,
        vmid: vm
            .assignment
            .vmid
            .map(|v| v.to_string())
            .unwrap_or_default(),
        ips: vm
            .status
            .ips
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", "),
        size: format!(
            "{}×{} vCPU, {} MiB",
            vm.spec.sockets, vm.spec.cores, vm.spec.memory_mib
        ),
        note,
    }
}

/// One event line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct EventLine {
    pub(crate) seq: u64,
    pub(crate) at: UnixMillis,
    pub(crate) when: String,
    pub(crate) level: String,
    pub(crate) kind: String,
    pub(crate) subject: String,
    pub(crate) message: String,
}

pub(crate) fn event_line(e: &Event) -> EventLine {
    EventLine {
        seq: e.seq,
        at: e.at,
        when: utc(e.at),
        level: wire_name(&e.level),
        kind: e.kind.as_str().to_string(),
        subject: e.subject.clone(),
        message: e.message.clone(),
    }
}

/// The host page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HostPage {
    pub(crate) tile: HostTile,
    pub(crate) maintenance: bool,
    pub(crate) pve_version: String,
    pub(crate) last_seen: String,
    pub(crate) guests: Vec<GuestLine>,
    pub(crate) events: Vec<EventLine>,
}

/// The host page of `name`, if the host is known.
pub(crate) fn host_page(s: &Snapshot, name: &str) -> Option<HostPage> {
    let h = s.hosts.iter().find(|h| h.host.name == name)?;
    let id = h.host.id;
    let guests = s
        .vms
        .iter()
        .filter(|v| v.status.current_host.or(v.assignment.host) == Some(id))
        .map(|v| guest_line(s, v))
        .collect();
    let events = s
        .events
        .iter()
        .rev()
        .filter(|e| e.subject == name)
        .take(GUEST_HISTORY)
        .map(event_line)
        .collect();
    Some(HostPage {
        tile: host_tile(s, h),
        maintenance: h.host.state == HostState::Maintenance,
        pve_version: h
            .host
            .facts
            .as_ref()
            .map(|f| f.pve_version.clone())
            .unwrap_or_default(),
        last_seen: h.last_seen_ms.map_or_else(
            || "never (or not on the leader)".into(),
            |ms| recency(ms).to_string(),
        ),
        guests,
        events,
    })
}

/// The guest page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct GuestPage {
    pub(crate) line: GuestLine,
    pub(crate) description: String,
    pub(crate) tags: String,
    pub(crate) generation: u64,
    pub(crate) observed_generation: u64,
    pub(crate) ha: String,
    pub(crate) placement: String,
    pub(crate) conditions: Vec<(String, bool, String, String)>,
    pub(crate) task: String,
    pub(crate) running: bool,
    pub(crate) history: Vec<EventLine>,
}

/// The guest page of `name`, if the VM is known.
pub(crate) fn guest_page(s: &Snapshot, name: &str) -> Option<GuestPage> {
    let vm = s.vms.iter().find(|v| v.spec.name == name)?;
    let ha = &vm.spec.ha;
    let ha_text = format!(
        "state {}, max restart {}, max relocate {}, recovery {}",
        ha.state.map_or_else(|| "default".into(), |x| wire_name(&x)),
        ha.max_restart
            .map_or_else(|| "default".into(), |x| x.to_string()),
        ha.max_relocate
            .map_or_else(|| "default".into(), |x| x.to_string()),
        ha.recovery
            .map_or_else(|| "default".into(), |x| wire_name(&x)),
    );
    let task = if let Some(m) = s.migrations.get(name) {
        format!(
            "migration {} → {} ({})",
            m.from_node,
            m.to_node,
            wire_name(&m.purpose)
        )
    } else if let Some(r) = s.recoveries.get(name) {
        format!("recovery from {}: {}", r.from_node, r.message)
    } else if vm.status.observed_generation < vm.generation {
        format!(
            "converging to generation {} (observed {}): {}",
            vm.generation, vm.status.observed_generation, vm.status.message
        )
    } else {
        "none".to_string()
    };
    Some(GuestPage {
        line: guest_line(s, vm),
        description: vm.spec.description.clone(),
        tags: vm.spec.tags.join(", "),
        generation: vm.generation,
        observed_generation: vm.status.observed_generation,
        ha: ha_text,
        placement: serde_json::to_string(&vm.spec.placement).unwrap_or_default(),
        conditions: vm
            .status
            .conditions
            .iter()
            .map(|c| {
                (
                    wire_name(&c.kind),
                    c.status,
                    c.reason.clone(),
                    c.message.clone(),
                )
            })
            .collect(),
        task,
        running: vm.status.phase == VmPhase::Running,
        history: s
            .events
            .iter()
            .rev()
            .filter(|e| e.subject == name)
            .take(GUEST_HISTORY)
            .map(event_line)
            .collect(),
    })
}

/// One VIP with its per-host health.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct VipLine {
    pub(crate) name: String,
    pub(crate) address: String,
    pub(crate) owner: String,
    pub(crate) epoch: u64,
    pub(crate) held: String,
    pub(crate) since_at: Option<UnixMillis>,
    pub(crate) since: String,
    pub(crate) hosts: Vec<VipHostLine>,
}

/// One host's standing for a VIP.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct VipHostLine {
    pub(crate) host: String,
    pub(crate) priority: u32,
    pub(crate) eligible: bool,
    pub(crate) why_not: String,
    pub(crate) renewed: String,
}

pub(crate) fn vip_lines(s: &Snapshot) -> Vec<VipLine> {
    s.vips
        .iter()
        .map(|v| VipLine {
            name: v.vip.spec.name.clone(),
            address: v.vip.spec.address.clone(),
            owner: v
                .owner_name
                .clone()
                .or_else(|| v.vip.owner.map(|id| s.host_name(id)))
                .unwrap_or_else(|| "none".to_string()),
            epoch: v.vip.epoch,
            held: match (s.vips_live, v.held, v.simulated) {
                (false, _, _) => "unknown (leader unreachable)".into(),
                (true, true, true) => "held (simulated host)".into(),
                (true, true, false) => "held".into(),
                (true, false, _) => "not confirmed".into(),
            },
            since_at: v.since,
            since: v.since.map(utc).unwrap_or_default(),
            hosts: v
                .hosts
                .iter()
                .map(|h| VipHostLine {
                    host: h.host.clone(),
                    priority: h.priority,
                    eligible: h.eligible,
                    why_not: h.why_not.clone().unwrap_or_default(),
                    renewed: h
                        .renewed_ms_ago
                        .map(|ms| recency(ms).to_string())
                        .unwrap_or_default(),
                })
                .collect(),
        })
        .collect()
}

/// The event log's filters (from the query string).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct EventFilter {
    pub(crate) kind: String,
    pub(crate) level: String,
    pub(crate) subject: String,
}

/// Events matching `f`, newest first, at most `limit`.
pub(crate) fn events(s: &Snapshot, f: &EventFilter, limit: usize) -> Vec<EventLine> {
    s.events
        .iter()
        .rev()
        .filter(|e| f.kind.is_empty() || e.kind.as_str() == f.kind)
        .filter(|e| f.level.is_empty() || wire_name(&e.level) == f.level)
        .filter(|e| f.subject.is_empty() || e.subject.contains(f.subject.as_str()))
        .take(limit)
        .map(event_line)
        .collect()
}
