//! Where an operator's `vm migrate` sends a VM, as a pure function of the state and the hosts:
//! another online node of its PVE cluster that passes every filter and rule of the scheduler
//! (a migration never breaks what placement would refuse), the one named, or the scheduler's
//! best; with [`group_target`], the VM's affinity group moves with it, as one. The move itself is the state machine's record ([`crate::state::Command::StartMigration`])
//! and the source agent's work.

use protocol::NodeId;
use protocol::fleet::PVE_CLUSTER_LABEL;

use protocol::spec::VmSpec;

use crate::affinity::AffinityGroups;
use crate::scheduler::{self, HostView, Verdict};
use crate::state::FleetState;

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
    /// Why that one, when the scheduler chose (`best of 2 eligible hosts`); empty when named.
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

fn target_with(
    state: &FleetState,
    mut views: Vec<HostView>,
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
    let Some(cluster) = from_host.labels.get(PVE_CLUSTER_LABEL) else {
        return Err(format!(
            "VM {name} is on {}, a standalone PVE node: a migration moves a VM between the nodes \
             of one PVE cluster",
            from_host.name
        ));
    };
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
    views.retain(|v| v.id != from && v.labels.get(PVE_CLUSTER_LABEL) == Some(cluster));
    if views.is_empty() {
        return Err(format!(
            "VM {name} is on {}, the only node of PVE cluster {cluster} in the fleet",
            from_host.name
        ));
    }
    // The riders leave the source with it: judged as pending, not as placed there.
    let verdicts = scheduler::explain_with(&rec.spec, riders, &views, state.settings());
    let target = |to: NodeId, to_name: String, chosen: String| Target {
        from,
        from_name: from_host.name.clone(),
        to,
        to_name,
        chosen,
        verdicts: verdicts.clone(),
    };
    if let Some(wanted) = to {
        if wanted == from_host.name {
            return Err(format!("VM {name} is on {wanted} already"));
        }
        let Some(v) = verdicts.iter().find(|v| v.host_name == wanted) else {
            return Err(format!(
                "{wanted} is not another node of PVE cluster {cluster} known to the fleet (its \
                 nodes: {})",
                verdicts
                    .iter()
                    .map(|v| v.host_name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        };
        return match &v.verdict {
            Verdict::Scored { .. } => Ok(target(v.host_id, v.host_name.clone(), String::new())),
            Verdict::Excluded { filter, detail } => Err(format!(
                "VM {name} cannot move to {wanted}: excluded by {filter}: {detail}"
            )),
        };
    }
    let eligible = verdicts.iter().filter(|v| v.closeness().is_some()).count();
    match verdicts.first() {
        Some(best) if best.closeness().is_some() => Ok(target(
            best.host_id,
            best.host_name.clone(),
            format!(
                "best of {eligible} eligible host{}",
                if eligible == 1 { "" } else { "s" }
            ),
        )),
        _ => Err(format!(
            "no other node of PVE cluster {cluster} can take VM {name}: {}",
            verdicts
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("; ")
        )),
    }
}
