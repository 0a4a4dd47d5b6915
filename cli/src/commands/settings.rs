//! `pvefleet settings show|apply`: the cluster-wide settings, applied from the `[settings]`
//! table of a fleet file. Applying replaces them all (a key the file leaves out goes back to
//! its default), so the file is the whole truth, as for every other `apply`.

use protocol::admin::{SettingsGet, SettingsPut};

use super::Session;
use super::apply::{note_other_sections, read_fleet_file};
use crate::args::SettingsCommand;
use crate::exit::CliError;

pub(crate) async fn run(
    session: &mut Session<'_>,
    command: &SettingsCommand,
) -> Result<(), CliError> {
    match command {
        SettingsCommand::Show => {
            let reply = session
                .client()?
                .call(&SettingsGet {
                    read: session.read(),
                })
                .await?;
            session.print(&reply)
        }
        SettingsCommand::Apply(args) => {
            let file = read_fleet_file(&args.file)?;
            let Some(settings) = file.settings.clone() else {
                return Err(CliError::NoSettings {
                    path: args.file.clone(),
                });
            };
            note_other_sections(&file, "settings");
            let reply = session.client()?.call(&SettingsPut { settings }).await?;
            session.print(&reply)
        }
    }
}
