//! What a run found: the events as played, the timeline, every violation, the expectations'
//! verdicts and the figures. The report ([`super::report`]) prints it for people or as one
//! JSON document.

use std::path::PathBuf;

use serde::Serialize;

use super::expect::ExpectResult;
use super::figures::Figure;
use super::invariants::{Invariant, Violation};
use super::played::PlayedEvent;
use super::timeline::TimelineEntry;

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum End {
    /// Every end expectation held (for `hold`) after the last event, and every timed one was
    /// judged (met or not).
    ExpectationsMet,
    /// The timeout came first.
    Timeout,
    /// Ctrl-C or SIGTERM.
    Interrupted,
}

/// One invariant's verdict.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct InvariantVerdict {
    /// The rule.
    pub invariant: Invariant,
    /// The rule in words.
    pub title: String,
    /// Whether no sample broke it.
    pub ok: bool,
    /// How many samples broke it.
    pub violations: usize,
    /// The first violation.
    pub first: Option<Violation>,
    /// What limits the check (how it was observed), when something does.
    pub note: Option<String>,
}

/// The outcome of a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Outcome {
    /// The scenario's name.
    pub scenario: String,
    /// What it shows.
    pub description: String,
    /// How partitions cut links in this run.
    pub isolation: String,
    /// The hosts.
    pub hosts: Vec<String>,
    /// The VMs.
    pub vms: Vec<String>,
    /// How long the fleet took to start and converge (before t=0), in ms.
    pub startup_ms: u64,
    /// When the run ended, ms after t=0.
    pub end_ms: i64,
    /// How it ended.
    pub end: End,
    /// Samples taken.
    pub samples: usize,
    /// Samples in which the fleet did not answer.
    pub fleet_silent_samples: usize,
    /// The events as played.
    pub events: Vec<PlayedEvent>,
    /// The timeline, by time.
    pub timeline: Vec<TimelineEntry>,
    /// Every violation, in order.
    pub violations: Vec<Violation>,
    /// Each invariant's verdict.
    pub invariants: Vec<InvariantVerdict>,
    /// Each expectation's verdict.
    pub expectations: Vec<ExpectResult>,
    /// Recovery figures.
    pub figures: Vec<Figure>,
    /// Where the lab's directory (state and logs) was kept, if it was.
    pub kept: Option<PathBuf>,
    /// Remarks (a process that exited on its own, a teardown that had to kill).
    pub notes: Vec<String>,
}

impl Outcome {
    /// Whether the scenario passed: no violation, every expectation met, every event played,
    /// not interrupted.
    pub fn passed(&self) -> bool {
        self.violations.is_empty()
            && self.expectations.iter().all(|e| e.met)
            && self.events.iter().all(|e| e.error.is_none())
            && self.end != End::Interrupted
    }

    /// The verdicts of every invariant from the violations, with `notes` on how each was
    /// observed.
    pub fn verdicts(
        violations: &[Violation],
        notes: &[(Invariant, String)],
    ) -> Vec<InvariantVerdict> {
        Invariant::ALL
            .iter()
            .map(|&inv| {
                let broken: Vec<&Violation> =
                    violations.iter().filter(|v| v.invariant == inv).collect();
                InvariantVerdict {
                    invariant: inv,
                    title: inv.title().to_string(),
                    ok: broken.is_empty(),
                    violations: broken.len(),
                    first: broken.first().map(|v| (*v).clone()),
                    note: notes
                        .iter()
                        .find(|(i, _)| *i == inv)
                        .map(|(_, n)| n.clone()),
                }
            })
            .collect()
    }
}
