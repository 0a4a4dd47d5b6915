//! `events --follow`: one line per event as it arrives, since a table cannot be aligned over
//! rows that have not happened yet. Times are absolute (an age would be stale a moment later);
//! with `--output json`, each event is one compact JSON object on its own line.

use protocol::fleet::{Event, EventLevel};

use super::OutputFormat;
use super::printable::one_line;
use protocol::time::timestamp;

/// The line for `event`, newline-terminated.
pub fn event_line(event: &Event, format: OutputFormat) -> Result<String, serde_json::Error> {
    match format {
        OutputFormat::Json => {
            let mut line = serde_json::to_string(event)?;
            line.push('\n');
            Ok(line)
        }
        OutputFormat::Table => {
            let level = match event.level {
                EventLevel::Info => "info",
                EventLevel::Warning => "warning",
            };
            let line = format!(
                "{:>6}  {}  {level:<7}  {} {}: {}",
                event.seq,
                timestamp(event.at),
                event.kind,
                event.subject,
                event.message
            );
            // One event, one line: its text cannot break the line or act on the terminal.
            Ok(format!("{}\n", one_line(&line)))
        }
    }
}

/// The note for events dropped from the bounded log between two polls (`None` if none were).
pub fn dropped_note(since: u64, first_kept: u64) -> Option<String> {
    (first_kept > since.saturating_add(1)).then(|| {
        format!(
            "(events {}-{} are no longer kept: the event log keeps only the newest)",
            since + 1,
            first_kept - 1
        )
    })
}
