//! The HTTPS backend: PVE's REST API at `https://HOST:PORT/api2/json`, authenticated with an API
//! token (preferred) or a ticket, over rustls with an explicit certificate policy.
//!
//! - `credentials`: token and password files (must be `0600`), never shown in logs.
//! - `tls`: CA file, pinned SHA-256 fingerprint, or (loudly) no verification.
//! - `ticket`: login, cookie + CSRF, renewal, re-login after a 401.
//! - `transport`: URL/body encoding, reason phrase, error classification.
//!
//! The backend never retries a call (the [`crate::Client`] decides that), with one exception
//! that is not a retry: a ticket call refused with 401 ran nothing, so it is sent once more
//! after logging in again.

mod credentials;
mod ticket;
mod tls;
mod transport;

use std::path::PathBuf;
use std::time::Duration;

use http::HeaderMap;
use http::header::AUTHORIZATION;

pub use tls::TlsVerify;

use self::credentials::ApiToken;
use self::ticket::TicketSession;
use self::transport::Transport;
use crate::backend::{Backend, BoxFuture};
use crate::error::PveError;
use crate::request::{ApiReply, ApiRequest};

/// How to reach one PVE node over HTTPS.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpsConfig {
    /// Node name or address; with [`TlsVerify::CaFile`] the certificate must name it.
    pub host: String,
    /// pveproxy's port, normally [`HttpsConfig::DEFAULT_PORT`].
    pub port: u16,
    /// Credentials.
    pub auth: HttpsAuth,
    /// Certificate policy.
    pub tls: TlsVerify,
    /// Deadline of one request, from connecting to the last byte of the answer.
    pub timeout: Duration,
    /// Deadline of establishing the connection (TCP and TLS).
    pub connect_timeout: Duration,
}

impl HttpsConfig {
    /// pveproxy's port.
    pub const DEFAULT_PORT: u16 = 8006;
    /// Default [`HttpsConfig::timeout`].
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
    /// Default [`HttpsConfig::connect_timeout`].
    pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

    /// A configuration with the default port and deadlines.
    pub fn new(host: impl Into<String>, auth: HttpsAuth, tls: TlsVerify) -> Self {
        Self {
            host: host.into(),
            port: Self::DEFAULT_PORT,
            auth,
            tls,
            timeout: Self::DEFAULT_TIMEOUT,
            connect_timeout: Self::DEFAULT_CONNECT_TIMEOUT,
        }
    }
}

/// Credentials for the HTTPS backend. Both files must be private (`chmod 600`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HttpsAuth {
    /// An API token: the file holds one line `USER@REALM!TOKENID=SECRET`. Calls run as the
    /// token, which PVE never treats as `root@pam` (root-only options are refused).
    Token {
        /// The token file.
        token_file: PathBuf,
    },
    /// Ticket login with a password; needed for root-only options (`skiplock`).
    Ticket {
        /// `USER@REALM`, e.g. `root@pam`.
        username: String,
        /// File whose first line is the password.
        password_file: PathBuf,
    },
}

#[derive(Debug)]
enum Auth {
    Token(ApiToken),
    Ticket(TicketSession),
}

/// The HTTPS [`Backend`].
#[derive(Debug)]
pub struct HttpsBackend {
    transport: Transport,
    auth: Auth,
}

impl HttpsBackend {
    /// Read the credentials and set up TLS. Nothing is sent yet: a ticket is obtained by the
    /// first call.
    pub fn new(config: HttpsConfig) -> Result<Self, PveError> {
        let auth = match &config.auth {
            HttpsAuth::Token { token_file } => Auth::Token(ApiToken::from_file(token_file)?),
            HttpsAuth::Ticket {
                username,
                password_file,
            } => Auth::Ticket(TicketSession::new(username, password_file)?),
        };
        let tls = tls::client_config(&config.tls)?;
        let transport = Transport::new(
            &config.host,
            config.port,
            tls,
            config.timeout,
            config.connect_timeout,
        )?;
        if config.tls == TlsVerify::InsecureSkipVerify {
            tracing::warn!(
                endpoint = transport.endpoint(),
                "TLS CERTIFICATE VERIFICATION IS DISABLED for this PVE node \
                 (TlsVerify::InsecureSkipVerify): anyone on the network path can impersonate \
                 it and capture the credentials; pin its ssl_fingerprint or use a CA file"
            );
        }
        Ok(Self { transport, auth })
    }

    async fn call_inner(&self, req: &ApiRequest) -> Result<ApiReply, PveError> {
        match &self.auth {
            Auth::Token(token) => {
                let mut headers = HeaderMap::new();
                headers.insert(AUTHORIZATION, token.header().clone());
                self.transport.send(req, headers).await
            }
            Auth::Ticket(session) => {
                let ticket = session.ticket(&self.transport).await?;
                match self.transport.send(req, ticket.headers(req.method)?).await {
                    // A 401 comes from the auth handler, before anything ran: log in, resend once.
                    Err(PveError::Auth { reason, .. }) => {
                        tracing::info!(endpoint = self.transport.endpoint(), %reason, "PVE refused the ticket; logging in again");
                        let fresh = session.relogin(&self.transport, &ticket).await?;
                        self.transport.send(req, fresh.headers(req.method)?).await
                    }
                    other => other,
                }
            }
        }
    }
}

impl Backend for HttpsBackend {
    fn call<'a>(&'a self, req: &'a ApiRequest) -> BoxFuture<'a, Result<ApiReply, PveError>> {
        Box::pin(self.call_inner(req))
    }

    fn endpoint(&self) -> String {
        self.transport.endpoint().to_string()
    }

    fn is_root(&self) -> bool {
        matches!(&self.auth, Auth::Ticket(s) if s.username() == "root@pam")
    }

    fn api_user(&self) -> Option<String> {
        Some(match &self.auth {
            Auth::Token(token) => token.id().to_string(),
            Auth::Ticket(session) => session.username().to_string(),
        })
    }
}
