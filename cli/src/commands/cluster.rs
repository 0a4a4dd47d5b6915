//! `pvefleet cluster status`: the Raft view of the member that answered.

use protocol::admin::ClusterStatus;

use super::Session;
use crate::args::ClusterCommand;
use crate::exit::CliError;

pub(crate) async fn run(
    session: &mut Session<'_>,
    command: &ClusterCommand,
) -> Result<(), CliError> {
    match command {
        ClusterCommand::Status => {
            let reply = session.client()?.call(&ClusterStatus {}).await?;
            session.print(&reply)
        }
    }
}
