//! The hosts as the scheduler sees them, built from the replicated state only: registration,
//! lifecycle state, the facts the agents reported (storages, bridges, templates) and the
//! resources committed by the VMs placed on each host. The leader and `vm explain` on any
//! member therefore see the same hosts.

use std::collections::BTreeMap;

use protocol::NodeId;
use protocol::fleet::HostState;
use protocol::spec::{DesiredState, VmSpec};

use crate::scheduler::{GuestView, HostUsage, HostView, StorageView, TemplateView};
use crate::state::FleetState;

/// Every host that is not removed and has reported its facts, with the usage of the VMs
/// placed on it (VMs being deleted included: they hold their resources until gone).
pub fn host_views(state: &FleetState) -> Vec<HostView> {
    views_counting(state, |_| true)
}

/// As [`host_views`], with only the VMs that are to run counted as load (every placed VM is
/// still a guest the affinity rules see): what PVE's HA manager counts when it chooses where a
/// service recovers or moves (`recompute_online_node_usage` leaves stopped services out). For
/// recovery, drains, failback and gathering; a new VM's placement still counts what stopped
/// VMs hold, so starting them later does not overcommit the host.
pub fn running_host_views(state: &FleetState) -> Vec<HostView> {
    views_counting(state, |spec| spec.state == DesiredState::Running)
}

fn views_counting(state: &FleetState, counts: impl Fn(&VmSpec) -> bool) -> Vec<HostView> {
    let mut usage: BTreeMap<NodeId, HostUsage> = BTreeMap::new();
    let mut guests: BTreeMap<NodeId, Vec<GuestView>> = BTreeMap::new();
    for rec in state.vms().values() {
        if let Some(host) = rec.assignment.host {
            let entry = usage.entry(host).or_default();
            if counts(&rec.spec) {
                add_usage(entry, &rec.spec);
            }
            guests
                .entry(host)
                .or_default()
                .push(GuestView::of(&rec.spec));
        }
    }
    state
        .hosts()
        .values()
        .filter(|h| h.state != HostState::Removed)
        .filter_map(|h| {
            let facts = h.facts.as_ref()?;
            Some(HostView {
                id: h.id,
                name: h.name.clone(),
                state: h.state,
                labels: h.effective_labels(),
                capacity: h.capacity,
                usage: usage.get(&h.id).copied().unwrap_or_default(),
                storages: facts
                    .storages
                    .iter()
                    .filter(|s| s.active)
                    .map(|s| StorageView {
                        id: s.id.clone(),
                        content: s.content.clone(),
                        free_bytes: s.available_bytes,
                    })
                    .collect(),
                bridges: facts.bridges.clone(),
                templates: facts
                    .templates
                    .iter()
                    .map(|t| TemplateView {
                        vmid: t.vmid,
                        name: t.name.clone(),
                    })
                    .collect(),
                guests: guests.remove(&h.id).unwrap_or_default(),
            })
        })
        .collect()
}

/// Places `spec` on `view` within one pass: its usage, and the guest the affinity rules see.
pub fn place_on(view: &mut HostView, spec: &VmSpec) {
    add_usage(&mut view.usage, spec);
    view.guests.push(GuestView::of(spec));
}

/// Adds what `spec` commits to a host's usage.
pub fn add_usage(usage: &mut HostUsage, spec: &VmSpec) {
    usage.vcpus += u64::from(spec.cores) * u64::from(spec.sockets);
    usage.memory_mib += spec.memory_mib;
    usage.vm_count += 1;
}

/// Takes the disks `spec` creates on named storages off the host's free space.
pub fn take_storage(view: &mut HostView, spec: &VmSpec) {
    const GIB: u64 = 1024 * 1024 * 1024;
    for disk in &spec.disks {
        let Some(id) = &disk.storage else { continue };
        if let Some(s) = view.storages.iter_mut().find(|s| s.id == *id) {
            s.free_bytes = s.free_bytes.saturating_sub(u64::from(disk.size_gib) * GIB);
        }
    }
}

#[cfg(test)]
mod tests {
    use protocol::agent::{StorageInfo, TemplateInfo};
    use protocol::fleet::{Capacity, HostFacts};

    use super::*;
    use crate::state::Command;

    #[test]
    fn views_hold_facts_and_committed_usage_of_placed_vms_only() {
        let mut state = FleetState::new();
        let mut index = 0;
        let mut run = |state: &mut FleetState, cmd: Command| {
            index += 1;
            state.apply(index, cmd).into_result().unwrap();
        };
        for (id, name) in [(5, "pve-a"), (6, "pve-b"), (7, "pve-c")] {
            run(
                &mut state,
                Command::RegisterHost {
                    id,
                    name: name.into(),
                    labels: Default::default(),
                    capacity: Capacity {
                        cpus: 8,
                        memory_mib: 16_384,
                    },
                    now: 1,
                },
            );
            run(
                &mut state,
                Command::SetHostState {
                    id,
                    state: HostState::Online,
                    now: 1,
                },
            );
        }
        let facts = HostFacts {
            storages: vec![
                StorageInfo {
                    id: "local".into(),
                    active: true,
                    available_bytes: 99,
                    ..StorageInfo::default()
                },
                StorageInfo {
                    id: "nfs".into(),
                    active: false,
                    ..StorageInfo::default()
                },
            ],
            templates: vec![TemplateInfo {
                vmid: 9000,
                name: "debian".into(),
            }],
            ..HostFacts::default()
        };
        for id in [5, 6] {
            run(
                &mut state,
                Command::SetHostFacts {
                    id,
                    facts: Box::new(facts.clone()),
                },
            );
        }
        run(
            &mut state,
            Command::SetHostState {
                id: 6,
                state: HostState::Removed,
                now: 2,
            },
        );
        let mut spec = VmSpec::new("web", 2048);
        spec.cores = 2;
        spec.sockets = 2;
        run(&mut state, Command::apply_vm(spec, 3));
        run(
            &mut state,
            Command::apply_vm(VmSpec::new("unplaced", 512), 3),
        );
        run(
            &mut state,
            Command::ScheduleVm {
                name: "web".into(),
                host: Some(5),
                expected: None,
                now: 4,
            },
        );

        let views = host_views(&state);
        // pve-b is removed, pve-c never reported facts.
        assert_eq!(views.len(), 1);
        let a = &views[0];
        assert_eq!(a.name, "pve-a");
        assert_eq!(
            a.usage,
            HostUsage {
                vcpus: 4,
                memory_mib: 2048,
                vm_count: 1
            }
        );
        let storages: Vec<_> = a.storages.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(storages, ["local"], "inactive storages are left out");
        assert_eq!(a.templates[0].vmid, 9000);
    }
}
