//! `pvefleet events [--since SEQ] [--limit N]`: the fleet's event log, oldest first.

use protocol::admin::Events;

use super::Session;
use crate::cli::args::EventsArgs;
use crate::cli::exit::CliError;
use crate::cli::output::EventsPage;

pub(crate) async fn run(session: &mut Session<'_>, args: &EventsArgs) -> Result<(), CliError> {
    let request = Events {
        since: args.since,
        limit: args.limit,
        read: session.read(),
    };
    let reply = session.client()?.call(&request).await?;
    session.print(&EventsPage {
        since: args.since,
        reply,
    })
}
