//! `pvefleet dashboard login` on the leader, and the redemption of a login by a member's
//! dashboard. The link's id and secret are drawn and the time read here, before proposing, so
//! every member stores the same record; only the secret's hash enters the log, and the token
//! goes back to the caller once. Redeeming is a write (`UseDashboardLogin`), so a link works
//! once across the whole cluster.

use protocol::NodeId;
use protocol::admin::{
    DashboardLoginCreate, DashboardLoginCreated, DashboardLoginRedeem, DashboardLoginRedeemed,
};
use protocol::fleet::{
    DASHBOARD_LOGIN_DEFAULT_TTL_SECS, DASHBOARD_LOGIN_MAX_TTL_SECS, DashboardLogin,
};
use protocol::time::Now;
use transport::{RemoteCode, RemoteError};

use super::Ctx;
use crate::dashboard::login_token::{draw_id, draw_secret, secret_sha256};
use fleet::state::{Command, CommandReply};

/// A clash of random ids is refused by the state machine; another id is drawn.
const ID_ATTEMPTS: usize = 3;

impl Ctx {
    /// Mints a one-time dashboard login for `issuer` (this member leads).
    pub(crate) async fn dashboard_login_create(
        &self,
        req: &DashboardLoginCreate,
    ) -> Result<DashboardLoginCreated, RemoteError> {
        let issuer: NodeId = req.issuer.ok_or_else(|| {
            RemoteError::unauthorized(
                "a dashboard login is minted by an admin: call with an admin certificate",
            )
        })?;
        let ttl = req.ttl_secs.unwrap_or(DASHBOARD_LOGIN_DEFAULT_TTL_SECS);
        if !(1..=DASHBOARD_LOGIN_MAX_TTL_SECS).contains(&ttl) {
            return Err(RemoteError::bad_request(format!(
                "ttl: {ttl} s is not allowed: a login link waits 1 to \
                 {DASHBOARD_LOGIN_MAX_TTL_SECS} seconds (24 hours) to be used"
            )));
        }
        if let Some(why) = self.read_local(|s| s.admin_refusal(issuer))? {
            return Err(RemoteError::unauthorized(why));
        }
        let mut last = None;
        for _ in 0..ID_ATTEMPTS {
            let now = Now::read().millis;
            let (id, secret) = {
                let mut rng = rand::rng();
                (draw_id(&mut rng), draw_secret(&mut rng))
            };
            let record = DashboardLogin {
                id: id.clone(),
                secret_sha256: secret_sha256(&secret),
                issuer,
                read_only: req.read_only,
                created_at: now,
                expires_at: now.saturating_add(ttl.saturating_mul(1000)),
                used: false,
            };
            let expires_at = record.expires_at;
            match self.propose(&Command::AddDashboardLogin { record }).await {
                Ok(CommandReply::Done) => {
                    return Ok(DashboardLoginCreated {
                        token: format!("{id}.{secret}"),
                        expires_at,
                        read_only: req.read_only,
                    });
                }
                Ok(other) => {
                    return Err(super::errors::unexpected(
                        "admin.dashboard_login_create",
                        &other,
                    ));
                }
                Err(e) if e.code == RemoteCode::Conflict => last = Some(e),
                Err(e) => return Err(e),
            }
        }
        Err(last.unwrap_or_else(|| RemoteError::internal("no dashboard login id could be drawn")))
    }

    /// Redeems a dashboard login (this member leads).
    pub(crate) async fn dashboard_login_redeem(
        &self,
        req: &DashboardLoginRedeem,
    ) -> Result<DashboardLoginRedeemed, RemoteError> {
        let cmd = Command::UseDashboardLogin {
            id: req.id.clone(),
            secret_sha256: req.secret_sha256.clone(),
            now: Now::read().millis,
        };
        match self.propose(&cmd).await? {
            CommandReply::DashboardLoginAccepted { issuer, read_only } => {
                Ok(DashboardLoginRedeemed { issuer, read_only })
            }
            other => Err(super::errors::unexpected(
                "admin.dashboard_login_redeem",
                &other,
            )),
        }
    }
}
