//! `pvefleet host ls`: every PVE host with its state, capacity and usage. Usage and the live
//! view are the leader's; with `--stale`, the answering member's replicated records only.

use protocol::admin::{HostList, HostStatus, ReadMode};

use super::Session;
use crate::args::HostCommand;
use crate::exit::CliError;

pub(crate) async fn run(session: &mut Session<'_>, command: &HostCommand) -> Result<(), CliError> {
    match command {
        HostCommand::Ls => {
            if session.read() == ReadMode::Stale {
                let reply = session
                    .client()?
                    .call(&HostList {
                        read: ReadMode::Stale,
                    })
                    .await?;
                return session.print(&reply);
            }
            let reply = session.client()?.call(&HostStatus {}).await?;
            session.print(&reply)
        }
    }
}
