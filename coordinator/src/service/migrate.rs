//! `vm migrate` on the leader: the target ([`fleet::migration::group_target`], the
//! scheduler's filters and rules over the other nodes of the VM's PVE cluster, then over the
//! other clusters and standalone nodes, for the VM and the rest of its affinity group, which
//! moves with it), then one `StartMigration` each through Raft. The reconciler drives the
//! move through the agents; its end is an event, which `vm migrate --wait` follows.

use protocol::admin::{VmMigrate, VmMigratePlan, VmMigratePlanReply, VmMigrateReply};
use protocol::time::Now;
use transport::RemoteError;

use super::Ctx;
use super::ops::plan::placement_verdict;
use fleet::state::Command;

impl Ctx {
    /// `vm migrate` (this member leads).
    pub(crate) async fn vm_migrate(&self, req: &VmMigrate) -> Result<VmMigrateReply, RemoteError> {
        self.confirm_linearizable().await?;
        let (target, riders) = self.read_local(|s| {
            if s.vm(&req.name).is_none() {
                return Err(RemoteError::not_found(format!(
                    "no VM named {:?}: `pvefleet vm ls` lists them",
                    req.name
                )));
            }
            let views = self.control.host_views(s);
            fleet::migration::group_target(s, views, &req.name, req.to.as_deref())
                .map_err(RemoteError::conflict)
        })??;
        let since_event_seq = self.read_local(|s| s.last_event_seq())?;
        // Its affinity group moves with it, to the same host.
        for name in std::iter::once(&req.name).chain(riders.iter()) {
            let cmd = Command::StartMigration {
                name: name.clone(),
                to: target.to,
                purpose: protocol::fleet::MigrationPurpose::Operator,
                now: Now::read().millis,
            };
            self.propose(&cmd).await?;
        }
        let chosen = match (target.chosen.is_empty(), riders.is_empty()) {
            (_, true) => target.chosen,
            (true, false) => format!("with its affinity group: {}", riders.join(", ")),
            (false, false) => format!(
                "{}, with its affinity group: {}",
                target.chosen,
                riders.join(", ")
            ),
        };
        Ok(VmMigrateReply {
            from: target.from_name,
            to: target.to_name,
            chosen,
            since_event_seq,
        })
    }

    /// `vm migrate --dry-run` (this member leads): the move as [`Ctx::vm_migrate`] would make
    /// it, with every candidate's verdict; nothing is recorded.
    pub(crate) async fn vm_migrate_plan(
        &self,
        req: &VmMigratePlan,
    ) -> Result<VmMigratePlanReply, RemoteError> {
        self.confirm_linearizable().await?;
        self.read_local(|s| {
            if s.vm(&req.name).is_none() {
                return Err(RemoteError::not_found(format!(
                    "no VM named {:?}: `pvefleet vm ls` lists them",
                    req.name
                )));
            }
            let views = self.control.host_views(s);
            Ok(
                match fleet::migration::group_target(s, views, &req.name, req.to.as_deref()) {
                    Ok((t, riders)) => VmMigratePlanReply {
                        vm: req.name.clone(),
                        to: Some(t.to_name),
                        why: if t.chosen.is_empty() {
                            "asked for, and it qualifies".to_string()
                        } else {
                            t.chosen
                        },
                        with: riders,
                        verdicts: t.verdicts.into_iter().map(placement_verdict).collect(),
                    },
                    Err(why) => VmMigratePlanReply {
                        vm: req.name.clone(),
                        to: None,
                        why,
                        with: Vec::new(),
                        verdicts: Vec::new(),
                    },
                },
            )
        })?
    }
}
