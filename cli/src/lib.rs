//! The `pvefleet` operator CLI: argument parsing ([`args`]), its configuration file
//! ([`bootstrap::CliConfig`]), output as tables or JSON ([`output`]), exit codes ([`exit`]), and one command
//! module per resource. The binary only parses arguments and calls [`execute`].
//!
//! ```text
//!  argv ──clap──▶ Cli ──execute──▶ command ──AdminClient::call──▶ cluster
//!                                     │
//!                  stdout ◀── render (table | json)      stderr ◀── CliError (exit 1-5)
//! ```

pub mod args;
mod commands;
pub mod exit;
pub mod output;

use protocol::fleet::UnixMillis;
use std::io::Write;

pub use args::Cli;
pub use commands::{default_out_dir, join_command, login_url, read_fleet_file};
pub use exit::{CliError, ExitStatus};

/// Runs `cli`, writing results to `out`; `now` dates ages in tables.
pub async fn run(cli: &Cli, out: &mut (dyn Write + Send), now: UnixMillis) -> Result<(), CliError> {
    let mut session = commands::Session::new(cli, out, now);
    let result = commands::dispatch(&mut session, &cli.command).await;
    session.finish().await;
    result
}

/// Runs `cli` against standard output; an error is printed on standard error. Returns the
/// exit status.
pub async fn execute(cli: &Cli) -> ExitStatus {
    let mut stdout = std::io::stdout();
    match run(cli, &mut stdout, now_millis()).await {
        Ok(()) => ExitStatus::Ok,
        Err(e) => {
            // An error can quote what an operator typed or a peer reported.
            eprintln!(
                "error: {}",
                output::printable::terminal_text(&e.to_string())
            );
            e.status()
        }
    }
}

/// The wall clock in Unix milliseconds (the only clock read of the CLI).
fn now_millis() -> UnixMillis {
    protocol::time::Now::read().millis
}
