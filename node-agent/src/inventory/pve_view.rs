//! The PVE node's view of the host: its status, storages with content types and free space,
//! bridges, templates and VMs with their tags. Four reads per collection; the conversions from
//! PVE's answers are pure functions.

use std::collections::BTreeSet;

use protocol::agent::{OWNERSHIP_TAG, ObservedVm, PveNodeInfo, StorageInfo, TemplateInfo};
use pve::calls::network::NetworkType;
use pve::calls::storage::StorageFilter;
use pve::types::{NetworkInterface, NodeStatus, StorageEntry, VmListEntry};

/// What PVE says about this node.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PveView {
    /// Node status.
    pub node: PveNodeInfo,
    /// Enabled storages, by id.
    pub storages: Vec<StorageInfo>,
    /// Bridges for VM NICs.
    pub bridges: BTreeSet<String>,
    /// Templates, by VMID.
    pub templates: Vec<TemplateInfo>,
    /// VMs (templates excluded), by VMID.
    pub vms: Vec<ObservedVm>,
}

/// Reads the PVE view of `node` through `client`; `uptime_secs` is the host's uptime (PVE's
/// node status does not carry it).
pub async fn read_pve(
    client: &pve::Client,
    node: &str,
    uptime_secs: u64,
) -> Result<PveView, pve::PveError> {
    let status = client.node_status(node).await?;
    let storage_filter = StorageFilter {
        enabled: Some(true),
        ..StorageFilter::default()
    };
    let storages = client.storage_list(node, &storage_filter).await?;
    let interfaces = client.network(node, Some(NetworkType::AnyBridge)).await?;
    let guests = client.vm_list(node, None).await?;
    let (templates, vms) = split_guests(&guests);
    Ok(PveView {
        node: node_info(node, &status, uptime_secs),
        storages: storage_infos(&storages),
        bridges: bridges(&interfaces),
        templates,
        vms,
    })
}

/// `pve-manager/9.1.1/abcdef` → `9.1.1`.
fn manager_version(pveversion: Option<&str>) -> String {
    let text = pveversion.unwrap_or_default();
    match text.strip_prefix("pve-manager/") {
        Some(rest) => rest.split('/').next().unwrap_or_default().to_string(),
        None => text.to_string(),
    }
}

fn node_info(node: &str, status: &NodeStatus, uptime_secs: u64) -> PveNodeInfo {
    PveNodeInfo {
        node: node.to_string(),
        version: manager_version(status.pveversion.as_deref()),
        cpus: u32::try_from(status.cpuinfo.cpus).unwrap_or(u32::MAX),
        memory_total_bytes: status.memory.total,
        memory_used_bytes: status.memory.used,
        uptime_secs,
    }
}

fn storage_infos(entries: &[StorageEntry]) -> Vec<StorageInfo> {
    let mut out: Vec<StorageInfo> = entries
        .iter()
        .filter(|s| s.enabled != Some(false) && !s.storage.is_empty())
        .map(|s| StorageInfo {
            id: s.storage.clone(),
            kind: s.kind.clone(),
            content: s.contents().into_iter().map(str::to_string).collect(),
            shared: s.shared.unwrap_or(false),
            active: s.active.unwrap_or(false),
            total_bytes: s.total.unwrap_or(0),
            available_bytes: s.avail.unwrap_or(0),
        })
        .collect();
    out.sort_by(|a, b| a.id.cmp(&b.id));
    out
}

/// Bridges that exist or may exist: one PVE marks inactive cannot take a NIC now.
fn bridges(interfaces: &[NetworkInterface]) -> BTreeSet<String> {
    interfaces
        .iter()
        .filter(|i| i.is_bridge() && i.active != Some(false))
        .map(|i| i.iface.clone())
        .collect()
}

/// PVE separates tags with `;` in answers; `,` and spaces are accepted on input.
fn split_tags(tags: Option<&str>) -> Vec<String> {
    tags.unwrap_or_default()
        .split([';', ',', ' '])
        .filter(|t| !t.is_empty())
        .map(str::to_string)
        .collect()
}

/// Whether a guest of the list carries the fleet's ownership tag.
pub fn is_owned(guest: &VmListEntry) -> bool {
    split_tags(guest.tags.as_deref())
        .iter()
        .any(|t| t == OWNERSHIP_TAG)
}

/// Templates and VMs, each sorted by VMID; a VM is owned when it carries the fleet's tag.
fn split_guests(guests: &[VmListEntry]) -> (Vec<TemplateInfo>, Vec<ObservedVm>) {
    let mut templates = Vec::new();
    let mut vms = Vec::new();
    for g in guests {
        let name = g.name.clone().unwrap_or_default();
        if g.template {
            templates.push(TemplateInfo { vmid: g.vmid, name });
            continue;
        }
        let tags = split_tags(g.tags.as_deref());
        vms.push(ObservedVm {
            vmid: g.vmid,
            name,
            owned: tags.iter().any(|t| t == OWNERSHIP_TAG),
            tags,
            status: g.status.clone(),
            lock: g.lock.clone().filter(|l| !l.is_empty()),
            cpus: g
                .cpus
                .filter(|c| c.is_finite() && *c > 0.0)
                // Saturating conversion; PVE reports whole vCPUs.
                .map_or(0, |c| c.round() as u32),
            memory_bytes: g.maxmem.unwrap_or(0),
        });
    }
    templates.sort_by_key(|t| t.vmid);
    vms.sort_by_key(|v| v.vmid);
    (templates, vms)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn guests(v: serde_json::Value) -> Vec<VmListEntry> {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn the_manager_version_is_cut_from_pveversion() {
        assert_eq!(manager_version(Some("pve-manager/9.1.1/42ab")), "9.1.1");
        assert_eq!(manager_version(Some("9.0")), "9.0");
        assert_eq!(manager_version(None), "");
    }

    #[test]
    fn ownership_follows_the_exact_fleet_tag() {
        let list = guests(json!([
            {"vmid": 101, "name": "b", "status": "stopped", "tags": "pvefleet;web"},
            {"vmid": 100, "name": "a", "status": "running", "tags": "pvefleet-old"},
            {"vmid": 102, "name": "c", "status": "stopped"},
            {"vmid": 9000, "name": "tpl", "status": "stopped", "template": 1},
            {"vmid": 103, "name": "d", "status": "running", "tags": "web,pvefleet", "cpus": 2, "maxmem": 1024, "lock": "backup"}
        ]));
        let (templates, vms) = split_guests(&list);
        assert_eq!(
            templates,
            [TemplateInfo {
                vmid: 9000,
                name: "tpl".into()
            }]
        );
        let owned: Vec<_> = vms.iter().map(|v| (v.vmid, v.owned)).collect();
        assert_eq!(
            owned,
            [(100, false), (101, true), (102, false), (103, true)]
        );
        let d = &vms[3];
        assert_eq!(
            (d.cpus, d.memory_bytes, d.lock.as_deref()),
            (2, 1024, Some("backup"))
        );
        assert_eq!(d.tags, ["web", "pvefleet"]);
    }

    #[test]
    fn disabled_storages_and_inactive_bridges_are_left_out() {
        let storages: Vec<StorageEntry> = serde_json::from_value(json!([
            {"storage": "b", "type": "dir", "content": "images,snippets", "enabled": 1, "active": 1, "avail": 5, "total": 9},
            {"storage": "a", "type": "dir", "content": "iso", "enabled": 0}
        ]))
        .unwrap();
        let got = storage_infos(&storages);
        assert_eq!(got.len(), 1);
        assert_eq!(
            got[0].content,
            BTreeSet::from(["images".into(), "snippets".into()])
        );
        let ifaces: Vec<NetworkInterface> = serde_json::from_value(json!([
            {"iface": "vmbr0", "type": "bridge", "active": 1},
            {"iface": "vmbr9", "type": "bridge", "active": 0},
            {"iface": "eno1", "type": "eth", "active": 1},
            {"iface": "ovs0", "type": "OVSBridge"}
        ]))
        .unwrap();
        assert_eq!(
            bridges(&ifaces),
            BTreeSet::from(["ovs0".into(), "vmbr0".into()])
        );
    }
}
