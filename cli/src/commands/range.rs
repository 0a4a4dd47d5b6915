//! `pvefleet range apply|ls|delete`: VMID ranges, applied from the `[[vmid_range]]` tables of
//! a fleet file.

use protocol::admin::{VmidRangeApply, VmidRangeDelete, VmidRangeList};

use super::Session;
use super::apply::{apply_all, note_other_sections, read_fleet_file};
use crate::args::RangeCommand;
use crate::exit::CliError;
use crate::output::Deleted;

pub(crate) async fn run(session: &mut Session<'_>, command: &RangeCommand) -> Result<(), CliError> {
    match command {
        RangeCommand::Apply(args) => {
            let file = read_fleet_file(&args.file)?;
            if file.vmid_range.is_empty() {
                return Err(CliError::NothingToApply {
                    path: args.file.clone(),
                    kind: "vmid_range",
                    command: "range",
                });
            }
            note_other_sections(&file, "vmid_range");
            apply_all(
                session,
                "vmid_range",
                file.vmid_range,
                |s| s.name.clone(),
                |spec| VmidRangeApply { spec },
                |r| (r.outcome, None),
            )
            .await
        }
        RangeCommand::Ls => {
            let reply = session
                .client()?
                .call(&VmidRangeList {
                    read: session.read(),
                })
                .await?;
            session.print(&reply)
        }
        RangeCommand::Delete { name } => {
            session
                .client()?
                .call(&VmidRangeDelete { name: name.clone() })
                .await?;
            session.print(&Deleted {
                kind: "vmid_range",
                name: name.clone(),
                removed: true,
            })
        }
    }
}
