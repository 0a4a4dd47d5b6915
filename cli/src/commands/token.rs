//! `pvefleet token create|ls|revoke`: join tokens. A created token is printed once: the
//! cluster stores only the hash of its secret.

use std::time::Duration;

use protocol::admin::{TokenCreate, TokenList, TokenRevoke};

use super::Session;
use crate::args::TokenCommand;
use crate::exit::CliError;
use crate::output::TokenRevoked;

pub(crate) async fn run(session: &mut Session<'_>, command: &TokenCommand) -> Result<(), CliError> {
    match command {
        TokenCommand::Create(args) => {
            let request = TokenCreate {
                role: args.role.into(),
                ttl_secs: args.ttl.map(whole_seconds),
                uses: args.uses,
            };
            let reply = session.client()?.call(&request).await?;
            session.print(&reply)
        }
        TokenCommand::Ls => {
            let reply = session
                .client()?
                .call(&TokenList {
                    read: session.read(),
                })
                .await?;
            session.print(&reply)
        }
        TokenCommand::Revoke { id } => {
            session
                .client()?
                .call(&TokenRevoke { id: id.clone() })
                .await?;
            session.print(&TokenRevoked {
                revoked: id.clone(),
            })
        }
    }
}

/// A lifetime in whole seconds, rounded up so a token never lives shorter than asked.
pub(crate) fn whole_seconds(ttl: Duration) -> u64 {
    ttl.as_secs() + u64::from(ttl.subsec_nanos() > 0)
}
