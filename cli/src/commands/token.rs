//! `pvefleet token create|ls|revoke`: join tokens. A created token is printed once: the
//! cluster stores only the hash of its secret. `create` sends its terms explicitly (one use and
//! one hour unless widened), so even a coordinator from before these defaults gets safe ones; a
//! coordinator token is also announced on stderr for what it is: the CA key to whoever uses it.

use std::time::Duration;

use protocol::admin::{TokenCreate, TokenList, TokenRevoke};

use super::Session;
use crate::args::{JoinRole, TokenCommand};
use crate::exit::CliError;
use crate::output::TokenRevoked;

pub(crate) async fn run(session: &mut Session<'_>, command: &TokenCommand) -> Result<(), CliError> {
    match command {
        TokenCommand::Create(args) => {
            let request = TokenCreate {
                role: args.role.into(),
                ttl_secs: Some(whole_seconds(args.ttl)),
                uses: Some(args.uses),
            };
            let reply = session.client()?.call(&request).await?;
            if args.role == JoinRole::Coordinator {
                eprintln!("{COORDINATOR_TOKEN_WARNING}");
            }
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

/// What `token create --role coordinator` says on stderr (also with `--output json`, whose
/// stdout a script may keep): the token is the cluster's signing key to whoever holds it.
pub(crate) const COORDINATOR_TOKEN_WARNING: &str = "\
WARNING: this is a COORDINATOR token. The node that joins with it receives the cluster CA's
private key: it can then issue itself, or anyone, any certificate of this cluster.
It is shown only now and allows one join: hand it over privately, never on a command line
(`pvefleet-coordinator join --token-file - ADDR` reads it from standard input), and revoke
it (`pvefleet token revoke ID`) if it may have been seen. `pvefleet member add` makes such a
token together with the exact join command.";

/// A lifetime in whole seconds, rounded up so a token never lives shorter than asked.
pub(crate) fn whole_seconds(ttl: Duration) -> u64 {
    ttl.as_secs() + u64::from(ttl.subsec_nanos() > 0)
}
