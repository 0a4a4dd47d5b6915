//! `pvefleet-lab sim run FILE [--keep DIR]`: an HA scenario against real coordinator and agent
//! processes with simulated PVE (the `lab` crate's scenario runner), so an operator can try a
//! failure before it happens; `pvefleet-lab sim chaos --seed S`: a seeded campaign of random
//! faults, run as a scenario.
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
use crate::args::{SimChaosArgs, SimCommand, SimRunArgs};
use crate::error::LabCliError;

/// The children's log filter (their logs go to the lab's `logs/`).
const CHILD_LOG: &str = "info";

/// Runs a `sim` subcommand.
pub(crate) async fn run(
    session: &mut Session<'_>,
    command: &SimCommand,
) -> Result<(), LabCliError> {
    match command {
        SimCommand::Run(args) => run_file(session, args).await,
        SimCommand::Chaos(args) => run_chaos(session, args).await,
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

async fn run_file(session: &mut Session<'_>, args: &SimRunArgs) -> Result<(), LabCliError> {
    let shown = args.file.display().to_string();
    let scenario =
        lab::scenario::load(&args.file).map_err(|e| LabCliError::Usage(format!("{shown}: {e}")))?;
    let how = How {
        shown,
        keep: args.keep.clone(),
        report: args.report.clone(),
    };
    run_scenario(session, &scenario, &how).await
}

/// `sim chaos`: the seed's campaign as a scenario, run as `sim run` runs a file; a failing
/// run says how to replay it.
async fn run_chaos(session: &mut Session<'_>, args: &SimChaosArgs) -> Result<(), LabCliError> {
    let schedule = lab::chaos::draw(args.seed, args.duration);
    let text = schedule.scenario_text();
    let replay = format!(
        "pvefleet-lab sim chaos --seed {} --duration {}s",
        args.seed,
        schedule.duration.as_secs()
    );
    let scenario = lab::scenario::parse(&text)
        .map_err(|e| LabCliError::Usage(format!("chaos seed {}: {e}", args.seed)))?;
    if args.dry_run {
        let shown = format!("{text}\n# faults by kind\n{}", schedule.figures());
        return session.write(&shown);
    }
    if let Some(path) = &args.scenario_out {
        std::fs::write(path, &text)
            .map_err(|e| LabCliError::Output(format!("cannot write {}: {e}", path.display())))?;
    }
    if Isolation::from_env().is_some() {
        eprintln!(
            "chaos campaign seed {}: {} faults over {} s\n{}",
            args.seed,
            schedule.fault_count(),
            schedule.duration.as_secs(),
            schedule.figures()
        );
    }
    let how = How {
        shown: format!("chaos seed {}", args.seed),
        keep: args.keep.clone(),
        report: args.report.clone(),
    };
    let result = run_scenario(session, &scenario, &how).await;
    if result.is_err() && Isolation::from_env().is_some() {
        eprintln!("replay: {replay} (--dry-run prints the schedule)");
    }
    result
}

/// How a scenario is run and reported.
struct How {
    /// What it is, for messages (the file, or the chaos seed).
    shown: String,
    /// `--keep`.
    keep: Option<std::path::PathBuf>,
    /// `--report`.
    report: Option<std::path::PathBuf>,
}

async fn run_scenario(
    session: &mut Session<'_>,
    scenario: &lab::scenario::Scenario,
    how: &How,
) -> Result<(), LabCliError> {
    let shown = how.shown.clone();
    let isolation = match Isolation::from_env() {
        Some(isolation) => {
            if isolation.partitions() {
                isolation::prepare()
                    .await
                    .map_err(|e| LabCliError::Usage(e.to_string()))?;
            }
            isolation
        }
        None => match isolation::choose().await {
            Ok(method) => return reexec(&method).await,
            Err(why) => Isolation::Shared { why },
        },
    };
    let binaries = Binaries::beside_current_exe().map_err(|e| LabCliError::Usage(e.to_string()))?;
    let options = RunOptions {
        binaries,
        keep: how.keep.clone(),
        isolation: isolation.clone(),
        log_filter: CHILD_LOG.to_string(),
    };
    let json = session.json();
    if !json {
        session.write(&report::header(scenario, &isolation.describe()))?;
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
        scenario,
        &options,
        &mut printer,
        stop_rx,
    ))
    .await;
    signals.abort();
    let outcome = result.map_err(|e| LabCliError::Usage(format!("{shown}: {e}")))?;
    if let Some(path) = &how.report {
        let doc = report::json(&outcome).map_err(|e| LabCliError::Output(e.to_string()))? + "\n";
        super::sim_report::write_report(path, &doc).map_err(|e| {
            LabCliError::Output(format!(
                "cannot write the scenario report {}: {e}",
                path.display()
            ))
        })?;
    }
    let text = if json {
        report::json(&outcome).map_err(|e| LabCliError::Output(e.to_string()))? + "\n"
    } else {
        report::verdict(&outcome)
    };
    session.write(&text)?;
    verdict(&outcome)
}

/// Exit 1 with a one-line summary when the scenario did not pass.
fn verdict(outcome: &Outcome) -> Result<(), LabCliError> {
    if outcome.passed() {
        return Ok(());
    }
    let unmet = outcome.expectations.iter().filter(|e| !e.met).count();
    let unplayed = outcome.events.iter().filter(|e| e.error.is_some()).count();
    Err(LabCliError::Scenario(format!(
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
async fn reexec(method: &isolation::Method) -> Result<(), LabCliError> {
    let status = isolation::reexec(method)
        .await
        .map_err(|e| LabCliError::Usage(e.to_string()))?;
    let how = method.describe();
    match status.code() {
        Some(0) => Ok(()),
        Some(2) => Err(LabCliError::Usage(format!(
            "the scenario could not run (in a private network namespace, {how})"
        ))),
        Some(code) => Err(LabCliError::Scenario(format!(
            "the scenario failed (run in a private network namespace, {how}; exit status {code})"
        ))),
        None => Err(LabCliError::Scenario(format!(
            "the scenario's run ({how}) ended by a signal ({status})"
        ))),
    }
}
