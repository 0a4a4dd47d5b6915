//! Admin requests of the web dashboard: minting a one-time login link (`pvefleet dashboard
//! login`) and redeeming it (the dashboard of a member, when a browser presents the link).

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::NodeId;
use crate::encoding::EncodingError;
use crate::fleet::UnixMillis;
use crate::rpc::Rpc;
use crate::version::{DASHBOARD, Version};

/// `pvefleet dashboard login`: a one-time login link for the dashboards of the members.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DashboardLoginCreate {
    /// The session it opens can look but not act.
    pub read_only: bool,
    /// How long the link waits to be used, in seconds; absent = 15 minutes, at most 24 hours.
    pub ttl_secs: Option<u64>,
    /// The admin minting it: set by the member that receives the call, from the caller's
    /// certificate (what an admin sends here is replaced), and kept when a member forwards it.
    pub issuer: Option<NodeId>,
}

/// The minted link's token, shown once (only its hash is stored).
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DashboardLoginCreated {
    /// `<id>.<secret>`: what the login page takes.
    pub token: String,
    /// When the link stops working if unused.
    pub expires_at: UnixMillis,
    /// Whether the session it opens is read-only.
    pub read_only: bool,
}

impl fmt::Debug for DashboardLoginCreated {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DashboardLoginCreated")
            .field("token", &"<redacted>")
            .field("expires_at", &self.expires_at)
            .field("read_only", &self.read_only)
            .finish()
    }
}

impl Rpc for DashboardLoginCreate {
    const METHOD: &'static str = "admin.dashboard_login_create";
    type Response = DashboardLoginCreated;

    fn encode_at(&self, version: Version) -> Result<Vec<u8>, EncodingError> {
        too_new(version, "a dashboard login (pvefleet dashboard login)")?;
        crate::encoding::encode(self)
    }
}

/// A dashboard redeems a login token a browser presented (once, cluster-wide).
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DashboardLoginRedeem {
    /// The token's id part.
    pub id: String,
    /// SHA-256 of the token's secret part, hex (the secret itself never leaves the member).
    pub secret_sha256: String,
}

impl fmt::Debug for DashboardLoginRedeem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DashboardLoginRedeem")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

/// What the redeemed login grants.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DashboardLoginRedeemed {
    /// The admin that minted it.
    pub issuer: NodeId,
    /// Whether the session may act.
    pub read_only: bool,
}

impl Rpc for DashboardLoginRedeem {
    const METHOD: &'static str = "admin.dashboard_login_redeem";
    type Response = DashboardLoginRedeemed;

    fn encode_at(&self, version: Version) -> Result<Vec<u8>, EncodingError> {
        too_new(version, "a dashboard login")?;
        crate::encoding::encode(self)
    }
}

fn too_new(version: Version, what: &str) -> Result<(), EncodingError> {
    if version < DASHBOARD {
        return Err(EncodingError::TooNew {
            what: what.to_string(),
            needs: DASHBOARD,
            reader: version,
        });
    }
    Ok(())
}
