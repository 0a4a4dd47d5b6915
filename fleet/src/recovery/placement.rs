//! Where a VM moving off a host may go: for `relocate`, the other online nodes of its PVE
//! cluster that hold its disks' storages shared; for `recreate`, online hosts outside that
//! cluster; then the scheduler, over usage that counts the VMs placed before it in the pass.

use protocol::NodeId;
use protocol::fleet::{HostState, PVE_CLUSTER_LABEL, VmRecord};
use protocol::spec::{CloneMode, RecoveryMode, VmSpec};

use crate::affinity::AffinityGroups;
use crate::scheduler::{self, HostView};
use crate::state::FleetState;
use crate::views::{place_on, take_storage};

/// The best host for `rec` off host `from` by `mode`, never one of `exclude`, its usage added
/// to `views`; or why there is none.
pub(super) fn place(
    state: &FleetState,
    rec: &VmRecord,
    from: NodeId,
    mode: RecoveryMode,
    exclude: &[NodeId],
    views: &mut [HostView],
) -> Result<(NodeId, String), String> {
    let spec = &rec.spec;
    let cluster = state
        .hosts()
        .get(&from)
        .and_then(|h| h.labels.get(PVE_CLUSTER_LABEL))
        .cloned();
    let from_name = state
        .hosts()
        .get(&from)
        .map_or_else(|| from.to_string(), |h| h.name.clone());
    let (placing, candidates) = match mode {
        RecoveryMode::Relocate => {
            let Some(cluster) = &cluster else {
                return Err(format!(
                    "relocate needs another node of the PVE cluster of {from_name}, which is a standalone node (recovery = \"recreate\" rebuilds it on any host)"
                ));
            };
            let storages = disk_storages(spec).ok_or_else(|| {
                "relocate needs every disk on shared storage, and a disk cloned from a template with no storage named lives on the template's storage: name a shared `storage` in the spec".to_string()
            })?;
            let candidates: Vec<HostView> = views
                .iter()
                .filter(|v| v.id != from && !exclude.contains(&v.id))
                .filter(|v| v.labels.get(PVE_CLUSTER_LABEL) == Some(cluster))
                .filter(|v| storages.iter().all(|s| shared_on(state, v.id, s)))
                .cloned()
                .collect();
            if candidates.is_empty() {
                return Err(format!(
                    "no other{} node of PVE cluster {cluster} has {} as shared storage",
                    if exclude.is_empty() { "" } else { " untried" },
                    storages.join(", ")
                ));
            }
            (relocated(spec), candidates)
        }
        RecoveryMode::Recreate | RecoveryMode::None => {
            // Within the fenced node's PVE cluster its configuration still holds the VMID:
            // a copy built beside it would be a second VM of the same identity once the node
            // is back.
            let candidates: Vec<HostView> = views
                .iter()
                .filter(|v| v.id != from)
                .filter(|v| {
                    cluster.is_none() || v.labels.get(PVE_CLUSTER_LABEL) != cluster.as_ref()
                })
                .cloned()
                .collect();
            if candidates.is_empty() {
                return Err(format!(
                    "recreate needs a host outside PVE cluster {}, where the VMID is still taken",
                    cluster.as_deref().unwrap_or("-")
                ));
            }
            (spec.clone(), candidates)
        }
    };
    let pending = group_pending(state, rec, &candidates, views)?;
    match scheduler::choose_with(&placing, &pending, &candidates, state.settings()) {
        Ok(decision) => {
            if let Some(view) = views.iter_mut().find(|v| v.id == decision.host_id) {
                place_on(view, spec);
                if mode == RecoveryMode::Recreate {
                    take_storage(view, spec);
                }
            }
            let eligible = decision.eligible;
            Ok((
                decision.host_id,
                format!(
                    "best of {eligible} eligible host{}",
                    if eligible == 1 { "" } else { "s" }
                ),
            ))
        }
        Err(refusal) => Err(refusal.to_string()),
    }
}

/// The members of `rec`'s affinity group that move with it (not placed, or on a host that is
/// not online and recovered too); or why it must wait: a member stays behind on a host that is
/// down, or runs on an online host this recovery cannot use (strict: the group never splits).
fn group_pending<'a>(
    state: &'a FleetState,
    rec: &VmRecord,
    candidates: &[HostView],
    views: &[HostView],
) -> Result<Vec<&'a VmSpec>, String> {
    let mut pending = Vec::new();
    for member in AffinityGroups::of(state).members(&rec.spec) {
        let Some(m) = state.vm(&member.name) else {
            continue;
        };
        let Some(host) = m.assignment.host else {
            pending.push(member);
            continue;
        };
        let host_name = views
            .iter()
            .find(|v| v.id == host)
            .map_or_else(|| host.to_string(), |v| v.name.clone());
        let online = views
            .iter()
            .any(|v| v.id == host && v.state == HostState::Online);
        if online {
            if !candidates.iter().any(|c| c.id == host) {
                return Err(format!(
                    "kept together with vm {} (placement.together_with), which runs on {host_name}, a host this recovery cannot use",
                    member.name
                ));
            }
            continue;
        }
        let fenced = state
            .hosts()
            .get(&host)
            .is_some_and(|h| h.state == HostState::Fenced);
        let policy = state.ha_policy(m);
        if fenced && policy.fences() && policy.recovery != RecoveryMode::None && !m.deleting {
            pending.push(member);
        } else {
            return Err(format!(
                "kept together with vm {} (placement.together_with), which stays on {host_name}: it is not recovered from there",
                member.name
            ));
        }
    }
    Ok(pending)
}

/// What the scheduler weighs for a relocated VM: its resources and constraints, not its disks
/// or template (they exist already, on shared storage).
fn relocated(spec: &VmSpec) -> VmSpec {
    VmSpec {
        template: None,
        disks: Vec::new(),
        ..spec.clone()
    }
}

/// The storages holding the VM's disks; `None` when one is unknown here (a linked clone, or a
/// full clone with no target storage, sits on the template's storage).
fn disk_storages(spec: &VmSpec) -> Option<Vec<String>> {
    let mut out: Vec<String> = Vec::new();
    if let Some(t) = &spec.template {
        match (&t.clone, &t.storage) {
            (CloneMode::Full, Some(s)) => out.push(s.clone()),
            _ => return None,
        }
    }
    for disk in &spec.disks {
        match &disk.storage {
            Some(s) => out.push(s.clone()),
            None if spec.template.is_some() => {}
            None => return None,
        }
    }
    out.sort();
    out.dedup();
    Some(out)
}

/// Whether host `id` reports storage `storage` as shared and active.
fn shared_on(state: &FleetState, id: NodeId, storage: &str) -> bool {
    state
        .hosts()
        .get(&id)
        .and_then(|h| h.facts.as_ref())
        .is_some_and(|f| {
            f.storages
                .iter()
                .any(|s| s.id == storage && s.shared && s.active)
        })
}
