//! `token create` on the leader: the token's id and secret are drawn and the time read here,
//! before proposing, so every member stores the same record (apply never draws or reads a
//! clock). Only the secret's hash enters the log; the token text goes back to the caller once.

use std::time::Duration;

use bootstrap::{DEFAULT_TOKEN_TTL, TokenRecord};
use protocol::admin::{TokenCreate, TokenCreateReply};
use transport::{RemoteCode, RemoteError};

use super::Ctx;
use crate::tokens::stored_token;
use fleet::state::{Command, CommandReply};
use protocol::time::Now;

/// Ids are random (36^6): a clash with a stored id is refused by the state machine, and a new
/// token is drawn.
const ID_ATTEMPTS: usize = 3;
/// The longest lifetime a token may be given (a year): tokens are for joining soon.
const MAX_TTL: Duration = Duration::from_secs(366 * 24 * 3600);

impl Ctx {
    /// Creates a join token (this member leads).
    pub(crate) async fn token_create(
        &self,
        req: &TokenCreate,
    ) -> Result<TokenCreateReply, RemoteError> {
        let ttl = req.ttl_secs.map_or(DEFAULT_TOKEN_TTL, Duration::from_secs);
        if ttl.is_zero() || ttl > MAX_TTL {
            return Err(RemoteError::bad_request(format!(
                "ttl_secs = {} is not allowed: expected 1 to {} seconds",
                ttl.as_secs(),
                MAX_TTL.as_secs()
            )));
        }
        if req.role == protocol::Role::Admin {
            return Err(RemoteError::bad_request(
                "role = \"admin\" is not allowed: expected coordinator or agent (admin \
                 certificates are not issued through join tokens)",
            ));
        }
        let mut last = None;
        for _ in 0..ID_ATTEMPTS {
            let now = Now::read();
            let (record, token) = TokenRecord::new(
                req.role,
                ttl,
                req.uses,
                self.ca.sha256(),
                now.secs(),
                &mut rand::rng(),
            );
            let stored = stored_token(&record);
            match self
                .propose(&Command::AddTokenRecord {
                    record: stored.clone(),
                })
                .await
            {
                Ok(CommandReply::Done) => {
                    return Ok(TokenCreateReply {
                        token: token.to_string(),
                        record: stored.view(),
                    });
                }
                Ok(other) => return Err(super::errors::unexpected("admin.token_create", &other)),
                Err(e) if e.code == RemoteCode::Conflict => last = Some(e),
                Err(e) => return Err(e),
            }
        }
        Err(last.unwrap_or_else(|| RemoteError::internal("no token id could be drawn")))
    }
}
