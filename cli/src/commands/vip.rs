//! `pvefleet vip apply|ls|show|move|delete`: virtual IPs, applied from the `[[vip]]` tables of
//! a fleet file; `ls` and `show` are the leader's live view (owner, since when, every host's
//! standing), `move` hands a VIP over.

use protocol::admin::{ReadMode, VipApply, VipDelete, VipList, VipMove, VipStatus};

use super::Session;
use super::apply::{apply_all, note_other_sections, read_fleet_file};
use crate::args::VipCommand;
use crate::exit::CliError;
use crate::output::{Deleted, VipMoved, VipTable};

pub(crate) async fn run(session: &mut Session<'_>, command: &VipCommand) -> Result<(), CliError> {
    match command {
        VipCommand::Apply(args) => {
            let file = read_fleet_file(&args.file)?;
            if file.vip.is_empty() {
                return Err(CliError::NothingToApply {
                    path: args.file.clone(),
                    kind: "vip",
                    command: "vip",
                });
            }
            note_other_sections(&file, "vip");
            apply_all(
                session,
                "vip",
                file.vip,
                |s| s.name.clone(),
                |spec| VipApply { spec },
                |r| (r.outcome, None),
            )
            .await
        }
        VipCommand::Ls if session.read() == ReadMode::Stale => {
            let reply = session
                .client()?
                .call(&VipList {
                    read: session.read(),
                })
                .await?;
            session.learn_host_names().await?;
            session.print(&reply)
        }
        VipCommand::Ls => {
            let reply = session.client()?.call(&VipStatus { name: None }).await?;
            session.print(&VipTable(reply))
        }
        VipCommand::Show { name } => {
            let reply = session
                .client()?
                .call(&VipStatus { name: name.clone() })
                .await?;
            session.print(&reply)
        }
        VipCommand::Move { name, host } => {
            let reply = session
                .client()?
                .call(&VipMove {
                    name: name.clone(),
                    host: host.clone(),
                })
                .await?;
            session.learn_host_names().await?;
            session.print(&VipMoved {
                name: name.clone(),
                owner: reply.owner,
                epoch: reply.epoch,
            })
        }
        VipCommand::Delete { name } => {
            session
                .client()?
                .call(&VipDelete { name: name.clone() })
                .await?;
            session.print(&Deleted {
                kind: "vip",
                name: name.clone(),
                removed: true,
            })
        }
    }
}
