//! `host maintenance` on the leader: `SetMaintenance` through Raft for enable and disable, and
//! for every action the guests left on the host ([`fleet::maintenance::left_on`]) and those
//! away from it, read after the change. The drain and the way back are the reconciler's
//! ([`fleet::maintenance::plan`]).

use protocol::admin::{GuestLeft, HostMaintenance, HostMaintenanceReply, MaintenanceAction};
use protocol::time::Now;
use transport::RemoteError;

use super::Ctx;
use fleet::state::Command;

impl Ctx {
    /// `host maintenance` (this member leads).
    pub(crate) async fn host_maintenance(
        &self,
        req: &HostMaintenance,
    ) -> Result<HostMaintenanceReply, RemoteError> {
        self.confirm_linearizable().await?;
        let id = self.read_local(|s| {
            s.hosts()
                .values()
                .find(|h| h.name.eq_ignore_ascii_case(&req.host))
                .map(|h| h.id)
                .ok_or_else(|| {
                    RemoteError::not_found(format!(
                        "no host named {:?}: `pvefleet host ls` lists them",
                        req.host
                    ))
                })
        })??;
        let enable = match req.action {
            MaintenanceAction::Enable => Some(true),
            MaintenanceAction::Disable => Some(false),
            MaintenanceAction::Status => None,
        };
        if let Some(enable) = enable {
            self.propose(&Command::SetMaintenance {
                id,
                enable,
                now: Now::read().millis,
            })
            .await?;
        }
        self.read_local(|s| {
            let host = s
                .hosts()
                .get(&id)
                .ok_or_else(|| RemoteError::not_found(format!("host {} is gone", req.host)))?;
            let left = if host.state == protocol::fleet::HostState::Maintenance {
                fleet::maintenance::left_on(s, &self.control.host_views(s), id)
                    .into_iter()
                    .map(|(vm, why)| GuestLeft { vm, why })
                    .collect()
            } else {
                Vec::new()
            };
            let away = s
                .homes()
                .iter()
                .filter(|(_, home)| **home == id)
                .map(|(vm, _)| vm.clone())
                .collect();
            Ok(HostMaintenanceReply {
                host: host.name.clone(),
                state: host.state,
                left,
                away,
            })
        })?
    }
}
