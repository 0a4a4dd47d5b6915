//! Placement of a VM on a host, as pure functions of the VM spec, a snapshot of the hosts and
//! the cluster settings: hard filters, and TOPSIS scored exactly as PVE's static scheduler
//! scores nodes (over every online host, as PVE counts every online node); the best scored
//! host the filters let through takes the VM. The filters (capacity with overcommit, storages,
//! bridges, templates, labels) are the fleet's own: PVE's static mode has none.
//!
//! ```text
//!  hosts ──sort by (name, id)──▶ online ──▶ topsis (all online) ──▶ closeness per host
//!                 └──▶ filters ──eligible──▶ node affinity, spread ──▶ best closeness, then name, id
//!                         └──excluded (filter, detail)──▶ explanation
//! ```
//!
//! Hosts are sorted before anything else so that the floating-point sums, and thus the choice,
//! do not depend on the order the caller lists them in.

mod explain;
mod filters;
mod inputs;
mod node_affinity;
mod rules;
mod spread;
mod topsis;

#[cfg(test)]
mod tests;

use protocol::fleet::{HostState, Settings};
use protocol::identity::NodeId;
use protocol::spec::VmSpec;

pub use explain::{HostVerdict, Verdict};
pub use filters::FilterName;
pub use inputs::{GuestView, HostUsage, HostView, StorageView, TemplateView};

/// Where a VM goes, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    /// The chosen host's node id.
    pub host_id: NodeId,
    /// The chosen host's PVE node name.
    pub host_name: String,
    /// Every host's verdict, the chosen one first (as [`explain`] returns them).
    pub verdicts: Vec<HostVerdict>,
}

/// No host passed the hard filters.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("no eligible host for VM {vm}: {}", summary(.verdicts))]
pub struct NoEligibleHost {
    /// The VM's name.
    pub vm: String,
    /// Every host's verdict (all excluded).
    pub verdicts: Vec<HostVerdict>,
}

fn summary(verdicts: &[HostVerdict]) -> String {
    if verdicts.is_empty() {
        return "no hosts registered".to_string();
    }
    verdicts
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

/// Chooses the host for `vm`: the eligible host with the highest TOPSIS closeness, ties broken
/// by host name, then id.
pub fn place(
    vm: &VmSpec,
    hosts: &[HostView],
    settings: &Settings,
) -> Result<Decision, NoEligibleHost> {
    place_with(vm, &[], hosts, settings)
}

/// [`place`] for a VM whose affinity group has members `pending` placement with it (not placed
/// yet, or recovered in the same pass): the host must suit them too, so the group lands on one
/// host whatever order its members are placed in.
pub fn place_with(
    vm: &VmSpec,
    pending: &[&VmSpec],
    hosts: &[HostView],
    settings: &Settings,
) -> Result<Decision, NoEligibleHost> {
    let verdicts = explain_with(vm, pending, hosts, settings);
    match verdicts.first() {
        Some(best) if best.closeness().is_some() => Ok(Decision {
            host_id: best.host_id,
            host_name: best.host_name.clone(),
            verdicts,
        }),
        _ => Err(NoEligibleHost {
            vm: vm.name.clone(),
            verdicts,
        }),
    }
}

/// Every host's verdict for `vm`: eligible hosts best first, then excluded hosts by name.
pub fn explain(vm: &VmSpec, hosts: &[HostView], settings: &Settings) -> Vec<HostVerdict> {
    explain_with(vm, &[], hosts, settings)
}

/// [`explain`] with the group members `pending` placement with the VM ([`place_with`]).
pub fn explain_with(
    vm: &VmSpec,
    pending: &[&VmSpec],
    hosts: &[HostView],
    settings: &Settings,
) -> Vec<HostVerdict> {
    let mut sorted: Vec<&HostView> = hosts.iter().collect();
    sorted.sort_by(|a, b| a.name.cmp(&b.name).then(a.id.cmp(&b.id)));

    let mut verdicts = Vec::with_capacity(sorted.len());
    // PVE scores against every online node (its averages and ideals are over all of them);
    // the filters then decide which of those may take the VM.
    let mut counted = Vec::new();
    let partners = rules::partners(vm, pending, &sorted);
    for host in sorted {
        // The host's own constraints, then the affinity rules, then the resources.
        let exclusion = filters::constraint_exclusion(vm, host, settings)
            .or_else(|| rules::exclusion(vm, host, &partners))
            .or_else(|| filters::resource_exclusion(vm, host, settings));
        if host.state == HostState::Online {
            counted.push((host, exclusion.is_none()));
        }
        if let Some((filter, detail)) = exclusion {
            verdicts.push(HostVerdict {
                host_id: host.id,
                host_name: host.name.clone(),
                verdict: Verdict::Excluded { filter, detail },
            });
        }
    }

    let utilization: Vec<topsis::Utilization> = counted
        .iter()
        .map(|(host, _)| topsis::Utilization {
            cpu_used: host.usage.vcpus as f64,
            cpu_add: filters::vm_vcpus(vm) as f64,
            cpu_total: f64::from(host.capacity.cpus),
            mem_used: host.usage.memory_mib as f64,
            mem_add: vm.memory_mib as f64,
            mem_total: host.capacity.memory_mib as f64,
        })
        .collect();
    let matrix = topsis::criteria_all(&utilization);
    let scores = topsis::closeness(&matrix);
    let eligible_hosts: Vec<&HostView> = counted
        .iter()
        .filter(|(_, eligible)| *eligible)
        .map(|(h, _)| *h)
        .collect();
    let mut preferred_out = node_affinity::exclusions(vm, &eligible_hosts);
    // Spreading a group weighs only the hosts its node affinity leaves.
    let preferred: Vec<&HostView> = eligible_hosts
        .iter()
        .filter(|h| preferred_out.iter().all(|(id, _)| *id != h.id))
        .copied()
        .collect();
    preferred_out.extend(spread::exclusions(vm, &preferred));
    for (((host, eligible), row), closeness) in counted.iter().zip(&matrix).zip(scores) {
        if !eligible {
            continue;
        }
        if let Some((_, (filter, detail))) = preferred_out.iter().find(|(id, _)| *id == host.id) {
            verdicts.push(HostVerdict {
                host_id: host.id,
                host_name: host.name.clone(),
                verdict: Verdict::Excluded {
                    filter: *filter,
                    detail: detail.clone(),
                },
            });
            continue;
        }
        let [avg_cpu, max_cpu, avg_mem, max_mem] = *row;
        verdicts.push(HostVerdict {
            host_id: host.id,
            host_name: host.name.clone(),
            verdict: Verdict::Scored {
                avg_cpu,
                max_cpu,
                avg_mem,
                max_mem,
                closeness,
            },
        });
    }
    verdicts.sort_by(explain::rank);
    verdicts
}
