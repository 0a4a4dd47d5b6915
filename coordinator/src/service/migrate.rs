//! `vm migrate` on the leader: the target ([`fleet::migration::target`], the scheduler's
//! filters and rules over the other nodes of the VM's PVE cluster), then `StartMigration`
//! through Raft. The reconciler sends the move to the source agent; its result closes the
//! migration with an event, which `vm migrate --wait` follows.

use protocol::admin::{VmMigrate, VmMigrateReply};
use protocol::time::Now;
use transport::RemoteError;

use super::Ctx;
use fleet::state::Command;

impl Ctx {
    /// `vm migrate` (this member leads).
    pub(crate) async fn vm_migrate(&self, req: &VmMigrate) -> Result<VmMigrateReply, RemoteError> {
        self.confirm_linearizable().await?;
        let target = self.read_local(|s| {
            if s.vm(&req.name).is_none() {
                return Err(RemoteError::not_found(format!(
                    "no VM named {:?}: `pvefleet vm ls` lists them",
                    req.name
                )));
            }
            let views = self.control.host_views(s);
            fleet::migration::target(s, views, &req.name, req.to.as_deref())
                .map_err(RemoteError::conflict)
        })??;
        let cmd = Command::StartMigration {
            name: req.name.clone(),
            to: target.to,
            purpose: protocol::fleet::MigrationPurpose::Operator,
            now: Now::read().millis,
        };
        self.propose(&cmd).await?;
        let since_event_seq = self.read_local(|s| s.last_event_seq())?;
        Ok(VmMigrateReply {
            from: target.from_name,
            to: target.to_name,
            chosen: target.chosen,
            since_event_seq,
        })
    }
}
