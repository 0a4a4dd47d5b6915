//! Rebalancing, as a plan (what `pvefleet rebalance plan` shows; nothing is moved): the moves
//! that even out the memory load of the hosts of each PVE cluster, one at a time, each the best
//! single move left, until the imbalance is under a threshold, no move improves it by the
//! minimum margin, or the move budget is spent. Every move goes through
//! [`crate::migration::target`]'s rules: the scheduler's filters and the affinity rules of
//! placement hold, and a guest that may run on one host only (`placement.hosts` with one
//! name, or a strict node affinity with one host) is never moved.
//!
//! The imbalance of a cluster is the standard deviation of its hosts' memory utilization (in
//! percent points): unlike the spread between the busiest and the idlest host, every move from
//! a busy host to an idle one lowers it, even when several hosts are equally busy. A move is
//! judged by what it would be after it. Only the few biggest guests of the busiest host are
//! weighed at each step ([`CANDIDATES`]), so a plan over thousands of guests stays quick.

use std::collections::BTreeMap;

use protocol::NodeId;
use protocol::fleet::{HostState, PVE_CLUSTER_LABEL};
use protocol::spec::HaState;

#[cfg(test)]
#[path = "rebalance_tests.rs"]
mod tests;

use crate::migration;
use crate::scheduler::HostView;
use crate::state::FleetState;
use crate::views::place_on;

/// Guests of the busiest host weighed at each step, biggest first.
pub const CANDIDATES: usize = 8;

/// When a plan stops.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RebalanceConfig {
    /// A cluster whose imbalance is at most this (percent points) is balanced.
    pub threshold_pct: f64,
    /// A move must lower the imbalance by at least this share of it, in percent (relative, as
    /// PVE's auto-rebalance `margin`: 10 is a tenth of the imbalance before the move).
    pub min_gain_pct: f64,
    /// At most this many moves in one plan.
    pub max_moves: usize,
}

impl Default for RebalanceConfig {
    fn default() -> RebalanceConfig {
        RebalanceConfig {
            threshold_pct: 5.0,
            min_gain_pct: 1.0,
            max_moves: 20,
        }
    }
}

/// Whether a move from imbalance `before` to `after` gains at least `min_gain_pct` percent of
/// `before` (PVE's auto-rebalance: `(imbalance - new) / imbalance >= margin`).
pub fn gains_enough(before: f64, after: f64, min_gain_pct: f64) -> bool {
    before > 0.0 && (before - after) / before * 100.0 >= min_gain_pct
}

/// One planned move.
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedMove {
    /// The VM.
    pub vm: String,
    /// From this host.
    pub from: String,
    /// To this host.
    pub to: String,
    /// The cluster's imbalance before the move (percent points).
    pub spread_before: f64,
    /// And after it.
    pub spread_after: f64,
}

/// The moves that would even out the load; see the module documentation.
pub fn plan(state: &FleetState, views: Vec<HostView>, cfg: &RebalanceConfig) -> Vec<PlannedMove> {
    plan_in(state, views, cfg, None)
}

/// [`plan`] for the hosts of PVE cluster `only` (every cluster: `None`).
pub fn plan_in(
    state: &FleetState,
    mut views: Vec<HostView>,
    cfg: &RebalanceConfig,
    only: Option<&str>,
) -> Vec<PlannedMove> {
    let mut moves = Vec::new();
    // VMs by host, as the plan moves them (the state does not change).
    let mut placed: BTreeMap<String, NodeId> = state
        .vms()
        .iter()
        .filter(|(_, r)| !r.deleting)
        .filter_map(|(n, r)| Some((n.clone(), r.assignment.host?)))
        .collect();
    let clusters: Vec<String> = match only {
        Some(c) => vec![c.to_string()],
        None => clusters(&views),
    };
    for cluster in clusters {
        while moves.len() < cfg.max_moves {
            let members = members(&views, &cluster);
            let before = imbalance(&views, &members);
            if members.len() < 2 || before <= cfg.threshold_pct {
                break;
            }
            // The busiest host's guests, biggest first: the moves that can help most.
            let Some(&busiest) = members
                .iter()
                .max_by(|&&a, &&b| load(&views[a]).total_cmp(&load(&views[b])))
            else {
                break;
            };
            let from_id = views[busiest].id;
            let mut guests: Vec<&str> = placed
                .iter()
                .filter(|(_, h)| **h == from_id)
                .map(|(n, _)| n.as_str())
                .collect();
            guests.sort_by_key(|n| std::cmp::Reverse(state.vm(n).map_or(0, |r| r.spec.memory_mib)));
            guests.truncate(CANDIDATES);
            // The target is chosen among the cluster's hosts only: a cheap copy to judge on.
            let scoped: Vec<HostView> = views
                .iter()
                .filter(|v| v.labels.get(PVE_CLUSTER_LABEL) == Some(&cluster))
                .cloned()
                .collect();
            let mut best: Option<(String, usize, f64)> = None;
            for name in guests {
                if !movable(state, name) {
                    continue;
                }
                let Some(rec) = state.vm(name) else { continue };
                let Ok(t) = target_from(state, &scoped, name, from_id) else {
                    continue;
                };
                let Some(to) = views.iter().position(|v| v.id == t) else {
                    continue;
                };
                let after = imbalance_after(&views, &members, busiest, to, rec.spec.memory_mib);
                if gains_enough(before, after, cfg.min_gain_pct)
                    && best.as_ref().is_none_or(|(_, _, b)| after < *b)
                {
                    best = Some((name.to_string(), to, after));
                }
            }
            let Some((name, to, after)) = best else { break };
            let Some(rec) = state.vm(&name) else { break };
            let spec = rec.spec.clone();
            let from_name = views[busiest].name.clone();
            let to_name = views[to].name.clone();
            let u = &mut views[busiest].usage;
            u.vcpus = u
                .vcpus
                .saturating_sub(u64::from(spec.cores) * u64::from(spec.sockets));
            u.memory_mib = u.memory_mib.saturating_sub(spec.memory_mib);
            u.vm_count = u.vm_count.saturating_sub(1);
            views[busiest].guests.retain(|g| g.name != name);
            place_on(&mut views[to], &spec);
            placed.insert(name.clone(), views[to].id);
            moves.push(PlannedMove {
                vm: name,
                from: from_name,
                to: to_name,
                spread_before: before,
                spread_after: after,
            });
        }
    }
    moves
}

/// The imbalance of PVE cluster `cluster` (percent points); `None` when it has fewer than two
/// online hosts, which nothing can balance.
pub fn cluster_imbalance(views: &[HostView], cluster: &str) -> Option<f64> {
    let members = members(views, cluster);
    (members.len() >= 2).then(|| imbalance(views, &members))
}

/// The PVE clusters of `views`, sorted.
pub fn clusters(views: &[HostView]) -> Vec<String> {
    let mut c: Vec<String> = views
        .iter()
        .filter_map(|v| v.labels.get(PVE_CLUSTER_LABEL).cloned())
        .collect();
    c.sort();
    c.dedup();
    c
}

/// The online hosts of `cluster`, as indexes into `views`.
fn members(views: &[HostView], cluster: &str) -> Vec<usize> {
    (0..views.len())
        .filter(|&i| {
            views[i].state == HostState::Online
                && views[i].labels.get(PVE_CLUSTER_LABEL).map(String::as_str) == Some(cluster)
        })
        .collect()
}

/// Whether rebalancing may move VM `name`: not pinned to one host, not moving or being
/// recovered already, not waiting to go back home after a maintenance, and not left to an
/// operator (HA `ignored`).
fn movable(state: &FleetState, name: &str) -> bool {
    let Some(rec) = state.vm(name) else {
        return false;
    };
    !pinned(&rec.spec)
        && rec.spec.ha.state != Some(HaState::Ignored)
        && state.migration(name).is_none()
        && state.recovery(name).is_none()
        && !state.homes().contains_key(name)
}

/// The host `name` would move to from `from`, judged on `views` as the plan has them.
fn target_from(
    state: &FleetState,
    views: &[HostView],
    name: &str,
    from: NodeId,
) -> Result<NodeId, String> {
    // `migration::target` reads the VM's host from the state; the plan may have moved it.
    let rec = state.vm(name).ok_or("gone")?;
    if rec.assignment.host != Some(from) {
        return Err("moved by the plan".into());
    }
    migration::target(state, views.to_vec(), name, None).map(|t| t.to)
}

/// A guest that may run on one host only.
fn pinned(spec: &protocol::spec::VmSpec) -> bool {
    spec.placement.hosts.len() == 1
        || spec
            .placement
            .node_affinity
            .as_ref()
            .is_some_and(|na| na.strict && na.nodes.len() == 1)
}

/// A host's memory utilization, in percent.
fn load(v: &HostView) -> f64 {
    if v.capacity.memory_mib == 0 {
        return 0.0;
    }
    v.usage.memory_mib as f64 * 100.0 / v.capacity.memory_mib as f64
}

/// The standard deviation of the utilization of `members`.
fn imbalance(views: &[HostView], members: &[usize]) -> f64 {
    std_dev(members.iter().map(|&i| load(&views[i])))
}

/// The imbalance after `mib` moved from `from` to `to`.
fn imbalance_after(views: &[HostView], members: &[usize], from: usize, to: usize, mib: u64) -> f64 {
    let share = |i: usize| mib as f64 * 100.0 / views[i].capacity.memory_mib.max(1) as f64;
    std_dev(members.iter().map(|&i| {
        let l = load(&views[i]);
        if i == from {
            l - share(i)
        } else if i == to {
            l + share(i)
        } else {
            l
        }
    }))
}

fn std_dev(values: impl Iterator<Item = f64>) -> f64 {
    let v: Vec<f64> = values.collect();
    if v.is_empty() {
        return 0.0;
    }
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    (v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n).sqrt()
}
