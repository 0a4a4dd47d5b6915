//! `pvefleet dashboard login`: mints a one-time login link for the members' web dashboards.
//! The token rides in the link's fragment (`#token=`), which browsers never send to a server,
//! so it stays out of access logs and Referer headers; the login page takes it from there.

use protocol::admin::DashboardLoginCreate;
use serde::Serialize;

use super::Session;
use super::token::whole_seconds;
use crate::args::{DashboardCommand, DashboardLoginArgs};
use crate::exit::CliError;
use crate::output::{Context, Render};
use protocol::time::timestamp;

/// The port the dashboard listens on unless configured otherwise (documented in the
/// coordinator's configuration).
pub(crate) const DEFAULT_DASHBOARD_PORT: u16 = 7443;

/// A minted login link.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct DashboardLink {
    /// The link to open (once).
    pub(crate) url: String,
    /// When it stops working if unused.
    pub(crate) expires_at: u64,
    /// Whether the session it opens is read-only.
    pub(crate) read_only: bool,
}

impl Render for DashboardLink {
    fn table(&self, _ctx: &Context) -> String {
        format!(
            "{}\n\nOpen it in a browser within its lifetime (until {}): it works once and opens a \
             {} session.\n",
            self.url,
            timestamp(self.expires_at),
            if self.read_only { "read-only" } else { "full" }
        )
    }
}

/// The login link of `token` on the dashboard at `base` (`https://host:port`).
pub fn login_url(base: &str, token: &str) -> String {
    format!("{}/login#token={token}", base.trim_end_matches('/'))
}

pub(crate) async fn run(
    session: &mut Session<'_>,
    command: &DashboardCommand,
) -> Result<(), CliError> {
    match command {
        DashboardCommand::Login(args) => login(session, args).await,
    }
}

async fn login(session: &mut Session<'_>, args: &DashboardLoginArgs) -> Result<(), CliError> {
    let base = match &args.url {
        Some(url) => url.clone(),
        None => default_base(session)?,
    };
    let request = DashboardLoginCreate {
        read_only: args.read_only,
        ttl_secs: Some(whole_seconds(args.ttl)),
        issuer: None,
    };
    let reply = session.client()?.call(&request).await?;
    session.print(&DashboardLink {
        url: login_url(&base, &reply.token),
        expires_at: reply.expires_at,
        read_only: reply.read_only,
    })
}

/// `https://<first coordinator's host>:7443`, from the CLI configuration.
fn default_base(session: &mut Session<'_>) -> Result<String, CliError> {
    let config = session.config()?;
    let addr = config
        .config
        .coordinators
        .first()
        .map(|c| c.addr.clone())
        .ok_or_else(|| {
            CliError::Usage(
                "the CLI configuration lists no coordinator: give the dashboard's address with \
                 --url https://HOST:PORT"
                    .into(),
            )
        })?;
    let host = match addr.rsplit_once(':') {
        Some((host, _port)) => host.to_string(),
        None => addr,
    };
    Ok(format!("https://{host}:{DEFAULT_DASHBOARD_PORT}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_token_rides_in_the_fragment() {
        assert_eq!(
            login_url("https://10.0.0.1:7443/", "abc.def"),
            "https://10.0.0.1:7443/login#token=abc.def"
        );
    }
}
