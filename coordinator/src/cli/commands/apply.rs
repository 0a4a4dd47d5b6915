//! What every `apply -f FILE` shares: reading the file (or standard input), and sending the
//! already validated entries one by one, reporting each outcome, and, if the cluster refuses
//! one, what was applied before it.

use std::io::Read;
use std::path::Path;

use protocol::admin::ApplyOutcome;
use protocol::spec::FleetSpecFile;
use transport::Rpc;

use super::Session;
use crate::cli::exit::CliError;
use crate::cli::output::{Applied, ApplyReport};
use crate::state::{SpecFileError, parse_fleet_file};

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

/// Reads and validates a fleet file (`[[pool]]`, `[[vmid_range]]`, `[[vip]]`, `[[vm]]`).
pub(crate) fn read_fleet_file(path: &Path) -> Result<FleetSpecFile, CliError> {
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
    let client = session.client()?;
    let total = specs.len();
    let mut report = ApplyReport::default();
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
                if !report.applied.is_empty() {
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
    session.print(&report)
}
