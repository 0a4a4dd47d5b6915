//! One module per command: `demo` (a whole fleet until Ctrl-C) and `sim` (`run` a scenario
//! file, `chaos` a seeded campaign), with what they share: the [`Session`] they print to and
//! the operator's way to end them ([`shutdown_signal`]).

mod demo;
mod session;
mod shutdown_signal;
mod sim;
mod sim_report;

pub(crate) use session::Session;

use crate::args::LabCommand;
use crate::error::LabCliError;

/// Runs the parsed command.
pub(crate) async fn dispatch(
    session: &mut Session<'_>,
    command: &LabCommand,
) -> Result<(), LabCliError> {
    match command {
        LabCommand::Demo(a) => demo::run(session, a).await,
        LabCommand::Sim(c) => sim::run(session, c).await,
    }
}
