//! `pvefleet vm apply|ls|show|delete`: VMs by name. `apply` reads a file of VM specs, checks
//! every one locally (the first bad field is named with its value and what is allowed) and
//! only then sends them, one `VmApply` each.

use protocol::admin::{VmApply, VmDelete, VmGet, VmList};

use super::Session;
use super::apply::{apply_all, read_input, refused};
use crate::cli::args::VmCommand;
use crate::cli::exit::CliError;
use crate::cli::output::Deleted;
use crate::state::parse_vm_file;

pub(crate) async fn run(session: &mut Session<'_>, command: &VmCommand) -> Result<(), CliError> {
    match command {
        VmCommand::Apply(args) => {
            let text = read_input(&args.file)?;
            let specs = parse_vm_file(&text).map_err(|e| refused(&args.file, e))?;
            apply_all(
                session,
                "vm",
                specs,
                |s| s.name.clone(),
                |spec| VmApply { spec },
                |r| (r.outcome, Some(r.generation)),
            )
            .await
        }
        VmCommand::Ls => {
            let reply = session
                .client()?
                .call(&VmList {
                    read: session.read(),
                })
                .await?;
            session.learn_host_names().await?;
            session.print(&reply)
        }
        VmCommand::Show { name } => {
            let request = VmGet {
                name: name.clone(),
                read: session.read(),
            };
            let reply = session.client()?.call(&request).await?;
            session.learn_host_names().await?;
            session.print(&reply)
        }
        VmCommand::Delete { name } => {
            let reply = session
                .client()?
                .call(&VmDelete { name: name.clone() })
                .await?;
            session.print(&Deleted {
                kind: "vm",
                name: name.clone(),
                removed: reply.removed,
            })
        }
    }
}
