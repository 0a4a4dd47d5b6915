//! `pvefleet-lab`: the pvefleet lab, for a workstation or a CI machine, never a PVE host. It
//! starts whole fleets on this machine — coordinators and node agents as real processes, the
//! PVE hosts simulated — through the `lab` launcher: `demo` (the example fleet on loopback
//! until Ctrl-C), `sim run FILE` (an HA scenario, judged) and `sim chaos` (a seeded campaign of
//! random faults). It is its own binary in its own Debian package (`pvefleet-lab`) so that the
//! product (`pvefleet` and the daemons) links no simulator. What it shares with the operator
//! CLI — output formats, exit codes, reading a fleet file, the listings the demo prints — it
//! takes from the `cli` library; nothing points back.
//!
//! ```text
//!  argv ──clap──▶ LabCli ──execute──▶ demo | sim run | sim chaos ──lab::Lab, lab::scenario──▶ processes
//!                                         │
//!   stdout ◀── listings, timeline, verdict (text | json)     stderr ◀── narration, LabCliError (exit 1-5)
//! ```

pub mod args;
mod commands;
pub mod error;

use std::io::Write;

pub use args::LabCli;
pub use cli::ExitStatus;
pub use error::LabCliError;

/// Runs `cli`, writing results to `out` (narration goes to standard error).
pub async fn run(cli: &LabCli, out: &mut (dyn Write + Send)) -> Result<(), LabCliError> {
    let mut session = commands::Session {
        format: cli.output,
        out,
    };
    commands::dispatch(&mut session, &cli.command).await
}

/// Runs `cli` against standard output; an error is printed on standard error. Returns the
/// exit status.
pub async fn execute(cli: &LabCli) -> ExitStatus {
    let mut stdout = std::io::stdout();
    match run(cli, &mut stdout).await {
        Ok(()) => ExitStatus::Ok,
        Err(e) => {
            // An error can quote a file the operator gave, or a child's words.
            eprintln!(
                "error: {}",
                cli::output::printable::terminal_text(&e.to_string())
            );
            e.status()
        }
    }
}
