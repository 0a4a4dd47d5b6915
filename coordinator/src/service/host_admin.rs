//! `host label|unlabel|remove` on the leader: the host found by name, the change through Raft
//! (`SetHostLabels`, `RemoveHost`: the state machine checks what it refuses, so a VM placed on
//! the host meanwhile still stops a removal), and the host record as it is after.

use protocol::NodeId;
use protocol::admin::{HostChanged, HostLabel, HostRemove};
use protocol::time::Now;
use transport::RemoteError;

use super::Ctx;
use fleet::state::Command;

impl Ctx {
    /// `host label` / `host unlabel` (this member leads).
    pub(crate) async fn host_label(&self, req: &HostLabel) -> Result<HostChanged, RemoteError> {
        let id = self.host_id(&req.host).await?;
        self.propose(&Command::SetHostLabels {
            id,
            set: req.set.clone(),
            unset: req.unset.clone(),
            now: Now::read().millis,
        })
        .await?;
        self.host_after(id)
    }

    /// `host remove` (this member leads).
    pub(crate) async fn host_remove(&self, req: &HostRemove) -> Result<HostChanged, RemoteError> {
        let id = self.host_id(&req.host).await?;
        self.propose(&Command::RemoveHost {
            id,
            now: Now::read().millis,
        })
        .await?;
        self.host_after(id)
    }

    /// The id of the host named `name` (not removed), after a linearizable read.
    async fn host_id(&self, name: &str) -> Result<NodeId, RemoteError> {
        self.confirm_linearizable().await?;
        self.read_local(|s| {
            s.host_by_name(name).map(|h| h.id).ok_or_else(|| {
                RemoteError::not_found(format!(
                    "no host named {name:?}: `pvefleet host ls` lists them"
                ))
            })
        })?
    }

    fn host_after(&self, id: NodeId) -> Result<HostChanged, RemoteError> {
        self.read_local(|s| {
            s.hosts()
                .get(&id)
                .cloned()
                .map(|host| HostChanged { host })
                .ok_or_else(|| RemoteError::not_found(format!("host {id} is gone")))
        })?
    }
}
