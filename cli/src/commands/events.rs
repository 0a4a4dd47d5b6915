//! `pvefleet events [--since SEQ] [--limit N] [--follow]`: the fleet's event log, oldest first.
//! With `--follow`, the events after the last one seen are asked for every half second, each
//! printed on its own line as it arrives, until Ctrl-C.

use std::time::Duration;

use protocol::admin::Events;

use super::Session;
use crate::args::EventsArgs;
use crate::exit::CliError;
use crate::output::EventsPage;
use crate::output::follow::{dropped_note, event_line};
use crate::output::printable::terminal_text;
use client::ClientError;

/// How often `--follow` asks for new events.
const FOLLOW_POLL: Duration = Duration::from_millis(500);

pub(crate) async fn run(session: &mut Session<'_>, args: &EventsArgs) -> Result<(), CliError> {
    if args.follow {
        let interrupted = async {
            // Without a Ctrl-C handler the command still stops as any process does.
            if tokio::signal::ctrl_c().await.is_err() {
                std::future::pending::<()>().await;
            }
        };
        return tokio::select! {
            followed = follow(session, args) => followed,
            () = interrupted => Ok(()),
        };
    }
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

/// Prints the events after `--since` (at most `--limit` at first), then every new one, until
/// `--max-events` were printed (or forever).
async fn follow(session: &mut Session<'_>, args: &EventsArgs) -> Result<(), CliError> {
    let client = session.client()?;
    let format = session.cli.output;
    let read = session.read();
    let mut since = args.since;
    let mut limit = args.limit;
    let mut printed: u64 = 0;
    let mut polled = false;
    loop {
        let request = Events {
            since,
            limit: limit.take(),
            read,
        };
        let reply = match client.call(&request).await {
            Ok(reply) => reply,
            // Once following, a cluster briefly without a leader is waited out, not fatal.
            Err(e @ ClientError::Unavailable { .. }) if polled => {
                eprintln!(
                    "warning: {}\n(still following; Ctrl-C stops)",
                    terminal_text(&e.to_string())
                );
                tokio::time::sleep(FOLLOW_POLL).await;
                continue;
            }
            Err(e) => return Err(e.into()),
        };
        polled = true;
        if let Some(note) = dropped_note(since, reply.first_seq) {
            // On stderr: with --output json, stdout holds JSON lines only.
            eprintln!("{note}");
        }
        for event in &reply.events {
            let line = event_line(event, format).map_err(|e| CliError::Output(e.to_string()))?;
            session
                .out
                .write_all(line.as_bytes())
                .and_then(|()| session.out.flush())
                .map_err(|e| CliError::Output(e.to_string()))?;
            since = event.seq;
            printed += 1;
            if args.max_events.is_some_and(|max| printed >= max) {
                return Ok(());
            }
        }
        tokio::time::sleep(FOLLOW_POLL).await;
    }
}
