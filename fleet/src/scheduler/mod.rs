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
//!
//! A placement is linear in the hosts (the sort of the scored ones aside) and builds every
//! host's verdict: what the VM asks is worked out once, not per host (`filters`' host
//! filters), the scores are computed a criterion at a time over all hosts (`topsis`), and the
//! verdicts are built in their final order (`order`). [`choose_with`] decides the same without
//! the verdicts (no sort, no copy of every host's name): the reconciler and recovery use it.

mod explain;
mod filters;
mod inputs;
mod node_affinity;
mod order;
mod rules;
mod spread;
mod topsis;

#[cfg(test)]
mod sequence_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod topsis_reference_tests;

use std::collections::BTreeMap;

use protocol::fleet::{HostState, Settings};
use protocol::identity::NodeId;
use protocol::spec::VmSpec;

pub use explain::{HostVerdict, Verdict};
pub use filters::FilterName;
pub use inputs::{GuestView, HostUsage, HostView, StorageView, TemplateView};

use filters::{Exclusion, HostFilters};
use order::SortedHosts;

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
    // Every host gets one verdict. Allocated before the scratch vectors of `assess`, so that it
    // lies beneath them: freed by the caller, it then does not join them at the top of the
    // heap, which glibc would hand back to the kernel at once and fault in again on the next
    // placement (15 page faults a placement in the placement benchmark otherwise).
    let mut verdicts = Vec::with_capacity(hosts.len());
    let Assessment {
        sorted,
        excluded,
        preferred_excluded,
        mut scored,
        scores,
    } = assess(vm, pending, hosts, settings);
    order::sort_scored(&mut scored, &scores);

    let excluded = order::merge_excluded(&sorted, excluded, preferred_excluded);
    for s in scored {
        let host = sorted.hosts[s.host];
        let [avg_cpu, max_cpu, avg_mem, max_mem] = scores.row(s.row);
        verdicts.push(HostVerdict {
            host_id: host.id,
            host_name: host.name.clone(),
            verdict: Verdict::Scored {
                avg_cpu,
                max_cpu,
                avg_mem,
                max_mem,
                closeness: scores.closeness(s.row),
            },
        });
    }
    for (i, (filter, detail)) in excluded {
        let host = sorted.hosts[i];
        verdicts.push(HostVerdict {
            host_id: host.id,
            host_name: host.name.clone(),
            verdict: Verdict::Excluded { filter, detail },
        });
    }
    verdicts
}

/// Where a VM goes, without the explanation ([`choose_with`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Choice {
    /// The chosen host's node id.
    pub host_id: NodeId,
    /// The chosen host's PVE node name.
    pub host_name: String,
    /// How many hosts were eligible (scored), the chosen one included.
    pub eligible: usize,
}

/// The host [`place_with`] would choose, without building every host's verdict: what the
/// reconciler and recovery place with (they need the host, not the explanation), about a third
/// of the cost at a thousand hosts. Only a refusal is explained, from [`explain_with`].
pub fn choose_with(
    vm: &VmSpec,
    pending: &[&VmSpec],
    hosts: &[HostView],
    settings: &Settings,
) -> Result<Choice, NoEligibleHost> {
    let chosen = {
        let assessment = assess(vm, pending, hosts, settings);
        order::best_scored(&assessment.scored, &assessment.scores).map(|best| {
            let host = assessment.sorted.hosts[best.host];
            Choice {
                host_id: host.id,
                host_name: host.name.clone(),
                eligible: assessment.scored.len(),
            }
        })
    };
    chosen.ok_or_else(|| NoEligibleHost {
        vm: vm.name.clone(),
        verdicts: explain_with(vm, pending, hosts, settings),
    })
}

/// What the filters, the rules and TOPSIS made of every host, before any explanation.
struct Assessment<'a> {
    /// The hosts by (name, id); positions below index it.
    sorted: SortedHosts<'a>,
    /// Hosts the filters and rules excluded, in the hosts' order.
    excluded: Vec<(usize, Exclusion)>,
    /// Eligible hosts node affinity or spreading then excluded, in the hosts' order.
    preferred_excluded: Vec<(usize, Exclusion)>,
    /// The hosts that may take the VM, in the hosts' order (not by score).
    scored: Vec<order::Scored>,
    /// TOPSIS over every online host.
    scores: topsis::Scores,
}

fn assess<'a>(
    vm: &VmSpec,
    pending: &[&VmSpec],
    hosts: &'a [HostView],
    settings: &Settings,
) -> Assessment<'a> {
    let sorted = SortedHosts::of(hosts);
    let mut filters = HostFilters::new(vm, settings);
    let partners = rules::partners(vm, pending, &sorted.hosts);

    // PVE scores against every online node (its averages and ideals are over all of them);
    // the filters then decide which of those may take the VM. Hosts are named by their
    // position in `sorted` from here on.
    let mut excluded: Vec<(usize, Exclusion)> = Vec::new();
    let mut counted: Vec<(usize, bool)> = Vec::with_capacity(sorted.hosts.len());
    for (i, &host) in sorted.hosts.iter().enumerate() {
        // The host's own constraints, then the affinity rules, then the resources.
        let exclusion = filters
            .constraint_exclusion(host)
            .or_else(|| rules::exclusion(vm, host, &partners))
            .or_else(|| filters.resource_exclusion(host));
        if host.state == HostState::Online {
            counted.push((i, exclusion.is_none()));
        }
        if let Some(exclusion) = exclusion {
            excluded.push((i, exclusion));
        }
    }

    let cpu_add = filters::vm_vcpus(vm) as f64;
    let scores = topsis::scores(&counted, |&(i, _)| {
        let host = sorted.hosts[i];
        topsis::Utilization {
            cpu_used: host.usage.vcpus as f64,
            cpu_add,
            cpu_total: f64::from(host.capacity.cpus),
            mem_used: host.usage.memory_mib as f64,
            mem_add: vm.memory_mib as f64,
            mem_total: host.capacity.memory_mib as f64,
        }
    });

    let preferred_out = preferences(vm, &sorted, &counted);
    let mut scored = Vec::with_capacity(counted.len());
    let mut preferred_excluded = Vec::new();
    for (k, &(i, eligible)) in counted.iter().enumerate() {
        if !eligible {
            continue;
        }
        if let Some(exclusion) = preferred_out.get(&sorted.hosts[i].id) {
            preferred_excluded.push((i, exclusion.clone()));
            continue;
        }
        scored.push(order::Scored { host: i, row: k });
    }
    Assessment {
        sorted,
        excluded,
        preferred_excluded,
        scored,
        scores,
    }
}

/// The eligible hosts node affinity, then spreading, exclude, by host id (the first reason
/// given for an id wins). Spreading weighs only the hosts node affinity leaves.
fn preferences(
    vm: &VmSpec,
    sorted: &SortedHosts<'_>,
    counted: &[(usize, bool)],
) -> BTreeMap<NodeId, Exclusion> {
    let mut out = BTreeMap::new();
    if vm.placement.node_affinity.is_none() && vm.spread_group().is_none() {
        return out;
    }
    let eligible: Vec<&HostView> = counted
        .iter()
        .filter(|(_, eligible)| *eligible)
        .map(|&(i, _)| sorted.hosts[i])
        .collect();
    for (id, exclusion) in node_affinity::exclusions(vm, &eligible) {
        out.entry(id).or_insert(exclusion);
    }
    let preferred: Vec<&HostView> = eligible
        .iter()
        .filter(|h| !out.contains_key(&h.id))
        .copied()
        .collect();
    for (id, exclusion) in spread::exclusions(vm, &preferred) {
        out.entry(id).or_insert(exclusion);
    }
    out
}
