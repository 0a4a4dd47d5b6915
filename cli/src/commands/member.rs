//! `pvefleet member ls|add|remove`: coordinator members. `add` does not change the membership
//! itself: it makes a one-use coordinator join token and prints it with the command that joins
//! the new member (which then asks the leader to add it, as a learner, then a voter). The
//! command reads the token from standard input: a token in a command line would be readable by
//! every local user of the new host (`ps`), and it carries the cluster CA key.

use std::path::Path;

use protocol::Role;
use protocol::admin::{MemberList, MemberRemove, TokenCreate};

use super::Session;
use super::token::whole_seconds;
use crate::args::{MemberAddArgs, MemberCommand};
use crate::exit::CliError;
use crate::output::{MemberAdded, MemberRemoved};

pub(crate) async fn run(
    session: &mut Session<'_>,
    command: &MemberCommand,
) -> Result<(), CliError> {
    match command {
        MemberCommand::Ls => {
            let reply = session
                .client()?
                .call(&MemberList {
                    read: session.read(),
                })
                .await?;
            session.print(&reply)
        }
        MemberCommand::Add(args) => add(session, args).await,
        MemberCommand::Remove { id } => {
            session.client()?.call(&MemberRemove { id: *id }).await?;
            session.print(&MemberRemoved { removed: *id })
        }
    }
}

async fn add(session: &mut Session<'_>, args: &MemberAddArgs) -> Result<(), CliError> {
    let client = session.client()?;
    let request = TokenCreate {
        role: Role::Coordinator,
        ttl_secs: Some(whole_seconds(args.ttl)),
        uses: Some(1),
    };
    let reply = client.call(&request).await?;
    // The member that just answered a write is reachable (and, after a write, the leader).
    let join_addr = client
        .last_member()
        .map_or_else(|| "ADDR".to_string(), |m| m.addr);
    let command = join_command(&join_addr, args.data_dir.as_deref(), args.listen.as_deref());
    session.print(&MemberAdded {
        token: reply.token,
        token_id: reply.record.id,
        expires_at: reply.record.expires_at,
        join_addr,
        command,
    })
}

/// The `pvefleet-coordinator join` command line for a new member, words quoted for a POSIX
/// shell; a missing listen address is left as a capitalised placeholder, a missing data
/// directory is left out (the packaged default `/var/lib/pvefleet/coordinator` applies). The
/// token is not in it: `--token-file -` reads it from standard input (pasted or piped).
pub fn join_command(join_addr: &str, data_dir: Option<&Path>, listen: Option<&str>) -> String {
    let data_dir = data_dir.map_or_else(String::new, |d| {
        format!(" --data-dir {}", shell_word(&d.to_string_lossy()))
    });
    let listen = listen.map_or_else(|| "HOST:PORT".to_string(), shell_word);
    format!(
        "pvefleet-coordinator join --token-file - {}{data_dir} --listen {listen}",
        shell_word(join_addr)
    )
}

/// `word` as one POSIX shell word: unchanged when it has only safe characters, else in single
/// quotes (IPv6 brackets would otherwise be a glob).
fn shell_word(word: &str) -> String {
    let safe = !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_-./:@%+=,".contains(&b));
    if safe {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}
