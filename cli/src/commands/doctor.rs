//! `pvefleet doctor`: the leader's checks of the whole fleet ([`protocol::admin::Doctor`]),
//! printed as a report (or JSON), and an exit status scripts can gate a rollout on: 6 when a
//! finding is a problem (or, with `--strict`, a warning), 0 otherwise.

use protocol::admin::{DIAGNOSE_WAIT, Doctor, Severity};
use std::time::Duration;

use super::Session;
use crate::args::DoctorArgs;
use crate::exit::CliError;

/// Added to the leader's wait for the agents: routing, the members' answers, the reply.
const MARGIN: Duration = Duration::from_secs(15);

pub(crate) async fn run(session: &mut Session<'_>, args: &DoctorArgs) -> Result<(), CliError> {
    let timeout = session.cli.timeout.max(DIAGNOSE_WAIT + MARGIN);
    let client = session.client()?.with_timeout(timeout);
    let report = client.call(&Doctor {}).await?;
    session.print(&report)?;
    let count = |s: Severity| report.findings.iter().filter(|f| f.severity == s).count();
    let (problems, warnings) = (count(Severity::Problem), count(Severity::Warning));
    if problems > 0 || (args.strict && warnings > 0) {
        return Err(CliError::Unhealthy { problems, warnings });
    }
    Ok(())
}
