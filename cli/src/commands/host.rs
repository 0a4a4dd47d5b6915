//! `pvefleet host ls`: every PVE host with its state, capacity and usage; `host show NAME`: one
//! host with the reason of its state; `host label|unlabel NAME ...`: operators' labels;
//! `host remove NAME`: decommission; `host maintenance ...`: [`super::maintenance`]. Usage and the live view are the leader's; with
//! `--stale`, the answering member's replicated records only (`ls`).

use protocol::admin::{HostLabel, HostList, HostRemove, HostStatus, ReadMode};

use super::Session;
use crate::args::HostCommand;
use crate::exit::CliError;
use crate::output::HostShown;

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
        HostCommand::Show { name } => {
            let reply = session.client()?.call(&HostStatus {}).await?;
            let Some(entry) = reply
                .hosts
                .into_iter()
                .find(|e| e.host.name.eq_ignore_ascii_case(name))
            else {
                return Err(CliError::Client(client::ClientError::NotFound(format!(
                    "no host named {name}: `pvefleet host ls` lists them"
                ))));
            };
            session.print(&HostShown(entry))
        }
        HostCommand::Label { name, labels } => {
            let reply = session
                .client()?
                .call(&HostLabel {
                    host: name.clone(),
                    set: labels.iter().cloned().collect(),
                    unset: Vec::new(),
                })
                .await?;
            session.print(&reply)
        }
        HostCommand::Unlabel { name, keys } => {
            let reply = session
                .client()?
                .call(&HostLabel {
                    host: name.clone(),
                    set: Default::default(),
                    unset: keys.clone(),
                })
                .await?;
            session.print(&reply)
        }
        HostCommand::Remove { name } => {
            let reply = session
                .client()?
                .call(&HostRemove { host: name.clone() })
                .await?;
            session.print(&reply)
        }
        HostCommand::Maintenance(args) => super::maintenance::run(session, args).await,
    }
}
