//! What every `apply -f FILE` shares: reading the file (or standard input), and sending the
//! already validated entries one by one, reporting each outcome, and, if the cluster refuses
//! one, what was applied before it. `vm apply --wait` then polls the VMs until each is in its
//! desired state, printing progress on stderr whenever it changes.
//!
//! ```text
//!  VmList every second ─▶ Progress::of(goals) ─▶ line changed? ─▶ stderr
//!        │ all done ─▶ Ok     │ gone ─▶ Err     │ failed ≥ fail_after ─▶ Err     │ timeout ─▶ Err
//! ```

use std::collections::HashMap;
use std::io::Read;
use std::path::Path;
use std::time::{Duration, Instant};

use protocol::Rpc;
use protocol::admin::{ApplyOutcome, ReadMode, VmList};
use protocol::spec::FleetSpecFile;

use super::Session;
use crate::exit::CliError;
use crate::output::human::span;
use crate::output::progress::{Progress, WaitGoal};
use crate::output::{Applied, ApplyReport};
use client::{AdminClient, ClientError};
use protocol::spec::{SpecFileError, parse_fleet_file};

/// How often `--wait` reads the VMs.
const POLL: Duration = Duration::from_secs(1);

/// The text of `-f FILE`; `-` is standard input.
pub(crate) fn read_input(path: &Path) -> Result<String, CliError> {
    let read_err = |source| CliError::ReadFile {
        path: path.to_path_buf(),
        source,
    };
    if path == Path::new("-") {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .map_err(read_err)?;
        Ok(text)
    } else {
        std::fs::read_to_string(path).map_err(read_err)
    }
}

/// A spec file refused before anything was sent.
pub(crate) fn refused(path: &Path, error: SpecFileError) -> CliError {
    CliError::SpecFile {
        path: path.to_path_buf(),
        error,
    }
}

/// Reads and validates a fleet file (`[[pool]]`, `[[vmid_range]]`, `[[vip]]`, `[[vm]]`); `-`
/// is standard input.
///
/// # Errors
/// [`CliError::ReadFile`] (exit 2) or [`CliError::SpecFile`] (exit 3) naming the file.
pub fn read_fleet_file(path: &Path) -> Result<FleetSpecFile, CliError> {
    let text = read_input(path)?;
    parse_fleet_file(&text).map_err(|e| refused(path, e))
}

/// Says on stderr which sections of a fleet file this command leaves alone, and how to apply
/// them, so nothing is skipped silently.
pub(crate) fn note_other_sections(file: &FleetSpecFile, applying: &str) {
    let sections = [
        ("pool", file.pool.len(), "pool"),
        ("vmid_range", file.vmid_range.len(), "range"),
        ("vip", file.vip.len(), "vip"),
        ("vm", file.vm.len(), "vm"),
    ];
    if file.settings.is_some() && applying != "settings" {
        eprintln!(
            "note: [settings] not applied by this command: use `pvefleet settings apply -f FILE`"
        );
    }
    for (table, count, command) in sections {
        if count > 0 && table != applying {
            eprintln!(
                "note: {count} [[{table}]] entr{} not applied by this command: use \
                 `pvefleet {command} apply -f FILE`",
                if count == 1 { "y" } else { "ies" }
            );
        }
    }
}

/// Sends one request per spec, in order, and prints what each did. On a refusal, the entries
/// applied so far are printed, then the error names the refused entry.
pub(crate) async fn apply_all<S, R>(
    session: &mut Session<'_>,
    kind: &'static str,
    specs: Vec<S>,
    name: impl Fn(&S) -> String,
    request: impl Fn(S) -> R,
    outcome: impl Fn(&R::Response) -> (ApplyOutcome, Option<u64>),
) -> Result<(), CliError>
where
    R: Rpc,
{
    apply_and_report(session, kind, specs, name, request, outcome)
        .await
        .map(|_| ())
}

/// [`apply_all`], returning what was applied once it is printed.
pub(crate) async fn apply_and_report<S, R>(
    session: &mut Session<'_>,
    kind: &'static str,
    specs: Vec<S>,
    name: impl Fn(&S) -> String,
    request: impl Fn(S) -> R,
    outcome: impl Fn(&R::Response) -> (ApplyOutcome, Option<u64>),
) -> Result<ApplyReport, CliError>
where
    R: Rpc,
{
    apply_after(
        session,
        ApplyReport::default(),
        kind,
        specs,
        name,
        request,
        outcome,
    )
    .await
}

/// [`apply_and_report`] continuing `report` (what was done before, printed with the rest).
pub(crate) async fn apply_after<S, R>(
    session: &mut Session<'_>,
    mut report: ApplyReport,
    kind: &'static str,
    specs: Vec<S>,
    name: impl Fn(&S) -> String,
    request: impl Fn(S) -> R,
    outcome: impl Fn(&R::Response) -> (ApplyOutcome, Option<u64>),
) -> Result<ApplyReport, CliError>
where
    R: Rpc,
{
    let client = session.client()?;
    let total = specs.len();
    for spec in specs {
        let entry = name(&spec);
        match client.call(&request(spec)).await {
            Ok(reply) => {
                let (outcome, generation) = outcome(&reply);
                report.applied.push(Applied {
                    kind,
                    name: entry,
                    outcome,
                    generation,
                });
            }
            Err(source) => {
                if !report.applied.is_empty() || !report.deleted.is_empty() {
                    session.print(&report)?;
                }
                return Err(CliError::Apply {
                    kind,
                    name: entry,
                    done: report.applied.len(),
                    total,
                    source: Box::new(source),
                });
            }
        }
    }
    session.print(&report)?;
    Ok(report)
}

/// How long `vm apply --wait` waits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct WaitLimits {
    /// The whole wait.
    pub(crate) timeout: Duration,
    /// How long a VM may stay failed before the wait gives up on it.
    pub(crate) fail_after: Duration,
}

/// Polls the VMs until every goal is done, calling `report` with each new progress line. Fails
/// naming the VMs when one is deleted, stays failed for `fail_after`, or `timeout` passes.
pub(crate) async fn wait_for_vms(
    client: &AdminClient,
    read: ReadMode,
    goals: &[WaitGoal],
    limits: WaitLimits,
    report: impl FnMut(&str),
) -> Result<(), CliError> {
    wait_for_vms_with(client, read, goals, limits, (POLL, Progress::line), report).await
}

/// How a wait reads and tells: the time between reads, and the line a progress makes.
pub(crate) type WaitStyle = (Duration, fn(&Progress) -> String);

/// [`wait_for_vms`], reading every `style.0` and telling progress with `style.1`.
pub(crate) async fn wait_for_vms_with(
    client: &AdminClient,
    read: ReadMode,
    goals: &[WaitGoal],
    limits: WaitLimits,
    (poll, tell): WaitStyle,
    mut report: impl FnMut(&str),
) -> Result<(), CliError> {
    let started = Instant::now();
    let mut last_line = String::new();
    let mut failing_since: HashMap<String, Instant> = HashMap::new();
    loop {
        let vms = client.call(&VmList { read }).await?.vms;
        let progress = Progress::of(goals, &vms);
        let line = tell(&progress);
        if line != last_line {
            report(&line);
            last_line = line;
        }
        if progress.is_complete() {
            return Ok(());
        }
        if let Some((name, why)) = progress.gone().next() {
            return Err(wait_failed(format!(
                "vm {name} {why}, so it will never be ready; not ready:\n{}",
                progress.not_done()
            )));
        }
        let now = Instant::now();
        failing_since.retain(|name, _| progress.failed().any(|(n, _)| n == name));
        for (name, _) in progress.failed() {
            failing_since.entry(name.to_string()).or_insert(now);
        }
        let stuck: Vec<&str> = progress
            .failed()
            .map(|(name, _)| name)
            .filter(|name| {
                failing_since
                    .get(*name)
                    .is_some_and(|since| now.duration_since(*since) >= limits.fail_after)
            })
            .collect();
        if !stuck.is_empty() {
            return Err(wait_failed(format!(
                "{} stayed failed for {}; the fleet keeps retrying with back-off, but this looks \
                 lasting: see `pvefleet vm show {}` and `pvefleet events`, fix the cause, then \
                 apply again (or wait longer with --fail-after). Not ready:\n{}",
                stuck.join(", "),
                span(millis(limits.fail_after)),
                stuck[0],
                progress.not_done()
            )));
        }
        let waited = now.duration_since(started);
        if waited >= limits.timeout {
            return Err(wait_failed(format!(
                "timed out after {}: {} of {} VMs are not ready:\n{}the fleet keeps working on \
                 them: watch with `pvefleet vm ls` and `pvefleet events --follow`, or wait \
                 longer with --wait-timeout",
                span(millis(limits.timeout)),
                goals.len() - progress.done(),
                goals.len(),
                progress.not_done()
            )));
        }
        tokio::time::sleep(poll.min(limits.timeout - waited)).await;
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// A wait that ended without every VM ready. It exits like a conflict (3): the cluster took
/// the specs, but the fleet did not reach them.
fn wait_failed(message: String) -> CliError {
    CliError::Client(ClientError::Conflict(message.trim_end().to_string()))
}
