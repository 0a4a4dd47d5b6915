//! `pvefleet demo`: a whole simulated fleet on this machine, as separate processes on loopback.

use crate::cli::args::DemoArgs;
use crate::cli::exit::CliError;

use super::Session;

/// Runs the demo until Ctrl-C (or until ready with `--exit-when-ready`).
pub(crate) async fn run(session: &mut Session<'_>, args: &DemoArgs) -> Result<(), CliError> {
    let _ = (session, args);
    Err(CliError::Output("pvefleet demo is not built yet".to_string()))
}
