//! Operator identities (encoding v2): the admin certificates the fleet issued or has seen,
//! how far each may be renewed, and which are revoked. The transport gate and the renewal
//! handler ask [`FleetState::admin_refusal`] and [`FleetState::admin`]; revocation is by id and
//! final (an id is never handed out again).
//!
//! Rules applied here:
//! - a record's `renew_until` is fixed when it is added: its first expiry plus the cluster's
//!   renewal allowance (0 by default: a renewal rotates the key but keeps the expiry);
//! - a renewal never sets an expiry past `renew_until`, and a revoked id is never renewed;
//! - revoking an id the fleet has no record of still refuses it from then on (a certificate
//!   issued offline with the CA key is revocable too).

use protocol::NodeId;
use protocol::fleet::{AdminRecord, EventKind, UnixMillis, validate_admin_name};

use super::{CommandReply, FleetState, StateError};

/// The lowest id the fleet hands out: 1 is the admin `init` makes.
const FIRST_ALLOCATED_ID: NodeId = 2;

impl FleetState {
    /// The admin identity `id`, if recorded.
    pub fn admin(&self, id: NodeId) -> Option<&AdminRecord> {
        self.admins.get(&id)
    }

    /// Every recorded admin identity, by id.
    pub fn admins(&self) -> impl Iterator<Item = &AdminRecord> {
        self.admins.values()
    }

    /// How much later than its first expiry an admin certificate may be renewed to (ms).
    pub fn admin_renewal_ms(&self) -> u64 {
        self.admin_renewal_ms
    }

    /// Why a certificate of admin `id` must be refused, if it must.
    pub fn admin_refusal(&self, id: NodeId) -> Option<String> {
        let record = self.admins.get(&id)?;
        record.revoked_at.map(|_| {
            format!(
                "admin {id} ({}) was revoked: its certificates are refused. Ask an operator \
                 for a new identity (`pvefleet admin add NAME`)",
                record.name
            )
        })
    }

    pub(super) fn set_admin_renewal(
        &mut self,
        renewal_ms: u64,
        now: UnixMillis,
    ) -> Result<CommandReply, StateError> {
        if self.admin_renewal_ms != renewal_ms {
            self.admin_renewal_ms = renewal_ms;
            let days = renewal_ms / 86_400_000;
            self.info(
                now,
                EventKind::Settings,
                "admin-renewal",
                format!(
                    "admin certificates may be renewed up to {days} days past their first expiry"
                ),
            );
        }
        Ok(CommandReply::Done)
    }

    pub(super) fn add_admin(
        &mut self,
        id: Option<NodeId>,
        name: String,
        issued_at: UnixMillis,
        expires_at: UnixMillis,
        now: UnixMillis,
    ) -> Result<CommandReply, StateError> {
        validate_admin_name(&name).map_err(StateError::Conflict)?;
        if expires_at <= issued_at {
            return Err(StateError::Conflict(format!(
                "admin {name:?}: the certificate would expire ({expires_at}) before it is \
                 issued ({issued_at})"
            )));
        }
        let id = match id {
            Some(id) => {
                if let Some(existing) = self.admins.get(&id) {
                    return Err(StateError::Conflict(format!(
                        "admin {id} is already recorded ({}{})",
                        existing.name,
                        if existing.is_revoked() {
                            ", revoked"
                        } else {
                            ""
                        }
                    )));
                }
                id
            }
            None => {
                let above = self.admins.keys().next_back().map_or(0, |max| max + 1);
                self.next_admin_id.max(above).max(FIRST_ALLOCATED_ID)
            }
        };
        self.next_admin_id = self.next_admin_id.max(id + 1);
        let record = AdminRecord {
            id,
            name,
            issued_at,
            expires_at,
            renew_until: expires_at.saturating_add(self.admin_renewal_ms),
            revoked_at: None,
        };
        self.admins.insert(id, record.clone());
        self.info(
            now,
            EventKind::Admin,
            id.to_string(),
            format!("added ({})", record.name),
        );
        Ok(CommandReply::AdminAdded { record })
    }

    pub(super) fn renew_admin(
        &mut self,
        id: NodeId,
        expires_at: UnixMillis,
        now: UnixMillis,
    ) -> Result<CommandReply, StateError> {
        let Some(record) = self.admins.get_mut(&id) else {
            return Err(super::vms::not_found(EventKind::Admin, id.to_string()));
        };
        if record.is_revoked() {
            return Err(StateError::Conflict(format!(
                "admin {id} was revoked: it is not renewed"
            )));
        }
        if expires_at > record.renew_until {
            return Err(StateError::Conflict(format!(
                "admin {id} may be renewed up to {} (ms), not to {expires_at}",
                record.renew_until
            )));
        }
        record.expires_at = expires_at;
        let _ = now;
        Ok(CommandReply::Done)
    }

    pub(super) fn revoke_admin(
        &mut self,
        id: NodeId,
        now: UnixMillis,
    ) -> Result<CommandReply, StateError> {
        let record = self.admins.entry(id).or_insert_with(|| AdminRecord {
            id,
            name: "(not recorded: issued outside the cluster)".to_string(),
            issued_at: 0,
            expires_at: 0,
            renew_until: 0,
            revoked_at: None,
        });
        if record.is_revoked() {
            return Ok(CommandReply::Done);
        }
        record.revoked_at = Some(now);
        let name = record.name.clone();
        self.next_admin_id = self.next_admin_id.max(id + 1);
        self.info(
            now,
            EventKind::Admin,
            id.to_string(),
            format!("revoked ({name}): its certificates are refused from now on"),
        );
        Ok(CommandReply::Done)
    }
}
