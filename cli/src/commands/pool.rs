//! `pvefleet pool apply|ls|delete`: IP pools, applied from the `[[pool]]` tables of a fleet
//! file.

use protocol::admin::{PoolApply, PoolDelete, PoolList};

use super::Session;
use super::apply::{apply_all, note_other_sections, read_fleet_file};
use crate::args::PoolCommand;
use crate::exit::CliError;
use crate::output::Deleted;

pub(crate) async fn run(session: &mut Session<'_>, command: &PoolCommand) -> Result<(), CliError> {
    match command {
        PoolCommand::Apply(args) => {
            let file = read_fleet_file(&args.file)?;
            if file.pool.is_empty() {
                return Err(CliError::NothingToApply {
                    path: args.file.clone(),
                    kind: "pool",
                    command: "pool",
                });
            }
            note_other_sections(&file, "pool");
            apply_all(
                session,
                "pool",
                file.pool,
                |s| s.name.clone(),
                |spec| PoolApply { spec },
                |r| (r.outcome, None),
            )
            .await
        }
        PoolCommand::Ls => {
            let reply = session
                .client()?
                .call(&PoolList {
                    read: session.read(),
                })
                .await?;
            session.print(&reply)
        }
        PoolCommand::Delete { name } => {
            session
                .client()?
                .call(&PoolDelete { name: name.clone() })
                .await?;
            session.print(&Deleted {
                kind: "pool",
                name: name.clone(),
                removed: true,
            })
        }
    }
}
