//! `pvefleet rebalance plan`: the leader's plan of moves that would even out the hosts' load,
//! printed; nothing is moved (apply one with `pvefleet vm migrate NAME --to HOST`).

use protocol::admin::RebalancePlan;

use super::Session;
use crate::args::RebalanceCommand;
use crate::exit::CliError;

pub(crate) async fn run(
    session: &mut Session<'_>,
    command: &RebalanceCommand,
) -> Result<(), CliError> {
    match command {
        RebalanceCommand::Plan => {
            let reply = session.client()?.call(&RebalancePlan {}).await?;
            session.print(&reply)
        }
    }
}
