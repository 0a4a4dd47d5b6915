//! Operator identities on the leader: `admin ls` (a read), `admin add` (the leader issues a
//! certificate for the CSR of a key the operator's CLI made, and records it), `admin revoke`
//! (a write). Every write here is a command of encoding v2: while a member still runs a v1
//! release the cluster answers `Unavailable`, saying so (see `route::propose_raw`).

use std::time::Duration;

use bootstrap::ca::DEFAULT_LEAF_VALIDITY;
use protocol::Role;
use protocol::admin::{AdminAdd, AdminAddReply, AdminList, AdminListReply, AdminRevoke, Done};
use protocol::fleet::validate_admin_name;
use protocol::time::{Now, secs_to_millis};
use transport::{RemoteError, Rpc};

use super::Ctx;
use super::errors::unexpected;
use fleet::state::{Command, CommandReply, FleetState};

/// The longest first certificate `admin add` issues (a year, as for join tokens).
const MAX_TTL: Duration = Duration::from_secs(366 * 24 * 3600);

/// `admin ls`.
pub(crate) fn admin_list(s: &FleetState, _: &AdminList) -> Result<AdminListReply, RemoteError> {
    Ok(AdminListReply {
        admins: s.admins().cloned().collect(),
    })
}

/// `admin revoke` as a command.
pub(crate) fn admin_revoke(r: &AdminRevoke, now: u64) -> Result<Command, RemoteError> {
    Ok(Command::RevokeAdmin { id: r.id, now })
}

/// The reply to `admin revoke`.
pub(crate) fn admin_revoke_reply(
    r: &AdminRevoke,
    reply: CommandReply,
) -> Result<Done, RemoteError> {
    match reply {
        CommandReply::Done => {
            tracing::info!(admin = r.id, "admin revoked");
            Ok(Done {})
        }
        other => Err(unexpected(<AdminRevoke as Rpc>::METHOD, &other)),
    }
}

impl Ctx {
    /// `admin add` (this member leads).
    pub(crate) async fn admin_add(&self, req: &AdminAdd) -> Result<AdminAddReply, RemoteError> {
        validate_admin_name(&req.name).map_err(RemoteError::bad_request)?;
        let ttl = req
            .ttl_secs
            .map_or(DEFAULT_LEAF_VALIDITY, Duration::from_secs);
        if ttl < Duration::from_secs(3600) || ttl > MAX_TTL {
            return Err(RemoteError::bad_request(format!(
                "ttl_secs = {} is not allowed: expected 3600 (an hour) to {} seconds",
                ttl.as_secs(),
                MAX_TTL.as_secs()
            )));
        }
        let now = Now::read();
        // The CSR is checked before an id is spent: a bad one changes nothing.
        self.ca
            .issue(&req.csr_pem, Role::Admin, 0, ttl, now.secs())
            .map_err(|e| RemoteError::bad_request(e.to_string()))?;
        let add = Command::AddAdmin {
            id: None,
            name: req.name.clone(),
            issued_at: now.millis,
            expires_at: secs_to_millis(now.secs() + ttl.as_secs()),
            now: now.millis,
        };
        let record = match self.propose(&add).await? {
            CommandReply::AdminAdded { record } => record,
            other => return Err(unexpected(<AdminAdd as Rpc>::METHOD, &other)),
        };
        let cert_pem = self
            .ca
            .issue(&req.csr_pem, Role::Admin, record.id, ttl, now.secs())
            .map_err(|e| {
                RemoteError::internal(format!(
                    "admin {} is recorded but its certificate could not be issued: {e}; revoke \
                     it (`pvefleet admin revoke {}`) and add it again",
                    record.id, record.id
                ))
            })?;
        tracing::info!(admin = record.id, name = %record.name, "admin added");
        Ok(AdminAddReply { record, cert_pem })
    }
}
