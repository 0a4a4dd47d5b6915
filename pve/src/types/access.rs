//! `POST /access/ticket`: a login ticket and its CSRF token.

use serde::Deserialize;

use crate::de;

/// The answer to a login.
#[derive(Clone, PartialEq, Eq, Deserialize)]
pub struct TicketInfo {
    /// `user@realm`.
    #[serde(default)]
    pub username: String,
    /// `PVE:<user>:<hex time>::<signature>`; send as cookie `PVEAuthCookie`.
    #[serde(default)]
    pub ticket: Option<String>,
    /// Header `CSRFPreventionToken` for every non-GET request.
    #[serde(rename = "CSRFPreventionToken", default)]
    pub csrf_prevention_token: Option<String>,
    /// Cluster name, when clustered.
    #[serde(default)]
    pub clustername: Option<String>,
    /// Set when a second factor is still required: the ticket is then only a half-ticket.
    #[serde(rename = "NeedTFA", default, deserialize_with = "de::bool_lenient")]
    pub need_tfa: bool,
}

// Tickets are credentials: never print them.
impl std::fmt::Debug for TicketInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TicketInfo")
            .field("username", &self.username)
            .field("ticket", &self.ticket.as_ref().map(|_| "<redacted>"))
            .field(
                "csrf_prevention_token",
                &self.csrf_prevention_token.as_ref().map(|_| "<redacted>"),
            )
            .field("clustername", &self.clustername)
            .field("need_tfa", &self.need_tfa)
            .finish()
    }
}
