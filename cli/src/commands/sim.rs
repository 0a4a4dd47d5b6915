//! `pvefleet sim run FILE [--keep DIR]`: an HA scenario against real coordinator and agent
//! processes with simulated PVE (the `lab` crate's scenario runner), so an operator can try a
//! failure before it happens.
//!
//! ```text
//!  FILE ─load─▶ Scenario (bad file: exit 2)
//!   │ not in a private network namespace yet ─▶ re-exec under unshare --net [--map-root-user]
//!   ▼ (inside: ip link set lo up)
//!  lab::scenario::run ─▶ header, timeline as it happens, verdict (or one JSON document)
//!   exit 0 passed · 1 violation, unmet expectation or event not played · 2 could not start
//! ```
//!
//! Narration (the bring-up, the teardown) goes to standard error; the header, the timeline
//! and the verdict to standard output.

use std::io::Write;

use lab::Binaries;
use lab::scenario::isolation::{self, Isolation};
use lab::scenario::{Observer, Outcome, RunOptions, TimelineEntry, report};
use tokio::sync::watch;

use super::Session;
use super::shutdown_signal::shutdown_signal;
use crate::args::{SimCommand, SimRunArgs};
use crate::exit::CliError;
use crate::output::OutputFormat;

/// The children's log filter (their logs go to the lab's `logs/`).
const CHILD_LOG: &str = "info";

/// Runs a `sim` subcommand.
pub(crate) async fn run(session: &mut Session<'_>, command: &SimCommand) -> Result<(), CliError> {
    match command {
        SimCommand::Run(args) => run_file(session, args).await,
    }
}

/// Prints the run as it goes: narration on stderr, timeline lines on the session's output
/// (not with `--output json`, which prints one document at the end).
struct Printer<'a> {
    out: &'a mut (dyn Write + Send),
    json: bool,
}

impl Observer for Printer<'_> {
    fn narrate(&mut self, text: &str) {
        eprintln!("{text}");
    }

    fn entry(&mut self, entry: &TimelineEntry) {
        if !self.json {
            let _ = writeln!(self.out, "{}", entry.line());
            let _ = self.out.flush();
        }
    }
}

async fn run_file(session: &mut Session<'_>, args: &SimRunArgs) -> Result<(), CliError> {
    let shown = args.file.display().to_string();
    let scenario =
        lab::scenario::load(&args.file).map_err(|e| CliError::Usage(format!("{shown}: {e}")))?;
    let isolation = match Isolation::from_env() {
        Some(isolation) => {
            if isolation.partitions() {
                isolation::prepare()
                    .await
                    .map_err(|e| CliError::Usage(e.to_string()))?;
            }
            isolation
        }
        None => match isolation::choose().await {
            Ok(method) => return reexec(&method).await,
            Err(why) => Isolation::Shared { why },
        },
    };
    let binaries = Binaries::beside_current_exe().map_err(|e| CliError::Usage(e.to_string()))?;
    let options = RunOptions {
        binaries,
        keep: args.keep.clone(),
        isolation: isolation.clone(),
        log_filter: CHILD_LOG.to_string(),
    };
    let json = session.cli.output == OutputFormat::Json;
    if !json {
        write(session, &report::header(&scenario, &isolation.describe()))?;
    }
    let (stop_tx, stop_rx) = watch::channel(false);
    let signals = tokio::spawn(async move {
        shutdown_signal().await;
        eprintln!("interrupted: stopping the scenario's fleet");
        let _ = stop_tx.send(true);
    });
    let mut printer = Printer {
        out: &mut *session.out,
        json,
    };
    let result = Box::pin(lab::scenario::run(
        &scenario,
        &options,
        &mut printer,
        stop_rx,
    ))
    .await;
    signals.abort();
    let outcome = result.map_err(|e| CliError::Usage(format!("{shown}: {e}")))?;
    if let Some(path) = &args.report {
        let doc = report::json(&outcome).map_err(|e| CliError::Output(e.to_string()))? + "\n";
        super::sim_report::write_report(path, &doc).map_err(|e| {
            CliError::Output(format!(
                "cannot write the scenario report {}: {e}",
                path.display()
            ))
        })?;
    }
    let text = if json {
        report::json(&outcome).map_err(|e| CliError::Output(e.to_string()))? + "\n"
    } else {
        report::verdict(&outcome)
    };
    write(session, &text)?;
    verdict(&outcome)
}

/// Exit 1 with a one-line summary when the scenario did not pass.
fn verdict(outcome: &Outcome) -> Result<(), CliError> {
    if outcome.passed() {
        return Ok(());
    }
    let unmet = outcome.expectations.iter().filter(|e| !e.met).count();
    let unplayed = outcome.events.iter().filter(|e| e.error.is_some()).count();
    Err(CliError::Demo(format!(
        "scenario {} failed: {} violation(s), {unmet} unmet expectation(s), {unplayed} event(s) \
         not played{}",
        outcome.scenario,
        outcome.violations.len(),
        if outcome.end == lab::scenario::End::Interrupted {
            ", interrupted"
        } else {
            ""
        }
    )))
}

/// Runs this command again in a private network namespace and ends as it ended.
async fn reexec(method: &isolation::Method) -> Result<(), CliError> {
    let status = isolation::reexec(method)
        .await
        .map_err(|e| CliError::Usage(e.to_string()))?;
    let how = method.describe();
    match status.code() {
        Some(0) => Ok(()),
        Some(2) => Err(CliError::Usage(format!(
            "the scenario could not run (in a private network namespace, {how})"
        ))),
        Some(code) => Err(CliError::Demo(format!(
            "the scenario failed (run in a private network namespace, {how}; exit status {code})"
        ))),
        None => Err(CliError::Demo(format!(
            "the scenario's run ({how}) ended by a signal ({status})"
        ))),
    }
}

fn write(session: &mut Session<'_>, text: &str) -> Result<(), CliError> {
    session
        .out
        .write_all(text.as_bytes())
        .and_then(|()| session.out.flush())
        .map_err(|e| CliError::Output(e.to_string()))
}
