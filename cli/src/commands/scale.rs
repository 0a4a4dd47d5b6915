//! `pvefleet vm scale GROUP N` and the group side of `vm apply`: a VM group's members are
//! ordinary VMs whose spec names the group ([`protocol::spec::GroupMember`]). Scaling up
//! applies the missing members (numbers 1..=N) from the spec of the group's lowest-numbered
//! member; scaling down deletes the members numbered past N, highest first. The plan is a pure
//! function ([`plan`]); each step is one `VmApply` or `VmDelete`, and one report says what was
//! done (the deletions first).

use protocol::admin::{ReadMode, VmApply, VmDelete, VmList};
use protocol::fleet::VmRecord;
use protocol::spec::{GroupMember, MAX_REPLICAS, VmSpec};

use super::Session;
use super::apply::apply_after;
use crate::exit::CliError;
use crate::output::{ApplyReport, Deleted};

/// What scaling a group to some replicas does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ScalePlan {
    /// The members to create, lowest number first.
    pub(crate) create: Vec<VmSpec>,
    /// The members to delete, highest number first.
    pub(crate) delete: Vec<String>,
}

/// The plan that leaves group `group` with members 1..=`replicas`, from the fleet's `vms`;
/// `None` if no VM belongs to the group.
pub(crate) fn plan(vms: &[VmRecord], group: &str, replicas: u32) -> Option<ScalePlan> {
    let mut members: Vec<(&VmSpec, &GroupMember)> = vms
        .iter()
        .filter(|r| !r.deleting)
        .filter_map(|r| {
            let g = r.spec.group.as_ref()?;
            (g.group == group).then_some((&r.spec, g))
        })
        .collect();
    members.sort_by_key(|(_, g)| g.index);
    let (template, first) = *members.first()?;
    let create = (1..=replicas)
        .filter(|n| members.iter().all(|(_, g)| g.index != *n))
        .map(|index| {
            let mut spec = template.clone();
            spec.name = GroupMember::name_of(&first.pattern, index);
            spec.group = Some(GroupMember {
                index,
                ..first.clone()
            });
            spec
        })
        .collect();
    let delete = members
        .iter()
        .rev()
        .filter(|(_, g)| g.index > replicas)
        .map(|(s, _)| s.name.clone())
        .collect();
    Some(ScalePlan { create, delete })
}

/// `vm scale GROUP N`.
pub(crate) async fn run(
    session: &mut Session<'_>,
    group: &str,
    replicas: u32,
) -> Result<(), CliError> {
    if replicas > MAX_REPLICAS {
        return Err(CliError::Usage(format!(
            "{replicas} members: a group has at most {MAX_REPLICAS}"
        )));
    }
    let vms = list(session).await?;
    let plan = plan(&vms, group, replicas).ok_or_else(|| CliError::NoGroup(group.to_string()))?;
    let report = ApplyReport {
        deleted: delete(session, &plan.delete).await?,
        ..ApplyReport::default()
    };
    apply_after(
        session,
        report,
        "vm",
        plan.create,
        |s| s.name.clone(),
        |spec| VmApply { spec },
        |r| (r.outcome, Some(r.generation)),
    )
    .await
    .map(drop)
}

/// Deletes the members of each group of `groups` (name, replicas) numbered past its replicas
/// (before `vm apply` of a file with groups: the file says how many there are); what it
/// deleted, for the apply's report.
pub(crate) async fn prune(
    session: &mut Session<'_>,
    groups: &[(String, u32)],
) -> Result<Vec<Deleted>, CliError> {
    if groups.is_empty() {
        return Ok(Vec::new());
    }
    let vms = list(session).await?;
    let mut deleted = Vec::new();
    for (group, replicas) in groups {
        if let Some(plan) = plan(&vms, group, *replicas) {
            deleted.extend(delete(session, &plan.delete).await?);
        }
    }
    Ok(deleted)
}

async fn list(session: &mut Session<'_>) -> Result<Vec<VmRecord>, CliError> {
    Ok(session
        .client()?
        .call(&VmList {
            read: ReadMode::Linearizable,
        })
        .await?
        .vms)
}

async fn delete(session: &mut Session<'_>, names: &[String]) -> Result<Vec<Deleted>, CliError> {
    let mut out = Vec::new();
    for name in names {
        let reply = session
            .client()?
            .call(&VmDelete { name: name.clone() })
            .await?;
        out.push(Deleted {
            kind: "vm",
            name: name.clone(),
            removed: reply.removed,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(index: u32, memory_mib: u64) -> VmRecord {
        let mut spec = VmSpec::new(format!("web-{index}"), memory_mib);
        spec.group = Some(GroupMember {
            group: "web".into(),
            index,
            pattern: "web-{n}".into(),
            spread: true,
        });
        record(spec)
    }

    fn record(spec: VmSpec) -> VmRecord {
        VmRecord {
            spec,
            generation: 1,
            created_at: 0,
            updated_at: 0,
            deleting: false,
            assignment: protocol::fleet::Assignment::default(),
            status: protocol::fleet::VmStatus::default(),
        }
    }

    #[test]
    fn scaling_fills_the_gaps_from_the_first_member_and_deletes_from_the_top() {
        let vms = vec![
            member(3, 1024),
            member(1, 2048),
            member(5, 1024),
            record(VmSpec::new("db-1", 512)),
        ];
        let up = plan(&vms, "web", 4).unwrap();
        let names: Vec<&str> = up.create.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["web-2", "web-4"]);
        assert!(up.create.iter().all(|s| s.memory_mib == 2048));
        assert_eq!(up.create[1].group.as_ref().unwrap().index, 4);
        assert_eq!(up.delete, ["web-5"]);
        let down = plan(&vms, "web", 0).unwrap();
        assert!(down.create.is_empty());
        assert_eq!(down.delete, ["web-5", "web-3", "web-1"]);
        assert_eq!(plan(&vms, "db", 2), None);
    }
}
