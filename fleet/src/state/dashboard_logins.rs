//! Dashboard login records: minted by an admin with the hash of their secret, redeemed once
//! inside the state machine (so a link presented to two members at once opens one session), and
//! pruned a day after their expiry.

use protocol::fleet::{
    DashboardLogin, DashboardLoginRefusal, EventKind, UnixMillis, validate_secret_sha256,
};

use super::{CommandReply, FleetState, StateError};

/// Expired or used login records are kept this long (for the event trail), then dropped.
const RETENTION_MS: u64 = 24 * 3600 * 1000;
/// Unused, unexpired logins kept at most: minting more drops the oldest (a flood of
/// `dashboard login` calls cannot grow the state without bound).
const MAX_OPEN: usize = 256;

impl FleetState {
    pub(super) fn add_dashboard_login(
        &mut self,
        record: DashboardLogin,
    ) -> Result<CommandReply, StateError> {
        super::tokens::check_lifetime(record.created_at, record.expires_at)?;
        validate_secret_sha256(&record.secret_sha256)?;
        if self.dashboard_logins.contains_key(&record.id) {
            return Err(StateError::Conflict(format!(
                "dashboard login {} already exists",
                record.id
            )));
        }
        let now = record.created_at;
        self.dashboard_logins
            .retain(|_, l| l.expires_at.saturating_add(RETENTION_MS) >= now);
        while self.dashboard_logins.len() >= MAX_OPEN {
            let oldest = self
                .dashboard_logins
                .iter()
                .min_by_key(|(_, l)| l.created_at)
                .map(|(id, _)| id.clone());
            match oldest {
                Some(id) => self.dashboard_logins.remove(&id),
                None => break,
            };
        }
        let message = format!(
            "dashboard login {} minted ({}), usable once until {} ms",
            record.id,
            if record.read_only {
                "read-only"
            } else {
                "may act"
            },
            record.expires_at
        );
        let subject = format!("admin-{}", record.issuer);
        self.dashboard_logins.insert(record.id.clone(), record);
        self.info(now, EventKind::Admin, subject, message);
        Ok(CommandReply::Done)
    }

    pub(super) fn use_dashboard_login(
        &mut self,
        id: &str,
        secret_sha256: &str,
        now: UnixMillis,
    ) -> Result<CommandReply, StateError> {
        let refused = |r| Err(StateError::DashboardLogin(r));
        let Some(login) = self.dashboard_logins.get(id) else {
            return refused(DashboardLoginRefusal::Unknown);
        };
        // The secret first: who cannot show it learns nothing about the login's state.
        if !super::tokens::same_hash(&login.secret_sha256, secret_sha256) {
            return refused(DashboardLoginRefusal::Unknown);
        }
        if let Some(refusal) = login.refusal(now) {
            return refused(refusal);
        }
        let (issuer, read_only) = (login.issuer, login.read_only);
        // Checked before anything changes: a refused command leaves the state as it was.
        if let Some(why) = self.admin_refusal(issuer) {
            return Err(StateError::Conflict(format!(
                "the admin that minted this login can no longer log in: {why}"
            )));
        }
        if let Some(login) = self.dashboard_logins.get_mut(id) {
            login.used = true;
        }
        self.info(
            now,
            EventKind::Admin,
            format!("admin-{issuer}"),
            format!("dashboard login {id} redeemed: a session is open"),
        );
        Ok(CommandReply::DashboardLoginAccepted { issuer, read_only })
    }

    /// The dashboard login records (hashes included), by id.
    pub fn dashboard_logins(&self) -> &std::collections::BTreeMap<String, DashboardLogin> {
        &self.dashboard_logins
    }
}
