//! `token create` on the leader: the terms are bootstrap's `token_terms` (one use and one hour
//! unless asked otherwise, so an older CLI that sends none gets the safe ones; a coordinator
//! token always one use), the token's id and secret are drawn and the time read here, before
//! proposing, so every member stores the same record (apply never draws or reads a clock).
//! Only the secret's hash enters the log; the token text goes back to the caller once.

use bootstrap::{TokenRecord, token_terms};
use protocol::admin::{TokenCreate, TokenCreateReply};
use transport::{RemoteCode, RemoteError};

use super::Ctx;
use crate::tokens::stored_token;
use fleet::state::{Command, CommandReply};
use protocol::time::Now;

/// Ids are random (36^6): a clash with a stored id is refused by the state machine, and a new
/// token is drawn.
const ID_ATTEMPTS: usize = 3;

impl Ctx {
    /// Creates a join token (this member leads).
    pub(crate) async fn token_create(
        &self,
        req: &TokenCreate,
    ) -> Result<TokenCreateReply, RemoteError> {
        let terms = token_terms(req.role, req.ttl_secs, req.uses)
            .map_err(|e| RemoteError::bad_request(e.to_string()))?;
        let mut last = None;
        for _ in 0..ID_ATTEMPTS {
            let now = Now::read();
            let (record, token) = TokenRecord::new(
                req.role,
                terms.ttl,
                terms.uses,
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
