//! What the overview shows (and the formatting every page shares), computed from a
//! [`Snapshot`] by pure functions (no I/O, the time passed in), so the pages' contents are
//! unit-tested without a browser. Every string here is plain text: the templates escape it.

use protocol::admin::HostStatusEntry;
use protocol::fleet::{HostState, PVE_CLUSTER_LABEL, UnixMillis, VmPhase, VmRecord};
use serde::Serialize;

use super::snapshot::Snapshot;

/// Hosts without the PVE-cluster label are grouped under this name.
const NO_CLUSTER: &str = "(no PVE cluster label)";

/// A serde enum's wire name (`running`, `fenced`...).
pub(crate) fn wire_name<T: Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(s)) => s,
        Ok(other) => other.to_string(),
        Err(_) => "?".to_string(),
    }
}

/// An instant as `2026-11-26 18:04:15 UTC`. Pages show instants, never ages: an age would
/// change the page every second; the browser turns `<time data-at>` into "12 s ago" itself.
pub(crate) fn utc(at: UnixMillis) -> String {
    let secs = i64::try_from(at / 1000).unwrap_or(i64::MAX);
    match time::OffsetDateTime::from_unix_timestamp(secs) {
        Ok(t) => format!(
            "{:04}-{:02}-{:02} {:02}:{:02}:{:02} UTC",
            t.year(),
            u8::from(t.month()),
            t.day(),
            t.hour(),
            t.minute(),
            t.second()
        ),
        Err(_) => format!("{at} ms"),
    }
}

/// How recent a renewal or heartbeat is, in steps coarse enough not to change every second.
pub(crate) fn recency(ms_ago: u64) -> &'static str {
    match ms_ago {
        0..=999 => "under 1 s ago",
        1000..=2999 => "1-3 s ago",
        3000..=9999 => "3-10 s ago",
        _ => "over 10 s ago",
    }
}

/// A percentage 0..=100 of `part` in `whole` (0 for an empty whole).
pub(crate) fn percent(part: u64, whole: u64) -> u64 {
    if whole == 0 {
        return 0;
    }
    (part.saturating_mul(100) / whole).min(100)
}

/// One item needing attention, most severe first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Attention {
    /// `crit` or `warn` (a CSS class).
    pub(crate) level: &'static str,
    /// What is wrong.
    pub(crate) text: String,
    /// Where to look.
    pub(crate) href: String,
}

/// One host tile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HostTile {
    pub(crate) name: String,
    pub(crate) href: String,
    pub(crate) state: String,
    pub(crate) reason: String,
    pub(crate) since_at: UnixMillis,
    pub(crate) since: String,
    pub(crate) cpu_text: String,
    pub(crate) cpu_pct: u64,
    pub(crate) mem_text: String,
    pub(crate) mem_pct: u64,
    pub(crate) used_text: String,
    pub(crate) guests: u32,
    pub(crate) running: usize,
    pub(crate) vips: Vec<String>,
    pub(crate) labels: String,
}

/// Hosts of one PVE cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HostGroup {
    pub(crate) name: String,
    pub(crate) tiles: Vec<HostTile>,
}

/// The overview page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Overview {
    pub(crate) cluster_id: String,
    pub(crate) leader: String,
    pub(crate) quorum: bool,
    pub(crate) term: u64,
    pub(crate) members: Vec<String>,
    pub(crate) attention: Vec<Attention>,
    pub(crate) hosts_online: usize,
    pub(crate) hosts_total: usize,
    pub(crate) vms_running: usize,
    pub(crate) vms_total: usize,
    pub(crate) vips_held: usize,
    pub(crate) vips_total: usize,
    pub(crate) groups: Vec<HostGroup>,
}

fn vm_running(vm: &VmRecord) -> bool {
    vm.status.phase == VmPhase::Running
}

pub(crate) fn host_tile(s: &Snapshot, h: &HostStatusEntry) -> HostTile {
    let host = &h.host;
    let running = s
        .vms
        .iter()
        .filter(|v| v.status.current_host == Some(host.id) && vm_running(v))
        .count();
    let vips = s
        .vips
        .iter()
        .filter(|v| v.vip.owner == Some(host.id))
        .map(|v| format!("{} {}", v.vip.spec.name, v.vip.spec.address))
        .collect();
    let used_text = match &h.resources {
        Some(r) => format!(
            "in use: memory {}%, load {:.1}",
            percent(r.memory_used_bytes, r.memory_total_bytes),
            f64::from(r.load_milli[0]) / 1000.0
        ),
        None if s.hosts_live => "no usage reported".to_string(),
        None => "usage: leader unreachable".to_string(),
    };
    let labels = host
        .effective_labels()
        .iter()
        .filter(|(k, _)| k.as_str() != PVE_CLUSTER_LABEL)
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ");
    HostTile {
        name: host.name.clone(),
        href: format!("/hosts/{}", url_part(&host.name)),
        state: host.state.as_str().to_string(),
        reason: host.state_reason.clone(),
        since_at: host.state_since,
        since: utc(host.state_since),
        cpu_text: format!("{}/{} vCPU", h.vcpus, host.capacity.cpus),
        cpu_pct: percent(h.vcpus, u64::from(host.capacity.cpus)),
        mem_text: format!(
            "{}/{} GiB",
            h.memory_mib / 1024,
            host.capacity.memory_mib / 1024
        ),
        mem_pct: percent(h.memory_mib, host.capacity.memory_mib),
        used_text,
        guests: h.vm_count,
        running,
        vips,
        labels,
    }
}

/// A path segment with everything but unreserved characters percent-encoded.
pub(crate) fn url_part(s: &str) -> String {
    const PART: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
        .remove(b'-')
        .remove(b'.')
        .remove(b'_')
        .remove(b'~');
    percent_encoding::utf8_percent_encode(s, PART).to_string()
}

/// What needs attention, most severe first.
pub(crate) fn attention(s: &Snapshot) -> Vec<Attention> {
    let mut out = Vec::new();
    let crit = |text: String, href: String| Attention {
        level: "crit",
        text,
        href,
    };
    let warn = |text: String, href: String| Attention {
        level: "warn",
        text,
        href,
    };
    match &s.status {
        Some(st) if st.leader.is_none() => out.push(crit(
            "no Raft leader: the fleet cannot change until a quorum of members is back".into(),
            "/".into(),
        )),
        None => out.push(crit(
            "this member cannot tell the cluster's status".into(),
            "/".into(),
        )),
        Some(_) => {}
    }
    for p in &s.problems {
        out.push(warn(p.clone(), "/".into()));
    }
    for h in &s.hosts {
        let host = &h.host;
        let href = format!("/hosts/{}", url_part(&host.name));
        let text = format!(
            "host {} is {}: {}",
            host.name, host.state, host.state_reason
        );
        match host.state {
            HostState::Unreachable | HostState::Fenced => out.push(crit(text, href)),
            HostState::Maintenance | HostState::Joining => out.push(warn(text, href)),
            HostState::Online | HostState::Removed => {}
        }
    }
    for vm in &s.vms {
        let href = format!("/guests/{}", url_part(&vm.spec.name));
        let name = &vm.spec.name;
        if let Some(r) = s.recoveries.get(name) {
            out.push(warn(
                format!(
                    "{name} is being recovered from {}: {}",
                    r.from_node, r.message
                ),
                href.clone(),
            ));
        }
        match vm.status.phase {
            VmPhase::Failed => {
                out.push(crit(format!("{name} failed: {}", vm.status.message), href))
            }
            VmPhase::Unknown | VmPhase::Pending if !vm.status.message.is_empty() => out.push(warn(
                format!("{name} is {}: {}", vm.status.phase, vm.status.message),
                href,
            )),
            _ => {}
        }
    }
    for v in &s.vips {
        let href = "/vips".to_string();
        let name = &v.vip.spec.name;
        if v.vip.owner.is_none() {
            out.push(crit(format!("VIP {name} has no owner"), href));
        } else if s.vips_live && !v.held && !v.simulated {
            out.push(warn(
                format!("VIP {name}: its owner has not confirmed holding it"),
                href,
            ));
        }
    }
    out.sort_by_key(|a| a.level != "crit");
    out
}

/// The overview page from `s`.
pub(crate) fn overview(s: &Snapshot) -> Overview {
    let mut groups: Vec<HostGroup> = Vec::new();
    for h in &s.hosts {
        let group = h
            .host
            .effective_labels()
            .get(PVE_CLUSTER_LABEL)
            .cloned()
            .unwrap_or_else(|| NO_CLUSTER.to_string());
        let tile = host_tile(s, h);
        match groups.iter_mut().find(|g| g.name == group) {
            Some(g) => g.tiles.push(tile),
            None => groups.push(HostGroup {
                name: group,
                tiles: vec![tile],
            }),
        }
    }
    groups.sort_by(|a, b| a.name.cmp(&b.name));
    let (leader, quorum, term, members, cluster_id) = match &s.status {
        Some(st) => (
            st.leader
                .map_or_else(|| "none".to_string(), |l| format!("coordinator {l}")),
            st.leader.is_some(),
            st.term,
            st.members
                .iter()
                .map(|m| {
                    format!(
                        "{} {} ({}{})",
                        m.id,
                        m.addr,
                        m.role,
                        if m.is_leader { ", leader" } else { "" }
                    )
                })
                .collect(),
            st.cluster_id.clone(),
        ),
        None => ("unknown".into(), false, 0, Vec::new(), String::new()),
    };
    Overview {
        cluster_id,
        leader,
        quorum,
        term,
        members,
        attention: attention(s),
        hosts_online: s
            .hosts
            .iter()
            .filter(|h| h.host.state == HostState::Online)
            .count(),
        hosts_total: s.hosts.len(),
        vms_running: s.vms.iter().filter(|v| vm_running(v)).count(),
        vms_total: s.vms.len(),
        vips_held: s.vips.iter().filter(|v| v.vip.owner.is_some()).count(),
        vips_total: s.vips.len(),
        groups,
    }
}
