//! Where an operator's `vm migrate` sends a VM, as a pure function of the state and the hosts:
//! another online node of its PVE cluster that passes every filter and rule of the scheduler
//! (a migration never breaks what placement would refuse), the one named, or the scheduler's
//! best. The move itself is the state machine's record ([`crate::state::Command::StartMigration`])
//! and the source agent's work.

use protocol::NodeId;
use protocol::fleet::PVE_CLUSTER_LABEL;

use crate::scheduler::{self, HostView, Verdict};
use crate::state::FleetState;

/// The host a VM moves to.
#[derive(Debug, Clone, PartialEq, Eq)]
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
}

/// Where VM `name` may move: `to` (a host name) if it qualifies, else the best host of its
/// PVE cluster; or why not, in words an operator can act on. `views` are the hosts as the
/// scheduler sees them.
pub fn target(
    state: &FleetState,
    mut views: Vec<HostView>,
    name: &str,
    to: Option<&str>,
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
    // The VM's own share is on its source host, not on a candidate.
    views.retain(|v| v.id != from && v.labels.get(PVE_CLUSTER_LABEL) == Some(cluster));
    if views.is_empty() {
        return Err(format!(
            "VM {name} is on {}, the only node of PVE cluster {cluster} in the fleet",
            from_host.name
        ));
    }
    let verdicts = scheduler::explain(&rec.spec, &views, state.settings());
    let target = |to: NodeId, to_name: String, chosen: String| Target {
        from,
        from_name: from_host.name.clone(),
        to,
        to_name,
        chosen,
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
