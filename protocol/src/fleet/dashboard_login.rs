//! Dashboard logins in the replicated state: a one-time login an admin minted with
//! `pvefleet dashboard login`, stored with the hash of its secret only, consumed once inside the
//! state machine (so two members racing to redeem the same link cannot both open a session).

use std::fmt;

use serde::{Deserialize, Serialize};

use super::UnixMillis;
use crate::NodeId;

/// The longest a dashboard login link may wait to be used.
pub const DASHBOARD_LOGIN_MAX_TTL_SECS: u64 = 24 * 3600;
/// How long a dashboard login link waits to be used unless asked otherwise.
pub const DASHBOARD_LOGIN_DEFAULT_TTL_SECS: u64 = 15 * 60;

/// One minted dashboard login.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DashboardLogin {
    /// Its public id (random, 12 characters).
    pub id: String,
    /// SHA-256 of the secret, 64 lower-case hex digits.
    pub secret_sha256: String,
    /// The admin id that minted it: a session opened with it ends when that admin is revoked.
    pub issuer: NodeId,
    /// The session it opens can look but not act.
    pub read_only: bool,
    /// When it was minted.
    pub created_at: UnixMillis,
    /// It is refused from this instant on.
    pub expires_at: UnixMillis,
    /// It was redeemed (a login link works once).
    pub used: bool,
}

impl fmt::Debug for DashboardLogin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DashboardLogin")
            .field("id", &self.id)
            .field("issuer", &self.issuer)
            .field("read_only", &self.read_only)
            .field("created_at", &self.created_at)
            .field("expires_at", &self.expires_at)
            .field("used", &self.used)
            .finish_non_exhaustive()
    }
}

/// Why a dashboard login is refused. The texts are what the login page shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum DashboardLoginRefusal {
    /// No such login, or its secret does not match (not told apart: a guesser learns nothing).
    Unknown,
    /// Already used once.
    Used,
    /// Past its expiry.
    Expired,
}

impl fmt::Display for DashboardLoginRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DashboardLoginRefusal::Unknown => {
                "this login link is not valid: mint a new one with `pvefleet dashboard login`"
            }
            DashboardLoginRefusal::Used => {
                "this login link was already used (a link works once): mint a new one with \
                 `pvefleet dashboard login`"
            }
            DashboardLoginRefusal::Expired => {
                "this login link has expired: mint a new one with `pvefleet dashboard login`"
            }
        })
    }
}

impl DashboardLogin {
    /// Why it cannot be redeemed at `now`, if it cannot.
    pub fn refusal(&self, now: UnixMillis) -> Option<DashboardLoginRefusal> {
        if self.used {
            Some(DashboardLoginRefusal::Used)
        } else if now >= self.expires_at {
            Some(DashboardLoginRefusal::Expired)
        } else {
            None
        }
    }
}
