//! `pvefleet vip apply|ls|delete`: virtual IPs, applied from the `[[vip]]` tables of a fleet
//! file.

use protocol::admin::{VipApply, VipDelete, VipList};

use super::Session;
use super::apply::{apply_all, note_other_sections, read_fleet_file};
use crate::args::VipCommand;
use crate::exit::CliError;
use crate::output::Deleted;

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
        VipCommand::Ls => {
            let reply = session
                .client()?
                .call(&VipList {
                    read: session.read(),
                })
                .await?;
            session.learn_host_names().await?;
            session.print(&reply)
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
