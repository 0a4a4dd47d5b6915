//! Where an operator's `vm migrate` sends a VM, as a pure function of the state and the hosts:
//! another online host that passes every filter and rule of the scheduler (a migration never
//! breaks what placement would refuse), the one named, or the scheduler's best — a node of its
//! own PVE cluster first, another cluster or standalone node only when none can take it (then
//! a remote migration, or a rebuild for a `recovery = recreate` VM, see [`MoveKind`]); with
//! [`group_target`], the VM's affinity group moves with it, as one. The move itself is the state machine's record ([`crate::state::Command::StartMigration`])
//! and the source agent's work.

use protocol::NodeId;
use protocol::fleet::{MoveKind, PVE_CLUSTER_LABEL, VmRecord};
use protocol::spec::{RecoveryMode, VmSpec};

use crate::affinity::AffinityGroups;
use crate::remote_move;
use crate::scheduler::{self, FilterName, HostView, Verdict};
use crate::state::FleetState;

#[cfg(test)]
#[path = "migration_tests.rs"]
mod tests;

/// The host a VM moves to.
#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    /// The host it leaves.
    pub from: NodeId,
    /// Its name.
    pub from_name: String,
    /// The host it goes to.
    pub to: NodeId,
    /// Its name.
    pub to_name: String,
    /// How it moves (within its PVE cluster, remote migration, or rebuilt).
    pub kind: MoveKind,
    /// Why that one, when the scheduler chose (`best of 2 eligible hosts (...)`); when named,
    /// empty within the PVE cluster, else how it moves.
    pub chosen: String,
    /// Every candidate host's verdict as the move was judged (`vm migrate --dry-run`).
    pub verdicts: Vec<scheduler::HostVerdict>,
}

/// Where VM `name` may move: `to` (a host name) if it qualifies, else the best host of its
/// PVE cluster; or why not, in words an operator can act on. `views` are the hosts as the
/// scheduler sees them.
pub fn target(
    state: &FleetState,
    views: Vec<HostView>,
    name: &str,
    to: Option<&str>,
) -> Result<Target, String> {
    target_with(state, views, name, to, &[])
}

/// Where VM `name` and the rest of its affinity group (`together_with`, overlapping rules)
/// move as one: the members on its host that are idle (not moving, not being recovered) ride
/// with it, judged as placed with it ([`scheduler::explain_with`]): the target must take all of
/// them and suit every rule of each. The riders' names come with the target (none when the VM
/// has no group, or when its group is split or busy: then it is judged alone, and its own
/// affinity rule says why it cannot leave its partners).
pub fn group_target(
    state: &FleetState,
    views: Vec<HostView>,
    name: &str,
    to: Option<&str>,
) -> Result<(Target, Vec<String>), String> {
    let rec = state
        .vm(name)
        .ok_or_else(|| format!("no VM named {name:?}"))?;
    let groups = AffinityGroups::of(state);
    let others = groups.members(&rec.spec);
    let idle_beside = |spec: &VmSpec| {
        state.vm(&spec.name).is_some_and(|r| {
            r.assignment.host == rec.assignment.host
                && r.assignment.vmid.is_some()
                && !r.deleting
                && state.migration(&spec.name).is_none()
                && state.recovery(&spec.name).is_none()
        })
    };
    if others.is_empty() || !others.iter().all(|s| idle_beside(s)) {
        return target(state, views, name, to).map(|t| (t, Vec::new()));
    }
    let mut riders: Vec<String> = others.iter().map(|s| s.name.clone()).collect();
    riders.sort();
    let t = target_with(state, views, name, to, &others)?;
    Ok((t, riders))
}

/// Where VM `name` moves to join its affinity group on host `to` ([`crate::gather`]), with
/// `riders`, the members on its host that move with it: the target must take all of them.
pub fn gather_target(
    state: &FleetState,
    views: Vec<HostView>,
    name: &str,
    to: &str,
    riders: &[&VmSpec],
) -> Result<Target, String> {
    target_with(state, views, name, Some(to), riders)
}

fn target_with(
    state: &FleetState,
    views: Vec<HostView>,
    name: &str,
    to: Option<&str>,
    riders: &[&VmSpec],
) -> Result<Target, String> {
    let rec = state
        .vm(name)
        .ok_or_else(|| format!("no VM named {name:?}"))?;
    let from = rec
        .assignment
        .host
        .ok_or_else(|| format!("VM {name} is not placed on a host yet"))?;
    let from_host = state
        .hosts()
        .get(&from)
        .ok_or_else(|| format!("VM {name}'s host {from} is not registered"))?;
    let cluster = from_host.labels.get(PVE_CLUSTER_LABEL);
    // Partners it is kept together with stay on the source host unless they ride with it: it
    // cannot leave them (the source host is out of the candidates, so the rule must be
    // checked here).
    let left_behind: Vec<String> = AffinityGroups::of(state)
        .members(&rec.spec)
        .iter()
        .filter(|p| riders.iter().all(|r| r.name != p.name))
        .filter(|p| state.vm(&p.name).and_then(|r| r.assignment.host) == Some(from))
        .map(|p| p.name.clone())
        .collect();
    if !left_behind.is_empty() {
        return Err(format!(
            "VM {name} is kept together with {} on {}: it moves only with them, as one group \
             (a group member that is moving or being recovered holds the rest back)",
            left_behind.join(", "),
            from_host.name
        ));
    }
    // The VM's own share is on its source host, not on a candidate.
    let (local, remote): (Vec<HostView>, Vec<HostView>) = views
        .into_iter()
        .filter(|v| v.id != from)
        .partition(|v| cluster.is_some() && v.labels.get(PVE_CLUSTER_LABEL) == cluster);
    let far_kind = if state.ha_policy(rec).recovery == RecoveryMode::Recreate {
        MoveKind::Recreate
    } else {
        MoveKind::Remote
    };
    // The riders leave the source with it: judged as pending, not as placed there.
    let local_verdicts = scheduler::explain_with(&rec.spec, riders, &local, state.settings());
    let remote_verdicts = far_verdicts(state, rec, riders, &remote, far_kind);
    let verdicts: Vec<_> = local_verdicts
        .iter()
        .chain(&remote_verdicts)
        .cloned()
        .collect();
    let target = |to: NodeId, to_name: String, kind: MoveKind, chosen: String| Target {
        from,
        from_name: from_host.name.clone(),
        to,
        to_name,
        kind,
        chosen,
        verdicts: verdicts.clone(),
    };
    if let Some(wanted) = to {
        if wanted == from_host.name {
            return Err(format!("VM {name} is on {wanted} already"));
        }
        let found = local_verdicts
            .iter()
            .map(|v| (v, MoveKind::Local))
            .chain(remote_verdicts.iter().map(|v| (v, far_kind)))
            .find(|(v, _)| v.host_name == wanted);
        let Some((v, kind)) = found else {
            return Err(format!(
                "{wanted} is not another online host known to the fleet (its hosts: {})",
                verdicts
                    .iter()
                    .map(|v| v.host_name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        };
        return match &v.verdict {
            // Named: no choice to explain, but a move out of the PVE cluster says so.
            Verdict::Scored { .. } => Ok(target(
                v.host_id,
                v.host_name.clone(),
                kind,
                match kind {
                    MoveKind::Local => String::new(),
                    MoveKind::Remote | MoveKind::Recreate => kind.describe().to_string(),
                },
            )),
            // A loose node affinity only prefers: an operator's named host is taken (PVE moves
            // a resource of a non-strict rule where it is told; failback, if on, brings it
            // back). Every other filter passed, or node affinity would not have been asked.
            Verdict::Excluded {
                filter: FilterName::NodeAffinity,
                ..
            } if rec
                .spec
                .placement
                .node_affinity
                .as_ref()
                .is_some_and(|na| !na.strict) =>
            {
                Ok(target(
                    v.host_id,
                    v.host_name.clone(),
                    kind,
                    format!(
                        "named by the operator over its node affinity's preference{}",
                        match kind {
                            MoveKind::Local => String::new(),
                            MoveKind::Remote | MoveKind::Recreate =>
                                format!(", {}", kind.describe()),
                        }
                    ),
                ))
            }
            Verdict::Excluded { filter, detail } => Err(format!(
                "VM {name} cannot move to {wanted} ({}): excluded by {filter}: {detail}",
                kind.describe()
            )),
        };
    }
    // A move within the PVE cluster first (no copy of shared disks, no token); another
    // cluster only when no node of its own can take it.
    for (list, kind) in [
        (&local_verdicts, MoveKind::Local),
        (&remote_verdicts, far_kind),
    ] {
        let eligible = list.iter().filter(|v| v.closeness().is_some()).count();
        if let Some(best) = list.first().filter(|b| b.closeness().is_some()) {
            return Ok(target(
                best.host_id,
                best.host_name.clone(),
                kind,
                format!(
                    "best of {eligible} eligible host{} ({})",
                    if eligible == 1 { "" } else { "s" },
                    kind.describe()
                ),
            ));
        }
    }
    if verdicts.is_empty() {
        return Err(format!(
            "VM {name} is on {}, the only host of the fleet",
            from_host.name
        ));
    }
    Err(format!(
        "no other host can take VM {name}: {}",
        verdicts
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("; ")
    ))
}

/// The verdicts of hosts outside the VM's PVE cluster. A rebuild is judged as a placement
/// (template, storages and all); a remote migration with [`remote_move::judged_spec`] and
/// then [`remote_move::mapping`]. Either way a host whose PVE cluster uses the VM's VMID for a
/// guest the fleet does not own cannot take it.
fn far_verdicts(
    state: &FleetState,
    rec: &VmRecord,
    riders: &[&VmSpec],
    hosts: &[HostView],
    kind: MoveKind,
) -> Vec<scheduler::HostVerdict> {
    let judged = match kind {
        MoveKind::Remote => remote_move::judged_spec(&rec.spec),
        MoveKind::Local | MoveKind::Recreate => rec.spec.clone(),
    };
    let mut verdicts = scheduler::explain_with(&judged, riders, hosts, state.settings());
    for v in &mut verdicts {
        if v.closeness().is_none() {
            continue;
        }
        let Some(view) = hosts.iter().find(|h| h.id == v.host_id) else {
            continue;
        };
        let refusal = vmid_taken(state, rec, view).or_else(|| match kind {
            MoveKind::Remote => remote_move::mapping(&rec.spec, view).err(),
            MoveKind::Local | MoveKind::Recreate => None,
        });
        if let Some((filter, detail)) = refusal {
            v.verdict = Verdict::Excluded { filter, detail };
        }
    }
    verdicts.sort_by(|a, b| {
        let score = |v: &scheduler::HostVerdict| v.closeness().map(|c| -c);
        (score(a).is_none(), score(a), &a.host_name)
            .partial_cmp(&(score(b).is_none(), score(b), &b.host_name))
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    verdicts
}

/// Whether a guest the fleet does not own uses the VM's VMID on `view`'s PVE cluster (or on
/// `view` itself when it is a standalone node): the VM keeps its VMID when it moves.
fn vmid_taken(
    state: &FleetState,
    rec: &VmRecord,
    view: &HostView,
) -> Option<(scheduler::FilterName, String)> {
    let vmid = rec.assignment.vmid?;
    let cluster = view.labels.get(PVE_CLUSTER_LABEL);
    state
        .hosts()
        .values()
        .filter(|h| {
            h.id == view.id || (cluster.is_some() && h.labels.get(PVE_CLUSTER_LABEL) == cluster)
        })
        .find(|h| {
            h.facts
                .as_ref()
                .is_some_and(|f| f.foreign_vmids.contains(&vmid))
        })
        .map(|h| {
            (
                scheduler::FilterName::Vmid,
                format!(
                    "VMID {vmid} is used on {} by a guest the fleet does not own",
                    h.name
                ),
            )
        })
}
